"""Layered routings (layered, rues): delivery, hop bounds, VC order, the layers' construction,
bad parameters, determinism."""
import numpy as np
import pytest

from models.core.errors import ParameterError
from models.routing.cdg import check
from pdes.build import plan_routing, prepare
from pdes.engine import run_local
from tests.helpers import assert_same_results, cfg_builder

SF = ["topology.q=5"]
DF = ["topology.name=dragonfly", "topology.h=2"]
cfg_of = cfg_builder("routing", "router.link_latency=2")


LAYER_TOPOS = {"sf": SF, "df": DF}


@pytest.mark.parametrize("alg", ["layered", "rues"])
@pytest.mark.parametrize("topo", sorted(LAYER_TOPOS))
@pytest.mark.parametrize("load", [0.2, 1.0])
def test_layered_delivery_hop_bound_and_vc_order(alg, topo, load):
    """Layered routing and RUES deliver below saturation and stay within their declared hops
    (hop-index classes, checked by the kernel) above it; the conservation audit passes."""
    res = run_local(cfg_of(*LAYER_TOPOS[topo], f"routing.algorithm={alg}", f"traffic.load={load}"))
    s = res["summary"]
    plan = res["prepared"].plan
    assert np.nonzero(res["hist_hops"])[0].max() <= plan.max_hops == plan.vcs_needed
    if load == 0.2:
        assert not s["saturated"]
        assert s["accepted_load"] == pytest.approx(0.2, rel=0.05)


def layer_path_lengths(topo, tab, lay):
    """Hops from every endpoint router to every other one following layer ``lay``'s table."""
    off, nbr = topo.port_offsets, topo.port_neighbor
    ep = np.nonzero(topo.endpoints > 0)[0]
    out = {}
    for s in ep:
        for d in ep:
            if s == d:
                continue
            x, h = int(s), 0
            while x != d and h <= topo.n_routers:
                k = tab[lay - 1, x, d]
                if k < 0:
                    h = -1
                    break
                x = int(nbr[off[x] + k])
                h += 1
            out[(int(s), int(d))] = h
    return out


@pytest.mark.parametrize("topo", sorted(LAYER_TOPOS))
def test_layered_construction_properties(topo):
    """Layers >= 1 route every pair along a loop-free path of length dist or dist + 1 (almost
    minimal where a path was found: a fraction of the pairs in every layer), the plan's
    statistics agree with the tables, and layers = 1 is exactly (graph-)minimal routing."""
    topo_, dist, plan, nv = plan_routing(cfg_of(*LAYER_TOPOS[topo], "routing.algorithm=layered"))
    tab = plan.tables["lay_port"]
    assert tab.dtype == np.int16 and tab.shape == (3, topo_.n_routers, topo_.n_routers)
    for st in plan.info["layers"]:
        lens = layer_path_lengths(topo_, tab, st["layer"])
        extra = np.array([h - int(dist[s, d]) for (s, d), h in lens.items()])
        assert set(extra.tolist()) <= {0, 1}
        assert int((extra == 1).sum()) == st["almost_minimal"] and len(extra) == st["pairs"]
        assert 0.2 < st["almost_minimal"] / st["pairs"] < 1.0
        assert st["inserted"] <= st["almost_minimal"]
    assert 0.2 < plan.info["almost_minimal_fraction"] < 1.0
    cfg_min = cfg_of(*LAYER_TOPOS[topo], "routing.algorithm=min", "routing.vc_scheme=hop",
                     "traffic.load=0.5", "router.num_vcs=3")
    cfg_l1 = cfg_of(*LAYER_TOPOS[topo], "routing.algorithm=layered", "routing.layers=1",
                    "traffic.load=0.5", "router.num_vcs=3")
    a, b = run_local(cfg_min), run_local(cfg_l1)
    assert a["summary"] == b["summary"] and np.array_equal(a["link_flits"], b["link_flits"])


