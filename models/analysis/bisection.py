"""Bisection of the router graph: METIS estimate and the analytic values of 000 Sec. III-C.

Definitions (every link has bandwidth 1):

* A **bisection** splits the routers into two parts whose *endpoint* counts
  are as equal as the router granularity allows (routers are the vertices,
  their endpoint counts the vertex weights, so routers without endpoints --
  the upper levels of indirect networks -- may go to either side).
* ``links_cut`` (``C_min``) is the number of links between the parts of the
  best bisection found.  It is an *upper bound* on the true minimum bisection
  (the problem is NP-hard); METIS is run with several seeds and the smallest
  cut wins (000 Sec. III-C, 001 Sec. 2.3.2, 004 Sec. 3.2).
* ``beta = C_min / (N/2)`` (004 Sec. 3.2): 1 means full bisection bandwidth
  (every endpoint of one half can send at link rate to the other half), 0.5
  the "full global bandwidth" of a balanced network under uniform traffic.
  ``per_endpoint = C_min / (N/2)`` is the same number read as link bandwidth
  per endpoint of one half (001 Fig. 4 reports it as "b per node").

METIS balances the weights only up to its ``ufactor`` tolerance; the result
is then made exactly balanced by greedy single-router moves from the heavier
to the lighter side, each move chosen to increase the cut the least.
"""
from __future__ import annotations

import numpy as np

from models.core.errors import ParameterError

__all__ = ["bisection", "analytic_bisection", "cut_size"]


def cut_size(topo, part) -> int:
    """Number of links whose two routers are in different parts."""
    part = np.asarray(part)
    return int(np.count_nonzero(part[topo.links[:, 0]] != part[topo.links[:, 1]]))


def _metis_bisect(xadj, adjncy, vweights, seed: int, ufactor: int) -> np.ndarray:
    import pymetis
    opts = pymetis.Options(seed=int(seed), ufactor=int(ufactor), ncuts=1)
    kw = dict(vweights=vweights, options=opts, recursive=True)
    if hasattr(pymetis, "CSRAdjacency"):
        res = pymetis.part_graph(2, adjacency=pymetis.CSRAdjacency(xadj, adjncy), **kw)
    else:  # pragma: no cover - pymetis < 2025.2
        res = pymetis.part_graph(2, xadj=xadj, adjncy=adjncy, **kw)
    return np.asarray(res[1], dtype=np.int8)


