"""DFSSSP: balanced single-source shortest paths on virtual lanes that break every
channel dependency cycle (Domke, Hoefler and Nagel 2011; SSSP: Hoefler, Schneider and
Lumsdaine 2009).

**SSSP** (the paths).  Every directed channel carries a weight, initially ``P^2`` where
``P`` is the number of endpoints that take part in traffic (OpenSM's dfsssp sets this
initial weight "to force shortest paths").  The destination routers are taken one after
another, those with more endpoints first, then by router id.  For each destination
router ``d`` a Dijkstra search over the reversed channels builds the tree of
least-weight paths from every router to ``d`` (it settles the unsettled router of least
distance, the lowest router id among equals, and relaxes its ports in increasing
neighbour id, keeping a predecessor unless a path is strictly lighter); the next hop of
router ``u`` towards ``d`` is its parent in that tree.  Then every channel of the tree
gets heavier by the number of routes crossing it: (endpoints of the routers whose path
to ``d`` uses it) x (endpoints of ``d``), so later trees avoid the loaded channels.
Paths are loop-free and reach their destination.  They are least-weight paths; a path
with one hop more starts ``P^2`` heavier, so they are fewest-hop paths unless the loads
along a fewest-hop path add up to more than ``P^2`` (they are on every topology the
tests build).  Each tree takes, among its candidates, the path of least summed load, the
greedy step that lowers the sum of squared channel loads; it does not bound the most
loaded channel (on SF q=7 the all-pairs maximum is 756 routes against 684 for
``table_min``'s first-found paths, with a smaller spread).

**DF** (the lanes).  Every ordered pair of routers with endpoints gets a virtual lane,
decided at its source router and kept on every hop (the VC class of the packet).  All
pairs start in lane 0.  A lane's channel dependency graph has an edge ``c1 -> c2`` for
every two consecutive channels of a path in the lane, weighted by the endpoint pairs
``(s, d)`` whose path makes that turn.  A depth-first search of the lane's graph finds a
cycle; its *weakest* edge (fewest endpoint pairs, the first on the cycle among equals)
is broken by moving every pair of the lane whose path makes that turn to the next lane
(the heuristic of Domke et al. and of OpenSM's dfsssp).  The search resumes where it
was (finished channels stay finished: removing edges closes no cycle) until the lane's
graph is acyclic, then the next lane is processed.  The number of lanes used is
reported (``RoutingPlan.info`` and ``note``: the start report and ``pdes check``) and
is the number of VC classes the routing needs: ``router.num_vcs = 0`` takes it, a
smaller ``num_vcs`` is refused naming it.  OpenSM afterwards spreads the paths over the
lanes it does not need ("balancing"); here each class owns ``num_vcs // lanes`` VCs
instead, which the engine's VC allocation shares.

Differences from OpenSM's dfsssp: OpenSM runs one Dijkstra search per destination
*port* (LID); pdes's tables are per destination router, so the endpoints of a router
share one tree and its weight update counts them together.  Lanes are per (source
router, destination router), not per (source LID, destination LID).

Cost: the trees are ``R`` Dijkstra searches of ``O(C log C)`` (``C`` directed channels)
plus ``O(R)`` per tree for the weights; the lanes walk every path once (``O(R^2 x
hops)``) and each lane's search is ``O(C + turns)`` plus the paths it moves.  Measured
(Numba, one core, compiled): SF q=5 (50 routers) 1 ms, SF q=7 (98) 5 ms, SF q=13 (338)
0.07 s (0.02 s trees, 0.05 s lanes); all three need 2 lanes.  Memory: the next-hop table
(int16) and the lane table (int8), ``3 R^2`` bytes on every rank, refused above 2 GiB;
the construction holds about 48 bytes per turn of every path (``R^2 x (hops - 1)``
turns), refused above the same limit.

Routers that take no part in traffic (no endpoints, failed, cut off) are transit only:
they get next hops but no pair starts or ends there.  On a degraded network
(:mod:`models.faults`) the search runs on the surviving links.
"""
from __future__ import annotations

import time
from collections import namedtuple

import numpy as np

from models.core.errors import ParameterError
from models.core.jit import njit, njit_kernel
from models.core.record import F_AUX2, F_DSTR, NF_HOT, OK
from models.core.registry import ROUTINGS
from models.core.routing import RoutingKernel, register_kernel
from models.routing import RoutingPlan
from models.routing.paths import eject_port
from models.routing.table_min import table_turns

