"""``prefetch(array, i)``: a software prefetch of the cache line holding ``array[i]``
(its first element for a 2-D array row), and ``prefetch2(array, i, j)`` of
``array[i, j]``; both compile to LLVM's ``llvm.prefetch``.

The cycle kernel is bound by memory latency: the records and VC state a flit
needs were written one or more cycles earlier and have left the caches, and
each is reached through a chain of dependent loads.  Asking for them a few
routers or ports ahead lets the misses overlap with useful work.  A prefetch
is a hint: it never faults and never changes a result.
"""
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from models.core.bits import trailing_zeros
from models.core.jit import njit_inline, njit_llvm_inline
from models.core.nexthop import NH_MASKS
from models.core.record import F_DSTR
from pdes.kernels.buffers import occupied_word, ring_slot


def _emit(context, builder, aryty, ary_val, idx_vals, idx_tys):
    ary = context.make_array(aryty)(context, builder, ary_val)
    idx = [context.cast(builder, v, ty, types.intp) for v, ty in zip(idx_vals, idx_tys)]
    zero = ir.Constant(ir.IntType(64), 0)
    ptr = cgutils.get_item_pointer2(
        context, builder, ary.data, cgutils.unpack_tuple(builder, ary.shape, aryty.ndim),
        cgutils.unpack_tuple(builder, ary.strides, aryty.ndim), aryty.layout,
        idx + [zero] * (aryty.ndim - len(idx)), wraparound=False, boundscheck=False)
    i32 = ir.IntType(32)
    # one declaration for every element type: the intrinsic takes a byte pointer
    ptr = builder.bitcast(ptr, ir.IntType(8).as_pointer())
    fnty = ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32])
    fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
    # read access, high temporal locality, data cache
    builder.call(fn, [ptr, i32(0), i32(3), i32(1)])
    return context.get_dummy_value()


@intrinsic
def prefetch(typingctx, arr, idx):
    if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer):
        return None
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        return _emit(context, builder, signature.args[0], args[0], args[1:], signature.args[1:])

    return sig, codegen


@intrinsic
def prefetch2(typingctx, arr, i, j):
    if not isinstance(arr, types.Array) or arr.ndim != 2 or not isinstance(i, types.Integer) \
            or not isinstance(j, types.Integer):
        return None
    sig = types.void(arr, i, j)

    def codegen(context, builder, signature, args):
        return _emit(context, builder, signature.args[0], args[0], args[1:], signature.args[1:])

    return sig, codegen


@njit_inline
def prefetch_span(arr, lo, hi):
    """Prefetch the cache lines holding ``arr[lo:hi]`` (a 1-D array)."""
    if hi > lo:
        step = 64 // arr.itemsize
        i = lo
        while i < hi:
            prefetch(arr, i)
            i += step
        prefetch(arr, hi - 1)


# ---- the pipelines of the stages: their geometry, checked against each other at import
PF_ROUTERS = 1
"""Routers between two steps of the router stage's pipeline: router ``k + 3 PF_ROUTERS`` is
listed, ``k + 2 PF_ROUTERS`` fetches records and its own lines, ``k + PF_ROUTERS`` next hops."""
PF_RING = 4
"""Lists of VCs with work the router stage keeps (by router index mod ``PF_RING``)."""
PF_OUT = 4
"""Depth of the output stage's pipeline: router ``k + PF_OUT`` is listed, and each of the
next ``PF_OUT - 1`` routers before ``k`` takes one more step."""
PF_OUT_RING = 8
"""Lists of sending ports the output stage keeps (by router index mod ``PF_OUT_RING``)."""
PF_EP = 8
"""Prefetch distance of the endpoint stage (endpoints ahead)."""


def check_geometry(routers=PF_ROUTERS, ring=PF_RING, out=PF_OUT, out_ring=PF_OUT_RING) -> None:
    """Raise ``ValueError`` when a list would be overwritten before its last step reads it.

    A list written for router ``X`` is read until the iteration of router ``X - PF_ROUTERS``
    (output stage: ``X - 1``), while lists of the routers after ``X`` are written: the ring
    must hold every list alive at once, and be a power of two (its index is a mask).  A
    prefetch never changes a result, so no simulation test could notice a ring too small."""
    if ring & (ring - 1) or out_ring & (out_ring - 1):
        raise ValueError("prefetch rings must be powers of two")
    if routers < 1 or 2 * routers >= ring:
        raise ValueError(f"router-stage ring of {ring} lists cannot hold a pipeline of step "
                         f"{routers} (needs more than {2 * routers})")
    if out < 1 or out - 1 >= out_ring:
        raise ValueError(f"output-stage ring of {out_ring} lists cannot hold a pipeline of "
                         f"depth {out}")


