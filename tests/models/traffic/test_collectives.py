"""Collectives and application skeletons as schedules: matching, data flow, message totals.

The data-flow replay (:func:`tests.helpers.replay`) gives every operation the data its process is
*guaranteed* to hold when it starts: the process's initial data and what the
operations it depends on hold when they complete (a receive adds what its matched send
carried: the sender's guaranteed data in the send's ``chunk`` range).  Data is a bit
mask of contributing processes per chunk.  Nothing that is not ordered by
dependencies counts, so a missing dependency shows as missing data; with
``reduce=True`` a receive that would add a contribution twice (the data received
overlaps the data held without containing it) fails.
"""
from functools import lru_cache
import math

import numpy as np
import pytest

from models.core.errors import ParameterError
from models.core.registry import TRAFFIC
from models.schedule import OP_COMPUTE, OP_RECV, OP_SEND, ScheduleBuilder, check
from models.topology import build
from models.traffic import collectives as C
from models.traffic.exchanges import torus_dims
from tests.helpers import final, replay

SIZES = (2, 3, 5, 6, 8, 12)


def chunks(s):
    return int(s.chunk[s.op_kind == OP_SEND, 1].max())


ALL = lambda n: (1 << n) - 1  # noqa: E731


def check_data(kind, s, n, root=0):
    """Replay ``s`` (one instance of collective ``kind`` over processes 0..n-1) and assert
    what every process must hold at its last operation."""
    k = chunks(s)
    init = {
        "allreduce": lambda p: [1 << p] * k,
        "reduce": lambda p: [1 << p] * k,
        "allgather": lambda p: [(1 << p) * (c == p) for c in range(k)],
        "broadcast": lambda p: [(1 << p) * (p == root)] * k,
        "alltoall": lambda p: [1 << p] * k,
        "barrier": lambda p: [1 << p] * k,
    }[kind]
    got = final(s, replay(s, init, reduce=kind in ("allreduce", "reduce")))
    for p in range(n):
        want = {
            "allreduce": [ALL(n)] * k,
            "reduce": [ALL(n)] * k if p == root else got[p],
            "allgather": [1 << c for c in range(k)],
            "broadcast": [1 << root] * k,
            "alltoall": got[p][:p] + [ALL(n)] + got[p][p + 1:],
            "barrier": [ALL(n)],
        }[kind]
        assert got[p] == want, (kind, n, p, [bin(x) for x in got[p]])


# --------------------------------------------------------------------------- expected totals
def pof2(n):
    return 1 << (n.bit_length() - 1)


