"""k-ary n-dimensional torus (with wraparound links) and mesh (without)."""
from __future__ import annotations

import math

import numpy as np

from models.core.registry import Param, TOPOLOGIES
from ..topology import Topology, TopologySize, check_build, from_edges


def torus(dims: list[int] | None = None, p: int = 1, wrap: bool = True) -> Topology:
    """Torus ``D_0 x D_1 x ...`` with wraparound in every dimension, or a mesh without.

    Router coordinates ``(x_0, x_1, ...)`` have id ``x_0 + D_0*(x_1 + D_1*(...))``
    (dimension 0 varies fastest).  Router ``x`` is linked to
    ``x +- e_i (mod D_i)`` in every dimension ``i``; with ``wrap=False`` (a
    mesh) only where ``0 <= x_i +- 1 < D_i``.

    Parameters
    ----------
    dims : list of int
        Routers per dimension, each ``>= 1``; default ``[4, 4, 4]``.  A
        dimension of size 2 contributes one link per router pair (no
        parallel links), a dimension of size 1 contributes none.
    p : int
        Endpoints per router, ``p >= 0``; default 1 (000 Sec. III: ``p = 1``
        for low-radix topologies).
    wrap : bool
        True (default): a torus, every dimension a ring; False: a mesh, every
        dimension a line (no link from ``x_i = D_i - 1`` back to 0).

    Returns
    -------
    Topology
        ``prod(D)`` routers; per dimension of size ``>= 3`` every router has
        2 links (``prod(D)`` links in that dimension), size 2 gives 1 link
        per router (``prod(D)/2`` links), size 1 none.  Diameter
        ``sum(floor(D_i / 2))``.  A mesh has ``prod(D) (D_i - 1) / D_i``
        links in dimension ``i`` and diameter ``sum(D_i - 1)``.  ``group`` is the dimension-0 ring (routers
        sharing every coordinate except ``x_0``; id ``// D_0``),
        ``group_kind="rack"``, matching the sequential switch-to-cabinet
        assignment of 002 Sec. III-A (first dimension = switches per
        cabinet).  Link class ``i`` (name ``dim<i>``) is the dimension.
        ``meta["dims"]``.

    Raises
    ------
    ParameterError
        If ``dims`` is empty or has an entry < 1, or ``p < 0``.

    References
    ----------
    000 Sec. III (T3D, T5D); 002 Sec. III-A (Torus baseline, first
    dimension of size z).
    """
    torus_size(dims, p, wrap)
    dims = [4, 4, 4] if dims is None else dims
    n_r = math.prod(dims)
    ids = np.arange(n_r, dtype=np.int64)
    us, vs, cls = [], [], []
    stride = 1
    for dim, s in enumerate(dims):
        if s > 1:
            x = (ids // stride) % s
            keep = (x < s - 1) if (s == 2 or not wrap) else np.ones(n_r, bool)
            src = ids[keep]
            xs = x[keep]
            us.append(src)
            vs.append(src + (((xs + 1) % s) - xs) * stride)
            cls.append(np.full(src.size, dim, np.int8))
        stride *= s
    empty = np.zeros(0, np.int64)
    u = np.concatenate(us) if us else empty
    v = np.concatenate(vs) if vs else empty
    link_class = np.concatenate(cls) if cls else np.zeros(0, np.int8)
    params = {"dims": dims, "p": p, "wrap": wrap}
    return from_edges("torus", params, n_r, u, v, p, ids // dims[0], link_class=link_class,
                      link_class_names=tuple(f"dim{i}" for i in range(len(dims))),
                      group_kind="rack", meta={"dims": tuple(dims)}, what="topology: torus")


def torus_size(dims: list[int] | None = None, p: int = 1, wrap: bool = True) -> TopologySize:
    """``prod(D)`` routers; per dimension ``prod(D)`` links (``D_i >= 3`` with wraparound),
    ``prod(D) (D_i - 1) / D_i`` (a line: size 2, or a mesh), none for size 1."""
    dims = [4, 4, 4] if dims is None else dims
    n_r = math.prod(dims)
    links = sum(n_r if (s > 2 and wrap) else n_r // s * (s - 1) for s in dims)
    size = TopologySize(n_r, links, n_r * p)
    check_build(size.routers, size.links, "topology.dims")
    return size


def coordinates(topo) -> list[int]:
    """Dimension sizes: router ids are mixed-radix coordinates, dimension 0 fastest."""
    return list(topo.meta["dims"])


def analytic_bisection(topo) -> dict | None:
    """Torus: ``2 R / k_max`` (cut across the largest dimension; ``R/2`` when ``k_max = 2``),
    mesh: ``R / k_max``; ``None`` for an odd ``k_max``."""
    R = topo.n_routers
    k = max(int(d) for d in topo.params["dims"])
    if not topo.params.get("wrap", True):
        if k % 2:
            return None
        return {"links": R // k, "formula": "R/k_max (mesh)", "exact": True}
    if k == 2:
        return {"links": R // 2, "formula": "R/2 (largest dimension 2)", "exact": True}
    if k % 2:
        return None
    return {"links": 2 * R // k, "formula": "2R/k_max (000 Sec. III-C: 2N/k)", "exact": True}


torus = TOPOLOGIES.register(
    "torus", torus,
    params=[
        Param("dims", "int_list", [4, 4, 4], "routers per dimension, e.g. 8x16x16", lo=1),
        Param("p", int, 1, "endpoints per router", lo=0),
        Param("wrap", bool, True, "wraparound links: true = torus, false = mesh"),
    ],
    summary="torus with wraparound links, or mesh without (direct, low radix)",
    reference="000 Sec. III (T3D/T5D); 002 Sec. III-A",
    coordinates=coordinates,
    bisection=analytic_bisection,
    size=torus_size,
)
