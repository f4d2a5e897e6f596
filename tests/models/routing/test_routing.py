"""Routing algorithms: delivery, hop bounds, VC order, static deadlock check, determinism."""
import numpy as np
import pytest

from models.core.errors import ParameterError
from models.routing.cdg import check
from pdes import config as C
from pdes.build import plan_routing, prepare
from pdes.engine import run_local
from pdes.timing import channel_cycles, router_cycles
from tests.helpers import assert_same_results, cfg_builder

TOPOS = {
    "sf": ["topology.q=5"],
    "df": ["topology.name=dragonfly", "topology.h=2"],
    "mlfm": ["topology.name=mlfm", "topology.h=3"],
    "oft": ["topology.name=oft", "topology.k=4"],
}
ALGS = ["min", "valiant", "ugal_l", "ugal_g"]
cfg_of = cfg_builder("routing", "router.link_latency=2")


@pytest.mark.parametrize("alg", ALGS)
@pytest.mark.parametrize("topo", sorted(TOPOS))
@pytest.mark.parametrize("load", [0.2, 1.0])
def test_delivery_hop_bound_and_vc_order(alg, topo, load):
    """Every algorithm delivers below saturation, stays within its declared hops above it.

    The run itself enforces conservation (audit) and non-decreasing VC classes
    along every path (the kernel stops with an error otherwise).
    """
    res = run_local(cfg_of(*TOPOS[topo], f"routing.algorithm={alg}", f"traffic.load={load}"))
    s = res["summary"]
    plan = res["prepared"].plan
    hops = np.nonzero(res["hist_hops"])[0]
    assert hops.max() <= plan.max_hops
    if load == 0.2:
        assert not s["saturated"]
        assert s["accepted_load"] == pytest.approx(0.2, rel=0.05)


def test_valiant_path_lengths():
    """Valiant: at most 4 hops on SF; exactly 4 on MLFM and OFT for packets between different routers."""
    sf = run_local(cfg_of(*TOPOS["sf"], "routing.algorithm=valiant"))
    assert np.nonzero(sf["hist_hops"])[0].max() == 4
    for topo in ("mlfm", "oft"):
        res = run_local(cfg_of(*TOPOS[topo], "routing.algorithm=valiant", "traffic.pattern=randperm"))
        h = res["hist_hops"]
        assert h.sum() > 0 and set(np.nonzero(h)[0]) <= {0, 4}, (topo, np.nonzero(h)[0])


def test_valiant_cap():
    """routing.max_hops caps Valiant paths (000 Sec. IV-B: 3 hops on SF)."""
    res = run_local(cfg_of(*TOPOS["sf"], "routing.algorithm=valiant", "routing.max_hops=3"))
    assert np.nonzero(res["hist_hops"])[0].max() == 3
    assert res["prepared"].plan.max_hops == 3


def test_papers_shape_on_worst_case():
    """Minimal routing collapses under the SF worst case; Valiant and UGAL-L do not."""
    acc = {}
    for alg in ("min", "valiant", "ugal_l"):
        res = run_local(cfg_of("topology.q=7", f"routing.algorithm={alg}", "traffic.pattern=worst_case",
                               "traffic.load=0.4", "router.link_latency=1"))
        acc[alg] = res["summary"]["accepted_load"]
    p = 6  # SF q=7: k' = 11, p = 6 -> minimal limit 1/(2p)
    assert acc["min"] == pytest.approx(1 / (2 * p), rel=0.15)
    assert acc["valiant"] > 3 * acc["min"] and acc["ugal_l"] > 3 * acc["min"]


@pytest.mark.parametrize("alg,sets", [
    ("ugal_l", []), ("ugal_g", []), ("dragonfly_ugal", ["topology.name=dragonfly", "topology.h=3"])])
