"""The cycle kernel: advance a set of routers and their endpoints over a window.

One call of ``advance`` runs cycles ``t0 .. t1-1`` for the routers this
state owns; a cycle is three stages, each over grouped state (named tuples
of arrays, :data:`GROUPS`):

1. :func:`endpoint_stage`: Bernoulli packet generation (or the next message
   of a finite workload) and injection of one flit per endpoint,
2. ``router_stage``: per router, :func:`switch_allocation` (and switch
   traversal into the output queues, credit return), then
   ``route_and_allocate_vc`` (route computation by the routing kernel + VC
   allocation),
3. :func:`output_stage`: one flit per output port onto its link (delivery
   into the next input VC, or an outbox) or to its endpoint (ejection,
   statistics).

The router stage and ``advance`` are in :mod:`pdes.kernels.routed`, which is
compiled once per routing kernel (:mod:`pdes.kernels.generate`); this module
holds the stages every routing shares and the allocators' scratch layout; the
state groups are declared in :mod:`pdes.kernels.state_table`.

Flits enter input VCs through :func:`pdes.kernels.buffers.enqueue_flit` and
credits their sender's FIFO through :func:`~pdes.kernels.buffers.queue_credit`
on every path (a freed buffer slot's credit through
:func:`~pdes.kernels.buffers.send_credit`).  The stages and :func:`switch_allocation` are compiled without
reference counting (:func:`models.core.jit.njit_borrow`: they borrow the arrays of
``advance`` and allocate nothing), so calling them costs no atomic operations
per router or flit, and they are compiled once for every routing kernel.
:func:`switch_allocation` is also always inlined into the router stage
(:func:`models.core.jit.njit_llvm_inline`): left to LLVM's choice, an edit that made the
router stage a little larger (or another CPU's cost model) turned it into a call per
router that passed every array of the state, a quarter of the kernel's speed on SF q=5.

A flit sent on a link is written at once into the receiving VC buffer (its
room was reserved by a credit), stamped with the cycle from which it may be
processed (its ready cycle: arrival + routing delay for a head).  Every decision
about a VC looks only at its front flit's ready cycle, so a flit that is
"in the wire" is never observed early.  Credits travel the same way: each
(sender, VC) keeps a FIFO of credit arrival cycles that is absorbed when the
sender needs the exact count.  Nothing is swept per cycle for flits or credits
in transit, which keeps the per-cycle working set small.

Flit records live in a per-part pool; input VCs and output queues hold record
indices, so a flit crossing a router moves one int32 and its record stays put
until it leaves the part (ejection or an outbox), when the record is freed
onto the stack ``rec_free[0:rec_top]``.  A new record comes from that stack,
or, when it is empty, is the first one never used (``rec_next``), so only as
many records as were ever in the part at once are touched: the pool's memory
follows the flits present (it grows between windows,
:meth:`pdes.state.PartState.reserve_records`).  The pool keeps a record's first
``NF_HOT`` fields (those minimal routing reads at every hop) in ``rec`` and
the others in ``rec_c``, both in 32-byte rows: the records of the flits in
the network take half the cache they would as whole 64-byte records.

Ring buffers (input VCs, output queues, credit FIFOs) are stored slot-major:
slot ``w`` of every VC lies in one contiguous plane (``ib_id[w * nIV + ivc]``).
A ring rewinds to slot 0 whenever it empties, so below saturation nearly all
traffic goes through plane 0, which is dense and fits in cache, instead of
one cache line per VC scattered over the whole buffer array.  Each input port
has its own capacity per VC (``ports.in_cap``; a credit FIFO that of the input
VC it counts for, ``ports.cr_cap``) and its rings wrap there.  Only the first
``PR_HOT`` slots (the smallest capacity in the network) are planes; a ring's
slots from ``PR_HOT`` on lie together after the planes, slot ``w`` of VC
``ivc`` at ``iv_deep[ivc] + w`` (credit key ``kk``: ``cr_deep[kk] + w``), so
the arrays hold exactly the slots of every port and a deep VC touches only
its own pages.  With one capacity for every port there are no such slots.

Credit counts are read where they decide something, and no more often:

* switch allocation does not check them: an output VC is allocated only with
  room for the whole packet (virtual cut-through) and only the owning input
  VC sends on it until the tail leaves, so the count is at least the flits
  left to send;
* VC allocation with one VC per class needs only "room for a packet": if the
  count already there says so, the credits on their way back are left in the
  FIFO; they are absorbed when a count is needed exactly (a smaller count,
  several VCs per class, adaptive routing's queue estimates, the endpoint's VC choice).  A
  credit's effect does not depend on when it is absorbed, only on its
  arrival cycle;
* with shared buffers (``PR_PRIV > 0``: each VC owns ``PR_PRIV`` flits of the
  port, the rest is shared) a VC's room depends on every VC of its port, so
  VC allocation absorbs the port's credits and computes the shared occupancy
  from the counts (:func:`pdes.kernels.buffers.shared_free`); a granted
  packet's flits are reserved at once (``crd.cr_res``, taken back flit by
  flit by switch allocation), so switch allocation still needs no check.

Sweeps over all VCs of a router build their lists of candidates without
branches on the VC state (a branch per VC on random occupancy mispredicts
often enough to dominate the sweep).

The stages are bound by memory latency: a flit's record, its ring slots, the
VC state it joins and the credit FIFO of its sender were written one or more
cycles earlier and have left the caches, and each is reached through a chain
of dependent loads.  While a part holds enough flits that the state a cycle
touches outgrows the caches (``prm[PR_PF]``, set before each cycle by the
window loop from ``PF_MIN_FLITS``, ``prm[PR_PFMIN]``) the router and output stages
run software pipelines of prefetches over the routers ahead: the VCs (ports)
of a router a few routers ahead that have work this cycle are listed, and at
each later router the list asks for the next link of every chain (ring slot,
then record, then next-hop entry or the input VC the flit joins), so the
misses overlap with the work of the routers in between.  A prefetch never
changes a result.

Everything a router does in cycle ``t`` takes effect at another router from
``t + latency >= t + 1``, so the order in which routers are visited does not
matter.  Flits and credits for routers owned by another state (rank) go to
outboxes; the orchestrator inserts them at the window boundary, and because
the window is at most the smallest latency of a cut channel they are never
needed before then.

Pipeline timing per hop, in cycle offsets that :mod:`pdes.timing` derives from
the config's delays for the chosen ``router.pipeline``: a flit sent in cycle
``t`` over a link of latency ``L`` arrives in ``a = t + L + PR_CHX``; a head
may win VC allocation from ``a + PR_RD``, switch allocation ``PR_VAD`` cycles
after VC allocation, and is sendable ``PR_SAD`` cycles after switch
allocation (a body flit may take part in switch allocation from ``a``).
Ejection delivers ``endpoint latency + PR_CHX`` after sending; a credit sent
back in cycle ``t`` counts from ``t + L + PR_CHX + credit delay`` (``PR_ECD``
instead of the credit delay at a source endpoint).
"""
from collections import namedtuple

