"""Message schedules: what each process of an application does, as compact arrays.

A schedule gives every process (an MPI rank of the application, placed on one
endpoint) a list of operations, in the spirit of LogGOPSim's GOAL (Hoefler,
Schneider, Lumsdaine, "LogGOPSim -- Simulating Large-Scale Applications in the
LogGOPS Model", HPDC 2010, and "Group Operation Assembly Language", 2009):

* ``send`` (``OP_SEND``): ``size`` bytes to process ``peer`` with ``tag``;
* ``recv`` (``OP_RECV``): a message from process ``peer`` with ``tag``;
* ``compute`` (``OP_COMPUTE``): ``size`` cycles of local work.

An operation may depend on other operations of its own process: on their
completion (``DEP_DONE``, GOAL's ``requires``) or only on their start
(``DEP_START``, GOAL's ``irequires``).  An operation starts (is *posted*) in
the cycle its last dependency is met; operations whose dependencies are met
run at the same time, as nonblocking MPI calls do (two computes of one
process overlap unless one depends on the other).

Matching is static, as MPI's non-overtaking rule makes it: the k-th send
from ``p`` to ``q`` with tag ``t`` (in ``p``'s operation order) is received
by the k-th receive of ``q`` from ``p`` with tag ``t`` (in ``q``'s order).
Every send must have its receive and the other way round, and
:func:`check` proves before the run that the schedule can complete: a
dependency cycle, a receive that is never matched, or a receive whose send
can never start is reported with the process and operation named.

Arrays (ops are numbered process by process, in each process's order):

* ``proc_ep``  (P,)   endpoint of each process (distinct);
* ``op_off``   (P+1,) CSR offsets of each process's operations;
* ``op_kind``  (N,)   int8 ``OP_*``;
* ``op_peer``  (N,)   int32 the other process (send: destination, recv: source; compute: -1);
* ``op_size``  (N,)   int64 bytes (send, recv) or cycles (compute);
* ``op_tag``   (N,)   int32;
* ``dep_off``  (N+1,) CSR offsets of each operation's dependencies;
* ``dep``      (D,)   int64 the operation depended on (same process);
* ``dep_kind`` (D,)   int8 ``DEP_DONE`` or ``DEP_START``.

:class:`ScheduleBuilder` appends operations a round at a time (arrays, no
Python object per operation) and numbers them at the end; trace readers and
collective generators (:mod:`models.traffic.collectives` and the like) use it.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from models.core.errors import ParameterError
from models.core.jit import njit

OP_SEND, OP_RECV, OP_COMPUTE = 0, 1, 2
OP_NAMES = ("send", "recv", "compute")
DEP_DONE, DEP_START = 0, 1

MAX_CYCLES = 2**31 - 2
"""Largest compute time and completion cycle the engine keeps (int32 cycles)."""


@dataclass(frozen=True)
class Schedule:
    """A workload's operations per process (see the module docstring for the arrays)."""

    proc_ep: np.ndarray
    op_off: np.ndarray
    op_kind: np.ndarray
    op_peer: np.ndarray
    op_size: np.ndarray
    op_tag: np.ndarray
    dep_off: np.ndarray
    dep: np.ndarray
    dep_kind: np.ndarray
    description: str = ""
    chunk: np.ndarray | None = field(default=None, compare=False)
    """Optional (N, 2) int64: the data chunks ``[lo, hi)`` a send carries (a generator's
    statement of what its messages hold, which tests replay to check that every process
    ends with the data it should; -1 where it does not apply)."""
    match: np.ndarray | None = field(default=None, compare=False)
    """(N,) int64: the operation at the other end of each send/recv (-1 for compute);
    filled by :func:`check`."""

    @property
    def n_procs(self) -> int:
        return int(self.proc_ep.size)

    @property
    def n_ops(self) -> int:
        return int(self.op_kind.size)

    def op_proc(self) -> np.ndarray:
        """(N,) int64: the process of each operation."""
        return np.repeat(np.arange(self.n_procs, dtype=np.int64), np.diff(self.op_off))

    def name(self, op: int) -> str:
        """``process p op k (kind ...)`` for messages: ``k`` counts from 0 within the process."""
        p = int(np.searchsorted(self.op_off, op, side="right") - 1)
        k = int(op - self.op_off[p])
        kind = int(self.op_kind[op])
        what = OP_NAMES[kind] if 0 <= kind < 3 else f"kind {kind}"
        if kind == OP_SEND:
            what += f" {int(self.op_size[op])} B to {int(self.op_peer[op])} tag {int(self.op_tag[op])}"
        elif kind == OP_RECV:
            what += f" {int(self.op_size[op])} B from {int(self.op_peer[op])} tag {int(self.op_tag[op])}"
        elif kind == OP_COMPUTE:
            what += f" {int(self.op_size[op])} cycles"
        return f"process {p} op {k} ({what})"