def test_ugal_is_minimal_at_low_load_with_long_links(alg, sets):
    """With layout latencies (long links hold many flits in flight) UGAL at low uniform load
    takes the minimal paths: the queue it compares is the backlog beyond each link's credit
    round trip, not the flits a link carries at any load."""
    base = ["measure.warmup_cycles=500", "measure.measure_cycles=1000",
            "measure.sample_period=100", "measure.drain_cycles=1000", "traffic.load=0.1", *sets]
    mn = run_local(C.resolve({}, base + (["routing.vc_scheme=dragonfly"] if sets else [])))
    ug = run_local(C.resolve({}, base + [f"routing.algorithm={alg}"]))
    assert ug["summary"]["hops_mean"] == pytest.approx(mn["summary"]["hops_mean"], abs=0.01)


def test_dragonfly_ugal_spreads_the_worst_case():
    """On a Dragonfly under the group-shift worst case UGAL-L accepts far above minimal
    routing (one global link per group pair), near Valiant (Kim et al. 2008 Fig. 8)."""
    acc = {}
    for alg in ("min", "dragonfly_valiant", "dragonfly_ugal"):
        res = run_local(cfg_of("topology.name=dragonfly", "topology.h=3", f"routing.algorithm={alg}",
                               *(["routing.vc_scheme=dragonfly"] if alg == "min" else []),
                               "traffic.pattern=worst_case", "traffic.load=0.3",
                               "measure.measure_cycles=1500"))
        acc[alg] = res["summary"]["accepted_load"]
    assert acc["dragonfly_ugal"] > 4 * acc["min"], acc
    assert acc["dragonfly_ugal"] > 0.75 * acc["dragonfly_valiant"], acc


def test_ugal_l_goes_minimal_at_low_load():
    """UGAL-L with a threshold routes (almost) everything minimally at low uniform load."""
    res = run_local(cfg_of(*TOPOS["sf"], "routing.algorithm=ugal_l", "routing.threshold=0.5",
                           "traffic.load=0.1"))
    assert res["summary"]["hops_mean"] < 1.9


@pytest.mark.parametrize("alg", ["valiant", "ugal_l", "ugal_g"])
def test_adaptive_split_is_bit_identical(alg):
    """Adaptive and random routing give identical results when the routers are split into parts."""
    extra = {"ugal_g": ["routing.epoch=50"], "ugal_l": ["routing.n_indirect=3"]}.get(alg, [])
    cfg = cfg_of(*TOPOS["sf"], f"routing.algorithm={alg}", "traffic.load=0.7", *extra)
    prep = prepare(cfg)
    a = run_local(cfg, prep=prep)
    R = prep.topo.n_routers
    for owner in (np.arange(R) % 2, np.random.default_rng(3).integers(0, 3, R)):
        b = run_local(cfg, prep=prep, owner=owner)
        assert_same_results(a, b)


SHIPPED = [(t, a) for t in ("sf", "df", "mlfm", "oft") for a in ALGS] + \
          [("mlfm", "valiant phase"), ("oft", "ugal_l phase"), ("mlfm", "min phase")]
# (Galaxyfly's and the layered routings' defaults: in their own test files)


@pytest.mark.parametrize("topo,alg", SHIPPED)
def test_static_check_passes_shipped_defaults(topo, alg):
    """The channel dependency graph of every shipped (topology, routing) default is acyclic."""
    name, *rest = alg.split()
    sets = list(TOPOS[topo]) + [f"routing.algorithm={name}"] + \
        (["routing.vc_scheme=phase"] if rest else [])
    topo_, dist, plan, nv = plan_routing(cfg_of(*sets))
    res = check(topo_, dist, plan, nv)
    assert res["ok"], res["reason"]


@pytest.mark.parametrize("sets", [
    ["topology.q=5", "routing.vc_scheme=phase"],                                  # 1 class on SF
    ["topology.name=mlfm", "topology.h=3", "routing.algorithm=valiant", "routing.vc_scheme=phase",
     "routing.intermediates=all"],                                                # GRs as mids
    ["topology.name=torus", "topology.dims=[6]", "routing.vc_scheme=phase"],      # a ring, 1 class
])
def test_static_check_finds_cycle_in_broken_scheme(sets):
    """A VC scheme that allows a cyclic dependency is reported with the channels on the cycle."""
    topo, dist, plan, nv = plan_routing(cfg_of(*sets))
    res = check(topo, dist, plan, nv)
    assert not res["ok"] and len(res["cycle"]) >= 3 and "cycle of" in res["reason"]
    with pytest.raises(ParameterError, match="routing.vc_scheme: .*can deadlock"):
        prepare(cfg_of(*sets))


