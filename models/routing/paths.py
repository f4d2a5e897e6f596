"""Jitted building blocks of the routing kernels (``models.core.routing``).

Minimal next hops from the distance table, random intermediate routers,
output-queue estimates and snapshot path costs: what the algorithms of this
package compose their ``source`` and ``hop`` functions from.  Every random
choice is drawn from the counter-based generator keyed by the packet id
(source endpoint, sequence number), so it is the same whichever rank routes
the packet.  Queue occupancy of an output port is the number of flits sent
or queued on it whose credits have not come back, i.e. ``sum over VCs
(capacity - credits)`` after absorbing the credits that have arrived, with the
capacity of the input VCs at the other end of the port's link -- a function of
the router's own state only.  With a shared buffer (``router.buffer_policy``)
that capacity is the most one VC may hold, and the sum is still the port's
occupancy (flits reserved for a packet at VC allocation count from switch
allocation on, as with private buffers).
"""
import numpy as np

from models.core.jit import njit_inline
from models.metrics import UNREACHABLE
from models.core.params import PR_HOT, PR_NV, PR_PRIV, PR_SEED
from models.core.record import F_DST, F_DSTR, F_HOPS, F_MID, F_PHASE, F_SEQ, F_SRC, NF_HOT
from models.core.rings import absorb_credits
from models.core.rng import P_MID, P_ROUTE, below

MAX_TRIES = 32   # redraws of an intermediate router that is the source/destination or too far


@njit_inline
def min_port(rg, target, net_lo, net_hi, out_nbr, dist, seed, src, seq, hop):
    """A minimal next-hop port from router ``rg`` towards router ``target``.

    Candidates are the network ports whose neighbour is one step closer;
    one is drawn uniformly (key: packet id, hop).  Returns -1 if ``target``
    is unreachable.
    """
    d = np.int64(dist[target, rg])
    if d == UNREACHABLE or d == 0:
        return -1
    cnt = 0
    for P in range(net_lo, net_hi):
        if np.int64(dist[target, out_nbr[P]]) == d - 1:
            cnt += 1
    if cnt == 0:
        return -1
    j = below(cnt, seed, src, seq, P_ROUTE + 64 * hop) if cnt > 1 else 0
    for P in range(net_lo, net_hi):
        if np.int64(dist[target, out_nbr[P]]) == d - 1:
            if j == 0:
                return P
            j -= 1
    return -1


@njit_inline
def draw_mid(cand, rg, dstr, dist, max_hops, seed, src, seq, j, r_group, g_entry):
    """The ``j``-th random intermediate router for a packet (-1 if none qualifies).

    Drawn uniformly from ``cand`` (sorted router ids), excluding the source
    and destination routers and, with ``max_hops > 0``, routers that would
    make the path longer than ``max_hops``; redrawn up to ``MAX_TRIES`` times.
    With a group table (``g_entry`` with more than one row: groups of a
    hierarchical topology): a random intermediate group other than the
    source's and destination's, entered at the router that holds its global
    link from the source group.
    """
    if g_entry.shape[0] > 1:
        g = g_entry.shape[0]
        gs = r_group[rg]
        gd = r_group[dstr]
        for k in range(MAX_TRIES):
            gm = below(g, seed, src, seq, P_MID + 1024 * j + k)
            if gm == gs or gm == gd or g_entry[gm, gs] < 0:
                continue
            return g_entry[gm, gs]
        return -1
    n = cand.shape[0]
    if n == 0:
        return -1
    for k in range(MAX_TRIES):
        m = cand[below(n, seed, src, seq, P_MID + 1024 * j + k)]
        if m == rg or m == dstr:
            continue
        if max_hops > 0 and np.int64(dist[m, rg]) + np.int64(dist[dstr, m]) > max_hops:
            continue
        return m
    return -1


@njit_inline
def port_queue(op, prm, ports, crd, t):
    """Flits sent or queued on output port ``op`` whose credits have not returned (the
    credits that have arrived by cycle ``t`` are absorbed)."""
    nv, hot = prm[PR_NV], prm[PR_HOT]
    cap = ports.cr_cap[op]
    q = 0
    for v in range(nv):
        kk = op * nv + v
        absorb_credits(crd, ports.cr_deep, hot, cap, kk, t)
        q += cap - crd.cred[kk]
    return q


@njit_inline
def buffer_share(op, prm, ports, frac_micro):
    """``frac_micro`` millionths of the input buffer at the other end of port ``op`` (its
    VCs times their capacity; a shared buffer: one VC's capacity plus the other VCs'
    private flits), in millionths of a flit: a threshold that a flit count ``q`` is
    compared with exactly as ``q * 1000000``."""
    nv, priv = prm[PR_NV], prm[PR_PRIV]
    cap = ports.cr_cap[op]
    return frac_micro * (nv * cap if priv == 0 else cap + (nv - 1) * priv)


@njit_inline
def path_cost(a, b, g_off, g_nbr, g_chan, dist, snap):
    """Sum of snapshot occupancies along one minimal path a -> b (lowest-id next hops)."""
    cost = 0
    x = a
    while x != b:
        d = np.int64(dist[b, x])
        nxt = -1
        for i in range(g_off[x], g_off[x + 1]):
            if np.int64(dist[b, g_nbr[i]]) == d - 1:
                cost += snap[g_chan[i]]
                nxt = g_nbr[i]
                break
        if nxt < 0:
            return cost
        x = nxt
    return cost