check_geometry()


@njit_llvm_inline
def list_router_vcs(t, ka, nv, hot, nIV, ports, inb, crd, pf_l, m):
    """Router stage, first step (router ``ka``): list the VCs that will be allocated this
    cycle (every VC is written, the count advances past one with work: no branch on the
    random state), and ask for the ring slots of their front flit and the flit behind it,
    and for the sender's credit FIFO counters."""
    port_off, in_cap, iv_deep, in_sender = ports.port_off, ports.in_cap, ports.iv_deep, ports.in_sender
    la = (ka & (PF_RING - 1)) * (2 * m + 1)
    n = 0
    plo = port_off[ka]
    phi = port_off[ka + 1]
    for w in range(plo >> 6, ((phi - 1) >> 6) + 1):
        mw = occupied_word(inb.ip_occ, w, plo, phi)
        while mw != 0:
            P = (w << 6) + trailing_zeros(mw)      # a port with a flit
            mw &= mw - 1
            for ivc in range(P * nv, P * nv + nv):
                pf_l[la + 1 + n] = ivc
                pf_l[la + 1 + m + n] = P
                n += (inb.iv_va_at[ivc] <= t) | (inb.iv_sa_at[ivc] <= t)
    pf_l[la] = n
    for i in range(n):
        ivc = pf_l[la + 1 + i]
        P = pf_l[la + 1 + m + i]
        cap = in_cap[P]
        h = inb.ib_head[ivc]
        h2 = h + 1 if h + 1 < cap else 0
        prefetch(inb.ib_id, ring_slot(h, ivc, nIV, hot, iv_deep))
        s2 = ring_slot(h2, ivc, nIV, hot, iv_deep)
        prefetch(inb.ib_rdy, s2)
        prefetch(inb.ib_id, s2)
        snd = in_sender[P]
        kk = snd * nv + ivc - P * nv if snd >= 0 else 0
        prefetch(ports.cr_cap, snd if snd >= 0 else 0)
        prefetch(crd.cr_cnt, kk)
        prefetch(crd.cr_head, kk)
        prefetch(ports.cr_deep, kk)


@njit_llvm_inline
def fetch_router_lines(t, kb, nv, hot, nIV, ports, inb, outq, crd, rec, pf_l, m):
    """Router stage, second step (router ``kb``): the router's own per-port and per-VC
    lines, the front flits' records and the credit slot the sender will write."""
    p0 = ports.port_off[kb]
    p1 = ports.port_off[kb + 1]
    # one call per array: they differ in type, so they cannot be a loop
    prefetch_span(ports.in_sender, p0, p1)
    prefetch_span(ports.in_lat, p0, p1)
    prefetch_span(ports.in_cap, p0, p1)
    prefetch_span(ports.in_cut, p0, p1)
    prefetch_span(ports.cr_cap, p0, p1)
    prefetch_span(outq.oq_cnt, p0, p1)
    prefetch_span(outq.oq_head, p0, p1)
    prefetch_span(outq.oq_ready, p0, p1)
    prefetch_span(inb.iv_out, p0 * nv, p1 * nv)
    prefetch_span(inb.iv_ovc, p0 * nv, p1 * nv)
    prefetch_span(inb.iv_sa_ready, p0 * nv, p1 * nv)
    prefetch_span(inb.iv_ready, p0 * nv, p1 * nv)
    prefetch_span(outq.ov_owner, p0 * nv, p1 * nv)
    prefetch_span(crd.cred, p0 * nv, p1 * nv)
    prefetch_span(outq.rr_va, p0 * nv, p1 * nv)
    prefetch_span(crd.cr_cnt, p0 * nv, p1 * nv)
    prefetch_span(crd.cr_head, p0 * nv, p1 * nv)
    prefetch_span(inb.ib_cnt, p0 * nv, p1 * nv)
    prefetch_span(inb.ib_head, p0 * nv, p1 * nv)
    prefetch_span(inb.iv_alloc, p0 * nv, p1 * nv)
    prefetch_span(ports.iv_deep, p0 * nv, p1 * nv)
    prefetch_span(outq.rr_in, p0, p1)
    prefetch_span(outq.rr_out, p0, p1)
    nK = crd.cr_cnt.shape[0]
    lb = (kb & (PF_RING - 1)) * (2 * m + 1)
    for i in range(pf_l[lb]):
        ivc = pf_l[lb + 1 + i]
        P = pf_l[lb + 1 + m + i]
        fid = inb.ib_id[ring_slot(inb.ib_head[ivc], ivc, nIV, hot, ports.iv_deep)]
        prefetch(rec, fid)
        snd = ports.in_sender[P]
        if snd >= 0 and inb.iv_sa_at[ivc] <= t:
            kk = snd * nv + ivc - P * nv
            ccap = ports.cr_cap[snd]
            w = crd.cr_head[kk] + crd.cr_cnt[kk]
            w = w - ccap if w >= ccap else w
            prefetch(crd.cr_t, ring_slot(w, kk, nK, hot, ports.cr_deep))


