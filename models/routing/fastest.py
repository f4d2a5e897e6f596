"""Fastest (lowest-latency) and nearest (fewest-hop) routing (002 Sec. II-E).

``nearest`` is minimal routing under the name 002 gives it (NR).  ``fastest``
(FR) routes along lowest-latency paths, where a hop costs the router
pipeline (routing + VC + switch allocation + switch traversal, in cycles)
plus the link's latency -- Dijkstra on switch and cable delay as 002 computes
it; with the default layout the link latency comes from the cable length.
Where several lowest-latency next hops exist one is drawn uniformly (keyed
by the packet id and hop).  VC classes are hop-index classes; a fastest path
can have more hops than the hop diameter, and its longest one (over all pairs
of routers with endpoints, over every tie) sets the VCs needed.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from models.core.errors import ParameterError
from models.core.jit import njit, njit_kernel
from models.core.registry import ROUTINGS
from models.routing import RoutingPlan
from models.routing.minimal import minimal
from models.routing.paths import eject_port, target_of
from models.core.params import PR_CHX, PR_RD, PR_SAD, PR_SEED, PR_VAD
from models.core.record import F_HOPS, F_SEQ, F_SRC, OK
from models.core.routing import RoutingKernel, register_kernel
from models.core.rng import P_ROUTE, below

MAX_ROUTERS = 20000
UNREACHABLE = np.iinfo(np.int32).max


def weighted_distances(topo, link_weight) -> np.ndarray:
    """All-pairs lowest path weight (int32, R x R) for integer per-link weights."""
    w = np.asarray(link_weight, dtype=np.int64)
    u, v = topo.links[:, 0], topo.links[:, 1]
    R = topo.n_routers
    from scipy.sparse import csr_matrix   # scipy loaded only when used
    from scipy.sparse.csgraph import dijkstra
    g = csr_matrix((np.concatenate([w, w]).astype(np.float64), (np.concatenate([u, v]),
                    np.concatenate([v, u]))), shape=(R, R))
    d = dijkstra(g, directed=True)
    out = np.where(np.isfinite(d), d, UNREACHABLE).astype(np.int64)
    return out.astype(np.int32)


@njit
def _longest_hops(off, nbr, pw, W, targets, sources_mask):
    """Most hops of any lowest-weight path from a source router to a target."""
    R = off.shape[0] - 1
    H = np.zeros(R, dtype=np.int64)
    best = 0
    for ti in range(targets.shape[0]):
        t = targets[ti]
        order = np.argsort(W[t])          # W symmetric: W[t, r] = W[r, t]
        for k in range(R):
            r = order[k]
            H[r] = 0
            if r == t or W[t, r] == 2147483647:
                continue
            h = 0
            for i in range(off[r], off[r + 1]):
                n = nbr[i]
                if pw[i] + W[t, n] == W[t, r] and H[n] + 1 > h:
                    h = H[n] + 1
            H[r] = h
            if sources_mask[r] != 0 and h > best:
                best = h
    return best


def fastest(topo, dist):
    """Plan for fastest routing; completed by :func:`finalize` with the link weights."""
    if topo.n_routers > MAX_ROUTERS:
        raise ParameterError(f"routing.algorithm: 'fastest' keeps an R x R latency table; "
                             f"{topo.n_routers} routers is above {MAX_ROUTERS}")
    base = minimal(topo, dist, "hop")

    def finalize(link_weight):
        W = weighted_distances(topo, link_weight)
        ep = np.nonzero(topo.serving)[0]
        pw = np.asarray(link_weight, dtype=np.int64)[topo.port_link]
        mask = topo.serving.astype(np.int8)
        longest = int(_longest_hops(topo.port_offsets.astype(np.int64),
                                    topo.port_neighbor.astype(np.int64), pw, W,
                                    ep.astype(np.int64), mask))
        return RoutingPlan(kernel="fastest", max_hops=longest, vcs_needed=max(longest, 1),
                           scheme="hop", tables={"wdist": W},
                           vc_scheme="hop-index: VC class = number of router-to-router hops "
                                     "taken (lowest-latency paths)")

    return RoutingPlan(kernel="fastest", max_hops=base.max_hops, vcs_needed=base.vcs_needed,
                       scheme="hop", vc_scheme=base.vc_scheme, finalize=finalize)


# ------------------------------------------------------------------------------ kernel
WeightTables = namedtuple("WeightTables", ["wdist"])
"""Lowest path weight (router pipeline + link latency, cycles) per (router, router)."""


@njit_kernel
def fastest_hop(site, eng, ctx, ap, fid):
    """A next hop on a lowest-latency path (a random one among ties); class = hops taken."""
    rg, plo, nepk, phi = site.rg, site.plo, site.nepk, site.phi
    prm, ports, rec, rec_c = eng.prm, eng.ports, eng.rec, eng.rec_c
    target, phase = target_of(rg, rec, rec_c, fid)
    if target == rg:
        return OK, eject_port(rg, plo, ports.ep_first, rec, fid), 0
    wdist, out_nbr, out_lat = ctx.wdist, ports.out_nbr, ports.out_lat
    pipe = prm[PR_RD] + prm[PR_VAD] + prm[PR_SAD] + prm[PR_CHX]  # a hop apart from its link
    hops = rec[fid, F_HOPS]
    w = np.int64(wdist[target, rg])
    cnt = 0
    for Q in range(plo + nepk, phi):
        if pipe + out_lat[Q] + np.int64(wdist[target, out_nbr[Q]]) == w:
            cnt += 1
    if cnt == 0:
        return OK, -1, hops
    j = below(cnt, prm[PR_SEED], rec[fid, F_SRC], rec[fid, F_SEQ], P_ROUTE + 64 * hops) \
        if cnt > 1 else 0
    for Q in range(plo + nepk, phi):
        if pipe + out_lat[Q] + np.int64(wdist[target, out_nbr[Q]]) == w:
            if j == 0:
                return OK, Q, hops
            j -= 1
    return OK, -1, hops


register_kernel("fastest", RoutingKernel(module=__name__, hop="fastest_hop", tables=WeightTables))

ROUTINGS.register("fastest", fastest, params=[],
                  summary="lowest-latency paths (router pipeline + link latency), 002's FR",
                  reference="002 Sec. II-E")
ROUTINGS.register("nearest", lambda topo, dist: minimal(topo, dist, "hop"), params=[],
                  summary="fewest-hop paths (002's NR; the same as min)",
                  reference="002 Sec. II-E")