class ScheduleBuilder:
    """Collects operations round by round and numbers them process by process.

    ``add`` takes arrays (or scalars, broadcast) of equal length and returns the
    ids of the new operations (an int64 array); ``after`` lists arrays of ids they
    depend on (-1: no dependency in that entry).  Ids are final: ``build`` keeps each
    process's operations in the order they were added and numbers them
    process by process, and the ids ``add`` returned are translated.
    """

    def __init__(self, n_procs: int):
        if n_procs < 1:
            raise ParameterError("traffic.procs: a schedule needs at least one process")
        self.n_procs = int(n_procs)
        self._ops = []      # (proc, kind, peer, size, tag) arrays
        self._deps = []     # (op, dep, kind) arrays
        self._n = 0
        self._chunked = False

    def add(self, proc, kind, peer=-1, size=0, tag=0, after=(), start_after=(), chunk=None):
        """Append operations; ``chunk = (lo, hi)``: the data chunks each send carries
        (:attr:`Schedule.chunk`)."""
        proc = np.atleast_1d(np.asarray(proc, dtype=np.int64))
        n = proc.size
        ids = np.arange(self._n, self._n + n, dtype=np.int64)
        lo, hi = (-1, -1) if chunk is None else chunk
        if chunk is not None:
            self._chunked = True
        self._ops.append(tuple(np.broadcast_to(np.asarray(a, dtype=np.int64), (n,)).copy()
                               for a in (proc, kind, peer, size, tag, lo, hi)))
        for dk, lst in ((DEP_DONE, after), (DEP_START, start_after)):
            for d in lst:
                d = np.broadcast_to(np.asarray(d, dtype=np.int64), (n,))
                keep = d >= 0
                if keep.any():
                    self._deps.append((ids[keep], d[keep].copy(), np.full(int(keep.sum()), dk)))
        self._n += n
        return ids

    def send(self, proc, peer, size, tag=0, after=(), start_after=(), chunk=None):
        return self.add(proc, OP_SEND, peer, size, tag, after, start_after, chunk)

    def recv(self, proc, peer, size, tag=0, after=(), start_after=()):
        return self.add(proc, OP_RECV, peer, size, tag, after, start_after)

    def compute(self, proc, cycles, after=(), start_after=()):
        return self.add(proc, OP_COMPUTE, -1, cycles, 0, after, start_after)

    def build(self, proc_ep, description: str = "") -> Schedule:
        """The schedule, processes on the endpoints ``proc_ep`` (one per process)."""
        P = self.n_procs
        proc_ep = np.asarray(proc_ep, dtype=np.int64)
        if proc_ep.size != P:
            raise ValueError(f"{proc_ep.size} endpoints for {P} processes")
        cols = [np.concatenate([c[i] for c in self._ops]) if self._ops else np.zeros(0, np.int64)
                for i in range(7)]
        proc, kind, peer, size, tag, clo, chi = cols
        if proc.size and (proc.min() < 0 or proc.max() >= P):
            raise ValueError("an operation of a process outside the schedule")
        order = np.argsort(proc, kind="stable")
        new_id = np.empty(order.size, dtype=np.int64)
        new_id[order] = np.arange(order.size)
        off = np.zeros(P + 1, dtype=np.int64)
        np.cumsum(np.bincount(proc, minlength=P), out=off[1:])
        if self._deps:
            op = np.concatenate([d[0] for d in self._deps])
            on = np.concatenate([d[1] for d in self._deps])
            dk = np.concatenate([d[2] for d in self._deps])
            if on.max() >= self._n:
                raise ValueError("a dependency on an operation not added yet")
            op, on = new_id[op], new_id[on]
        else:
            op = on = dk = np.zeros(0, np.int64)
        s = make_schedule(proc_ep, off, kind[order], peer[order], size[order], tag[order],
                          op, on, dk, description)
        if self._chunked:
            s = replace(s, chunk=np.stack([clo[order], chi[order]], axis=1))
        return s


