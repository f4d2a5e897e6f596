"""Random regular router graphs (Jellyfish) and the shared configuration-model builder."""
from __future__ import annotations

import numpy as np

from models.core.errors import ParameterError
from models.core.registry import Param, TOPOLOGIES
from ..topology import Topology, TopologySize, check_build, from_edges


def balanced_p(degree: int) -> int:
    """Largest ``p`` with ``p <= sqrt(degree + p)``: 000 Sec. III's ``p = floor(sqrt(k))`` for DLN."""
    p = 1
    while (p + 1) ** 2 <= degree + p + 1:
        p += 1
    return p


def _components(n: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    from scipy.sparse import coo_matrix   # scipy loaded only when used
    from scipy.sparse.csgraph import connected_components
    g = coo_matrix((np.ones(u.size, np.int8), (u, v)), shape=(n, n))
    return connected_components(g, directed=False)[1]


def regular_edges(n: int, d: int, rng: np.random.Generator, forbidden: set | None = None,
                  connected: bool = True, key: str = "degree",
                  family: str = "random_regular") -> tuple[np.ndarray, np.ndarray]:
    """Edges ``(u, v)`` of a simple ``d``-regular graph on ``n`` vertices.

    Configuration model (random stub pairing), then repair: every self-loop,
    repeated pair or pair in ``forbidden`` (keys ``min*n + max``) is removed
    by a double-edge swap ``(a,b), (c,d) -> (a,c), (b,d)`` with a uniformly
    chosen valid edge.  With ``connected``, components are then merged by
    swaps between an edge of one component and an edge of another (a swap
    that does not reduce the number of components is undone).  Every random
    draw comes from ``rng``, so the result is a pure function of the seed.
    Requires ``n*d`` even and ``d < n``.
    """
    forbidden = forbidden or set()
    if d == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if not forbidden and 2 * d > n - 1 and d < n:
        # dense: the complement of a sparse random regular graph (always connected)
        cu, cv = regular_edges(n, n - 1 - d, rng, connected=False, key=key, family=family)
        full = np.ones((n, n), dtype=bool)
        full[cu, cv] = full[cv, cu] = False
        u, v = np.nonzero(np.triu(full, 1))
        return u.astype(np.int64), v.astype(np.int64)
    stubs = rng.permutation(np.repeat(np.arange(n, dtype=np.int64), d))
    a = np.minimum(stubs[0::2], stubs[1::2])
    b = np.maximum(stubs[0::2], stubs[1::2])
    keys = a * n + b
    n_e = keys.size
    order = np.argsort(keys, kind="stable")
    bad = np.zeros(n_e, dtype=bool)
    srt = keys[order]
    bad[order[1:][srt[1:] == srt[:-1]]] = True
    bad |= a == b
    if forbidden:
        bad |= np.isin(keys, np.fromiter(forbidden, np.int64, len(forbidden)))
    present = set(keys[~bad].tolist())
    a = a.tolist()
    b = b.tolist()
    good = (~bad).tolist()

    def _key(x, y):
        return x * n + y if x < y else y * n + x

    budget = 2000 + 200 * int(bad.sum())
    for i in np.nonzero(bad)[0].tolist():
        x, y = a[i], b[i]
        while True:
            budget -= 1
            if budget < 0:
                raise ParameterError(f"topology.{key}: {family} could not place a simple "
                                     f"{d}-regular graph on {n} routers (too dense)")
            j = int(rng.integers(n_e))
            if not good[j]:
                continue
            c, e = (a[j], b[j]) if rng.random() < 0.5 else (b[j], a[j])
            if x == c or y == e:
                continue
            k1, k2 = _key(x, c), _key(y, e)
            if k1 == k2 or k1 in present or k2 in present or k1 in forbidden or k2 in forbidden:
                continue
            present.discard(_key(a[j], b[j]))
            present.add(k1)
            present.add(k2)
            a[i], b[i] = x, c
            a[j], b[j] = y, e
            good[i] = True
            break
    u = np.array(a, dtype=np.int64)
    v = np.array(b, dtype=np.int64)
    if connected:
        labels = _components(n, u, v)
        n_comp = int(labels.max()) + 1
        tries = 0
        while n_comp > 1:
            tries += 1
            if tries > 1000 * n_comp:
                raise ParameterError(f"topology.{key}: {family} could not connect a "
                                     f"{d}-regular graph on {n} routers")
            edge_comp = labels[u]
            e1 = rng.choice(np.nonzero(edge_comp == labels[0])[0])
            e2 = rng.choice(np.nonzero(edge_comp != labels[0])[0])
            old = (u[e1], v[e1], u[e2], v[e2])
            u[e1], v[e1], u[e2], v[e2] = old[0], old[2], old[1], old[3]
            new_labels = _components(n, u, v)
            if int(new_labels.max()) + 1 < n_comp:
                labels, n_comp = new_labels, int(new_labels.max()) + 1
            else:
                u[e1], v[e1], u[e2], v[e2] = old
    return u, v


def random_regular(routers: int = 64, degree: int = 8, p: int | None = None, seed: int = 0,
                   group_size: int = 16) -> Topology:
    """Connected random ``degree``-regular router graph (Jellyfish).

    Parameters
    ----------
    routers : int
        Number of routers, ``>= 2``.
    degree : int
        Network degree, ``1 <= degree < routers``, ``routers*degree`` even;
        ``degree = 1`` only for 2 routers (otherwise the graph cannot be
        connected).
    p : int, optional
        Endpoints per router, ``>= 0``; default the 000 Sec. III rule for
        random topologies, ``p = floor(sqrt(k))`` with router radix
        ``k = degree + p`` (largest ``p`` with ``p^2 <= degree + p``).
    seed : int
        Seed of the numpy ``default_rng`` stream; the graph is a pure
        function of ``(routers, degree, seed)``.
    group_size : int
        Routers per rack, ``>= 1``: ``group = id // group_size``
        (``group_kind="rack"``), default 16.

    Returns
    -------
    Topology
        ``routers`` routers, all of degree ``degree``,
        ``routers*degree/2`` links, connected.  Link classes ``local``
        (same rack) and ``global``.

    Raises
    ------
    ParameterError
        If ``routers*degree`` is odd, ``degree >= routers``, ``degree < 1``
        (or 1 with more than 2 routers), or ``p``, ``group_size`` are out
        of range.

    Notes
    -----
    Built with the configuration model plus double-edge-swap repair
    (:func:`regular_edges`), which is vectorised except for the few
    repaired pairs (``O(degree^2)`` expected); for ``degree > (routers-1)/2``
    it takes the complement of a sparse random regular graph.  Jellyfish's
    incremental construction gives the same family of graphs (uniform
    random regular graphs) but a different sample for a given seed.

    References
    ----------
    Singla et al., "Jellyfish" (NSDI 2012); 000 Sec. III (random
    topologies); 002 Sec. III-A (Random baseline).
    """
    random_regular_size(routers, degree, p, seed, group_size)
    p = balanced_p(degree) if p is None else p
    rng = np.random.default_rng(seed)
    u, v = regular_edges(routers, degree, rng)
    params = {"routers": routers, "degree": degree, "p": p, "seed": seed, "group_size": group_size}
    return from_edges("random_regular", params, routers, u, v, p,
                      np.arange(routers) // group_size, group_kind="rack",
                      what="topology: random_regular")


REPAIR_BYTES = 160
"""Bytes per edge of :func:`regular_edges`'s repair step beyond its numpy arrays: the edge
ends as Python lists and the set of present pairs (measured: about 150)."""


def repair_bytes(n: int, d: int) -> int:
    """Memory the repair step of :func:`regular_edges` takes for a sparse ``d``-regular graph
    on ``n`` vertices (its Python lists and set), beyond the numpy edge arrays."""
    return REPAIR_BYTES * (n * d // 2)


def random_regular_size(routers: int = 64, degree: int = 8, p: int | None = None, seed: int = 0,
                        group_size: int = 16) -> TopologySize:
    """``routers`` routers of degree ``degree``, ``p`` endpoints each; refuses what
    :func:`random_regular` refuses before building."""
    check_build(routers, routers * min(degree, routers) // 2, "topology.routers")
    if degree >= routers:
        raise ParameterError(f"topology.degree: random_regular degree = {degree} must be < "
                             f"routers = {routers} (simple graph)")
    if (routers * degree) % 2:
        raise ParameterError(f"topology.degree: random_regular routers*degree = {routers}*{degree} "
                             "must be even")
    if degree == 1 and routers > 2:
        raise ParameterError("topology.degree: random_regular degree = 1 cannot give a connected "
                             "graph with more than 2 routers")
    p = balanced_p(degree) if p is None else p
    if 2 * degree > routers - 1:   # the complement of a sparse graph, through two R x R masks
        work = repair_bytes(routers, routers - 1 - degree) + 2 * routers * routers
    else:
        work = repair_bytes(routers, degree)
    return TopologySize(routers, routers * degree // 2, routers * p, work_bytes=work)


random_regular = TOPOLOGIES.register(
    "random_regular", random_regular,
    params=[
        Param("routers", int, 64, "number of routers", lo=2),
        Param("degree", int, 8, "network degree (routers*degree even, degree < routers)", lo=1),
        Param("p", int, None, "endpoints per router (default floor(sqrt(degree+p)), 000 Sec. III)",
              lo=0),
        Param("seed", int, 0, "random seed (numpy default_rng)", lo=0),
        Param("group_size", int, 16, "routers per rack (group = id // group_size)", lo=1),
    ],
    summary="connected random regular graph (Jellyfish)",
    reference="Singla et al. NSDI 2012; 000 Sec. III",
    size=random_regular_size,
)
