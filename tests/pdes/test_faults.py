"""Runs on degraded networks ([faults]): what fails carries nothing, results stay exact."""
import h5py
import numpy as np
import pytest

from pdes import config as C
from pdes.build import prepare
from pdes.engine import run_local
from pdes.output import write_results
from tests.golden import BASE, GOLDEN, golden_cfg, result_digest, stored
from tests.helpers import assert_same_results, cli_sets, restarted_on_other_part_counts, run_pdes

FAULTY = [*BASE, *GOLDEN["faults"]]


@pytest.fixture(scope="module")
def faulty():
    cfg = C.resolve({}, FAULTY)
    prep = prepare(cfg)
    return cfg, prep, run_local(cfg, prep=prep)


def test_failed_links_and_routers_carry_nothing(faulty, tmp_path):
    """No failed link is in the simulated network; no flit leaves or reaches an endpoint of a
    failed or cut-off router; the fault set is in the result file."""
    cfg, prep, res = faulty
    path = tmp_path / "r.h5"
    write_results(str(path), res, C.to_toml(cfg), nranks=1, partition=None, version="t")
    with h5py.File(path) as f:
        failed = f["faults/failed_links"][()]
        routers = f["faults/failed_routers"][()]
        links = f["links/routers"][()]
        inj = f["endpoints/injected_flits"][()]
        dlv = f["endpoints/delivered_flits"][()]
        ep_router = f["endpoints/router"][()]
        assert f["faults"].attrs["failed_routers"] == routers.size == 1
        assert f["summary/active_endpoints"][()] == 200 - 4 - f["faults"].attrs["dropped_by_traffic"]
    assert failed.shape[0] > 0
    assert not set(map(tuple, failed.tolist())) & set(map(tuple, links.tolist()))
    dead = np.isin(ep_router, routers)
    assert inj[dead].sum() == 0 and dlv[dead].sum() == 0
    assert inj[~dead].min() > 0 and dlv[~dead].min() > 0
    assert prep.notes and prep.notes[-1].startswith("faults: failed:")


def test_a_fault_key_that_fails_nothing_changes_no_result():
    """A [faults] section that fails nothing gives the golden digest of the intact network."""
    cfg = C.resolve({}, [*BASE, *GOLDEN["min"], "faults.seed=9", "faults.link_classes=global"])
    assert result_digest(run_local(cfg), cfg) == stored()["min"]


def test_faulty_run_restarts_on_other_part_counts(faulty, tmp_path):
    """A checkpoint of a degraded network continues bit-identically on 1 and 3 parts."""
    cfg, prep, _ = faulty
    with restarted_on_other_part_counts(cfg, prep, tmp_path / "c.h5") as f:
        assert f.attrs["n_channels"] == 2 * prep.topo.n_links < 2 * 175


GALAXYFLY = ["topology.name=galaxyfly", "topology.n=3", "topology.q=5", "topology.a=2",
             "topology.p=2", "routing.th_min=0.05", "traffic.load=0.4"]


@pytest.mark.parametrize("alg, when", [("nar", []), ("nal", []), ("nag", []),
                                       ("nag", ["faults.at_cycle=300", "faults.reroute_cycles=200"])])
