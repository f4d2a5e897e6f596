"""Galaxyfly's routings (nar, nal, nag): delivery, hop bounds, VC classes, bad parameters,
determinism."""
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


GF_A = ["topology.name=galaxyfly", "topology.n=3", "topology.q=5", "topology.a=2", "topology.p=2"]
GF_B = ["topology.name=galaxyfly", "topology.n=2", "topology.q=5", "topology.a=4", "topology.p=2"]
GALAXY = {"gf_a": GF_A, "gf_b": GF_B, "df": DF}
NA = ["nar", "nal", "nag"]


@pytest.mark.parametrize("alg", NA)
@pytest.mark.parametrize("topo", sorted(GALAXY))
@pytest.mark.parametrize("load", [0.2, 1.0])
def test_galaxy_delivery_hop_bound_and_vc_order(alg, topo, load):
    """NAR/NAL/NAG deliver below saturation and keep their declared hop bound and cap above it.

    At load 1.0 ``th_min = 0.05`` lets most packets misroute, so non-minimal paths and their
    VC classes are exercised: the kernel stops on a class outside the scheme or out of
    link-type order (ERR_VC, ERR_VC_ORDER), the run on a lost flit (conservation audit).
    """
    extra = ["routing.th_min=0.05"] if load == 1.0 else []
    res = run_local(cfg_of(*GALAXY[topo], f"routing.algorithm={alg}", f"traffic.load={load}",
                           *extra))
    s = res["summary"]
    plan = res["prepared"].plan
    hops = np.nonzero(res["hist_hops"])[0]
    assert hops.max() <= plan.max_hops <= plan.kernel_params["max_hops_cap"]
    assert plan.scheme == "sequence" and res["prepared"].rp.num_vcs == plan.vcs_needed
    if load == 0.2:
        assert not s["saturated"]
        assert s["accepted_load"] == pytest.approx(0.2, rel=0.05)


@pytest.mark.parametrize("topo", ["gf_a", "df"])
def test_galaxy_misroutes_when_the_minimal_port_is_busy(topo):
    """Under the worst case NAG leaves the minimal path (longer paths, up to its cap) once the
    minimal port holds more than th_min of a buffer; with the default 0.8 it hardly ever does."""
    hops = {}
    for th in (0.8, 0.05):
        res = run_local(cfg_of(*GALAXY[topo], "routing.algorithm=nag", "traffic.pattern=worst_case",
                               "traffic.load=1.0", f"routing.th_min={th}"))
        hops[th] = res["summary"]["hops_mean"]
        if th == 0.05:
            assert np.nonzero(res["hist_hops"])[0].max() > endpoint_diameter_of(res["prepared"])
    assert hops[0.05] > hops[0.8] + 0.3, hops


def endpoint_diameter_of(prep):
    from models.routing.minimal import endpoint_diameter
    return endpoint_diameter(prep.topo, prep.dist)


@pytest.mark.parametrize("alg", NA)
@pytest.mark.parametrize("topo", sorted(GALAXY))
def test_galaxy_vc_classes_cover_every_path(alg, topo):
    """Every path NAR/NAL/NAG can produce (enumerated) fits the plan's link-type sequence, the
    explicit dependency graph of the sequence scheme has no cycle, the plan's sequence set
    (dynamic programme) contains every enumerated one, and 004's literal count scheme
    (class = earlier hops of the same link type) has a cycle."""
    from models.routing.cdg import find_cycle
    from models.routing.galaxyfly import dependency_graph, sequences
    topo_, dist, plan, nv = plan_routing(cfg_of(*GALAXY[topo], f"routing.algorithm={alg}"))
    kp = plan.kernel_params
    edges, n_nodes, seqs = dependency_graph(topo_, dist, plan)
    assert edges is not None and find_cycle(edges, n_nodes) is None
    assert set(seqs.tolist()) <= set(sequences(topo_, dist, alg, kp["max_hops_cap"]).tolist())
    lengths = [int(c).bit_length() - 1 for c in seqs]
    assert max(lengths) <= plan.max_hops <= kp["max_hops_cap"]
    info = plan.info
    assert plan.vcs_needed == max(info["seq_local"], info["seq_global"])
    assert info["seq_local"] >= info["max_local_hops"] and info["seq_global"] >= info["max_global_hops"]
    edges, n_nodes, _ = dependency_graph(topo_, dist, plan, scheme="count")
    assert find_cycle(edges, n_nodes) is not None