def test_layered_construction_is_seeded():
    """The layers depend on measure.seed only; on SF q=13 (338 routers) with 8 layers every
    layer gives most pairs an almost-minimal path (construction time: bench_topology.py)."""
    base = ["topology.q=13", "topology.p=9", "routing.algorithm=layered", "routing.layers=8"]
    topo, dist, plan, nv = plan_routing(cfg_of(*base))
    assert plan.max_hops == 3
    assert all(st["almost_minimal"] > 0.5 * st["pairs"] for st in plan.info["layers"])
    again = plan_routing(cfg_of(*base))[2]
    other = plan_routing(cfg_of(*base, "measure.seed=2"))[2]
    assert np.array_equal(plan.tables["lay_port"], again.tables["lay_port"])
    assert not np.array_equal(plan.tables["lay_port"], other.tables["lay_port"])


def test_rues_layers_and_fallback():
    """RUES layers keep round(p * links) links and route on their shortest paths; pairs cut off
    in a layer use layer 0 (minimal), so everything is still delivered."""
    cfg = cfg_of(*SF, "routing.algorithm=rues", "routing.preserve=0.3",
                 "routing.layers=3", "traffic.load=0.05")
    res = run_local(cfg)
    plan = res["prepared"].plan
    topo = res["prepared"].topo
    assert all(st["links"] == round(0.3 * topo.n_links) for st in plan.info["layers"])
    assert sum(st["unreachable_pairs"] for st in plan.info["layers"]) > 0
    assert not res["summary"]["saturated"]
    assert np.nonzero(res["hist_hops"])[0].max() <= plan.max_hops
    for st in plan.info["layers"]:
        lens = layer_path_lengths(topo, plan.tables["lay_port"], st["layer"])
        assert max(lens.values()) == st["longest"] <= plan.max_hops


@pytest.mark.parametrize("sets,key", [
    (["routing.algorithm=layered", "routing.layers=0"], "routing.layers"),
    (["routing.algorithm=layered", "routing.layers=1000000"], "routing.layers: .*GiB"),
    (["routing.algorithm=layered", "routing.layer_select=first"], "routing.layer_select"),
    (["routing.algorithm=rues", "routing.preserve=0"], "routing.preserve"),
    (["routing.algorithm=rues", "routing.preserve=1.5"], "routing.preserve"),
    (["routing.algorithm=layered", "router.num_vcs=2"], "router.num_vcs"),
])
def test_layered_bad_parameters(sets, key):
    """Bad layered/RUES parameters are refused with one line naming the key."""
    with pytest.raises(ParameterError, match=key) as e:
        prepare(cfg_of(*SF, *sets))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("sets", [
    ["routing.algorithm=layered"],
    ["routing.algorithm=layered", "routing.layer_select=round_robin", "routing.layers=8"],
    ["routing.algorithm=rues", "routing.preserve=0.4"],
])
def test_layered_split_is_bit_identical(sets):
    """Layer choices are keyed by the packet id: a split run is identical to the unsplit one."""
    cfg = cfg_of(*SF, *sets, "traffic.load=0.7")
    prep = prepare(cfg)
    a = run_local(cfg, prep=prep)
    R = prep.topo.n_routers
    for owner in (np.arange(R) % 2, np.random.default_rng(7).integers(0, 3, R)):
        b = run_local(cfg, prep=prep, owner=owner)
        assert_same_results(a, b)


def test_layered_beats_minimal_under_the_slim_fly_worst_case():
    """Almost-minimal layers spread the SF worst case that minimal routing concentrates."""
    acc = {}
    for alg in ("min", "layered"):
        res = run_local(cfg_of(*SF, f"routing.algorithm={alg}", "traffic.pattern=worst_case",
                               "traffic.load=1.0", "router.num_vcs=3"))
        acc[alg] = res["summary"]["accepted_load"]
    assert acc["layered"] > 1.3 * acc["min"], acc


@pytest.mark.parametrize("alg", ["layered", "rues"])
@pytest.mark.parametrize("topo", sorted(LAYER_TOPOS))
def test_static_check_passes_shipped_defaults(topo, alg):
    """The channel dependency graph of every shipped (topology, routing) default is acyclic."""
    topo_, dist, plan, nv = plan_routing(cfg_of(*LAYER_TOPOS[topo], f"routing.algorithm={alg}"))
    res = check(topo_, dist, plan, nv)
    assert res["ok"], res["reason"]
