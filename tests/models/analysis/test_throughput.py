"""Tests of the ``throughput`` section of ``pdes analyze`` (``models.analysis.throughput``):
maximum achievable throughput by linear programming, unrestricted and restricted to paths."""
import functools
import itertools
import json

import numpy as np
import pytest

import models.traffic  # noqa: F401  (registers the patterns)
from models.analysis import analyze
from models.analysis.load import channel_load
from models.analysis.throughput import (endpoint_pairs, restricted, router_demand,
                                        throughput_report, unrestricted)
from models.core.errors import ParameterError
from models.core.registry import TRAFFIC
from models.topology import build, from_edges
from models.traffic import TrafficPlan
from tests.helpers import ROOT, anynet_ring, assert_refused_on_every_rank, run_pdes


def graph(n, edges, endpoints=1):
    u, v = zip(*edges)
    return from_edges("test", {}, n, u, v, endpoints, 0)


def ring(n):
    return graph(n, [(i, (i + 1) % n) for i in range(n)])


def uniform(topo):
    return TrafficPlan("uniform", np.zeros(topo.n_endpoints, np.int32), "uniform")


def neighbour(topo):
    """Endpoint i (on router i) sends to endpoint i + 1."""
    E = topo.n_endpoints
    return TrafficPlan("table", ((np.arange(E) + 1) % E).astype(np.int32), "neighbour")


def mat(topo, plan, **kw):
    """{'unrestricted': t, 'min': t, 'layered-4': t} at fraction 1."""
    row = throughput_report(topo, plan, fractions=(1.0,), **kw)["fractions"][0]
    return {k: v["throughput"] for k, v in row.items() if isinstance(v, dict)}


# ----------------------------------------------------------------------------- hand-checked
@pytest.mark.parametrize("n, want", [(4, 3 / 2), (6, 10 / 9)])
def test_ring_uniform_by_hand(n, want):
    """Ring of n, uniform: 2n channels / (n * mean distance) = 3/2 (n=4), 10/9 (n=6), with any
    paths and with the minimal ones (both directions of the opposite pair)."""
    t = mat(ring(n), uniform(ring(n)))
    assert t == pytest.approx({"unrestricted": want, "min": want, "layered-4": want}, rel=1e-7)


@pytest.mark.parametrize("n", [4, 5, 6])
def test_ring_neighbour_by_hand(n):
    """Ring of n, each router to the next: minimal routing carries 1 (one channel each);
    unrestricted n/(n-1) (x = 1/(n-1) of each pair goes the long way round)."""
    t = mat(ring(n), neighbour(ring(n)))
    assert t["min"] == pytest.approx(1.0, rel=1e-7)
    assert t["unrestricted"] == pytest.approx(n / (n - 1), rel=1e-7)


def test_complete_graph_uniform_by_hand():
    """K5, uniform: every pair has its own channel with demand 1/4, so t = 4 unrestricted
    and minimal (any detour uses two channels)."""
    k5 = graph(5, list(itertools.combinations(range(5), 2)))
    assert mat(k5, uniform(k5)) == pytest.approx(
        {"unrestricted": 4.0, "min": 4.0, "layered-4": 4.0}, rel=1e-7)


def test_star_and_line_bottlenecks():
    """A star whose hub has no endpoints: each leaf's one link carries all it sends, t = 1;
    a line of 3: the channel 0->1 carries 0->1 and 0->2 (1/2 each), t = 1."""
    star = graph(5, [(0, i) for i in range(1, 5)], endpoints=[0, 1, 1, 1, 1])
    line = graph(3, [(0, 1), (1, 2)])
    for topo in (star, line):
        assert mat(topo, uniform(topo)) == pytest.approx(
            {"unrestricted": 1.0, "min": 1.0, "layered-4": 1.0}, rel=1e-7)


