"""``routing.vcs = "any"`` (every hop may use every VC, BookSim's anynet ``min``): one VC
class, no class-order check, a warning instead of a refusal when the channel dependency
graph may be cyclic, and a deadlock the watchdog reports."""
import h5py
import numpy as np
import pytest

from models.core.errors import ParameterError
from models.routing.cdg import check
from pdes.build import plan_routing, prepare
from pdes.engine import run_local
from pdes.loopstate import SimulationError
from tests.helpers import assert_same_results, cfg_builder, cli_sets, run_pdes

cfg_of = cfg_builder("routing", "router.link_latency=1")
RING = ["topology.name=torus", "topology.dims=[8]", "traffic.pattern=tornado",
        "router.packet_size=4", "router.vc_buffer_flits=4", "traffic.load=0.9",
        "measure.watchdog_cycles=400"]


def test_default_is_hop_and_other_values_are_refused():
    """``hop`` is the default; a value other than hop or any is one ParameterError naming the key."""
    assert cfg_of()["routing"]["vcs"] == "hop"
    with pytest.raises(ParameterError, match=r"^routing\.vcs: "):
        cfg_of("routing.vcs=all")


def test_one_class_spans_every_vc():
    """With ``any`` a routing needs one class: minimal routing on SF q=5 runs on 1 VC, which
    ``hop`` (2 classes) refuses; the plan says so."""
    with pytest.raises(ParameterError, match=r"^router\.num_vcs: routing 'min' needs 2 VCs"):
        plan_routing(cfg_of("router.num_vcs=1"))
    topo, dist, plan, nv = plan_routing(cfg_of("routing.vcs=any"))
    assert (plan.vcs_needed, nv, plan.scheme) == (1, 1, "hop")
    assert plan.vc_scheme.startswith("any VC")
    res = run_local(cfg_of("routing.vcs=any", "router.num_vcs=1", "traffic.load=0.3"))
    assert res["summary"]["accepted_load"] == pytest.approx(0.3, rel=0.05)
    assert np.nonzero(res["hist_hops"])[0].max() == 2


def test_static_check_with_one_class():
    """One class: minimal routing on a Slim Fly has a cyclic dependency graph, on a fat tree
    (up then down) an acyclic one; a routing whose one-class graph is not built is reported
    as able to deadlock."""
    topo, dist, plan, nv = plan_routing(cfg_of("routing.vcs=any"))
    res = check(topo, dist, plan, nv, vcs="any")
    assert not res["ok"] and res["reason"].startswith("cycle of") and res["cycle"]
    assert check(topo, dist, plan, nv)["ok"]            # its hop classes are acyclic
    ft = plan_routing(cfg_of("topology.name=fattree", "topology.k=4", "routing.vcs=any"))
    assert check(*ft, vcs="any")["ok"]
    val = plan_routing(cfg_of("routing.algorithm=valiant", "routing.vcs=any"))
    res = check(*val, vcs="any")
    assert not res["ok"] and "not built" in res["reason"]


def test_warning_only_where_a_cycle_is_possible():
    """The start warning names the cycle on the Slim Fly and is empty on the fat tree."""
    sf = prepare(cfg_of("routing.vcs=any"))
    assert sf.deadlock_warning.startswith('warning: routing.vcs = "any"')
    assert "cycle of" in sf.deadlock_warning
    assert prepare(cfg_of("topology.name=fattree", "topology.k=4",
                          "routing.vcs=any")).deadlock_warning == ""
    assert prepare(cfg_of()).deadlock_warning == ""


def test_any_is_exact_on_any_split():
    """The same results on 1 part and on 3 parts with ``any`` near saturation."""
    cfg = cfg_of("routing.vcs=any", "router.num_vcs=2", "traffic.load=0.7")
    prep = prepare(cfg)
    a = run_local(cfg, prep=prep)
    b = run_local(cfg, prep=prep, owner=(np.arange(prep.topo.n_routers) % 3).astype(np.int32))
    assert_same_results(a, b)


def test_ring_with_any_deadlocks_and_the_watchdog_reports_it():
    """Tornado traffic at high load on a ring of 8 with one VC for every hop fills the ring's
    cycle of channels: the watchdog stops the run naming the discipline; the same run with
    hop-index classes (4 VCs) delivers."""
    with pytest.raises(SimulationError, match=r'^deadlock: .*routing\.vcs "any"'):
        run_local(cfg_of(*RING, "routing.vcs=any", "router.num_vcs=1"))
    res = run_local(cfg_of(*RING))
    assert res["summary"]["accepted_load"] > 0.1


def test_cli_warns_under_quiet_and_stores_the_warning(tmp_path):
    """``pdes run --quiet`` prints the warning on stderr (one line) and writes it to the
    result file's attributes."""
    out = tmp_path / "r.h5"
    p = run_pdes("run", "--quiet", "-o", str(out),
                 *cli_sets("routing.vcs=any", "traffic.load=0.2", "router.link_latency=1",
                           preset="cli"))
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if "routing.vcs" in ln]
    assert len(lines) == 1 and lines[0].startswith('[pdes] warning: routing.vcs = "any"')
    with h5py.File(out) as f:
        assert f.attrs["deadlock_warning"] == lines[0][len("[pdes] "):]