@pytest.mark.parametrize("sets,key", [
    (["routing.algorithm=valiant", "router.num_vcs=2"], "router.num_vcs"),
    (["routing.algorithm=ugal_l", "routing.n_indirect=0"], "routing.n_indirect"),
    (["routing.algorithm=ugal_l", "routing.threshold=2"], "routing.threshold"),
    (["routing.algorithm=ugal_g", "routing.epoch=0"], "routing.epoch"),
    (["routing.algorithm=valiant", "routing.max_hops=-1"], "routing.max_hops"),
    (["routing.algorithm=ugal_l", "routing.max_hops=1"], "routing.max_hops: must be 0 .no cap. or at least 2"),
    (["routing.algorithm=min", "routing.n_indirect=3"], "routing.n_indirect"),
])
def test_bad_routing_parameters(sets, key):
    """Bad routing parameters are refused with a message naming the key."""
    with pytest.raises(ParameterError, match=key):
        prepare(cfg_of(*TOPOS["sf"], *sets))


def test_check_command_exit_codes(run_pdes):
    """`pdes check` exits 0 for a deadlock-free config and 1 when it finds a cycle."""
    ok = run_pdes("check", "--set", "routing.algorithm=valiant")
    assert ok.returncode == 0 and "deadlock-free" in ok.stdout
    bad = run_pdes("check", "--set", "routing.vc_scheme=phase")
    assert bad.returncode == 1 and "DEADLOCK POSSIBLE" in bad.stdout


def test_anca_beats_oblivious_minimal_on_fat_tree():
    """ANCA (adaptive up) carries more than oblivious minimal routing on a fat tree, same VCs."""
    acc = {}
    for alg in ("anca", "min"):
        res = run_local(cfg_of("topology.name=fattree", "topology.k=8", f"routing.algorithm={alg}",
                               "router.num_vcs=4", "traffic.load=1.0", "router.link_latency=1"))
        acc[alg] = res["summary"]["accepted_load"]
    assert acc["anca"] > 1.05 * acc["min"], acc


def test_anca_only_on_fat_trees():
    """anca refuses other topologies with a message naming routing.algorithm."""
    with pytest.raises(ParameterError, match="routing.algorithm: 'anca' is for fat trees"):
        prepare(cfg_of(*TOPOS["sf"], "routing.algorithm=anca"))


@pytest.mark.parametrize("sets", [
    ["topology.name=fattree", "topology.k=4", "routing.algorithm=anca"],
    [*TOPOS["sf"], "routing.algorithm=min_adaptive"],
])
def test_adaptive_minimal_exact_and_deadlock_free(sets):
    """Adaptive minimal routing passes the static check and is exact under a split."""
    cfg = cfg_of(*sets, "traffic.load=0.8")
    topo, dist, plan, nv = plan_routing(cfg)
    assert check(topo, dist, plan, nv)["ok"]
    prep = prepare(cfg)
    a = run_local(cfg, prep=prep)
    b = run_local(cfg, prep=prep, owner=np.arange(prep.topo.n_routers) % 2)
    assert_same_results(a, b)


SKYWALK = ["topology.name=skywalk", "topology.z=4", "topology.c=16", "topology.d_i=3",
           "topology.d_o=2", "topology.p=2", "layout.preset=skywalk", "router.link_latency=0"]


