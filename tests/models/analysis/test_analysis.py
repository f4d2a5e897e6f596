"""Tests of the structural analyses (``models.analysis``) and ``python -m pdes analyze``."""
import functools
import json
import threading

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from models.analysis import (ANALYSES, DEFAULT_ANALYSES, analytic_bisection, analyze,
                             bisection, cost, moore_report, parse_only, path_metrics, power,
                             resiliency, router_radix)
from models.analysis.cost import CABLE_PRESETS, ROUTER_PRESETS, cable_cost_per_gbps
from models.core.errors import ParameterError
from models.layout import build_layout
from models.metrics import moore_bound
from models.topology import build, from_edges
from tests.helpers import ROOT, run_pdes


def scipy_distances(topo):
    n = topo.n_routers
    u, v = topo.links[:, 0], topo.links[:, 1]
    g = sp.coo_matrix((np.ones(u.size), (u, v)), shape=(n, n)).tocsr()
    return shortest_path(g, directed=False, unweighted=True)


def ring(n):
    u = np.arange(n)
    return from_edges("ring", {}, n, u, (u + 1) % n, 1, 0)


# ----------------------------------------------------------------------------- paths / Moore
def test_moore_bound_000_numbers():
    """000 Sec. II-B3: k'=96, D=2 gives 9,217; the MMS graph (q=64) has 8,192 routers, ~12% fewer."""
    assert moore_bound(96, 2) == 9217
    topo = build("slimfly", {"q": 64})
    assert topo.n_routers == 8192 and int(topo.degree.max()) == 96
    m = moore_report(topo, 2)
    assert m["bound"] == 9217 and m["ratio"] == pytest.approx(8192 / 9217)
    assert 0.11 < 1 - m["ratio"] and m["bound"] / topo.n_routers - 1 == pytest.approx(0.125, abs=0.001)


def test_moore_hoffman_singleton_and_bdf():
    """SF q=5 (Hoffman-Singleton) meets the Moore bound; indirect networks have no Moore ratio."""
    rep = analyze(build("slimfly", {"q": 5}), only="moore")
    assert rep["moore"]["bound"] == 50 and rep["moore"]["ratio"] == 1.0
    assert analyze(build("oft", {"k": 4}), only="moore")["moore"]["applicable"] is False


def test_paths_slimfly_known_values():
    """SF q=5: diameter 2, router average distance (7*1 + 42*2)/49, 350 adjacent ordered pairs."""
    pm = path_metrics(build("slimfly", {"q": 5}))
    assert pm["router"]["diameter"] == 2 and pm["endpoint"]["diameter"] == 2
    assert pm["router"]["avg_distance"] == pytest.approx(91 / 49)
    assert pm["router"]["histogram"] == [0, 350, 2100]
    assert pm["min_paths"]["max"] == 1.0 and pm["min_paths"]["frac_multi"] == 0.0


def test_paths_dragonfly_against_scipy():
    """DF h=2: diameter 3; router and endpoint-weighted distances equal an independent all-pairs BFS."""
    topo = build("dragonfly", {"h": 2})
    pm = path_metrics(topo)
    d = scipy_distances(topo)
    n = topo.n_routers
    assert pm["router"]["diameter"] == 3 == int(d.max())
    assert pm["router"]["avg_distance"] == pytest.approx(d.sum() / (n * (n - 1)))
    p = topo.endpoints.astype(float)
    w = np.outer(p, p) - np.diag(p)
    assert pm["endpoint"]["avg_distance"] == pytest.approx((w * d).sum() / w.sum())
    hist = np.bincount(d.astype(int).ravel())
    hist[0] -= n  # a router is not paired with itself
    assert pm["router"]["histogram"] == hist.tolist()
    assert sum(pm["endpoint"]["histogram"]) == pytest.approx(1.0)


@pytest.mark.parametrize("name, params, router_diameter", [
    ("oft", {"k": 4}, 3), ("oft", {"k": 6}, 3), ("mlfm", {"h": 4}, 4), ("mlfm", {"h": 6}, 4)])
def test_paths_indirect_endpoint_diameter_two(name, params, router_diameter):
    """OFT and MLFM (001 Sec. 2.2): endpoint-to-endpoint router distance at most 2."""
    pm = path_metrics(build(name, params))
    assert pm["endpoint"]["diameter"] == 2
    assert pm["router"]["diameter"] == router_diameter


def test_paths_oft_counterpart_diversity():
    """k-OFT: counterpart routers (0,i) and (2,i) have k minimal paths (001 Sec. 2.3.3)."""
    pm = path_metrics(build("oft", {"k": 4}))
    assert pm["min_paths"]["max"] >= 4 and pm["min_paths"]["frac_multi"] > 0


