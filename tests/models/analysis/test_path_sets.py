"""Tests of the ``path-sets`` section of ``pdes analyze`` (``models.analysis.path_sets``): the
paths multipath routings give each router pair, their lengths, the paths per link and the
link-disjoint paths per pair (003 Sec. 6, Figs. 6-8)."""
import functools
import itertools
import json

import numpy as np
import pytest

from models.analysis.path_sets import build_sets, max_disjoint, path_sets_report, set_report
from models.analysis.routing_paths import NO_TABLES, paths_of_pair
from models.core.registry import ROUTINGS
from models.metrics import distance_matrix
from models.topology import build, from_edges
from tests.helpers import assert_refused_on_every_rank


def graph(n, edges):
    u, v = zip(*edges)
    return from_edges("test", {}, n, u, v, 1, 0)


def table(topo, hops, layers=1):
    """Next-hop tables ``(layers, R, R)`` from ``{(layer, router, destination): next router}``
    (neighbour indices in port order; -1 elsewhere)."""
    R = topo.n_routers
    T = np.full((layers, R, R), -1, np.int16)
    off, nbr = topo.port_offsets, topo.port_neighbor
    for (k, u, d), v in hops.items():
        T[k, u, d] = list(nbr[off[u]:off[u + 1]]).index(v)
    return T


def report(topo, tabs, with_min, src=None, dst=None):
    rec = {"label": "x", "routing": "x", "params": {}, "tabs": tabs, "with_min": with_min,
           "tables": "hand"}
    R = topo.n_routers
    return set_report(topo, distance_matrix(topo), rec,
                      np.arange(R) if src is None else np.asarray(src),
                      np.arange(R) if dst is None else np.asarray(dst))


# ----------------------------------------------------------------------------- by hand
def test_ring4_minimal_paths_by_hand():
    """Ring of 4, every shortest path: 8 neighbour pairs with 1 path of 1 hop, 4 opposite
    pairs with 2 disjoint paths of 2 hops; 24 hops, so 6 paths per link, 3 per channel."""
    r = report(graph(4, [(0, 1), (1, 2), (2, 3), (3, 0)]), NO_TABLES, True)
    assert r["pairs"] == 12 and r["pairs_without_path"] == 0
    assert r["paths"]["total"] == 16 and r["paths"]["histogram"] == [0, 8, 4]
    assert r["hops"] == 24 and r["length"]["max_histogram"] == [0, 8, 4]
    assert r["disjoint"]["histogram"] == [0, 8, 4] and r["disjoint"]["share_ge_3"] == 0
    assert r["links"]["histogram"] == [0, 0, 0, 0, 0, 0, 4]
    assert r["channels"]["histogram"] == [0, 0, 0, 8]
    assert r["length"]["stretch_histogram"] == [12]


def test_ring4_clockwise_layer_by_hand():
    """Ring of 4, layer 0 (shortest paths) + a clockwise layer: a clockwise neighbour pair
    has 1 path (the layer repeats it, counted once), a counter-clockwise one 2 disjoint paths
    of 1 and 3 hops, an opposite pair 2 of 2 hops; 36 hops: 9 per link, 6 per clockwise and
    3 per counter-clockwise channel; a layer without routes adds nothing."""
    ring = graph(4, [(0, 1), (1, 2), (2, 3), (3, 0)])
    cw = {(0, u, d): (u + 1) % 4 for u in range(4) for d in range(4) if u != d}
    r = report(ring, table(ring, cw, layers=2), True)
    assert r["pairs"] == 12 and r["paths"]["total"] == 20
    assert r["paths"]["histogram"] == [0, 4, 8]
    assert r["hops"] == 36
    assert r["length"]["max_histogram"] == [0, 4, 4, 4]
    assert r["length"]["stretch_histogram"] == [8, 0, 4]
    avg = r["length"]["avg_histogram"]          # 1/8-hop bins: 4 pairs at 1, 8 at 2
    assert len(avg) == 17 and avg[8] == 4 and avg[16] == 8 and sum(avg) == 12
    assert r["length"]["avg_mean"] == pytest.approx((4 * 1 + 8 * 2) / 12)
    assert r["length"]["max_mean"] == pytest.approx((4 * 1 + 4 * 2 + 4 * 3) / 12)
    assert r["disjoint"]["histogram"] == [0, 4, 8]
    assert r["links"]["histogram"][-1] == 4 and len(r["links"]["histogram"]) == 10
    ch = r["channels"]["histogram"]
    assert len(ch) == 7 and ch[3] == 4 and ch[6] == 4


