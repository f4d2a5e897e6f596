"""The router stage and the window loop, compiled once per routing kernel.

This file is a template: :mod:`pdes.kernels.generate` writes a copy in which
the two lines marked ``# routing import`` import a routing kernel's
``source`` and ``hop`` functions (``models.core.routing``) as module globals,
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
from models.core.jit import njit, njit_borrow, njit_inline
from models.core.params import (NEVER, PR_HOT, PR_PF, PR_MONO, PR_NCLS, PR_NHMIN, PR_NV, PR_PKT,
    PR_PRIV, PR_VAD)
from pdes.kernels.cycle import (PF_ROUTERS, endpoint_stage, make_scratch, output_stage,
    switch_allocation)
from pdes.kernels.buffers import shared_free, shared_room
from models.core.record import ERR_ROUTE, ERR_VC, ERR_VC_ORDER, F_DSTR, F_HOPS, F_PHASE, OK
from pdes.kernels.plugin_placeholder import hop as route_hop, source as route_source  # routing import
HAS_SOURCE = False  # routing import
from models.core.nexthop import NH_MASKS
from pdes.kernels.prefetch import prefetch, prefetch2, prefetch_span


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
    ib_id, ib_rdy, ib_head = inb.ib_id, inb.ib_rdy, inb.ib_head
    iv_sa_at, iv_va_at = inb.iv_sa_at, inb.iv_va_at
    in_cap, iv_deep, in_sender = ports.in_cap, ports.iv_deep, ports.in_sender
    cr_cap, cr_deep = ports.cr_cap, ports.cr_deep
    cr_t, cr_head, cr_cnt, cred = crd.cr_t, crd.cr_head, crd.cr_cnt, crd.cred
    in_lat, in_cut = ports.in_lat, ports.in_cut
    iv_out, iv_ovc, iv_sa_ready, iv_ready = inb.iv_out, inb.iv_ovc, inb.iv_sa_ready, inb.iv_ready
    iv_alloc, ib_cnt = inb.iv_alloc, inb.ib_cnt
    ov_owner, rr_va, oq_cnt, oq_head = outq.ov_owner, outq.rr_va, outq.oq_cnt, outq.oq_head
    oq_ready, rr_in, rr_out = outq.oq_ready, outq.rr_in, outq.rr_out
    nK = cr_cnt.shape[0]
    nv, use_nh, hot, pf = prm[PR_NV], prm[PR_NHMIN], prm[PR_HOT], prm[PR_PF]
    nR = port_off.shape[0] - 1
    nP = port_off[port_off.shape[0] - 1]
    nIV = nP * nv
    pf_l = scr.pf_l
    m = (pf_l.shape[0] // 4 - 1) // 2
    for k in range(-3 * PF_ROUTERS, nR):
        # Prefetch, a software pipeline over the routers ahead.  The VCs of router k + 3
        # that will be allocated this cycle are listed (the sweep appends every VC and
        # advances only past one with work: no branch on the random state of the VCs) and
        # ask for the ring slots of their front flit, of the flit behind it and of the
        # sender's credit FIFO; two routers later they ask for the front's record and the
        # credit slot, one router before their own, for the next-hop entry the record's
        # destination selects.  Each stage reads what the stage before asked for
        ka = k + 3 * PF_ROUTERS
        if pf != 0 and ka < nR:
            la = (ka & 3) * (2 * m + 1)
            n = 0
            for P in range(port_off[ka], port_off[ka + 1]):
                for ivc in range(P * nv, P * nv + nv):
                    pf_l[la + 1 + n] = ivc
                    pf_l[la + 1 + m + n] = P
                    n += (iv_va_at[ivc] <= t) | (iv_sa_at[ivc] <= t)
            pf_l[la] = n
            for i in range(n):
                ivc = pf_l[la + 1 + i]
                P = pf_l[la + 1 + m + i]
                cap = in_cap[P]
                h = ib_head[ivc]
                d = iv_deep[ivc]
                h2 = h + 1 if h + 1 < cap else 0
                prefetch(ib_id, h * nIV + ivc if h < hot else d + h)
                s2 = h2 * nIV + ivc if h2 < hot else d + h2
                prefetch(ib_rdy, s2)
                prefetch(ib_id, s2)
                snd = in_sender[P]
                kk = snd * nv + ivc - P * nv if snd >= 0 else 0
                prefetch(cr_cap, snd if snd >= 0 else 0)
                prefetch(cr_cnt, kk)
                prefetch(cr_head, kk)
                prefetch(cr_deep, kk)
        kb = k + 2 * PF_ROUTERS
        if pf != 0 and kb >= 0 and kb < nR:
            # the router's own state: per port and per VC (or credit key of an output)
            p0 = port_off[kb]
            p1 = port_off[kb + 1]
            prefetch_span(in_sender, p0, p1)
            prefetch_span(in_lat, p0, p1)
            prefetch_span(in_cap, p0, p1)
            prefetch_span(in_cut, p0, p1)
            prefetch_span(cr_cap, p0, p1)
            prefetch_span(oq_cnt, p0, p1)
            prefetch_span(oq_head, p0, p1)
            prefetch_span(oq_ready, p0, p1)
            prefetch_span(iv_out, p0 * nv, p1 * nv)
            prefetch_span(iv_ovc, p0 * nv, p1 * nv)
            prefetch_span(iv_sa_ready, p0 * nv, p1 * nv)
            prefetch_span(iv_ready, p0 * nv, p1 * nv)
            prefetch_span(ov_owner, p0 * nv, p1 * nv)
            prefetch_span(cred, p0 * nv, p1 * nv)
            prefetch_span(rr_va, p0 * nv, p1 * nv)
            prefetch_span(cr_cnt, p0 * nv, p1 * nv)
            prefetch_span(cr_head, p0 * nv, p1 * nv)
            prefetch_span(ib_cnt, p0 * nv, p1 * nv)
            prefetch_span(ib_head, p0 * nv, p1 * nv)
            prefetch_span(iv_alloc, p0 * nv, p1 * nv)
            prefetch_span(iv_deep, p0 * nv, p1 * nv)
            prefetch_span(rr_in, p0, p1)
            prefetch_span(rr_out, p0, p1)
            lb = (kb & 3) * (2 * m + 1)
            for i in range(pf_l[lb]):
                ivc = pf_l[lb + 1 + i]
                P = pf_l[lb + 1 + m + i]
                h = ib_head[ivc]
                fid = ib_id[h * nIV + ivc if h < hot else iv_deep[ivc] + h]
                prefetch(rec, fid)
                snd = in_sender[P]
                if snd >= 0 and iv_sa_at[ivc] <= t:
                    kk = snd * nv + ivc - P * nv
                    ccap = cr_cap[snd]
                    w = cr_head[kk] + cr_cnt[kk]
                    w = w - ccap if w >= ccap else w
                    prefetch(cr_t, w * nK + kk if w < hot else cr_deep[kk] + w)
        kc = k + PF_ROUTERS
        if pf != 0 and use_nh != 0 and kc >= 0 and kc < nR:
            lc = (kc & 3) * (2 * m + 1)
            for i in range(pf_l[lc]):
                ivc = pf_l[lc + 1 + i]
                h = ib_head[ivc]
                fid = ib_id[h * nIV + ivc if h < hot else iv_deep[ivc] + h]
                dr = rec[fid, F_DSTR]
                if use_nh == NH_MASKS:
                    prefetch2(nh_min, kc, dr)
                else:
                    prefetch2(nh_port, kc, dr)
        if k < 0:
            continue
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
        status = output_stage(t, prm, ports, msgs, pool, inb, outq, obox, stats, scr)
        if status != OK:
            return status
    return OK
