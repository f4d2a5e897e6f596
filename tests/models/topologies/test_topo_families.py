"""Structural invariants of the fat tree, MLFM, OFT, HyperX, torus, hypercube, random and Skywalk families."""
import re

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components, shortest_path

from models.core.errors import ParameterError
from models.core.registry import TOPOLOGIES
from models.topology import build, size_of
from models.topologies.dln import dln
from models.topologies.fattree import fat_tree
from models.topologies.hypercube import hypercube
from models.topologies.hyperx import hyperx
from models.topologies.mlfm import mlfm
from models.topologies.oft import ml3b_table, oft
from models.topologies.random_regular import random_regular
from models.topologies.skywalk import skywalk
from models.topologies.torus import torus

MY_FAMILIES = ("fattree", "mlfm", "oft", "hyperx", "torus", "hypercube", "random_regular", "dln",
               "skywalk")


# ----------------------------------------------------------------- helpers
def adjacency(t):
    n = t.n_routers
    u, v = t.links[:, 0], t.links[:, 1]
    return coo_matrix((np.ones(2 * t.n_links), (np.r_[u, v], np.r_[v, u])), shape=(n, n)).tocsr()


def hops(t, sources=None):
    return shortest_path(adjacency(t), unweighted=True, directed=False, indices=sources)


def connected(t):
    return connected_components(adjacency(t), directed=False)[0] == 1


def edge_set(t):
    return set(map(tuple, t.links.tolist()))


# ----------------------------------------------------------------- fat trees
@pytest.mark.parametrize("k,oversub,pods", [(4, 1, None), (8, 1, None), (6, 2, None), (8, 3, None),
                                            (8, 1, 3), (12, 2, 5)])
def test_fattree_3level_closed_forms(k, oversub, pods):
    """3-level: pods*(k/2+u)+u*k/2 routers, pods*k/2*p endpoints, pods*k*u links, edge-edge diameter 4."""
    t = fat_tree(k=k, levels=3, oversub=oversub, pods=pods)
    P = k if pods is None else pods
    u = k // (oversub + 1)
    p = oversub * u
    half = k // 2
    n_edge, n_agg, n_core = P * half, P * u, u * half
    assert t.n_routers == n_edge + n_agg + n_core
    assert t.n_endpoints == P * half * p
    assert t.n_links == P * k * u
    level = t.meta["level"]
    assert np.bincount(level).tolist() == [n_edge, n_agg, n_core]
    assert np.all(t.endpoints[level == 0] == p) and np.all(t.endpoints[level > 0] == 0)
    assert np.all(t.degree[level == 0] == u)
    assert np.all(t.degree[level == 1] == k)
    assert np.all(t.degree[level == 2] == P)
    assert np.all(t.degree + t.endpoints <= k)
    d = hops(t, np.nonzero(level == 0)[0])[:, level == 0]
    assert d.max() == (4 if P > 1 else 2)
    # a pod is a group and every edge-agg link stays inside it
    same = t.group[t.links[:, 0]] == t.group[t.links[:, 1]]
    assert np.array_equal(same, t.link_class == 0)


