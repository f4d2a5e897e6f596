"""The router stage and the window loop, compiled once per routing kernel.

This file is a template: :mod:`pdes.kernels.generate` writes a copy in which
the two lines marked ``# routing import`` import a routing kernel's
``source`` and ``hop`` functions (``models.core.routing``) as module globals,
and imports that copy under its own module name, so Numba compiles and
caches :func:`advance` (and :func:`advance_iq`) once per routing kernel with the algorithm's
functions inlined (a jitted function passed as an argument would miss the
on-disk cache in every new process; a call would pass every array of its
arguments).  As it stands
it imports :mod:`pdes.kernels.no_route`, which routes nothing.

:func:`route_and_allocate_vc` is the router's second step (after
:func:`pdes.kernels.cycle.switch_allocation`): for the head flit at the
front of every input VC without a route, the routing kernel's ``source``
(at the packet's first router) and ``hop`` give the output port and VC
class, which the engine checks (class below ``PR_NCLS``; with
``PR_MONO``, not below the class the flit arrived on; with ``PR_VCANY``
the class is 0, one class of every VC); then separable VC
allocation, round-robin per output VC, grants a free VC of that class with
room for the whole packet (virtual cut-through); with shared buffers
(``PR_PRIV > 0``) the room counts the port's free shared flits, and a grant
reserves the packet's flits.  The helpers that do not depend on the routing (the free
output VC, the grants, the check of a route after a failure: :mod:`pdes.kernels.vcalloc`;
the prefetch pipeline's steps) are compiled once and inlined by LLVM
(:func:`models.core.jit.njit_llvm_inline`), not typed and lowered again in every copy.
"""
from models.core.bits import trailing_zeros
from models.core.jit import njit_borrow, njit_inline, njit_window
from models.core.params import (IV_DISCARD, PR_EJCLS, PR_FAULT, PR_HOLD, PR_HOT, PR_MONO, PR_NCLS,
                                PR_NHMIN, PR_NV, PR_PF, PR_SNAP, PR_SX, PR_VALG, PR_VCANY,
                                PR_VITERS)
from models.core.rings import ring_slot
from models.core.record import (ERR_ROUTE, ERR_VC, ERR_VC_ORDER, F_HOPS, F_PHASE, F_SEQ, F_SRC,
                                OK)
from models.core.views import EngineView, Site
from pdes.kernels.buffers import occupied_word
from pdes.kernels.cycle import (build_derived, discard_front, endpoint_stage, make_scratch,
                                output_stage, prefetch_gate, snapshot_stage, switch_allocation)
from pdes.kernels.iq import (OV_DRAINING, drained, grant_vc, match, port_switch_requests,
                             reset_iq_scratch, switch_moves, switch_step)
from pdes.kernels.prefetch import (PF_RING, PF_ROUTERS, fetch_next_hops, fetch_router_lines,
                                   list_router_vcs)
from pdes.kernels.vcalloc import free_output_vc, grant_vcs, unroutable
from pdes.kernels.no_route import hop as route_hop, source as route_source  # routing import
HAS_SOURCE = False  # routing import
# the routing's functions are inlined into the router stage: a call would pass every array
# of the engine's view and the routing's tables (several hundred words per head flit)
route_hop = njit_inline(route_hop.py_func)
route_source = njit_inline(route_source.py_func)
DROPPED = -1        # route_head: the packet was dropped (PR_FAULT)


