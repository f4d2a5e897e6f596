"""Tests of the ``latency`` and ``shortest-paths`` sections of ``pdes analyze``
(``models.analysis.latency``, ``models.analysis.shortest_paths``)."""
import functools
import itertools
import json
import math

import networkx as nx
import numpy as np
import pytest

from models.analysis import analyze, latency_report, shortest_paths_report
from models.analysis.latency import latency_rows, link_latency_ns
from models.analysis.shortest_paths import CAP, path_count_rows
from models.core.errors import ParameterError
from models.layout import build_layout
from models.topology import build, from_edges
from tests.helpers import ROOT, assert_refused_on_every_rank, run_pdes


def weighted(n, edges, endpoints=1, group=0, meta=None):
    """A topology of ``n`` routers whose links carry the given latencies (cycles of 1 ns):
    ``edges`` is ``{(u, v): cycles}``."""
    u, v = zip(*edges)
    topo = from_edges("test", {}, n, u, v, endpoints, group, meta=meta)
    lat = {tuple(sorted(k)): c for k, c in edges.items()}
    topo.meta["link_latency"] = np.array([lat[(int(a), int(b))] for a, b in topo.links])
    return topo


def report(topo, **kw):
    return latency_report(topo, build_layout(topo), **kw)


# ----------------------------------------------------------------------------- hand-checked
def test_ring_nearest_worst_and_fastest_by_hand():
    """Ring of 6 with one 30 ns link: 0->3 has two 3-hop paths (3 ns and 32 ns of cable) and
    0->5 is one 30 ns hop or five 1 ns hops; each latency is 300 + switches * sw + cables."""
    ring = weighted(6, {(0, 1): 1, (1, 2): 1, (2, 3): 1, (3, 4): 1, (4, 5): 1, (5, 0): 30})
    ns, info = link_latency_ns(ring, build_layout(ring))
    assert info["source"] == "topology" and sorted(ns) == [1, 1, 1, 1, 1, 30]
    rows = latency_rows(ring, ns, [0], switch_delay=2.0, endpoint_delay=300.0)
    r = {k: v[0] for k, v in rows.items()}
    assert r["dist"].tolist() == [0, 1, 2, 3, 2, 1]
    assert r["nearest"][3] == (300 + 4 * 2 + 3) * 1000          # ps
    assert r["nearest_worst"][3] == (300 + 4 * 2 + 32) * 1000
    assert r["nearest"][5] == (300 + 2 * 2 + 30) * 1000          # the only 1-hop path
    assert r["fastest"][5] == (300 + 6 * 2 + 5) * 1000 and r["fastest_hops"][5] == 5
    rows = latency_rows(ring, ns, [0], switch_delay=10.0, endpoint_delay=300.0)
    assert rows["fastest"][0, 5] == (300 + 2 * 10 + 30) * 1000 and rows["fastest_hops"][0, 5] == 1


def test_complete_graph_by_hand():
    """K5, 10 ns links but a 100 ns link 0-1, 5 ns switches: 0<->1 is fastest over 2 hops
    (35 ns of switches and cables against 110 ns), every other pair direct (20 ns)."""
    edges = {e: 10 for e in itertools.combinations(range(5), 2)}
    edges[(0, 1)] = 100
    rep = report(weighted(5, edges), switch_delays=5, endpoint_delay=0, bin_ns=5)
    x = rep["switch_delay"]["5"]
    assert rep["pairs"] == 20 and rep["unreachable_pairs"] == 0 and rep["connected"]
    assert x["fastest"]["max"] == 35.0 and x["fastest"]["hops_max"] == 2
    assert x["fastest"]["mean"] == pytest.approx((18 * 20 + 2 * 35) / 20)
    assert x["fastest"]["hops_mean"] == pytest.approx((18 + 2 * 2) / 20)
    assert x["nearest"]["max"] == x["nearest_worst"]["max"] == 110.0
    assert x["nearest"]["hops_max"] == 1
    assert x["fastest"]["histogram"] == {"bin_ns": 5.0, "first_ns": 20.0,
                                         "counts": [18, 0, 0, 2]}


