"""Failures during a run (faults.at_cycle): drops counted and conserved, failed links carry
nothing, the reroute, exact on any part count and across checkpoints."""
import numpy as np
import pytest

from pdes import config as C
from pdes.build import prepare
from pdes.engine import run_local
from tests.golden import BASE, GOLDEN, result_digest, stored
from tests.helpers import assert_same_results, restarted_on_other_part_counts, run_pdes

# SF q=5, 4-flit packets (packets cut in two by a failed link), 10% of the links and a router
MID = [*BASE, "router.packet_size=4", "traffic.load=0.4", "faults.link_fraction=0.1",
       "faults.routers=[3]", "faults.at_cycle=300", "faults.reroute_cycles=200",
       "measure.measure_cycles=700"]


def cfg_of(*sets):
    return C.resolve({}, [*MID, *sets])


def parts(R, n):
    return None if n == 1 else ((np.arange(R) * n) // R).astype(np.int32)


@pytest.fixture(scope="module")
def mid():
    cfg = cfg_of()
    prep = prepare(cfg)
    return cfg, prep, run_local(cfg, prep=prep)


def test_failure_drops_packets_and_conserves_flits(mid):
    """A failure drops flits and whole packets; created = delivered + dropped + queued + in
    flight; the run ends as a run of the degraded network, which is not taken for saturation."""
    cfg, prep, res = mid
    c = res["counters"]
    assert c["dropped_packets"] > 0 and c["dropped_flits"] >= c["dropped_packets"]
    assert c["created_packets"] * 4 == (c["delivered_flits"] + c["dropped_flits"]
                                        + c["source_queue_flits"] + c["in_flight_flits"])
    assert res["prepared"] is prep.failure.degraded
    assert res["link_flits"].size == 2 * prep.failure.degraded.topo.n_links < 2 * 175
    assert not res["summary"]["saturated"]


def test_the_series_dips_at_the_failure_and_recovers_at_the_reroute(mid):
    """Delivered flits per sample: lower between the failure and the reroute than before it
    and after the reroute (min routing keeps sending over the failed links until then)."""
    _, _, res = mid
    s = res["series"]
    cyc, dlv = s[:, 0], s[:, 1]
    before = dlv[(cyc > 100) & (cyc <= 200)].mean()
    during = dlv[(cyc > 300) & (cyc <= 500)].mean()
    after = dlv[(cyc > 600) & (cyc <= 800)].mean()
    assert during < 0.95 * before and during < 0.95 * after


def test_failed_links_carry_nothing_after_the_failure():
    """Without a reroute within the run, no flit crosses a failed link, and no endpoint of the
    failed router sends or receives one, in a window that starts after the failure."""
    cfg = cfg_of("faults.reroute_cycles=100000", "measure.warmup=fixed",
                 "measure.warmup_cycles=400")
    prep = prepare(cfg)
    res = run_local(cfg, prep=prep)
    assert res["summary"]["measure_start"] > 300
    ch = np.concatenate([2 * prep.failure.fs.links, 2 * prep.failure.fs.links + 1])
    assert res["link_flits"][ch].sum() == 0 and res["link_flits"].sum() > 0
    dead = prep.topo.endpoint_router == 3
    assert res["endpoint_injected"][dead].sum() == 0 == res["endpoint_delivered"][dead].sum()
    assert res["counters"]["dropped_packets"] > 0


@pytest.mark.parametrize("sets", [[], ["router.allocation=booksim", "routing.algorithm=ugal_l"],
                                  ["router.allocation=booksim", "routing.algorithm=ugal_l",
                                   "router.input_speedup=2", "router.hold_switch_for_packet=true"]],
                         ids=["pdes", "booksim-ugal_l", "booksim-input_speedup"])
def test_failure_is_the_same_on_any_part_count(sets, mid):
    """The same drops and results on 1, 2, 3 and 4 parts (BookSim's allocation too, also with
    two switch inputs per port holding the switch for a packet: the reroute remaps their
    per-input state)."""
    cfg = cfg_of(*sets)
    prep = prepare(cfg)
    one = mid[2] if not sets else run_local(cfg, prep=prep)
    assert one["counters"]["dropped_packets"] > 0
    for n in (2, 3, 4):
        assert_same_results(one, run_local(cfg, owner=parts(prep.topo.n_routers, n), prep=prep))


@pytest.mark.parametrize("reroute", [100, 400], ids=["after-reroute", "before-reroute"])
def test_checkpoint_across_the_failure_restarts_on_other_part_counts(reroute, tmp_path):
    """A checkpoint at cycle 500, after the failure (and after, or before, the reroute),
    continues bit-identically on 1 and 3 parts."""
    cfg = cfg_of(f"faults.reroute_cycles={reroute}")
    prep = prepare(cfg)
    with restarted_on_other_part_counts(cfg, prep, tmp_path / "c.h5") as f:
        degraded = f.attrs["n_channels"] < 2 * 175
    assert degraded == (reroute == 100)


def test_checkpoint_across_the_reroute_with_two_switch_inputs(tmp_path):
    """BookSim's allocation with two switch inputs per port: a checkpoint at cycle 500, after
    the reroute remapped the per-input state, continues bit-identically on 1 and 3 parts."""
    cfg = cfg_of("faults.reroute_cycles=100", "router.allocation=booksim",
                 "routing.algorithm=ugal_l", "router.input_speedup=2")
    prep = prepare(cfg)
    with restarted_on_other_part_counts(cfg, prep, tmp_path / "c.h5") as f:
        assert f.attrs["n_channels"] < 2 * 175


def test_no_failure_configured_changes_no_result():
    """faults.at_cycle without anything failing gives the golden digest of the intact network."""
    cfg = C.resolve({}, [*BASE, *GOLDEN["min"], "faults.at_cycle=300"])
    assert result_digest(run_local(cfg), cfg) == stored()["min"]


def test_a_failure_that_cuts_routers_off_runs_or_is_refused(tmp_path):
    """Failing every neighbour of router 0 cuts it off: the run goes on (its endpoints' packets
    are dropped), or with faults.disconnected = "error" is refused before any work."""
    from models.topology import build
    nbrs = build("slimfly", {"q": 5}).neighbors(0).tolist()
    cfg = cfg_of("faults.link_fraction=0", f"faults.routers={nbrs}")
    prep = prepare(cfg)
    res = run_local(cfg, prep=prep)
    assert prep.failure.fs.cut_off.tolist() == [0]
    assert res["counters"]["dropped_packets"] > 0
    out = run_pdes("run", *[f"--set={s}" for s in [*MID, "faults.link_fraction=0",
                                                   f"faults.routers={nbrs}",
                                                   "faults.disconnected=error"]],
                   "-o", str(tmp_path / "x.h5"))
    assert out.returncode == 2 and out.stderr.strip().splitlines()[-1].startswith(
        "pdes: error: faults: the fault set cuts 4 endpoints")
    assert not (tmp_path / "x.h5").exists()


def test_a_finite_workload_with_a_failure_is_refused(tmp_path):
    """A finite workload's messages could never complete once packets are dropped: refused."""
    out = run_pdes("run", *[f"--set={s}" for s in [*MID, "traffic.pattern=alltoall"]],
                   "-o", str(tmp_path / "x.h5"))
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1].startswith(
        "pdes: error: faults.at_cycle: 'alltoall' is a finite workload")