@njit_inline
def route_and_allocate_vc(t, k, eng, pool, inb, outq, obox, stats, scr, ctx, ap):
    """Route computation and VC allocation at router ``k`` (after the switch, so an output
    VC freed by a tail this cycle can be re-used); ``eng`` is the routing's view of the
    engine (:class:`models.core.views.EngineView`)."""
    prm, ports, crd, rec = eng.prm, eng.ports, eng.crd, eng.rec
    port_off, iv_deep = ports.port_off, ports.iv_deep
    ib_id, ib_head, iv_out, iv_ovc = inb.ib_id, inb.ib_head, inb.iv_out, inb.iv_ovc
    ov_owner, rr_va = outq.ov_owner, outq.rr_va
    va_best, va_who, touched, cand_ivc = scr.va_best, scr.va_who, scr.touched, scr.cand_ivc
    cand_p, va_ovc, cls_of = scr.cand_p, scr.va_ovc, scr.cls_of
    nv, hot, ncls, mono = prm[PR_NV], prm[PR_HOT], prm[PR_NCLS], prm[PR_MONO]
    vany, fault = prm[PR_VCANY], prm[PR_FAULT]
    nIV = port_off[port_off.shape[0] - 1] * nv
    kcls = nv // ncls
    plo = port_off[k]
    phi = port_off[k + 1]
    rg = ports.router_gid[k]
    nepk = ports.n_epp[k]
    n_touched = 0
    n_ivc = (phi - plo) * nv
    n_cand = 0
    occ = inb.ip_occ
    for w in range(plo >> 6, ((phi - 1) >> 6) + 1):
        m = occupied_word(occ, w, plo, phi)
        while m != 0:
            # only the ports holding a flit (an empty VC has no head), in order
            P = (w << 6) + trailing_zeros(m)
            m &= m - 1
            for vc in range(nv):
                ivc = P * nv + vc
                cand_ivc[n_cand] = ivc
                cand_p[n_cand] = P
                n_cand += inb.iv_va_at[ivc] <= t
    for ci in range(n_cand):
        ivc = cand_ivc[ci]
        P = cand_p[ci]
        vc = ivc - P * nv
        if iv_out[ivc] < 0:
            if iv_out[ivc] == IV_DISCARD:
                # after a failure: the rest of a dropped packet
                status = discard_front(t, t, P, ivc, prm, ports, crd, pool, inb, outq, obox, stats)
                if status != OK:
                    return status
                continue
            fid = ib_id[ring_slot(ib_head[ivc], ivc, nIV, hot, iv_deep)]
            if P - plo >= nepk:
                rec[fid, F_HOPS] += 1    # the link it arrived on (output_stage)
            site = Site(t, k, rg, plo, nepk, phi, P, cls_of[vc])
            if HAS_SOURCE and rec[fid, F_HOPS] == 0 and rec[fid, F_PHASE] == 0:
                # first router of the packet: the algorithm's decision (routing words)
                route_source(site, eng, ctx, ap, fid)
            status, op, ovc = route_hop(site, eng, ctx, ap, fid)
            if vany != 0:
                ovc = 0                  # routing.vcs = "any": one class spanning every VC
            if fault != 0:
                inb.iv_psrc[ivc] = rec[fid, F_SRC]
                inb.iv_pseq[ivc] = rec[fid, F_SEQ]
            if fault == 2 and unroutable(status, op, ovc, ncls, mono, P, plo, nepk, cls_of[vc],
                                         ports.port_down):
                status = discard_front(t, t, P, ivc, prm, ports, crd, pool, inb, outq, obox, stats)
                if status != OK:
                    return status
                continue
            if status != OK:
                return status
            if op < 0:
                return ERR_ROUTE
            if ovc >= ncls:
                return ERR_VC
            if mono != 0 and P - plo >= nepk and op - plo >= nepk and ovc < cls_of[vc]:
                return ERR_VC_ORDER      # classes must not decrease along a path
            iv_out[ivc] = op
            iv_ovc[ivc] = ovc          # the VC class until VC allocation succeeds
        op = iv_out[ivc]
        if op - plo < nepk:
            ovc = 0                    # ejection: one output "VC"
            if ov_owner[op * nv] >= 0:
                continue
        else:
            ovc = free_output_vc(t, op, iv_ovc[ivc], kcls, prm, ports, crd, outq)
            if ovc < 0:
                continue
        # input side: each output VC keeps its best requester (round-robin priority)
        o = op * nv + ovc
        loc = (op - plo) * nv + ovc
        prio = (P - plo) * nv + vc - rr_va[o]
        if prio < 0:
            prio += n_ivc
        if va_best[loc] < 0:
            touched[n_touched] = loc
            n_touched += 1
            va_best[loc] = prio
            va_who[loc] = ivc
            va_ovc[loc] = ovc
        elif prio < va_best[loc]:
            va_best[loc] = prio
            va_who[loc] = ivc
    grant_vcs(t, k, n_touched, prm, ports, crd, inb, outq, scr)
    return OK