def test_fastest_lower_latency_than_nearest():
    """Fastest routing (002's FR) has the analytic lowest-latency zero-load latency, below nearest's.

    Zero-load network latency of fastest routing = 2 * (endpoint_latency + x) + W(r_s, r_d) + D,
    where W sums (D + x + link latency) over the hops of a lowest-latency path, averaged over
    ordered pairs of distinct endpoints (D, x: a router's cycles and a channel's extra cycle,
    docs/router-model.md#pipeline-timing).
    """
    lat = {}
    for alg in ("nearest", "fastest"):
        res = run_local(cfg_of(*SKYWALK, f"routing.algorithm={alg}", "traffic.load=0.005",
                               "measure.measure_cycles=6000"))
        lat[alg] = res["summary"]["network_latency_mean"]
        if alg == "fastest":
            prep = res["prepared"]
            r = prep.cfg["router"]
            x, D = channel_cycles(r), router_cycles(r)
            W = prep.plan.tables["wdist"].astype(np.float64)
            p = prep.topo.endpoints.astype(np.float64)
            pair = np.outer(p, p)
            np.fill_diagonal(pair, p * (p - 1))
            E = p.sum()
            expected = 2 * (r["endpoint_latency"] + x) + D + (pair * W).sum() / (E * (E - 1))
            assert lat["fastest"] == pytest.approx(expected, rel=0.02)
    assert lat["fastest"] < lat["nearest"], lat


def test_fastest_plan_and_exactness():
    """Fastest paths may be longer in hops than the diameter; VCs follow; a split changes nothing."""
    cfg = cfg_of(*SKYWALK, "routing.algorithm=fastest", "traffic.load=0.3")
    prep = prepare(cfg)
    assert prep.plan.max_hops >= int(prep.dist.max())
    assert prep.rp.num_vcs == prep.plan.max_hops
    a = run_local(cfg, prep=prep)
    assert np.nonzero(a["hist_hops"])[0].max() <= prep.plan.max_hops
    b = run_local(cfg, prep=prep, owner=np.arange(prep.topo.n_routers) % 3)
    assert_same_results(a, b)


@pytest.mark.parametrize("sets,bound", [
    (["topology.name=slimfly", "topology.q=7"], 1 / 12),        # 1/(2p), p = 6
    (["topology.name=mlfm", "topology.h=4"], 1 / 4),            # 1/h
    (["topology.name=oft", "topology.k=4"], 1 / 4),             # 1/k
])
def test_worst_case_saturates_at_analytic_bound_under_minimal(sets, bound):
    """Minimal routing under the topology's worst case accepts 1/(2p), 1/h, 1/k within 10% (001 4.3.1)."""
    cfg = C.resolve({}, sets + ["traffic.pattern=worst_case", "traffic.load=1.0",
                                "router.link_latency=1", "measure.warmup_cycles=1000",
                                "measure.measure_cycles=2000", "measure.drain_cycles=100"])
    assert run_local(cfg)["summary"]["accepted_load"] == pytest.approx(bound, rel=0.10)


DF = ["topology.name=dragonfly", "topology.h=2", "router.link_latency=2"]


def test_dragonfly_kim_vc_classes_and_bounds():
    """Dragonfly-minimal routing: 2 VC classes, at most 3 hops, worst case 1/(a*p) (one global link)."""
    res = run_local(cfg_of(*DF, "routing.vc_scheme=dragonfly", "traffic.pattern=worst_case",
                           "traffic.load=1.0", "measure.measure_cycles=1500"))
    prep = res["prepared"]
    assert prep.plan.vcs_needed == 2 and np.nonzero(res["hist_hops"])[0].max() <= 3
    a, p = 4, 2
    assert res["summary"]["accepted_load"] == pytest.approx(1 / (a * p), rel=0.1)


@pytest.mark.parametrize("alg", ["dragonfly_ugal", "dragonfly_valiant"])
def test_dragonfly_nonminimal_exact_and_bounded(alg):
    """Dragonfly UGAL/Valiant through intermediate groups: <= 5 hops, 3 classes, exact under a split."""
    cfg = cfg_of(*DF, f"routing.algorithm={alg}", "traffic.pattern=worst_case", "traffic.load=0.4")
    prep = prepare(cfg)
    assert prep.plan.vcs_needed == 3 and prep.plan.max_hops == 5
    a = run_local(cfg, prep=prep)
    assert np.nonzero(a["hist_hops"])[0].max() <= 5
    b = run_local(cfg, prep=prep, owner=np.arange(prep.topo.n_routers) % 3)
    assert_same_results(a, b)
    topo, dist, plan, nv = plan_routing(cfg)
    assert check(topo, dist, plan, nv)["ok"]
    if alg == "dragonfly_valiant":
        assert a["summary"]["accepted_load"] > 0.3       # does not collapse like minimal (1/8)