def make_schedule(proc_ep, op_off, kind, peer, size, tag, dep_op, dep_on, dep_kind,
                  description="") -> Schedule:
    """A :class:`Schedule` from per-operation columns and (op, depends-on, kind) triples."""
    N = int(np.asarray(kind).size)
    dep_op = np.asarray(dep_op, dtype=np.int64)
    order = np.lexsort((np.asarray(dep_on, dtype=np.int64), dep_op))
    dep_off = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(np.bincount(dep_op, minlength=N)[:N], out=dep_off[1:])
    return Schedule(
        proc_ep=np.asarray(proc_ep, dtype=np.int64), op_off=np.asarray(op_off, dtype=np.int64),
        op_kind=np.asarray(kind, dtype=np.int8), op_peer=np.asarray(peer, dtype=np.int32),
        op_size=np.asarray(size, dtype=np.int64), op_tag=np.asarray(tag, dtype=np.int32),
        dep_off=dep_off, dep=np.asarray(dep_on, dtype=np.int64)[order],
        dep_kind=np.asarray(dep_kind, dtype=np.int8)[order], description=description)


# --------------------------------------------------------------------------- checks
def _fail(key, s: Schedule, op, rule):
    raise ParameterError(f"{key}: {s.name(int(op))}: {rule}")


def match_messages(s: Schedule, key: str = "traffic") -> np.ndarray:
    """(N,) int64: the matching operation of every send and receive (-1 for compute).

    The k-th send p -> q with tag t matches the k-th receive at q from p with tag t."""
    N = s.n_ops
    proc = s.op_proc()
    kind = s.op_kind.astype(np.int64)
    ids = np.arange(N, dtype=np.int64)
    out = np.full(N, -1, dtype=np.int64)
    snd = ids[kind == OP_SEND]
    rcv = ids[kind == OP_RECV]
    # channel (sender * P + receiver, tag), then order within the channel; the pair is not
    # packed into one int64 (with P >= 2^16 processes a packed key wrapped and matched
    # messages of different channels)
    P = np.int64(s.n_procs)
    tag = s.op_tag.astype(np.int64)
    ks, ts = proc[snd] * P + s.op_peer[snd], tag[snd]
    kr, tr = s.op_peer[rcv].astype(np.int64) * P + proc[rcv], tag[rcv]
    os_ = np.lexsort((snd, ts, ks))
    or_ = np.lexsort((rcv, tr, kr))
    ks, ts, snd = ks[os_], ts[os_], snd[os_]
    kr, tr, rcv = kr[or_], tr[or_], rcv[or_]
    # rank of each op within its channel
    def _rank(k, t):
        if k.size == 0:
            return k
        first = np.r_[True, (k[1:] != k[:-1]) | (t[1:] != t[:-1])]
        start = np.maximum.accumulate(np.where(first, np.arange(k.size), 0))
        return np.arange(k.size) - start
    if ks.size == kr.size and np.array_equal(ks, kr) and np.array_equal(ts, tr):
        out[snd] = rcv          # every channel has as many receives as sends: in order
        out[rcv] = snd
        return out
    rs, rr = _rank(ks, ts), _rank(kr, tr)
    # pair (channel, rank) between the sorted lists
    fields = [("k", np.int64), ("t", np.int64), ("r", np.int64)]
    vs = np.stack([ks, ts, rs], 1).view(fields).ravel() if ks.size else np.zeros(0, fields)
    vr = np.stack([kr, tr, rr], 1).view(fields).ravel() if kr.size else np.zeros(0, fields)
    pos = np.searchsorted(vr, vs)
    ok = (pos < vr.size)
    ok[ok] = vr[pos[ok]] == vs[ok]
    if not ok.all():
        _fail(key, s, snd[np.argmin(ok)] if (~ok).any() else snd[0],
              "no receive matches this send (receives match sends in order, by source and tag)")
    out[snd] = rcv[pos]
    out[rcv[pos]] = snd
    if kr.size != ks.size:
        lost = rcv[out[rcv] < 0]
        _fail(key, s, lost.min(), "no send matches this receive (it would wait forever)")
    return out