MEMORY_LIMIT = 2 * 1024 ** 3      # bytes of the tables (3 R^2) and of the construction's turns
MAX_LANES = 127                   # the lane table is int8


# ------------------------------------------------------------------------- SSSP trees
@njit
def _heap_push(hd, hv, n, d, v):
    """Push ``(d, v)`` on the binary min-heap ``(hd, hv)[:n]`` (lexicographic); new size."""
    i = n
    hd[i] = d
    hv[i] = v
    while i > 0:
        p = (i - 1) // 2
        if hd[p] < hd[i] or (hd[p] == hd[i] and hv[p] <= hv[i]):
            break
        hd[p], hd[i] = hd[i], hd[p]
        hv[p], hv[i] = hv[i], hv[p]
        i = p
    return n + 1


@njit
def _heap_pop(hd, hv, n):
    """``(d, v, new size)``: the least entry of the heap ``(hd, hv)[:n]`` (``n >= 1``)."""
    d0, v0 = hd[0], hv[0]
    n -= 1
    hd[0] = hd[n]
    hv[0] = hv[n]
    i = 0
    while True:
        a = 2 * i + 1
        if a >= n:
            break
        b = a + 1
        c = a
        if b < n and (hd[b] < hd[a] or (hd[b] == hd[a] and hv[b] < hv[a])):
            c = b
        if hd[i] < hd[c] or (hd[i] == hd[c] and hv[i] <= hv[c]):
            break
        hd[i], hd[c] = hd[c], hd[i]
        hv[i], hv[c] = hv[c], hv[i]
        i = c
    return d0, v0, n


@njit
def _sssp(off, nbr, chan, chan_port, ep, dests, base, T, H):
    """Fill ``T[u, d]`` (network port index of ``u`` towards ``d``, -1 = none) and ``H[u, d]``
    (hops, -1 = unreachable) for every destination router ``d`` of ``dests``, in that order,
    updating the channel weights after each tree.  Returns the final weights."""
    R = off.shape[0] - 1
    C = chan.shape[0]
    W = np.full(C, base, np.int64)
    big = np.int64(1) << np.int64(62)
    dist = np.empty(R, np.int64)
    up = np.empty(R, np.int64)          # channel u -> parent of u, -1 = none
    done = np.empty(R, np.bool_)
    order = np.empty(R, np.int64)
    sub = np.empty(R, np.int64)
    hd = np.empty(C + R + 1, np.int64)
    hv = np.empty(C + R + 1, np.int64)
    for di in range(dests.shape[0]):
        d = dests[di]
        dist[:] = big
        up[:] = -1
        done[:] = False
        dist[d] = 0
        n = _heap_push(hd, hv, 0, 0, d)
        m = 0
        while n > 0:
            du, u, n = _heap_pop(hd, hv, n)
            if done[u] or du != dist[u]:
                continue
            done[u] = True
            order[m] = u
            m += 1
            for j in range(off[u], off[u + 1]):
                v = nbr[j]
                c = chan[j] ^ 1                  # v -> u, the channel the route takes
                nd = du + W[c]
                if nd < dist[v]:
                    dist[v] = nd
                    up[v] = c
                    n = _heap_push(hd, hv, n, nd, v)
        T[:, d] = -1
        H[:, d] = -1
        H[d, d] = 0
        for i in range(1, m):                    # parents are settled first
            v = order[i]
            p = chan_port[up[v]]
            T[v, d] = p - off[v]
            H[v, d] = H[nbr[p], d] + 1
        for i in range(m):
            sub[order[i]] = ep[order[i]]
        for i in range(m - 1, 0, -1):            # children before parents
            v = order[i]
            c = up[v]
            W[c] += sub[v] * ep[d]
            sub[nbr[chan_port[c]]] += sub[v]
    return W


# ------------------------------------------------------------------------- paths and turns
@njit
def _count_turns(H, pairs):
    """Turns (two consecutive channels) of every pair's path, and their offsets."""
    n = pairs.shape[0]
    pt_off = np.zeros(n + 1, np.int64)
    for p in range(n):
        h = np.int64(H[pairs[p, 0], pairs[p, 1]])
        pt_off[p + 1] = pt_off[p] + (h - 1 if h > 1 else 0)
    return pt_off


