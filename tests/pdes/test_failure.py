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


def test_a_sweep_runs_each_point_at_its_own_load_after_the_reroute(tmp_path):
    """A study prepares a network once for all its loads: after the reroute every point goes on
    at its own load (it went on at the first point's, 0.2 here, and the sweep could abort
    with a corrupted heap), the same results as a run of the point's config."""
    import h5py

    from pdes import study as S
    spec = S.make_spec({}, [*MID, "faults.reroute_cycles=100"], [], "0.2,0.4", None, None, None)
    path = str(tmp_path / "s.h5")
    S.run_study(spec, path, None)
    cfg = spec.config_of(0, 0.4)
    ref = run_local(cfg)
    assert ref["prepared"].topo.n_links < 175          # the reroute happened
    with h5py.File(path) as f:
        row = [r for r in f["table"][()] if r["load"] == 0.4][0]
        point = f["points"][row["point"].decode()]
        for k in ("offered_load", "accepted_load", "dropped_load", "packet_latency_mean"):
            assert point[f"summary/{k}"][()] == ref["summary"][k], k
    assert ref["summary"]["offered_load"] > 0.38


def test_drops_are_not_taken_for_a_growing_backlog():
    """A failure in the window of a run far below saturation (uniform 0.3, 10% of the links):
    the dropped flits leave the system; the run is not saturated. The trend of created minus
    delivered flits counted them as flits piling up in the network."""
    cfg = C.resolve({}, ["measure.warmup_cycles=400", "measure.measure_cycles=600",
                         "measure.sample_period=100", "measure.drain_cycles=1000",
                         "router.packet_size=4", "traffic.load=0.3", "faults.link_fraction=0.1",
                         "faults.at_cycle=500", "faults.reroute_cycles=200"])
    res = run_local(cfg)
    assert res["counters"]["dropped_measured"] > 0
    assert not res["summary"]["saturated"], res["summary"]["saturated_reason"]


def test_a_window_before_the_failure_has_the_loads_of_the_intact_network():
    """The window's loads divide by the endpoints that were sources in it: with a whole rack
    failing in the drain (and rerouted), they are those of the intact network's run, not
    a quarter higher (divided by the degraded network's 160 active endpoints of 200)."""
    sets = ["router.num_vcs=4", "faults.link_fraction=0", "faults.routers=[]", "faults.racks=[0]",
            "faults.at_cycle=910", "faults.reroute_cycles=20"]
    cfg = cfg_of(*sets)
    res = run_local(cfg)
    assert res["summary"]["measure_end"] <= 910 and res["summary"]["cycles"] > 930
    assert res["summary"]["active_endpoints"] == 160
    intact = run_local(C.resolve({}, [*MID, "router.num_vcs=4", "faults.link_fraction=0",
                                      "faults.routers=[]"]))
    for k in ("offered_load", "injected_load", "accepted_load"):
        assert res["summary"][k] == intact["summary"][k], k
    fail = prepare(cfg).failure
    assert fail.active == (200, 160, 160)
    # a window across the failure: each part by its own sources
    assert fail.window_endpoints(800, 1000) == (200 * 110 + 160 * 90) / 200