@njit_borrow
def router_stage(t, eng, pool, inb, outq, obox, stats, scr, ctx, ap):
    """2. Routers: switch allocation, then route computation and VC allocation, per router
    (``eng``: the engine's view the routing reads, built once per window).

    On a large part (``prm[PR_PF]``) the routers ahead are prefetched by the pipeline of
    :mod:`pdes.kernels.prefetch`: each step reads what the step before asked for."""
    prm, ports, tab, crd, rec = eng.prm, eng.ports, eng.tab, eng.crd, eng.rec
    nv, use_nh, hot, pf = prm[PR_NV], prm[PR_NHMIN], prm[PR_HOT], prm[PR_PF]
    port_off = ports.port_off
    nR = port_off.shape[0] - 1
    nIV = port_off[nR] * nv
    pf_l = scr.pf_l
    m = (pf_l.shape[0] // PF_RING - 1) // 2
    for k in range(-3 * PF_ROUTERS, nR):
        if pf != 0:
            ka = k + 3 * PF_ROUTERS
            if ka < nR:
                list_router_vcs(t, ka, nv, hot, nIV, ports, inb, crd, pf_l, m)
            kb = k + 2 * PF_ROUTERS
            if kb >= 0 and kb < nR:
                fetch_router_lines(t, kb, nv, hot, nIV, ports, inb, outq, crd, rec, pf_l, m)
            kc = k + PF_ROUTERS
            if use_nh != 0 and kc >= 0 and kc < nR:
                fetch_next_hops(kc, use_nh, hot, nIV, ports.iv_deep, inb, tab, rec, pf_l, m)
        if k < 0:
            continue
        status = switch_allocation(t, k, prm, ports, crd, pool, inb, outq, obox, stats, scr)
        if status != OK:
            return status
        status = route_and_allocate_vc(t, k, eng, pool, inb, outq, obox, stats, scr, ctx, ap)
        if status != OK:
            return status
    return OK


@njit_inline
def route_head(t, tau, k, P, ivc, eng, pool, inb, outq, obox, stats, scr, ctx, ap):
    """Route computation for the head at the front of input VC ``ivc`` (port ``P`` of router
    ``k``) in step ``tau``: the routing kernel's output port and VC class, checked; a status
    code, or ``DROPPED`` (after a failure, the packet found no route: :func:`discard_front`)."""
    prm, ports, rec = eng.prm, eng.ports, eng.rec
    if inb.iv_out[ivc] == IV_DISCARD:
        status = discard_front(tau, t, P, ivc, prm, ports, eng.crd, pool, inb, outq, obox, stats)
        return DROPPED if status == OK else status
    nv, hot, ncls, mono = prm[PR_NV], prm[PR_HOT], prm[PR_NCLS], prm[PR_MONO]
    port_off = ports.port_off
    nIV = port_off[port_off.shape[0] - 1] * nv
    plo = port_off[k]
    nepk = ports.n_epp[k]
    vc = ivc - P * nv
    cls_of = scr.cls_of
    fid = inb.ib_id[ring_slot(inb.ib_head[ivc], ivc, nIV, hot, ports.iv_deep)]
    if P - plo >= nepk:
        rec[fid, F_HOPS] += 1
    site = Site(t, k, ports.router_gid[k], plo, nepk, port_off[k + 1], P, cls_of[vc])
    if HAS_SOURCE and rec[fid, F_HOPS] == 0 and rec[fid, F_PHASE] == 0:
        route_source(site, eng, ctx, ap, fid)
    status, op, ovc = route_hop(site, eng, ctx, ap, fid)
    if prm[PR_VCANY] != 0:
        ovc = 0                        # routing.vcs = "any": one class spanning every VC
    if prm[PR_FAULT] != 0:
        inb.iv_psrc[ivc] = rec[fid, F_SRC]
        inb.iv_pseq[ivc] = rec[fid, F_SEQ]
    if prm[PR_FAULT] == 2 and unroutable(status, op, ovc, ncls, mono, P, plo, nepk, cls_of[vc],
                                         ports.port_down):
        status = discard_front(tau, t, P, ivc, prm, ports, eng.crd, pool, inb, outq, obox, stats)
        return DROPPED if status == OK else status
    if status != OK:
        return status
    if op < 0:
        return ERR_ROUTE
    if ovc >= ncls:
        return ERR_VC
    if mono != 0 and P - plo >= nepk and op - plo >= nepk and ovc < cls_of[vc]:
        return ERR_VC_ORDER
    inb.iv_out[ivc] = op
    inb.iv_ovc[ivc] = ovc
    return OK


@njit_inline
def vc_step(t, tau, k, eng, pool, inb, outq, obox, stats, scr, iqs, ctx, ap):
    """BookSim's VC allocation at router ``k`` in step ``tau`` (:mod:`pdes.kernels.iq`):
    every head due routes (once) and requests each VC of its class on its output that no
    packet holds (an ejection port: any of its VCs, or with ``PR_EJCLS`` those of the class the
    routing gives the ejection hop), whatever its credits (wormhole)."""
    n_cand, _ = sweep_step(t, tau, k, False, eng, inb, outq, iqs)
    return allocate_vcs(t, tau, k, n_cand, eng, pool, inb, outq, obox, stats, scr, iqs, ctx, ap)


@njit_inline
def alloc_step(t, tau, k, eng, pool, inb, outq, obox, stats, scr, iqs, ctx, ap):
    """:func:`vc_step` then :func:`pdes.kernels.iq.switch_step` at router ``k`` in step
    ``tau`` without held switch paths (``PR_HOLD`` off), with one sweep of the ports holding
    a flit for both: the heads due and the switch requests are listed together, then the
    heads are routed and allocated VCs, then the switch allocator matches.  The same
    choices: no VC allocation of a step changes a switch request of the step (a VC granted
    may request from the step after; a head dropped after a failure is on a VC without an
    output VC, and its port still holds the flits of any VC that requests), and the credits
    a request's check absorbs are those that have arrived, which VC allocation and routing
    absorb alike."""
    n_cand, nreq_sw = sweep_step(t, tau, k, True, eng, inb, outq, iqs)
    status = allocate_vcs(t, tau, k, n_cand, eng, pool, inb, outq, obox, stats, scr, iqs, ctx,
                          ap)
    if status != OK:
        return status
    return switch_moves(t, tau, k, 0, nreq_sw, eng.prm, eng.ports, eng.crd, pool, inb, outq,
                        obox, stats, iqs)


@njit_inline
def sweep_step(t, tau, k, with_switch, eng, inb, outq, iqs):
    """The ports of router ``k`` holding a flit, in order, in step ``tau``: the heads due for
    VC allocation (``iqs.va_c``, their ports ``iqs.va_p``) and, ``with_switch``, the switch
    requests (:func:`pdes.kernels.iq.port_switch_requests`).  Returns both counts.  A VC's
    own allocation alone changes whether it is due, so the list holds while the heads are
    served in turn."""
    prm, ports = eng.prm, eng.ports
    nv = prm[PR_NV]
    iv_va_at, iv_alloc, ib_cnt = inb.iv_va_at, inb.iv_alloc, inb.ib_cnt
    va_c, va_p = iqs.va_c, iqs.va_p
    plo = ports.port_off[k]
    phi = ports.port_off[k + 1]
    nepk = ports.n_epp[k]
    n_cand = 0
    nreq_sw = 0
    for wd in range(plo >> 6, ((phi - 1) >> 6) + 1):
        m = occupied_word(inb.ip_occ, wd, plo, phi)
        while m != 0:
            P = (wd << 6) + trailing_zeros(m)      # a port holding a flit, in order
            m &= m - 1
            for vc in range(nv):
                ivc = P * nv + vc
                if iv_va_at[ivc] > tau or iv_alloc[ivc] != 0 or ib_cnt[ivc] == 0:
                    continue
                va_c[n_cand] = ivc
                va_p[n_cand] = P
                n_cand += 1
            if with_switch:
                nreq_sw = port_switch_requests(t, tau, P, plo, nepk, nreq_sw, prm, ports,
                                               eng.crd, inb, outq, iqs)
    return n_cand, nreq_sw


@njit_inline
def allocate_vcs(t, tau, k, n_cand, eng, pool, inb, outq, obox, stats, scr, iqs, ctx, ap):
    """VC allocation at router ``k`` in step ``tau`` of the heads ``iqs.va_c[0:n_cand]``: each
    routes (once) and requests each VC of its class on its output that no packet holds (an
    ejection port: any of its VCs, or with ``PR_EJCLS`` those of the class the routing gives
    the ejection hop); the allocator matches and grants.  A status code."""
    prm, ports = eng.prm, eng.ports
    nv, ncls = prm[PR_NV], prm[PR_NCLS]
    kcls = nv // ncls
    ejcls = prm[PR_EJCLS]
    iv_out, ov_owner = inb.iv_out, outq.ov_owner
    rq_in, rq_out = iqs.va_in, iqs.va_out
    plo = ports.port_off[k]
    nepk = ports.n_epp[k]
    nreq = 0
    for ci in range(n_cand):
        ivc = iqs.va_c[ci]
        if iv_out[ivc] < 0:
            status = route_head(t, tau, k, iqs.va_p[ci], ivc, eng, pool, inb, outq, obox, stats,
                                scr, ctx, ap)
            if status == DROPPED:
                continue
            if status != OK:
                return status
        op = iv_out[ivc]
        ol = op - plo
        lo = 0
        n = nv
        if ol >= nepk or ejcls != 0:
            lo = inb.iv_ovc[ivc] * kcls
            n = kcls
        for v in range(lo, lo + n):
            w = ov_owner[op * nv + v]
            if w == -1 or (w == OV_DRAINING and drained(t, op * nv + v, prm, ports, eng.crd,
                                                         outq)):
                rq_in[nreq] = ivc - plo * nv
                rq_out[nreq] = ol * nv + v
                nreq += 1
    if nreq == 0:
        return OK
    nio = (ports.port_off[k + 1] - plo) * nv
    nm = match(nreq, rq_in, rq_out, prm[PR_VALG], prm[PR_VITERS], outq.rr_va_in, plo * nv, nio,
               outq.rr_va, plo * nv, nio, iqs)
    for q in range(nm):
        j = iqs.m_req[q]
        o = rq_out[j]
        grant_vc(tau, plo * nv + rq_in[j], plo + o // nv, o % nv, prm, inb, outq)
    return OK


@njit_inline
def router_idle(k, nv, hold, ports, inb, outq):
    """Whether router ``k`` has no flit in (or on its way into) any input VC and, with
    ``hold``, no held switch path: then neither allocator has anything to do or to change
    at ``k`` in any step of the cycle."""
    plo = ports.port_off[k]
    phi = ports.port_off[k + 1]
    for w in range(plo >> 6, ((phi - 1) >> 6) + 1):
        if occupied_word(inb.ip_occ, w, plo, phi) != 0:
            return False
    lo = plo * nv
    hi = phi * nv
    if hold != 0:
        for i in range(lo, hi):      # the switch-input slots lie in the router's block
            if outq.hold_vc[i] >= 0:
                return False
    return True


@njit_borrow
def iq_router_stage(t, eng, pool, inb, outq, obox, stats, scr, iqs, ctx, ap):
    """2. Routers as BookSim2's input-queued router (``router.allocation = "booksim"``):
    per router, ``PR_SX`` steps of VC allocation then switch allocation (one sweep of the
    ports for both, :func:`alloc_step`, unless switch paths are held); a router with no
    flit is skipped (:func:`router_idle`)."""
    prm, ports, crd = eng.prm, eng.ports, eng.crd
    sx = prm[PR_SX]
    nv, hold = prm[PR_NV], prm[PR_HOLD]
    nR = ports.port_off.shape[0] - 1
    for k in range(nR):
        if router_idle(k, nv, hold, ports, inb, outq):
            continue
        for j in range(sx):
            tau = t * sx + j
            if hold == 0:
                status = alloc_step(t, tau, k, eng, pool, inb, outq, obox, stats, scr, iqs,
                                    ctx, ap)
                if status != OK:
                    return status
                continue
            status = vc_step(t, tau, k, eng, pool, inb, outq, obox, stats, scr, iqs, ctx, ap)
            if status != OK:
                return status
            status = switch_step(t, tau, k, prm, ports, crd, pool, inb, outq, obox, stats, iqs)
            if status != OK:
                return status
    return OK


@njit_window
def advance(t0, t1, prm, state, scr_views, ctx, ap):
    """Run cycles ``t0..t1-1`` with the default allocation (``vct``); returns a status code
    (``OK`` or ``ERR_*``).

    ``state``: the state groups in :data:`pdes.kernels.cycle.GROUPS` order; ``scr_views`` the
    allocators' scratch; ``ctx`` and ``ap``: the routing kernel's tables and parameters.
    :func:`advance_iq` is the same loop with BookSim's allocation: two functions, so that a
    run compiles only the router stage it runs (each is about 40% of a routing's compile)."""
    ports, tab, msgs, crd, pool, inb, outq, srcs, obox, stats = state
    build_derived(prm, ports, inb, srcs)
    scr = make_scratch(scr_views)
    eng = EngineView(prm, ports, tab, crd, pool.rec, pool.rec_c)
    every = prm[PR_SNAP]
    for t in range(t0, t1):
        prefetch_gate(prm, pool)
        endpoint_stage(t, prm, ports, tab, msgs, crd, pool, inb, srcs, stats)
        status = router_stage(t, eng, pool, inb, outq, obox, stats, scr, ctx, ap)
        if status != OK:
            return status
        status = output_stage(t, prm, ports, msgs, pool, inb, outq, obox, stats, scr)
        if status != OK:
            return status
        if every != 0 and (t + 1) % every == 0:
            snapshot_stage(t, prm, ports, tab, crd)
    return OK


@njit_window
def advance_iq(t0, t1, prm, state, scr_views, iq_views, ctx, ap):
    """:func:`advance` with BookSim's allocation (``prm[PR_ALLOC] != 0``): the router stage is
    :func:`iq_router_stage`, its allocators' scratch ``iq_views``
    (:func:`pdes.kernels.iq.make_iq_scratch`)."""
    ports, tab, msgs, crd, pool, inb, outq, srcs, obox, stats = state
    build_derived(prm, ports, inb, srcs)
    scr = make_scratch(scr_views)
    iqs = reset_iq_scratch(iq_views)
    eng = EngineView(prm, ports, tab, crd, pool.rec, pool.rec_c)
    every = prm[PR_SNAP]
    for t in range(t0, t1):
        prefetch_gate(prm, pool)
        endpoint_stage(t, prm, ports, tab, msgs, crd, pool, inb, srcs, stats)
        status = iq_router_stage(t, eng, pool, inb, outq, obox, stats, scr, iqs, ctx, ap)
        if status != OK:
            return status
        status = output_stage(t, prm, ports, msgs, pool, inb, outq, obox, stats, scr)
        if status != OK:
            return status
        if every != 0 and (t + 1) % every == 0:
            snapshot_stage(t, prm, ports, tab, crd)
    return OK
