"""The schedule stage (pdes.kernels.schedule): operations with dependencies at each endpoint.

The workloads here are built by hand with :class:`models.schedule.ScheduleBuilder` and
registered for the test only (the ``hand`` fixture), so that every expected cycle can be
derived from the zero-load latency of one packet (:func:`pdes.timing.zero_load_latency`).
"""
import h5py
import numpy as np
import pytest

from models.core.errors import ParameterError
from models.core.registry import TRAFFIC, Entry
from models.schedule import ScheduleBuilder, check
from models.traffic import TrafficPlan
from pdes.engine import run_local
from pdes.timing import zero_load_latency
from tests.helpers import assert_same_results, make_cfg, restarted_on_other_part_counts

BUILD = {}
"""name -> function(builder) -> None; the processes sit on the endpoints ``EPS``."""
EPS = {}


def _hand(topo, seed, case=""):
    n, build = BUILD[case]
    b = ScheduleBuilder(n)
    build(b)
    return TrafficPlan("schedule", np.full(topo.n_endpoints, -1, np.int32), f"hand {case}",
                       ops=check(b.build(EPS.get(case, np.arange(n))), "traffic", topo.n_endpoints))


@pytest.fixture
def hand(monkeypatch):
    """Registers the traffic pattern ``hand`` (case = a key of BUILD) for one test."""
    from models.core.registry import Param
    monkeypatch.setitem(TRAFFIC._entries, "hand", Entry(
        "hand", _hand, [Param("case", str, "", "which hand-built schedule")], "test", "test", {}))
    yield


def cfg_of(case, *sets):
    return make_cfg("traffic.pattern=hand", f"traffic.case={case}", *sets, preset="exchange")


def run(case, *sets, **kw):
    return run_local(cfg_of(case, *sets), **kw)


def L0(cfg):
    """Zero-load network latency of a one-flit packet between two endpoints of one router."""
    return zero_load_latency(cfg["router"], [])


def _one_message(b):
    b.send(0, 1, 64 * 7)       # 7 packets of 64 bytes (router.flit_bytes), one flit each
    b.recv(1, 0, 64 * 7)


def _chain(b):
    r = b.recv(1, 0, 64)
    c = b.compute(1, 25, after=[r])
    s = b.send(1, 0, 1, tag=3, after=[c])           # 1 byte: still one packet
    b.send(0, 1, 64)
    b.recv(0, 1, 0, tag=3)
    b.compute(1, 10, start_after=[s])               # starts when the send is posted


def _two_sends(b):
    b.send(0, 1, 64 * 3)
    b.send(0, 2, 64 * 2)
    b.recv(1, 0, 64 * 3)
    b.recv(2, 0, 64 * 2)


BUILD.update(one=(2, _one_message), chain=(2, _chain), two=(3, _two_sends))


def test_message_timing_at_zero_load(hand):
    """A send of k packets injects one per cycle from cycle 0 and completes with its last flit
    (k - 1); the receive completes when the last packet arrives (k - 1 + L0)."""
    res = run("one")
    w = res["workload"]
    lat = L0(res["prepared"].cfg)
    assert list(w["op_start"]) == [0, 0]
    assert list(w["op_end"]) == [6, 6 + lat]
    assert list(w["proc_finish"]) == [6, 6 + lat]
    assert res["summary"]["completion_cycles"] == 6 + lat + 1     # cycles 0 .. the last end
    assert res["summary"]["messages"] == 1 and res["summary"]["operations_completed"] == 2


def test_dependencies_and_start_dependencies(hand):
    """A compute starts when the receive it depends on completes and lasts its cycles; the send
    after it is posted then; an op with a start dependency starts with the send."""
    res = run("chain")
    lat = L0(res["prepared"].cfg)
    start, end = res["workload"]["op_start"], res["workload"]["op_end"]
    # process 0: send (op 0), recv (op 1); process 1: recv, compute, send, compute
    assert (start[0], end[0]) == (0, 0)
    assert end[2] == lat and (start[3], end[3]) == (lat, lat + 25)
    assert (start[4], end[4]) == (lat + 25, lat + 25)
    assert (start[5], end[5]) == (lat + 25, lat + 35)
    assert end[1] == lat + 25 + lat


def test_nic_sends_posted_messages_one_after_another(hand):
    """Two sends posted together leave in operation order: the second starts after the
    first's last flit."""
    res = run("two")
    lat = L0(res["prepared"].cfg)
    end = res["workload"]["op_end"]
    assert (end[0], end[1]) == (2, 4)
    assert (end[2], end[3]) == (2 + lat, 4 + lat)


def _sizes_differ(b):
    b.send(0, 1, 64 * 3)       # 3 packets each
    b.send(0, 2, 64 * 3)
    b.recv(1, 0, 64)           # a receive smaller than its message
    b.recv(2, 0, 64 * 5)       # a larger one (MPI allows it)


