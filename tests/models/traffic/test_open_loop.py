"""open_loop: Bernoulli message arrivals as a schedule (a load pattern that runs as a job)."""
import numpy as np
import pytest

import models.traffic  # noqa: F401
from models.core.errors import ParameterError
from models.core.registry import TRAFFIC
from models.schedule import OP_COMPUTE, OP_RECV, OP_SEND
from models.topology import build

TOPO = build("slimfly", {"q": 5, "p": None, "p_rounding": "ceil"})


def plan(**kw):
    return TRAFFIC.get("open_loop").func(TOPO, 3, **{"procs": 20, **kw})


@pytest.mark.parametrize("dest", ["uniform", "permutation"])
def test_each_message_is_a_compute_a_send_and_a_receive(dest):
    """Every send waits for a compute as long as its arrival cycle, goes to another process,
    and is matched by a receive posted at once at its destination; permutation sends every
    process's messages to one successor, on one cycle through all processes."""
    s = plan(messages_per_cycle=0.3, cycles=400, destinations=dest).ops
    kind, proc = s.op_kind, s.op_proc()
    snd = np.nonzero(kind == OP_SEND)[0]
    assert (kind == OP_COMPUTE).sum() == snd.size == (kind == OP_RECV).sum()
    dep = s.dep[s.dep_off[snd]]
    assert (s.op_kind[dep] == OP_COMPUTE).all() and (np.diff(s.dep_off)[snd] == 1).all()
    assert (s.op_size[dep] < 400).all() and (s.op_peer[snd] != proc[snd]).all()
    assert (np.diff(s.dep_off)[kind == OP_RECV] == 0).all()
    assert abs(snd.size / (20 * 400) - 0.3) < 0.03
    if dest == "permutation":
        succ = {int(p): set(s.op_peer[snd][proc[snd] == p].tolist()) for p in range(20)}
        assert all(len(v) == 1 for v in succ.values())
        p, seen = 0, set()
        while p not in seen:
            seen.add(p)
            p = next(iter(succ[p]))
        assert len(seen) == 20


def test_same_seed_same_schedule_other_seed_other():
    """The arrivals and destinations are a function of the seed."""
    a, b = plan().ops, plan().ops
    assert np.array_equal(a.op_peer, b.op_peer) and np.array_equal(a.op_size, b.op_size)
    c = TRAFFIC.get("open_loop").func(TOPO, 4, procs=20).ops
    assert not np.array_equal(a.op_size, c.op_size)


@pytest.mark.parametrize("kw, err", [({"messages_per_cycle": 0.0}, "messages_per_cycle"),
                                     ({"cycles": 10**8, "procs": 200}, "traffic.cycles")])
def test_bad_parameters_are_refused(kw, err):
    """A zero rate or a schedule beyond the operation limit is refused naming the key."""
    with pytest.raises(ParameterError, match=err):
        plan(**kw)


def test_runs_as_a_job_at_its_offered_load():
    """As a job beside another, open_loop's one-flit messages are all delivered and each send
    starts no earlier than its arrival cycle."""
    from pdes.engine import run_local
    from tests.helpers import make_cfg
    cfg = make_cfg("jobs.0.pattern=open_loop", "jobs.0.procs=40", "jobs.0.placement=random",
                   "jobs.0.messages_per_cycle=0.2", "jobs.0.cycles=300",
                   "jobs.1.pattern=allreduce", "jobs.1.procs=8", "jobs.1.bytes=256",
                   preset="exchange")
    res = run_local(cfg)
    s = res["prepared"].traffic.ops
    w = res["workload"]
    snd = np.nonzero(s.op_kind[:s.op_off[40]] == OP_SEND)[0]
    comp = s.dep[s.dep_off[snd]]
    assert (w["op_start"][snd] == s.op_size[comp]).all()
    assert (w["op_end"] >= 0).all()
    j = res["jobs"]["job0"]
    assert j["messages"] == snd.size and j["operations_completed"] == j["operations"]
