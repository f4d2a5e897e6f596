"""Tests of the physical layout (racks, cables, latencies) and the structural metrics."""
import itertools

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from models.core.errors import ParameterError
from models.layout import PRESETS, build_layout, grid_shape, latency_cycles
from models.metrics import (MAX_EXACT_ROUTERS, UNREACHABLE, degree_histogram, distance_matrix,
                            distance_rows, moore_bound, path_statistics, structure_report)
from models.topology import build, from_edges


# ----------------------------------------------------------------------------- graphs
def ring(n, p=1, group=None):
    u = np.arange(n)
    return from_edges("ring", {}, n, u, (u + 1) % n, p, np.arange(n) if group is None else group)


def path_graph(n):
    u = np.arange(n - 1)
    return from_edges("path", {}, n, u, u + 1, 1, 0)


def mesh(a, b, p=1):
    idx = np.arange(a * b).reshape(a, b)
    u = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    v = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    return from_edges("mesh", {}, a * b, u, v, p, idx.ravel() // b)


def hypercube(d, p=1):
    n = 1 << d
    r = np.arange(n)
    u = np.concatenate([r[(r >> i) & 1 == 0] for i in range(d)])
    v = np.concatenate([r[(r >> i) & 1 == 0] | (1 << i) for i in range(d)])
    return from_edges("hypercube", {}, n, u, v, p, r // 4)


def random_graph(n, m, seed, p=None):
    rng = np.random.default_rng(seed)
    pairs = set()
    while len(pairs) < m:
        a, b = rng.integers(0, n, 2)
        if a != b:
            pairs.add((min(a, b), max(a, b)))
    u, v = np.array(sorted(pairs)).T
    eps = rng.integers(0, 4, n) if p is None else p
    return from_edges("random", {}, n, u, v, eps, rng.integers(0, 5, n))


def petersen():
    g = nx.petersen_graph()
    u, v = np.array(list(g.edges())).T
    return from_edges("petersen", {}, 10, u, v, 1, 0)


def scipy_distances(t):
    a = sp.coo_matrix((np.ones(t.n_links), (t.links[:, 0], t.links[:, 1])),
                      shape=(t.n_routers, t.n_routers))
    d = shortest_path(a, directed=False, unweighted=True)
    d[np.isinf(d)] = UNREACHABLE
    return d.astype(np.int64)


GRAPHS = {
    "ring": lambda: ring(17),
    "mesh": lambda: mesh(5, 7),
    "hypercube": lambda: hypercube(6),
    "random": lambda: random_graph(60, 150, 1),
    "disconnected": lambda: from_edges("two", {}, 7, [0, 1, 4], [1, 2, 5], 1, 0),
    "petersen": petersen,
}


# ----------------------------------------------------------------------------- layout
@pytest.mark.parametrize("n,shape", [(1, (1, 1)), (2, (2, 1)), (4, (2, 2)), (5, (3, 2)),
                                     (10, (4, 3)), (64, (8, 8)), (256, (16, 16)), (257, (17, 16))])
def test_grid_shape_default(n, shape):
    """Default grid: ceil(sqrt(n)) rows of ceil(n / rows) racks (002 Sec. III-A)."""
    assert grid_shape(n) == shape


def test_grid_shape_racks_per_row():
    """An explicit racks_per_row fixes the columns; rows are ceil(n / racks_per_row)."""
    assert grid_shape(10, 4) == (3, 4)
    assert grid_shape(10, 0) == grid_shape(10)


def test_racks_row_major():
    """Rack k sits in row k // racks_per_row, column k % racks_per_row."""
    t = ring(10, group=np.arange(10))
    lay = build_layout(t)
    assert lay.n_rows == 4 and lay.racks_per_row == 3
    assert lay.rack_row.tolist() == [k // 3 for k in range(10)]
    assert lay.rack_col.tolist() == [k % 3 for k in range(10)]
    assert np.allclose(lay.rack_x, (lay.rack_col + 0.5) * 1.0)


def test_skywalk_cable_lengths():
    """Skywalk preset: 2 m inside a cabinet, 4 m + 0.6|dcol| + 2.1|drow| between cabinets."""
    # 4 cabinets of 2 switches: 2x2 grid
    u = [0, 0, 0, 2]
    v = [1, 7, 3, 4]
    t = from_edges("s", {}, 8, u, v, 1, np.arange(8) // 2)
    lay = build_layout(t, preset="skywalk")
    got = dict(zip(map(tuple, t.links.tolist()), lay.cable_m.tolist()))
    assert got[(0, 1)] == pytest.approx(2.0)             # same cabinet
    assert got[(0, 7)] == pytest.approx(4 + 0.6 + 2.1)   # cabinet 0 (0,0) -> 3 (1,1)
    assert got[(0, 3)] == pytest.approx(4 + 0.6)         # cabinet 0 -> 1 (0,1)
    assert got[(2, 4)] == pytest.approx(4 + 0.6 + 2.1)   # cabinet 1 (0,1) -> 2 (1,0)


def test_slimfly_preset_and_overrides():
    """Geometry left at None takes the preset; explicit values win."""
    t = mesh(3, 4)
    lay = build_layout(t)
    assert (lay.rack_width_m, lay.rack_depth_m, lay.intra_rack_m, lay.overhead_m) == \
        tuple(PRESETS["slimfly"][k] for k in ("rack_width_m", "rack_depth_m", "intra_rack_m", "overhead_m"))
    lay2 = build_layout(t, preset="slimfly", intra_rack_m=3.0, overhead_m=0.0, rack_depth_m=2.5)
    assert lay2.intra_rack_m == 3.0 and lay2.rack_width_m == 1.0
    intra = lay2.intra_rack
    assert np.all(lay2.cable_m[intra] == 3.0)
    g = t.group
    drow = np.abs(lay2.rack_row[g[t.links[:, 0]]] - lay2.rack_row[g[t.links[:, 1]]])
    dcol = np.abs(lay2.rack_col[g[t.links[:, 0]]] - lay2.rack_col[g[t.links[:, 1]]])
    assert np.allclose(lay2.cable_m[~intra], 2.5 * drow[~intra] + 1.0 * dcol[~intra])


def test_preset_none_uses_topology_hint():
    """preset=None takes topo.meta['layout_preset'], else slimfly."""
    t = ring(6)
    assert build_layout(t, preset=None).preset == "slimfly"
    t.meta["layout_preset"] = "skywalk"
    assert build_layout(t, preset=None).preset == "skywalk"


def test_latency_formula():
    """latency = max(1, ceil(m * ns_per_m / cycle_ns) + fixed), exact at integer ns."""
    m = np.array([0.0, 0.6, 1.0, 2.1, 7.3])
    assert latency_cycles(m, 5.0, 1.0, 0).tolist() == [1, 3, 5, 11, 37]
    assert latency_cycles(m, 5.0, 2.0, 3).tolist() == [3, 5, 6, 9, 22]
    assert latency_cycles(m, 0.0, 1.0, 0).tolist() == [1] * 5


def test_layout_latency_per_link():
    """Each link's latency follows from its own cable length."""
    t = random_graph(40, 90, 3)
    lay = build_layout(t, preset="skywalk", ns_per_m=5.0, cycle_ns=0.5, fixed_cycles=2)
    expect = np.maximum(1, np.ceil(np.round(lay.cable_m * 10.0, 9)) + 2)
    assert lay.latency.dtype == np.int32
    assert np.array_equal(lay.latency, expect)
    assert np.array_equal(lay.channel_latency[::2], lay.latency)


def test_cable_totals_consistent():
    """Totals split the cables into intra/inter (= electric/optical) and into link classes."""
    t = random_graph(50, 120, 4)
    lay = build_layout(t)
    c = lay.totals["cables"]
    assert c["count"] == t.n_links
    assert c["intra_rack"] == c["electric"] and c["inter_rack"] == c["optical"]
    assert c["intra_rack"]["count"] + c["inter_rack"]["count"] == t.n_links
    assert lay.totals["cable_m_total"] == pytest.approx(lay.cable_m.sum())
    assert sum(v["m"] for v in c["by_class"].values()) == pytest.approx(lay.cable_m.sum())
    assert c["intra_rack"]["count"] == int((t.group[t.links[:, 0]] == t.group[t.links[:, 1]]).sum())


@pytest.mark.parametrize("kw,key", [({"intra_rack_m": -1.0}, "layout.intra_rack_m"),
                                    ({"overhead_m": float("nan")}, "layout.overhead_m"),
                                    ({"rack_width_m": -0.1}, "layout.rack_width_m"),
                                    ({"cycle_ns": 0.0}, "layout.cycle_ns"),
                                    ({"cycle_ns": -1.0}, "layout.cycle_ns"),
                                    ({"ns_per_m": -5.0}, "layout.ns_per_m"),
                                    ({"fixed_cycles": -1}, "layout.fixed_cycles"),
                                    ({"racks_per_row": -2}, "layout.racks_per_row"),
                                    ({"preset": "moon"}, "layout.preset")])
def test_layout_rejects_bad_values(kw, key):
    """Negative lengths, cycle_ns <= 0 and unknown presets name the layout key."""
    with pytest.raises(ParameterError, match=key.replace(".", r"\.")):
        build_layout(ring(5), **kw)


def test_layout_from_config_section():
    """The resolved [layout] section is accepted as keyword arguments."""
    from pdes.config import resolve
    cfg = resolve({}, ["layout.preset=skywalk"], sections=("layout",))
    lay = build_layout(ring(8, group=np.arange(8) // 2), **cfg["layout"])
    assert lay.preset == "skywalk" and lay.racks_per_row == 2 and lay.intra_rack_m == 2.0


def test_layout_of_a_large_network():
    """A 250K-link layout gives every link a cable and a latency (its speed: bench_topology.py)."""
    rng = np.random.default_rng(0)
    n = 10000
    u = rng.integers(0, n, 300000)
    v = rng.integers(0, n, 300000)
    key = np.unique(np.minimum(u, v) * n + np.maximum(u, v))
    key = key[key // n != key % n][:250000]
    t = from_edges("big", {}, n, key // n, key % n, 10, np.arange(n) // 40)
    lay = build_layout(t)
    assert lay.cable_m.shape == (t.n_links,) and (lay.cable_m > 0).all()
    assert (lay.latency >= 1).all()


# ----------------------------------------------------------------------------- distances
@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_distance_matrix_matches_scipy(name):
    """BFS distances equal scipy's unweighted shortest paths (255 = unreachable)."""
    t = GRAPHS[name]()
    d = distance_matrix(t)
    assert d.dtype == np.uint8 and d.shape == (t.n_routers, t.n_routers)
    assert np.array_equal(d.astype(np.int64), scipy_distances(t))


def test_distance_rows_subset_and_threads():
    """Rows for a subset of sources equal those rows of the matrix, for any thread count."""
    t = random_graph(200, 600, 7)
    full = distance_matrix(t, threads=1)
    src = np.array([5, 0, 199, 5, 77])
    for th in (1, 2, 3, 8):
        assert np.array_equal(distance_rows(t, src, threads=th), full[src])
        assert np.array_equal(distance_matrix(t, threads=th), full)


def test_distance_rows_rejects_bad_sources():
    """Source ids outside the router range are refused."""
    with pytest.raises(ParameterError, match="sources"):
        distance_rows(ring(5), [5])


def test_distance_overflow_refused():
    """A shortest path of 255 hops or more cannot be stored as uint8 and is refused."""
    assert distance_rows(path_graph(255), [0]).max() == 254
    with pytest.raises(ParameterError, match="255 hops"):
        distance_rows(path_graph(300), [0])


# ----------------------------------------------------------------------------- statistics
def nx_graph(t):
    g = nx.Graph()
    g.add_nodes_from(range(t.n_routers))
    g.add_edges_from(t.links.tolist())
    return g


@pytest.mark.parametrize("name", ["ring", "mesh", "hypercube", "random", "petersen"])
def test_path_statistics_match_networkx(name):
    """Diameter, mean distance and minimal-path counts agree with networkx."""
    t = GRAPHS[name]()
    g = nx_graph(t)
    s = path_statistics(t)
    assert s["connected"]
    assert s["diameter"] == nx.diameter(g)
    assert s["avg_distance"] == pytest.approx(nx.average_shortest_path_length(g))
    counts = [len(list(nx.all_shortest_paths(g, a, b)))
              for a, b in itertools.permutations(range(t.n_routers), 2)]
    mp = s["min_paths"]
    assert mp["min"] == min(counts) and mp["max"] == max(counts)
    assert mp["mean"] == pytest.approx(np.mean(counts))
    assert mp["frac_multi"] == pytest.approx(np.mean(np.array(counts) > 1))


def test_endpoint_avg_distance_brute_force():
    """Endpoint-weighted mean distance is over ordered pairs of distinct endpoints."""
    t = random_graph(30, 70, 11)
    d = scipy_distances(t)
    er = t.endpoint_router
    e = er.size
    tot = sum(d[er[a], er[b]] for a in range(e) for b in range(e) if a != b)
    s = path_statistics(t)
    assert s["endpoint_avg_distance"] == pytest.approx(tot / (e * (e - 1)))


def test_disconnected_statistics():
    """A disconnected graph has no diameter; averages use connected pairs only."""
    t = GRAPHS["disconnected"]()
    s = path_statistics(t)
    assert s["connected"] is False and s["diameter"] is None
    # pairs: component {0,1,2}: 6 ordered pairs, sum 8; {4,5}: 2 pairs, sum 2
    assert s["avg_distance"] == pytest.approx(10 / 8)


def test_degree_histogram():
    """The histogram counts routers per network degree."""
    assert degree_histogram(mesh(3, 3)) == {2: 4, 3: 4, 4: 1}


@pytest.mark.parametrize("k,d,n", [(7, 2, 50), (3, 2, 10), (57, 2, 3250), (2, 5, 11), (4, 1, 5)])
def test_moore_bound(k, d, n):
    """Moore bound 1 + k sum_{i<D} (k-1)^i (Petersen 10, Hoffman-Singleton 50, odd cycle 2D+1)."""
    assert moore_bound(k, d) == n


def test_moore_ratio_petersen():
    """The Petersen graph reaches the Moore bound (ratio 1)."""
    r = structure_report(petersen())
    assert r["diameter"] == 2 and r["moore_bound"] == 10 and r["moore_ratio"] == 1.0


def test_slimfly_q5_is_hoffman_singleton():
    """SF q=5 has diameter 2 and 50 routers of degree 7: Moore ratio 50/50 = 1."""
    t = build("slimfly", {"q": 5})
    r = structure_report(t, build_layout(t))
    assert r["diameter"] == 2
    assert r["degree_histogram"] == {"7": 50}
    assert r["moore_bound"] == 50 and r["moore_ratio"] == 1.0
    assert r["min_paths"]["max"] == 1.0  # girth 5: unique shortest paths
    assert r["cable_m_total"] == pytest.approx(sum(build_layout(t).cable_m))


def test_indirect_topology_has_no_moore_ratio():
    """Routers without endpoints make the topology indirect: no Moore ratio."""
    t = ring(6, p=np.array([1, 0, 1, 0, 1, 0]))
    r = structure_report(t)
    assert r["moore_bound"] is None and r["moore_ratio"] is None


def test_large_exact_refused_and_sample():
    """Above 20,000 routers exact all-pairs needs a sample, which the report marks."""
    t = ring(MAX_EXACT_ROUTERS + 1)
    with pytest.raises(ParameterError, match="sample"):
        structure_report(t)
    r = structure_report(t, sample=3, seed=5)
    assert r["sampled"] == 3 and r["diameter"] == (MAX_EXACT_ROUTERS + 1) // 2
    assert r == structure_report(t, sample=3, seed=5)


def test_sample_covering_all_routers_is_exact():
    """A sample at least as large as the router count gives the exact report."""
    t = mesh(4, 4)
    exact = structure_report(t)
    assert exact["sampled"] is None
    assert structure_report(t, sample=100) == exact
    with pytest.raises(ParameterError, match="sample"):
        structure_report(t, sample=0)


def test_sampled_statistics_are_per_source():
    """Sampled averages equal the averages over the sampled source rows."""
    t = random_graph(80, 200, 5)
    r = structure_report(t, sample=10, seed=2)
    src = np.sort(np.random.default_rng(2).choice(80, size=10, replace=False))
    d = scipy_distances(t)[src]
    ok = (d < UNREACHABLE) & (d > 0)
    assert r["avg_distance"] == pytest.approx(d[ok].mean())


# ----------------------------------------------------------------------------- Skywalk
def _skywalk(**params):
    from models.core.registry import TOPOLOGIES
    import models.topologies  # noqa: F401
    if "skywalk" not in TOPOLOGIES:
        pytest.skip("skywalk topology not registered")
    return build("skywalk", params)


@pytest.mark.parametrize("c", [10, 64, 70])
def test_skywalk_grid_matches_construction(c):
    """The layout grid equals the cabinet grid the Skywalk construction assumes."""
    t = _skywalk(z=4, c=c, d_i=3, d_o=2, p=2)
    lay = build_layout(t, preset="skywalk")
    assert (lay.n_rows, lay.racks_per_row) == (t.params["rows"], t.params["cols"])


def test_skywalk_8_256_7_4_cable_length():
    """Skywalk(8,256,7,4) with the 002 cable model has about 57.6 km of cable (construction notes 7)."""
    t = _skywalk(z=8, c=256, d_i=7, d_o=4)
    lay = build_layout(t, preset="skywalk")
    assert lay.totals["cable_m_total"] / 1000 == pytest.approx(57.6, abs=0.6)
    assert lay.totals["cables"]["intra_rack"]["m"] == 2.0 * lay.totals["cables"]["intra_rack"]["count"]
