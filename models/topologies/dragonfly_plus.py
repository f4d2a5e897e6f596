"""Dragonfly+: groups of two-level leaf-spine fat trees, global links on the spines."""
from __future__ import annotations

import numpy as np

from models.core.errors import ParameterError
from models.core.registry import Hook, Param, TOPOLOGIES
from ..topology import Topology, TopologySize, check_build, from_edges


def dragonfly_plus(h: int | None = None, leaves: int | None = None, spines: int | None = None,
                   p: int | None = None, g: int | None = None) -> Topology:
    """Dragonfly+: ``g`` groups, each a complete bipartite leaf-spine network; the spines
    carry the global links, one per pair of groups.

    Group ``G`` has ``leaves + spines`` routers: leaf ``i`` is router
    ``G*(leaves+spines) + i``, spine ``j`` is router ``G*(leaves+spines) + leaves + j``.
    Every leaf is linked to every spine of its group and carries ``p`` endpoints;
    spines carry no endpoints.  Global links use the consecutive arrangement of
    :func:`models.topologies.dragonfly.dragonfly` with the spines in the role of the
    Dragonfly routers: group ``G`` lists the other groups in increasing order, the
    ``j``-th is served by its spine ``floor(j/h)``; for ``G1 < G2`` the global link is
    ``spine floor((G2-1)/h) of G1 -- spine floor(G1/h) of G2``.

    Parameters
    ----------
    h : int, optional
        Global links per spine, ``h >= 1``, default 2.
    leaves : int, optional
        Leaf routers per group, default ``h``.
    spines : int, optional
        Spine routers per group, default ``h``.
    p : int, optional
        Endpoints per leaf, default ``spines`` (a leaf as many endpoints as uplinks).
    g : int, optional
        Number of groups, ``1 <= g <= spines*h + 1``; default ``spines*h + 1`` (the
        maximum: every global port used).

    Returns
    -------
    Topology
        ``g*(leaves+spines)`` routers, ``g*leaves*p`` endpoints,
        ``g*leaves*spines + g(g-1)/2`` links.  Leaf radix ``p + spines``, spine radix
        ``leaves + h``.  The defaults are the balanced maximal Dragonfly+ of router radix
        ``k = 2h`` (Shpiner et al.): ``k/2`` leaves and ``k/2`` spines per
        group, ``k/2`` endpoints per leaf, ``k/2`` global links per spine,
        ``k^2/4 + 1`` groups, ``N = (k^2/4)(k^2/4 + 1)`` endpoints.  Between leaves the
        distance is at most 3 (leaf - spine - spine - leaf); the router graph's diameter
        (spine to spine) is ``min(h+2, 5)`` for the balanced networks (measured by the
        tests up to ``h = 6``).  ``group`` is the Dragonfly+ group
        (``group_kind="group"``); link classes ``local`` (leaf-spine) and ``global``.

    Raises
    ------
    ParameterError
        If ``g > spines*h + 1``.

    Notes
    -----
    With ``g < spines*h + 1`` the same arrangement is used over the ``g`` groups, so
    spines with a high index serve fewer (possibly zero) global links; two groups are
    never joined by more than one global link.

    References
    ----------
    Shpiner, Haramaty, Eliad, Zdornov, Gafni, Zahavi, "Dragonfly+: Low cost topology
    for scaling datacenters" (HiPINEB 2017); compared with the Dragonfly in 004 Fig. 13.
    """
    dragonfly_plus_size(h, leaves, spines, p, g)
    h, leaves, spines, p, g = _derived(h, leaves, spines, p, g)
    per = leaves + spines
    base = (np.arange(g, dtype=np.int64) * per)[:, None]
    i = np.repeat(np.arange(leaves, dtype=np.int64), spines)
    j = np.tile(np.arange(spines, dtype=np.int64), leaves)
    lu = (base + i[None, :]).ravel()
    lv = (base + leaves + j[None, :]).ravel()
    g1, g2 = np.triu_indices(g, 1)
    gu = g1 * per + leaves + (g2 - 1) // h
    gv = g2 * per + leaves + g1 // h
    cls = np.concatenate([np.zeros(lu.size, np.int8), np.ones(gu.size, np.int8)])
    n_r = per * g
    endpoints = np.tile(np.concatenate([np.full(leaves, p, np.int32),
                                        np.zeros(spines, np.int32)]), g)
    level = np.tile(np.concatenate([np.zeros(leaves, np.int8), np.ones(spines, np.int8)]), g)
    params = {"h": h, "leaves": leaves, "spines": spines, "p": p, "g": g,
              "balanced": leaves == spines == p == h and g == spines * h + 1}
    return from_edges("dragonfly_plus", params, n_r, np.concatenate([lu, gu]),
                      np.concatenate([lv, gv]), endpoints, np.arange(n_r, dtype=np.int64) // per,
                      link_class=cls, link_class_names=("local", "global"), group_kind="group",
                      meta={"level": level}, what="topology: Dragonfly+")


