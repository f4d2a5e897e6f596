"""GPCNeT's random ring, incast and outcast as schedules: structure, data flow, rounds, refusals."""
from functools import lru_cache

import numpy as np
import pytest

from models.core.errors import ParameterError
from models.core.registry import TRAFFIC
from models.schedule import OP_COMPUTE, OP_RECV, OP_SEND, ScheduleBuilder, check
from models.topology import build
from models.traffic import gpcnet as G
from pdes.engine import simulate
from tests.helpers import assert_same_results, final, make_cfg, replay

SIZES = (2, 3, 5, 8)


@lru_cache(maxsize=None)
def sf5():
    return build("slimfly", {"q": 5})


def plan(pattern, seed=0, **params):
    entry = TRAFFIC.get(pattern)
    return entry.func(sf5(), seed, **entry.resolve(params, "traffic"))


def one(gen, n, **kw):
    """One round over processes 0..n-1, checked."""
    b = ScheduleBuilder(n)
    gen(b, np.arange(n), **kw)
    return check(b.build(np.arange(n)))


def deps(s, o):
    return sorted(int(d) for d in s.dep[s.dep_off[o]:s.dep_off[o + 1]])


def ops_of(s, p, kind):
    ops = np.arange(s.op_off[p], s.op_off[p + 1])
    return ops[s.op_kind[ops] == kind]


def own_block(n):
    """Initial data: process p holds block p only."""
    return lambda p: [(1 << p) * (c == p) for c in range(n)]


# --------------------------------------------------------------------------- one round
@pytest.mark.parametrize("n", SIZES)
def test_ring_round_passes_each_block_to_the_successor(n):
    """Ring round: each process sends one message of nbytes to i+1 and receives one from i-1,
    the receive after the send; every process ends with its own and its predecessor's block."""
    s = one(G.ring_round, n, nbytes=8)
    for p in range(n):
        (snd,), (rcv,) = ops_of(s, p, OP_SEND), ops_of(s, p, OP_RECV)
        assert s.op_peer[snd] == (p + 1) % n and s.op_peer[rcv] == (p - 1) % n
        assert s.op_size[snd] == s.op_size[rcv] == 8
        assert deps(s, rcv) == [snd] and s.op_off[p + 1] - 1 == rcv
    got = final(s, replay(s, own_block(n)))
    for p in range(n):
        want = [(1 << c) * (c in (p, (p - 1) % n)) for c in range(n)]
        assert got[p] == want


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("root", [0, -1])
def test_incast_round_gathers_every_block_at_the_root(n, root):
    """Incast round: every process but the root sends one message to the root; the root
    receives from each and its last op is a 0-cycle compute after all of them; the root ends
    with every block, the others with their own only."""
    root %= n
    s = one(G.incast_round, n, nbytes=100, root=root)
    rcv = ops_of(s, root, OP_RECV)
    assert sorted(s.op_peer[rcv].tolist()) == [p for p in range(n) if p != root]
    (w,) = ops_of(s, root, OP_COMPUTE)
    assert s.op_size[w] == 0 and deps(s, w) == sorted(rcv.tolist()) and w == s.op_off[root + 1] - 1
    assert ops_of(s, root, OP_SEND).size == 0
    for p in set(range(n)) - {root}:
        (snd,) = ops_of(s, p, OP_SEND)
        assert s.op_peer[snd] == root and s.op_size[snd] == 100 and s.op_off[p + 1] - s.op_off[p] == 1
    k = int(s.chunk[s.op_kind == OP_SEND, 1].max())   # blocks 0..k-1 (the root's own has none)
    got = final(s, replay(s, own_block(k)))
    for p in range(n):
        assert got[p] == ([1 << c for c in range(k)] if p == root else own_block(k)(p))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("root", [0, -1])
def test_outcast_round_reaches_every_process(n, root):
    """Outcast round: the root sends one message to every other process, its last op a 0-cycle
    compute after all sends; every other process receives once; all end with the root's data."""
    root %= n
    s = one(G.outcast_round, n, nbytes=100, root=root)
    snd = ops_of(s, root, OP_SEND)
    assert sorted(s.op_peer[snd].tolist()) == [p for p in range(n) if p != root]
    (w,) = ops_of(s, root, OP_COMPUTE)
    assert s.op_size[w] == 0 and deps(s, w) == sorted(snd.tolist()) and w == s.op_off[root + 1] - 1
    for p in set(range(n)) - {root}:
        (rcv,) = ops_of(s, p, OP_RECV)
        assert s.op_peer[rcv] == root and s.op_size[rcv] == 100 and s.op_off[p + 1] - s.op_off[p] == 1
    got = final(s, replay(s, lambda p: [1 << p if p == root else 0]))
    assert got == [[1 << root]] * n


# --------------------------------------------------------------------------- registered patterns
def test_random_ring_is_one_seeded_cycle():
    """random_ring: the successors form one cycle through all processes, in the seeded order
    of ring_order, the same in every iteration; another seed draws another ring."""
    n = 12
    s = plan("random_ring", procs=n, iterations=3).ops
    proc = s.op_proc()
    snd = np.nonzero(s.op_kind == OP_SEND)[0]
    assert snd.size == 3 * n and np.all(s.op_size[snd] == 8)
    succ = {}
    for o in snd:
        assert succ.setdefault(int(proc[o]), int(s.op_peer[o])) == s.op_peer[o]
    order = G.ring_order(0, n)
    assert [succ[int(p)] for p in order] == list(np.roll(order, -1))
    seen, p = [], 0
    while p not in seen:
        seen.append(p)
        p = succ[p]
    assert len(seen) == n
    other = plan("random_ring", seed=1, procs=n).ops
    assert not np.array_equal(other.op_peer, plan("random_ring", procs=n).ops.op_peer)


