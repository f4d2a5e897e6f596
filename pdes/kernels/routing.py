"""Route computation kernels.

Routing has two parts, both called from
:func:`pdes.kernels.cycle.route_and_allocate_vc` (the router stage) when a
head flit reaches the front of its input VC at a router:

* :func:`source_decision` -- once per packet, at its first router: the
  algorithm may pick an intermediate router (``F_MID``; -1 = go minimally).
  ``ALG_VALIANT`` draws one at random (000 Sec. IV-B, 001 Sec. 3.2);
  ``ALG_UGAL_L`` compares the minimal path with ``n_indirect`` random
  Valiant paths by local output-queue occupancy (000 Sec. IV-C2, 001
  Sec. 3.3); ``ALG_UGAL_G`` compares them by the sum of output-queue
  occupancies along the whole path in a network-wide snapshot taken at a
  fixed epoch (000 Sec. IV-C1, the idealised global variant).
* :func:`compute_route` -- at every router: a minimal next hop towards the
  current target (the intermediate router until it is reached, then the
  destination) and the VC class of the hop.  ``ALG_MIN_ADAPTIVE`` takes the
  minimal next hop whose output port is least occupied (on a fat tree:
  adaptive up, the unique path down -- ANCA).

VC classes (``vc_scheme``): ``hop`` -- class = router-to-router hops taken so
far (000 Sec. IV-D); ``phase`` -- class 0 before the intermediate router, 1
after it (001 Sec. 3.4, for topologies whose minimal routes are deadlock-free
by themselves: MLFM, OFT, fat trees).

Every random choice is drawn from the counter-based generator keyed by the
packet id (source endpoint, sequence number), so it is the same whichever
rank routes the packet.  Queue occupancy of an output port is the number of
flits sent or queued on it whose credits have not come back, i.e.
``sum over VCs (vc_flits - credits)`` after absorbing the credits that have
arrived -- a function of the router's own state only.

Galaxyfly non-minimal adaptive routing (004 Sec. 4.2; ``ALG_NAR``, ``ALG_NAL``,
``ALG_NAG``, decided by :func:`galaxy_decision` at the source router): the
packet goes minimally unless the minimal output port holds more than
``Th_min`` flits and the first port towards one random non-minimal candidate
(an intermediate router, :func:`galaxy_mid`) holds fewer than ``Th_nonmin =
th_nonmin * Q_min``.  Their VC classes (``SCHEME_LSEQ``, :func:`galaxy_hop`)
follow a canonical sequence of local/global link positions (Kim et al.'s
Dragonfly rule generalised); ``SCHEME_LCOUNT`` is the literal "class = earlier
hops of the same link type", which the static check shows can deadlock.

Layered routing (003 Sec. 4.3, RUES; ``ALG_LAYERED``): the source picks a
layer (:func:`layer_of`); layer 0 is minimal routing, layer ``l >= 1`` reads
the next hop from the table ``lay_port[l - 1, router, destination router]``.
"""
import numpy as np

from models.jit import njit, njit_inline
from models.vcseq import seq_hop, seq_length
from pdes.kernels.rng import P_LAYER, P_MID, P_MID_ROUTER, P_ROUTE, below

ALG_MIN = 0
ALG_VALIANT = 1
ALG_UGAL_L = 2
ALG_UGAL_G = 3
ALG_MIN_ADAPTIVE = 4
ALG_FASTEST = 5
ALG_NAR = 6          # Galaxyfly NAR (004 Sec. 4.2)
ALG_NAL = 7          # Galaxyfly NAL
ALG_NAG = 8          # Galaxyfly NAG
ALG_LAYERED = 9      # layered multipath routing and RUES (003 Sec. 4.3)

KERNELS = {"min": ALG_MIN, "valiant": ALG_VALIANT, "ugal_l": ALG_UGAL_L, "ugal_g": ALG_UGAL_G,
           "min_adaptive": ALG_MIN_ADAPTIVE, "fastest": ALG_FASTEST, "nar": ALG_NAR,
           "nal": ALG_NAL, "nag": ALG_NAG, "layered": ALG_LAYERED}