def test_galaxyfly_routings_route_around_a_failed_supernode(alg, when, tmp_path):
    """NAR, NAL and NAG run on a Galaxyfly with a failed supernode (a rack) and one failed
    router of another: the working routers of every supernode stay fully connected.  The
    candidates are drawn from working routers only, every active endpoint sends and
    receives, and 1 and 3 parts give the same results; also when the failure comes during
    the run."""
    cfg = C.resolve({}, [*BASE, *GALAXYFLY, f"routing.algorithm={alg}", "faults.racks=[4]",
                         "faults.routers=[12]", *when])
    prep = prepare(cfg)
    grp_rtr = (prep.failure.degraded if when else prep).plan.tables["grp_rtr"]
    assert (grp_rtr[4] < 0).all() and list(grp_rtr[6]) == [13, -1]
    assert not np.isin(grp_rtr, [8, 9, 12]).any()
    res = run_local(cfg, prep=prep)
    path = tmp_path / "r.h5"
    write_results(str(path), res, C.to_toml(cfg), nranks=1, partition=None, version="t")
    with h5py.File(path) as f:
        inj = f["endpoints/injected_flits"][()]
        dlv = f["endpoints/delivered_flits"][()]
        dead = np.isin(f["endpoints/router"][()], [8, 9, 12])
    assert inj[~dead].min() > 0 and dlv[~dead].min() > 0
    if not when:          # failed from the start (a failure during the run comes after some)
        assert inj[dead].sum() == 0 and dlv[dead].sum() == 0
    R = prep.topo.n_routers
    assert_same_results(res, run_local(cfg, owner=((np.arange(R) * 3) // R).astype(np.int32),
                                       prep=prep))


def test_galaxyfly_routing_refuses_a_broken_supernode(tmp_path):
    """A failed link between two working routers of one supernode breaks the link-type
    sequences: one line and exit 2."""
    p = run_pdes("run", *cli_sets(*GALAXYFLY, "routing.algorithm=nal", 'faults.links="0-1"',
                                  preset="golden"), "-o", str(tmp_path / "x.h5"))
    assert p.returncode == 2, p.stderr
    assert "the failures removed a link between two working routers of one" in p.stderr
    assert p.stderr.count("\n") == 1 and not (tmp_path / "x.h5").exists()


@pytest.mark.parametrize("sets, message", [
    (["topology.name=torus", "topology.dims=4,4", "routing.algorithm=dor",
      "faults.link_count=1"], "routing.algorithm: 'dor' cannot route this degraded network"),
    (["topology.name=dragonfly", "topology.h=2", "routing.algorithm=dragonfly_ugal",
      "faults.link_count=1", "faults.link_classes=global"],
     "no global link is left between groups"),
    (["faults.routers=[0]", 'faults.links="1-5"', "faults.disconnected=error"], None),
])
def test_structure_the_failures_break_is_refused(sets, message, tmp_path):
    """A routing that needs a structure the failures broke, or a fault set that splits the
    network under disconnected = error, is one line and exit 2 before any work."""
    if message is None:       # cut router 1 off: router 0 failed, then 1's other links
        from models.topology import build
        sf = build("slimfly", {"q": 5})
        others = [int(n) for n in sf.neighbors(1) if n != 0]
        sets = ["faults.routers=[0]", "faults.links=" + ",".join(f"1-{n}" for n in others),
                "faults.disconnected=error"]
        message = "faults: the fault set cuts 4 endpoints on 1 routers off"
    p = run_pdes("run", *cli_sets(*sets, preset="golden"), "-o", str(tmp_path / "x.h5"))
    assert p.returncode == 2, p.stderr
    assert message in p.stderr and "Traceback" not in p.stderr
    assert p.stderr.count("\n") == 1 and not (tmp_path / "x.h5").exists()


def test_sweep_varies_the_failed_fraction(tmp_path):
    """`pdes sweep --vary faults.link_fraction=...` runs one degraded network per value."""
    out = tmp_path / "s.h5"
    p = run_pdes("sweep", *cli_sets("router.link_latency=1", preset="golden"), "--loads", "0.3",
                 "--vary", "faults.link_fraction=0,0.1", "-o", str(out))
    assert p.returncode == 0, p.stderr
    p = run_pdes("show", str(out))
    assert p.returncode == 0 and "faults.link_fraction" in p.stdout, p.stdout


def test_golden_faults_config_is_degraded():
    """The golden fault config fails links and a router (so the golden tiers cover faults)."""
    cfg = golden_cfg("faults")
    assert cfg["faults"]["link_fraction"] > 0 and cfg["faults"]["routers"]


def test_schedules_are_placed_on_the_active_endpoints(tmp_path):
    """With router 0 failed (SF q=5, p=4: endpoints 0-3 inactive) a collective's linear
    processes take the first active endpoints, random ones the active ones in the intact
    network's permutation, procs = 0 all active ones, and jobs the active free ones; a file
    that lists an inactive endpoint and too many processes are refused."""
    from models.placement import place
    from models.topology import build

    def eps(*sets):
        prep = prepare(C.resolve({}, ["faults.routers=[0]", *sets]))
        return prep.traffic.ops.proc_ep

    assert eps("traffic.pattern=allreduce", "traffic.procs=4").tolist() == [4, 5, 6, 7]
    intact = place(build("slimfly", {"q": 5}), None, "random", 3)
    got = eps("traffic.pattern=allreduce", "traffic.procs=6", "traffic.placement=random",
              "measure.seed=3")
    assert got.tolist() == [e for e in intact if e >= 4][:6]
    assert eps("traffic.pattern=barrier").size == 196
    jobs = eps("jobs.0.pattern=barrier", "jobs.0.procs=3", "jobs.1.pattern=barrier",
               "jobs.1.procs=2")
    assert sorted(jobs.tolist()) == [4, 5, 6, 7, 8]
    with pytest.raises(C.ConfigError, match="200 processes do not fit: the network has 200 "
                       "endpoints, 196 of them active"):
        eps("traffic.pattern=allreduce", "traffic.procs=200")
    (tmp_path / "p.txt").write_text("4\n0\n")
    with pytest.raises(C.ConfigError, match="whose router failed or is cut off"):
        eps("traffic.pattern=allreduce", "traffic.procs=2", "traffic.placement=file",
            f"traffic.placement_file={tmp_path / 'p.txt'}")
