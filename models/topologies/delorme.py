"""Delorme (DEL) diameter-3 graphs from the generalized quadrangle W(v) (000 Sec. II-C)."""
from __future__ import annotations

import numpy as np

from models.core.errors import ParameterError
from ..gf import GF, is_prime_power
from models.core.registry import Param, TOPOLOGIES
from ..topology import Topology, TopologySize, check_build, from_edges


def symplectic_quadrangle(v: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The generalized quadrangle W(v) of order (v, v): its points and lines.

    Points are the 1-dimensional subspaces of GF(v)^4, each given by its vector
    whose first nonzero coordinate is 1, in lexicographic order; lines are the
    2-dimensional subspaces on which the symplectic form
    ``B(x, y) = x0 y2 + x1 y3 - x2 y0 - x3 y1`` vanishes, ordered by their
    reduced row-echelon basis (pivot columns, then entries, lexicographic).
    Returns ``(points, on_line, through)``: the ``(n, 4)`` point vectors, the
    ``(n, v+1)`` ids of the points on each line and the ``(n, v+1)`` ids of
    the lines through each point (both sorted), with ``n = (v+1)(v^2+1)``
    points and as many lines.
    """
    F = GF(v)
    e = np.arange(v, dtype=np.int64)
    vec = np.stack([g.ravel() for g in np.meshgrid(e, e, e, e, indexing="ij")], axis=1)
    lead = vec[np.arange(len(vec)), np.argmax(vec != 0, axis=1)]
    points = vec[lead == 1]
    weight = v ** np.arange(3, -1, -1, dtype=np.int64)
    index = np.full(v ** 4, -1, dtype=np.int64)      # base-v code of a normalised vector -> id
    index[points @ weight] = np.arange(len(points))

    r1s, r2s = [], []                                  # RREF bases, pivots i < j (6 patterns)
    for i in range(4):
        for j in range(i + 1, 4):
            free1 = [c for c in range(i + 1, 4) if c != j]
            free2 = list(range(j + 1, 4))
            grid = np.meshgrid(*([e] * (len(free1) + len(free2))), indexing="ij")
            vals = np.stack([g.ravel() for g in grid], axis=1) if grid else np.zeros((1, 0), np.int64)
            r1 = np.zeros((len(vals), 4), dtype=np.int64)
            r2 = np.zeros((len(vals), 4), dtype=np.int64)
            r1[:, i] = 1
            r2[:, j] = 1
            r1[:, free1] = vals[:, :len(free1)]
            r2[:, free2] = vals[:, len(free1):]
            r1s.append(r1)
            r2s.append(r2)
    r1, r2 = np.concatenate(r1s), np.concatenate(r2s)
    m = F.mul
    form = F.sub[F.add[m[r1[:, 0], r2[:, 2]], m[r1[:, 1], r2[:, 3]]],
                 F.add[m[r1[:, 2], r2[:, 0]], m[r1[:, 3], r2[:, 1]]]]
    r1, r2 = r1[form == 0], r2[form == 0]              # totally isotropic: the lines
    # the v+1 points of a line: r1 + b r2 (b in GF(v)) and r2
    span = F.add[r1[:, None, :], F.mul[e[None, :, None], r2[:, None, :]]]
    span = np.concatenate([span, r2[:, None, :]], axis=1)            # (lines, v+1, 4)
    first = np.take_along_axis(span, np.argmax(span != 0, axis=2)[..., None], axis=2)
    on_line = np.sort(index[F.mul[F.inv[first], span] @ weight], axis=1)
    n = len(points)
    order = np.argsort(on_line.ravel(), kind="stable")
    through = (order // (v + 1)).reshape(n, v + 1)   # lines in increasing id per point
    return points, on_line, through


def delorme(v: int = 2, p: int | None = None) -> Topology:
    """Delorme graph of the prime power ``v``: point-line pairs of W(v).

    Router ``(x, L)`` (``x`` a point, ``L`` a line of the generalized quadrangle
    W(v), see :func:`symplectic_quadrangle`) has id ``x*n + L`` with ``n =
    (v+1)(v^2+1)``.  Routers ``(x, L)`` and ``(y, M)`` are linked iff ``x`` lies
    on ``M`` and ``y`` lies on ``L``.

    Parameters
    ----------
    v : int
        Prime power (2, 3, 4, 5, 7, 8, 9, ...), the order of W(v).
    p : int, optional
        Endpoints per router, default ``ceil(k'/3)`` with ``k' = (v+1)^2`` (the
        000 Sec. II-B2 balance argument ``p ~ k'/(average distance)`` with the
        average distance of a diameter-3 graph taken as 3; a proposal, as for
        ``bdf``, not from the literature).

    Returns
    -------
    Topology
        ``(v+1)^2 (v^2+1)^2`` routers, network radix ``k' = (v+1)^2``,
        diameter 3.  A router ``(x, L)`` with ``x`` on ``L`` (a flag; there
        are ``(v+1)^2 (v^2+1)``) would be its own neighbour and has ``k' - 1``
        links, every other router ``k'``.  ``group`` is the point ``x``
        (``(v+1)(v^2+1)`` routers each, ``group_kind="group"``); a link
        inside a group joins two flags of the same point.

    Raises
    ------
    ParameterError
        If v is not a prime power, or p < 0.

    Notes
    -----
    000 gives only ``N_r = (v+1)^2 (v^2+1)^2`` and ``k' = (v+1)^2`` and cites
    Delorme (1985), which could not be obtained.  This generator is a
    construction with exactly those counts: the quotient of the direct
    (tensor) product of the incidence graph of W(v) with itself by the
    swap of the two factors.  Diameter 3 for every prime power: a walk of
    length 3 from ``(x, L)`` to ``(y, M)`` is a pair of walks of length 3 in
    the incidence graph, from ``x`` to ``M`` and from ``L`` to ``y``; both
    exist because a point and a line of a generalized quadrangle are at
    distance 1 or 3 in its incidence graph (diameter 4, bipartite) and a
    walk of length 1 extends to 3.  Whether it is isomorphic to Delorme's
    own graph is unknown; its invariants are those 000 states.

    References
    ----------
    000 Sec. II-C (DEL graphs, N_r and k', Fig. 5b: 68% of the Moore bound).
    """
    delorme_size(v, p)
    k_net = (v + 1) ** 2
    if p is None:
        p = -(-k_net // 3)
    _, on_line, through = symplectic_quadrangle(v)
    n = len(on_line)
    x = np.arange(n, dtype=np.int64)[:, None, None, None]
    line = np.arange(n, dtype=np.int64)[None, :, None, None]
    u = x * n + line                                           # (n, n, 1, 1)
    w = on_line[None, :, None, :] * n + through[:, None, :, None]   # (n, n, v+1, v+1)
    u, w = np.broadcast_arrays(u, w)
    keep = u < w                                               # each link once, no loops
    group = np.repeat(np.arange(n, dtype=np.int64), n)
    params = {"v": v, "p": p, "k_net": k_net, "radix": k_net + p, "points": n}
    return from_edges("delorme", params, n * n, u[keep], w[keep], p, group,
                      group_kind="group", what="topology.v: Delorme")


def delorme_size(v: int = 2, p: int | None = None) -> TopologySize:
    """``(v+1)^2 (v^2+1)^2`` routers, ``((v+1)^2 N_r - flags) / 2`` links, ``p`` endpoints
    each (default ``ceil((v+1)^2/3)``); refuses what :func:`delorme` refuses before building."""
    if is_prime_power(v) is None:
        raise ParameterError(f"topology.v: Delorme v={v} must be a prime power")
    n = (v + 1) * (v * v + 1)
    k_net = (v + 1) ** 2
    n_r = n * n
    flags = n * (v + 1)
    directed = n_r * k_net
    size = TopologySize(n_r, (directed - flags) // 2, n_r * (-(-k_net // 3) if p is None else p),
                        work_bytes=25 * directed)      # the int64 pair arrays and the mask
    check_build(size.routers, size.links, "topology.v")
    return size


delorme = TOPOLOGIES.register(
    "delorme", delorme,
    params=[
        Param("v", int, 2, "prime power (order of the generalized quadrangle W(v))", lo=2),
        Param("p", int, None, "endpoints per router (default ceil((v+1)^2/3) = ceil(k'/3))",
              lo=0),
    ],
    summary="Delorme graph (point-line pairs of the quadrangle W(v)), diameter 3",
    reference="000 Sec. II-C",
    size=delorme_size,
)
