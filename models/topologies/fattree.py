"""Folded-Clos fat trees: 2-level leaf-spine and 3-level k-ary fat tree."""
from __future__ import annotations

import numpy as np

from models.core.errors import ParameterError
from models.core.registry import Hook, Param, TOPOLOGIES
from ..topology import Topology, TopologySize, check_build, from_edges


def _leaf_spine(pods, u, p, parallel=1):
    """Two levels: ``pods`` leaves of ``p`` hosts, each linked to all ``u/parallel`` spines
    by ``parallel`` links."""
    n_leaf, n_spine = pods, u // parallel
    n_r = n_leaf + n_spine
    lu = np.repeat(np.arange(n_leaf, dtype=np.int64), u)
    lv = n_leaf + np.tile(np.repeat(np.arange(n_spine, dtype=np.int64), parallel), n_leaf)
    endpoints = np.zeros(n_r, np.int32)
    endpoints[:n_leaf] = p
    group = np.full(n_r, n_leaf, np.int64)
    group[:n_leaf] = np.arange(n_leaf)
    level = np.ones(n_r, np.int8)
    level[:n_leaf] = 0
    cls = np.zeros(lu.size, np.int8)
    names = ("leaf_spine",)
    kind = "rack"
    return n_r, lu, lv, cls, endpoints, group, level, names, kind