@njit_inline
def min_port_adaptive(site, eng, target, src, seq, hop):
    """The minimal next-hop port at ``site`` towards router ``target`` with the least occupied
    output (random among ties, key: packet id ``(src, seq)`` and ``hop``)."""
    rg, t, net_lo, net_hi = site.rg, site.t, site.plo + site.nepk, site.phi
    prm, ports, crd = eng.prm, eng.ports, eng.crd
    out_nbr, dist, seed = ports.out_nbr, eng.tab.dist, prm[PR_SEED]
    d = np.int64(dist[target, rg])
    if d == UNREACHABLE or d == 0:
        return -1
    best = -1
    bq = 1 << 60
    cnt = 0
    for P in range(net_lo, net_hi):
        if np.int64(dist[target, out_nbr[P]]) == d - 1:
            q = port_queue(P, prm, ports, crd, t)
            if q < bq:
                bq = q
                best = P
                cnt = 1
            elif q == bq:
                cnt += 1
    if cnt <= 1:
        return best
    j = below(cnt, seed, src, seq, P_ROUTE + 64 * hop)
    for P in range(net_lo, net_hi):
        if np.int64(dist[target, out_nbr[P]]) == d - 1:
            if port_queue(P, prm, ports, crd, t) == bq:
                if j == 0:
                    return P
                j -= 1
    return best


@njit_inline
def target_of(rg, rec, rec_c, fid):
    """(target router, phase) of a packet at router ``rg``: its intermediate router
    (``F_MID``) while ``F_PHASE == 0``, then its destination; reaching the
    intermediate starts phase 1 (written back)."""
    mid = rec_c[fid, F_MID - NF_HOT]
    phase = rec[fid, F_PHASE]
    if phase == 0 and mid >= 0 and rg == mid:
        phase = 1
        rec[fid, F_PHASE] = 1
    if phase == 0 and mid >= 0:
        return mid, phase
    return rec[fid, F_DSTR], phase


@njit_inline
def eject_port(rg, plo, ep_first, rec, fid):
    """The endpoint port of the packet's destination at its destination router ``rg``."""
    return plo + (rec[fid, F_DST] - ep_first[rg])


@njit_inline
def hop_class(phase_classes, phase, rec, rec_c, fid):
    """VC class of a network hop: hops taken so far (hop-index classes, 000 Sec. IV-D) or,
    with ``phase_classes``, 0 before and 1 after the intermediate router (001 Sec. 3.4)."""
    if phase_classes != 0:
        return 1 if (phase == 1 and rec_c[fid, F_MID - NF_HOT] >= 0) else 0
    return rec[fid, F_HOPS]


@njit_inline
def minimal_hop(rg, plo, nepk, phi, phase_classes, prm_seed, ports, dist, rec, rec_c, fid):
    """(port, class) of a hop towards the packet's current target (:func:`target_of`):
    a random minimal next hop (:func:`min_port`), or the destination's endpoint port."""
    target, phase = target_of(rg, rec, rec_c, fid)
    if target == rg:
        return eject_port(rg, plo, ports.ep_first, rec, fid), 0
    P = min_port(rg, target, plo + nepk, phi, ports.out_nbr, dist, prm_seed, rec[fid, F_SRC],
                 rec[fid, F_SEQ], rec[fid, F_HOPS])
    return P, hop_class(phase_classes, phase, rec, rec_c, fid)


@njit_inline
def port_backlog(op, prm, ports, crd, t, rtt):
    """Flits on output port ``op`` beyond what its link holds in flight at full rate: the
    occupancy of :func:`port_queue` minus the port's credit round trip ``rtt`` (cycles),
    at least 0.  A flit's credit cannot be back before one round trip, so at any load up
    to one flit per cycle that many credits are outstanding without any queue; only the
    excess is evidence of a queue at this router or downstream.  A VC of at most ``rtt``
    flits cannot hold a round trip's worth, so the allowance is at most one VC's capacity
    less one flit (a full VC, i.e. a sender waiting for credits, reads as a backlog)."""
    cap = ports.cr_cap[op]
    q = port_queue(op, prm, ports, crd, t) - (rtt if rtt < cap else cap - 1)
    return q if q > 0 else 0


@njit_inline
def group_port(rg, target, net_lo, net_hi, out_nbr, r_group, g_entry):
    """Next hop towards ``target`` along a group hierarchy (Dragonfly-minimal, Kim et al.):
    to the target's group over the direct global link between the groups (a local hop
    to that link's router first), then a local hop to the target; -1 if no port leads
    there.  ``g_entry[g_to, g_from]``: the router of ``g_to`` linked to ``g_from``."""
    gc = r_group[rg]
    gt = r_group[target]
    if gc == gt:
        nxt = target
    else:
        gw = g_entry[gc, gt]
        nxt = g_entry[gt, gc] if rg == gw else gw
    for P in range(net_lo, net_hi):
        if out_nbr[P] == nxt:
            return P
    return -1


@njit_inline
def group_hops(a, b, r_group, g_entry):
    """Hops of the path :func:`group_port` takes from router ``a`` to router ``b``."""
    if a == b:
        return 0
    ga = r_group[a]
    gb = r_group[b]
    if ga == gb:
        return 1
    return (1 if a != g_entry[ga, gb] else 0) + 1 + (1 if g_entry[gb, ga] != b else 0)
