"""Binary hypercube."""
from __future__ import annotations

import numpy as np

from models.core.registry import Param, TOPOLOGIES
from ..topology import Topology, TopologySize, check_build, from_edges

RACK_BITS = 4
"""Routers sharing all id bits above the lowest ``RACK_BITS`` share a rack (16 routers)."""


def hypercube(n: int = 6, p: int = 1) -> Topology:
    """``n``-dimensional binary hypercube: routers ``x`` and ``x XOR 2^i`` are linked.

    Parameters
    ----------
    n : int
        Dimensions, ``n >= 1``; ``2^n`` routers.
    p : int
        Endpoints per router, ``p >= 0``; default 1 (000 Sec. III).

    Returns
    -------
    Topology
        ``2^n`` routers of degree ``n``, ``n * 2^(n-1)`` links, diameter
        ``n``.  ``group = id >> min(n, 4)``: racks of ``2^min(n,4)``
        consecutive routers (up to 16), as in the sequential switch-to-cabinet
        assignment of 002 Sec. III-A; ``group_kind="rack"``.  Link class
        ``i`` (name ``dim<i>``) is the bit the link flips.

    Raises
    ------
    ParameterError
        If ``n < 1`` or ``p < 0``.

    Notes
    -----
    The rack size of 16 is a choice of this implementation (neither 000
    nor 002 fixes it); only cable-length models depend on it.

    References
    ----------
    000 Sec. III and VI-B3 (HC: one link per dimension, electric inside a
    rack, optical between racks); 002 Sec. III-A (Hypercube baseline).
    """
    hypercube_size(n, p)
    n_r = 1 << n
    ids = np.arange(n_r, dtype=np.int64)
    bits = np.arange(n, dtype=np.int64)
    low = (ids[None, :] >> bits[:, None]) & 1 == 0            # (n, R): bit i of router is 0
    dim, src = np.nonzero(low)
    u = src
    v = src | (np.int64(1) << dim)
    rack_bits = min(n, RACK_BITS)
    params = {"n": n, "p": p}
    return from_edges("hypercube", params, n_r, u, v, p, ids >> rack_bits,
                      link_class=dim.astype(np.int8),
                      link_class_names=tuple(f"dim{i}" for i in range(n)),
                      group_kind="rack", meta={"rack_bits": rack_bits}, what="topology: hypercube")


def hypercube_size(n: int = 6, p: int = 1) -> TopologySize:
    """``2^n`` routers, ``n 2^(n-1)`` links, ``p 2^n`` endpoints."""
    size = TopologySize(1 << n, n << max(n - 1, 0), p << n)
    check_build(size.routers, size.links, "topology.n")
    return size


def analytic_bisection(topo) -> dict:
    """Hypercube: ``R/2`` links (``N/2`` for ``p = 1``, 000 Sec. III-C)."""
    return {"links": topo.n_routers // 2, "formula": "R/2 (000 Sec. III-C: N/2 for p=1)",
            "exact": True}


hypercube = TOPOLOGIES.register(
    "hypercube", hypercube,
    params=[
        Param("n", int, 6, "dimensions (2^n routers)", lo=1, hi=30),
        Param("p", int, 1, "endpoints per router", lo=0),
    ],
    summary="binary hypercube (direct, degree n)",
    reference="000 Sec. III, VI-B3; 002 Sec. III-A",
    bisection=analytic_bisection,
    size=hypercube_size,
)