"""Routing kernel names (used by models.routing plans) -> kernel ids."""

_UGAL = ("max_hops_cap", "n_indirect", "c")
_GALAXY = (("r_group", "grp_rtr", "grp_nb", "grp_cl"), ("max_hops_cap", "th_min", "th_nonmin", "lseq"))
KERNEL_INPUTS = {
    "min": ((), ()),
    "valiant": (("mid_cand",), ("max_hops_cap",)),
    "ugal_l": (("mid_cand",), _UGAL + ("length_weighted", "threshold")),
    "ugal_g": (("mid_cand",), _UGAL + ("epoch",)),
    "min_adaptive": ((), ()),
    "fastest": (("wdist",), ()),
    "nar": _GALAXY, "nal": _GALAXY, "nag": _GALAXY,
    "layered": (("lay_port",), ("layers", "layer_select")),
}
"""Kernel name -> (tables, kernel parameters) it reads: a plan gives exactly these."""
SCHEME_TABLES = {"hop": (), "phase": (), "dragonfly": ("r_group", "g_entry"), "sequence": (),
                 "count": ()}
"""VC scheme -> tables it reads (in addition to the kernel's)."""

SCHEME_HOP = 0
SCHEME_PHASE = 1
SCHEME_DRAGONFLY = 2
SCHEME_LSEQ = 3      # local/global link-sequence positions (F_AUX2 = last position, -1 = none)
SCHEME_LCOUNT = 4    # class = earlier hops of the same link type (F_AUX2 = global hops taken)
SCHEMES = {"hop": SCHEME_HOP, "phase": SCHEME_PHASE, "dragonfly": SCHEME_DRAGONFLY,
           "sequence": SCHEME_LSEQ, "count": SCHEME_LCOUNT}

UNREACHABLE = 255
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
    With a group table (``g_entry``, Dragonfly, Kim et al.): a random
    intermediate group other than the source's and destination's, entered at
    the router that holds its global link from the source group.
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
def port_queue(op, nv, vccap, cred, cr_t, cr_head, cr_cnt, t):
    """Flits sent or queued on output port ``op`` whose credits have not returned."""
    q = 0
    for v in range(nv):
        kk = op * nv + v
        n = cr_cnt[kk]
        if n > 0:
            h = cr_head[kk]
            while n > 0 and cr_t[h * cr_cnt.shape[0] + kk] <= t:
                cred[kk] += 1
                n -= 1
                h = h + 1 if h + 1 < vccap else 0
            cr_cnt[kk] = n
            cr_head[kk] = h if n > 0 else 0
        q += vccap - cred[kk]
    return q


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


@njit
def source_decision(alg, rg, dstr, src, seq, net_lo, net_hi, out_nbr, dist, seed, cand,
                    max_hops, n_ind, c_micro, length_w, thresh, nv, vccap, cred, cr_t, cr_head,
                    cr_cnt, t, g_off, g_nbr, g_chan, snap, r_group, g_entry):
    """Intermediate router of a packet at its first router (-1 = minimal route)."""
    if (alg != ALG_VALIANT and alg != ALG_UGAL_L and alg != ALG_UGAL_G) or dstr == rg:
        return -1
    if alg == ALG_VALIANT:
        return draw_mid(cand, rg, dstr, dist, max_hops, seed, src, seq, 0, r_group, g_entry)
    lm = np.int64(dist[dstr, rg])
    if alg == ALG_UGAL_L:
        pm = min_port(rg, dstr, net_lo, net_hi, out_nbr, dist, seed, src, seq, 0)
        qm = port_queue(pm, nv, vccap, cred, cr_t, cr_head, cr_cnt, t)
        if thresh > 0 and qm < thresh:
            return -1
        best = qm * lm * 1000000 if length_w != 0 else qm * 1000000
        mid = -1
        for j in range(n_ind):
            m = draw_mid(cand, rg, dstr, dist, max_hops, seed, src, seq, j, r_group, g_entry)
            if m < 0:
                continue
            pi = min_port(rg, m, net_lo, net_hi, out_nbr, dist, seed, src, seq, 0)
            qi = port_queue(pi, nv, vccap, cred, cr_t, cr_head, cr_cnt, t)
            li = np.int64(dist[m, rg]) + np.int64(dist[dstr, m])
            cost = c_micro * qi * li if length_w != 0 else c_micro * qi
            if cost < best:
                best = cost
                mid = m
        return mid
    # ALG_UGAL_G: whole-path occupancy in the epoch snapshot
    best = path_cost(rg, dstr, g_off, g_nbr, g_chan, dist, snap) * 1000000
    mid = -1
    for j in range(n_ind):
        m = draw_mid(cand, rg, dstr, dist, max_hops, seed, src, seq, j, r_group, g_entry)
        if m < 0:
            continue
        cost = c_micro * (path_cost(rg, m, g_off, g_nbr, g_chan, dist, snap)
                          + path_cost(m, dstr, g_off, g_nbr, g_chan, dist, snap))
        if cost < best:
            best = cost
            mid = m
    return mid


