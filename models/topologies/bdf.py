"""BDF (Bermond-Delorme-Farhi) diameter-3 graphs P_u * G_d (construction notes 2)."""
from __future__ import annotations

import numpy as np

from models.core.errors import ParameterError
from ..gf import GF, is_prime_power
from models.core.registry import Param, TOPOLOGIES
from ..topology import Topology, TopologySize, check_build, from_edges


def polarity_graph(u: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Erdos-Renyi orthogonal polarity graph ER_u of PG(2, u).

    Points are the triples over GF(u) whose first nonzero coordinate is 1, in
    lexicographic order; ``x ~ y`` iff ``x . y = 0``.  Returns
    ``(points, edges, absolute)``: the ``(u^2+u+1, 3)`` point array, the
    ``(E, 2)`` edges ``x < y``, and the boolean mask of absolute points
    (``x . x = 0``, the points that carry a loop).
    """
    F = GF(u)
    e = np.arange(u, dtype=np.int64)
    a, b, c = (g.ravel() for g in np.meshgrid(e, e, e, indexing="ij"))   # lexicographic
    nz = np.where(a != 0, a, np.where(b != 0, b, c))
    pts = np.stack([a, b, c], axis=1)[nz == 1]
    dot = F.add[F.add[F.mul[pts[:, None, 0], pts[None, :, 0]],
                      F.mul[pts[:, None, 1], pts[None, :, 1]]],
                F.mul[pts[:, None, 2], pts[None, :, 2]]]
    zero = dot == 0
    absolute = np.diagonal(zero).copy()
    i, j = np.nonzero(np.triu(zero, 1))
    return pts, np.stack([i, j], axis=1), absolute


def p_star_graph(d: int) -> np.ndarray:
    """A d-regular graph G_d on 2d vertices with property P* for f(v) = v XOR 1.

    Base C_4 (d even) or the triangular prism (d odd), then steps c -> c+2
    that add x, x', y, y' (= n..n+3), the 4-cycle x-y-x'-y'-x, x and x'
    joined to every old even vertex, y and y' to every old odd vertex.
    Returns the ``(d^2, 2)`` edge array with ``u < v``.

    P*: diameter <= 2 and ``V = {v, f v} u f(N(v)) u N(f v)`` for every v
    (BDF's property, 000 Sec. II-C1).  This family is a reconstruction
    (construction notes 2.3 (b)); the 1982 construction could not be obtained.
    """
    d = int(d)
    if d < 2:
        raise ValueError("G_d needs d >= 2")
    if d % 2 == 0:
        edges = [(0, 2), (1, 2), (1, 3), (0, 3)]
        c = 2
    else:
        edges = [(0, 2), (2, 4), (0, 4), (1, 3), (3, 5), (1, 5), (0, 5), (1, 2), (3, 4)]
        c = 3
    while c < d:
        n = 2 * c
        x, xp, y, yp = n, n + 1, n + 2, n + 3
        edges += [(x, y), (xp, y), (xp, yp), (x, yp)]
        edges += [(v, x) for v in range(0, n, 2)] + [(v, xp) for v in range(0, n, 2)]
        edges += [(v, y) for v in range(1, n, 2)] + [(v, yp) for v in range(1, n, 2)]
        c += 2
    arr = np.sort(np.asarray(edges, dtype=np.int64), axis=1)
    return arr[np.lexsort((arr[:, 1], arr[:, 0]))]


def bdf(u: int = 3, p: int | None = None) -> Topology:
    """BDF diameter-3 graph ``P_u * G_d`` with ``d = (u+1)/2``.

    Router ``(x, a)`` (``x`` a point of PG(2,u), ``a`` in ``[0, u+1)``) has id
    ``x*(u+1) + a``.  Links, with ``f(a) = a XOR 1``:

    * ``(x,a) -- (x,b)`` for every edge ``ab`` of G_d (one copy per point);
    * ``(x,a) -- (y,f(a))`` for every edge ``x < y`` of ER_u;
    * ``(x,a) -- (x,f(a))`` for every absolute point ``x`` (its loop).

    Parameters
    ----------
    u : int
        Odd prime power (3, 5, 7, 9, 11, 13, 17, 19, 23, 25, 27, ...).
    p : int, optional
        Endpoints per router, default ``(u+1)/2 = k'/3`` (a proposal from the
        000 Sec. II-B2 balance argument, not from the literature).

    Returns
    -------
    Topology
        ``(u^2+u+1)(u+1)`` routers, regular of degree ``k' = 3(u+1)/2``,
        diameter 3.  ``group`` is the supernode ``x`` (``group_kind =
        "supernode"``); links inside a supernode are ``local``, between
        supernodes ``global`` (a perfect matching of u+1 links per ER edge).

    Raises
    ------
    ParameterError
        If u is not an odd prime power, or p < 0.

    Notes
    -----
    000 gives only the counting (``N_r = 8/27 k'^3 - 4/9 k'^2 + 2/3 k'``), the
    * product and property P*; the construction of G_{k'/3} and of the arc
    maps is deferred to Bermond, Delorme, Farhi (1982), which could not be
    obtained.  This generator is the reconstruction of construction notes 2.3: the
    inductive P* family of :func:`p_star_graph` and the same involution on
    every edge and loop of ER_u.  Its invariants (N_r, degree, diameter 3)
    are those of BDF; whether it is isomorphic to BDF's own graph is unknown.

    References
    ----------
    000 Sec. II-C, II-C1 (BDF graphs, * product, property P*, P_u).
    """
    bdf_size(u, p)
    t = u + 1
    d = t // 2
    if p is None:
        p = d

    _, er, absolute = polarity_graph(u)
    n_pts = u * u + u + 1
    G = p_star_graph(d)
    base = (np.arange(n_pts, dtype=np.int64) * t)[:, None]
    # copies of G_d in every supernode
    cu = (base + G[None, :, 0]).ravel()
    cv = (base + G[None, :, 1]).ravel()
    # structure edges of ER_u, each a matching a -> f(a)
    a = np.arange(t, dtype=np.int64)
    su = (er[:, 0:1] * t + a[None, :]).ravel()
    sv = (er[:, 1:2] * t + (a ^ 1)[None, :]).ravel()
    # loops at absolute points: the matching a -- f(a) inside the supernode
    ev = a[a % 2 == 0]
    ab = np.nonzero(absolute)[0][:, None] * t
    lu = (ab + ev[None, :]).ravel()
    lv = lu + 1

    group = np.repeat(np.arange(n_pts, dtype=np.int64), t)
    params = {"u": u, "p": p, "d": d, "k_net": 3 * d, "radix": 3 * d + p,
              "supernodes": n_pts, "xi": GF(u).xi}
    return from_edges("bdf", params, n_pts * t,
                      np.concatenate([cu, su, lu]), np.concatenate([cv, sv, lv]),
                      p, group, group_kind="supernode", what="topology.u: BDF")


def bdf_size(u: int = 3, p: int | None = None) -> TopologySize:
    """``(u^2+u+1)(u+1)`` routers of degree ``3(u+1)/2``, ``p`` endpoints each (default
    ``(u+1)/2``); refuses what :func:`bdf` refuses before building."""
    if is_prime_power(u) is None or u % 2 == 0:
        raise ParameterError(f"topology.u: BDF u={u} must be an odd prime power")
    n_r = (u * u + u + 1) * (u + 1)
    d = (u + 1) // 2
    size = TopologySize(n_r, n_r * 3 * d // 2, n_r * (d if p is None else p))
    check_build(size.routers, size.links, "topology.u")
    return size


bdf = TOPOLOGIES.register(
    "bdf", bdf,
    params=[
        Param("u", int, 3, "odd prime power (order of the projective plane)", lo=1),
        Param("p", int, None, "endpoints per router (default (u+1)/2 = k'/3)", lo=0),
    ],
    summary="BDF graph P_u * G_{k'/3} (Bermond-Delorme-Farhi), diameter 3",
    reference="000 Sec. II-C, II-C1",
    size=bdf_size,
)
