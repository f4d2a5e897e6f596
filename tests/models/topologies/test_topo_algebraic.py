"""Invariant tests of the algebraic topologies: GF(q), Slim Fly, BDF, Galaxyfly, Dragonfly."""
import itertools

import networkx as nx
import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from models.core.errors import ParameterError
from models.gf import GF, delta_of, generator_sets, is_prime_power
from models.core.registry import TOPOLOGIES
from models.topology import build
from models.topologies.bdf import bdf, p_star_graph, polarity_graph
from models.topologies.dragonfly import dragonfly
from models.topologies.galaxyfly import galaxy_graph, galaxyfly
from models.topologies.slimfly import slim_fly


def distances(n, edges):
    """All-pairs hop distances of an undirected graph given as an (E, 2) edge array."""
    edges = np.asarray(edges)
    a = csr_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    return shortest_path(a, directed=False, unweighted=True)


def diameter(t):
    return int(distances(t.n_routers, t.links).max())


# ----------------------------------------------------------------------------- GF(q)

MODULI = {  # q: (coefficients c_0..c_m lowest first, xi), construction notes 0.1
    4: ((1, 1, 1), 2), 8: ((1, 1, 0, 1), 2), 9: ((2, 1, 1), 3), 16: ((1, 1, 0, 0, 1), 2),
    25: ((2, 1, 1), 5), 27: ((1, 2, 0, 1), 3), 32: ((1, 0, 1, 0, 0, 1), 2),
    49: ((3, 1, 1), 7), 64: ((1, 1, 0, 0, 0, 0, 1), 2), 81: ((2, 1, 0, 0, 1), 3),
    121: ((7, 1, 1), 11), 125: ((2, 3, 0, 1), 5), 128: ((1, 1, 0, 0, 0, 0, 0, 1), 2),
}
PRIMITIVE_ROOTS = {3: 2, 5: 2, 7: 3, 11: 2, 13: 2, 17: 3, 19: 2, 23: 5, 29: 2, 31: 3, 37: 2,
                   41: 6, 43: 3, 47: 5, 53: 2, 59: 2, 61: 2, 67: 2, 71: 7, 73: 5, 79: 3, 83: 2,
                   89: 3, 97: 5, 101: 2, 103: 5, 107: 2, 109: 6, 113: 3, 127: 3}


@pytest.mark.parametrize("q", sorted(MODULI))
def test_gf_canonical_modulus(q):
    """GF(p^m) uses the first primitive monic polynomial (table of 0.1) and xi = x = p."""
    F = GF(q)
    coeffs, xi = MODULI[q]
    assert F.modulus == coeffs and F.xi == xi == F.p


def test_gf_smallest_primitive_roots():
    """For prime q, xi is the smallest primitive root (list of 0.1)."""
    assert {p: GF(p).xi for p in PRIMITIVE_ROOTS} == PRIMITIVE_ROOTS


def test_is_prime_power():
    """is_prime_power returns (p, m) exactly for prime powers >= 2."""
    assert is_prime_power(2) == (2, 1) and is_prime_power(27) == (3, 3)
    assert is_prime_power(128) == (2, 7) and is_prime_power(121) == (11, 2)
    for q in (0, 1, 6, 10, 12, 36, 100, -4):
        assert is_prime_power(q) is None