def test_overlapping_paths_by_hand():
    """Pair (0, 2) with the minimal path 0-1-2 and two layers 0-3-1-2 (shares 1-2 with it)
    and 0-3-4-2 (shares 0-3 with the first layer): 3 paths of 8 hops, at most 2 pairwise
    link-disjoint (the minimal and the second layer); links 1-2 and 0-3 carry 2 paths."""
    g = graph(5, [(0, 1), (1, 2), (0, 3), (3, 4), (4, 2), (3, 1)])
    tabs = table(g, {(0, 0, 2): 3, (0, 3, 2): 1, (0, 1, 2): 2,
                     (1, 0, 2): 3, (1, 3, 2): 4, (1, 4, 2): 2}, layers=2)
    r = report(g, tabs, True, src=[0], dst=[2])
    assert r["pairs"] == 1 and r["paths"]["total"] == 3 and r["hops"] == 8
    assert r["disjoint"]["histogram"] == [0, 0, 1]
    assert r["links"]["histogram"] == [0, 4, 2]
    assert r["length"]["avg_histogram"][-1] == 1 and len(r["length"]["avg_histogram"]) == 22
    assert r["length"]["max"] == 3 and r["length"]["stretch_histogram"] == [0, 1]
    # without layer 0 (a plain table per layer): the two layer paths only, not disjoint
    r = report(g, tabs, False, src=[0], dst=[2])
    assert r["paths"]["total"] == 2 and r["disjoint"]["histogram"] == [0, 1]