def test_unique_minimal_paths_equal_the_hand_routing():
    """Ring of 5 (every minimal path unique), uniform: each channel is on the paths of 3
    pairs (distances 1, 2, 2) of demand 1/4, so minimal routing carries 4/3."""
    r5 = ring(5)
    src, dst, dem = endpoint_pairs(r5, uniform(r5))
    D, kept = router_demand(r5, src, dst, dem)
    assert kept == 20 and np.allclose(D[~np.eye(5, dtype=bool)], 0.25)
    from models.analysis.throughput import minimal_paths
    from models.metrics import distance_matrix
    dist = distance_matrix(r5)
    paths = {}
    for s, d in itertools.permutations(range(5), 2):
        ps, cut = minimal_paths(r5, dist, s, d)
        assert len(ps) == 1 and not cut
        paths[(s, d)] = ps
    assert restricted(r5, D, paths)["throughput"] == pytest.approx(4 / 3, rel=1e-7)
    assert unrestricted(r5, D)["throughput"] == pytest.approx(4 / 3, rel=1e-7)


# ----------------------------------------------------------------------------- Slim Fly
@functools.lru_cache(maxsize=None)
def sf5_report(seed=0):
    topo = build("slimfly", {"q": 5})
    plan = TRAFFIC.get("worst_case").func(topo, 0)
    return throughput_report(topo, plan, fractions=(0.2, 1.0), layers=(2, 4), seed=seed)


def test_slimfly_unrestricted_bounds_restricted():
    """SF q=5 worst case: unrestricted >= layered-4 >= layered-2 >= min at every fraction
    (each path set contains the next), and fewer pairs never carry less."""
    rep = sf5_report()
    for row in rep["fractions"]:
        t = {k: v["throughput"] for k, v in row.items() if isinstance(v, dict)}
        assert t["unrestricted"] >= t["layered-4"] - 1e-7
        assert t["layered-4"] >= t["layered-2"] - 1e-7 >= t["min"] - 2e-7
        assert t["min"] > 0
    a, b = rep["fractions"]
    assert a["endpoint_pairs"] == 40 and b["endpoint_pairs"] == 200
    assert a["unrestricted"]["throughput"] >= b["unrestricted"]["throughput"] - 1e-7


def test_slimfly_rues_and_fatpaths_path_sets_lie_between_min_and_unrestricted():
    """SF q=5 worst case, 40 pairs: the rues-L and fatpaths-L path sets contain the minimal
    paths, so min <= rues-L, fatpaths-L <= unrestricted (L = 1: exactly min)."""
    topo = build("slimfly", {"q": 5})
    plan = TRAFFIC.get("worst_case").func(topo, 0)
    row = throughput_report(topo, plan, fractions=(0.2,), restrict=("min", "rues", "fatpaths"),
                            layers=(1, 4))["fractions"][0]
    t = {k: v["throughput"] for k, v in row.items() if isinstance(v, dict)}
    assert sorted(t) == ["fatpaths-1", "fatpaths-4", "min", "rues-1", "rues-4", "unrestricted"]
    for name in ("rues", "fatpaths"):
        assert t[f"{name}-1"] == pytest.approx(t["min"], rel=1e-7)
        assert t["min"] - 1e-7 <= t[f"{name}-4"] <= t["unrestricted"] + 1e-7
        assert row[f"{name}-4"]["paths"] > row["min"]["paths"]


def test_slimfly_min_lp_at_least_the_even_split():
    """SF q=5 uniform: the minimal-path LP carries at least 1 / (largest channel load of the
    even split over minimal paths), the saturation bound of the load section."""
    topo = build("slimfly", {"q": 5})
    t = mat(topo, uniform(topo), restrict=("min",))
    assert t["min"] >= 1 / channel_load(topo, split="path").max() - 1e-7
    assert t["unrestricted"] >= t["min"] - 1e-7


def test_throughput_is_deterministic_in_the_seed():
    """The same seed gives the same pairs and throughputs; another seed other pairs."""
    def strip(rep):
        return [{k: ({kk: vv for kk, vv in v.items() if kk != "seconds"}
                     if isinstance(v, dict) else v) for k, v in row.items()}
                for row in rep["fractions"]]
    sf5_report.cache_clear()
    a, b = strip(sf5_report(0)), strip(sf5_report.__wrapped__(0))
    assert a == b
    topo = build("slimfly", {"q": 5})
    plan = TRAFFIC.get("worst_case").func(topo, 0)
    D0, _ = router_demand(topo, *endpoint_pairs(topo, plan), 0.2, 0)
    D1, _ = router_demand(topo, *endpoint_pairs(topo, plan), 0.2, 1)
    assert not np.array_equal(D0, D1)