@pytest.mark.parametrize("q", [2, 3, 4, 5, 7, 8, 9, 16, 25, 27, 49, 81, 128])
def test_gf_field_axioms(q):
    """Tables satisfy the field axioms; exp/log are inverse; addition is digit-wise mod p."""
    F = GF(q)
    e = np.arange(q)
    add, mul, sub = F.add, F.mul, F.sub
    assert np.array_equal(add, add.T) and np.array_equal(mul, mul.T)
    assert np.array_equal(add[0], e) and np.array_equal(mul[1], e) and np.all(mul[0] == 0)
    assert np.array_equal(add[e, F.neg], np.zeros(q, int))
    assert np.array_equal(sub, add[:, F.neg])
    assert np.all(mul[e[1:], F.inv[1:]] == 1)
    assert np.array_equal(np.sort(F.exp), e[1:]) and np.array_equal(F.exp[F.log[1:]], e[1:])
    rng = np.random.default_rng(q)
    a, b, c = rng.integers(0, q, (3, 4000))
    assert np.array_equal(add[add[a, b], c], add[a, add[b, c]])
    assert np.array_equal(mul[mul[a, b], c], mul[a, mul[b, c]])
    assert np.array_equal(mul[a, add[b, c]], add[mul[a, b], mul[a, c]])
    da = (a[:, None] // F.p ** np.arange(F.m)) % F.p
    db = (b[:, None] // F.p ** np.arange(F.m)) % F.p
    assert np.array_equal(add[a, b], (((da + db) % F.p) * F.p ** np.arange(F.m)).sum(1))
    if F.m == 1:
        assert np.array_equal(mul, np.outer(e, e) % q)


@pytest.mark.parametrize("q", [3, 4, 5, 7, 8, 9, 11, 13, 16, 17, 19, 23, 25, 27, 29, 31, 32, 49])
def test_generator_sets(q):
    """X = -X, X' = -X', X' = xi X, X u X' = GF(q)* with the overlap and sizes of 0.2."""
    F = GF(q)
    X, Xp, delta = generator_sets(q)
    assert delta == delta_of(q) and (q - delta) % 4 == 0
    assert set(F.neg[X]) == set(X) and set(F.neg[Xp]) == set(Xp)
    assert set(F.mul[F.xi, X]) == set(Xp)
    assert set(X) | set(Xp) == set(range(1, q))
    assert len(X) == len(Xp) == (q - delta) // 2
    overlap = {1: set(), -1: {1, int(F.neg[1])}, 0: {1}}[delta]
    assert set(X) & set(Xp) == overlap


# ----------------------------------------------------------------------------- Slim Fly

SF_Q = [3, 4, 5, 7, 8, 9, 11, 13, 16, 17, 19, 23, 25, 27]


@pytest.mark.parametrize("q", SF_Q)
def test_slimfly_invariants(q):
    """SF(q): 2q^2 routers, q^2 k' links, regular of degree k' = (3q-delta)/2, diameter 2."""
    t = slim_fly(q)
    delta = delta_of(q)
    k = (3 * q - delta) // 2
    assert t.n_routers == 2 * q * q and t.n_links == q * q * k
    assert np.all(t.degree == k) and t.params["k_net"] == k
    assert diameter(t) == 2
    assert np.all(t.endpoints == (k + 1) // 2)


def test_slimfly_q19_endpoints():
    """SF(19) with p = 15 (the default) has 10,830 endpoints and router radix 44 (000 Sec. V)."""
    t = slim_fly(19, 15)
    assert t.n_endpoints == 10830 and t.params["radix"] == 44
    assert slim_fly(19).n_endpoints == 10830


def test_slimfly_q5_is_hoffman_singleton():
    """SF(5) is isomorphic to the Hoffman-Singleton graph."""
    g = slim_fly(5).to_networkx()
    assert nx.vf2pp_is_isomorphic(g, nx.hoffman_singleton_graph())


@pytest.mark.parametrize("q", [7, 8, 9])
def test_slimfly_racks(q):
    """Racks {(0,i,.)} u {(1,i,.)}: q(q-delta)/2 + q links inside, 2q links between every pair."""
    t = slim_fly(q)
    delta = delta_of(q)
    gu, gv = t.group[t.links[:, 0]], t.group[t.links[:, 1]]
    inside = np.bincount(gu[gu == gv], minlength=q)
    assert np.all(inside == q * (q - delta) // 2 + q)
    pair = np.zeros((q, q), int)
    np.add.at(pair, (gu[gu != gv], gv[gu != gv]), 1)
    pair = pair + pair.T
    assert np.all(pair[~np.eye(q, dtype=bool)] == 2 * q)
    assert t.group_kind == "rack" and np.all(np.bincount(t.group) == 2 * q)
    assert np.array_equal(t.link_class, (gu != gv).astype(np.int8))


def test_slimfly_p_rounding():
    """Default p is ceil(k'/2); p_rounding='floor' gives floor(k'/2); any p >= 0 is accepted."""
    assert slim_fly(5).params["p"] == 4 and slim_fly(5, p_rounding="floor").params["p"] == 3
    assert slim_fly(7).params["p"] == 6 and slim_fly(7, p_rounding="floor").params["p"] == 5
    assert slim_fly(8).params["p"] == slim_fly(8, p_rounding="floor").params["p"] == 6
    assert slim_fly(19, 18).n_endpoints == 18 * 722 and slim_fly(5, 0).n_endpoints == 0


def test_slimfly_labels():
    """Router (s,x,y) has id s q^2 + x q + y and (0,x,m x + c) ~ (1,m,c)."""
    q = 7
    F = GF(q)
    t = slim_fly(q)
    links = set(map(tuple, t.links.tolist()))
    for x, m, c in itertools.product(range(q), repeat=3):
        assert (x * q + int(F.add[F.mul[m, x], c]), q * q + m * q + c) in links


# ----------------------------------------------------------------------------- BDF

@pytest.mark.parametrize("d", range(2, 11))
def test_p_star_family(d):
    """G_d is d-regular on 2d vertices with d^2 edges, diameter <= 2 and property P* for f = XOR 1."""
    e = p_star_graph(d)
    n = 2 * d
    assert len(e) == d * d and len({tuple(x) for x in e.tolist()}) == d * d
    assert np.all(np.bincount(e.ravel(), minlength=n) == d)
    dist = distances(n, e)
    assert dist.max() <= 2
    adj = dist == 1
    f = np.arange(n) ^ 1
    assert not np.any(adj[np.arange(n), f])
    for v in range(n):
        cover = {v, int(f[v])} | set(f[np.nonzero(adj[v])[0]].tolist()) \
            | set(np.nonzero(adj[f[v]])[0].tolist())
        assert cover == set(range(n))
    # equivalently G u f(G) u {v f(v)} = K_2d
    union = adj | adj[np.ix_(f, f)]
    union[np.arange(n), f] = True
    assert np.all(union | np.eye(n, dtype=bool))


@pytest.mark.parametrize("u", [3, 5, 7, 9])
def test_polarity_graph(u):
    """ER_u has u^2+u+1 points, u+1 absolute ones of degree u, the others degree u+1, diameter 2."""
    pts, e, absolute = polarity_graph(u)
    n = u * u + u + 1
    assert len(pts) == n and absolute.sum() == u + 1
    deg = np.bincount(e.ravel(), minlength=n)
    assert np.all(deg[absolute] == u) and np.all(deg[~absolute] == u + 1)
    assert distances(n, e).max() == 2


@pytest.mark.parametrize("u", [3, 5, 7, 9])
def test_bdf_invariants(u):
    """BDF(u): N_r = (u^2+u+1)(u+1) = 000's formula in k', regular degree 3(u+1)/2, diameter 3."""
    t = bdf(u)
    k = 3 * (u + 1) // 2
    n_r = (u * u + u + 1) * (u + 1)
    assert t.n_routers == n_r and 27 * n_r == 8 * k ** 3 - 12 * k ** 2 + 18 * k
    assert np.all(t.degree == k)
    assert diameter(t) == 3
    assert np.all(t.endpoints == (u + 1) // 2) and t.group_kind == "supernode"


def test_bdf_supernodes():
    """Adjacent supernodes share a perfect matching of u+1 links; absolute ones have d^2+d inside."""
    u = 5
    d = (u + 1) // 2
    t = bdf(u)
    _, e, absolute = polarity_graph(u)
    gu, gv = t.group[t.links[:, 0]], t.group[t.links[:, 1]]
    inside = np.bincount(gu[gu == gv], minlength=len(absolute))
    assert np.all(inside == np.where(absolute, d * d + d, d * d))
    pairs, counts = np.unique(np.stack([gu[gu != gv], gv[gu != gv]], 1), axis=0, return_counts=True)
    assert np.array_equal(pairs, e) and np.all(counts == u + 1)


def test_bdf_large_sizes():
    """BDF(19, p=13) has 7,620 routers and 99,060 endpoints."""
    t = bdf(19, 13)
    assert t.n_routers == 7620 and t.n_endpoints == 99060 and np.all(t.degree == 30)


# ----------------------------------------------------------------------------- Galaxyfly

TABLE5 = [  # (n, q, a, p), router radix r, diameter, N_r  (004 Table 5)
    ((11, 29, 1, 10), 34, 2, 319), ((15, 29, 1, 7), 35, 2, 435),
    ((56, 1, 11, 5), 20, 3, 616), ((81, 1, 10, 4), 21, 3, 810),
    ((11, 29, 2, 5), 18, 4, 638), ((15, 37, 2, 3), 20, 4, 1110),
    ((11, 37, 4, 2), 12, 5, 1628), ((15, 29, 4, 2), 12, 5, 1740),
]


@pytest.mark.parametrize("cfg,r,diam,n_r", TABLE5)
def test_galaxyfly_table5(cfg, r, diam, n_r):
    """Every row of 004 Table 5: router count, radix p + (a-1) + h and diameter."""
    t = galaxyfly(*cfg)
    assert t.n_routers == n_r
    assert t.params["radix"] == r and int((t.degree + t.endpoints).max()) == r
    assert diameter(t) == diam


@pytest.mark.parametrize("cfg,n_r", [
    ((9, 1, 4, 2), 36), ((19, 1, 6, 3), 114), ((33, 1, 8, 4), 264), ((55, 1, 10, 5), 550),
    ((73, 1, 12, 6), 876), ((5, 7, 4, 2), 140), ((9, 19, 6, 3), 1026), ((17, 31, 8, 4), 4216),
    ((30, 53, 10, 5), 15900), ((37, 73, 12, 6), 32412)])
def test_galaxyfly_table3_sizes(cfg, n_r):
    """The N_r column of 004 Table 3."""
    assert galaxyfly(*cfg).n_routers == n_r


@pytest.mark.parametrize("a,p,routers,radix", [(8, 3, 9800, 16), (3, 8, 3675, 26), (4, 6, 4900, 21),
                                               (6, 4, 7350, 17), (1, 24, 1225, 72)])
def test_galaxyfly_table6(a, p, routers, radix):
    """Router counts, radices and 29,400 terminals of the GF(25,49,a,p) columns of 004 Table 6."""
    t = galaxyfly(25, 49, a, p)
    assert t.n_routers == routers and t.params["radix"] == radix and t.n_endpoints == 29400


@pytest.mark.parametrize("cfg,diam", [
    ((1, 1, 6, 2), 1), ((7, 1, 1, 2), 1), ((5, 13, 1, 2), 2), ((3, 9, 1, 2), 2),
    ((9, 1, 4, 2), 3), ((2, 1, 3, 1), 3), ((13, 1, 4, 2), 3)])
def test_galaxyfly_special_cases(cfg, diam):
    """004 Table 2: K_a / K_n have diameter 1, the Galaxy graph (a=1) 2, q=1 (a Dragonfly) 3."""
    assert diameter(galaxyfly(*cfg)) == diam


@pytest.mark.parametrize("n,q", [(3, 5), (4, 7), (3, 8), (2, 9), (5, 13), (1, 11)])
def test_galaxy_graph(n, q):
    """Galaxy graph: regular of degree n-1+(q-delta)/2, diameter <= 2, q links per cluster pair."""
    e, inter, delta = galaxy_graph(n, q)
    deg = np.bincount(e.ravel(), minlength=n * q)
    assert np.all(deg == n - 1 + (q - delta) // 2)
    assert distances(n * q, e).max() <= 2
    cu, cv = e[inter, 0] // q, e[inter, 1] // q
    assert np.all(cu != cv) and np.all(e[~inter, 0] // q == e[~inter, 1] // q)
    if n > 1:
        assert np.all(np.unique(cu * n + cv, return_counts=True)[1] == q)


def test_galaxy_h_example():
    """H(x) = xi x gives the 004 example H = (0,2,4,1,3) for q = 5."""
    e, inter, _ = galaxy_graph(2, 5)
    h = {int(b) - 5: int(a) for a, b in e[inter]}
    assert [h[x] for x in range(5)] == [0, 2, 4, 1, 3]


def test_galaxyfly_structure():
    """Supernodes are K_a, global links per router are floor/ceil(D_g/a), classes and clusters."""
    n, q, a = 5, 7, 3
    t = galaxyfly(n, q, a, 2)
    d_g = n - 1 + (q + 1) // 2
    gu, gv = t.group[t.links[:, 0]], t.group[t.links[:, 1]]
    local = gu == gv
    assert np.all(np.bincount(gu[local], minlength=n * q) == a * (a - 1) // 2)
    glob = np.bincount(t.links[~local].ravel(), minlength=t.n_routers)
    assert set(glob.tolist()) <= {d_g // a, -(-d_g // a)} and t.params["h"] == -(-d_g // a)
    cl = t.meta["cluster"]
    assert cl.dtype == np.int32 and np.array_equal(cl, np.arange(t.n_routers) // (a * q))
    names = t.link_class_names
    assert names == ("local", "global_intra_cluster", "global_inter_cluster")
    expect = np.where(local, 0, np.where(cl[t.links[:, 0]] == cl[t.links[:, 1]], 1, 2))
    assert np.array_equal(t.link_class, expect)


def test_galaxyfly_round_robin():
    """The j-th Galaxy neighbour (ascending id) of a supernode is served by router j mod a."""
    n, q, a = 3, 5, 2
    t = galaxyfly(n, q, a, 1)
    e, _, _ = galaxy_graph(n, q)
    links = set(map(tuple, t.links.tolist()))
    for s in range(n * q):
        nb = sorted(set(e[e[:, 0] == s, 1].tolist()) | set(e[e[:, 1] == s, 0].tolist()))
        for j, other in enumerate(nb):
            jo = sorted(set(e[e[:, 0] == other, 1].tolist())
                        | set(e[e[:, 1] == other, 0].tolist())).index(s)
            r1, r2 = s * a + j % a, other * a + jo % a
            assert (min(r1, r2), max(r1, r2)) in links


def test_galaxyfly_explicit_h():
    """An explicit h >= ceil(D_g/a) is accepted and raises the radix only."""
    t = galaxyfly(5, 7, 4, 2, h=3)
    assert t.params["h"] == 3 and t.params["radix"] == 2 + 3 + 3
    assert t.n_links == galaxyfly(5, 7, 4, 2).n_links


def test_galaxyfly_large_sizes():
    """GF(41,61,4,10) has 10,004 routers and 100,040 endpoints."""
    t = galaxyfly(41, 61, 4, 10)
    assert t.n_routers == 10004 and t.n_endpoints == 100040


# ----------------------------------------------------------------------------- Dragonfly

@pytest.mark.parametrize("h", [1, 2, 3, 4])
def test_dragonfly_balanced(h):
    """Balanced DF(h): 2h(2h^2+1) routers, regular degree 3h-1, diameter 3, one link per group pair."""
    t = dragonfly(h)
    a, g = 2 * h, 2 * h * h + 1
    assert t.n_routers == a * g and np.all(t.degree == 3 * h - 1)
    assert np.all(t.endpoints == h) and t.params["radix"] == 4 * h - 1
    assert diameter(t) == 3
    gu, gv = t.group[t.links[:, 0]], t.group[t.links[:, 1]]
    pairs = gu[gu != gv] * g + gv[gu != gv]
    assert len(pairs) == g * (g - 1) // 2 == len(np.unique(pairs))
    assert np.array_equal(t.link_class, (gu != gv).astype(np.int8))


@pytest.mark.parametrize("h,a,g", [(1, None, None), (2, None, None), (3, None, None),
                                   (4, None, None), (2, 3, 5), (3, 4, 10)])
def test_dragonfly_closed_form(h, a, g):
    """Global links are exactly (G1, floor((G2-1)/h)) -- (G2, floor(G1/h)) for G1 < G2."""
    t = dragonfly(h, a, g=g)
    a, g = t.params["a"], t.params["g"]
    expect = {tuple(sorted((g1 * a + (g2 - 1) // h, g2 * a + g1 // h)))
              for g1 in range(g) for g2 in range(g1 + 1, g)}
    expect |= {(G * a + i, G * a + j) for G in range(g) for i in range(a) for j in range(i + 1, a)}
    assert set(map(tuple, t.links.tolist())) == expect


def test_dragonfly_general():
    """General (h, a, p, g): g <= a h + 1 groups; with fewer groups some global ports stay unused."""
    t = dragonfly(2, 4, 3, 6)
    assert t.n_routers == 24 and t.n_endpoints == 72 and t.degree.max() <= 3 + 2
    assert diameter(t) <= 3
    assert dragonfly(a=4, g=9).params["h"] == 2


@pytest.mark.parametrize("h", [1, 2, 3, 4])
def test_dragonfly_booksim_global_arrangement(h):
    """The balanced Dragonfly's global links are BookSim's dragonflynew's: global port c of router
    r of group G leads to the j-th other group (j = r h + c; group j if j < G, else j + 1)."""
    t = dragonfly(h)
    a, g = 2 * h, 2 * h * h + 1
    want = set()
    for G in range(g):
        for r in range(a):
            for c in range(h):
                j = r * h + c
                other = j if j < G else j + 1
                back = G if G < other else G - 1          # G is the back-th other group of `other`
                u, v = G * a + r, other * a + back // h
                want.add((min(u, v), max(u, v)))
    glob = {tuple(map(int, e)) for e in t.links[t.link_class == 1]}
    assert glob == want


def test_dragonfly_link_latencies():
    """local_latency/global_latency put the latency of every link in meta (both or neither)."""
    t = dragonfly(2, local_latency=10, global_latency=100)
    lat = t.meta["link_latency"]
    assert lat.shape == (t.n_links,)
    assert set(lat[t.link_class == 0]) == {10} and set(lat[t.link_class == 1]) == {100}
    assert "link_latency" not in dragonfly(2).meta
    with pytest.raises(ParameterError, match="topology.local_latency: "):
        dragonfly(2, local_latency=10)


# ----------------------------------------------------------------------------- errors, registry

@pytest.mark.parametrize("func,kwargs,key", [
    (slim_fly, dict(q=6), "q"), (slim_fly, dict(q=10), "q"), (slim_fly, dict(q=2), "q"),
    (slim_fly, dict(q=0), "q"), (slim_fly, dict(q=5, p=-1), "p"),
    (bdf, dict(u=4), "u"), (bdf, dict(u=2), "u"), (bdf, dict(u=15), "u"), (bdf, dict(u=-3), "u"),
    (galaxyfly, dict(n=11, q=29, a=2, p=5, h=8), "h"), (galaxyfly, dict(n=5, q=2, a=2, p=2), "q"),
    (galaxyfly, dict(n=0, q=5, a=2, p=2), "n"), (galaxyfly, dict(n=3, q=5, a=0, p=2), "a"),
    (galaxyfly, dict(n=3, q=6, a=2, p=2), "q"), (galaxyfly, dict(n=3, q=5, a=2, p=-1), "p"),
    (dragonfly, dict(h=0), "h"), (dragonfly, dict(h=2, g=10), "g"), (dragonfly, dict(h=2, a=0), "a"),
])
def test_bad_parameters(func, kwargs, key):
    """Invalid parameters raise a one-line ParameterError starting with topology.<key>:."""
    with pytest.raises(ParameterError) as info:
        func(**kwargs)
    msg = str(info.value)
    assert msg.startswith(f"topology.{key}:") and "\n" not in msg


def test_error_messages():
    """The messages name the rule (construction notes 1-4)."""
    with pytest.raises(ParameterError, match=r"q=6 is not a prime power \(q must be a prime power"):
        slim_fly(6)
    with pytest.raises(ParameterError, match="congruent to 2 mod 4"):
        slim_fly(2)
    with pytest.raises(ParameterError, match="BDF u=4 must be an odd prime power"):
        bdf(4)
    with pytest.raises(ParameterError, match=r"a\*h = 8 < n-1\+\(q-delta\)/2 = 12"):
        galaxyfly(7, 13, 2, 2, h=4)


def test_registered_and_buildable_from_config():
    """All four families are registered and build from untyped config values."""
    for name in ("slimfly", "bdf", "galaxyfly", "dragonfly"):
        assert name in TOPOLOGIES
        assert build(name).n_routers > 0
    assert build("slimfly", {"q": "7", "p_rounding": "floor"}).n_routers == 98
    assert build("galaxyfly", {"n": "3", "q": "5", "a": "2", "p": "1"}).n_routers == 30
    assert build("dragonfly", {"h": "3"}).n_routers == 114
    with pytest.raises(ParameterError, match=r"^topology\.u:"):
        build("bdf", {"u": "4"})