def test_paths_slimfly_path_diversity_001_004():
    """SF q=23: ~1.1 minimal paths between non-adjacent routers, max 8 (001); SP 0.05 (004 Table 4)."""
    mp = path_metrics(build("slimfly", {"q": 23}))["min_paths"]
    assert mp["mean_nonadjacent"] == pytest.approx(1.1, abs=0.02)
    assert mp["max"] == 8.0
    assert mp["frac_multi"] == pytest.approx(0.05, abs=0.01)
    mp17 = path_metrics(build("slimfly", {"q": 17}))["min_paths"]
    assert mp17["frac_multi"] == pytest.approx(0.01, abs=0.006)


def test_paths_sampled_sources():
    """With sample=S the histogram counts S sources and the report says so."""
    pm = path_metrics(build("slimfly", {"q": 7}), sample=10, seed=3)
    assert pm["sampled"] == 10 and sum(pm["router"]["histogram"]) == 10 * 97


# ----------------------------------------------------------------------------- bisection
@pytest.mark.parametrize("n", [4, 6, 9])
def test_bisection_hypercube_is_half(n):
    """Hypercube: the balanced bisection cuts exactly N/2 links (000 Sec. III-C)."""
    b = bisection(build("hypercube", {"n": n}))
    N = 2 ** n
    assert b["links_cut"] == N // 2 == b["analytic"]["links"]
    assert b["part_endpoints"] == [N // 2, N // 2] and b["beta"] == 1.0


@pytest.mark.parametrize("k", [4, 8, 16])
def test_bisection_two_level_fat_tree_is_half(k):
    """2-level fat tree: the endpoint-balanced bisection cuts exactly N/2 links."""
    topo = build("fattree", {"k": k, "levels": 2})
    b = bisection(topo)
    assert b["links_cut"] == topo.n_endpoints // 2 == b["analytic"]["links"]
    assert b["part_endpoints"][0] == b["part_endpoints"][1]


def test_bisection_three_level_fat_tree_and_torus():
    """3-level fat tree: N/2; 8x8x8 torus: 2R/8 links (000 Sec. III-C)."""
    ft = build("fattree", {"k": 8, "levels": 3})
    assert bisection(ft)["links_cut"] == 64
    t = build("torus", {"dims": [8, 8, 8]})
    b = bisection(t)
    assert b["links_cut"] == 128 == b["analytic"]["links"]


@pytest.mark.parametrize("gf, beta", [((9, 1, 4, 2), 0.56), ((19, 1, 6, 3), 0.55),
                                      ((33, 1, 8, 4), 0.52), ((55, 1, 10, 5), 0.51),
                                      ((73, 1, 12, 6), 0.51)])
def test_bisection_004_table3_dragonfly_rows(gf, beta):
    """004 Table 3: beta of the Dragonfly rows GF(n,1,a,p) within 0.05."""
    n, q, a, p = gf
    b = bisection(build("galaxyfly", {"n": n, "q": q, "a": a, "p": p}))
    assert abs(b["beta"] - beta) <= 0.05
    assert b["part_endpoints"][0] == b["part_endpoints"][1]


def test_bisection_best_of_seeds_and_validation():
    """The reported cut is the smallest over the seeds; bad seed counts are refused by name."""
    b = bisection(build("dragonfly", {"h": 4}), seeds=6)
    assert b["links_cut"] == min(b["cuts"]) and len(b["cuts"]) == 6
    with pytest.raises(ParameterError, match="bisection.seeds"):
        bisection(build("dragonfly", {"h": 2}), seeds=0)


def test_analytic_bisection_formulas():
    """Analytic values of 000 Sec. III-C: HC R/2, torus 2R/k, FBF Rk/4, DF floor((N+2p^2-1)/4)."""
    assert analytic_bisection(build("hypercube", {"n": 5}))["links"] == 16
    assert analytic_bisection(build("torus", {"dims": [4, 6, 8]}))["links"] == 2 * 192 // 8
    assert analytic_bisection(build("torus", {"dims": [3, 3, 3]})) is None
    assert analytic_bisection(build("hyperx", {"sizes": [4, 4, 4]}))["links"] == 64
    df = analytic_bisection(build("dragonfly", {"h": 2}))
    assert df["links"] == (72 + 8 - 1) // 4 and df["exact"] is False
    assert analytic_bisection(build("slimfly", {"q": 5})) is None


# ----------------------------------------------------------------------------- resiliency
def test_resiliency_ring_known_answer():
    """A 20-router ring survives exactly one failed link (5%); its diameter grows past D0+2 at once."""
    r = resiliency(ring(20), seed=1, samples=5)
    assert r["disconnect"]["fraction"] == 0.05 and r["disconnect"]["min"] == 0.05
    assert r["disconnect"]["exact"]["mean"] == pytest.approx(5.0)
    assert r["baseline"]["diameter"] == 10
    assert r["diameter"]["fraction"] == 0.0


def test_resiliency_monotone_and_reproducible():
    """The curves never increase with the failed share; the same seed gives the same result."""
    topo = build("slimfly", {"q": 5})
    a = resiliency(topo, seed=7, samples=12)
    b = resiliency(topo, seed=7, samples=12)
    assert a == b
    c = a["curve"]
    for key in ("disconnect", "diameter", "distance"):
        assert all(x >= y for x, y in zip(c[key], c[key][1:]))
        assert c[key][0] == 1.0
    # diameter and distance criteria also require connectivity
    assert all(d <= k for d, k in zip(c["diameter"], c["disconnect"]))
    assert a["diameter"]["fraction"] <= a["disconnect"]["fraction"]
    assert resiliency(topo, seed=8, samples=12)["curve"] != c


def test_resiliency_adaptive_ci():
    """Adaptive sampling stops once the 95% CI of the mean threshold is at most ci_width wide."""
    r = resiliency(build("slimfly", {"q": 5}), seed=0, criteria=("disconnect",), ci_width=4.0,
                   max_samples=400)
    assert r["disconnect"]["exact"]["ci95_width"] <= 4.0 and 16 <= r["samples"] < 400
    assert "diameter" not in r


class _ThreadComm:
    """A minimal communicator of ``size`` threads (allgather only)."""

    def __init__(self, rank, shared):
        self.rank, self.shared = rank, shared

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return self.shared["size"]

    def allgather(self, obj):
        sh = self.shared
        sh["slots"][self.rank] = obj
        sh["barrier"].wait()
        out = list(sh["slots"])
        sh["barrier"].wait()
        return out


@pytest.mark.parametrize("size", [2, 3])
def test_resiliency_same_for_any_rank_count(size):
    """Samples split over 2 or 3 ranks give exactly the serial result (adaptive count included)."""
    topo = build("dragonfly", {"h": 2})
    kw = dict(seed=3, max_samples=48, batch=8, threads=1)
    serial = resiliency(topo, **kw)
    shared = {"size": size, "slots": [None] * size, "barrier": threading.Barrier(size)}
    results = [None] * size

    def run(rank):
        results[rank] = resiliency(topo, comm=_ThreadComm(rank, shared), **kw)

    threads = [threading.Thread(target=run, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == serial for r in results)


def test_resiliency_indirect_counts_terminal_routers():
    """Fat tree: connectivity and distances are taken between routers that have endpoints."""
    r = resiliency(build("fattree", {"k": 4, "levels": 2}), seed=0, samples=6)
    assert r["terminal_routers"] == 4 and r["baseline"]["diameter"] == 2


def test_resiliency_bad_parameters():
    """Bad step, samples, criteria or a disconnected network raise ParameterError naming the key."""
    topo = build("slimfly", {"q": 5})
    with pytest.raises(ParameterError, match="resiliency.step"):
        resiliency(topo, step=0.3)
    with pytest.raises(ParameterError, match="resiliency.samples"):
        resiliency(topo, samples=0)
    with pytest.raises(ParameterError, match="resiliency.criteria"):
        resiliency(topo, criteria=("latency",))
    two = from_edges("two", {}, 4, [0, 2], [1, 3], 1, 0)
    with pytest.raises(ParameterError, match="disconnected"):
        resiliency(two)


# ----------------------------------------------------------------------------- cost / power
def test_cost_model_constants():
    """000 Sec. VI-B: electric 0.4079x+0.5771, optical 0.0919x+2.7452 $/Gb/s, router 350.4k-892.3."""
    m = CABLE_PRESETS["fdr10"]
    assert m.gbps == 40.0
    assert cable_cost_per_gbps(1.0, m.electric) == pytest.approx(0.985)
    assert cable_cost_per_gbps(10.0, m.optical) == pytest.approx(3.6642)
    assert ROUTER_PRESETS["fdr10"] == (350.4, -892.3)


def test_cost_power_slimfly_q19_table_iv():
    """SF q=19 p=15 (10,830 endpoints, radix 44) is within 3% of 000 Table IV ($1,033, 8.02 W)."""
    topo = build("slimfly", {"q": 19})
    lay = build_layout(topo)
    c = cost(topo, lay)
    w = power(topo)
    assert topo.n_endpoints == 10830 and c["routers"]["radix_max"] == 44
    routers = 722 * (350.4 * 44 - 892.3)
    cables = 40 * (3971 * (0.4079 * 1 + 0.5771) + 0.0919 * lay.cable_m[~lay.intra_rack].sum()
                   + 2.7452 * 6498)
    assert c["total"] == pytest.approx(routers + cables)
    assert c["per_endpoint"] == pytest.approx(1033, rel=0.03)
    assert w["per_endpoint"] == pytest.approx(722 * 44 * 4 * 0.7 / 10830)
    # Table IV prices the routers at k = 43 (its caption); one port less closes the gap
    c43 = c["per_endpoint"] - 722 * 350.4 / 10830
    assert c43 == pytest.approx(1033, rel=0.005)
    assert 722 * 43 * 2.8 / 10830 == pytest.approx(8.02, abs=0.01)


def test_power_galaxyfly_model_004_table6():
    """004 Sec. 6.2: 2.8 W per port + 10 W per NIC gives 004 Table 6's 19 W per terminal for SF."""
    topo = build("slimfly", {"q": 27, "p_rounding": "floor"})
    assert topo.n_endpoints == 29160 and topo.summary()["router_radix_max"] == 61
    assert round(power(topo, model="galaxyfly")["per_endpoint"]) == 19


def test_cost_options():
    """Radix modes, the electric length rule and endpoint cables change the cost as documented."""
    topo = build("fattree", {"k": 8, "levels": 3})
    lay = build_layout(topo)
    base = cost(topo, lay)
    assert cost(topo, lay, radix="used")["total"] <= base["total"]
    all_el = cost(topo, lay, electric_max_m=1e9)
    assert all_el["cables"]["optical"]["count"] == 0
    ep = cost(topo, lay, endpoint_cables=True)
    assert ep["cables"]["endpoint"]["count"] == 128
    assert ep["total"] == pytest.approx(base["total"] + 128 * 40 * (0.4079 + 0.5771))
    assert router_radix(topo, 10).tolist() == [10] * 80
    with pytest.raises(ParameterError, match="cost.router_radix"):
        router_radix(topo, 4)
    with pytest.raises(ParameterError, match="cost.cables"):
        cost(topo, lay, cables="copper")
    with pytest.raises(ParameterError, match="power.model"):
        power(topo, model="none")


# ----------------------------------------------------------------------------- report / CLI
def test_analyze_report_sections_and_json():
    """analyze() returns every default section (all but throughput and path-sets) in order and
    the report is JSON-serialisable."""
    rep = analyze(build("slimfly", {"q": 5}), samples=4)
    assert rep["analyses"] == list(DEFAULT_ANALYSES) == [a for a in ANALYSES
                                                           if a not in ("throughput", "path-sets")]
    assert [k for k in rep if k in ANALYSES] == list(DEFAULT_ANALYSES)
    json.dumps(rep)
    assert rep["cables"]["cables"]["count"] == 175
    assert parse_only("cost, power") == ("cost", "power")
    with pytest.raises(ParameterError, match="--only"):
        parse_only("bisection,speed")


pdes = functools.partial(run_pdes, cwd=ROOT)       # `python -m pdes ARGS`, in the repository root


def test_cli_analyze_json_and_hdf5(tmp_path):
    """analyze --json prints one object; -o writes an HDF5 file marked pdes-analysis."""
    import h5py
    out = tmp_path / "a.h5"
    proc = pdes("analyze", "slimfly", "--set", "topology.q=5", "--only", "moore,bisection,power",
                "--json", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1
    rep = json.loads(lines[0])
    assert rep["analyses"] == ["moore", "bisection", "power"] and "cost" not in rep
    with h5py.File(out) as f:
        assert f.attrs["format"] == "pdes-analysis" and f.attrs["complete"]
        assert "[topology]" in f.attrs["config_toml"] and f.attrs["pdes_version"]
        assert f["moore"].attrs["bound"] == 50
        assert json.loads(f.attrs["report_json"])["bisection"]["links_cut"] == \
            rep["bisection"]["links_cut"]
    assert [p.name for p in tmp_path.iterdir()] == ["a.h5"]


@pytest.mark.parametrize("args, key", [
    (("--only", "bisection,speed"), "--only"),
    (("--samples", "-3"), "--samples"),
    (("--router-radix", "4", "--only", "cost"), "--router-radix"),
    (("--set", "topology.q=6"), "topology.q"),
])
def test_cli_analyze_bad_input(args, key):
    """Bad input prints one 'pdes: error:' line naming the key and exits with status 2."""
    proc = pdes("analyze", "slimfly", *args)
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pdes: error:") and key in err[0]


@pytest.mark.mpi(min_size=2)
def test_resiliency_mpi_equals_serial():
    """Under mpiexec the resiliency result equals the single-process result."""
    from mpi4py import MPI
    topo = build("dragonfly", {"h": 2})
    assert resiliency(topo, seed=2, comm=MPI.COMM_WORLD, max_samples=48) == \
        resiliency(topo, seed=2, max_samples=48)


# ----------------------------------------------------------------------------- channel load
def _pair_flow(topo, dist):
    """Sum over ordered endpoint pairs of distance / (E - 1): the total channel load."""
    p = np.asarray(topo.endpoints, dtype=np.float64)
    d = np.asarray(dist, dtype=np.float64)
    return float(p @ d @ p) / (topo.n_endpoints - 1)


@pytest.mark.parametrize("name,params", [
    ("slimfly", {"q": 5}), ("galaxyfly", {"n": 3, "q": 5, "a": 2, "p": 2}),
    ("dragonfly", {"h": 2}), ("fattree", {"k": 4}), ("hypercube", {"n": 4})])
def test_channel_load_conserves_flow(name, params):
    from models.analysis.load import channel_load
    from models.metrics import distance_matrix
    topo = build(name, params)
    dist = distance_matrix(topo)
    total = _pair_flow(topo, dist)
    for split in ("hop", "path"):
        L = channel_load(topo, dist, split)
        assert L.shape == (2 * topo.n_links,) and (L >= 0).all()
        assert L.sum() == pytest.approx(total, rel=1e-12)


def test_channel_load_symmetric_networks_are_flat():
    from models.analysis.load import load_report
    hc = build("hypercube", {"n": 4})
    rep = load_report(hc)
    # n-cube, p endpoints per router: every channel carries the mean
    for split in ("hop", "path"):
        assert rep[split]["max"] == pytest.approx(rep[split]["mean"], rel=1e-12)
        assert rep[split]["channels_near_max"] == 2 * hc.n_links
        assert rep[split]["saturation_bound"] == pytest.approx(1 / rep[split]["max"])


def test_channel_load_splits_differ_where_path_counts_do():
    from models.analysis.load import channel_load
    from models.metrics import distance_matrix
    # endpoints on routers 0 and 5 only; 0 -> 5 has 3 minimal paths: 0-1-3-5, 0-1-4-5 and
    # 0-2-3-5, so router 0 sends 1/2 of that flow to 1 per hop but 2/3 per path
    u = np.array([0, 0, 1, 1, 2, 3, 4])
    v = np.array([1, 2, 3, 4, 3, 5, 5])
    topo = from_edges("diamond", {}, 6, u, v, np.array([1, 0, 0, 0, 0, 1]), 0)
    dist = distance_matrix(topo)
    hop = channel_load(topo, dist, "hop")
    path = channel_load(topo, dist, "path")
    lo = topo.port_offsets[0]
    to = {int(topo.port_neighbor[j]): topo.port_out_channel[j] for j in range(lo, lo + 2)}
    assert hop[to[1]] == pytest.approx(0.5) and hop[to[2]] == pytest.approx(0.5)
    assert path[to[1]] == pytest.approx(2 / 3) and path[to[2]] == pytest.approx(1 / 3)


def test_channel_load_matches_simulation():
    """pdes's min routing draws uniformly among minimal next hops: the per-hop split."""
    from models.analysis.load import channel_load
    from pdes import config as C
    from pdes.build import prepare
    from pdes.engine import run_local
    cfg = C.resolve({}, ["topology.name=galaxyfly", "topology.n=3", "topology.q=5",
                         "topology.a=2", "topology.p=2", "traffic.load=0.2",
                         "router.link_latency=1", "measure.warmup_cycles=1000",
                         "measure.measure_cycles=20000", "measure.drain_cycles=2000"])
    prep = prepare(cfg)
    res = run_local(cfg, prep=prep)
    sim = np.asarray(res["link_flits"], dtype=np.float64) / 20000
    L = 0.2 * channel_load(prep.topo, prep.dist, "hop")
    assert np.ptp(L) > 0.1 * L.mean()            # an uneven network: the test can tell
    assert np.abs(sim - L).max() < 0.08 * L.mean()
    assert np.corrcoef(sim, L)[0, 1] > 0.98