def test_the_series_plot_marks_only_a_failure_that_happened(tmp_path):
    """faults.at_cycle with nothing failing, or a failure after the run ended, draws no
    failure and no reroute; the samples before the failure are per endpoint of the intact
    network."""
    import h5py

    from pdes.plot import series_figure
    from pdes.results import open_results
    from tests.helpers import cli_sets
    for name, sets in (("n.h5", ["faults.at_cycle=300"]),
                       ("late.h5", ["faults.links=0-1", "faults.at_cycle=2000"]),
                       ("rack.h5", ["faults.racks=[0]", "faults.at_cycle=300",
                                    "faults.reroute_cycles=100"])):
        r = run_pdes("run", *cli_sets(*BASE, *sets, preset="cli"), "--quiet", "-o", name,
                     cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        with open_results(str(tmp_path / name)) as res:
            ax = series_figure(res).axes[0]
            marks = [ln.get_label() for ln in ax.lines
                     if ln.get_label() == "reroute" or ln.get_label().startswith("failure")]
            rate = ax.lines[0].get_ydata()
        assert marks == ([] if name != "rack.h5" else ["failure (cycle 300)", "reroute"])
        if name == "rack.h5":
            with h5py.File(tmp_path / name) as f:
                d = f["series/delivered_flits"][()]
                period = f["series"].attrs["sample_period"]
            assert rate[1] == d[1] / (period * 200)      # before the failure: 200 sources


def test_a_failure_with_jobs_is_refused_naming_the_jobs():
    """[[jobs]] are a finite workload: the refusal names them, not traffic.pattern's default."""
    from models.core.errors import ParameterError
    cfg = C.resolve({}, [*MID, "jobs.0.pattern=allreduce", "jobs.0.procs=8"])
    with pytest.raises(ParameterError, match=r"faults.at_cycle: \[\[jobs\]\] is a finite workload"):
        prepare(cfg)


@pytest.mark.parametrize("at, reroute, line", [
    (300, 100, "failure           at cycle 300, rerouted at cycle 400"),
    (300, 1000, "failure           at cycle 300, not rerouted (the run ended at cycle 800, "
                "before cycle 1300)"),
    (3000, 100, "failure           none: the run ended at cycle 800, before faults.at_cycle = "
                "3000")])
def test_the_summary_says_whether_the_failure_happened(tmp_path, at, reroute, line):
    """A failure during the run is reported with its reroute, or as not reached when the run
    drained first (the run is then a run of the intact network)."""
    r = run_pdes("run", "--set", "measure.warmup_cycles=200", "--set", "measure.measure_cycles=400",
                 "--set", "faults.links=0-1", "--set", f"faults.at_cycle={at}",
                 "--set", f"faults.reroute_cycles={reroute}", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert line in r.stdout, r.stdout


def test_the_start_report_counts_the_sources_the_reroute_leaves_idle():
    """A shift whose destination router fails during the run leaves its source idle from the
    reroute on; the start report says so, as it does for the same fault before the run."""
    sets = ["traffic.pattern=shift", "faults.routers=[3]"]
    during = prepare(C.resolve({}, [*sets, "faults.at_cycle=300"])).notes
    assert "faults: from the reroute, 1 sources of 'shift' dropped (inactive destination)" \
        in during
    before = prepare(C.resolve({}, sets)).notes
    assert any(n.endswith("1 sources of 'shift' dropped (inactive destination)") for n in before)


# a ring of 12 routers cut in two at cycle 250 (5 routers cut off at the reroute), BookSim's
# allocation with 4-flit packets: an input port on a cut channel returns the credits of its
# switch and of the failure's drop rule in the same windows
CUT_RING = ["measure.warmup_cycles=200", "measure.measure_cycles=300", "measure.sample_period=50",
            "topology.name=dln", "topology.routers=12", "topology.shortcuts=0",
            "traffic.load=0.4", "router.allocation=booksim", "router.packet_size=4",
            "faults.links=0-1,5-6", "faults.at_cycle=250", "faults.reroute_cycles=50"]


def test_exchange_blocks_hold_every_outbox_full_after_a_failure(monkeypatch):
    """A cut channel's credit outbox holds window x (speedup + 1) credits (the drop rule's
    credit on top of the switch's); the exchange block must hold them all: with one sized
    for window x speedup, the ring cut in two overflowed it on 3 parts (a segmentation fault
    under mpiexec -n 3).  Every block packed fits, and the results are those of 1 part."""
    from pdes import comm
    from pdes.kernels import exchange as X
    packed = []
    pack = comm.Mailbox.pack

    def checked(self, q):
        a, cuts = self.part.arrays, self.cuts[q]
        focap, cocap = self.part.outbox_caps()
        full = X.HEADER + cuts.size * (focap * X.FLIT_WORDS + cocap * X.CREDIT_WORDS)
        need = (X.HEADER + int(a["fo_cnt"][cuts].sum()) * X.FLIT_WORDS
                + int(a["co_cnt"][cuts].sum()) * X.CREDIT_WORDS)
        packed.append((need, self.send_buf[q].size, full))
        return pack(self, q)
    monkeypatch.setattr(comm.Mailbox, "pack", checked)
    cfg = C.resolve({}, CUT_RING)
    prep = prepare(cfg)
    one = run_local(cfg, prep=prep)
    three = run_local(cfg, owner=parts(prep.topo.n_routers, 3), prep=prep)
    assert packed and one["counters"]["dropped_packets"] > 0
    # the ring's halves cannot carry the load: saturated, on the sum the test compares
    s = one["summary"]
    assert s["saturated_reason"].startswith(
        f"accepted load plus dropped load {s['accepted_load'] + s['dropped_load']:.4f} is more "
        "than 2% below the offered load")
    assert all(size >= full for _, size, full in packed)
    assert all(need <= size for need, size, _ in packed)
    assert_same_results(one, three)


# Dragonfly h=2 with 5 groups: routers 4 and 5 fail at cycle 100, which cuts off 6 and 7 (the
# whole group 1); small buffers keep packets queued at the sources at the reroute (cycle 150)
IDLE_AFTER_REROUTE = ["topology.name=dragonfly", "topology.h=2", "topology.g=5",
                      "traffic.pattern=neighbor", "traffic.load=0.337", "traffic.injection=on_off",
                      "router.link_latency=1", "router.vc_buffer_flits=2",
                      "router.output_buffer_flits=2", "faults.routers=[4,5]", "faults.at_cycle=100",
                      "faults.reroute_cycles=50", "measure.warmup_cycles=200",
                      "measure.measure_cycles=300", "measure.sample_period=70"]


def test_packets_queued_at_a_source_the_reroute_leaves_idle_are_dropped_there():
    """After the reroute a source whose destination is gone (or whose router is) is no source
    of the degraded network's traffic; the packets still queued at it have no destination
    there and are dropped at the source, never injected (they were injected with destination
    -1, an index out of bounds), counted with the drops; the same on 1 and 3 parts."""
    cfg = C.resolve({}, IDLE_AFTER_REROUTE)
    prep = prepare(cfg)
    deg = prep.failure.degraded
    idle = (prep.traffic.active != 0) & (deg.traffic.active == 0)
    assert idle.any()
    one = run_local(cfg, prep=prep)
    c = one["counters"]
    in_network = c["injected_flits"] - c["delivered_flits"] - c["in_flight_flits"]
    at_sources = c["dropped_flits"] - in_network
    assert at_sources > 0 and at_sources % cfg["router"]["packet_size"] == 0
    three = run_local(cfg, owner=parts(prep.topo.n_routers, 3), prep=prep)
    assert_same_results(one, three)


# a ring of 12 routers cut in two at cycle 250, 5 routers cut off at the reroute (cycle 300):
# shift traffic, a fixed destination per source, saturates the ring, so sources whose
# destination is cut off still have packets queued at the reroute
QUEUED = ["measure.warmup_cycles=200", "measure.measure_cycles=300", "measure.sample_period=50",
          "topology.name=dln", "topology.routers=12", "topology.shortcuts=0",
          "traffic.pattern=shift", "traffic.load=0.6", "router.packet_size=4",
          "faults.links=0-1,5-6", "faults.at_cycle=250", "faults.reroute_cycles=50"]


def test_packets_queued_for_a_destination_the_reroute_makes_inactive_are_dropped(monkeypatch):
    """From the reroute, a source whose fixed destination is inactive is idle (the degraded
    network's destination table holds -1 for it), but it may still have packets queued
    from before: they are dropped at the source, counted as dropped.  The kernel started
    them with destination -1 (an IndexError with NUMBA_BOUNDSCHECK=1; without bounds checks
    it read before the endpoint-router table).  No packet being injected or buffered has a
    destination below 0, flits are conserved, and the results are those of 1 part."""
    from models.core.record import F_DST
    from pdes import state
    from pdes.failure import _rings
    seen = []
    advance = state.PartState.advance

    def checked(self, t0, t1):
        status = advance(self, t0, t1)
        a = self.arrays
        injecting = a["ep_cur_rec"][a["ep_cur_left"] > 0, F_DST]
        (_, ivs), (_, oqs) = _rings(self)
        fids = np.concatenate([a["ib_id"][ivs], a["oq_id"][oqs]]).astype(np.int64)
        seen.append((t1, int(injecting.min(initial=0)), int(a["rec"][fids, F_DST].min(initial=0))))
        return status
    monkeypatch.setattr(state.PartState, "advance", checked)
    cfg = C.resolve({}, QUEUED)
    prep = prepare(cfg)
    assert (prep.failure.degraded.traffic.table < 0).sum() > (prep.traffic.table < 0).sum()
    one = run_local(cfg, prep=prep)
    three = run_local(cfg, owner=parts(prep.topo.n_routers, 3), prep=prep)
    assert any(t > 300 for t, _, _ in seen)
    assert all(i >= 0 and b >= 0 for _, i, b in seen)
    c = one["counters"]
    assert c["dropped_packets"] > 0
    assert c["created_packets"] * 4 == (c["delivered_flits"] + c["dropped_flits"]
                                        + c["source_queue_flits"] + c["in_flight_flits"])
    assert_same_results(one, three)