@njit
def _kahn(N, succ_off, succ, via_done, indeg, comp):
    """Kahn's order over the operations: ``(reached, late)``, the count of operations reached
    and the first one (in that order) that cannot end by ``MAX_CYCLES`` even without any
    network time (-1 if none): its post is at least the end (``via_done``) or the post of what
    it waits for, its end its post plus its compute cycles."""
    post = np.zeros(N, np.int64)
    stack = np.empty(N, np.int64)
    n = 0
    for i in range(N):
        if indeg[i] == 0:
            stack[n] = i
            n += 1
    done = 0
    late = -1
    while n > 0:
        n -= 1
        v = stack[n]
        done += 1
        end = post[v] + comp[v]
        if end > MAX_CYCLES and late < 0:
            late = v
        for j in range(succ_off[v], succ_off[v + 1]):
            w = succ[j]
            t = end if via_done[j] else post[v]
            if t > post[w]:
                post[w] = t
            indeg[w] -= 1
            if indeg[w] == 0:
                stack[n] = w
                n += 1
    return done, late


def check(s: Schedule, key: str = "traffic", n_endpoints: int | None = None) -> Schedule:
    """Validate ``s`` and return it with its matches; a ``ParameterError`` naming the
    process and operation otherwise (before anything is simulated)."""
    P, N = s.n_procs, s.n_ops
    if s.op_off.shape != (P + 1,) or s.op_off[0] != 0 or s.op_off[-1] != N \
            or (np.diff(s.op_off) < 0).any():
        raise ParameterError(f"{key}: the schedule's operation offsets are not a partition of its operations")
    for name in ("op_peer", "op_size", "op_tag"):
        if getattr(s, name).shape != (N,):
            raise ParameterError(f"{key}: the schedule's {name} has the wrong length")
    if np.unique(s.proc_ep).size != P:
        raise ParameterError(f"{key}: two processes are placed on one endpoint")
    if n_endpoints is not None and P and (s.proc_ep.min() < 0 or s.proc_ep.max() >= n_endpoints):
        raise ParameterError(f"{key}: a process is placed outside endpoints 0..{n_endpoints - 1}")
    bad = np.nonzero((s.op_kind < 0) | (s.op_kind > 2))[0]
    if bad.size:
        _fail(key, s, bad[0], "unknown operation kind")
    proc = s.op_proc()
    msg = s.op_kind != OP_COMPUTE
    bad = np.nonzero(msg & ((s.op_peer < 0) | (s.op_peer >= P)))[0]
    if bad.size:
        _fail(key, s, bad[0], f"peer is not a process 0..{P - 1}")
    bad = np.nonzero(msg & (s.op_peer == proc))[0]
    if bad.size:
        _fail(key, s, bad[0], "a process cannot send to or receive from itself")
    bad = np.nonzero((s.op_size < 0) | (s.op_size > MAX_CYCLES) & ~msg)[0]
    if bad.size:
        _fail(key, s, bad[0], f"size must be in [0, {MAX_CYCLES}]")
    bad = np.nonzero(s.op_size > 2**50)[0]
    if bad.size:
        _fail(key, s, bad[0], "message larger than 2^50 bytes")
    D = s.dep.size
    if s.dep_off.shape != (N + 1,) or s.dep_off[-1] != D or s.dep_kind.shape != (D,):
        raise ParameterError(f"{key}: the schedule's dependency offsets are malformed")
    dop = np.repeat(np.arange(N, dtype=np.int64), np.diff(s.dep_off))
    bad = np.nonzero((s.dep < 0) | (s.dep >= N))[0]
    if bad.size:
        _fail(key, s, dop[bad[0]], "depends on an operation that does not exist")
    bad = np.nonzero(proc[s.dep] != proc[dop])[0]
    if bad.size:
        _fail(key, s, dop[bad[0]], "depends on an operation of another process")
    bad = np.nonzero(s.dep == dop)[0]
    if bad.size:
        _fail(key, s, dop[bad[0]], "depends on itself")
    m = match_messages(s, key)
    # completability: edges dependency -> op and send -> its receive
    snd = np.nonzero(s.op_kind == OP_SEND)[0]
    src = np.concatenate([s.dep, snd])
    dst = np.concatenate([dop, m[snd]])
    order = np.argsort(src, kind="stable")
    succ_off = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=N)[:N], out=succ_off[1:])
    indeg = np.bincount(dst, minlength=N).astype(np.int64)
    via_done = np.concatenate([s.dep_kind == DEP_DONE, np.zeros(snd.size, dtype=bool)])
    comp = np.where(s.op_kind == OP_COMPUTE, s.op_size, 0)
    reached, late = _kahn(N, succ_off, dst[order], via_done[order], indeg.copy(), comp)
    if reached < N:
        _report_stuck(key, s, m, succ_off, dst[order], indeg)
    # the engine keeps cycles in int32: refuse a schedule whose computes alone, along a chain
    # of dependencies, end beyond MAX_CYCLES (a chain of two long computes used to wrap)
    if late >= 0:
        _fail(key, s, late, f"ends after cycle {MAX_CYCLES} at the earliest (its computes and "
              "those it waits for take longer than the engine keeps cycles)")
    return replace(s, match=m)