def expected(kind, alg, n, nbytes, seg=1):
    """(sends, bytes sent) in total, from the algorithms' definitions."""
    p2, lg = pof2(n), pof2(n).bit_length() - 1
    rem = n - p2
    nseg = max(1, -(-nbytes // seg))
    return {
        ("allreduce", "ring"): (2 * n * (n - 1), 2 * (n - 1) * nbytes),
        ("allreduce", "recursive_doubling"): (p2 * lg + 2 * rem, (p2 * lg + 2 * rem) * nbytes),
        ("allreduce", "rabenseifner"): (2 * p2 * lg + 2 * rem, 2 * (p2 - 1) * nbytes + 2 * rem * nbytes),
        ("allgather", "ring"): (n * (n - 1), n * (n - 1) * nbytes),
        ("allgather", "recursive_doubling"): (n * lg, n * (n - 1) * nbytes),
        ("broadcast", "binomial"): (n - 1, (n - 1) * nbytes),
        ("broadcast", "chain"): ((n - 1) * nseg, (n - 1) * nbytes),
        ("reduce", "binomial"): (n - 1, (n - 1) * nbytes),
        ("reduce", "chain"): ((n - 1) * nseg, (n - 1) * nbytes),
        ("alltoall", "pairwise"): (n * (n - 1), n * (n - 1) * nbytes),
        ("alltoall", "posted"): (n * (n - 1), n * (n - 1) * nbytes),
        ("barrier", "dissemination"): (n * max(1, math.ceil(math.log2(n))), 0),
    }[(kind, alg)]


GEN = {("allreduce", a): g for a, g in C.ALLREDUCE.items()}
GEN.update({("allgather", a): g for a, g in C.ALLGATHER.items()})
GEN.update({("broadcast", a): g for a, g in C.BCAST.items()})
GEN.update({("reduce", a): g for a, g in C.REDUCE.items()})
GEN.update({("alltoall", a): g for a, g in C.ALLTOALL.items()})
GEN[("barrier", "dissemination")] = C.barrier_dissemination


def one(kind, alg, n, nbytes=1000, root=0, seg=300, rcpb=0.0):
    """One instance over processes 0..n-1, checked."""
    b = ScheduleBuilder(n)
    kw = {}
    if kind != "barrier":
        kw["nbytes"] = nbytes
    if kind in ("broadcast", "reduce"):
        kw["root"] = root
    if alg == "chain":
        kw["segment_bytes"] = seg
    if rcpb:
        kw["reduce_cycles_per_byte"] = rcpb
    GEN[(kind, alg)](b, np.arange(n), **kw)
    return check(b.build(np.arange(n)))


CASES = [(k, a, n) for (k, a) in GEN for n in SIZES
         if not (a == "recursive_doubling" and k == "allgather" and n & (n - 1))]


@pytest.mark.parametrize("kind,alg,n", CASES, ids=[f"{k}-{a}-{n}" for k, a, n in CASES])
def test_collective_delivers_its_data(kind, alg, n):
    """Every collective leaves every process with the data it must hold (replayed by
    dependencies only), its last op follows all its ops, and the message totals are the
    algorithm's."""
    for nbytes, root in ((1000, 0), (7, n - 1)):       # 7 bytes: uneven and empty blocks
        s = one(kind, alg, n, nbytes=nbytes, root=root)
        check_data(kind, s, n, root=root)
        snd = s.op_kind == OP_SEND
        assert (int(snd.sum()), int(s.op_size[snd].sum())) == expected(kind, alg, n, nbytes, 300)
        assert not (s.op_kind == OP_COMPUTE).any() or alg == "posted"


def test_ring_allreduce_message_sizes():
    """Ring allreduce: each process sends 2(n-1) messages of floor or ceil(nbytes/n) bytes to
    its right neighbour."""
    n, nbytes = 6, 1003
    s = one("allreduce", "ring", n, nbytes)
    proc = s.op_proc()
    snd = s.op_kind == OP_SEND
    assert np.all(np.bincount(proc[snd], minlength=n) == 2 * (n - 1))
    assert set(s.op_size[snd].tolist()) == {nbytes // n, nbytes // n + 1}
    assert np.all(s.op_peer[snd] == (proc[snd] + 1) % n)


def test_alltoall_sends_each_pair_once():
    """All-to-all (both algorithms): one message for each ordered pair of processes; pairwise
    sends to i+k in step k."""
    n = 5
    for alg in ("pairwise", "posted"):
        s = one("alltoall", alg, n)
        proc = s.op_proc()
        snd = np.nonzero(s.op_kind == OP_SEND)[0]
        pairs = list(zip(proc[snd].tolist(), s.op_peer[snd].tolist()))
        assert sorted(pairs) == [(a, b) for a in range(n) for b in range(n) if a != b]
        assert [q for p, q in pairs if p == 0] == [1, 2, 3, 4]


def test_binomial_trees_have_the_mpich_shape():
    """Binomial broadcast from root 2 of 6: relative rank r receives from r with its lowest bit
    cleared; binomial reduce sends the other way."""
    n, root = 6, 2
    s = one("broadcast", "binomial", n, root=root)
    proc = s.op_proc()
    rcv = np.nonzero(s.op_kind == OP_RECV)[0]
    parent = {int(proc[o]): int(s.op_peer[o]) for o in rcv}
    for r in range(1, n):
        assert parent[(r + root) % n] == ((r & (r - 1)) + root) % n
    s = one("reduce", "binomial", n, root=root)
    proc = s.op_proc()
    snd = np.nonzero(s.op_kind == OP_SEND)[0]
    assert {int(proc[o]): int(s.op_peer[o]) for o in snd} == parent


def test_chain_pipelines_segments():
    """Pipelined chain broadcast: 2500 bytes in segments of 1000 are 3 messages (1000, 1000,
    500) on each link, and a process forwards segment k as soon as it has received it."""
    s = one("broadcast", "chain", 4, nbytes=2500, root=1, seg=1000)
    proc = s.op_proc()
    for p in (1, 2, 3):                                # the chain 1 -> 2 -> 3 -> 0
        ops = np.nonzero((proc == p) & (s.op_kind == OP_SEND))[0]
        assert s.op_size[ops].tolist() == [1000, 1000, 500]
        assert set(s.op_peer[ops].tolist()) == {(p + 1) % 4}
    fwd = np.nonzero((proc == 2) & (s.op_kind == OP_SEND))[0]
    rcv = np.nonzero((proc == 2) & (s.op_kind == OP_RECV))[0]
    for f, r in zip(fwd, rcv):
        assert r in s.dep[s.dep_off[f]:s.dep_off[f + 1]]


@pytest.mark.parametrize("kind,alg", [("allreduce", "ring"), ("allreduce", "recursive_doubling"),
                                      ("allreduce", "rabenseifner"), ("reduce", "binomial"),
                                      ("reduce", "chain")])
def test_reduction_costs_are_compute_ops(kind, alg):
    """reduce_cycles_per_byte: after each reduced receive a compute of ceil(bytes x rate) cycles
    that the next step depends on; none at rate 0 or for an empty part; data unchanged."""
    n, rate = 6, 0.3
    s = one(kind, alg, n, nbytes=1000, rcpb=rate)
    check_data(kind, s, n)
    comp = np.nonzero(s.op_kind == OP_COMPUTE)[0]
    p2, lg = pof2(n), pof2(n).bit_length() - 1
    want = {"ring": n * (n - 1), "recursive_doubling": p2 * lg + n - p2,
            "rabenseifner": p2 * lg + n - p2, "binomial": n - 1, "chain": (n - 1) * 4}[alg]
    assert comp.size == want
    for c in comp:
        (r,) = s.dep[s.dep_off[c]:s.dep_off[c + 1]][:1]
        assert s.op_kind[r] == OP_RECV and s.op_size[c] == math.ceil(s.op_size[r] * rate) > 0
    has_dependant = np.zeros(s.n_ops, dtype=bool)
    has_dependant[s.dep] = True
    proc = s.op_proc()
    tail = s.op_off[proc[comp] + 1] - 1 == comp         # a process's last op has no dependant
    assert np.all(has_dependant[comp] | tail)
    s = one("allreduce", "ring", 5, nbytes=3, rcpb=rate)  # blocks of 1, 1, 1, 0, 0 bytes
    comp = s.op_kind == OP_COMPUTE
    assert np.all(s.op_size[comp] == 1) and comp.sum() == 4 * 3   # 4 steps, 3 blocks not empty


def test_broken_ring_allreduce_fails_the_replay():
    """The replay fails a ring allreduce without its allgather half, and one whose sends do not
    wait for the previous step's receive."""
    n = 5
    i = np.arange(n)
    cnt = C.split_bytes(100, n)
    for broken in ("no allgather", "no dependency"):
        b = ScheduleBuilder(n)
        prev = [np.full(n, -1)]
        for phase in range(1 if broken == "no allgather" else 2):
            for s_ in range(n - 1):
                cs, cr = ((i - s_) % n, (i - s_ - 1) % n) if phase == 0 else \
                    ((i + 1 - s_) % n, (i - s_) % n)
                snd = b.send(i, (i + 1) % n, cnt[cs], after=prev if broken != "no dependency" else [],
                             chunk=(cs, cs + 1))
                prev = [b.recv(i, (i - 1) % n, cnt[cr], after=[snd])]
        s = check(b.build(i))
        with pytest.raises(AssertionError):
            check_data("allreduce", s, n)


def test_replay_catches_double_counting():
    """A reduction that receives data it already holds part of fails the replay."""
    b = ScheduleBuilder(3)
    b.send(1, 0, 8, chunk=(0, 1))
    r1 = b.recv(0, 1, 8)                               # 0 holds {0, 1}
    b.send(1, 2, 8, chunk=(0, 1))
    r2 = b.recv(2, 1, 8)                               # 2 holds {1, 2}
    b.send(2, 0, 8, after=[r2], chunk=(0, 1))
    b.recv(0, 2, 8, after=[r1])                        # {1, 2} into {0, 1}: 1 twice
    s = check(b.build(np.arange(3)))
    with pytest.raises(AssertionError, match="reduced twice"):
        replay(s, lambda p: [1 << p], reduce=True)
    assert replay(s, lambda p: [1 << p])[s.op_off[1] - 1] == [0b111]


def test_recursive_doubling_allgather_refuses_other_sizes():
    """Recursive-doubling allgather on a number of processes that is not a power of two is
    refused, naming traffic.algorithm."""
    with pytest.raises(ParameterError, match=r"^traffic\.algorithm: .*power-of-two"):
        C.allgather_recursive_doubling(ScheduleBuilder(6), np.arange(6), 10)


# --------------------------------------------------------------------------- registered patterns
@lru_cache(maxsize=None)
def sf5():
    return build("slimfly", {"q": 5})


def plan(pattern, **params):
    entry = TRAFFIC.get(pattern)
    return entry.func(sf5(), 0, **entry.resolve(params, "traffic"))


PATTERNS = ["allreduce", "allgather", "broadcast", "reduce", "alltoall_collective", "barrier",
            "stencil3d", "training"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_pattern_resolves_through_the_registry(pattern):
    """Each pattern is registered, builds a checked schedule plan with its defaults, and its
    processes sit on the placed endpoints."""
    p = plan(pattern, procs=12, placement="random")
    assert p.kind == "schedule" and p.ops.match is not None
    want = np.random.default_rng([0, 0x9A1C]).permutation(200)[:12]
    n = p.ops.n_procs
    assert np.array_equal(p.ops.proc_ep, want[:n])
    assert np.array_equal(np.nonzero(p.active)[0], np.sort(want[:n]))
    assert p.description


def test_procs_zero_is_every_endpoint():
    """procs = 0 puts one process on every endpoint (linear: process i on endpoint i)."""
    assert np.array_equal(plan("barrier").ops.proc_ep, np.arange(200))


def manual(kind, alg, n, iterations, cc, **kw):
    """The same repetitions built with one generator call per iteration."""
    b = ScheduleBuilder(n)
    P = np.arange(n)
    last = None
    for it in range(iterations):
        if it and cc:
            last = b.compute(P, cc, after=[last])
        last = GEN[(kind, alg)](b, P, after=last, **kw)
    return check(b.build(P))


@pytest.mark.parametrize("pattern,kind,params,kw", [
    ("allreduce", "allreduce", dict(algorithm="ring", bytes=100), dict(nbytes=100)),
    ("allreduce", "allreduce", dict(algorithm="rabenseifner", bytes=100, reduce_cycles_per_byte=0.5),
     dict(nbytes=100, reduce_cycles_per_byte=0.5)),
    ("broadcast", "broadcast", dict(algorithm="chain", bytes=100, segment_bytes=40, root=2),
     dict(nbytes=100, segment_bytes=40, root=2)),
    ("reduce", "reduce", dict(algorithm="chain", bytes=100, segment_bytes=40, root=1,
                              reduce_cycles_per_byte=0.1),
     dict(nbytes=100, segment_bytes=40, root=1, reduce_cycles_per_byte=0.1)),
    ("alltoall_collective", "alltoall", dict(algorithm="posted", bytes=10), dict(nbytes=10)),
    ("barrier", "barrier", dict(algorithm="dissemination"), {}),
])
@pytest.mark.parametrize("cc", [0, 37])
def test_iterations_follow_each_other(pattern, kind, params, kw, cc):
    """iterations = 3 with compute_cycles between them is exactly the schedule of three
    generator calls, each after the previous one's last op (and a compute of compute_cycles)."""
    n = 5
    got = plan(pattern, procs=n, iterations=3, compute_cycles=cc, **params).ops
    want = manual(kind, params["algorithm"], n, 3, cc, **kw)
    for f in ("op_off", "op_kind", "op_peer", "op_size", "op_tag", "dep_off", "dep", "dep_kind",
              "chunk", "match"):
        assert np.array_equal(getattr(got, f), getattr(want, f)), f
    n_comp_between = int(((got.op_kind == OP_COMPUTE) & (got.op_size == cc)).sum()) if cc else 0
    assert n_comp_between == (2 * n if cc else 0)


@pytest.mark.parametrize("pattern,params,key", [
    ("allreduce", dict(algorithm="tree"), "traffic.algorithm"),
    ("allreduce", dict(bytes=-1), "traffic.bytes"),
    ("allreduce", dict(iterations=0), "traffic.iterations"),
    ("allreduce", dict(reduce_cycles_per_byte=-0.5), "traffic.reduce_cycles_per_byte"),
    ("allreduce", dict(reduce_cycles_per_byte=1e9), "traffic.reduce_cycles_per_byte"),
    ("allreduce", dict(reduce_cycles_per_byte=1e300), "traffic.reduce_cycles_per_byte"),
    ("training", dict(reduce_cycles_per_byte=1e17), "traffic.reduce_cycles_per_byte"),
    ("allreduce", dict(procs=1), "traffic.procs"),
    ("allreduce", dict(procs=-3), "traffic.procs"),
    ("allgather", dict(algorithm="recursive_doubling", procs=12), "traffic.algorithm"),
    ("broadcast", dict(root=12, procs=12), "traffic.root"),
    ("broadcast", dict(algorithm="chain", segment_bytes=0), "traffic.segment_bytes"),
    ("broadcast", dict(algorithm="chain", bytes=10 ** 9, segment_bytes=1), "traffic.segment_bytes"),
    ("reduce", dict(compute_cycles=-1), "traffic.compute_cycles"),
    ("barrier", dict(iterations=10 ** 7), "traffic.iterations"),
    ("barrier", dict(bytes=8), "traffic.bytes"),
    ("stencil3d", dict(dims=[1, 1, 1]), "traffic.dims"),
    ("stencil3d", dict(dims=[10, 10, 10]), "traffic.dims"),
    ("stencil3d", dict(halo_bytes=-1), "traffic.halo_bytes"),
    ("training", dict(algorithm="posted"), "traffic.algorithm"),
])
def test_bad_parameters_name_their_key(pattern, params, key):
    """A bad parameter is refused before anything is built, naming traffic.<parameter>."""
    with pytest.raises(ParameterError, match=rf"^{key.replace('.', '[.]')}: "):
        plan(pattern, **params)


def test_bad_parameter_is_one_line_from_the_cli(run_pdes):
    """`pdes run` with a refused collective parameter prints one error line and exits 2."""
    r = run_pdes("run", "--set", "topology.q=5", "--set", "traffic.pattern=allgather", "--set",
                 "traffic.algorithm=recursive_doubling", "--set", "traffic.procs=12")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "pdes: error: traffic.algorithm: recursive_doubling allgather needs a power-of-two number "
        "of processes, got 12 (use ring)"]


# --------------------------------------------------------------------------- application skeletons
def test_stencil3d_structure_and_data():
    """stencil3d: compute, then 6 halo sends and receives with the torus neighbours after it,
    then an allreduce after all of them whose result reaches every process."""
    n = 12
    X, Y, Z = torus_dims(n)
    s = plan("stencil3d", procs=n, compute_cycles=77, halo_bytes=64, allreduce_bytes=24).ops
    for p in range(n):
        ops = np.arange(s.op_off[p], s.op_off[p + 1])
        assert s.op_kind[ops[0]] == OP_COMPUTE and s.op_size[ops[0]] == 77
        halo = ops[(s.op_tag[ops] >= 1)]
        assert halo.size == 12 and np.all(s.op_size[halo] == 64)
        for o in halo:
            assert list(s.dep[s.dep_off[o]:s.dep_off[o + 1]]) == [ops[0]]
        x, y, z = p % X, (p // X) % Y, p // (X * Y)
        nb = {((x + dx) % X) + X * (((y + dy) % Y) + Y * ((z + dz) % Z))
              for dx, dy, dz in ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1))}
        assert set(s.op_peer[halo].tolist()) == nb
        deps = {o: set(s.dep[s.dep_off[o]:s.dep_off[o + 1]].tolist()) for o in ops}
        first_ar = [o for o in ops if s.op_tag[o] == 0 and deps[o] & set(halo.tolist())]
        assert first_ar and all(deps[o] == set(halo.tolist()) for o in first_ar)
    # the allreduce delivers (halo sends carry no chunk and are not replayed)
    done = replay(s, lambda p: [1 << p], reduce=True)
    assert all(m == [ALL(n)] for m in final(s, done))


def test_stencil3d_side_of_one_has_no_neighbour():
    """A torus side of 1 has no halo in that direction: dims 1x2x3 gives 4 halo messages each way."""
    s = plan("stencil3d", procs=6, dims=[1, 2, 3], compute_cycles=0).ops
    halo = (s.op_tag >= 1) & (s.op_kind == OP_SEND)
    assert np.all(np.bincount(s.op_proc()[halo], minlength=6) == 4)
    assert not (s.op_kind == OP_COMPUTE).any()


def test_training_iterations():
    """training: per iteration a compute then a ring allreduce of the gradient; the next
    iteration's compute follows the allreduce's last op; data reaches everyone."""
    n = 6
    s = plan("training", procs=n, compute_cycles=500, gradient_bytes=600, iterations=2).ops
    assert s.n_ops == 2 * (n + 4 * n * (n - 1))
    comp = np.nonzero(s.op_kind == OP_COMPUTE)[0]
    assert comp.size == 2 * n and np.all(s.op_size[comp] == 500)
    second = comp[1::2]
    assert np.all(s.op_kind[s.dep[s.dep_off[second]]] == OP_RECV)
    assert all(m == [ALL(n)] * n for m in final(s, replay(s, lambda p: [1 << p] * n)))


def test_matching_is_exact_with_more_than_65536_processes():
    """Messages match within their channel (sender, receiver, tag) at any process count: the
    channel was packed into one int64 that wrapped from 2^16 processes on, so the send 0 -> 22709
    matched the receive at 5 from 61357 (their packed keys differed by 2^64)."""
    from models.schedule import OP_RECV, OP_SEND, make_schedule, match_messages
    P = 70000
    ops = sorted([(0, OP_SEND, 22709), (22709, OP_RECV, 0), (61357, OP_SEND, 5),
                  (5, OP_RECV, 61357)])
    procs = np.array([o[0] for o in ops])
    off = np.r_[0, np.cumsum(np.bincount(procs, minlength=P))]
    s = make_schedule(np.arange(P), off, [o[1] for o in ops], [o[2] for o in ops],
                      np.full(4, 8), np.zeros(4, np.int64), [], [], [])
    m = match_messages(s)
    # ops by process: 0 send, 5 recv, 22709 recv, 61357 send
    assert m.tolist() == [2, 3, 0, 1]