@njit_llvm_inline
def fetch_next_hops(kc, use_nh, hot, nIV, iv_deep, inb, tab, rec, pf_l, m):
    """Router stage, last step (router ``kc``): the next-hop table entry each front
    flit's destination selects."""
    lc = (kc & (PF_RING - 1)) * (2 * m + 1)
    for i in range(pf_l[lc]):
        ivc = pf_l[lc + 1 + i]
        fid = inb.ib_id[ring_slot(inb.ib_head[ivc], ivc, nIV, hot, iv_deep)]
        dr = rec[fid, F_DSTR]
        if use_nh == NH_MASKS:
            prefetch2(tab.nh_min, kc, dr)
        else:
            prefetch2(tab.nh_port, kc, dr)


@njit_inline
def out_list_base(k, mo):
    """Start of router ``k``'s list in the output stage's ring (``mo`` ports at most)."""
    return (k & (PF_OUT_RING - 1)) * (mo + 1)


@njit_inline
def list_sending_ports(t, ka, oqcap, nP, ports, outq, pf_o, mo):
    """Output stage, first step (router ``ka``): list the ports that send this cycle and ask
    for their front's output-queue slot (record index and VC) and the next slot's ready
    cycle."""
    la = out_list_base(ka, mo)
    n = 0
    for P in range(ports.port_off[ka], ports.port_off[ka + 1]):
        pf_o[la + 1 + n] = P
        n += outq.oq_ready[P] <= t
    pf_o[la] = n
    for i in range(n):
        P = pf_o[la + 1 + i]
        h = outq.oq_head[P]
        prefetch(outq.oq_id, h * nP + P)
        prefetch(outq.oq_vc, h * nP + P)
        h = h + 1 if h + 1 < oqcap else 0
        prefetch(outq.oq_rdy, h * nP + P)


@njit_inline
def fetch_sent_records(kb, nP, ports, outq, rec, rec_c, pf_o, mo):
    """Output stage, second step: the records of the flits the ports send that the stage
    reads (an ejection's, with its cold half, and a body flit's: a head crossing a link
    leaves its record alone)."""
    lb = out_list_base(kb, mo)
    for i in range(pf_o[lb]):
        P = pf_o[lb + 1 + i]
        qs = outq.oq_head[P] * nP + P
        fq = outq.oq_id[qs]
        if ports.out_ep[P] >= 0:
            prefetch(rec, fq)
            prefetch(rec_c, fq)
        elif outq.oq_vc[qs] & 1 == 0:
            prefetch(rec, fq)


@njit_inline
def fetch_joined_vcs(kc, nv, nP, ports, inb, outq, pf_o, mo):
    """Output stage, third step: the state of the input VC each flit joins downstream."""
    lc = out_list_base(kc, mo)
    for i in range(pf_o[lc]):
        P = pf_o[lc + 1 + i]
        D = ports.out_dest[P]
        if D >= 0:
            v = D * nv + (outq.oq_vc[outq.oq_head[P] * nP + P] >> 1)
            prefetch(inb.ib_head, v)
            prefetch(inb.ib_cnt, v)
            prefetch(ports.iv_deep, v)
            prefetch(inb.iv_alloc, v)


@njit_inline
def fetch_joined_slots(kd, nv, nP, hot, nIV, ports, inb, outq, pf_o, mo):
    """Output stage, last step: the ring slot each flit takes in the VC it joins."""
    ld = out_list_base(kd, mo)
    for i in range(pf_o[ld]):
        P = pf_o[ld + 1 + i]
        D = ports.out_dest[P]
        if D >= 0:
            v = D * nv + (outq.oq_vc[outq.oq_head[P] * nP + P] >> 1)
            w = inb.ib_head[v] + inb.ib_cnt[v]
            w = w - ports.in_cap[D] if w >= ports.in_cap[D] else w
            pos = ring_slot(w, v, nIV, hot, ports.iv_deep)
            prefetch(inb.ib_id, pos)
            prefetch(inb.ib_rdy, pos)