@njit_inline
def min_port_adaptive(rg, target, net_lo, net_hi, out_nbr, dist, seed, src, seq, hop, nv, vccap,
                      cred, cr_t, cr_head, cr_cnt, t):
    """The minimal next-hop port with the least occupied output (random among ties)."""
    d = np.int64(dist[target, rg])
    if d == UNREACHABLE or d == 0:
        return -1
    best = -1
    bq = 1 << 60
    cnt = 0
    for P in range(net_lo, net_hi):
        if np.int64(dist[target, out_nbr[P]]) == d - 1:
            q = port_queue(P, nv, vccap, cred, cr_t, cr_head, cr_cnt, t)
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
            if port_queue(P, nv, vccap, cred, cr_t, cr_head, cr_cnt, t) == bq:
                if j == 0:
                    return P
                j -= 1
    return best


@njit_inline
def fastest_port(rg, target, net_lo, net_hi, out_nbr, out_lat, pipe, wdist, seed, src, seq, hop):
    """A next hop on a lowest-latency path (hop cost = router pipeline + link latency)."""
    w = np.int64(wdist[target, rg])
    cnt = 0
    for P in range(net_lo, net_hi):
        if pipe + out_lat[P] + np.int64(wdist[target, out_nbr[P]]) == w:
            cnt += 1
    if cnt == 0:
        return -1
    j = below(cnt, seed, src, seq, P_ROUTE + 64 * hop) if cnt > 1 else 0
    for P in range(net_lo, net_hi):
        if pipe + out_lat[P] + np.int64(wdist[target, out_nbr[P]]) == w:
            if j == 0:
                return P
            j -= 1
    return -1


@njit
def dragonfly_port(rg, target, net_lo, net_hi, out_nbr, r_group, g_entry):
    """Next hop of Dragonfly-minimal routing (Kim et al.): to the target's group over the
    direct global link between the groups (local hop to that link's router first), then
    a local hop to the target."""
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


@njit
def dragonfly_position(lastpos, link_type):
    """Next place in the canonical l-g-l-g-l sequence: local hops take even, global odd ones."""
    seqpos = lastpos + 1
    if (seqpos & 1) != link_type:
        seqpos += 1
    return seqpos


