"""DLN-2-y: a ring with random shortcuts (random shortcut topology)."""
from __future__ import annotations

import numpy as np

from models.core.errors import ParameterError
from models.core.registry import Param, TOPOLOGIES
from ..topology import Topology, TopologySize, check_build, from_edges
from .random_regular import balanced_p, regular_edges, repair_bytes


def dln(routers: int = 64, shortcuts: int = 4, p: int | None = None, seed: int = 0,
        group_size: int = 16) -> Topology:
    """Distributed loop network DLN-2-y: ring of ``routers`` plus ``y`` random shortcuts per router.

    Router ``i`` is linked to ``i +- 1 (mod routers)`` (the ring, degree 2)
    and to ``shortcuts`` further routers chosen at random, so that the
    shortcut links form a random ``shortcuts``-regular graph that shares no
    pair with the ring.  Every router has degree ``2 + shortcuts``.

    Parameters
    ----------
    routers : int
        Number of routers, ``>= 3``.
    shortcuts : int
        Random shortcuts per router ``y``, ``0 <= y <= routers - 3``,
        ``routers*y`` even.
    p : int, optional
        Endpoints per router, ``>= 0``; default 000 Sec. III's
        ``p = floor(sqrt(k))`` with router radix ``k = 2 + y + p``.
    seed : int
        Seed of the numpy ``default_rng`` stream; the graph is a pure
        function of ``(routers, shortcuts, seed)``.
    group_size : int
        Routers per rack, ``>= 1``: ``group = id // group_size`` (ring
        segments), ``group_kind="rack"``, default 16.

    Returns
    -------
    Topology
        ``routers`` routers of degree ``2 + y``, ``routers*(2+y)/2`` links,
        connected (the ring).  Link classes ``ring`` and ``shortcut``.

    Raises
    ------
    ParameterError
        If ``routers < 3``, ``routers*shortcuts`` is odd, ``shortcuts >
        routers - 3``, or ``p``, ``group_size`` are out of range.

    Notes
    -----
    000 Sec. III: DLNs "are constructed from a ring topology by adding
    random edges", DLN-2-y after Koibuchi et al. (ISCA 2012), ``y`` being
    the number of shortcuts added to each vertex.  Here the shortcuts are a
    uniform random ``y``-regular graph avoiding the ring pairs
    (configuration model plus swap repair, see
    :func:`~models.topologies.random_regular.regular_edges`), so every
    router has exactly ``y`` shortcuts.  For ``2y > routers - 3`` the
    shortcuts are the non-ring pairs left out by a random
    ``(routers-3-y)``-regular graph (same distribution, easier to sample).
    000 does not spell out how Koibuchi et al. place the shortcuts; this
    construction gives every router exactly ``y`` of them.

    References
    ----------
    000 Sec. III (footnote on DLN-2-y) and Table II; Koibuchi, Matsutani,
    Amano, Hsu, Casanova, "A case for random shortcut topologies for HPC
    interconnects" (ISCA 2012).
    """
    dln_size(routers, shortcuts, p, seed, group_size)
    p = balanced_p(2 + shortcuts) if p is None else p
    ring_u = np.arange(routers, dtype=np.int64)
    ring_v = (ring_u + 1) % routers
    ring_keys = set((np.minimum(ring_u, ring_v) * routers + np.maximum(ring_u, ring_v)).tolist())
    rng = np.random.default_rng(seed)
    if 2 * shortcuts <= routers - 3:
        su, sv = regular_edges(routers, shortcuts, rng, forbidden=ring_keys, connected=False,
                               key="shortcuts", family="DLN")
    else:
        # dense: complement (within the non-ring pairs) of a sparse random regular graph
        cu, cv = regular_edges(routers, routers - 3 - shortcuts, rng, forbidden=ring_keys,
                               connected=False, key="shortcuts", family="DLN")
        free = np.ones((routers, routers), dtype=bool)
        free[cu, cv] = free[cv, cu] = False
        free[ring_u, ring_v] = free[ring_v, ring_u] = False
        su, sv = np.nonzero(np.triu(free, 1))
    u = np.concatenate([ring_u, su])
    v = np.concatenate([ring_v, sv])
    cls = np.concatenate([np.zeros(routers, np.int8), np.ones(su.size, np.int8)])
    params = {"routers": routers, "shortcuts": shortcuts, "p": p, "seed": seed,
              "group_size": group_size}
    return from_edges("dln", params, routers, u, v, p, np.arange(routers) // group_size,
                      link_class=cls, link_class_names=("ring", "shortcut"), group_kind="rack",
                      what="topology: DLN")


RING_KEY_BYTES = 80
"""Bytes per router of the set of ring pairs the shortcuts avoid (a Python set of ints)."""


def dln_size(routers: int = 64, shortcuts: int = 4, p: int | None = None, seed: int = 0,
             group_size: int = 16) -> TopologySize:
    """``routers`` routers of degree ``2 + y``, ``p`` endpoints each; refuses what :func:`dln`
    refuses before building."""
    if shortcuts > routers - 3:
        raise ParameterError(f"topology.shortcuts: DLN shortcuts = {shortcuts} > routers - 3 = "
                             f"{routers - 3} (each router has routers-3 non-ring partners)")
    if (routers * shortcuts) % 2:
        raise ParameterError(f"topology.shortcuts: DLN routers*shortcuts = {routers}*{shortcuts} "
                             "must be even")
    p = balanced_p(2 + shortcuts) if p is None else p
    # the repair of the random shortcuts, which avoid the ring's pairs (a set of R keys); for
    # 2y > R - 3 the non-ring pairs left out by a sparse graph, through two R x R masks
    dense = 2 * shortcuts > routers - 3
    work = repair_bytes(routers, routers - 3 - shortcuts if dense else shortcuts) + \
        RING_KEY_BYTES * routers + (2 * routers * routers if dense else 0)
    size = TopologySize(routers, routers * (2 + shortcuts) // 2, routers * p, work_bytes=work)
    check_build(size.routers, size.links, "topology.routers")
    return size


dln = TOPOLOGIES.register(
    "dln", dln,
    params=[
        Param("routers", int, 64, "number of routers on the ring", lo=3),
        Param("shortcuts", int, 4, "random shortcuts per router y (DLN-2-y), y <= routers-3, "
                                   "routers*y even", lo=0),
        Param("p", int, None, "endpoints per router (default floor(sqrt(2+y+p)), 000 Sec. III)",
              lo=0),
        Param("seed", int, 0, "random seed (numpy default_rng)", lo=0),
        Param("group_size", int, 16, "routers per rack (group = id // group_size)", lo=1),
    ],
    summary="DLN-2-y: ring plus y random shortcuts per router",
    reference="000 Sec. III; Koibuchi et al. ISCA 2012",
    size=dln_size,
)