@pytest.mark.parametrize("k", [4, 8, 44])
def test_fattree_3level_full_bisection(k):
    """Full-bisection k-ary fat tree: 5k^2/4 routers, k^3/4 endpoints (000 Sec. VI-B3: 5p^2, 2p^3)."""
    t = fat_tree(k=k)
    assert (t.n_routers, t.n_endpoints, t.n_links) == (5 * k * k // 4, k ** 3 // 4, k ** 3 // 2)
    assert t.n_groups == k + k // 2


def test_fattree_000_ft3_instance():
    """000 Sec. V FT-3 (k=44, p=22) has N_r = 1,452 and N = 10,648: the k-ary tree with k/2 pods."""
    t = fat_tree(k=44, pods=22)
    assert (t.n_routers, t.n_endpoints) == (1452, 10648)


@pytest.mark.parametrize("k,oversub,pods", [(4, 1, None), (8, 1, None), (12, 2, None), (6, 5, None),
                                            (8, 1, 5)])
def test_fattree_2level_closed_forms(k, oversub, pods):
    """Leaf-spine: pods+u routers, pods*p endpoints, pods*u links, leaf-leaf diameter 2."""
    t = fat_tree(k=k, levels=2, oversub=oversub, pods=pods)
    P = k if pods is None else pods
    u = k // (oversub + 1)
    p = k - u
    assert (t.n_routers, t.n_endpoints, t.n_links) == (P + u, P * p, P * u)
    leaf = t.meta["level"] == 0
    assert leaf.sum() == P
    assert np.all(t.degree[leaf] == u) and np.all(t.degree[~leaf] == P)
    assert np.all(t.endpoints[~leaf] == 0) and np.all(t.endpoints[leaf] == p)
    assert hops(t, np.nonzero(leaf)[0])[:, leaf].max() == 2
    if oversub == 1 and pods is None:  # 001 Sec. 2.2.1: 3r/2 routers, r^2/2 endpoints
        assert (t.n_routers, t.n_endpoints) == (3 * k // 2, k * k // 2)


@pytest.mark.parametrize("k,oversub,parallel,pods", [(36, 1, 3, None), (12, 1, 2, None),
                                                     (12, 2, 2, 3), (8, 1, 4, 2)])
def test_fattree_parallel_links_closed_forms(k, oversub, parallel, pods):
    """Leaf-spine with parallel links: pods + u/parallel routers, every leaf joined to every
    spine by exactly `parallel` links (each its own link and port pair), pods*u links,
    leaf-leaf distance 2."""
    t = fat_tree(k=k, levels=2, oversub=oversub, pods=pods, parallel=parallel)
    u = k // (oversub + 1)
    P = k // parallel if pods is None else pods
    assert (t.n_routers, t.n_endpoints, t.n_links) == (P + u // parallel, P * (k - u), P * u)
    pairs, mult = np.unique(t.links, axis=0, return_counts=True)
    assert pairs.shape[0] == P * (u // parallel) and np.all(mult == parallel)
    leaf = t.meta["level"] == 0
    assert np.all(t.degree[leaf] == u) and np.all(t.degree[~leaf] == P * parallel)
    assert np.array_equal(t.port_peer[t.port_peer], np.arange(2 * t.n_links))
    assert np.array_equal(t.port_link[t.port_peer], t.port_link)
    assert hops(t, np.nonzero(leaf)[0])[:, leaf].max() == 2


def test_fattree_ft2_of_003_and_table4():
    """003 Sec. 6's FT2 (36-port switches: 12 leaves, 6 spines, 3 links per leaf-spine pair,
    216 endpoints) is k=36, levels=2, parallel=3; 003 Table 4's FT2, FT2-B (3:1) and FT3 of
    36/40/64 ports and the 2,048-node FT2 are fattree parameter sets, HX2 hyperx ones
    (endpoints, switches, links)."""
    ft2 = fat_tree(k=36, levels=2, parallel=3)
    assert (int((ft2.meta["level"] == 0).sum()), int((ft2.meta["level"] == 1).sum()),
            ft2.n_endpoints, int(ft2.degree.max())) == (12, 6, 216, 36)
    table4 = [("fattree", {"k": 36, "levels": 2}, (648, 54, 648)),
              ("fattree", {"k": 36, "levels": 2, "oversub": 3}, (972, 45, 324)),
              ("fattree", {"k": 36}, (11664, 1620, 23328)),
              ("hyperx", {"sizes": [13, 13], "p": 12}, (2028, 169, 2028)),
              ("fattree", {"k": 40, "levels": 2}, (800, 60, 800)),
              ("fattree", {"k": 40, "levels": 2, "oversub": 3}, (1200, 50, 400)),
              ("fattree", {"k": 40}, (16000, 2000, 32000)),
              ("hyperx", {"sizes": [14, 14], "p": 14}, (2744, 196, 2548)),
              ("fattree", {"k": 64, "levels": 2}, (2048, 96, 2048)),
              ("fattree", {"k": 64, "levels": 2, "oversub": 3}, (3072, 80, 1024)),
              ("fattree", {"k": 64}, (65536, 5120, 131072)),
              ("hyperx", {"sizes": [22, 22], "p": 22}, (10648, 484, 10164)),
              ("hyperx", {"sizes": [13, 13], "p": 13}, (2197, 169, 2028))]
    for name, params, want in table4:
        s = size_of(name, params)
        assert (s.endpoints, s.routers, s.links) == want, (name, params)


@pytest.mark.parametrize("kwargs,key", [({"k": 8, "parallel": 2}, "topology.parallel"),
                                        ({"k": 12, "levels": 2, "parallel": 4},
                                         "topology.parallel"),
                                        ({"k": 12, "levels": 2, "parallel": 2, "pods": 7},
                                         "topology.pods")])
def test_fattree_parallel_refusals(kwargs, key):
    """Parallel links only in 2 levels, dividing the leaf's uplinks, and at most k/parallel
    leaves: a ParameterError naming the key, from the size hook as from the generator."""
    with pytest.raises(ParameterError, match=rf"^{key}: "):
        size_of("fattree", kwargs)
    with pytest.raises(ParameterError, match=rf"^{key}: "):
        build("fattree", kwargs)


def test_fattree_parallel_links_fail_together_and_carry_traffic():
    """A fault "u-v" names every parallel link between u and v; min routing spreads uniform
    traffic over all parallel links (every channel carries flits), delivered in 0 or 2 hops,
    and its channel dependency graph is acyclic with 2 hop classes; METIS finds the N/2 cut."""
    from models.analysis.bisection import bisection
    from models.faults import parse_links
    from models.routing.cdg import check
    from pdes.build import plan_routing
    from pdes.engine import run_local
    from tests.helpers import make_cfg
    t = fat_tree(k=12, levels=2, parallel=3)
    ids = parse_links("4-0", t)
    assert ids.size == 3 and np.all(t.links[ids] == [0, 4])
    assert bisection(t)["links_cut"] == t.n_endpoints // 2
    sets = ["topology.name=fattree", "topology.k=12", "topology.levels=2", "topology.parallel=3",
            "router.link_latency=2"]
    topo, dist, plan, nv = plan_routing(make_cfg(*sets, preset="plan"))
    assert check(topo, dist, plan, nv)["ok"] and plan.vcs_needed == 2
    res = run_local(make_cfg(*sets, "traffic.load=0.5", preset="routing"))
    assert res["summary"]["accepted_load"] == pytest.approx(0.5, rel=0.05)
    assert set(np.nonzero(res["hist_hops"])[0].tolist()) <= {0, 2}
    assert np.all(np.asarray(res["link_flits"]) > 0)


# ----------------------------------------------------------------- MLFM
@pytest.mark.parametrize("h", [1, 2, 3, 5, 15])
def test_mlfm_closed_forms(h):
    """h-MLFM: R = 3h(h+1)/2, N = h^3+h^2, h^2(h+1) links, LR degree h, GR degree 2h."""
    t = mlfm(h)
    assert t.n_routers == 3 * h * (h + 1) // 2
    assert t.n_endpoints == h ** 3 + h ** 2
    assert t.n_links == h * h * (h + 1)
    lr = t.meta["role"] == 0
    assert lr.sum() == h * (h + 1)
    assert np.all(t.degree[lr] == h) and np.all(t.degree[~lr] == 2 * h)
    assert np.all(t.endpoints[lr] == h) and np.all(t.endpoints[~lr] == 0)


@pytest.mark.parametrize("h", [2, 3, 5, 15])
def test_mlfm_distances(h):
    """Any two LRs are at distance exactly 2; router-graph diameter 4 (h >= 3) or 3 (h = 2)."""
    t = mlfm(h)
    d = hops(t)
    lr = np.nonzero(t.meta["role"] == 0)[0]
    dl = d[np.ix_(lr, lr)]
    assert np.all(dl[~np.eye(lr.size, dtype=bool)] == 2)
    assert d.max() == (4 if h >= 3 else 3)
    # same column: h two-hop paths, otherwise exactly one (001 Sec. 2.3.3)
    a = adjacency(t)
    two = (a @ a).toarray()[np.ix_(lr, lr)]
    col = t.meta["column"][lr]
    off = ~np.eye(lr.size, dtype=bool)
    same_col = col[:, None] == col[None, :]
    assert np.all(two[off & same_col] == h) and np.all(two[off & ~same_col] == 1)


def test_mlfm_h15_matches_001():
    """h = 15 gives N = 3600 and R = 360 (001 Sec. 4)."""
    t = mlfm(15)
    assert (t.n_endpoints, t.n_routers) == (3600, 360)


# ----------------------------------------------------------------- OFT
TABLE2 = """0 9 10 11 12
1 9 0 1 2
2 9 3 4 5
3 9 6 7 8
4 10 0 3 6
5 10 1 4 7
6 10 2 5 8
7 11 0 4 8
8 11 1 5 6
9 11 2 3 7
10 12 0 5 7
11 12 1 3 8
12 12 2 4 6"""


def test_oft_table2_exact():
    """The 4-ML3B table is exactly 001 Table 2, and OFT(4) links follow it row by row."""
    expected = np.array([list(map(int, line.split()))[1:] for line in TABLE2.splitlines()])
    assert np.array_equal(ml3b_table(4), expected)
    t = oft(4)
    r_l = 13
    for level in (0, 2):
        for i in range(r_l):
            nb = t.neighbors(level * r_l + i)
            assert sorted(nb - r_l) == sorted(expected[i])


@pytest.mark.parametrize("k", [3, 4, 5, 6, 8, 9, 10, 12])
def test_oft_closed_forms_and_distances(k):
    """k-OFT: R = 3k^2-3k+3, N = 2k^3-2k^2+2k, 2k*R_L links, endpoint routers at distance 2, diameter 3."""
    t = oft(k)
    r_l = k * k - k + 1
    assert t.n_routers == 3 * k * k - 3 * k + 3
    assert t.n_endpoints == 2 * k ** 3 - 2 * k ** 2 + 2 * k
    assert t.n_links == 2 * k * r_l
    assert np.all(t.degree + t.endpoints == 2 * k)
    level = t.meta["level"]
    assert np.all(t.degree[level == 1] == 2 * k) and np.all(t.endpoints[level == 1] == 0)
    d = hops(t)
    ep = np.nonzero(level != 1)[0]
    de = d[np.ix_(ep, ep)]
    assert np.all(de[~np.eye(ep.size, dtype=bool)] == 2)
    assert d.max() == 3
    # unique 2-hop path except between (0,i) and (2,i), which have k
    a = adjacency(t)
    two = (a @ a).toarray()[np.ix_(ep, ep)]
    twin = np.zeros_like(two, dtype=bool)
    twin[np.arange(r_l), r_l + np.arange(r_l)] = twin[r_l + np.arange(r_l), np.arange(r_l)] = True
    off = ~np.eye(ep.size, dtype=bool)
    assert np.all(two[twin] == k) and np.all(two[off & ~twin] == 1)


def test_oft_k12_matches_001():
    """k = 12 gives N = 3192 and R = 399 (001 Sec. 4)."""
    t = oft(12)
    assert (t.n_endpoints, t.n_routers) == (3192, 399)


def test_oft_groups_are_pods_plus_spines():
    """OFT(4) pods have 9, 7, 7, 7 routers and the (k-1)^2 square L1 routers form k-1 spine groups of k-1."""
    t = oft(4)
    assert np.bincount(t.group).tolist() == [9, 7, 7, 7, 3, 3, 3]


# ----------------------------------------------------------------- HyperX
@pytest.mark.parametrize("sizes", [[4, 4, 4], [3, 5], [2, 3, 4], [1, 4], [5], [2, 2, 2, 2], [1]])
def test_hyperx_closed_forms(sizes):
    """HyperX: prod(S) routers of degree sum(S_i-1), prod(S)*sum(S_i-1)/2 links, diameter = #dims > 1."""
    t = hyperx(sizes)
    n = int(np.prod(sizes))
    deg = sum(s - 1 for s in sizes)
    assert t.n_routers == n
    assert np.all(t.degree == deg)
    assert t.n_links == n * deg // 2
    assert t.n_endpoints == n * sizes[0]
    assert hops(t, [0]).max() == sum(s > 1 for s in sizes)
    assert connected(t)
    # a link joins routers that differ in exactly the dimension of its class
    coords = np.stack(np.unravel_index(np.arange(n), sizes[::-1]), axis=1)[:, ::-1]
    diff = coords[t.links[:, 0]] != coords[t.links[:, 1]]
    assert np.all(diff.sum(axis=1) == 1)
    assert np.array_equal(np.argmax(diff, axis=1), t.link_class)


def test_hyperx_is_fbf3():
    """FBF-3 (000 Sec. VI-B3): p-router full-mesh groups, p^2 groups, p links between groups in a row/column."""
    p = 4
    t = hyperx([p, p, p])
    assert t.n_groups == p * p and np.all(np.bincount(t.group) == p)
    assert np.all(t.endpoints == p) and np.all(t.degree + t.endpoints == 4 * p - 3)
    ga, gb = t.group[t.links[:, 0]], t.group[t.links[:, 1]]
    assert (ga == gb).sum() == p * p * p * (p - 1) // 2
    pair, cnt = np.unique(np.minimum(ga, gb)[ga != gb] * p * p + np.maximum(ga, gb)[ga != gb],
                          return_counts=True)
    assert np.all(cnt == p) and pair.size == 2 * p * (p * (p - 1) // 2)


def test_hyperx_and_torus_build_at_scale():
    """HyperX 16x16x16 and torus 32x32x32 have all their links (build time: bench_topology.py)."""
    h = hyperx([16, 16, 16])
    tor = torus([32, 32, 32])
    assert h.n_links == 4096 * 45 // 2 and tor.n_links == 3 * 32768


def test_hyperx_grid_latency():
    """grid_latency [cx, cy]: a link takes cx |dcolumn| + cy |drow| cycles on a grid of sizes[0]
    columns; two integers >= 1 or none."""
    t = hyperx([4, 4], p=4, grid_latency=[2, 3])
    lat = {tuple(map(int, e)): int(x) for e, x in zip(t.links, t.meta["link_latency"])}
    assert lat[(0, 3)] == 6 and lat[(1, 13)] == 9 and lat[(5, 6)] == 2
    assert sorted(set(lat.values())) == [2, 3, 4, 6, 9]
    assert "link_latency" not in hyperx([4, 4]).meta
    with pytest.raises(ParameterError, match="topology.grid_latency: "):
        hyperx([4, 4], grid_latency=[2])


# ----------------------------------------------------------------- torus
@pytest.mark.parametrize("dims", [[4, 4, 4], [8, 16, 16], [2, 3, 5], [3], [2], [1, 5], [1, 1],
                                  [2, 1, 6], [4, 4, 4, 4, 2]])
def test_torus_closed_forms(dims):
    """Torus: size >= 3 gives 2 links per router, size 2 one, size 1 none; diameter sum(floor(D_i/2))."""
    t = torus(dims)
    n = int(np.prod(dims))
    deg = sum(2 if s > 2 else (1 if s == 2 else 0) for s in dims)
    assert t.n_routers == n and t.n_endpoints == n
    assert np.all(t.degree == deg)
    assert t.n_links == sum(n if s > 2 else (n // 2 if s == 2 else 0) for s in dims)
    assert hops(t, [0]).max() == sum(s // 2 for s in dims)
    assert connected(t)
    assert np.all(np.bincount(t.group) == dims[0])


@pytest.mark.parametrize("dims", [[4, 4], [8, 8], [2, 3, 5], [3], [1, 5], [5, 1, 2]])
def test_mesh_closed_forms(dims):
    """Mesh (wrap = false): prod(D) (D_i - 1) / D_i links per dimension, diameter sum(D_i - 1),
    and exactly the torus's links without the wraparound ones (x_i = D_i - 1 to 0)."""
    t = torus(dims, wrap=False)
    n = int(np.prod(dims))
    assert t.n_routers == n and t.n_endpoints == n
    assert t.n_links == sum(n * (s - 1) // s for s in dims)
    assert hops(t, [0]).max() == sum(s - 1 for s in dims)
    assert connected(t)
    strides = np.cumprod([1] + dims[:-1])
    wraps = {(int(a), int(b)) for a, b in torus(dims).links
             if any(abs(a // st % s - b // st % s) == s - 1 > 1 for st, s in zip(strides, dims))}
    assert edge_set(t) == edge_set(torus(dims)) - wraps
    assert t.params["wrap"] is False and build("torus", {"dims": dims, "wrap": "false"}).n_links \
        == t.n_links


# ----------------------------------------------------------------- hypercube
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 11])
def test_hypercube_closed_forms(n):
    """Hypercube: 2^n routers of degree n, n*2^(n-1) links, diameter n, equal to the 2x...x2 torus."""
    t = hypercube(n)
    assert t.n_routers == 2 ** n and np.all(t.degree == n)
    assert t.n_links == n * 2 ** (n - 1)
    assert hops(t, [0]).max() == n
    assert edge_set(t) == edge_set(torus([2] * n))
    assert np.all(np.bincount(t.group) == 2 ** min(n, 4))
    assert np.array_equal(t.link_class, np.log2(t.links[:, 0] ^ t.links[:, 1]).astype(int))


# ----------------------------------------------------------------- random
@pytest.mark.parametrize("routers,degree", [(64, 8), (100, 3), (50, 2), (10, 9), (11, 6), (1000, 24),
                                            (2, 1)])
def test_random_regular_is_regular_and_connected(routers, degree):
    """random_regular: every router has the given degree, the graph is simple and connected."""
    t = random_regular(routers, degree, seed=7)
    assert t.n_routers == routers and np.all(t.degree == degree)
    assert t.n_links == routers * degree // 2
    assert connected(t)


def test_random_regular_seeded():
    """random_regular is a pure function of the seed and differs across seeds."""
    a, b, c = (random_regular(200, 6, seed=s) for s in (1, 1, 2))
    assert np.array_equal(a.links, b.links)
    assert not np.array_equal(a.links, c.links)


def test_random_regular_large():
    """A 10K-router degree-24 random regular graph builds, regular and connected."""
    t = random_regular(10000, 24, seed=3)
    assert np.all(t.degree == 24) and connected(t)


@pytest.mark.parametrize("routers,y", [(64, 4), (100, 3), (30, 0), (8, 5), (9, 4), (1000, 10)])
def test_dln_ring_plus_shortcuts(routers, y):
    """DLN-2-y: the ring is present, every router has y shortcuts (degree 2+y), connected."""
    t = dln(routers, y, seed=5)
    assert np.all(t.degree == 2 + y)
    ring = {(min(i, (i + 1) % routers), max(i, (i + 1) % routers)) for i in range(routers)}
    edges = edge_set(t)
    assert ring <= edges
    sc = t.links[t.link_class == 1]
    assert not ring & set(map(tuple, sc.tolist()))
    assert np.all(np.bincount(sc.ravel(), minlength=routers) == y)
    assert connected(t)


def test_dln_seeded():
    """DLN is a pure function of the seed and differs across seeds."""
    a, b, c = (dln(200, 4, seed=s) for s in (3, 3, 4))
    assert np.array_equal(a.links, b.links)
    assert not np.array_equal(a.links, c.links)


def test_random_default_p_follows_000():
    """Default p is 000 Sec. III's floor(sqrt(k)) for random topologies, k = degree + p."""
    for degree in (3, 8, 24, 40):
        p = random_regular(100, degree if degree % 2 == 0 else degree + 1).params["p"]
        k = (degree if degree % 2 == 0 else degree + 1) + p
        assert p == int(np.floor(np.sqrt(k)))


# ----------------------------------------------------------------- Skywalk
def cable_m(t):
    """Cable metres per link with the 002 Sec. III-A model."""
    rc = t.meta["cabinet_rc"]
    ca, cb = t.group[t.links[:, 0]], t.group[t.links[:, 1]]
    inter = 4 + 0.6 * np.abs(rc[ca, 1] - rc[cb, 1]) + 2.1 * np.abs(rc[ca, 0] - rc[cb, 0])
    return np.where(ca == cb, 2.0, inter)


@pytest.fixture(scope="module")
def sky256():
    return skywalk(8, 256, 7, 4)


def check_skywalk(t):
    z, d_i, d_o = t.params["z"], t.params["d_i"], t.params["d_o"]
    assert t.degree.max() <= d_i + d_o
    assert connected(t)
    rc = t.meta["cabinet_rc"]
    ca, cb = t.group[t.links[:, 0]], t.group[t.links[:, 1]]
    assert np.array_equal(t.group, np.arange(t.n_routers) // z)
    # classes
    same_r, same_c = rc[ca, 0] == rc[cb, 0], rc[ca, 1] == rc[cb, 1]
    cls = np.array(t.link_class_names)[t.link_class]
    assert np.all((cls == "intra_cabinet") == (ca == cb))
    assert np.all(same_r[cls == "straight"] ^ same_c[cls == "straight"])
    assert np.all(~same_r[cls == "diagonal"] & ~same_c[cls == "diagonal"])
    # no parallel cabinet links
    inter = ca != cb
    pairs = np.minimum(ca, cb)[inter] * t.n_groups + np.maximum(ca, cb)[inter]
    assert np.unique(pairs).size == pairs.size
    # per-switch class counts bounded by d_i, d_s, d_d
    for name, bound in (("intra_cabinet", d_i), ("straight", t.params["d_s"]),
                        ("diagonal", t.params["d_d"])):
        ends = t.links[cls == name].ravel()
        assert np.bincount(ends, minlength=t.n_routers).max(initial=0) <= bound


def test_skywalk_256_invariants(sky256):
    """Skywalk(8,256,7,4): degree <= 11, connected, classes right, no parallel cabinet links, d_s = 4."""
    check_skywalk(sky256)
    assert sky256.params["d_s"] == 4 and sky256.params["d_d"] == 0
    assert (sky256.params["rows"], sky256.params["cols"]) == (16, 16)
    assert not np.any(np.array(sky256.link_class_names)[sky256.link_class] == "diagonal")


def test_skywalk_256_cable_length(sky256):
    """Skywalk(8,256,7,4) has about 58 km of cable (002 Sec. III-B: 59 km; construction notes: 57.6 km)."""
    km = cable_m(sky256).sum() / 1000
    assert 56.0 <= km <= 61.0


def test_skywalk_straight_first():
    """With d_o > d_smax, d_s = d_smax and each cabinet's counter serves its straight links before diagonal ones."""
    t = skywalk(z=4, c=16, d_i=3, d_o=4, seed=1)
    assert (t.params["d_s"], t.params["d_d"]) == (2, 2)      # d_smax = ceil(6/4), d_dmax = ceil(9/4)
    check_skywalk(t)
    z = 4
    names = np.array(t.link_class_names)[t.link_class]
    for cab in range(16):
        sw = np.arange(cab * z, cab * z + z)
        counts = {}
        for name in ("straight", "diagonal"):
            l = t.links[names == name]
            mine = np.concatenate([l[:, 0][np.isin(l[:, 0], sw)], l[:, 1][np.isin(l[:, 1], sw)]])
            counts[name] = np.bincount(mine - cab * z, minlength=z)
        n_s, n_d = counts["straight"].sum(), counts["diagonal"].sum()
        slot = np.arange(n_s + n_d) % z
        assert np.array_equal(counts["straight"], np.bincount(slot[:n_s], minlength=z))
        assert np.array_equal(counts["diagonal"], np.bincount(slot[n_s:], minlength=z))
    assert (names == "diagonal").any()


def test_skywalk_straight_only_when_enough():
    """With d_o <= d_smax, only straight inter-cabinet links are built."""
    t = skywalk(z=4, c=64, d_i=3, d_o=3)
    check_skywalk(t)
    assert t.params["d_d"] == 0
    assert not np.any(np.array(t.link_class_names)[t.link_class] == "diagonal")


# sha256 of links + link_class of the straight-first build before topology.d_d existed
SKYWALK_STRAIGHT_FIRST_SHA = {
    (4, 16, 3, 4, 1): "4bde0b7a3b02239cd4b6fad5243b0884e0cf065b1f55f8413a4688536e60eb5b",
    (8, 64, 7, 2, 0): "a74899f6fc7d27497100527b72ae0b6f3c4149fe2b01bf8afefea17ced09b7cd",
}


@pytest.mark.parametrize("key", sorted(SKYWALK_STRAIGHT_FIRST_SHA))
def test_skywalk_default_mix_unchanged(key):
    """Without d_d, and with d_d = the straight-first value, the build is bit-for-bit the one from before the option."""
    import hashlib
    z, c, d_i, d_o, seed = key
    default = skywalk(z=z, c=c, d_i=d_i, d_o=d_o, seed=seed)
    given = skywalk(z=z, c=c, d_i=d_i, d_o=d_o, seed=seed, d_d=default.params["d_d"])
    for t in (default, given):
        sha = hashlib.sha256(t.links.tobytes() + t.link_class.tobytes()).hexdigest()
        assert sha == SKYWALK_STRAIGHT_FIRST_SHA[key]


def test_skywalk_mix_sets_straight_and_diagonal_counts():
    """d_d sets the mix: d_s = d_o - d_d straight and d_d diagonal links per switch at most, none of a zero class, and more of a class as its share grows."""
    counts = []
    for d_d in (0, 1, 2):
        t = skywalk(z=8, c=64, d_i=7, d_o=2, d_d=d_d)
        assert (t.params["d_s"], t.params["d_d"]) == (2 - d_d, d_d)
        check_skywalk(t)
        names = np.array(t.link_class_names)[t.link_class]
        n_s, n_d = int((names == "straight").sum()), int((names == "diagonal").sum())
        assert n_s <= 8 * 64 * (2 - d_d) // 2 and n_d <= 8 * 64 * d_d // 2
        assert (n_s == 0) == (d_d == 2) and (n_d == 0) == (d_d == 0)
        counts.append((n_s, n_d))
    assert counts[0][0] > counts[1][0] > counts[2][0]
    assert counts[0][1] < counts[1][1] < counts[2][1]


def test_skywalk_seeded(sky256):
    """Skywalk is a pure function of (seed, tries); another seed gives another instance."""
    again = skywalk(8, 256, 7, 4)
    assert np.array_equal(again.links, sky256.links) and again.meta["seed_used"] == sky256.meta["seed_used"]
    other = skywalk(8, 256, 7, 4, seed=100)
    assert not np.array_equal(other.links, sky256.links)


def test_skywalk_keeps_connected_instance_with_most_links(sky256):
    """The kept instance is the connected one with the most links, ties to the smaller seed."""
    counts = sky256.meta["links_per_seed"]
    assert sky256.n_links == max(counts)
    assert sky256.meta["seed_used"] == sky256.params["seed"] + counts.index(max(counts))


def test_skywalk_r_limit_bounds_cables():
    """With r_limit = r every inter-cabinet Manhattan distance is at most r * l_max."""
    t = skywalk(z=4, c=64, d_i=3, d_o=3, r_limit=0.4)
    check_skywalk(t)
    m = cable_m(t)
    inter = t.group[t.links[:, 0]] != t.group[t.links[:, 1]]
    l_max = 0.6 * 7 + 2.1 * 7
    assert np.all(m[inter] - 4 <= 0.4 * l_max + 1e-9)


def test_skywalk_large_builds():
    """Skywalk(8,256,7,4) builds with 8 x 256 switches, connected."""
    t = skywalk(8, 256, 7, 4, seed=11)
    assert t.n_routers == 8 * 256 and connected(t)


# ----------------------------------------------------------------- errors and registry
BAD = [
    (oft, {"k": 7}, "k"), (oft, {"k": 2}, "k"), (oft, {"k": 11}, "k"),
    (mlfm, {"h": 0}, "h"),
    (fat_tree, {"k": 7}, "k"), (fat_tree, {"k": 8, "levels": 4}, "levels"),
    (fat_tree, {"k": 8, "oversub": 2}, "oversub"), (fat_tree, {"k": 8, "pods": 9}, "pods"),
    (torus, {"dims": [4, 0]}, "dims"), (torus, {"dims": []}, "dims"), (torus, {"p": -1}, "p"),
    (hyperx, {"sizes": [0, 3]}, "sizes"), (hypercube, {"n": 0}, "n"),
    (random_regular, {"routers": 5, "degree": 3}, "degree"),
    (random_regular, {"routers": 5, "degree": 5}, "degree"),
    (random_regular, {"routers": 6, "degree": 1}, "degree"),
    (dln, {"routers": 10, "shortcuts": 8}, "shortcuts"), (dln, {"routers": 9, "shortcuts": 3}, "shortcuts"),
    (dln, {"routers": 2, "shortcuts": 0}, "routers"),
    (skywalk, {"z": 8, "c": 256, "d_i": 9, "d_o": 4}, "d_i"),
    (skywalk, {"z": 8, "c": 16, "d_i": 7, "d_o": 4}, "d_o"),
    (skywalk, {"z": 4, "c": 4, "d_i": 3, "d_o": 1, "r_limit": 0.0}, "r_limit"),
    (skywalk, {"z": 4, "c": 4, "d_i": 0, "d_o": 0, "tries": 2}, "tries"),
    (skywalk, {"z": 4, "c": 16, "d_i": 3, "d_o": 3, "d_d": 4}, "d_d"),     # > d_o
    (skywalk, {"z": 8, "c": 16, "d_i": 7, "d_o": 3, "d_d": 3}, "d_d"),     # > d_dmax = 2
    (skywalk, {"z": 4, "c": 16, "d_i": 3, "d_o": 3, "d_d": 0}, "d_d"),     # d_s = 3 > d_smax = 2
    (skywalk, {"z": 4, "c": 16, "d_i": 3, "d_o": 3, "d_d": -1}, "d_d"),
]


@pytest.mark.parametrize("func,kwargs,key", BAD)
def test_bad_parameters_name_the_key(func, kwargs, key):
    """Invalid parameters raise a one-line ParameterError that starts with topology.<key>:."""
    with pytest.raises(ParameterError) as exc:
        func(**kwargs)
    msg = str(exc.value)
    assert msg.startswith(f"topology.{key}:") and "\n" not in msg


def test_error_messages_state_the_rule():
    """Messages quote the rule, e.g. OFT k-1 prime and Skywalk d_i <= z-1."""
    with pytest.raises(ParameterError, match=re.escape("topology.k: OFT k-1 = 6 must be prime")):
        oft(7)
    with pytest.raises(ParameterError, match=re.escape("topology.d_i: Skywalk d_i = 9 > d_imax = z-1 = 7")):
        skywalk(8, 256, 9, 4)
    with pytest.raises(ParameterError, match=re.escape("topology.h: must be >= 1 (got 0)")):
        mlfm(0)


@pytest.mark.parametrize("name", MY_FAMILIES)
def test_registered_and_buildable_by_name(name):
    """Each family is registered with documented parameters and builds from its defaults."""
    entry = TOPOLOGIES.get(name)
    assert entry.summary and entry.reference and all(p.doc for p in entry.params)
    doc = entry.func.__doc__
    for section in ("Parameters", "Raises", "References"):
        assert section in doc
    t = build(name, {})
    assert t.name == name and t.n_routers > 0 and connected(t)
    assert set(t.params) >= {p.name for p in entry.params}


def test_build_coerces_text_parameters():
    """Config text is coerced: sizes '4x4x2' and dims '3,3' reach the generators as lists."""
    assert build("hyperx", {"sizes": "4x4x2"}).n_routers == 32
    assert build("torus", {"dims": "3,3", "p": "2"}).n_endpoints == 18