def _three_level(pods, u, p, half):
    """Three levels: ``pods`` pods of ``k/2`` edge and ``u`` aggregation routers (complete bipartite inside a pod), aggregation router ``a`` of every pod linked to the ``k/2`` cores of plane ``a``."""
    n_edge, n_agg, n_core = pods * half, pods * u, u * half
    n_r = n_edge + n_agg + n_core
    # edge (q, e) -- agg (q, a) for every e, a of pod q
    q = np.repeat(np.arange(pods, dtype=np.int64), half * u)
    e = np.tile(np.repeat(np.arange(half, dtype=np.int64), u), pods)
    a = np.tile(np.arange(u, dtype=np.int64), pods * half)
    eu = q * half + e
    ev = n_edge + q * u + a
    # agg (q, a) -- core (a, j) for every j
    agg = np.repeat(np.arange(n_agg, dtype=np.int64), half)
    j = np.tile(np.arange(half, dtype=np.int64), n_agg)
    cu = n_edge + agg
    cv = n_edge + n_agg + (agg % u) * half + j
    lu = np.concatenate([eu, cu])
    lv = np.concatenate([ev, cv])
    cls = np.concatenate([np.zeros(eu.size, np.int8), np.ones(cu.size, np.int8)])
    endpoints = np.zeros(n_r, np.int32)
    endpoints[:n_edge] = p
    group = np.concatenate([np.arange(n_edge) // half, np.arange(n_agg) // u,
                            pods + np.arange(n_core) // half])
    level = np.concatenate([np.zeros(n_edge, np.int8), np.ones(n_agg, np.int8),
                            np.full(n_core, 2, np.int8)])
    names = ("edge_agg", "agg_core")
    kind = "pod"
    return n_r, lu, lv, cls, endpoints, group, level, names, kind


def fat_tree(k: int = 8, levels: int = 3, oversub: int = 1, pods: int | None = None,
             parallel: int = 1) -> Topology:
    """Folded-Clos fat tree of radix-``k`` routers with 2 or 3 levels.

    Every leaf (edge) router has ``u = k / (oversub + 1)`` uplinks and
    ``p = oversub * u`` endpoints, so ``oversub`` is the hosts:uplinks ratio
    at the leaves (1 = full bisection, ``p = u = k/2``).  Routers above the
    leaves carry no endpoints.

    *3 levels* (k-ary fat tree).  ``pods`` pods, each with ``k/2`` edge
    routers and ``u`` aggregation routers, every edge router linked to every
    aggregation router of its pod.  Aggregation router ``a`` of every pod has
    ``k/2`` uplinks, to the ``k/2`` core routers of core plane ``a``
    (``u`` planes, ``u*k/2`` cores; each core has one link per pod).

    *2 levels* (leaf-spine).  ``pods`` leaf routers and ``u/parallel`` spine
    routers, every leaf linked to every spine by ``parallel`` parallel links.

    Parameters
    ----------
    k : int
        Router radix, even, ``k >= 2``.
    levels : int
        2 (leaf-spine) or 3 (k-ary fat tree), default 3.
    oversub : int
        Hosts-to-uplinks ratio at the leaves, ``oversub >= 1``;
        ``oversub + 1`` must divide ``k``.  Default 1 (full bisection).
    pods : int, optional
        3 levels: number of pods; 2 levels: number of leaf routers.
        ``1 <= pods <= k/parallel`` (a core/spine router has ``k`` ports),
        default ``k/parallel``.
    parallel : int
        2 levels only: links between each leaf and each spine, ``parallel``
        must divide ``u``; default 1.  003 Sec. 6's FT2 (12 leaves, 6 spines,
        3 links each, 36-port switches) is ``k = 36, levels = 2,
        parallel = 3``.

    Returns
    -------
    Topology
        Router ids are level-major: leaf/edge routers first (pod-major:
        edge ``e`` of pod ``q`` is ``q*k/2 + e``; 2 levels: leaf ``q`` is
        ``q``), then aggregation routers (``q*u + a``), then cores
        (``a*k/2 + j`` in plane ``a``).  ``meta["level"]`` gives 0 (leaf/edge),
        1 (aggregation/spine) or 2 (core) per router.

        3 levels, full bisection, ``pods = k``: ``5k^2/4`` routers,
        ``k^3/4`` endpoints, ``k^3/2`` links, diameter 4 between edge routers.
        In general: ``pods*(k/2 + u) + u*k/2`` routers, ``pods*k/2*p``
        endpoints, ``pods*k*u`` links.

        2 levels: ``pods + u/parallel`` routers, ``pods*p`` endpoints,
        ``pods*u`` links (parallel links counted one by one), diameter 2
        between leaves; with ``oversub = 1``, ``parallel = 1``, ``pods = k``
        this is ``3k/2`` routers and ``k^2/2`` endpoints (001 Sec. 2.2.1).

        ``group``: 3 levels, the pod (its edge and aggregation routers,
        groups ``0..pods-1``) and one group per core plane (groups
        ``pods..pods+u-1``), ``group_kind="pod"``; 2 levels, every leaf is
        its own rack (groups ``0..pods-1``) and the spines form group
        ``pods``, ``group_kind="rack"``.  Link classes: ``edge_agg`` and
        ``agg_core`` (3 levels) or ``leaf_spine`` (2 levels).

    Raises
    ------
    ParameterError
        If ``k`` is odd or < 2, ``levels`` is not 2 or 3, ``oversub + 1``
        does not divide ``k``, ``pods`` is outside ``1..k/parallel``,
        ``parallel`` does not divide ``u`` or is above 1 with 3 levels.

    Notes
    -----
    Oversubscription is applied only at the leaves: aggregation and core
    layers stay non-blocking (``k/2`` down, ``k/2`` up).  An oversubscribed
    pod therefore has fewer aggregation routers (``u``) but still ``k/2``
    edge routers.  ``pods < k`` gives the partially populated trees used in
    000 Sec. V: ``k = 44, pods = 22`` is the FT-3 with ``N_r = 1,452`` and
    ``N = 10,648`` (cores then use only ``pods`` of their ports).

    References
    ----------
    Leiserson, "Fat-trees" (IEEE TC 1985); 000 Sec. VI-B3 ("FT-3", ``5p^2``
    routers, ``2p^3`` endpoints, ``p = k/2``); 001 Sec. 2.2.1 (two-level
    fat tree).
    """
    fat_tree_size(k, levels, oversub, pods, parallel)
    pods = k // parallel if pods is None else pods
    u = k // (oversub + 1)
    p = k - u
    half = k // 2

    build_levels = (_leaf_spine(pods, u, p, parallel) if levels == 2
                    else _three_level(pods, u, p, half))
    n_r, lu, lv, cls, endpoints, group, level, names, kind = build_levels
    params = {"k": k, "levels": levels, "oversub": oversub, "pods": pods, "p": p, "uplinks": u,
              "parallel": parallel}
    return from_edges("fattree", params, n_r, lu, lv, endpoints, group, link_class=cls,
                      link_class_names=names, group_kind=kind, meta={"level": level},
                      what="topology: fat tree", parallel=parallel > 1)


def fat_tree_size(k: int = 8, levels: int = 3, oversub: int = 1,
                  pods: int | None = None, parallel: int = 1) -> TopologySize:
    """3 levels: ``pods (k/2 + u) + u k/2`` routers, ``pods k u`` links, ``pods k/2 p``
    endpoints; 2 levels: ``pods + u/parallel`` routers, ``pods u`` links, ``pods p`` endpoints
    (``u = k/(oversub+1)``, ``p = k - u``); refuses what :func:`fat_tree` refuses before
    building."""
    if k % 2:
        raise ParameterError(f"topology.k: fat tree radix k = {k} must be even "
                             "(k/2 ports down and k/2 up at aggregation/core level)")
    if k % (oversub + 1):
        raise ParameterError(f"topology.oversub: fat tree oversub + 1 = {oversub + 1} must divide "
                             f"k = {k} (leaf has u = k/(oversub+1) uplinks, p = oversub*u hosts)")
    u = k // (oversub + 1)
    if parallel > 1 and levels != 2:
        raise ParameterError(f"topology.parallel: fat tree parallel = {parallel} needs levels = 2 "
                             "(parallel links join leaves and spines of a leaf-spine network)")
    if u % parallel:
        raise ParameterError(f"topology.parallel: fat tree parallel = {parallel} must divide the "
                             f"leaf's u = {u} uplinks (u/parallel spines, parallel links to each)")
    pods = k // parallel if pods is None else pods
    if pods * parallel > k:
        raise ParameterError(f"topology.pods: fat tree pods = {pods} > k/parallel = "
                             f"{k // parallel} (a core/spine router has k ports)")
    p = k - u
    half = k // 2
    if levels == 2:
        size = TopologySize(pods + u // parallel, pods * u, pods * p)
    else:
        size = TopologySize(pods * (half + u) + u * half, pods * k * u, pods * half * p)
    check_build(size.routers, size.links, "topology.k")
    return size


def analytic_bisection(topo) -> dict:
    """Fat tree (2 or 3 levels): ``N / (2 * oversub)``, full bisection when not oversubscribed."""
    o = int(topo.params.get("oversub") or 1)
    return {"links": topo.n_endpoints // (2 * o), "formula": "N/(2*oversub) (000 Sec. III-C: N/2)",
            "exact": True}


def worst_case(topo, seed):
    """Fat tree worst case: every packet crosses the top level (000 Sec. V-C).

    3 levels: endpoint ``j`` of pod ``i`` sends to endpoint ``j`` of pod
    ``i+1``; 2 levels: of leaf ``i`` to leaf ``i+1``.  The nearest common
    ancestor of source and destination is then a core (spine) router.
    """
    from ..traffic import TrafficPlan
    from ..traffic.worst_case import group_shift
    what = "pod" if topo.params.get("levels", 3) == 3 else "leaf"
    return TrafficPlan("table", group_shift(topo, topo.group, what),
                       f"fat tree worst case: {what} i -> {what} i+1 through the top level")


fat_tree = TOPOLOGIES.register(
    "fattree", fat_tree,
    params=[
        Param("k", int, 8, "router radix (even)", lo=2),
        Param("levels", int, 3, "2 (leaf-spine) or 3 (k-ary fat tree)", lo=2, hi=3),
        Param("oversub", int, 1, "hosts:uplinks ratio at the leaves; oversub+1 must divide k "
                                 "(leaf: u = k/(oversub+1) uplinks, p = oversub*u endpoints)",
              lo=1),
        Param("pods", int, None, "3 levels: pods; 2 levels: leaf routers; 1..k/parallel "
              "(default k/parallel)", lo=1),
        Param("parallel", int, 1, "2 levels: links between each leaf and each spine; divides "
              "the leaf's uplinks (u/parallel spines); 003's FT2: k=36, parallel=3", lo=1),
    ],
    summary="folded-Clos fat tree (indirect), 2 or 3 levels, optional leaf oversubscription",
    reference="000 Sec. VI-B3; 001 Sec. 2.2.1",
    worst_case=Hook(worst_case, "pod (leaf) i sends to pod (leaf) i+1, through the top level", "000 Sec. V-C"),
    bisection=analytic_bisection,
    size=fat_tree_size,
)
