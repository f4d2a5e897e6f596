"""The router stage and the window loop, compiled once per routing kernel.

This file is a template: :mod:`pdes.kernels.generate` writes a copy in which
the two lines marked ``# routing import`` import a routing kernel's
``source`` and ``hop`` functions (``pdes.kernels.plugin``) as module globals,
and imports that copy under its own module name, so Numba compiles and
caches :func:`advance` once per routing kernel with the algorithm's
functions inlined or called directly (a jitted function passed as an
argument would miss the on-disk cache in every new process).  As it stands
it imports placeholders that route nothing.

:func:`route_and_allocate_vc` is the router's second step (after
:func:`pdes.kernels.cycle.switch_allocation`): for the head flit at the
front of every input VC without a route, the routing kernel's ``source``
(at the packet's first router) and ``hop`` give the output port and VC
class, which the engine checks (class below ``PR_NCLS``; with
``PR_MONO``, not below the class the flit arrived on); then separable VC
allocation, round-robin per output VC, grants a free VC of that class with
room for the whole packet (virtual cut-through); with shared buffers
(``PR_PRIV > 0``) the room counts the port's free shared flits, and a grant
reserves the packet's flits.
"""
from models.jit import njit, njit_borrow, njit_inline
from pdes.kernels.cycle import (
    NEVER, PF_ROUTERS, PR_HOT, PR_MONO, PR_NCLS, PR_NHMIN, PR_NV, PR_PKT, PR_PRIV, PR_VAD,
    endpoint_stage, make_scratch, output_stage, switch_allocation)
from pdes.kernels.buffers import shared_free, shared_room
from pdes.kernels.layout import (ERR_ROUTE, ERR_VC, ERR_VC_ORDER, F_DSTR, F_HOPS, F_PHASE, OK)
from pdes.kernels.plugin_placeholder import hop as route_hop, source as route_source  # routing import
HAS_SOURCE = False  # routing import
from pdes.kernels.nexthop import NH_MASKS
from pdes.kernels.prefetch import prefetch, prefetch2


