"""Galaxy graph and Galaxyfly GF(n, q, a, p, h) (construction notes 3)."""
from __future__ import annotations

import numpy as np

from models.core.errors import ParameterError
from ..gf import GF, delta_of, generator_sets, is_prime_power
from models.core.registry import Hook, Param, TOPOLOGIES
from ..topology import Topology, TopologySize, check_build, from_edges

LINK_CLASSES = ("local", "global_intra_cluster", "global_inter_cluster")


def galaxy_graph(n: int, q: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Supernode-level Galaxy graph of n clusters of q nodes.

    Node ``(t, x)`` has id ``t*q + x``.  Intra-cluster: ``(t,x) ~ (t,y)`` iff
    ``x - y`` in X; inter-cluster: ``(t,x) ~ (s, xi*x)`` for every ``s < t``.
    q = 1 gives K_n.  Returns ``(edges, inter, delta)``: the ``(E, 2)`` edges
    (``u < v``), a boolean mask of inter-cluster edges, and delta (1 for q = 1).
    Assumes valid (n, q); see :func:`galaxyfly`.
    """
    t = np.arange(n, dtype=np.int64)
    if q == 1:
        s_, t_ = np.triu_indices(n, 1)
        e = np.stack([s_, t_], axis=1).astype(np.int64)
        return e, np.ones(len(e), dtype=bool), 1
    F = GF(q)
    X, _, delta = generator_sets(q)
    x = np.arange(q, dtype=np.int64)
    # intra-cluster Cayley graphs Cay(GF(q), X), each edge once
    y = F.sub[x[:, None], np.asarray(X)[None, :]]                     # (q, |X|)
    xx, yy = np.broadcast_arrays(x[:, None], y)
    keep = xx < yy
    iu = (t[:, None] * q + xx[keep][None, :]).ravel()
    iv = (t[:, None] * q + yy[keep][None, :]).ravel()
    # inter-cluster matchings (t, x) -- (s, xi*x), s < t
    s_, t_ = np.triu_indices(n, 1)
    hx = F.mul[F.xi, x]
    ou = (s_[:, None] * q + hx[None, :]).ravel()
    ov = (t_[:, None] * q + x[None, :]).ravel()
    u = np.concatenate([iu, ou])
    v = np.concatenate([iv, ov])
    e = np.stack([np.minimum(u, v), np.maximum(u, v)], axis=1)
    inter = np.concatenate([np.zeros(len(iu), bool), np.ones(len(ou), bool)])
    return e, inter, delta


def galaxyfly(n: int = 5, q: int = 7, a: int = 4, p: int = 2, h: int | None = None) -> Topology:
    """Galaxyfly GF(n, q, a, p, h): a Galaxy graph whose nodes are K_a supernodes.

    Supernode ``S = t*q + x`` (cluster ``t``, field element ``x``) holds
    routers ``S*a + r``, ``r`` in ``[0, a)``, fully connected.  Every Galaxy
    edge ``{S, T}`` becomes one router link.  Supernode S lists its Galaxy
    neighbours in increasing id and the j-th one is served by router
    ``j mod a`` (round-robin), so each router has ``floor(D_g/a)`` or
    ``ceil(D_g/a)`` global links, ``D_g = n - 1 + (q - delta)/2``.

    Parameters
    ----------
    n : int
        Number of clusters, ``n >= 1``.
    q : int
        Supernodes per cluster: 1, or a prime power with ``q mod 4 != 2``.
    a : int
        Routers per supernode, ``a >= 1``.
    p : int
        Endpoints per router, ``p >= 0``.
    h : int, optional
        Global ports per router; default ``ceil(D_g / a)``.  Must satisfy
        ``a*h >= D_g``; extra ports stay unused.

    Returns
    -------
    Topology
        ``n*q*a`` routers, router radix ``p + (a-1) + h``.  ``group`` is the
        supernode id ``S`` (``group_kind="supernode"``), ``meta["cluster"]``
        the cluster of each router (int32).  Link classes ``local`` (inside a
        supernode), ``global_intra_cluster``, ``global_inter_cluster``.

    Raises
    ------
    ParameterError
        If n, a < 1, p < 0, q is neither 1 nor a prime power with
        ``q mod 4 != 2``, or ``a*h < D_g``.

    Notes
    -----
    H(x) = xi*x maps Cay(F, X) onto Cay(F, X') (X' = xi X), reproducing the
    004 example H = (0, 2, 4, 1, 3) for q = 5.  The router that carries a
    global link is not specified in 004; the round-robin rule reproduces all
    diameters of 004 Table 5.  004 writes ``h = n - 1 + (q - delta)/2a``,
    read as ``ceil((n - 1 + (q - delta)/2) / a)``.  For q = 1, delta = 1.
    Diameters (004 Table 2): 1 for K_a or K_n (q = 1 and n = 1 or a = 1),
    2 for a = 1 < q (Galaxy graph), 3 for q = 1 < a, n > 1 (a Dragonfly),
    at most 5 in general.

    References
    ----------
    004 Sec. 2.1 (Galaxy graph, Lemma 2.2, Thm 2.1), Sec. 2.2 and Tables 1-2
    (Galaxyfly), Tables 3, 5, 6 (configurations).
    """
    galaxyfly_size(n, q, a, p, h)
    delta = 1 if q == 1 else generator_sets(q)[2]
    d_g = n - 1 + (q - delta) // 2
    if h is None:
        h = -(-d_g // a)

    gedges, inter, _ = galaxy_graph(n, q)
    n_super = n * q
    E = len(gedges)
    # round-robin slots: rank of T among the sorted neighbours of S, mod a
    src = np.concatenate([gedges[:, 0], gedges[:, 1]])
    dst = np.concatenate([gedges[:, 1], gedges[:, 0]])
    order = np.lexsort((dst, src))
    start = np.zeros(n_super + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n_super), out=start[1:])
    rank = np.empty(2 * E, dtype=np.int64)
    rank[order] = np.arange(2 * E) - start[src[order]]
    slot = rank % a
    gu = gedges[:, 0] * a + slot[:E]
    gv = gedges[:, 1] * a + slot[E:]
    # K_a inside every supernode
    i, j = np.triu_indices(a, 1)
    sbase = (np.arange(n_super, dtype=np.int64) * a)[:, None]
    lu = (sbase + i[None, :]).ravel()
    lv = (sbase + j[None, :]).ravel()

    cls = np.concatenate([np.zeros(len(lu), np.int8),
                          np.where(inter, 2, 1).astype(np.int8)])
    n_r = n_super * a
    routers = np.arange(n_r, dtype=np.int64)
    params = {"n": n, "q": q, "a": a, "p": p, "h": h, "delta": delta, "degree_galaxy": d_g,
              "radix": p + (a - 1) + h, "xi": GF(q).xi if q > 1 else 1}
    return from_edges("galaxyfly", params, n_r,
                      np.concatenate([lu, gu]), np.concatenate([lv, gv]),
                      p, routers // a, link_class=cls, link_class_names=LINK_CLASSES,
                      group_kind="supernode",
                      meta={"cluster": (routers // (a * q)).astype(np.int32)},
                      what="topology: Galaxyfly")


def galaxyfly_size(n: int = 5, q: int = 7, a: int = 4, p: int = 2,
                   h: int | None = None) -> TopologySize:
    """``n q a`` routers, ``p`` endpoints each; links: ``a(a-1)/2`` in every supernode, and one
    per Galaxy edge (``q (q - delta)/4`` in a cluster, ``q`` between two clusters); refuses
    what :func:`galaxyfly` refuses before building."""
    if not (q == 1 or (is_prime_power(q) is not None and q % 4 != 2)):
        raise ParameterError(f"topology.q: Galaxy graph q={q!r} must be 1 or a prime power "
                             "q = 4l+delta (q != 2)")
    delta = 1 if q == 1 else delta_of(q)
    n_r = n * q * a
    galaxy = n * q * (q - delta) // 4 + q * n * (n - 1) // 2
    size = TopologySize(n_r, n * q * a * (a - 1) // 2 + galaxy, n_r * p)
    check_build(size.routers, size.links, "topology.q")
    d_g = n - 1 + (q - delta) // 2
    if h is not None and a * h < d_g:
        raise ParameterError(f"topology.h: Galaxyfly a*h = {a * h} < n-1+(q-delta)/2 = {d_g}")
    return size


def worst_case(topo, seed):
    """Galaxyfly worst case: every endpoint of cluster ``i`` sends to cluster ``i+1`` (004 Sec. 5)."""
    from ..traffic import TrafficPlan
    from ..traffic.worst_case import group_shift
    return TrafficPlan("table", group_shift(topo, topo.meta["cluster"], "cluster"),
                       "Galaxyfly worst case: cluster i -> cluster i+1")


galaxyfly = TOPOLOGIES.register(
    "galaxyfly", galaxyfly,
    params=[
        Param("n", int, 5, "number of clusters", lo=1),
        Param("q", int, 7, "supernodes per cluster: 1 or a prime power, q mod 4 != 2", lo=1),
        Param("a", int, 4, "routers per supernode", lo=1),
        Param("p", int, 2, "endpoints per router", lo=0),
        Param("h", int, None, "global ports per router (default ceil((n-1+(q-delta)/2)/a))",
              lo=0),
    ],
    summary="Galaxyfly GF(n,q,a,p,h): Galaxy graph of K_a supernodes, diameter <= 5",
    reference="004 Sec. 2.1-2.2, Tables 1-2",
    size=galaxyfly_size,
    worst_case=Hook(worst_case, "cluster i sends to cluster i+1", "004 Sec. 5"),
)