def _report_stuck(key, s, m, succ_off, succ, indeg):
    """Name an operation that can never start: on a dependency cycle within a process, or
    waiting (through receives) on one."""
    N = s.n_ops
    deg = indeg.copy()
    reached = np.zeros(N, dtype=bool)
    stack = list(np.nonzero(deg == 0)[0])
    while stack:
        v = stack.pop()
        reached[v] = True
        for w in succ[succ_off[v]:succ_off[v + 1]]:
            deg[w] -= 1
            if deg[w] == 0:
                stack.append(w)
    stuck = np.nonzero(~reached)[0]
    # walk back along unmet dependencies from the first stuck op until an op repeats (each
    # step reads the op's own dependencies: a scan of all of them per step was quadratic)
    seen = {}
    v = int(stuck[0])
    path = []
    while v not in seen:
        seen[v] = len(path)
        path.append(v)
        preds = list(s.dep[s.dep_off[v]:s.dep_off[v + 1]])
        if s.op_kind[v] == OP_RECV:
            preds.append(m[v])
        preds = [int(p) for p in preds if not reached[p]]
        v = preds[0]
    cycle = path[seen[v]:]
    procs = {int(np.searchsorted(s.op_off, c, side="right") - 1) for c in cycle}
    first = min(cycle)
    if len(procs) == 1:
        _fail(key, s, first, "is on a dependency cycle (it can never start)")
    _fail(key, s, first, f"can never complete: it waits, through messages, on itself "
          f"(a cycle over processes {', '.join(str(p) for p in sorted(procs))})")


# --------------------------------------------------------------------------- engine tables
def packets(size_bytes, flit_bytes: int, packet_size: int) -> np.ndarray:
    """Packets of a message of ``size_bytes``: ceil(bytes / (flit_bytes * packet_size)),
    at least one (a zero-byte message still sends a packet, as MPI's envelope does)."""
    b = np.asarray(size_bytes, dtype=np.int64)
    per = np.int64(flit_bytes) * np.int64(packet_size)
    return np.maximum(1, (b + per - 1) // per)