@njit_inline
def route_and_allocate_vc(t, k, prm, ports, tab, crd, pool, inb, outq, scr, ctx, ap):
    """Route computation and VC allocation at router ``k`` (after the switch, so an output
    VC freed by a tail this cycle can be re-used)."""
    port_off, n_epp, router_gid = ports.port_off, ports.n_epp, ports.router_gid
    cr_cap, iv_deep, cr_deep = ports.cr_cap, ports.iv_deep, ports.cr_deep
    cr_t, cr_head, cr_cnt, cred, cr_res = crd
    rec, rec_c = pool.rec, pool.rec_c
    ib_id, ib_head, iv_ready, iv_out = inb.ib_id, inb.ib_head, inb.iv_ready, inb.iv_out
    iv_ovc, iv_alloc, iv_sa_ready = inb.iv_ovc, inb.iv_alloc, inb.iv_sa_ready
    iv_sa_at, iv_va_at = inb.iv_sa_at, inb.iv_va_at
    ov_owner, rr_va = outq.ov_owner, outq.rr_va
    va_best, va_who, touched, cand_ivc = scr.va_best, scr.va_who, scr.touched, scr.cand_ivc
    cand_p, va_ovc, cls_of = scr.cand_p, scr.va_ovc, scr.cls_of
    nv, pkt, vadel, hot = prm[PR_NV], prm[PR_PKT], prm[PR_VAD], prm[PR_HOT]
    ncls, mono, priv = prm[PR_NCLS], prm[PR_MONO], prm[PR_PRIV]
    kcls = nv // ncls
    nP = port_off[port_off.shape[0] - 1]
    nIV = nP * nv
    nK = cr_cnt.shape[0]
    plo = port_off[k]
    phi = port_off[k + 1]
    npk = phi - plo
    rg = router_gid[k]
    nepk = n_epp[k]
    # route computation and VC allocation for the next cycles
    n_touched = 0
    n_ivc = npk * nv
    n_cand = 0
    for P in range(plo, phi):
        for vc in range(nv):
            ivc = P * nv + vc
            cand_ivc[n_cand] = ivc
            cand_p[n_cand] = P
            n_cand += iv_va_at[ivc] <= t
    for ci in range(n_cand):
        ivc = cand_ivc[ci]
        P = cand_p[ci]
        vc = ivc - P * nv
        if iv_out[ivc] < 0:
            h = ib_head[ivc]
            fid = ib_id[h * nIV + ivc if h < hot else iv_deep[ivc] + h]
            if HAS_SOURCE and rec[fid, F_HOPS] == 0 and rec[fid, F_PHASE] == 0:
                # first router of the packet: the algorithm's decision (routing words)
                route_source(t, k, rg, plo, nepk, phi, ctx, ap, prm, ports, tab, crd, rec,
                             rec_c, fid)
            status, op, ovc = route_hop(t, k, rg, plo, nepk, phi, P, cls_of[vc], ctx, ap, prm,
                                        ports, tab, crd, rec, rec_c, fid)
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
            # the free VC of the class with the most credits (room for the packet)
            lo = iv_ovc[ivc] * kcls
            ovc = -1
            bc = -1
            ccap = cr_cap[op]
            if priv != 0:
                # shared buffer: the free VC with the most room for the packet (its private
                # flits left and the port's free shared flits; every credit of the port
                # that has arrived is absorbed first)
                free = shared_free(cr_t, cr_head, cr_cnt, cred, cr_res, nK, hot, cr_deep, nv,
                                   ccap, priv, op, t)
                for v in range(lo, lo + kcls):
                    kk = op * nv + v
                    if ov_owner[kk] >= 0:
                        continue
                    room = shared_room(cred, cr_res, ccap, priv, kk, free)
                    if room >= pkt and room > bc:
                        bc = room
                        ovc = v
            else:
                for v in range(lo, lo + kcls):
                    kk = op * nv + v
                    if ov_owner[kk] >= 0:
                        continue
                    if kcls == 1 and cred[kk] >= pkt:
                        # the class's only VC has room without the credits on their way
                        # back: the choice does not need them (they are absorbed later;
                        # the count at any cycle is the same whenever that happens)
                        ovc = v
                        break
                    # absorb the credits of key kk that have arrived (written out: see the
                    # endpoint stage)
                    n = cr_cnt[kk]
                    if n > 0:
                        h = cr_head[kk]
                        while n > 0 and cr_t[h * nK + kk if h < hot else cr_deep[kk] + h] <= t:
                            cred[kk] += 1
                            n -= 1
                            h = h + 1 if h + 1 < ccap else 0
                        cr_cnt[kk] = n
                        cr_head[kk] = h if n > 0 else 0
                    if cred[kk] >= pkt and cred[kk] > bc:
                        bc = cred[kk]
                        ovc = v
            if ovc < 0:
                continue
        o = op * nv + ovc
        loc = (op - plo) * nv + ovc
        me = (P - plo) * nv + vc
        prio = me - rr_va[o]
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
    for i in range(n_touched):
        loc = touched[i]
        w = va_who[loc]
        o = plo * nv + loc
        if priv != 0 and loc >= nepk * nv:
            # shared buffer: the packet's flits are reserved now, so that no other VC takes
            # the shared flits it was granted for (a grant earlier in this loop may have
            # taken them: then it waits)
            opg = o // nv
            free = shared_free(cr_t, cr_head, cr_cnt, cred, cr_res, nK, hot, cr_deep, nv,
                               cr_cap[opg], priv, opg, t)
            if shared_room(cred, cr_res, cr_cap[opg], priv, o, free) < pkt:
                va_best[loc] = -1
                continue
            cr_res[o] += pkt
        ov_owner[o] = w
        iv_ovc[w] = va_ovc[loc]
        iv_alloc[w] = 1
        iv_sa_ready[w] = t + vadel
        r = iv_ready[w]
        iv_sa_at[w] = r if r > t + vadel else t + vadel
        iv_va_at[w] = NEVER
        nxt = w - plo * nv + 1
        rr_va[o] = nxt if nxt < n_ivc else 0
        va_best[loc] = -1
    return OK