import numpy as np

from models.core.bits import trailing_zeros
from models.core.jit import njit_borrow, njit_inline, njit_llvm_inline
from models.core.rings import credit_rtt, ring_slot
from models.core.record import (C_CREATED, C_DELIVERED, C_INJECTED, C_MOVES, ERR_CREDIT,
    ERR_OUTBOX, F_CTIME, F_DST, F_DSTR, F_FLIT, F_HOPS, F_ITIME,
    F_MID, F_PHASE, F_SEQ, F_SRC, F_VC, F_AUX, F_AUX2, HIST_OCTAVES, HIST_SUB, NF_HOT, NF_USED,
    OK, S_CREATED_MEAS, S_CREATED_PKTS, S_DROPPED_FLITS, S_DROPPED_MEAS, S_DROPPED_PKTS, S_CREATED_WIN_FLITS, S_DELIVERED_FLITS, S_DELIVERED_MEAS,
    S_DELIVERED_WIN, S_INFLIGHT, S_INJECTED_FLITS, S_INJECTED_WIN, S_LAST_DELIVERY, S_LAST_MOVE,
    S_MAX_NLAT, S_MAX_PLAT, S_SUM_HOPS, S_SUM_NLAT, S_SUM_PLAT, S_SUM_PLAT_SQ)
from models.core.params import (
    IV_DISCARD, NEVER, PR_CD, PR_CHX, PR_COCAP, PR_E, PR_ECD, PR_ELAT, PR_FINITE, PR_FOCAP, PR_FRAC_THR,
    PR_HMAX, PR_HOT, PR_INJECT, PR_M0, PR_M1, PR_NV, PR_OQCAP, PR_PF, PR_PKT,
    PR_ALLOC, PR_HRDY, PR_ONOFF, PR_PFMIN, PR_PRIV, PR_SAD, PR_SX, PR_SCHED, PR_SEED,
    PR_SPEEDUP, PR_THR, PR_TRAFFIC)
from pdes.kernels.buffers import (build_occupancy, enqueue_flit, new_record, occupied_word,
                                  port_emptied, send_credit, shared_free, shared_room,
                                  unreturned_flits)
from pdes.kernels.prefetch import (PF_EP, PF_OUT, PF_OUT_RING, PF_RING, fetch_joined_slots,
                                   fetch_joined_vcs, fetch_sent_records, list_sending_ports,
                                   prefetch, prefetch2)
from models.core.rng import keyed_draw53
# the grouped kernel state (named tuples of arrays, GROUPS) is declared with every array's
# size, type and checkpoint policy in pdes.kernels.state_table
from pdes.kernels.state_table import (GROUPS, Credits, InputVCs, Messages, Outbox,  # noqa: F401
    Outputs, Pool, Ports, Sources, Stats, Tables)
from pdes.kernels.injection import build_keys, on_off_draw, on_off_replay
from pdes.kernels.schedule import arrived, complete, next_send
from pdes.kernels.traffic import TR_UNIFORM, destination, uniform_destination

PF_MIN_FLITS = 8192
"""Flits in a part (records in use) from which a cycle runs the stages' prefetch pipelines
(``prm[PR_PFMIN]``; :func:`prefetch_gate`): below it the state a cycle touches stays in the
caches and the pipelines cost more than they save."""


@njit_inline
def prefetch_gate(prm, pool):
    """Before a cycle: the stages' prefetch pipelines (``prm[PR_PF]``) on while the part holds
    at least ``prm[PR_PFMIN]`` flits, off below.  A prefetch never changes a result, so
    neither does this choice."""
    prm[PR_PF] = 1 if pool.rec_next[0] - pool.rec_top[0] >= prm[PR_PFMIN] else 0

# ---- the allocators' scratch: views of one array, sized for the largest router (maxp
# ports); each view holds  a * maxp * nv + b * maxp * speedup + c * maxp + d  entries
SCRATCH = (
    #  view          a                b  c              d
    ("va_best",      1,               0, 0,             0),    # best requester prio per (port, ovc)
    ("va_who",       1,               0, 0,             0),    # its input VC
    ("touched",      1,               0, 0,             0),    # touched (port, ovc) slots
    ("cand_ivc",     1,               0, 0,             0),    # VCs (or ports) with work this cycle
    ("cand_p",       1,               0, 0,             0),    # ... and their input port
    ("va_ovc",       1,               0, 0,             0),    # output VC of a touched slot
    ("req_ivc",      0,               1, 1,             0),    # switch requests: input VC
    ("req_pin",      0,               1, 1,             0),    # ... its input port - plo
    ("req_out",      0,               1, 0,             0),    # ... output port
    ("bucket",       0,               1, 0,             0),    # requests by output
    ("out_nreq",     0,               0, 1,             0),
    ("out_list",     0,               0, 1,             0),
    ("out_start",    0,               0, 1,             0),
    ("out_fill",     0,               0, 1,             0),
    # the router stage's prefetch pipeline: for each of its routers, its count of VCs with
    # work, then the VCs (maxp * nv) and their input ports (maxp * nv)
    ("pf_l",         2 * PF_RING,     0, 0,             PF_RING),
    # the output stage's: for each of its routers, its count of ports sending this cycle,
    # then the ports (maxp)
    ("pf_o",         0,               0, PF_OUT_RING,   PF_OUT_RING),
)
Scratch = namedtuple("Scratch", [v[0] for v in SCRATCH] + ["cls_of"])
Scratch.__doc__ = "per-router scratch of the allocators (views of one array) and VC -> class"


def scratch_size(maxp: int, nv: int, speed: int) -> int:
    """Entries of the scratch array for routers of at most ``maxp`` ports."""
    return sum(a * maxp * nv + b * maxp * speed + c * maxp + d for _, a, b, c, d in SCRATCH)