@njit
def compute_route(alg, rg, dstr, dst, src, seq, hops, mid, phase, scheme, port_lo, n_ep_ports,
                  net_hi, ep_first, out_nbr, dist, seed, nv, vccap, cred, cr_t, cr_head, cr_cnt,
                  t, out_lat, pipe, wdist):
    """Output port, VC class and new phase for a head flit at router ``rg``.

    The packet ``(src, seq)`` heads to endpoint ``dst`` on router ``dstr``,
    via router ``mid`` while ``phase == 0`` (``mid = -1``: minimal), after
    ``hops`` router-to-router hops.  Ports: endpoint ports ``port_lo ..
    port_lo + n_ep_ports - 1``, network ports up to ``net_hi``.  Returns
    ``(port, class, phase, target)``; ``port = -1`` means no route.  With
    ``SCHEME_DRAGONFLY`` the kernel replaces port and class by
    :func:`dragonfly_port` towards ``target`` and :func:`dragonfly_position`.
    """
    if phase == 0 and mid >= 0 and rg == mid:
        phase = 1
    target = mid if (phase == 0 and mid >= 0) else dstr
    if target == rg:
        return port_lo + (dst - ep_first[rg]), 0, phase, target
    if alg == ALG_FASTEST:
        P = fastest_port(rg, target, port_lo + n_ep_ports, net_hi, out_nbr, out_lat, pipe, wdist,
                         seed, src, seq, hops)
    elif alg == ALG_MIN_ADAPTIVE:
        P = min_port_adaptive(rg, target, port_lo + n_ep_ports, net_hi, out_nbr, dist, seed, src,
                              seq, hops, nv, vccap, cred, cr_t, cr_head, cr_cnt, t)
    else:
        P = min_port(rg, target, port_lo + n_ep_ports, net_hi, out_nbr, dist, seed, src, seq, hops)
    if scheme == SCHEME_PHASE:
        return P, (1 if (phase == 1 and mid >= 0) else 0), phase, target
    return P, hops, phase, target


# ----------------------------------------------------------------- Galaxyfly NAR / NAL / NAG
GRP_PAD = 2147483647   # padding of the sorted rows of grp_nb


@njit_inline
def group_size(grp_rtr, g):
    """Routers of group ``g`` (rows of ``grp_rtr`` are padded with -1)."""
    n = 0
    while n < grp_rtr.shape[1] and grp_rtr[g, n] >= 0:
        n += 1
    return n


@njit_inline
def groups_adjacent(grp_nb, a, b):
    """True if group ``b`` is a neighbour of group ``a`` (binary search in a sorted row)."""
    lo = 0
    hi = grp_nb.shape[1]
    while lo < hi:
        mid = (lo + hi) >> 1
        v = grp_nb[a, mid]
        if v == b:
            return True
        if v < b:
            lo = mid + 1
        else:
            hi = mid
    return False


@njit_inline
def galaxy_mid(alg, rg, dstr, dist, cap, seed, src, seq, r_group, grp_rtr, grp_nb, grp_cl):
    """A random non-minimal candidate (intermediate router) for NAR/NAL/NAG, -1 if none.

    * NAL: another router of the source supernode (one local misroute);
    * NAG: a random router of a random supernode other than the source's and
      the destination's;
    * NAR: only when the source and destination supernodes are adjacent and in
      the same cluster: a random router of a random common neighbour supernode.

    A candidate whose path (minimal to it, then minimal on) would be longer
    than ``cap`` hops is redrawn, up to ``MAX_TRIES`` times (keys: packet id,
    ``P_MID + try`` for the group or router, ``P_MID_ROUTER + try`` for the
    router inside a drawn group).
    """
    gs = r_group[rg]
    gd = r_group[dstr]
    n_common = 0
    if alg == ALG_NAR:
        if gs == gd or grp_cl[gs] != grp_cl[gd] or not groups_adjacent(grp_nb, gs, gd):
            return -1
        for i in range(grp_nb.shape[1]):
            x = grp_nb[gs, i]
            if x == GRP_PAD:
                break
            if groups_adjacent(grp_nb, gd, x):
                n_common += 1
        if n_common == 0:
            return -1
    G = grp_rtr.shape[0]
    for k in range(MAX_TRIES):
        if alg == ALG_NAL:
            m = grp_rtr[gs, below(group_size(grp_rtr, gs), seed, src, seq, P_MID + k)]
            if m == rg or m == dstr:
                continue
        else:
            gm = -1
            if alg == ALG_NAG:
                gm = below(G, seed, src, seq, P_MID + k)
                if gm == gs or gm == gd:
                    continue
            else:
                j = below(n_common, seed, src, seq, P_MID + k)
                for i in range(grp_nb.shape[1]):
                    x = grp_nb[gs, i]
                    if x == GRP_PAD:
                        break
                    if groups_adjacent(grp_nb, gd, x):
                        if j == 0:
                            gm = x
                            break
                        j -= 1
            m = grp_rtr[gm, below(group_size(grp_rtr, gm), seed, src, seq, P_MID_ROUTER + k)]
        if np.int64(dist[m, rg]) + np.int64(dist[dstr, m]) > cap:
            continue
        return m
    return -1


