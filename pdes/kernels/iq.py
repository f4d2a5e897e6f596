"""BookSim2's input-queued router under load (``router.allocation = "booksim"``).

The rules are derived from BookSim2's ``IQRouter`` (``src/routers/iq_router.cpp``),
its allocators (``src/allocators/separable_input_first.cpp``,
``separable_output_first.cpp``, ``islip.cpp``), round-robin arbiters
(``src/arbiters/roundrobin_arb.*``) and buffer state (``src/buffer_state.cpp``);
``docs/router-model.md`` states them.  In short:

* A router runs ``internal_speedup`` steps per cycle (``PR_SX``); every VC and
  switch decision is made per step.  The kernel keeps a VC's next decision as a
  *step index* ``t * PR_SX + j`` (``iv_va_at``, ``iv_sa_at``, the ready stamps of
  its flits); a stage of delay ``d`` evaluated in step ``tau`` completes in the same
  step when ``d <= 1``, else in the first step of cycle ``tau // PR_SX + d - 1``,
  and the next stage starts in the step after (:func:`done`).
* VC allocation (wormhole): a head requests every VC of its class (BookSim's route
  set) on its output that no packet holds, whatever its credits; an ejection port's
  VCs are all requestable.  Switch allocation: an input VC that holds an output VC
  and has a flit requests its output when that VC has a credit (and the output
  queue room, BookSim's ``output_buffer_size``); per (switch input, output port) only
  the VC first in round-robin order from the port's pointer (``outq.sw_rr``)
  requests.  One flit per switch input and per output per step; a port has
  ``input_speedup`` switch inputs (``PR_ISX``), VC v on input ``v mod PR_ISX``.
* Both allocators match requests with the same rules (:func:`match`):
  separable input-first, or iSLIP (``alloc_iters`` iterations; BookSim's
  separable output-first is iSLIP's first iteration).  Round-robin pointers move
  past a grant only when it is matched (and, for iSLIP, only in the first
  iteration).
* A tail frees its output VC when it wins the switch; credits are consumed when a
  flit wins the switch and one credit per input port and cycle goes back (BookSim's
  credit queue, ``outq.cr_next``; the flits of a port that cross in one step share one:
  ``outq.cr_step``); a flit reaches its output queue when the crossbar
  completes and leaves in that cycle, one flit per output and cycle.

Everything here is per router: the results do not depend on the order in which
routers are visited, nor on the rank count.
"""
from collections import namedtuple

import numpy as np

from models.core.bits import trailing_zeros
from models.core.jit import njit_borrow, njit_inline, njit_llvm_inline
from models.core.params import (NEVER, PR_ALLOC, PR_CD, PR_CHX, PR_COCAP, PR_ECD, PR_HOT,
                                PR_NV, PR_OQCAP, PR_PKT, PR_PRIV, PR_RDEL, PR_SALG, PR_SDEL,
                                PR_SITERS, PR_SX, PR_VDEL, PR_WAITTAIL, PR_XDEL, PR_HOLD, PR_ISX)
from models.core.record import C_MOVES, ERR_CREDIT, ERR_OUTBOX, F_FLIT, OK, S_LAST_MOVE
from models.core.rings import absorb_credits, ring_slot
from pdes.kernels.buffers import (occupied_word, port_emptied, send_credit, shared_free,
                                  shared_room)

OV_DRAINING = -2     # ov_owner of an output VC whose tail left, waiting for its credits

AL_INPUT_FIRST = 1   # separable input-first
AL_ISLIP = 2         # iSLIP (separable output-first = one iteration)
ALLOCATORS = {"separable_input_first": AL_INPUT_FIRST, "separable_output_first": AL_ISLIP,
              "islip": AL_ISLIP}