@pytest.mark.mpi(min_size=2)
def test_a_failure_on_the_ranks_drops_what_one_process_drops():
    """Under MPI a failure drops the same nonzero number of flits and packets as one process,
    with the same results."""
    from mpi4py import MPI

    from pdes.engine import simulate
    cfg = cfg_of()
    par = simulate(cfg, MPI.COMM_WORLD)
    ser = simulate(cfg, None)
    assert par["counters"]["dropped_packets"] > 0
    assert_same_results(par, ser)


def test_the_series_plot_marks_the_failure_and_the_reroute(tmp_path):
    """The series figure of a run with a failure during it draws the failure's cycle and the
    reroute's as vertical lines; a run without one draws neither."""
    from pdes.plot import series_figure
    from pdes.results import open_results
    from tests.helpers import cli_sets
    for name, sets, marks in (("f.h5", MID, {"failure (cycle 300)": 300,
                                                                "reroute": 500}),
                              ("n.h5", BASE, {})):
        r = run_pdes("run", *cli_sets(*sets, preset="cli"), "--quiet", "-o", name, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        with open_results(str(tmp_path / name)) as res:
            lines = series_figure(res).axes[0].lines
            found = {ln.get_label(): ln.get_xdata()[0] for ln in lines
                     if ln.get_label() in ("reroute",) or ln.get_label().startswith("failure")}
        assert found == marks