def scratch_views(scr, nv: int, speed: int, ncls: int) -> tuple:
    """The views of the scratch array ``scr`` (:data:`SCRATCH`), in order, and the VC ->
    class table of ``nv`` VCs in ``ncls`` classes (a table: no division per head): what
    :func:`make_scratch` receives."""
    fixed = sum(d for *_, d in SCRATCH)
    maxp = (scr.shape[0] - fixed) // sum(a * nv + b * speed + c for _, a, b, c, _ in SCRATCH)
    out, lo = [], 0
    for _, a, b, c, d in SCRATCH:
        hi = lo + a * maxp * nv + b * maxp * speed + c * maxp + d
        out.append(scr[lo:hi])
        lo = hi
    return (*out, np.arange(nv, dtype=np.int64) // (nv // ncls))


@njit_borrow
def make_scratch(views):
    """The allocators' scratch and the VC -> class table (:func:`scratch_views`), the
    request counts and best requesters reset."""
    out = Scratch(*views)
    for i in range(out.out_nreq.shape[0]):
        out.out_nreq[i] = 0
    for i in range(out.va_best.shape[0]):
        out.va_best[i] = -1
    return out


@njit_borrow
def build_derived(prm, ports, inb, srcs):
    """The rows the kernels keep but a checkpoint does not save, built where stale (at the
    start of every window loop): the input-port occupancy bitmap and the endpoints' keys
    of their injection draws."""
    build_occupancy(prm, prm[PR_NV], inb.ib_cnt, inb.ip_occ)
    build_keys(prm, ports.ep_gid, srcs.ep_key)


@njit_inline
def next_message(e, eg, sched, msgs):
    """Finite workload: the next message of endpoint ``e`` (global id ``eg``) with packets
    left, or -1 -- in table order (``sched`` 1, staggered), else round-robin from its
    pointer (all posted at once); advances the pointer."""
    msg_off, msg_left, ep_msg_ptr = msgs.msg_off, msgs.msg_left, msgs.ep_msg_ptr
    lo = msg_off[eg]
    hi = msg_off[eg + 1]
    m = -1
    if hi > lo:
        ptr = ep_msg_ptr[e]
        if sched == 1:
            while ptr < hi and msg_left[ptr] == 0:
                ptr += 1
            if ptr < hi:
                m = ptr
            ep_msg_ptr[e] = ptr
        else:
            for i in range(hi - lo):
                cand = ptr + i
                if cand >= hi:
                    cand -= hi - lo
                if msg_left[cand] > 0:
                    m = cand
                    break
            if m >= 0:
                ep_msg_ptr[e] = m + 1 if m + 1 < hi else lo
    return m


@njit_inline
def injection_vc(t, s, nv, hot, priv, ports, crd):
    """``(vc, room)``: the VC of injection port ``s`` with the most room for a new packet
    (lowest index on ties) -- its credits, or with a shared buffer its private flits left
    and the free shared ones.  The endpoint is the port's only sender and sends one packet
    at a time, so the room it chose stays its own until the tail (no reservation)."""
    cred = crd.cred
    bvc = 0
    bcr = -1
    if priv == 0:
        for vc in range(nv):
            if cred[s * nv + vc] > bcr:
                bcr = cred[s * nv + vc]
                bvc = vc
    else:
        ccap = ports.cr_cap[s]
        free = shared_free(crd, ports.cr_deep, hot, nv, ccap, priv, s, t)
        for vc in range(nv):
            room = shared_room(crd.cred, crd.cr_res, ccap, priv, s * nv + vc, free)
            if room > bcr:
                bcr = room
                bvc = vc
    return bvc, bcr


@njit_inline
def injection_vc_rr(t, s, nv, hot, priv, ports, crd, last):
    """``router.allocation = "booksim"``: the VC of injection port ``s`` for a new packet as
    BookSim's source picks it: the first VC after ``last`` (round-robin) with room for a
    flit, or -1; before the endpoint's first packet (``last < 0``) only VC 0, as BookSim."""
    ccap = ports.cr_cap[s]
    free = 0
    if priv != 0:
        free = shared_free(crd, ports.cr_deep, hot, nv, ccap, priv, s, t)
    n = nv if last >= 0 else 1
    for i in range(n):
        vc = last + 1 + i if last >= 0 else 0
        if vc >= nv:
            vc -= nv
        kk = s * nv + vc
        if priv != 0:
            if shared_room(crd.cred, crd.cr_res, ccap, priv, kk, free) >= 1:
                return vc
        elif crd.cred[kk] >= 1:
            return vc
    return -1


@njit_inline
def start_packet(t, e, eg, vc, prm, tab, msgs, ports, srcs, st):
    """Take the next packet of endpoint ``e``'s source queue (or of its current message) and
    write its record template, to be injected on VC ``vc``.  Returns whether it is injected:
    a packet queued before a reroute at a source that the rerouted network's traffic leaves
    without a destination (an endpoint or destination gone) is dropped at the source."""
    ep_cur_rec, ep_next_gen = srcs.ep_cur_rec, srcs.ep_next_gen
    seed, thr, finite = prm[PR_SEED], prm[PR_THR], prm[PR_FINITE]
    if finite == 2:
        # a schedule's send: created when it was posted
        c = msgs.op_post[msgs.ep_cur_msg[e]]
        d = msgs.msg_dst[msgs.ep_cur_msg[e]]
    elif finite != 0:
        # every message is posted at cycle 0
        c = 0
        d = msgs.msg_dst[msgs.ep_cur_msg[e]]
    else:
        # next packet of the source queue: its creation cycle is the
        # next successful generation draw at or after ep_next_gen
        c = ep_next_gen[e]
        if prm[PR_ONOFF] == 0:
            key = srcs.ep_key[e]
            while keyed_draw53(key, c) >= thr:
                c += 1
        else:
            c = on_off_replay(c, e, eg, seed, thr, prm, srcs)
        ep_next_gen[e] = c + 1
        if prm[PR_TRAFFIC] == TR_UNIFORM:
            # without the tables: passing them costs atomic reference counts
            d = uniform_destination(prm[PR_E], seed, eg, c)
        else:
            d = destination(prm[PR_TRAFFIC], tab.dest_table, tab.dest_table2, tab.dest_set_a,
                            tab.dest_set_b, prm[PR_FRAC_THR], prm[PR_E], seed, eg, c)
        if d < 0:
            # no destination since the reroute: the packet is lost with its flits
            srcs.ep_pending[e] -= 1
            srcs.ep_seq[e] += 1
            st[S_DROPPED_FLITS] += prm[PR_PKT]
            count_dropped_packet(c, prm, st)
            return False
    srcs.ep_pending[e] -= 1
    ep_cur_rec[e, F_SRC] = eg
    ep_cur_rec[e, F_DST] = d
    ep_cur_rec[e, F_DSTR] = ports.ep_router[d]
    ep_cur_rec[e, F_CTIME] = c
    ep_cur_rec[e, F_ITIME] = t
    ep_cur_rec[e, F_SEQ] = srcs.ep_seq[e]
    ep_cur_rec[e, F_FLIT] = 0
    ep_cur_rec[e, F_HOPS] = 0
    ep_cur_rec[e, F_VC] = vc
    srcs.ep_cur_vc[e] = vc
    ep_cur_rec[e, F_MID] = -1
    ep_cur_rec[e, F_PHASE] = 0
    # the message's index, or a schedule's receive that takes it
    ep_cur_rec[e, F_AUX] = msgs.ep_cur_msg[e] if finite == 1 else \
        msgs.op_match[msgs.ep_cur_msg[e]] if finite == 2 else 0
    ep_cur_rec[e, F_AUX2] = -1         # routing state: none yet
    srcs.ep_seq[e] += 1
    srcs.ep_cur_left[e] = prm[PR_PKT]
    return True


@njit_inline
def inject_flit(t, e, s, prm, ports, crd, pool, inb, srcs, stats, top, nxt):
    """Endpoint ``e`` (credit sender ``s``) sends the next flit of its packet into its
    router's injection port (a pool record from ``top``/``nxt``, returned updated)."""
    nv, hot = prm[PR_NV], prm[PR_HOT]
    ep_cur_rec, ep_cur_vc, ep_port = srcs.ep_cur_rec, srcs.ep_cur_vc, ports.ep_port
    st = stats.st
    arr = t + prm[PR_ELAT] + prm[PR_CHX]
    rdy = arr * prm[PR_SX] + (prm[PR_HRDY] if ep_cur_rec[e, F_FLIT] == 0 else 0)
    fid, top, nxt = new_record(pool, top, nxt, ep_cur_rec[e])
    nIV = (ports.port_off[ports.port_off.shape[0] - 1]) * nv
    P = ep_port[e]
    enqueue_flit(inb, ports.iv_deep, nIV, hot, ports.in_cap[P], P, P * nv + ep_cur_vc[e], fid,
                 rdy)
    crd.cred[s * nv + ep_cur_vc[e]] -= 1
    ep_cur_rec[e, F_FLIT] += 1
    srcs.ep_cur_left[e] -= 1
    st[S_INJECTED_FLITS] += 1
    st[S_INFLIGHT] += 1
    stats.smp[C_INJECTED] += 1
    if t >= prm[PR_M0] and t < prm[PR_M1]:
        st[S_INJECTED_WIN] += 1
        stats.ep_inj[e] += 1
    st[S_LAST_MOVE] = t
    return top, nxt


@njit_borrow
def endpoint_stage(t, prm, ports, tab, msgs, crd, pool, inb, srcs, stats):
    """1. Endpoints: packet generation (or the next message) and injection of one flit."""
    ep_gid, ep_active, cr_cap, cr_deep = ports.ep_gid, ports.ep_active, ports.cr_cap, ports.cr_deep
    cred, cr_cnt, cr_head = crd.cred, crd.cr_cnt, crd.cr_head
    ep_pending, ep_next_gen, ep_cur_left = srcs.ep_pending, srcs.ep_next_gen, srcs.ep_cur_left
    st, smp = stats.st, stats.smp
    nv, pkt, hot, seed, thr = prm[PR_NV], prm[PR_PKT], prm[PR_HOT], prm[PR_SEED], prm[PR_THR]
    m0, m1, inject, finite = prm[PR_M0], prm[PR_M1], prm[PR_INJECT], prm[PR_FINITE]
    priv, pf, onoff = prm[PR_PRIV], prm[PR_PF], prm[PR_ONOFF]
    nP = ports.port_off[ports.port_off.shape[0] - 1]
    nE = ep_gid.shape[0]
    top = pool.rec_top[0]          # freed records: rec_free[0:top]
    nxt = pool.rec_next[0]         # records from nxt on were never used
    n_gen = 0      # packets generated by the Bernoulli draws of this cycle
    ep_gen = srcs.ep_gen
    bernoulli = inject != 0 and onoff == 0
    if bernoulli:
        # every endpoint's Bernoulli draw first, in a loop without branches (LLVM
        # vectorizes it): the loop below then skips the endpoints without work
        ep_key = srcs.ep_key
        for e in range(nE):
            ep_gen[e] = (keyed_draw53(ep_key[e], t) < thr) & (ep_active[e] != 0)
    for e in range(nE):
        if pf != 0 and e + PF_EP < nE:
            # the packet being injected and the injection port's credits, a few endpoints
            # ahead (an endpoint with work is far from the last one that had some)
            prefetch2(srcs.ep_cur_rec, e + PF_EP, 0)
            prefetch(cred, (nP + e + PF_EP) * nv)
            prefetch(cr_cnt, (nP + e + PF_EP) * nv)
            prefetch(cr_head, (nP + e + PF_EP) * nv)
        if bernoulli and finite == 0 and (ep_gen[e] | ep_pending[e] | ep_cur_left[e]) == 0:
            continue       # no packet drawn, none waiting, none being injected
        eg = ep_gid[e]
        if inject != 0 and ep_active[e] != 0:
            # the Bernoulli (or on/off) draw, without a branch on its (random) outcome
            g = ep_gen[e] != 0 if onoff == 0 else on_off_draw(t, e, eg, seed, thr, prm, srcs)
            idle = (ep_pending[e] == 0) & (ep_cur_left[e] == 0)
            ep_next_gen[e] = t if g & idle else ep_next_gen[e]
            ep_pending[e] += g
            n_gen += g
        if finite != 0 and ep_cur_left[e] == 0 and ep_pending[e] == 0:
            # finite workload: the next packet comes from the next message with data left
            # (a schedule: the current send, or the next one posted)
            m = next_message(e, eg, prm[PR_SCHED], msgs) if finite == 1 else \
                next_send(msgs, e, eg, t)
            if m >= 0:
                msgs.msg_left[m] -= 1
                msgs.ep_cur_msg[e] = m
                ep_pending[e] = 1
                st[S_CREATED_PKTS] += 1
                st[S_CREATED_MEAS] += 1
                st[S_CREATED_WIN_FLITS] += pkt
                smp[C_CREATED] += 1
        if ep_cur_left[e] == 0 and ep_pending[e] == 0:
            continue
        # injection-port VCs are separate from the network VCs routing assigns
        s = nP + e
        ccap = cr_cap[s]
        nK = cr_cnt.shape[0]
        for vc in range(nv):
            # absorb the credits that have arrived: rings.absorb_credits written out (the
            # inline call measured 5-10% slower on a 100K-endpoint BDF)
            kk = s * nv + vc
            n = cr_cnt[kk]
            if n > 0:
                h = cr_head[kk]
                while n > 0 and crd.cr_t[ring_slot(h, kk, nK, hot, cr_deep)] <= t:
                    cred[kk] += 1
                    n -= 1
                    h = h + 1 if h + 1 < ccap else 0
                cr_cnt[kk] = n
                cr_head[kk] = h if n > 0 else 0
        if ep_cur_left[e] == 0 and prm[PR_ALLOC] != 0:
            # BookSim's source: the next VC after its last one with a credit (wormhole)
            if ep_pending[e] > 0:
                bvc = injection_vc_rr(t, s, nv, hot, priv, ports, crd, srcs.ep_last_vc[e])
                if bvc >= 0 and start_packet(t, e, eg, bvc, prm, tab, msgs, ports, srcs, st):
                    srcs.ep_last_vc[e] = bvc
        elif ep_cur_left[e] == 0:
            bvc, bcr = injection_vc(t, s, nv, hot, priv, ports, crd)
            if ep_pending[e] > 0 and bcr >= pkt:
                start_packet(t, e, eg, bvc, prm, tab, msgs, ports, srcs, st)
        if ep_cur_left[e] > 0 and cred[s * nv + srcs.ep_cur_vc[e]] >= 1:
            top, nxt = inject_flit(t, e, s, prm, ports, crd, pool, inb, srcs, stats, top, nxt)
            if finite == 2 and ep_cur_left[e] == 0 and msgs.msg_left[msgs.ep_cur_msg[e]] == 0:
                # the send's last flit has left: the send completes
                complete(msgs, e, eg, msgs.ep_cur_msg[e], t)
    st[S_CREATED_PKTS] += n_gen
    smp[C_CREATED] += n_gen
    if t >= m0 and t < m1:
        st[S_CREATED_MEAS] += n_gen
        st[S_CREATED_WIN_FLITS] += pkt * n_gen
    pool.rec_top[0] = top
    pool.rec_next[0] = nxt


@njit_inline
def list_requests(t, plo, phi, nv, speed, inb, outq, scr):
    """Switch allocation, input side: the VCs of ports ``plo .. phi - 1`` that request the
    switch this cycle, at most ``speed`` per port, round-robin from each port's pointer;
    the requests are bucketed by output port.  Returns ``(requests, outputs)``.  Only the
    ports with a flit are visited (``ip_occ``): an idle router costs a few instructions.

    Written without branches on the VC state: the list is built by always writing the
    candidate and advancing only if it requests.  No credit check: an output VC is
    allocated only with room for the whole packet (virtual cut-through) and only this VC
    sends on it until its tail leaves, so the credit count is at least the flits left."""
    req_ivc, req_pin, req_out, bucket = scr.req_ivc, scr.req_pin, scr.req_out, scr.bucket
    out_nreq, out_list, out_start, out_fill = scr.out_nreq, scr.out_list, scr.out_start, scr.out_fill
    iv_sa_at, rr_in, occ = inb.iv_sa_at, outq.rr_in, inb.ip_occ
    n_req = 0
    for w in range(plo >> 6, ((phi - 1) >> 6) + 1):
        m = occupied_word(occ, w, plo, phi)
        while m != 0:
            # only the ports holding a flit (a VC without one never requests), in order
            P = (w << 6) + trailing_zeros(m)
            m &= m - 1
            granted_in = 0
            start = rr_in[P]
            for j in range(nv):
                vc = start + j
                vc = vc - nv if vc >= nv else vc
                ivc = P * nv + vc
                ok = (iv_sa_at[ivc] <= t) & (granted_in < speed)
                req_ivc[n_req] = ivc
                req_pin[n_req] = P - plo
                n_req += ok
                granted_in += ok
    for j in range(n_req):
        req_out[j] = inb.iv_out[req_ivc[j]]
    n_out = 0
    for j in range(n_req):
        lo = req_out[j] - plo
        if out_nreq[lo] == 0:
            out_list[n_out] = lo
            n_out += 1
        out_nreq[lo] += 1
    acc = 0
    for i in range(n_out):
        lo = out_list[i]
        out_start[lo] = acc
        out_fill[lo] = 0
        acc += out_nreq[lo]
    for j in range(n_req):
        lo = req_out[j] - plo
        bucket[out_start[lo] + out_fill[lo]] = j
        out_fill[lo] += 1
    return n_req, n_out


@njit_inline
def move_flit(t, k, P, ivc, op, prm, ports, crd, rec, inb, outq, obox):
    """Switch traversal at router ``k``: the front flit of input VC ``ivc`` (port ``P``)
    moves into the output queue of port ``op``, its credit goes back to the sender of
    ``P`` (or into an outbox), and a tail frees the output VC.  Returns a status code."""
    ib_id, ib_rdy, ib_head, ib_cnt = inb.ib_id, inb.ib_rdy, inb.ib_head, inb.ib_cnt
    iv_sa_at, iv_deep = inb.iv_sa_at, ports.iv_deep
    oq_head, oq_cnt = outq.oq_head, outq.oq_cnt
    nv, oqcap, pkt, hot = prm[PR_NV], prm[PR_OQCAP], prm[PR_PKT], prm[PR_HOT]
    nP = ports.port_off[ports.port_off.shape[0] - 1]
    nIV = nP * nv
    plo = ports.port_off[k]
    nepk = ports.n_epp[k]
    vc = ivc - P * nv
    h = ib_head[ivc]
    fid = ib_id[ring_slot(h, ivc, nIV, hot, iv_deep)]
    ovc = inb.iv_ovc[ivc]
    w = oq_head[op] + oq_cnt[op]
    if w >= oqcap:
        w -= oqcap
    qpos = w * nP + op
    sent = t + prm[PR_SAD]
    outq.oq_id[qpos] = fid
    outq.oq_rdy[qpos] = sent
    if oq_cnt[op] == 0:
        outq.oq_ready[op] = sent
    oq_cnt[op] += 1
    # the output VC and whether the flit is a head travel in the queue slot, not the
    # record: every flit of a one-flit packet is a head and a tail, and its record (left
    # the caches since it was routed) is not touched here
    tail = pkt == 1
    head = 1
    if not tail:
        fl = rec[fid, F_FLIT]
        tail = fl == pkt - 1
        head = 1 if fl == 0 else 0
    outq.oq_vc[qpos] = 2 * ovc + head
    ib_cnt[ivc] -= 1
    if ib_cnt[ivc] == 0:
        ib_head[ivc] = 0      # rewind: an idle VC keeps re-using one hot slot
        iv_sa_at[ivc] = NEVER
        port_emptied(inb.ip_occ, ib_cnt, P, nv)
    else:
        h = h + 1 if h + 1 < ports.in_cap[P] else 0
        ib_head[ivc] = h
        r = ib_rdy[ring_slot(h, ivc, nIV, hot, iv_deep)]
        inb.iv_ready[ivc] = r
        if tail:
            iv_sa_at[ivc] = NEVER
            inb.iv_va_at[ivc] = r      # the next packet's head
        else:
            sa_ready = inb.iv_sa_ready[ivc]
            iv_sa_at[ivc] = r if r > sa_ready else sa_ready
    if op - plo >= nepk:
        crd.cred[op * nv + ovc] -= 1
        if prm[PR_PRIV] != 0:
            crd.cr_res[op * nv + ovc] -= 1     # the flit was reserved at VC allocation
    # credit back to the sender of input port P
    carr = t + ports.in_lat[P] + prm[PR_CHX] + (prm[PR_CD] if P - plo >= nepk else prm[PR_ECD])
    if not send_credit(crd, obox, ports, nv, hot, prm[PR_COCAP], P, vc, carr):
        return ERR_CREDIT if ports.in_sender[P] >= 0 else ERR_OUTBOX
    if tail:
        outq.ov_owner[op * nv + ovc] = -1
        inb.iv_alloc[ivc] = 0
        inb.iv_out[ivc] = -1
    outq.rr_in[P] = vc + 1 if vc + 1 < nv else 0
    return OK


@njit_inline
def credit_back(t, P, vc, prm, ports, crd, obox, outq):
    """The credit of a flit that left input VC ``vc`` of port ``P`` in cycle ``t`` other than
    through the switch (a dropped flit): back to the port's sender, or into its outbox (with
    ``router.allocation = "booksim"``, through the port's credit queue).  A status code."""
    k = ports.port_router[P]
    plo = ports.port_off[k]
    cs = t
    if prm[PR_ALLOC] != 0:
        if cs < outq.cr_next[P]:
            cs = outq.cr_next[P]
        outq.cr_next[P] = cs + 1
    carr = cs + ports.in_lat[P] + prm[PR_CHX] + (prm[PR_CD] if P - plo >= ports.n_epp[k]
                                                  else prm[PR_ECD])
    if not send_credit(crd, obox, ports, prm[PR_NV], prm[PR_HOT], prm[PR_COCAP], P, vc, carr):
        return ERR_CREDIT if ports.in_sender[P] >= 0 else ERR_OUTBOX
    return OK


@njit_inline
def count_dropped_packet(created, prm, st):
    """A dropped packet created in cycle ``created``: counted once, and as measured if it was
    created in the measurement window."""
    st[S_DROPPED_PKTS] += 1
    if created >= prm[PR_M0] and created < prm[PR_M1]:
        st[S_DROPPED_MEAS] += 1


@njit_inline
def count_dropped(fid, prm, pool, stats):
    """Statistics of a dropped flit ``fid`` that was in the network (its packet's, at the tail)."""
    st = stats.st
    st[S_DROPPED_FLITS] += 1
    st[S_INFLIGHT] -= 1
    if pool.rec[fid, F_FLIT] == prm[PR_PKT] - 1:
        count_dropped_packet(pool.rec_c[fid, F_CTIME - NF_HOT], prm, st)


@njit_llvm_inline
def discard_front(now, t, P, ivc, prm, ports, crd, pool, inb, outq, obox, stats):
    """After a failure (``PR_FAULT``): drop the packet at the front of input VC ``ivc`` (port
    ``P``), which found no route, VC or working port, one flit per cycle and input port (so
    that its credits fit the outboxes as the switch's do); the flit must have arrived by
    ``now`` (a cycle, or a step with ``router.allocation = "booksim"``).  Until its tail has
    been dropped the VC drops every flit that arrives (``iv_out = IV_DISCARD``).  A status
    code."""
    nv, pkt, hot, sx = prm[PR_NV], prm[PR_PKT], prm[PR_HOT], prm[PR_SX]
    nIV = ports.port_off[ports.port_off.shape[0] - 1] * nv
    inb.iv_out[ivc] = IV_DISCARD
    inb.iv_va_at[ivc] = NEVER
    if inb.ib_cnt[ivc] == 0:
        return OK
    h = inb.ib_head[ivc]
    pos = ring_slot(h, ivc, nIV, hot, ports.iv_deep)
    r = inb.ib_rdy[pos]
    if r > now or outq.dr_next[P] > t:
        nxt = (t + 1) * sx
        inb.iv_va_at[ivc] = r if r > nxt else nxt      # not arrived, or the port dropped one
        return OK
    outq.dr_next[P] = t + 1
    fid = inb.ib_id[pos]
    tail = pool.rec[fid, F_FLIT] == pkt - 1
    count_dropped(fid, prm, pool, stats)
    top = pool.rec_top[0]
    pool.rec_free[top] = fid
    pool.rec_top[0] = top + 1
    inb.ib_cnt[ivc] -= 1
    if inb.ib_cnt[ivc] == 0:
        inb.ib_head[ivc] = 0
        port_emptied(inb.ip_occ, inb.ib_cnt, P, nv)
    else:
        h = h + 1 if h + 1 < ports.in_cap[P] else 0
        inb.ib_head[ivc] = h
        r = inb.ib_rdy[ring_slot(h, ivc, nIV, hot, ports.iv_deep)]
        inb.iv_ready[ivc] = r
        nxt = (t + 1) * sx
        inb.iv_va_at[ivc] = r if r > nxt else nxt
    if tail:
        inb.iv_out[ivc] = -1           # the next packet's head, if any, is routed
    return credit_back(t, P, ivc - P * nv, prm, ports, crd, obox, outq)


@njit_llvm_inline
def switch_allocation(t, k, prm, ports, crd, pool, inb, outq, obox, stats, scr):
    """Switch allocation at router ``k`` (separable, input first, round-robin) of packets that
    hold an output VC; the granted flits move into the output queues, their credits go back
    to the sender, tails free their output VC."""
    oq_cnt, rr_out = outq.oq_cnt, outq.rr_out
    st, smp = stats.st, stats.smp
    req_ivc, req_pin, req_out, bucket = scr.req_ivc, scr.req_pin, scr.req_out, scr.bucket
    out_nreq, out_list, out_start = scr.out_nreq, scr.out_list, scr.out_start
    oqcap, speed = prm[PR_OQCAP], prm[PR_SPEEDUP]
    plo = ports.port_off[k]
    phi = ports.port_off[k + 1]
    npk = phi - plo
    n_req, n_out = list_requests(t, plo, phi, prm[PR_NV], speed, inb, outq, scr)
    for i in range(n_out):
        # output side: up to speed grants (room in the output queue), round-robin over
        # the input ports from the output's pointer
        lo = out_list[i]
        op = plo + lo
        room = oqcap - oq_cnt[op]
        grants = speed if speed < room else room
        last_in = -1
        b0 = out_start[lo]
        nb = out_nreq[lo]
        while grants > 0:
            best = -1
            bestp = npk + 1
            for jj in range(b0, b0 + nb):
                j = bucket[jj]
                if req_out[j] < 0:
                    continue
                pin = req_pin[j]
                prio = pin - rr_out[op]
                if prio < 0:
                    prio += npk
                if prio < bestp:
                    bestp = prio
                    best = j
            if best < 0:
                break
            req_out[best] = -1
            grants -= 1
            status = move_flit(t, k, plo + req_pin[best], req_ivc[best], op, prm, ports, crd,
                               pool.rec, inb, outq, obox)
            if status != OK:
                return status
            last_in = req_pin[best]
            smp[C_MOVES] += 1
            st[S_LAST_MOVE] = t
        if last_in >= 0:
            rr_out[op] = last_in + 1 if last_in + 1 < npk else 0
        out_nreq[lo] = 0
    return OK


@njit_inline
def hist_bin(v, hmax):
    """Histogram bin of latency ``v``: ``v`` itself below ``hmax``; above, bin
    ``hmax + HIST_SUB * k + j`` for ``v`` in the ``j``-th of ``HIST_SUB`` equal parts of the
    octave ``[hmax * 2^k, hmax * 2^(k+1))`` (:func:`pdes.reduce.hist_edges` gives the lower
    edges)."""
    if v < hmax:
        return v
    k = 0
    base = np.int64(hmax)
    while base * 2 <= v and k < HIST_OCTAVES - 1:
        base *= 2
        k += 1
    j = ((v - base) * HIST_SUB) // base
    if j >= HIST_SUB:
        j = HIST_SUB - 1
    return hmax + HIST_SUB * k + j


@njit_inline
def eject(t, fid, e, prm, msgs, pool, stats):
    """The flit ``fid`` leaves the network at endpoint ``e`` (delivered after the endpoint
    channel latency); a measured packet's tail adds its latencies and hops."""
    rec, rec_c = pool.rec, pool.rec_c
    st, smp = stats.st, stats.smp
    m0, m1, hmax = prm[PR_M0], prm[PR_M1], prm[PR_HMAX]
    td = t + prm[PR_ELAT] + prm[PR_CHX]
    st[S_DELIVERED_FLITS] += 1
    st[S_INFLIGHT] -= 1
    smp[C_DELIVERED] += 1
    # counted in the window by the cycle the flit leaves the network (as the samples
    # are): the window starts at a sample boundary decided only then, so a delivery
    # cycle td = t + elat + chx would miss the flits that left just before it
    if t >= m0 and t < m1:
        st[S_DELIVERED_WIN] += 1
        stats.ep_del[e] += 1
    if td > st[S_LAST_DELIVERY]:
        st[S_LAST_DELIVERY] = td
    if rec[fid, F_FLIT] != prm[PR_PKT] - 1:
        return
    if prm[PR_FINITE] == 2:
        # a schedule: the packet belongs to the message of receive r
        if arrived(msgs, e, rec[fid, F_DST], rec_c[fid, F_AUX - NF_HOT], td):
            stats.hist_msg[hist_bin(td - rec_c[fid, F_CTIME - NF_HOT], hmax)] += 1
    elif prm[PR_FINITE] != 0:
        m = rec_c[fid, F_AUX - NF_HOT]
        msgs.msg_recv[m] += 1
        if msgs.msg_recv[m] == msgs.msg_pkts[m]:
            # message complete: its latency is the completion cycle (posted at 0)
            stats.hist_msg[hist_bin(td, hmax)] += 1
    ct = rec_c[fid, F_CTIME - NF_HOT]
    if ct >= m0 and ct < m1:
        plat = td - ct
        nlat = td - rec_c[fid, F_ITIME - NF_HOT]
        hops = rec[fid, F_HOPS]
        st[S_DELIVERED_MEAS] += 1
        st[S_SUM_PLAT] += plat
        st[S_SUM_PLAT_SQ] += plat * plat
        st[S_SUM_NLAT] += nlat
        st[S_SUM_HOPS] += hops
        if plat > st[S_MAX_PLAT]:
            st[S_MAX_PLAT] = plat
        if nlat > st[S_MAX_NLAT]:
            st[S_MAX_NLAT] = nlat
        stats.hist_plat[hist_bin(plat, hmax)] += 1
        stats.hist_nlat[hist_bin(nlat, hmax)] += 1
        nb = stats.hist_hops.shape[0]
        stats.hist_hops[hops if hops < nb - 1 else nb - 1] += 1


@njit_inline
def to_outbox(fid, vc, cc, arr, focap, pool, obox):
    """The flit ``fid`` leaves the part over cut channel ``cc`` on VC ``vc`` (arriving in
    cycle ``arr``): its record, with that VC, goes into the channel's outbox.  False if the
    outbox is full."""
    n = obox.fo_cnt[cc]
    if n >= focap:
        return False
    row = cc * focap + n
    fo_rec, rec, rec_c = obox.fo_rec, pool.rec, pool.rec_c
    for f in range(NF_HOT):
        fo_rec[row, f] = rec[fid, f]
    for f in range(NF_HOT, NF_USED):
        fo_rec[row, f] = rec_c[fid, f - NF_HOT]
    fo_rec[row, F_VC] = vc
    obox.fo_t[row] = arr
    obox.fo_cnt[cc] = n + 1
    return True


@njit_borrow
def output_stage(t, prm, ports, msgs, pool, inb, outq, obox, stats, scr):
    """3. Output ports: one flit per port onto its link or to its endpoint (ejection).  The
    flit's VC and head flag come from its queue slot (``oq_vc``): a head crossing a link
    within the part does not touch its record."""
    port_off, out_lat, out_dest = ports.port_off, ports.out_lat, ports.out_dest
    out_ep, in_cap, iv_deep = ports.out_ep, ports.in_cap, ports.iv_deep
    rec, rec_c, rec_free = pool.rec, pool.rec_c, pool.rec_free
    oq_id, oq_rdy, oq_head, oq_cnt = outq.oq_id, outq.oq_rdy, outq.oq_head, outq.oq_cnt
    oq_ready = outq.oq_ready
    st, smp, link_flits = stats.st, stats.smp, stats.link_flits
    nv, oqcap, hot, rdel, sx = prm[PR_NV], prm[PR_OQCAP], prm[PR_HOT], prm[PR_HRDY], prm[PR_SX]
    m0, m1, chx, pf = prm[PR_M0], prm[PR_M1], prm[PR_CHX], prm[PR_PF]
    nP = port_off[port_off.shape[0] - 1]
    nIV = nP * nv
    top = pool.rec_top[0]
    nR = port_off.shape[0] - 1
    pf_o = scr.pf_o
    mo = pf_o.shape[0] // PF_OUT_RING - 1
    for k in range(-PF_OUT, nR):
        if pf != 0:
            # the pipeline over the routers ahead (pdes.kernels.prefetch): router k + PF_OUT
            # lists its sending ports, each later router takes the next step of its chain
            if k + PF_OUT < nR:
                list_sending_ports(t, k + PF_OUT, oqcap, nP, ports, outq, pf_o, mo)
            if k + PF_OUT - 1 >= 0 and k + PF_OUT - 1 < nR:
                fetch_sent_records(k + PF_OUT - 1, nP, ports, outq, rec, rec_c, pf_o, mo)
            if k + PF_OUT - 2 >= 0 and k + PF_OUT - 2 < nR:
                fetch_joined_vcs(k + PF_OUT - 2, nv, nP, ports, inb, outq, pf_o, mo)
            if k + PF_OUT - 3 >= 0 and k + PF_OUT - 3 < nR:
                fetch_joined_slots(k + PF_OUT - 3, nv, nP, hot, nIV, ports, inb, outq, pf_o,
                                   mo)
        if k < 0:
            continue
        for P in range(port_off[k], port_off[k + 1]):
            if oq_ready[P] > t:       # NEVER while empty
                continue
            qs = oq_head[P] * nP + P
            fid = oq_id[qs]
            ov = outq.oq_vc[qs]
            oq_cnt[P] -= 1
            if oq_cnt[P] == 0:
                oq_head[P] = 0
                oq_ready[P] = NEVER
            else:
                oq_head[P] += 1
                if oq_head[P] == oqcap:
                    oq_head[P] = 0
                oq_ready[P] = oq_rdy[oq_head[P] * nP + P]
            smp[C_MOVES] += 1
            st[S_LAST_MOVE] = t
            e = out_ep[P]
            if e >= 0:
                eject(t, fid, e, prm, msgs, pool, stats)
                rec_free[top] = fid
                top += 1
                continue
            # network link: a head's hop is counted when it is routed at the router the
            # link leads to (its record is read there anyway), a body flit's here
            head = ov & 1
            if head == 0:
                rec[fid, F_HOPS] += 1
            arr = t + out_lat[P] + chx
            if t >= m0 and t < m1:
                link_flits[P] += 1
            D = out_dest[P]
            if D >= 0:
                rdy = arr * sx + (rdel if head != 0 else 0)
                enqueue_flit(inb, iv_deep, nIV, hot, in_cap[D], D, D * nv + (ov >> 1),
                             fid, rdy)
            else:
                if not to_outbox(fid, ov >> 1, ports.out_cut[P], arr, prm[PR_FOCAP], pool, obox):
                    return ERR_OUTBOX
                rec_free[top] = fid
                top += 1
    pool.rec_top[0] = top
    return OK


@njit_borrow
def snapshot_stage(t, prm, ports, tab, crd):
    """The routing's occupancy snapshot (``tab.snap``) at the end of cycle ``t``, taken by the
    window loop of a part that holds the whole network (``prm[PR_SNAP]``): per channel, the
    backlog of its output port, as :meth:`pdes.state.PartState.port_occupancy` computes it
    between windows for the other runs (flits sent or queued whose credits have not arrived
    by ``t``, less the port's credit round trip, at least 0); 0 on every other channel."""
    snap = tab.snap
    for c in range(snap.shape[0]):
        snap[c] = 0
    nv, hot = prm[PR_NV], prm[PR_HOT]
    port_off, n_epp, out_lat = ports.port_off, ports.n_epp, ports.out_lat
    for k in range(port_off.shape[0] - 1):
        first = port_off[k] + n_epp[k]                 # the router's network ports, in CSR order
        base = tab.g_off[ports.router_gid[k]] - first
        for P in range(first, port_off[k + 1]):
            rtt = credit_rtt(prm, out_lat[P])
            cap = ports.cr_cap[P]
            q = unreturned_flits(P, nv, hot, cap, ports.cr_deep, t, crd.cred,
                                 crd.cr_t, crd.cr_head, crd.cr_cnt) - (rtt if rtt < cap else cap - 1)
            snap[tab.g_chan[base + P]] = q if q > 0 else 0