@njit
def _turn_keys(off, nbr, chan, T, pairs, pt_off, n_chan):
    """``c1 * n_chan + c2`` of every turn of every pair's path (pair-major, in path order)."""
    keys = np.empty(pt_off[-1], np.int64)
    for p in range(pairs.shape[0]):
        u = pairs[p, 0]
        d = pairs[p, 1]
        k = pt_off[p]
        last = np.int64(-1)
        while u != d:
            j = off[u] + T[u, d]
            c = chan[j]
            if last >= 0:
                keys[k] = last * n_chan + c
                k += 1
            last = c
            u = nbr[j]
    return keys


@njit
def _move(p, lane_new, lane, cnt, pw, pt_off, pt):
    """Move pair ``p`` to ``lane_new`` and take its turns out of the current lane's counts."""
    lane[p] = lane_new
    for i in range(pt_off[p], pt_off[p + 1]):
        cnt[pt[i]] -= pw[p]


@njit
def _lanes(n_chan, toff, tdst, pt_off, pt, it_off, it_pairs, pw, lane, max_lanes):
    """Assign every pair a lane so that each lane's channel dependency graph is acyclic
    (``lane`` starts all 0).  Returns the lanes used, or ``max_lanes + 1`` if more would
    be needed."""
    n_turns = tdst.shape[0]
    cnt = np.zeros(n_turns, np.int64)
    color = np.zeros(n_chan, np.int8)              # 0 new, 1 on the stack, 2 finished
    stack = np.empty(n_chan + 1, np.int64)
    sedge = np.empty(n_chan + 1, np.int64)         # turn from stack[i - 1] into stack[i]
    it = np.empty(n_chan + 1, np.int64)            # next turn of stack[i] to look at
    pos = np.full(n_chan, -1, np.int64)
    l = 0
    while True:
        cnt[:] = 0
        for p in range(pw.shape[0]):
            if lane[p] == l:
                for i in range(pt_off[p], pt_off[p + 1]):
                    cnt[pt[i]] += pw[p]
        color[:] = 0
        moved = False
        for root in range(n_chan):
            if color[root] != 0 or toff[root] == toff[root + 1]:
                continue
            top = 0
            stack[0] = root
            it[0] = toff[root]
            sedge[0] = -1
            color[root] = 1
            pos[root] = 0
            while top >= 0:
                u = stack[top]
                if it[top] == toff[u + 1]:
                    color[u] = 2
                    pos[u] = -1
                    top -= 1
                    continue
                t = it[top]
                it[top] += 1
                if cnt[t] <= 0:
                    continue
                v = tdst[t]
                if color[v] == 0:
                    top += 1
                    stack[top] = v
                    sedge[top] = t
                    it[top] = toff[v]
                    color[v] = 1
                    pos[v] = top
                elif color[v] == 1:                  # a cycle: stack[pos[v]] .. u -> v
                    weak = -1                        # the first lightest edge of the cycle
                    at = -1
                    for i in range(pos[v] + 1, top + 1):
                        if weak < 0 or cnt[sedge[i]] < cnt[weak]:
                            weak = sedge[i]
                            at = i
                    if weak < 0 or cnt[t] < cnt[weak]:
                        weak = t
                        at = top + 1                 # the back edge
                    for i in range(it_off[weak], it_off[weak + 1]):
                        p = it_pairs[i]
                        if lane[p] == l:
                            if l + 1 >= max_lanes:
                                return max_lanes + 1
                            _move(p, l + 1, lane, cnt, pw, pt_off, pt)
                            moved = True
                    if at <= top:                    # a stack edge: resume below it
                        for i in range(at, top + 1):
                            color[stack[i]] = 0
                            pos[stack[i]] = -1
                        top = at - 1
        if not moved:
            return l + 1
        l += 1


