"""Dragonfly with the consecutive (absolute) global arrangement (construction notes 4)."""
from __future__ import annotations

import numpy as np

from models.core.errors import ParameterError
from models.core.registry import Hook, Param, TOPOLOGIES
from ..topology import Topology, TopologySize, check_build, from_edges


def dragonfly(h: int | None = None, a: int | None = None, p: int | None = None,
              g: int | None = None, local_latency: int = 0, global_latency: int = 0) -> Topology:
    """Dragonfly: g groups of a fully connected routers, one global link per group pair.

    Router ``(G, r)`` has id ``G*a + r``.  Group G lists the other groups in
    increasing order (itself skipped); the j-th is served by router
    ``floor(j/h)``.  Equivalently, for ``G1 < G2`` the global link is
    ``(G1, floor((G2-1)/h)) -- (G2, floor(G1/h))``.

    Parameters
    ----------
    h : int, optional
        Global links per router, ``h >= 1``.  Default: 2 when ``a`` is not
        given either; ``ceil((g-1)/a)`` when ``a`` and ``g`` are given;
        ``ceil(a/2)`` when only ``a`` is given.
    a : int, optional
        Routers per group, default ``2h`` (balanced).
    p : int, optional
        Endpoints per router, default ``h`` (balanced).
    g : int, optional
        Number of groups, ``1 <= g <= a*h + 1``; default ``a*h + 1`` (the
        maximum).
    local_latency, global_latency : int
        Latency in cycles of every local (global) link, both > 0 or both 0
        (default: the links take the physical layout's latencies).  When
        given, the network carries them (``meta["link_latency"]``, used when
        ``router.link_latency`` is 0), as BookSim's ``dragonflynew`` gives
        its local and global channels 10 and 100 cycles.

    Returns
    -------
    Topology
        ``a*g`` routers.  Balanced (only h given): ``a = 2h``, ``p = h``,
        ``g = 2h^2 + 1``, regular network degree ``3h - 1``, router radix
        ``4h - 1``, diameter 3.  ``group`` is the Dragonfly group
        (``group_kind="group"``); link classes ``local`` and ``global``.

    Raises
    ------
    ParameterError
        If h, a, g < 1, p < 0, ``g > a*h + 1``, or only one of
        ``local_latency``, ``global_latency`` is given.

    Notes
    -----
    With ``g < a*h + 1`` the same consecutive arrangement is used over the g
    groups, so routers with a high index ``r`` serve fewer (possibly zero)
    global links and some global ports stay unused.  The arrangement is the
    one of BookSim's ``dragonflynew`` (``dragonfly_port``); the "palm-tree"
    arrangement is not used.  It equals Galaxyfly GF(a*h+1, 1, a, h) with
    the blocked (not round-robin) port rule.

    References
    ----------
    Kim, Dally, Scott, Abts, "Technology-driven, highly-scalable dragonfly
    topology" (ISCA 2008), as used in 000 Sec. VI-B3; 004 Table 2 (q = 1).
    """
    dragonfly_size(h, a, p, g, local_latency, global_latency)
    h, a, p, g = _derived(h, a, p, g, local_latency, global_latency)
    i, j = np.triu_indices(a, 1)
    base = (np.arange(g, dtype=np.int64) * a)[:, None]
    lu = (base + i[None, :]).ravel()
    lv = (base + j[None, :]).ravel()
    g1, g2 = np.triu_indices(g, 1)
    gu = g1 * a + (g2 - 1) // h
    gv = g2 * a + g1 // h
    cls = np.concatenate([np.zeros(len(lu), np.int8), np.ones(len(gu), np.int8)])
    n_r = a * g
    params = {"h": h, "a": a, "p": p, "g": g, "k_net": (a - 1) + h, "radix": p + (a - 1) + h,
              "balanced": a == 2 * h and p == h and g == a * h + 1}
    params.update(local_latency=local_latency, global_latency=global_latency)
    topo = from_edges("dragonfly", params, n_r, np.concatenate([lu, gu]), np.concatenate([lv, gv]),
                      p, np.arange(n_r, dtype=np.int64) // a, link_class=cls,
                      link_class_names=("local", "global"), group_kind="group",
                      what="topology: Dragonfly")
    if local_latency > 0:
        topo.meta["link_latency"] = np.where(topo.link_class == 1, global_latency,
                                             local_latency).astype(np.int64)
    return topo