@njit
def galaxy_decision(alg, rg, dstr, src, seq, net_lo, net_hi, out_nbr, dist, seed, cap, th_min,
                    th_nonmin_micro, nv, vccap, cred, cr_t, cr_head, cr_cnt, t, r_group, grp_rtr,
                    grp_nb, grp_cl):
    """Intermediate router of a NAR/NAL/NAG packet at its source router (-1 = minimal).

    004 Sec. 4.2: non-minimal iff ``Q_min > Th_min`` and ``Q_nonmin <
    Th_nonmin``, with ``Q_min`` the occupancy of the minimal output port (the
    one the packet would take), ``Q_nonmin`` that of the first port towards
    the candidate, ``Th_min = th_min`` flits (the engine passes ``floor(0.8 *
    buffer)``) and ``Th_nonmin = th_nonmin * Q_min`` (``th_nonmin`` in
    millionths).  The candidate is drawn only when the minimal port is busy.
    """
    if dstr == rg:
        return -1
    pm = min_port(rg, dstr, net_lo, net_hi, out_nbr, dist, seed, src, seq, 0)
    if pm < 0:
        return -1
    qm = port_queue(pm, nv, vccap, cred, cr_t, cr_head, cr_cnt, t)
    if qm <= th_min:
        return -1
    m = galaxy_mid(alg, rg, dstr, dist, cap, seed, src, seq, r_group, grp_rtr, grp_nb, grp_cl)
    if m < 0:
        return -1
    pi = min_port(rg, m, net_lo, net_hi, out_nbr, dist, seed, src, seq, 0)
    if pi < 0:
        return -1
    qi = port_queue(pi, nv, vccap, cred, cr_t, cr_head, cr_cnt, t)
    if qi * 1000000 < th_nonmin_micro * qm:
        return m
    return -1


@njit
def galaxy_hop(scheme, lseq, aux2, hops, ltype):
    """(VC class, new F_AUX2) of a hop on a link of type ``ltype`` (0 local, 1 global):
    :func:`models.vcseq.seq_hop` with ``SCHEME_LSEQ`` (the canonical sequence ``lseq``,
    ``aux2`` = last position taken, -1 = none) or ``SCHEME_LCOUNT`` (class = hops of the
    same type taken so far, ``aux2`` = global hops)."""
    return seq_hop(scheme == SCHEME_LSEQ, lseq, aux2, hops, ltype)


@njit
def lseq_position(lseq, ltype, cls):
    """Position of the ``cls``-th link of type ``ltype`` in the sequence (length if none)."""
    n = seq_length(lseq)
    c = 0
    for p in range(n):
        if ((lseq >> p) & 1) == ltype:
            if c == cls:
                return p
            c += 1
    return n


# ----------------------------------------------------------------- layered routing / RUES
@njit
def layer_of(select, n_layers, seed, src, seq, rg, dstr, lay_port):
    """Layer of a packet, chosen at its source router.

    ``select = 0``: uniform, from the counter-based generator keyed by the
    packet id; ``1``: round robin, the k-th packet of a source endpoint uses
    layer ``k mod n_layers``.  A layer in which the destination router cannot
    be reached from here (RUES) falls back to layer 0 (minimal routing).
    """
    if n_layers <= 1:
        return 0
    if select == 0:
        lay = below(n_layers, seed, src, seq, P_LAYER)
    else:
        lay = seq % n_layers
    if lay > 0 and lay_port[lay - 1, rg, dstr] < 0:
        return 0
    return lay