@njit_borrow
def router_stage(t, prm, ports, tab, crd, pool, inb, outq, obox, stats, scr, ctx, ap):
    """2. Routers: switch allocation, then route computation and VC allocation, per router."""
    port_off = ports.port_off
    nh_min = tab.nh_min
    nh_port = tab.nh_port
    rec = pool.rec
    ib_id, ib_head, ib_cnt, iv_alloc = inb.ib_id, inb.ib_head, inb.ib_cnt, inb.iv_alloc
    nv, pkt, use_nh, hot = prm[PR_NV], prm[PR_PKT], prm[PR_NHMIN], prm[PR_HOT]
    nR = port_off.shape[0] - 1
    nP = port_off[port_off.shape[0] - 1]
    nIV = nP * nv
    for k in range(nR):
        # Prefetch sweeps, written without data-dependent branches (a branch per VC
        # on the random occupancy of the buffers mispredicts often enough to cost more
        # than the prefetches it saves; an empty VC's "front" is its hot slot 0)
        if k + 2 * PF_ROUTERS < nR:
            # the front records of the input VCs a few routers ahead and, for a VC
            # whose packet may leave this cycle, the record behind it (routed in the
            # same cycle).  Only slots in the hot planes are looked at: a VC whose front
            # (or next) slot lies beyond them prefetches its slot 0 instead, a wrong
            # guess but no branch and no read outside the planes
            k2 = k + 2 * PF_ROUTERS
            for ivc in range(port_off[k2] * nv, port_off[k2 + 1] * nv):
                h = ib_head[ivc]
                h = h if h < hot else 0
                h2 = h + 1 if h + 1 < hot else 0
                behind = (ib_cnt[ivc] > 1) & (iv_alloc[ivc] != 0)
                prefetch(rec, ib_id[h * nIV + ivc])
                prefetch(rec, ib_id[(h2 if behind else h) * nIV + ivc])
        if use_nh != 0 and k + PF_ROUTERS < nR:
            # ... and, nearer, the next-hop table entries those records will read
            k2 = k + PF_ROUTERS
            for ivc in range(port_off[k2] * nv, port_off[k2 + 1] * nv):
                h = ib_head[ivc]
                h = h if h < hot else 0
                h2 = h + 1 if h + 1 < hot else 0
                behind = (ib_cnt[ivc] > 1) & (iv_alloc[ivc] != 0) & (pkt == 1)
                dr = rec[ib_id[(h2 if behind else h) * nIV + ivc], F_DSTR]
                if use_nh == NH_MASKS:
                    prefetch2(nh_min, k2, dr)
                else:
                    prefetch2(nh_port, k2, dr)
        status = switch_allocation(t, k, prm, ports, crd, pool, inb, outq, obox, stats, scr)
        if status != OK:
            return status
        status = route_and_allocate_vc(t, k, prm, ports, tab, crd, pool, inb, outq, scr, ctx, ap)
        if status != OK:
            return status
    return OK


@njit
def advance(t0, t1, prm, ports, tab, msgs, crd, pool, inb, outq, srcs, obox, stats, scr_arr, ctx,
            ap):
    """Run cycles ``t0..t1-1``; returns a status code (``OK`` or ``ERR_*``).

    ``ctx`` and ``ap``: the routing kernel's tables and parameters."""
    scr = make_scratch(prm, scr_arr)
    for t in range(t0, t1):
        endpoint_stage(t, prm, ports, tab, msgs, crd, pool, inb, srcs, stats)
        status = router_stage(t, prm, ports, tab, crd, pool, inb, outq, obox, stats, scr, ctx, ap)
        if status != OK:
            return status
        status = output_stage(t, prm, ports, msgs, pool, inb, outq, obox, stats)
        if status != OK:
            return status
    return OK