def _derived(h, a, p, g, local_latency, global_latency) -> tuple[int, int, int, int]:
    """(h, a, p, g) with the defaults filled in; refuses the rules between them."""
    if h is None:
        if a is None:
            h = 2
        else:
            h = -(-(g - 1) // a) if g is not None else -(-a // 2)
            h = max(h, 1)
    a = 2 * h if a is None else a
    p = h if p is None else p
    g = a * h + 1 if g is None else g
    if g > a * h + 1:
        raise ParameterError(f"topology.g: Dragonfly g={g} > a*h+1 = {a * h + 1} "
                             "(one global link per pair of groups)")
    if (local_latency > 0) != (global_latency > 0):
        raise ParameterError(f"topology.local_latency: local_latency = {local_latency} and "
                             f"global_latency = {global_latency}: give both (> 0) or neither")
    return h, a, p, g


def dragonfly_size(h=None, a=None, p=None, g=None, local_latency=0,
                   global_latency=0) -> TopologySize:
    """``a*g`` routers, ``g*a(a-1)/2`` local and ``g(g-1)/2`` global links, ``p*a*g``
    endpoints; refuses what :func:`dragonfly` refuses before building."""
    h, a, p, g = _derived(h, a, p, g, local_latency, global_latency)
    size = TopologySize(a * g, g * a * (a - 1) // 2 + g * (g - 1) // 2, p * a * g)
    check_build(size.routers, size.links, "topology.h")
    return size


def analytic_bisection(topo) -> dict | None:
    """Balanced Dragonfly: ``floor((N + 2p^2 - 1)/4)`` (000 Sec. III-C), an estimate of ``N/4``."""
    prm = topo.params
    if not prm.get("balanced"):
        return None
    p = int(prm["p"])
    return {"links": (topo.n_endpoints + 2 * p * p - 1) // 4,
            "formula": "floor((N+2p^2-1)/4) (000 Sec. III-C)", "exact": False}


def worst_case(topo, seed):
    """Dragonfly worst case: every endpoint of group ``i`` sends to group ``i+1 mod g``.

    Endpoint ``j`` of group ``i`` (in endpoint order) sends to endpoint ``j``
    of group ``i+1``; with one global link between two groups all ``a p``
    flows of a group share it.  This is the adversarial pattern of Kim et
    al. (ISCA08 Sec. 4.2) that 000 Sec. V-C and 004 Sec. 5 use; Kim et al.
    draw the destination node in group ``i+1`` at random, here it is fixed
    so the pattern is a permutation.
    """
    from ..traffic import TrafficPlan
    from ..traffic.worst_case import group_shift
    return TrafficPlan("table", group_shift(topo, topo.group, "group"),
                       "Dragonfly worst case: group i -> group i+1")


def min_routes(topo, dist):
    """Dragonfly-minimal routes (local-global-local) with Kim et al.'s VC classes, on an
    instance with local and global link classes (what BookSim's ``min`` is there)."""
    if tuple(topo.link_class_names) != ("local", "global"):
        return None
    from ..routing.dragonfly import dragonfly_min_plan
    return dragonfly_min_plan(topo, dist)


dragonfly = TOPOLOGIES.register(
    "dragonfly", dragonfly,
    params=[
        Param("h", int, None, "global links per router (default 2; balanced a=2h, p=h, g=ah+1)",
              lo=1),
        Param("a", int, None, "routers per group (default 2h)", lo=1),
        Param("p", int, None, "endpoints per router (default h)", lo=0),
        Param("g", int, None, "number of groups, g <= a*h+1 (default a*h+1)", lo=1),
        Param("local_latency", int, 0, "cycles of every local link (with global_latency; 0 = "
              "from the layout; BookSim's dragonflynew: 10)", lo=0),
        Param("global_latency", int, 0, "cycles of every global link (with local_latency; 0 = "
              "from the layout; BookSim's dragonflynew: 100)", lo=0),
    ],
    summary="Dragonfly, consecutive global arrangement, diameter 3",
    reference="Kim et al. ISCA 2008; 000 Sec. VI-B3",
    worst_case=Hook(worst_case, "group i sends to group i+1", "000 Sec. V-C; 004 Sec. 5"),
    bisection=analytic_bisection,
    size=dragonfly_size,
    min_routes=Hook(min_routes, "local-global-local minimal routes, Kim et al.'s VC classes",
                    "Kim et al. ISCA 2008; BookSim's dragonflynew min"),
)