def build(topo, max_lanes: int = MAX_LANES):
    """``(T, lane, H, info)``: DFSSSP's next-hop table (int16 network port index per (router,
    destination router), -1 = none), lane table (int8 per (source router, destination
    router)), hops (int16) and statistics."""
    R = topo.n_routers
    if 3 * R * R > MEMORY_LIMIT:
        raise ParameterError(f"routing.algorithm: 'dfsssp' needs a {R} x {R} next-hop table "
                             f"and lane table of {3 * R * R / 1e9:.3g} GB on every rank, more "
                             f"than {MEMORY_LIMIT / 1e9:.3g} GB")
    if R and int(topo.degree.max()) >= 32767:
        raise ParameterError("routing.algorithm: a router degree above 32766 does not fit "
                             "dfsssp's int16 next-hop table")
    t0 = time.perf_counter()
    off = topo.port_offsets.astype(np.int64)
    nbr = topo.port_neighbor.astype(np.int64)
    chan = topo.port_out_channel.astype(np.int64)
    chan_port = topo.channel_port.astype(np.int64)
    ep = np.where(topo.serving, topo.endpoints, 0).astype(np.int64)
    P = int(ep.sum())
    serving = np.nonzero(ep > 0)[0]
    dests = serving[np.argsort(-ep[serving], kind="stable")]
    T = np.full((R, R), -1, dtype=np.int16)
    H = np.full((R, R), -1, dtype=np.int16)
    _sssp(off, nbr, chan, chan_port, ep, dests, np.int64(max(P, 1)) ** 2, T, H)
    t1 = time.perf_counter()

    s_idx, d_idx = np.meshgrid(serving, serving, indexing="ij")
    keep = s_idx != d_idx
    pairs = np.stack([s_idx[keep], d_idx[keep]], axis=1).astype(np.int64)
    if (H[pairs[:, 0], pairs[:, 1]] < 0).any():
        raise ParameterError("topology: the network is disconnected (some endpoints cannot "
                             "reach others)")
    pt_off = _count_turns(H, pairs)
    n_turn_entries = int(pt_off[-1])
    if 48 * n_turn_entries > MEMORY_LIMIT:
        raise ParameterError(f"routing.algorithm: 'dfsssp' needs {48 * n_turn_entries / 1e9:.3g} "
                             f"GB to assign its virtual lanes ({n_turn_entries} turns of paths), "
                             f"more than {MEMORY_LIMIT / 1e9:.3g} GB")
    n_chan = 2 * topo.n_links
    keys = _turn_keys(off, nbr, chan, T, pairs, pt_off, n_chan)
    ukeys, pt = np.unique(keys, return_inverse=True)
    pt = pt.astype(np.int64).ravel()
    toff = np.searchsorted(ukeys // n_chan, np.arange(n_chan + 1)).astype(np.int64)
    tdst = (ukeys % n_chan).astype(np.int64)
    owner = np.repeat(np.arange(pairs.shape[0], dtype=np.int64), np.diff(pt_off))
    by_turn = np.argsort(pt, kind="stable")
    it_pairs = owner[by_turn]
    it_off = np.searchsorted(pt[by_turn], np.arange(ukeys.size + 1)).astype(np.int64)
    pw = ep[pairs[:, 0]] * ep[pairs[:, 1]]
    lane_of = np.zeros(pairs.shape[0], dtype=np.int64)
    lanes = int(_lanes(n_chan, toff, tdst, pt_off, pt, it_off, it_pairs, pw, lane_of,
                       max_lanes))
    if lanes > max_lanes:
        raise ParameterError(f"routing.algorithm: 'dfsssp' needs more than {max_lanes} virtual "
                             "lanes on this topology")
    lane = np.zeros((R, R), dtype=np.int8)
    lane[pairs[:, 0], pairs[:, 1]] = lane_of
    t2 = time.perf_counter()
    hops = H[pairs[:, 0], pairs[:, 1]]
    info = {"lanes": lanes,
            "pairs_per_lane": np.bincount(lane_of, minlength=lanes).tolist(),
            "endpoint_pairs_per_lane": np.bincount(lane_of, weights=pw, minlength=lanes)
                                         .astype(np.int64).tolist(),
            "longest_path": int(hops.max()) if hops.size else 0,
            "dependencies": int(ukeys.size),
            "paths_s": t1 - t0, "lanes_s": t2 - t1, "construction_s": t2 - t0}
    return T, lane, H, info


def channel_routes(topo, T) -> np.ndarray:
    """Endpoint routes (source endpoint, destination endpoint) over every directed channel
    when every pair of serving routers uses the next-hop table ``T`` (the all-pairs load of
    a table; ``table_min``'s table has the same format)."""
    off = topo.port_offsets.astype(np.int64)
    nbr = topo.port_neighbor.astype(np.int64)
    chan = topo.port_out_channel.astype(np.int64)
    ep = np.where(topo.serving, topo.endpoints, 0).astype(np.int64)
    load = np.zeros(2 * topo.n_links, dtype=np.int64)
    srv = np.nonzero(ep > 0)[0]
    for d in srv:
        cur = srv[srv != d]
        w = ep[cur] * ep[d]
        while cur.size:
            j = off[cur] + T[cur, d].astype(np.int64)
            np.add.at(load, chan[j], w)
            cur = nbr[j]
            go = cur != d
            cur, w = cur[go], w[go]
    return load


def lane_turns(topo, T, lane, lanes: int) -> np.ndarray:
    """Channel dependencies of every path between serving routers in its own lane: edges
    ``(c_in * lanes + k, c_out * lanes + k)`` for the turns of the paths of lane ``k``
    (the graph :func:`models.routing.cdg.check` searches for the ``lane`` scheme)."""
    off = topo.port_offsets.astype(np.int64)
    nbr = topo.port_neighbor.astype(np.int64)
    chan = topo.port_out_channel.astype(np.int64)
    srv = np.nonzero(topo.serving)[0]
    out = []
    for d in srv:
        cur = srv[srv != d]
        k = lane[cur, d].astype(np.int64)
        last = np.full(cur.size, -1, dtype=np.int64)
        while cur.size:
            j = off[cur] + T[cur, d].astype(np.int64)
            c = chan[j]
            had = last >= 0
            out.append(np.stack([last[had] * lanes + k[had], c[had] * lanes + k[had]], axis=1))
            cur, last = nbr[j], c
            go = cur != d
            cur, last, k = cur[go], last[go], k[go]
    if not out:
        return np.zeros((0, 2), dtype=np.int64)
    return np.unique(np.concatenate(out), axis=0)


def dfsssp(topo, dist):
    """Plan: DFSSSP's next-hop and lane tables; VC class = the path's lane."""
    T, lane, H, info = build(topo)
    lanes = info["lanes"]
    longest = info["longest_path"]
    per = ", ".join(str(n) for n in info["pairs_per_lane"])
    note = (f"routing: dfsssp needs {lanes} virtual lane{'s' if lanes > 1 else ''} "
            f"(router pairs per lane: {per}; longest path {longest} hops; tables built in "
            f"{info['construction_s']:.2f} s)")
    return RoutingPlan(kernel="dfsssp", max_hops=longest, vcs_needed=lanes, scheme="lane",
                       vc_scheme=f"DFSSSP virtual lanes: VC class = the lane of the path, fixed "
                                 f"at its source router ({lanes} lanes needed)",
                       tables={"next_port": T, "lane": lane}, info=info, note=note,
                       turns=lambda: table_turns(topo, T),
                       class_turns=lambda: lane_turns(topo, T, lane, lanes))


ROUTINGS.register("dfsssp", dfsssp, params=[],
                  summary="deadlock-free balanced shortest paths: one least-weight path per "
                          "(router, destination router), channel weights raised by the routes "
                          "on them; virtual lanes break every channel dependency cycle",
                  reference="Domke et al. 2011 (DFSSSP); Hoefler et al. 2009 (SSSP)")


# ------------------------------------------------------------------------------ kernel
DfssspTables = namedtuple("DfssspTables", ["next_port", "lane"])
"""int16 network port index per (router, destination router), -1 = none; int8 lane per
(source router, destination router)."""


@njit_kernel
def dfsssp_source(site, eng, ctx, ap, fid):
    """The packet's lane (``F_AUX2``): the lane of (its source router, its destination router)."""
    rec, rec_c = eng.rec, eng.rec_c
    rec_c[fid, F_AUX2 - NF_HOT] = ctx.lane[site.rg, rec[fid, F_DSTR]]


@njit_kernel
def dfsssp_hop(site, eng, ctx, ap, fid):
    """The table's port towards the destination router; class = the packet's lane."""
    rg, plo, nepk = site.rg, site.plo, site.nepk
    ports, rec, rec_c = eng.ports, eng.rec, eng.rec_c
    dr = rec[fid, F_DSTR]
    if dr == rg:
        return OK, eject_port(rg, plo, ports.ep_first, rec, fid), 0
    j = np.int64(ctx.next_port[rg, dr])
    if j < 0:
        return OK, -1, 0
    return OK, plo + nepk + j, rec_c[fid, F_AUX2 - NF_HOT]


register_kernel("dfsssp", RoutingKernel(module=__name__, hop="dfsssp_hop", source="dfsssp_source",
                                        tables=DfssspTables, schemes=("lane",)))