def test_torus_ring_hops_and_switch_delay_sweep():
    """A 1-D torus of 8 with equal links: nearest = fastest; the latency grows by exactly
    (hops + 1) * the change of switch delay, each delay under its own key."""
    t = build("torus", {"dims": [8], "p": 1})
    rep = report(t, switch_delays="0,60", endpoint_delay=300)
    link = float(link_latency_ns(t, build_layout(t))[0][0])
    a, b = rep["switch_delay"]["0"], rep["switch_delay"]["60"]
    mean_hops = (2 * (1 + 2 + 3) + 4) / 7
    for x, sw in ((a, 0), (b, 60)):
        assert x["nearest"] == x["fastest"] and x["nearest_worst"]["max"] == x["nearest"]["max"]
        assert x["fastest"]["hops_max"] == 4
        assert x["fastest"]["hops_mean"] == pytest.approx(mean_hops)
        assert x["fastest"]["max"] == pytest.approx(300 + 5 * sw + 4 * link)
        assert x["fastest"]["mean"] == pytest.approx(300 + (mean_hops + 1) * sw + mean_hops * link)
    assert rep["model"]["switch_delays_ns"] == [0.0, 60.0]


# ----------------------------------------------------------------------------- reference
def reference_latency(topo, sw, ep):
    """Per ordered pair of distinct routers with endpoints: (nearest, worst, fastest, hops of
    the fastest, hop distance) from networkx, over every shortest / simple path."""
    ns, _ = link_latency_ns(topo, build_layout(topo))
    g = nx.Graph()
    g.add_nodes_from(range(topo.n_routers))
    for (a, b), w in zip(topo.links.tolist(), ns):
        g.add_edge(a, b, w=w + sw)
    routers = [r for r in range(topo.n_routers) if topo.endpoints[r] > 0]
    out = {}
    for s in routers:
        fast = nx.single_source_dijkstra_path_length(g, s, weight="w")
        for t in routers:
            if t == s or t not in fast:
                continue
            lat = [ep + sw + nx.path_weight(g, p, "w") for p in nx.all_shortest_paths(g, s, t)]
            best = ep + sw + fast[t]
            hops = min(len(p) - 1 for p in nx.all_simple_paths(g, s, t)
                       if math.isclose(ep + sw + nx.path_weight(g, p, "w"), best))
            out[s, t] = (min(lat), max(lat), best, hops, nx.shortest_path_length(g, s, t))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_latency_equals_networkx_on_random_graphs(seed):
    """On random graphs of 16 routers (some without endpoints, one unreachable router, layout
    latencies) max, mean, endpoint-weighted mean and hops equal a networkx reference."""
    rng = np.random.default_rng(seed)
    g = nx.gnm_random_graph(15, 26, seed=seed)
    p = rng.integers(0, 4, 16)
    p[15] = 2                                              # router 15: no links at all
    topo = from_edges("rnd", {}, 16, *zip(*g.edges), p, np.arange(16) // 4)
    sw = 7.0
    ref = reference_latency(topo, sw, 100.0)
    rep = report(topo, switch_delays=sw, endpoint_delay=100.0)
    x = rep["switch_delay"]["7"]
    w = {k: float(p[k[0]] * p[k[1]]) for k in ref}
    for name, i in (("nearest", 0), ("nearest_worst", 1), ("fastest", 2)):
        vals = {k: v[i] for k, v in ref.items()}
        assert x[name]["max"] == pytest.approx(max(vals.values()))
        assert x[name]["mean"] == pytest.approx(np.mean(list(vals.values())))
        assert x[name]["endpoint_mean"] == pytest.approx(
            sum(w[k] * vals[k] for k in ref) / sum(w.values()))
    assert x["fastest"]["hops_mean"] == pytest.approx(np.mean([v[3] for v in ref.values()]))
    assert x["nearest"]["hops_max"] == max(v[4] for v in ref.values())
    served = int((p > 0).sum())
    assert rep["routers"] == served and rep["pairs"] == len(ref)
    assert rep["unreachable_pairs"] == served * (served - 1) - len(ref) > 0
    assert sum(x["fastest"]["histogram"]["counts"]) == len(ref)


def test_skywalk_fastest_never_slower_than_nearest():
    """Skywalk(4, 36, 3, 3) in 002's layout, 60 ns switches: per pair fastest <= nearest <=
    nearest_worst, fastest paths have at least the hop distance, and for some pairs a path
    with more hops is faster."""
    t = build("skywalk", {"z": 4, "c": 36, "d_i": 3, "d_o": 3})
    lay = build_layout(t, preset="skywalk", cycle_ns=0.5)
    ns, info = link_latency_ns(t, lay)
    assert info["link_rounding_ns_max"] == 0.0          # 0.6 m, 2.1 m at 5 ns/m: half-ns steps
    rows = latency_rows(t, ns, np.arange(t.n_routers), 60.0, 300.0)
    assert np.all(rows["fastest"] <= rows["nearest"])
    assert np.all(rows["nearest"] <= rows["nearest_worst"])
    assert np.all(rows["fastest_hops"] >= rows["dist"])
    assert np.any(rows["fastest"] < rows["nearest"])


def test_latency_sampling_and_threads_are_deterministic():
    """sample=S draws S routers with endpoints (the same for one seed, another for another
    seed); the report does not depend on the thread count."""
    t = build("dragonfly", {"h": 2})
    a = report(t, sample=5, seed=3, threads=1)
    assert a == report(t, sample=5, seed=3, threads=2)
    assert a["sampled"] == 5 and a["sources"] == 5 and a["pairs"] == 5 * (t.n_routers - 1)
    assert a != report(t, sample=5, seed=4)
    full = report(t, threads=1)
    assert full == report(t, threads=2) and full["sampled"] is None
    assert full["switch_delay"]["60"]["fastest"]["max"] >= a["switch_delay"]["60"]["fastest"]["max"]


@pytest.mark.parametrize("kw, key", [
    ({"switch_delays": -1}, "--switch-delay"), ({"switch_delays": "60,x"}, "--switch-delay"),
    ({"switch_delays": [60, 60.0]}, "--switch-delay"), ({"switch_delays": []}, "--switch-delay"),
    ({"endpoint_delay": float("nan")}, "--endpoint-delay"), ({"bin_ns": 0}, "--latency-bin"),
    ({"bin_ns": 1e-4}, "--latency-bin"), ({"switch_delays": 1e6, "bin_ns": 2e-3}, "--latency-bin"),
    ({"sample": 0}, "--sample")])
def test_latency_bad_options(kw, key):
    """Bad latency options raise ParameterError naming the option (2 ps bins for latencies up
    to 50 ms: too many)."""
    with pytest.raises(ParameterError, match=key):
        report(build("slimfly", {"q": 5}), **kw)


# ----------------------------------------------------------------------------- shortest paths
def test_shortest_paths_slimfly_against_direct_count():
    """SF q=7 (diameter 2): the count of a pair is 1 for neighbours, else the number of common
    neighbours (A^2); every part and the histogram equal that direct count."""
    t = build("slimfly", {"q": 7})
    n = t.n_routers
    A = np.zeros((n, n), np.int64)
    A[t.links[:, 0], t.links[:, 1]] = A[t.links[:, 1], t.links[:, 0]] = 1
    count = np.where(A == 1, 1, A @ A)
    off = ~np.eye(n, dtype=bool)
    same = t.group[:, None] == t.group[None, :]
    rep = shortest_paths_report(t)
    for part, mask in (("all", off), ("intra_group", off & same), ("inter_group", off & ~same)):
        c = count[mask]
        assert rep[part]["pairs"] == c.size and rep[part]["multi"] == int((c > 1).sum())
        assert rep[part]["mean"] == pytest.approx(c.mean()) and rep[part]["max"] == c.max()
        assert rep[part]["share_of_all"] == pytest.approx((c > 1).sum() / (n * (n - 1)))
    assert rep["histogram"]["counts"] == np.bincount(count[off])[1:].tolist()
    assert rep["saturated_pairs"] == 0 and rep["group_kind"] == "rack"


@pytest.mark.parametrize("q, sp, intra, inter", [(17, 0.01, 0.01, 0.0), (23, 0.05, 0.01, 0.04)])
def test_shortest_paths_004_table4_slimfly(q, sp, intra, inter):
    """004 Table 4, SF rows: SP and its intra/inter split (shares of all pairs, 2 decimals)."""
    rep = shortest_paths_report(build("slimfly", {"q": q}))
    assert round(rep["all"]["frac_multi"], 2) == sp
    assert round(rep["intra_group"]["share_of_all"], 2) == intra
    assert round(rep["inter_group"]["share_of_all"], 2) == inter


def test_shortest_paths_equal_networkx_and_clusters():
    """Galaxyfly GF(3,5,2,1): every count equals networkx's number of shortest paths; the
    cluster and group splits add up to all pairs; a sample is the same on 1 and 2 threads."""
    t = build("galaxyfly", {"n": 3, "q": 5, "a": 2, "p": 1})
    g = t.to_networkx()
    dist, sigma = path_count_rows(t, np.arange(t.n_routers))
    for s in range(0, t.n_routers, 3):
        for v in range(t.n_routers):
            if v != s:
                assert sigma[s, v] == len(list(nx.all_shortest_paths(g, s, v)))
                assert dist[s, v] == nx.shortest_path_length(g, s, v)
    rep = shortest_paths_report(t)
    for k in ("pairs", "multi"):
        assert rep["intra_cluster"][k] + rep["inter_cluster"][k] == rep["all"][k]
        assert rep["intra_group"][k] + rep["inter_group"][k] == rep["all"][k]
    part = shortest_paths_report(t, sample=7, seed=1, threads=1)
    assert part == shortest_paths_report(t, sample=7, seed=1, threads=2)
    assert part["sampled"] == 7 and part["all"]["pairs"] == 7 * (t.n_routers - 1)


def test_shortest_paths_saturate_instead_of_overflowing():
    """18 layers of 16 routers, consecutive layers fully joined: from a router of the first
    layer 16**15 = 2**60 paths lead to the 17th layer (exact), 16**16 to the 18th (saturated at
    2**62 and counted)."""
    w, layers = 16, 18
    u, v = zip(*[(i * w + a, (i + 1) * w + b) for i in range(layers - 1)
                 for a in range(w) for b in range(w)])
    t = from_edges("layers", {}, w * layers, u, v, 1, 0)
    _, sigma = path_count_rows(t, [0])
    assert sigma[0, 16 * w] == 2 ** 60 and sigma[0, 17 * w] == CAP == 2 ** 62
    rep = shortest_paths_report(t)
    assert rep["saturated_pairs"] == 2 * w * w and rep["all"]["max"] == 2 ** 62
    assert rep["histogram"]["edges"][-1] == 2 ** 62 + 1
    assert rep["histogram"]["counts"][-1] == 2 * w * w


# ----------------------------------------------------------------------------- report / CLI
pdes = functools.partial(run_pdes, cwd=ROOT)


def test_cli_latency_and_shortest_paths_json_and_hdf5(tmp_path):
    """--only latency,shortest-paths prints both sections (JSON and table) and writes them to
    the HDF5 report; they equal analyze()."""
    import h5py
    out = tmp_path / "a.h5"
    args = ["analyze", "slimfly", "--set", "topology.q=5", "--only", "latency,shortest-paths",
            "--switch-delay", "20,60", "--sample", "10"]
    proc = pdes(*args, "--json", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert rep["analyses"] == ["shortest-paths", "latency"]
    lib = analyze(build("slimfly", {"q": 5}), only="latency,shortest-paths", sample=10,
                  latency_opts={"switch_delays": [20, 60]})
    assert rep["latency"] == json.loads(json.dumps(lib["latency"]))
    assert rep["shortest-paths"] == json.loads(json.dumps(lib["shortest-paths"]))
    with h5py.File(out) as f:
        x = f["latency/switch_delay/60/fastest"]
        want = rep["latency"]["switch_delay"]["60"]["fastest"]
        assert x.attrs["max"] == want["max"]
        assert list(x["histogram/counts"]) == want["histogram"]["counts"]
        assert f["shortest-paths/all"].attrs["pairs"] == 10 * 49
    table = pdes(*args).stdout
    assert "latency 60 ns switches" in table and "shortest paths > 1" in table


@pytest.mark.parametrize("args, key", [
    (("--switch-delay=-5",), "--switch-delay"), (("--switch-delay", "fast"), "--switch-delay"),
    (("--endpoint-delay", "inf"), "--endpoint-delay"), (("--latency-bin", "0"), "--latency-bin"),
    (("--switch-delay", "1e6", "--latency-bin", "0.002"), "--latency-bin"),
    (("--sample", "0"), "--sample")])
def test_cli_latency_bad_input(args, key):
    """Bad latency options: one 'pdes: error: <option>' line, exit 2, nothing on stdout."""
    proc = pdes("analyze", "slimfly", "--set", "topology.q=5", "--only", "latency", *args)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"pdes: error: {key}") and proc.stdout == ""


def test_cli_says_what_large_all_pairs_work_will_cost(monkeypatch, capsys):
    """Above NOTICE_STEPS source-link steps each all-pairs section prints one note on stderr,
    before it starts, naming its sources, searches and sampling; below it nothing."""
    from pdes.cli import analyze as cli
    from pdes.cli import main
    args = ["analyze", "slimfly", "--set", "topology.q=5", "--only", "latency,shortest-paths",
            "--switch-delay", "20,60", "--json"]
    assert main(args) == 0 and capsys.readouterr().err == ""
    monkeypatch.setattr(cli, "NOTICE_STEPS", 0)
    assert main([*args, "--sample", "7", "--seed", "2"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "pdes: note: shortest-paths: 7 random sources (--sample 7, --seed 2) to 50 routers: "
        "7 BFS path counts over 175 links = 1.2e+03 source-link steps",
        "pdes: note: latency: 7 random sources (--sample 7, --seed 2) to 50 routers: 14 BFS + "
        "Dijkstra searches (2 switch delays) over 175 links = 2.4e+03 source-link steps"]


@pytest.mark.mpi(min_size=2)
def test_cli_latency_bad_input_under_mpi(capfd):
    """Under MPI a bad latency option is refused on every rank (status 2, one line on rank 0),
    also when the ranks would share resiliency samples first."""
    from mpi4py import MPI

    from pdes.cli import main
    comm = MPI.COMM_WORLD
    for only in ("latency", "latency,resiliency"):
        for bad, key in ((["--switch-delay", "x"], "--switch-delay"),
                         (["--switch-delay", "1e6", "--latency-bin", "0.002"], "--latency-bin")):
            capfd.readouterr()
            status = main(["analyze", "slimfly", "--set", "topology.q=5", "--only", only,
                           "--samples", "2", *bad])
            err = capfd.readouterr().err
            assert_refused_on_every_rank(
                comm, status, err, lambda line: line.startswith(f"pdes: error: {key}"), (only, bad))
            comm.Barrier()