def test_galaxy_vc_classes_on_a_diameter_5_galaxyfly():
    """Classes computed from the real paths and caps on GF(2,5,4,2) (diameter 5): local/global
    classes of the link-type sequence and the most hops of each type on a path, against 004
    Sec. 4.3's 3/4/4 local and 2/2/3 global VCs (graph-minimal segments also take paths with
    up to 3 global hops, e.g. g-l-g-l-g, which 004's hierarchical minimal routing avoids)."""
    got = {}
    for alg in NA:
        _, _, plan, _ = plan_routing(cfg_of(*GF_B, f"routing.algorithm={alg}"))
        kp = plan.info
        got[alg] = (kp["seq_local"], kp["seq_global"], kp["max_local_hops"], kp["max_global_hops"],
                    plan.max_hops)
    assert got == {"nar": (3, 3, 3, 3, 5), "nal": (4, 3, 4, 3, 6), "nag": (5, 4, 4, 4, 7)}, got


@pytest.mark.parametrize("topo", ["gf_a", "df"])
def test_galaxy_count_scheme_is_refused(topo):
    """004's literal per-type hop count is reported with a cycle by `pdes check` and refused."""
    sets = [*GALAXY[topo], "routing.algorithm=nag", "routing.vc_scheme=count"]
    topo_, dist, plan, nv = plan_routing(cfg_of(*sets))
    res = check(topo_, dist, plan, nv)
    assert not res["ok"] and len(res["cycle"]) >= 3 and "cycle of" in res["reason"]
    with pytest.raises(ParameterError, match="routing.vc_scheme: .*can deadlock"):
        prepare(cfg_of(*sets))


@pytest.mark.parametrize("sets,key", [
    (["routing.algorithm=nag", "routing.th_min=1.5"], "routing.th_min"),
    (["routing.algorithm=nal", "routing.th_nonmin=0"], "routing.th_nonmin"),
    (["routing.algorithm=nar", "routing.max_hops=0"], "routing.max_hops"),
    (["routing.algorithm=nag", "routing.vc_scheme=phase"], "routing.vc_scheme"),
    (["routing.algorithm=nag", "router.num_vcs=2"], "router.num_vcs"),
])
def test_galaxy_bad_parameters(sets, key):
    """Bad NAR/NAL/NAG parameters are refused with one line naming the key."""
    with pytest.raises(ParameterError, match=key) as e:
        prepare(cfg_of(*GF_A, *sets))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("alg", NA)
def test_galaxy_only_on_fully_connected_groups(alg):
    """NAR/NAL/NAG refuse topologies whose groups are not cliques, naming routing.algorithm."""
    with pytest.raises(ParameterError, match=f"routing.algorithm: '{alg}' needs a topology whose "
                                             "groups are fully connected"):
        prepare(cfg_of(*SF, f"routing.algorithm={alg}"))


@pytest.mark.parametrize("alg", NA)
def test_galaxy_split_is_bit_identical(alg):
    """NAR/NAL/NAG give identical results when the routers are split into parts."""
    cfg = cfg_of(*GF_A, f"routing.algorithm={alg}", "traffic.load=0.7", "routing.th_min=0.05")
    prep = prepare(cfg)
    a = run_local(cfg, prep=prep)
    R = prep.topo.n_routers
    for owner in (np.arange(R) % 2, np.random.default_rng(5).integers(0, 3, R)):
        b = run_local(cfg, prep=prep, owner=owner)
        assert_same_results(a, b)


# ------------------------------------------------------------------ layered routing and RUES


@pytest.mark.parametrize("alg", NA)
@pytest.mark.parametrize("topo", sorted(GALAXY))
def test_static_check_passes_shipped_defaults(topo, alg):
    """The channel dependency graph of every shipped (topology, routing) default is acyclic."""
    topo_, dist, plan, nv = plan_routing(cfg_of(*GALAXY[topo], f"routing.algorithm={alg}"))
    res = check(topo_, dist, plan, nv)
    assert res["ok"], res["reason"]