def _derived(h, leaves, spines, p, g) -> tuple[int, int, int, int, int]:
    """(h, leaves, spines, p, g) with the defaults filled in; refuses ``g > spines*h + 1``."""
    h = 2 if h is None else h
    leaves = h if leaves is None else leaves
    spines = h if spines is None else spines
    p = spines if p is None else p
    g = spines * h + 1 if g is None else g
    if g > spines * h + 1:
        raise ParameterError(f"topology.g: Dragonfly+ g={g} > spines*h+1 = {spines * h + 1} "
                             "(one global link per pair of groups)")
    return h, leaves, spines, p, g


def dragonfly_plus_size(h=None, leaves=None, spines=None, p=None, g=None) -> TopologySize:
    """``g(leaves+spines)`` routers, ``g*leaves*spines`` local and ``g(g-1)/2`` global links,
    ``g*leaves*p`` endpoints; refuses what :func:`dragonfly_plus` refuses before building."""
    h, leaves, spines, p, g = _derived(h, leaves, spines, p, g)
    size = TopologySize(g * (leaves + spines), g * leaves * spines + g * (g - 1) // 2,
                        g * leaves * p)
    check_build(size.routers, size.links, "topology.h")
    return size


def worst_case(topo, seed):
    """Dragonfly+ worst case: every endpoint of group ``i`` sends to group ``i+1 mod g``.

    Endpoint ``j`` of group ``i`` sends to endpoint ``j`` of group ``i+1``: the
    Dragonfly adversarial pattern of Kim et al. (ISCA08 Sec. 4.2, 004 Sec. 5) on the
    Dragonfly+ groups; all ``leaves*p`` flows of a group share the one global link to the
    next group.
    """
    from ..traffic import TrafficPlan
    from ..traffic.worst_case import group_shift
    return TrafficPlan("table", group_shift(topo, topo.group, "group"),
                       "Dragonfly+ worst case: group i -> group i+1")


dragonfly_plus = TOPOLOGIES.register(
    "dragonfly_plus", dragonfly_plus,
    params=[
        Param("h", int, None, "global links per spine (default 2; balanced: leaves = spines = "
              "p = h, g = spines*h+1)", lo=1),
        Param("leaves", int, None, "leaf routers per group (default h)", lo=1),
        Param("spines", int, None, "spine routers per group (default h)", lo=1),
        Param("p", int, None, "endpoints per leaf (default spines)", lo=0),
        Param("g", int, None, "number of groups, g <= spines*h+1 (default spines*h+1)", lo=1),
    ],
    summary="Dragonfly+: leaf-spine groups, global links on the spines, leaf-to-leaf "
            "distance <= 3",
    reference="Shpiner et al. HiPINEB 2017; 004 Fig. 13",
    worst_case=Hook(worst_case, "group i sends to group i+1", "Kim et al. ISCA 2008; 004 Sec. 5"),
    size=dragonfly_plus_size,
)