def _rebalance(topo, part: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Move routers from the heavier part until no single move reduces the imbalance.

    A move of router ``v`` (weight ``w > 0``) from the heavy side reduces
    ``|W0 - W1|`` iff ``w < |W0 - W1|``; among those the one with the largest
    gain (links to the other side minus links to its own side) is moved.
    """
    part = part.copy()
    u = topo.links[:, 0]
    v = topo.links[:, 1]
    n = topo.n_routers
    total = int(weight.sum())
    while True:
        w0 = int(weight[part == 0].sum())
        diff = w0 - (total - w0)
        if diff == 0:
            return part
        heavy = 0 if diff > 0 else 1
        diff = abs(diff)
        cand = (part == heavy) & (weight > 0) & (weight < diff)
        if not cand.any():
            return part
        cross = (part[u] != part[v]).astype(np.int64)
        ext = np.bincount(u, weights=cross, minlength=n) + np.bincount(v, weights=cross, minlength=n)
        deg = np.asarray(topo.degree, dtype=np.int64)
        gain = 2 * ext - deg  # cut decreases by `gain` when the router switches sides
        idx = np.nonzero(cand)[0]
        # largest gain first; then the heavier router (fewer moves); then the lowest id
        best = idx[np.lexsort((idx, -weight[idx], -gain[idx]))[0]]
        part[best] = 1 - heavy


def bisection(topo, seeds: int = 16, ufactor: int = 1, seed: int = 0) -> dict:
    """Minimum balanced bisection of the router graph, estimated with METIS.

    Parameters
    ----------
    topo : Topology
    seeds : int
        Number of METIS runs (seeds ``seed .. seed+seeds-1``); the smallest cut wins
        (ties: the first seed).
    ufactor : int
        METIS load-imbalance tolerance in 1/1000 (1 = 0.1 %); the partition is made
        exactly balanced afterwards in any case.
    seed : int
        First METIS seed.

    Returns
    -------
    dict
        ``links_cut`` (C_min), ``endpoints`` (N), ``part_endpoints`` and
        ``part_routers`` (the two sides), ``per_endpoint`` and ``beta``
        (both ``C_min / (N/2)``), ``links`` (all links), ``cut_fraction``
        (``C_min / links``), ``seeds``, ``best_seed``, ``cuts`` (cut of every
        run) and ``analytic`` (:func:`analytic_bisection`, or ``None``).

    Raises
    ------
    ParameterError
        ``seeds < 1``, negative ``ufactor``, or fewer than two routers.

    References
    ----------
    000 Sec. III-C (METIS for SF and DLN); 001 Sec. 2.3.2, Fig. 4;
    004 Sec. 3.2 (``beta``), Table 3.
    """
    if isinstance(seeds, bool) or int(seeds) != seeds or seeds < 1:
        raise ParameterError(f"bisection.seeds: must be an integer >= 1, got {seeds!r}")
    if isinstance(ufactor, bool) or int(ufactor) != ufactor or ufactor < 1:
        raise ParameterError(f"bisection.ufactor: must be an integer >= 1, got {ufactor!r}")
    if topo.n_routers < 2:
        raise ParameterError(f"topology '{topo.name}': a bisection needs at least two routers")
    weight = np.asarray(topo.endpoints, dtype=np.int64)
    if weight.sum() == 0:
        weight = np.ones(topo.n_routers, dtype=np.int64)
    xadj = np.ascontiguousarray(topo.port_offsets, dtype=np.int64)
    adjncy = np.ascontiguousarray(topo.port_neighbor, dtype=np.int64)
    best = None
    cuts = []
    for s in range(int(seed), int(seed) + int(seeds)):
        part = _rebalance(topo, _metis_bisect(xadj, adjncy, weight, s, ufactor), weight)
        w0 = int(weight[part == 0].sum())
        imbalance = abs(2 * w0 - int(weight.sum()))
        c = cut_size(topo, part)
        cuts.append(c)
        key = (imbalance, c)
        if best is None or key < best[0]:
            best = (key, s, part)
    (imbalance, c), best_seed, part = best
    n = topo.n_endpoints
    half = n / 2 if n else topo.n_routers / 2
    w = np.asarray(topo.endpoints, dtype=np.int64)
    return {
        "links_cut": int(c),
        "endpoints": int(n),
        "part_endpoints": [int(w[part == 0].sum()), int(w[part == 1].sum())],
        "part_routers": [int(np.count_nonzero(part == 0)), int(np.count_nonzero(part == 1))],
        "per_endpoint": float(c / half),
        "beta": float(c / half),
        "links": topo.n_links,
        "cut_fraction": float(c / topo.n_links) if topo.n_links else 0.0,
        "seeds": int(seeds),
        "best_seed": int(best_seed),
        "cuts": cuts,
        "analytic": analytic_bisection(topo),
    }


def analytic_bisection(topo) -> dict | None:
    """Closed-form bisection of 000 Sec. III-C where the topology registered one, else ``None``.

    Returns ``{"links": C, "formula": text, "exact": bool}``.  ``exact`` is
    ``True`` for values that are the true minimum bisection of the generated
    graph (hypercube, fat trees, tori with an even largest dimension,
    HyperX with equal even dimensions); ``False`` for the Dragonfly estimate
    ``floor((N + 2p^2 - 1)/4)`` that 000 quotes for DF and FBF-3, which is an
    approximation of ``N/4`` (METIS and 004 Table 3 find 20 for the balanced
    h=2 Dragonfly where the formula gives 19).  Each family registers its
    formula with itself (``TOPOLOGIES.register(..., bisection=func)``).
    """
    from models.core.registry import TOPOLOGIES
    import models.topologies  # noqa: F401
    if topo.name not in TOPOLOGIES:     # built outside the registry: no hooks
        return None
    entry = TOPOLOGIES.get(topo.name)
    return entry.extra["bisection"](topo) if "bisection" in entry.extra else None