def test_refusals_before_the_lp():
    """An LP above max_variables and a pattern kind without a demand matrix are refused."""
    topo = build("slimfly", {"q": 5})
    with pytest.raises(ParameterError, match=r"--only: throughput: .*17,501 variables.*1,000"):
        throughput_report(topo, uniform(topo), max_variables=1000)
    with pytest.raises(ParameterError, match="--traffic"):
        throughput_report(topo, TRAFFIC.get("hotspot").func(topo, 0))
    with pytest.raises(ParameterError, match="needs a traffic pattern"):
        analyze(topo, only="throughput")


# ----------------------------------------------------------------------------- CLI
pdes = functools.partial(run_pdes, cwd=ROOT)


def test_cli_throughput_json_hdf5_and_table(tmp_path):
    """--only throughput on an anynet ring of 6 routers x 2 endpoints, uniform: every router
    pair has demand 4/11, so t = 12 channels / (6 x 4/11 x 9) = 11/18 for any and for minimal
    paths; printed as JSON and table (--traffic or traffic.pattern) and written to HDF5."""
    import h5py
    out = tmp_path / "a.h5"
    args = ["analyze", "file", "--set", f"topology.path={anynet_ring(tmp_path)}",
            "--set", "topology.format=anynet", "--only", "throughput", "--pair-fractions", "1",
            "--restrict", "min"]
    proc = pdes(*args, "--traffic", "uniform", "--json", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert rep["analyses"] == ["throughput"]
    row = rep["throughput"]["fractions"][0]
    assert row["endpoint_pairs"] == 12 * 11 and row["router_pairs"] == 30
    assert row["unrestricted"]["throughput"] == pytest.approx(11 / 18, rel=1e-7)
    assert row["min"]["throughput"] == pytest.approx(11 / 18, rel=1e-7)
    with h5py.File(out) as f:
        assert json.loads(f["throughput"].attrs["fractions"]) == rep["throughput"]["fractions"]
        assert json.loads(f.attrs["report_json"])["throughput"] == rep["throughput"]
    table = pdes(*args, "--set", "traffic.pattern=uniform").stdout
    assert "100% of pairs" in table and "min 0.6111" in table


@pytest.mark.parametrize("args, key", [
    (("--set", "topology.q=13"), "--only: throughput"),
    (("--set", "topology.q=5", "--max-lp-variables", "1000"), "--only: throughput"),
    (("--set", "topology.q=5", "--pair-fractions", "0"), "--pair-fractions"),
    (("--set", "topology.q=5", "--restrict", "ugal"), "--restrict"),
    (("--set", "topology.q=5", "--layers", "x"), "--layers"),
    (("--set", "topology.q=5", "--traffic", "hotspot"), "--traffic")])
def test_cli_throughput_bad_input(args, key):
    """Too large an LP (SF q=13: 2,170,637 variables > 2,000,000) and bad options: one
    'pdes: error: <key>' line, exit 2, nothing on stdout."""
    proc = pdes("analyze", "slimfly", "--only", "throughput", *args)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"pdes: error: {key}") and proc.stdout == ""


@pytest.mark.mpi(min_size=2)
def test_cli_throughput_bad_input_under_mpi(capfd):
    """Under MPI too large an LP (found from the parameters, or once the restricted LP's paths
    are known) or a pattern without a demand matrix is refused on every rank (status 2, one
    line on rank 0), also when the ranks share resiliency samples."""
    from mpi4py import MPI

    from pdes.cli import main
    comm = MPI.COMM_WORLD
    sf5 = ["slimfly", "--set", "topology.q=5"]
    for only in ("throughput", "throughput,resiliency"):
        for net, bad, key in (
                (sf5, ["--max-lp-variables", "1000"], "--only: throughput"),
                (sf5, ["--traffic", "hotspot"], "--traffic"),
                # the unrestricted LP fits, the minimal-path one (61,697 variables) is found
                # too large by rank 0 alone, after the shared samples
                (["hypercube", "--set", "topology.n=6"],
                 ["--restrict", "min", "--pair-fractions", "1", "--max-lp-variables", "30000"],
                 "--only: throughput: the restricted LP")):
            capfd.readouterr()
            status = main(["analyze", *net, "--only", only, "--samples", "2", *bad])
            err = capfd.readouterr().err
            assert_refused_on_every_rank(
                comm, status, err, lambda line: line.startswith(f"pdes: error: {key}"), (only, bad))
            comm.Barrier()