def test_max_disjoint_equals_brute_force():
    """The branch and bound gives the largest set of pairwise non-conflicting paths of random
    conflict graphs up to 70 paths (two 64-bit words), checked against brute force up to 12
    and against a planted answer above."""
    rng = np.random.default_rng(5)
    for trial in range(300):
        n = int(rng.integers(1, 13)) if trial < 250 else int(rng.integers(60, 71))
        if trial < 250:
            adj = np.triu(rng.random((n, n)) < rng.uniform(0.1, 0.8), 1)
            adj = adj | adj.T
            best = max(len(c) for r in range(n + 1) for c in itertools.combinations(range(n), r)
                       if not any(adj[a, b] for a, b in itertools.combinations(c, 2)))
            gf = gl = np.arange(n)
        else:   # k cliques of paths sharing a first link, joined at random: answer k
            k = int(rng.integers(2, 8))
            grp = rng.integers(0, k, n)
            grp[:k] = np.arange(k)
            adj = (grp[:, None] == grp[None, :]) & ~np.eye(n, dtype=bool)
            best, gf, gl = k, grp, np.arange(n)
        W = (n + 63) // 64
        conf = np.zeros((n, W), np.uint64)
        for i in range(n):
            for j in list(np.nonzero(adj[i])[0]) + [i]:
                conf[i, j // 64] |= np.uint64(1) << np.uint64(j % 64)
        work = (np.zeros((n + 2, W), np.uint64), np.zeros(n + 2, np.int64),
                np.zeros(n + 2, np.int64), np.zeros(n + 2, np.int64), np.zeros(n, np.bool_))
        assert max_disjoint(conf, n, np.asarray(gf, np.int64), np.asarray(gl, np.int64),
                            *work) == best, trial


# ----------------------------------------------------------------------------- Slim Fly
@functools.lru_cache(maxsize=None)
def sf5():
    topo = build("slimfly", {"q": 5})
    return topo, distance_matrix(topo)


@functools.lru_cache(maxsize=None)
def sf5_report():
    topo, dist = sf5()
    return path_sets_report(topo, dist, routings=("min", "table_min", "layered", "rues"),
                            layers=(2, 4), preserve=(0.4,), seed=0)


def test_slimfly_min_one_path_one_disjoint():
    """SF q=5 has one shortest path per router pair: min and table_min give every one of the
    2,450 pairs 1 path and 1 disjoint path, 26 paths on every link (4,550 hops / 175)."""
    rep = sf5_report()
    for name in ("min", "table_min"):
        r = rep["results"][name]
        assert r["pairs"] == 2450 and r["paths"]["histogram"] == [0, 2450]
        assert r["disjoint"]["histogram"] == [0, 2450]
        assert r["hops"] == 4550 and r["links"]["histogram"][-1] == 175
        assert r["length"]["max_histogram"] == [0, 350, 2100]


def test_slimfly_counts_add_up():
    """For every path set the paths per channel and per link both sum to the total hops, the
    histograms count every pair once, and a pair has at most as many disjoint paths as
    paths and at most one path per layer."""
    rep = sf5_report()
    assert set(rep["results"]) == {"min", "table_min", "layered-2", "layered-4",
                                   "rues-2-p0.4", "rues-4-p0.4"}
    for label, r in rep["results"].items():
        for key in ("channels", "links"):
            h = r[key]["histogram"]
            assert sum(i * c for i, c in enumerate(h)) == r["hops"], (label, key)
        assert r["channels"]["count"] == 350 and r["links"]["count"] == 175
        n = r["pairs"] - r["pairs_without_path"]
        for key in ("max_histogram", "avg_histogram", "stretch_histogram"):
            assert sum(r["length"][key]) == n
        assert sum(r["disjoint"]["histogram"]) == n == sum(r["paths"]["histogram"])
        assert r["disjoint"]["mean"] <= r["paths"]["mean"] + 1e-12
        layers = r["params"].get("layers", 1)
        assert len(r["paths"]["histogram"]) <= layers + 1
    assert rep["results"]["layered-4"]["length"]["max"] == 3      # minimal + 1 at most


def test_slimfly_disjoint_equals_set_packing_by_brute_force():
    """RUES p=0.4 with 4 layers on SF q=5, 8 sampled sources: every pair's disjoint count is
    the largest subset of its distinct paths no two of which share a link (brute force)."""
    topo, dist = sf5()
    rec = build_sets(topo, dist, ("rues",), (4,), (0.4,), seed=2)[0]
    src = np.sort(np.random.default_rng(1).choice(50, 8, replace=False))
    lchan = np.empty(350, np.int64)
    lchan[topo.port_out_channel] = topo.port_link
    want = np.zeros(6, int)
    for s in src:
        for d in range(50):
            if s != d:
                ps = [set(lchan[list(p)]) for p in paths_of_pair(topo, dist, rec["tabs"], s, d)[0]]
                want[max(len(c) for r in range(len(ps) + 1)
                         for c in itertools.combinations(ps, r)
                         if all(not a & b for a, b in itertools.combinations(c, 2)))] += 1
    got = set_report(topo, dist, rec, src, np.arange(50))["disjoint"]["histogram"]
    assert got == want[:len(got)].tolist() and want[len(got):].sum() == 0


def test_sampled_sources():
    """--sample 5: 5 source routers drawn with the seed, each to the other 49."""
    topo, dist = sf5()
    rep = path_sets_report(topo, dist, routings=("min",), sample=5, seed=3)
    assert rep["sampled"] == 5 and rep["sources"] == 5
    assert rep["results"]["min"]["pairs"] == 5 * 49


def test_new_routing_with_layer_tables_needs_nothing(monkeypatch):
    """A routing registered later whose plan has lay_port tables (here: rues under another
    name) is analysed like rues, with no change to the section."""
    from models.core.registry import Entry
    rues = ROUTINGS.get("rues")
    monkeypatch.setitem(ROUTINGS._entries, "rues_copy",
                        Entry("rues_copy", rues.func, rues.params, "copy", "test", rues.extra))
    topo, dist = sf5()
    a = path_sets_report(topo, dist, routings=("rues", "rues_copy"), layers=(3,), seed=4,
                         sample=6)["results"]
    assert set(a) == {"rues-3", "rues_copy-3"}
    for key in ("paths", "length", "disjoint", "links", "channels"):
        assert a["rues-3"][key] == a["rues_copy-3"][key]


# ----------------------------------------------------------------------------- CLI
SF5 = ["analyze", "slimfly", "--set", "topology.q=5", "--only", "path-sets"]


def test_cli_json_hdf5_table(tmp_path, capsys):
    """--only path-sets prints the JSON report and writes it to HDF5 (histograms as datasets);
    the table has one row per path set."""
    import h5py
    from pdes.cli import main
    out = tmp_path / "ps.h5"
    capsys.readouterr()
    assert main([*SF5, "--routing", "min,rues", "--layers", "2", "--preserve", "0.5,0.7",
                 "--sample", "4", "--json", "-o", str(out)]) == 0
    rep = json.loads(capsys.readouterr().out)
    ps = rep["path-sets"]
    assert rep["analyses"] == ["path-sets"] and ps["sampled"] == 4
    assert list(ps["results"]) == ["min", "rues-2-p0.5", "rues-2-p0.7"]
    assert ps["results"]["rues-2-p0.7"]["params"]["preserve"] == 0.7
    with h5py.File(out) as f:
        assert json.loads(f.attrs["report_json"])["path-sets"] == ps
        g = f["path-sets/results/rues-2-p0.5"]
        assert g["disjoint/histogram"][()].tolist() == \
            ps["results"]["rues-2-p0.5"]["disjoint"]["histogram"]
    assert main([*SF5, "--routing", "min,layered", "--layers", "2"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert any(r.strip().startswith("min ") and ">=3 disjoint 0.0% (mean 1.00)" in r
               for r in rows)
    assert any(r.strip().startswith("layered-2 ") for r in rows)


def test_plot_path_sets(tmp_path, capsys):
    """plot --kind path-sets of an analysis file writes a PNG whose panel (d) holds each path
    set's disjoint-path histogram as shares of the pairs, the last bin with its right edge;
    a file of path sets alone is plotted so without --kind."""
    from pdes.cli import main
    from pdes.plot import path_sets_data, path_sets_figure
    h5, png = tmp_path / "ps.h5", tmp_path / "ps.png"
    assert main([*SF5, "--routing", "min,layered", "--layers", "3", "-o", str(h5)]) == 0
    assert main(["plot", str(h5), "--kind", "path-sets", "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = path_sets_data(str(h5))
    assert [d["label"] for d in data] == ["min", "layered-3"]
    lines = path_sets_figure(data).axes[3].get_lines()
    for ln, d in zip(lines, data):
        share = (d["disjoint"] / d["max"].sum()).tolist()
        # the last bin drawn with its right edge: its value once more, one bin further
        assert ln.get_ydata().tolist() == share + share[-1:]
        assert ln.get_xdata().tolist() == list(range(len(share) + 1))
    h5b = tmp_path / "only.h5"          # plotted as path-sets without --kind
    assert main([*SF5, "--routing", "min", "-o", str(h5b)]) == 0
    assert main(["plot", str(h5b), "-o", str(tmp_path / "only.png")]) == 0
    capsys.readouterr()
    assert main(["plot", str(h5), "--kind", "path-sets", "--logy", "-o", str(png)]) == 2
    assert "--logy: not an option of --kind path-sets" in capsys.readouterr().err


@pytest.mark.parametrize("args, key", [
    (("--routing", "nosuch"), "--routing: unknown routing 'nosuch'"),
    (("--routing", "min,valiant"), "--routing: 'valiant' has no path set"),
    (("--routing", ""), "--routing: give one or more"),
    (("--routing", "rues", "--preserve", "0"), "--preserve: each fraction"),
    (("--routing", "rues", "--preserve", "1.5"), "--preserve: each fraction"),
    (("--routing", "rues", "--preserve", "x"), "--preserve: expected numbers"),
    (("--routing", "min,layered", "--preserve", "0.4"), "--preserve: none of the routings"),
    (("--layers", "0"), "--layers"),
    (("--set", "traffic.pattern=nosuch"), "traffic.pattern: unknown traffic"),
    (("--set", "measure.seed=nan"), "measure.seed"),
    (("--layers", "1000000"), "--layers: each layer count must be in [1, 256]"),
    (("--only", "resiliency", "--samples", "99999999999999999999"), "--samples: must be an integer <= 1000000"),
    (("--threads", "100000"), "--threads: must be an integer <= 1024"),
    (("--seed", "99999999999999999999999"), "--seed: must be an integer <= 9223372036854775807"),
    (("--sample", "0"), "--sample")])
def test_cli_bad_input(args, key, capsys, tmp_path):
    """Bad --routing, --preserve, --layers or --sample: exit 2, one 'pdes: error: <key>'
    line, nothing on stdout, no -o file."""
    from pdes.cli import main
    out = tmp_path / "x.h5"
    capsys.readouterr()
    assert main([*SF5, *args, "-o", str(out)]) == 2
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"pdes: error: {key}"), err
    assert cap.out == "" and not out.exists()


@pytest.mark.mpi(min_size=2)
def test_cli_bad_routing_under_mpi(capfd):
    """Under MPI a routing without a path set is refused on every rank (status 2, one line on
    rank 0), also when the ranks share resiliency samples."""
    from mpi4py import MPI

    from pdes.cli import main
    comm = MPI.COMM_WORLD
    for only in ("path-sets", "path-sets,resiliency"):
        capfd.readouterr()
        status = main(["analyze", "slimfly", "--set", "topology.q=5", "--only", only,
                       "--samples", "2", "--routing", "layered,ugal_l"])
        err = capfd.readouterr().err
        assert_refused_on_every_rank(
            comm, status, err,
            lambda line: line.startswith("pdes: error: --routing: 'ugal_l' has no path set"),
            only)
        comm.Barrier()


def test_cli_note_before_large_work(monkeypatch, capsys):
    """Above NOTICE_PAIRS (router pairs x path sets), analyze says on stderr what path-sets
    will do, before it starts."""
    from models.analysis import path_sets
    from pdes.cli import main
    monkeypatch.setattr(path_sets, "NOTICE_PAIRS", 0)
    capsys.readouterr()
    assert main([*SF5, "--routing", "min,table_min", "--json"]) == 0
    assert capsys.readouterr().err.strip().splitlines() == [
        "pdes: note: path-sets: all 50 sources (exact; --sample N takes N random sources) to "
        "50 routers with endpoints: 2,450 router pairs x 2 path sets"]