def test_dragonfly_routing_only_on_dragonfly():
    """Dragonfly routing on another topology names routing.algorithm."""
    with pytest.raises(ParameterError, match="routing.algorithm: Dragonfly routing needs"):
        prepare(cfg_of(*TOPOS["sf"], "routing.algorithm=dragonfly_ugal"))


# ------------------------------------------------------------------ Galaxyfly NAR / NAL / NAG
def test_min_on_a_dragonfly_is_booksims_hierarchical_route():
    """`min` on a Dragonfly is the local-global-local route (BookSim's min there); graph-minimal
    routing is `vc_scheme = hop` (some paths through a third group)."""
    _, dist, plan, _ = plan_routing(cfg_of(*DF, "routing.algorithm=min"))
    assert (plan.kernel, plan.scheme, plan.vcs_needed, plan.max_hops) == \
        ("dragonfly_min", "dragonfly", 2, 3)
    _, _, hop, _ = plan_routing(cfg_of(*DF, "routing.algorithm=min", "routing.vc_scheme=hop"))
    assert (hop.kernel, hop.scheme) == ("min", "hop")
    a = run_local(cfg_of(*DF, "routing.algorithm=min", "traffic.load=0.3"))
    b = run_local(cfg_of(*DF, "routing.algorithm=min", "routing.vc_scheme=hop", "traffic.load=0.3"))
    assert a["summary"]["hops_mean"] > b["summary"]["hops_mean"]    # l-g-l is not always shortest
    _, _, sf, _ = plan_routing(cfg_of("routing.algorithm=min"))
    assert (sf.kernel, sf.scheme) == ("min", "hop")


@pytest.mark.parametrize("topo,algs", [
    ("sf", ("valiant", "ugal_l", "ugal_g")),
    ("df", ("min", "dragonfly_valiant", "dragonfly_ugal")),
])
def test_source_variants_share_one_router_stage(topo, algs):
    """Valiant, UGAL-L and UGAL-G (and Dragonfly's minimal, Valiant and UGAL-L routings) run
    one compiled router stage, told apart by their variant parameter."""
    from models.core.routing import kernel_of, pack
    from models.routing.nonminimal import A_VARIANT
    from pdes.kernels.generate import module_name
    names, variants = set(), []
    for alg in algs:
        cfg = cfg_of(*TOPOS[topo], f"routing.algorithm={alg}")
        prep = prepare(cfg)
        kernel = kernel_of(alg, prep.plan)
        names.add(module_name(kernel))
        variants.append(int(pack(alg, prep.plan, cfg)[1][A_VARIANT]))
    assert len(names) == 1, names
    assert len(set(variants)) == len(algs), variants


@pytest.mark.parametrize("sets, alg, valiant, load", [
    (["topology.name=dragonfly", "topology.h=2"], "dragonfly_ugal", "dragonfly_valiant", 0.2),
    (["topology.q=5"], "ugal_l", "valiant", 0.25),
])
def test_ugal_sees_congestion_with_vcs_shorter_than_the_round_trip(sets, alg, valiant, load):
    """With VCs of fewer flits than the credit round trip (4 against 6-10 cycles) a full
    minimal port must still read as a backlog: UGAL-L under the worst case accepts near
    Valiant, far above minimal routing (it accepted what MIN does, 0.06 on the Dragonfly,
    when the whole round trip was subtracted from the occupancy)."""
    acc = {}
    for a in ("min", valiant, alg):
        res = run_local(cfg_of(*sets, f"routing.algorithm={a}", "router.vc_buffer_flits=4",
                               "traffic.pattern=worst_case", f"traffic.load={load}",
                               "measure.warmup_cycles=500", "measure.measure_cycles=1500",
                               "measure.drain_cycles=3000"))
        acc[a] = res["summary"]["accepted_load"]
    assert acc[alg] > 0.7 * acc[valiant], acc
    assert acc[alg] > 2 * acc["min"], acc