def manual(gen, n, iterations, cc, order=None, **kw):
    """The same rounds built with one generator call per round."""
    b = ScheduleBuilder(n)
    P = np.arange(n)
    last = None
    for it in range(iterations):
        if it and cc:
            last = b.compute(P, cc, after=[last])
        if order is None:
            last = gen(b, P, after=last, **kw)
        else:
            nxt = np.empty(n, dtype=np.int64)
            nxt[order] = gen(b, P[order], after=None if last is None else last[order], **kw)
            last = nxt
    return check(b.build(P))


@pytest.mark.parametrize("pattern,gen,params", [
    ("random_ring", G.ring_round, dict(bytes=16)),
    ("incast", G.incast_round, dict(bytes=40, root=3)),
    ("outcast", G.outcast_round, dict(bytes=40, root=2)),
])
@pytest.mark.parametrize("cc", [0, 37])
def test_rounds_follow_each_other(pattern, gen, params, cc):
    """iterations = 3 (with compute_cycles between them) is exactly three generator rounds,
    each after the previous round's last op of that process."""
    n = 6
    got = plan(pattern, procs=n, iterations=3, compute_cycles=cc, **params).ops
    kw = {"nbytes": params["bytes"], **({"root": params["root"]} if "root" in params else {})}
    want = manual(gen, n, 3, cc, order=G.ring_order(0, n) if pattern == "random_ring" else None,
                  **kw)
    for f in ("op_off", "op_kind", "op_peer", "op_size", "op_tag", "dep_off", "dep", "dep_kind",
              "chunk", "match"):
        assert np.array_equal(getattr(got, f), getattr(want, f)), f


def test_incast_senders_run_ahead_of_the_root():
    """Incast: a sender's next send waits only for its own previous send; the root's next
    receives wait for its compute after all the previous round's receives."""
    n, root = 5, 1
    s = plan("incast", procs=n, root=root, iterations=2).ops
    for p in set(range(n)) - {root}:
        a, b = ops_of(s, p, OP_SEND)
        assert deps(s, a) == [] and deps(s, b) == [a]
    (w1, w2) = ops_of(s, root, OP_COMPUTE)
    rcv = ops_of(s, root, OP_RECV)
    assert all(deps(s, r) == [] for r in rcv[:n - 1])
    assert all(deps(s, r) == [w1] for r in rcv[n - 1:])


@pytest.mark.parametrize("pattern,params,key", [
    ("random_ring", dict(bytes=-1), "traffic.bytes"),
    ("random_ring", dict(iterations=0), "traffic.iterations"),
    ("random_ring", dict(procs=1), "traffic.procs"),
    ("random_ring", dict(compute_cycles=-1), "traffic.compute_cycles"),
    ("random_ring", dict(iterations=10 ** 7), "traffic.iterations"),
    ("random_ring", dict(placement="everywhere"), "traffic.placement"),
    ("incast", dict(root=12, procs=12), "traffic.root"),
    ("incast", dict(bytes=2 ** 41), "traffic.bytes"),
    ("outcast", dict(root=-1), "traffic.root"),
    ("outcast", dict(procs=201), "traffic.placement"),
])
def test_bad_parameters_name_their_key(pattern, params, key):
    """A bad parameter is refused before anything is built, naming traffic.<parameter>."""
    with pytest.raises(ParameterError, match=rf"^{key.replace('.', '[.]')}: "):
        plan(pattern, **params)


def test_bad_root_is_one_line_from_the_cli(run_pdes):
    """`pdes run` with an incast root outside the processes prints one error line, exit 2."""
    r = run_pdes("run", "--set", "topology.q=5", "--set", "traffic.pattern=incast", "--set",
                 "traffic.procs=20", "--set", "traffic.root=20")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["pdes: error: traffic.root: 20 is not a process 0..19"]


# --------------------------------------------------------------------------- as jobs, simulated
MIX = ["topology.q=5", "routing.algorithm=ugal_l",
       "jobs.0.name=ring", "jobs.0.pattern=random_ring", "jobs.0.procs=10",
       "jobs.0.placement=random", "jobs.0.iterations=6",
       "jobs.1.name=incast", "jobs.1.pattern=incast", "jobs.1.procs=12", "jobs.1.placement=random",
       "jobs.1.bytes=600", "jobs.1.iterations=3",
       "jobs.2.name=outcast", "jobs.2.pattern=outcast", "jobs.2.procs=9", "jobs.2.placement=random",
       "jobs.2.bytes=600", "jobs.2.root=4", "jobs.2.iterations=2"]


def test_patterns_run_as_jobs():
    """The three patterns run as jobs of one network: every message arrives, each job sends
    iterations x messages x bytes, and its span ends after its first post."""
    res = simulate(make_cfg(*MIX, preset="exchange"), None)
    jobs = res["jobs"]
    assert jobs["ring"]["bytes_sent"] == 6 * 10 * 8
    assert jobs["incast"]["bytes_sent"] == 3 * 11 * 600
    assert jobs["outcast"]["bytes_sent"] == 2 * 8 * 600
    assert res["summary"]["messages_completed"] == res["summary"]["messages"] == 60 + 33 + 16
    for j in jobs.values():
        assert j["completion_cycle"] > j["start_cycle"] >= 0
        assert j["message_latency_max"] >= j["message_latency_p99"] >= j["message_latency_p50"] > 0


@pytest.mark.mpi(min_size=2)
def test_patterns_as_jobs_equal_serial_on_ranks():
    """The three patterns as jobs give the one-process results on all ranks of the world."""
    from mpi4py import MPI
    cfg = make_cfg(*MIX, preset="exchange")
    assert_same_results(simulate(cfg, MPI.COMM_WORLD), simulate(cfg, None))
