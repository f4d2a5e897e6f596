"""HyperX (generalised hypercube / flattened butterfly)."""
from __future__ import annotations

import math

import numpy as np

from models.core.errors import ParameterError
from models.core.registry import Hook, Param, TOPOLOGIES
from ..topology import Topology, TopologySize, check_build, from_edges


def hyperx(sizes: list[int] | None = None, p: int | None = None,
           grid_latency: list[int] | None = None) -> Topology:
    """HyperX with dimension sizes ``S_0 x S_1 x ...`` and one link per router pair.

    Router coordinates ``(x_0, x_1, ...)`` have id ``x_0 + S_0*(x_1 + S_1*(x_2 + ...))``
    (dimension 0 varies fastest).  Two routers are linked iff they differ
    in exactly one coordinate, so every dimension line is a complete graph.

    Parameters
    ----------
    sizes : list of int
        Routers per dimension, each ``>= 1``; default ``[4, 4, 4]``.
    p : int, optional
        Endpoints per router, ``p >= 0``; default ``sizes[0]`` (the
        flattened-butterfly concentration: FBF-3 has ``p`` routers per group
        and ``p`` endpoints per router, 000 Sec. VI-B3).
    grid_latency : list of two int, optional
        ``[cx, cy]``, cycles per column and per row: the routers sit on a
        grid of ``S_0`` columns (router ``r`` at column ``r mod S_0``, row
        ``r // S_0``) and a link takes ``cx |dcolumn| + cy |drow|`` cycles,
        as BookSim's on-chip flattened butterfly (``flatfly`` with
        ``use_noc_latency``) lays out its routers.  The network then carries
        these latencies (``meta["link_latency"]``, used when
        ``router.link_latency`` is 0).  Default: none, the links take the
        physical layout's latencies.

    Returns
    -------
    Topology
        ``prod(S)`` routers, each of degree ``sum(S_i - 1)``;
        ``prod(S) * sum(S_i - 1) / 2`` links; diameter = number of
        dimensions with ``S_i > 1``.  ``group`` is the dimension-0 line
        (routers sharing every coordinate except ``x_0``; group id
        ``id // S_0``), ``group_kind="rack"``.  Link class ``i`` (name
        ``dim<i>``) is the dimension the link spans.  ``meta["sizes"]``.

    Raises
    ------
    ParameterError
        If ``sizes`` is empty or has an entry < 1, ``p < 0``, or
        ``grid_latency`` is not two integers >= 1.

    Notes
    -----
    The flattened butterfly FBF-3 of 000 Sec. VI-B3 (``p`` routers per
    fully connected group, ``p^2`` groups in a square, ``p`` links between
    two groups of the same row or column) is ``hyperx(sizes=[p, p, p])``
    with ``p`` endpoints per router (router radix ``4p - 3``, so
    ``p = (k+3)/4``).  Trunking (more than one link per router pair) is not
    supported because the router graph is simple.

    References
    ----------
    Ahn et al., "HyperX" (SC09); Kim, Dally, Abts, "Flattened butterfly"
    (ISCA07); 000 Sec. VI-B3 (FBF-3); 002 Sec. III-A (HyperX baseline).
    """
    sizes = [4, 4, 4] if sizes is None else sizes
    if p is None:
        p = sizes[0]
    if grid_latency is not None and (len(grid_latency) != 2 or min(grid_latency) < 1):
        raise ParameterError(f"topology.grid_latency: two integers >= 1 (cycles per column and "
                             f"per row), got {grid_latency}")
    hyperx_size(sizes, p, grid_latency)
    n_r = math.prod(sizes)
    us, vs, cls = [], [], []
    stride = 1
    for dim, s in enumerate(sizes):
        if s > 1:
            # routers with x_dim = 0, then every coordinate pair a < b of this dimension
            ids = np.arange(n_r, dtype=np.int64)
            base = ids[(ids // stride) % s == 0]
            a, b = np.triu_indices(s, 1)
            us.append((base[:, None] + a[None, :] * stride).ravel())
            vs.append((base[:, None] + b[None, :] * stride).ravel())
            cls.append(np.full(us[-1].size, dim, np.int8))
        stride *= s
    empty = np.zeros(0, np.int64)
    u = np.concatenate(us) if us else empty
    v = np.concatenate(vs) if vs else empty
    link_class = np.concatenate(cls) if cls else np.zeros(0, np.int8)
    group = np.arange(n_r, dtype=np.int64) // sizes[0]
    params = {"sizes": sizes, "p": p, "degree": sum(s - 1 for s in sizes),
              "grid_latency": None if grid_latency is None else list(grid_latency)}
    topo = from_edges("hyperx", params, n_r, u, v, p, group, link_class=link_class,
                      link_class_names=tuple(f"dim{i}" for i in range(len(sizes))),
                      group_kind="rack", meta={"sizes": tuple(sizes)}, what="topology: HyperX")
    if grid_latency is not None:
        a = topo.links[:, 0].astype(np.int64)
        b = topo.links[:, 1].astype(np.int64)
        cols = sizes[0]
        topo.meta["link_latency"] = (grid_latency[0] * np.abs(a % cols - b % cols)
                                     + grid_latency[1] * np.abs(a // cols - b // cols))
    return topo


def hyperx_size(sizes: list[int] | None = None, p: int | None = None,
                grid_latency: list[int] | None = None) -> TopologySize:
    """``prod(S)`` routers, ``prod(S) sum(S_i - 1) / 2`` links, ``p prod(S)`` endpoints."""
    sizes = [4, 4, 4] if sizes is None else sizes
    p = sizes[0] if p is None else p
    n_r = math.prod(sizes)
    size = TopologySize(n_r, n_r * sum(s - 1 for s in sizes) // 2, n_r * p)
    check_build(size.routers, size.links, "topology.sizes")
    return size


def coordinates(topo) -> list[int]:
    """Dimension sizes: router ids are mixed-radix coordinates, dimension 0 fastest."""
    return list(topo.meta["sizes"])


def analytic_bisection(topo) -> dict | None:
    """HyperX / flattened butterfly: ``R k / 4`` for the smallest even dimension ``k`` (each
    full-mesh line is cut in half); exact when all dimensions are equal."""
    even = [int(d) for d in topo.params["sizes"] if int(d) % 2 == 0]
    if not even:
        return None
    k = min(even)
    sizes = {int(d) for d in topo.params["sizes"]}
    return {"links": topo.n_routers * k // 4, "formula": "R*k/4, k = smallest even dimension",
            "exact": len(sizes) == 1}


def worst_case(topo, seed):
    """HyperX / flattened butterfly worst case: tornado in every dimension (004 Sec. 5).

    Router ``x`` sends to ``x_i + t(S_i) mod S_i`` in every dimension of
    size > 1 (``t(S) = max(1, ceil(S/2) - 1)``), so every route takes one
    hop per dimension and the ``p`` flows of a router share each link.
    """
    from ..traffic import TrafficPlan
    from ..traffic.patterns import router_map_to_endpoints, shift_coords, tornado_offset
    sizes = list(topo.meta["sizes"])
    steps = [tornado_offset(s) for s in sizes]
    if not any(steps):
        raise ParameterError(f"traffic.pattern: HyperX {sizes} has a single router, no worst case")
    return TrafficPlan("table", router_map_to_endpoints(topo, shift_coords(topo, steps)),
                       f"HyperX worst case: tornado per dimension, steps {steps}")


hyperx = TOPOLOGIES.register(
    "hyperx", hyperx,
    params=[
        Param("sizes", "int_list", [4, 4, 4], "routers per dimension, e.g. 4x4x4 (FBF-3: p,p,p)",
              lo=1),
        Param("p", int, None, "endpoints per router (default sizes[0])", lo=0),
        Param("grid_latency", "int_list", None, "cycles per column and per row of a grid of "
              "sizes[0] columns: a link takes cx*|dcolumn| + cy*|drow| cycles (BookSim's on-chip "
              "flatfly; default: from the layout)", lo=1),
    ],
    summary="HyperX / flattened butterfly: full mesh along every dimension",
    reference="000 Sec. VI-B3 (FBF-3); Ahn et al. SC09",
    worst_case=Hook(worst_case, "tornado in every dimension", "004 Sec. 5"),
    coordinates=coordinates,
    bisection=analytic_bisection,
    size=hyperx_size,
)