BUILD.update(sizes=(3, _sizes_differ))


def test_receive_waits_for_its_message_whatever_size_it_states(hand):
    """A receive completes when the last packet of the message it matched is in: the send's
    size counts, not the receive's (a larger receive used to wait forever, a smaller one to
    complete with its message still on the way)."""
    res = run("sizes")
    lat = L0(res["prepared"].cfg)
    end = res["workload"]["op_end"]
    assert (end[0], end[1]) == (2, 5)
    assert (end[2], end[3]) == (2 + lat, 5 + lat)
    assert res["summary"]["operations_completed"] == 4


def _ring(n, nbytes, rounds):
    def build(b):
        p = np.arange(n)
        last = np.full(n, -1)
        for _ in range(rounds):
            s = b.send(p, (p + 1) % n, nbytes, after=[last])
            r = b.recv(p, (p - 1) % n, nbytes, after=[last])
            last = b.compute(p, 3, after=[s, r])
    return n, build


BUILD["ring"] = _ring(40, 64 * 9, 3)
EPS["ring"] = np.random.default_rng(5).permutation(150)[:40]


def test_same_operations_on_any_part_count(hand):
    """Per-operation cycles, process finish times and every other result are identical on 1,
    2, 3 and 4 parts (packets of 4 flits, adaptive routing, contention)."""
    sets = ("router.packet_size=4", "routing.algorithm=ugal_l")
    whole = run("ring", *sets)
    assert whole["summary"]["operations_completed"] == 40 * 9
    R = whole["prepared"].topo.n_routers
    for k in (2, 3, 4):
        owner = ((np.arange(R) * 7919) % k).astype(np.int32)
        part = run("ring", *sets, owner=owner, prep=whole["prepared"])
        assert_same_results(whole, part)
        for name, v in whole["workload"].items():
            assert np.array_equal(v, part["workload"][name]), name


def test_restart_from_checkpoint_on_other_part_counts(hand, tmp_path):
    """A schedule checkpointed mid-run on 2 parts continues on 1 and 3 parts to the same
    per-operation cycles (the restart helper compares every result)."""
    BUILD["long"] = _ring(40, 64 * 60, 6)
    EPS["long"] = EPS["ring"]
    cfg = cfg_of("long", "router.packet_size=2")
    from pdes.build import prepare
    prep = prepare(cfg)
    with restarted_on_other_part_counts(cfg, prep, tmp_path / "ck.h5") as f:
        assert "schedule/op_done" in f and (f["schedule/op_done"][()] >= 0).any()
        assert (f["schedule/op_done"][()] < 0).any()      # stopped mid-run
    whole = run_local(cfg, prep=prep)
    assert whole["summary"]["operations_completed"] == 40 * 18


def test_results_file_has_the_workload(hand, tmp_path):
    """The HDF5 file holds per-operation start and end cycles and per-process finish times in
    the schedule's numbering."""
    from pdes.output import write_results
    res = run("chain")
    path = tmp_path / "r.h5"
    write_results(str(path), res, "", nranks=1, partition=None, version="test")
    with h5py.File(path) as f:
        assert np.array_equal(f["workload/op_end"][()], res["workload"]["op_end"])
        assert list(f["workload/proc_op_offset"][()]) == [0, 2, 6]
        assert f["workload/proc_finish"][1] == res["workload"]["op_end"][5]


def test_timeline_draws_every_operation(hand, tmp_path):
    """`pdes plot --kind timeline` draws one segment per operation, from its post to its
    completion, sends, receives and computes apart; a run without a schedule is refused."""
    from pdes.output import write_results
    from pdes.plot import timeline_figure
    from pdes.results import open_results
    res = run("chain")
    path = tmp_path / "r.h5"
    write_results(str(path), res, C_TOML(res), nranks=1, partition=None, version="test")
    with open_results(str(path)) as r:
        fig = timeline_figure(r)
    segs = {c.get_label(): c.get_segments() for c in fig.axes[0].collections}
    assert [len(segs[k]) for k in ("send", "receive", "compute")] == [2, 2, 2]
    start, end = res["workload"]["op_start"], res["workload"]["op_end"]
    assert sorted((s[0][0], s[1][0]) for s in segs["compute"]) == \
        sorted((start[i], end[i]) for i in (3, 5))
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == \
        ["send", "receive", "compute"]
    res = run("sizes")                   # no compute: the legend does not list one
    write_results(str(tmp_path / "s.h5"), res, C_TOML(res), nranks=1, partition=None,
                  version="test")
    with open_results(str(tmp_path / "s.h5")) as r:
        fig = timeline_figure(r)
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["send", "receive"]
    plain = run_local(make_cfg(preset="plan"))
    write_results(str(tmp_path / "u.h5"), plain, C_TOML(plain), nranks=1, partition=None,
                  version="test")
    with open_results(str(tmp_path / "u.h5")) as r, \
            pytest.raises(ParameterError, match="--kind timeline: .* is not a run of a schedule"):
        timeline_figure(r)