@njit_inline
def done(tau, d, s):
    """The step in which a stage of ``d`` cycles evaluated in step ``tau`` completes
    (``s`` steps per cycle)."""
    if d <= 1:
        return tau
    return (tau // s + d - 1) * s


@njit_inline
def route_after(start, r, s):
    """The first step of VC allocation for a head whose route computation (``r`` cycles)
    starts in step ``start``; ``r = 0`` is lookahead routing (VC allocation at once)."""
    if r == 0:
        return start
    return done(start, r, s) + 1


def head_offset(r: int, s: int) -> int:
    """Steps from a head's arrival (step 0 of its read cycle) to its first VC allocation."""
    if r == 0:
        return 0
    if r == 1:
        return 1
    return (r - 1) * s + 1


@njit_inline
def match(nreq, rq_in, rq_out, alg, iters, in_ptr, ip0, in_size, out_ptr, op0, out_size, iqs):
    """Match requests ``(rq_in[j], rq_out[j])`` (router-local input and output indices,
    at most one per pair); ``in_ptr[ip0 + i]`` and ``out_ptr[op0 + o]`` are the inputs'
    and outputs' round-robin pointers (moved past every match).  Returns the number of
    matches; the matched requests are ``iqs.m_req[0:n]``.  Ties go to the request
    first after the pointer, as BookSim's round-robin arbiters with equal priorities."""
    in_best, in_sel, out_best, out_sel = iqs.in_best, iqs.in_sel, iqs.out_best, iqs.out_sel
    in_match, out_match, tin, tout, m_req = iqs.in_match, iqs.out_match, iqs.tin, iqs.tout, iqs.m_req
    nm = 0
    if alg == AL_INPUT_FIRST:
        n_in = 0
        for j in range(nreq):
            i = rq_in[j]
            p = rq_out[j] - in_ptr[ip0 + i]
            if p < 0:
                p += out_size
            if in_best[i] < 0:
                tin[n_in] = i
                n_in += 1
                in_best[i] = p
                in_sel[i] = j
            elif p < in_best[i]:
                in_best[i] = p
                in_sel[i] = j
        n_out = 0
        for a in range(n_in):
            i = tin[a]
            j = in_sel[i]
            in_best[i] = -1
            o = rq_out[j]
            p = i - out_ptr[op0 + o]
            if p < 0:
                p += in_size
            if out_best[o] < 0:
                tout[n_out] = o
                n_out += 1
                out_best[o] = p
                out_sel[o] = j
            elif p < out_best[o]:
                out_best[o] = p
                out_sel[o] = j
        for b in range(n_out):
            o = tout[b]
            j = out_sel[o]
            out_best[o] = -1
            i = rq_in[j]
            m_req[nm] = j
            nm += 1
            in_ptr[ip0 + i] = o + 1 if o + 1 < out_size else 0
            out_ptr[op0 + o] = i + 1 if i + 1 < in_size else 0
        return nm
    # iSLIP: outputs grant, inputs accept
    for it in range(iters):
        n_out = 0
        for j in range(nreq):
            i = rq_in[j]
            o = rq_out[j]
            if in_match[i] >= 0 or out_match[o] >= 0:
                continue
            p = i - out_ptr[op0 + o]
            if p < 0:
                p += in_size
            if out_best[o] < 0:
                tout[n_out] = o
                n_out += 1
                out_best[o] = p
                out_sel[o] = j
            elif p < out_best[o]:
                out_best[o] = p
                out_sel[o] = j
        if n_out == 0:
            break
        n_in = 0
        for b in range(n_out):
            o = tout[b]
            j = out_sel[o]
            out_best[o] = -1
            i = rq_in[j]
            p = o - in_ptr[ip0 + i]
            if p < 0:
                p += out_size
            if in_best[i] < 0:
                tin[n_in] = i
                n_in += 1
                in_best[i] = p
                in_sel[i] = j
            elif p < in_best[i]:
                in_best[i] = p
                in_sel[i] = j
        for a in range(n_in):
            i = tin[a]
            j = in_sel[i]
            in_best[i] = -1
            o = rq_out[j]
            in_match[i] = o
            out_match[o] = i
            m_req[nm] = j
            nm += 1
            if it == 0:
                out_ptr[op0 + o] = i + 1 if i + 1 < in_size else 0
                in_ptr[ip0 + i] = o + 1 if o + 1 < out_size else 0
    for q in range(nm):
        j = m_req[q]
        in_match[rq_in[j]] = -1
        out_match[rq_out[j]] = -1
    return nm


@njit_inline
def grant_vc(tau, ivc, op, ovc, prm, inb, outq):
    """Input VC ``ivc`` won output VC ``ovc`` of port ``op`` in step ``tau``: it holds it
    from now on and may request the switch from the step after VC allocation completes."""
    s = prm[PR_SX]
    tu = done(tau, prm[PR_VDEL], s)
    outq.ov_owner[op * prm[PR_NV] + ovc] = ivc
    inb.iv_ovc[ivc] = ovc
    inb.iv_alloc[ivc] = 1
    inb.iv_sa_ready[ivc] = tu + 1
    inb.iv_sa_at[ivc] = tu + 1
    inb.iv_va_at[ivc] = NEVER


@njit_llvm_inline
def move_flit_step(t, tau, sdel, k, P, ivc, op, prm, ports, crd, rec, inb, outq, obox):
    """The front flit of input VC ``ivc`` (port ``P``) won the switch to port ``op`` in
    step ``tau`` of cycle ``t``: its output VC's credit is consumed, it joins the output
    queue to leave in the cycle the crossbar completes, its credit goes back in the first
    cycle the port's credit queue is free, a tail frees the output VC, and the VC's next
    flit may request again from the step after switch allocation (``sdel`` cycles)
    completes.  With ``PR_WAITTAIL`` the output VC stays taken (``OV_DRAINING``) until every
    credit of it has come back."""
    ib_id, ib_rdy, ib_head, ib_cnt = inb.ib_id, inb.ib_rdy, inb.ib_head, inb.ib_cnt
    iv_deep = ports.iv_deep
    oq_head, oq_cnt = outq.oq_head, outq.oq_cnt
    nv, oqcap, pkt, hot, s = prm[PR_NV], prm[PR_OQCAP], prm[PR_PKT], prm[PR_HOT], prm[PR_SX]
    nP = ports.port_off[ports.port_off.shape[0] - 1]
    nIV = nP * nv
    plo = ports.port_off[k]
    nepk = ports.n_epp[k]
    vc = ivc - P * nv
    tu = done(tau, sdel, s)                    # switch allocation completes
    x = done(tu + 1, prm[PR_XDEL], s)          # the crossbar completes
    h = ib_head[ivc]
    fid = ib_id[ring_slot(h, ivc, nIV, hot, iv_deep)]
    ovc = inb.iv_ovc[ivc]
    w = oq_head[op] + oq_cnt[op]
    if w >= oqcap:
        w -= oqcap
    qpos = w * nP + op
    sent = x // s
    outq.oq_id[qpos] = fid
    outq.oq_rdy[qpos] = sent
    if oq_cnt[op] == 0:
        outq.oq_ready[op] = sent
    oq_cnt[op] += 1
    tail = pkt == 1
    head = 1
    if not tail:
        fl = rec[fid, F_FLIT]
        tail = fl == pkt - 1
        head = 1 if fl == 0 else 0
    outq.oq_vc[qpos] = 2 * ovc + head        # see pdes.kernels.cycle.move_flit
    ib_cnt[ivc] -= 1
    inb.iv_sa_ready[ivc] = tu + 1
    if ib_cnt[ivc] == 0:
        ib_head[ivc] = 0
        inb.iv_sa_at[ivc] = NEVER
        port_emptied(inb.ip_occ, ib_cnt, P, nv)
    else:
        h = h + 1 if h + 1 < ports.in_cap[P] else 0
        ib_head[ivc] = h
        r = ib_rdy[ring_slot(h, ivc, nIV, hot, iv_deep)]
        inb.iv_ready[ivc] = r
        if tail:
            inb.iv_sa_at[ivc] = NEVER
            nxt = route_after(tu + 1, prm[PR_RDEL], s)
            inb.iv_va_at[ivc] = r if r > nxt else nxt
        else:
            inb.iv_sa_at[ivc] = r if r > tu + 1 else tu + 1
    if op - plo >= nepk:
        crd.cred[op * nv + ovc] -= 1
    # the credit: one per input port and cycle leaves the router (BookSim's credit queue);
    # flits of one port that cross in the same step (several switch inputs) share it
    if outq.cr_step[P] == tu:
        cs = outq.cr_next[P] - 1
    else:
        cs = tu // s
        if cs < outq.cr_next[P]:
            cs = outq.cr_next[P]
        outq.cr_next[P] = cs + 1
        outq.cr_step[P] = tu
    carr = cs + ports.in_lat[P] + prm[PR_CHX] + (prm[PR_CD] if P - plo >= nepk else prm[PR_ECD])
    if not send_credit(crd, obox, ports, nv, hot, prm[PR_COCAP], P, vc, carr):
        return ERR_CREDIT if ports.in_sender[P] >= 0 else ERR_OUTBOX
    if tail:
        free = -1
        if prm[PR_WAITTAIL] != 0 and op - plo >= nepk:
            free = OV_DRAINING
        outq.ov_owner[op * nv + ovc] = free
        inb.iv_alloc[ivc] = 0
        inb.iv_out[ivc] = -1
    return OK


IQ_SCRATCH = (
    # field      entries (per router: io = ports x VCs, req = requests)   made as
    ("in_best",   "io",  -1),
    ("in_sel",    "io",  -1),
    ("out_best",  "io",  -1),
    ("out_sel",   "io",  -1),
    ("in_match",  "io",  -1),
    ("out_match", "io",  -1),
    ("tin",       "io",   0),
    ("tout",      "io",   0),
    ("m_req",     "req",  0),
    ("rq_in",     "req",  0),
    ("rq_out",    "req",  0),
    ("rq_lab",    "req",  0),
    ("stamp",     "port", -1),
    ("va_c",      "io",   0),     # heads due in a step (routed.sweep_step) ...
    ("va_p",      "io",   0),     # ... and their ports
    ("va_in",     "req",  0),     # its VC allocation requests (the switch's are rq_*)
    ("va_out",    "req",  0),
)
IQScratch = namedtuple("IQScratch", [f for f, _, _ in IQ_SCRATCH])
IQScratch.__doc__ = "the allocators' per-router scratch (indices local to a router), reset"
IQ_FILL = tuple(fill for _, _, fill in IQ_SCRATCH)
"""The value each field of :class:`IQScratch` holds as made, in field order."""


def make_iq_scratch(prm, port_off) -> IQScratch:
    """Scratch for routers of at most the part's largest port count (one entry each when
    ``PR_ALLOC`` is off), made once per part (:data:`IQ_SCRATCH`); :func:`reset_iq_scratch`
    sets it as made at the start of every window loop."""
    nv = int(prm[PR_NV])
    maxp = 1
    if prm[PR_ALLOC] != 0 and len(port_off) > 1:
        maxp = max(1, int(np.diff(port_off).max()))
    n = {"io": maxp * nv, "req": maxp * max(nv * nv, maxp), "port": maxp}
    return IQScratch(*(np.full(n[size], fill, np.int64) for _, size, fill in IQ_SCRATCH))


@njit_borrow
def reset_iq_scratch(iqs):
    """``iqs`` (:func:`make_iq_scratch`) as it was made (:data:`IQ_FILL`); returned."""
    for j in range(len(iqs)):
        a = iqs[j]
        fill = IQ_FILL[j]
        for i in range(a.shape[0]):
            a[i] = fill
    return iqs


@njit_inline
def has_credit(t, op, ovc, prm, ports, crd):
    """Whether output VC ``ovc`` of network port ``op`` has room for a flit in cycle ``t``
    (its credits that have arrived are absorbed first; a shared buffer counts its port)."""
    nv, hot, priv = prm[PR_NV], prm[PR_HOT], prm[PR_PRIV]
    kk = op * nv + ovc
    ccap = ports.cr_cap[op]
    if priv != 0:
        free = shared_free(crd, ports.cr_deep, hot, nv, ccap, priv, op, t)
        return shared_room(crd.cred, crd.cr_res, ccap, priv, kk, free) >= 1
    if crd.cred[kk] >= 1:
        return True
    absorb_credits(crd, ports.cr_deep, hot, ccap, kk, t)
    return crd.cred[kk] >= 1


@njit_inline
def drained(t, o, prm, ports, crd, outq):
    """``router.wait_for_tail_credit``: whether output VC ``o`` (global index), whose tail
    has left, has every credit back by cycle ``t``; frees it if so."""
    op = o // prm[PR_NV]
    ccap = ports.cr_cap[op]
    absorb_credits(crd, ports.cr_deep, prm[PR_HOT], ccap, o, t)
    if crd.cred[o] < ccap:
        return False
    outq.ov_owner[o] = -1
    return True


@njit_inline
def next_flit_here(tau, ivc, P, prm, ports, inb):
    """Whether input VC ``ivc`` holds a flit that has arrived by step ``tau``."""
    if inb.ib_cnt[ivc] == 0:
        return False
    nv = prm[PR_NV]
    nIV = ports.port_off[ports.port_off.shape[0] - 1] * nv
    pos = ring_slot(inb.ib_head[ivc], ivc, nIV, prm[PR_HOT], ports.iv_deep)
    # a stamp counts steps; a head's stamp is past its arrival by the routing offset
    return inb.ib_rdy[pos] // prm[PR_SX] * prm[PR_SX] <= tau


@njit_inline
def switch_step(t, tau, k, prm, ports, crd, pool, inb, outq, obox, stats, iqs):
    """Switch allocation at router ``k`` in step ``tau``: requests (per switch input and
    output one VC, first in round-robin order from the input's pointer ``sw_rr``; its output
    VC must have a credit and the output queue room), the allocator's match, and the
    winners' moves.  A port has ``PR_ISX`` switch inputs (BookSim's input_speedup): VC v
    uses input ``v mod PR_ISX``; the router's switch inputs are the first entries of its
    block of input-VC slots (``plo * nv + x``).  With ``PR_HOLD`` (BookSim's
    hold_switch_for_packet) a packet that won the switch keeps its switch input and output
    until its tail, or until its VC has no flit or credit to send."""
    nv, oqcap, hold, isx = prm[PR_NV], prm[PR_OQCAP], prm[PR_HOLD], prm[PR_ISX]
    iv_alloc, iv_sa_at, iv_ovc = inb.iv_alloc, inb.iv_sa_at, inb.iv_ovc
    hold_vc, hold_out = outq.hold_vc, outq.hold_out
    plo = ports.port_off[k]
    phi = ports.port_off[k + 1]
    npk = phi - plo
    nepk = ports.n_epp[k]
    xb = plo * nv           # the router's switch inputs: slots xb .. xb + npk * isx - 1
    nx = npk * isx
    rel = iqs.tin           # switch inputs whose held path ends in this step
    n_rel = 0
    if hold != 0:
        # held paths first: no allocation, in the step the flit is due
        for x in range(nx):
            vc = hold_vc[xb + x]
            if vc < 0:
                continue
            P = plo + x // isx
            ivc = P * nv + vc
            op = plo + hold_out[xb + x]
            if iv_sa_at[ivc] > tau:
                continue
            ok = outq.oq_cnt[op] < oqcap
            if ok and op - plo >= nepk:
                ok = has_credit(t, op, iv_ovc[ivc], prm, ports, crd)
            if not ok:
                # the path is given up (after this step's requests, which it still blocks);
                # the VC asks the allocator from the next step
                rel[n_rel] = x
                n_rel += 1
                iv_sa_at[ivc] = tau + 1
                continue
            status = move_flit_step(t, tau, 1, k, P, ivc, op, prm, ports, crd, pool.rec, inb,
                                    outq, obox)
            if status != OK:
                return status
            stats.smp[C_MOVES] += 1
            stats.st[S_LAST_MOVE] = t
            if iv_alloc[ivc] == 0 or not next_flit_here(tau, ivc, P, prm, ports, inb):
                rel[n_rel] = x
                n_rel += 1
    nreq = 0
    for w in range(plo >> 6, ((phi - 1) >> 6) + 1):
        m = occupied_word(inb.ip_occ, w, plo, phi)
        while m != 0:
            # the switch inputs of the ports holding a flit, in order (an input of an empty
            # port has nothing to request)
            P = (w << 6) + trailing_zeros(m)
            m &= m - 1
            nreq = port_switch_requests(t, tau, P, plo, nepk, nreq, prm, ports, crd, inb,
                                        outq, iqs)
    return switch_moves(t, tau, k, n_rel, nreq, prm, ports, crd, pool, inb, outq, obox, stats,
                        iqs)


@njit_inline
def port_switch_requests(t, tau, P, plo, nepk, nreq, prm, ports, crd, inb, outq, iqs):
    """The switch requests of port ``P``'s inputs without a held path in step ``tau`` (per
    input and output one VC, first in round-robin order from the input's pointer; its output
    VC must have a credit and the output queue room), appended to ``iqs.rq_in``, ``rq_out``,
    ``rq_lab`` from ``nreq``; the new count."""
    nv, oqcap, isx = prm[PR_NV], prm[PR_OQCAP], prm[PR_ISX]
    iv_alloc, ib_cnt, iv_sa_at, iv_out, iv_ovc = (inb.iv_alloc, inb.ib_cnt, inb.iv_sa_at,
                                                 inb.iv_out, inb.iv_ovc)
    hold_vc, held_by, sw_rr = outq.hold_vc, outq.held_by, outq.sw_rr
    rq_in, rq_out, rq_lab, stamp = iqs.rq_in, iqs.rq_out, iqs.rq_lab, iqs.stamp
    xb = plo * nv
    l = P - plo
    for r in range(isx):
        x = l * isx + r
        if hold_vc[xb + x] >= 0:
            continue
        first = nreq
        start = sw_rr[xb + x]
        for j in range(nv):
            vc = start + j
            if vc >= nv:
                vc -= nv
            if isx > 1 and vc % isx != r:
                continue
            ivc = P * nv + vc
            if iv_sa_at[ivc] > tau or iv_alloc[ivc] == 0 or ib_cnt[ivc] == 0:
                continue
            op = iv_out[ivc]
            ol = op - plo
            if stamp[ol] >= 0 or outq.oq_cnt[op] >= oqcap or held_by[op] >= 0:
                continue
            if ol >= nepk and not has_credit(t, op, iv_ovc[ivc], prm, ports, crd):
                continue
            stamp[ol] = 1
            rq_in[nreq] = x
            rq_out[nreq] = ol
            rq_lab[nreq] = ivc
            nreq += 1
        for j in range(first, nreq):
            stamp[rq_out[j]] = -1
    return nreq


@njit_inline
def switch_moves(t, tau, k, n_rel, nreq, prm, ports, crd, pool, inb, outq, obox, stats, iqs):
    """The rest of :func:`switch_step` after its requests (``iqs.rq_*[0:nreq]``): the held
    paths that end (``iqs.tin[0:n_rel]``) are released, the allocator matches, the winners
    move.  A status code."""
    nv, hold, isx = prm[PR_NV], prm[PR_HOLD], prm[PR_ISX]
    iv_alloc = inb.iv_alloc
    hold_vc, hold_out, held_by, sw_rr = outq.hold_vc, outq.hold_out, outq.held_by, outq.sw_rr
    rq_in, rq_out, rq_lab = iqs.rq_in, iqs.rq_out, iqs.rq_lab
    plo = ports.port_off[k]
    npk = ports.port_off[k + 1] - plo
    xb = plo * nv
    nx = npk * isx
    rel = iqs.tin
    for i in range(n_rel):
        x = rel[i]
        held_by[plo + hold_out[xb + x]] = -1
        hold_vc[xb + x] = -1
        hold_out[xb + x] = -1
    if nreq == 0:
        return OK
    nm = match(nreq, rq_in, rq_out, prm[PR_SALG], prm[PR_SITERS], outq.rr_sw_in, xb, nx,
               outq.rr_out, plo, npk, iqs)
    for q in range(nm):
        j = iqs.m_req[q]
        x = rq_in[j]
        P = plo + x // isx
        ivc = rq_lab[j]
        vc = ivc - P * nv
        op = plo + rq_out[j]
        # the input's round-robin offset moves past the granted VC (BookSim: vc + speedup)
        nxt = vc + isx
        sw_rr[xb + x] = nxt - nv if nxt >= nv else nxt
        status = move_flit_step(t, tau, prm[PR_SDEL], k, P, ivc, op, prm, ports, crd,
                                pool.rec, inb, outq, obox)
        if status != OK:
            return status
        stats.smp[C_MOVES] += 1
        stats.st[S_LAST_MOVE] = t
        if hold != 0 and iv_alloc[ivc] != 0 and next_flit_here(tau, ivc, P, prm, ports, inb):
            hold_vc[xb + x] = vc
            hold_out[xb + x] = op - plo
            held_by[op] = x
    return OK