def C_TOML(res):
    from pdes import config as C
    return C.to_toml(res["prepared"].cfg)


def _stuck(b):
    r0 = b.recv(0, 1, 8)
    b.send(0, 1, 8, after=[r0])
    r1 = b.recv(1, 0, 8)
    b.send(1, 0, 8, after=[r1])


BUILD["stuck"] = (2, _stuck)


def test_schedule_that_cannot_complete_is_refused_before_the_run(hand):
    """Two processes that each receive before they send are refused before anything is
    simulated, naming a process and operation."""
    with pytest.raises(ParameterError, match=r"traffic: process 0 op 0 \(recv 8 B from 1 tag 0\)"):
        run("stuck")


@pytest.mark.parametrize("n, nbytes, pkt", [(8, 8 * 64 * 40, 1), (5, 5 * 64 * 2 * 9, 2)])
def test_ring_allreduce_matches_the_zero_load_formula(n, nbytes, pkt):
    """A ring allreduce of n processes on one router (no two messages share a channel) ends
    after 2 (n - 1) steps of c - 1 + L cycles each: c packets per block of bytes / n, the
    NIC injecting one packet per packet_size cycles, L the zero-load latency of the last
    packet (pdes.timing): T = 2 (n - 1) (pkt (c - 1) + L)."""
    cfg = make_cfg("topology.p=8", "traffic.pattern=allreduce", "traffic.algorithm=ring",
                   f"traffic.procs={n}", f"traffic.bytes={nbytes}", f"router.packet_size={pkt}",
                   preset="exchange")
    res = run_local(cfg)
    c = nbytes // n // (64 * pkt)
    lat = zero_load_latency(cfg["router"], [])
    T = 2 * (n - 1) * (pkt * (c - 1) + lat)
    assert int(res["workload"]["op_end"].max()) == T
    assert res["summary"]["completion_cycles"] == T + 1
    assert res["summary"]["messages"] == 2 * (n - 1) * n


def test_message_too_large_names_the_trace_and_a_receive_takes_its_sends_size(tmp_path):
    """A send of more than 2^31 - 1 packets is refused under traffic.file for a GOAL trace; a
    receive stating such a size is timed by its (small) send and accepted."""
    from pdes import config as C
    from pdes.build import prepare
    big = 2 ** 40
    trace = tmp_path / "t.goal"
    trace.write_text(f"num_ranks 2\nrank 0 {{\nsend {big}b to 1\n}}\nrank 1 {{\n"
                     f"recv {big}b from 0\n}}\n")
    with pytest.raises(C.ConfigError, match=r"^traffic\.file: process 0 op 0 \(send "):
        prepare(C.resolve({}, ["traffic.pattern=goal", f"traffic.file={trace}"]))
    trace.write_text(f"num_ranks 2\nrank 0 {{\nsend 64b to 1\n}}\nrank 1 {{\n"
                     f"recv {big}b from 0\n}}\n")
    prep = prepare(C.resolve({}, ["traffic.pattern=goal", f"traffic.file={trace}"]))
    assert prep.traffic.msg_pkts.tolist() == [1, 1]


def test_a_schedule_without_operations_has_no_send_under_way(tmp_path):
    """A schedule of no operation (a GOAL trace of empty rank blocks; an ``open_loop`` job
    whose Bernoulli draws start no message) has no send under way at any endpoint: the
    kernel took send 0, which does not exist (``msg_left[0]`` of an empty table: an
    IndexError with NUMBA_BOUNDSCHECK=1, a read past the table without).  The run completes
    at once, on 1 and on 3 parts."""
    from pdes import config as C
    from pdes.build import make_parts, prepare
    trace = tmp_path / "empty.goal"
    trace.write_text("num_ranks 2\nrank 0 {\n}\nrank 1 {\n}\n")
    cfg = C.resolve({}, ["topology.q=3", "traffic.pattern=goal", f"traffic.file={trace}"])
    prep = prepare(cfg)
    assert prep.traffic.kind == "schedule" and prep.traffic.msg_dst.size == 0
    R = prep.topo.n_routers
    owner = ((np.arange(R) * 3) // R).astype(np.int32)
    for p in make_parts(prep, owner, [0, 1, 2], 1):
        assert (p.arrays["ep_cur_msg"] == -1).all()
    one = run_local(cfg, prep=prep)
    assert one["summary"]["messages"] == 0
    assert one["counters"]["created_packets"] == 0
    assert_same_results(one, run_local(cfg, owner=owner, prep=prep))
