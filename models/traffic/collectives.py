"""MPI collectives as schedules: the algorithms of MPICH (Thakur, Rabenseifner, Gropp 2005).

Each generator appends one instance of a collective to a
:class:`~models.schedule.ScheduleBuilder` over the processes ``procs``
(participant ``i`` is process ``procs[i]``; ranks and roots below count
participants) and returns, per participant, the id of its *last* operation: an
operation that depends (directly or through other operations of the same
process) on every other operation the participant has in the collective, so
that a following step that depends on it starts after the participant's part of
the collective has completed.  ``after`` gives what the participant's first
operations depend on: ``None``, an array of one operation id per participant
(-1: none) or a sequence of such arrays (all of them).  All messages carry
``tag``.

A two-sided step (MPI_Sendrecv) is a send and a receive; the receive depends on
the send, so that it completes when both have (a message is not held up by a
late receive, so this costs nothing).  Sends that a process makes one after
another (a tree's children, a pipeline's segments) depend each on the previous
one, as MPICH's blocking sends do.  After each receive whose data is reduced,
a compute of ``ceil(bytes * reduce_cycles_per_byte)`` cycles follows, and the
next step depends on it (no compute op when that is 0).

Every send states the data it carries with ``chunk = (lo, hi)``, blocks of the
collective's data (:attr:`models.schedule.Schedule.chunk`): the ``n`` blocks of
a ring (``nbytes`` split as evenly as possible: the first ``nbytes % n`` blocks
one byte longer, as MPICH splits counts), the ``2^floor(log2 n)`` blocks of
Rabenseifner's algorithm, the block of each process (allgather) or of each
destination (all-to-all), the segments of a pipelined chain, and block 0 (the
whole vector) otherwise.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from models.core.errors import ParameterError
from models.core.registry import TRAFFIC, Param
from models.placement import place
from models.schedule import MAX_CYCLES, OP_COMPUTE, ScheduleBuilder, check, make_schedule
from models.traffic import TrafficPlan
from models.traffic.exchanges import COMMON

MAX_OPS = 50_000_000
"""Most operations a generated schedule may hold (about 3 GB while it is built)."""

MAX_BYTES = 2 ** 40
"""Largest ``bytes`` a pattern takes (check() refuses messages above 2^50 bytes)."""


# --------------------------------------------------------------------------- plumbing
def _participants(procs) -> np.ndarray:
    p = np.asarray(procs, dtype=np.int64).ravel()
    if p.size < 2:
        raise ParameterError(f"traffic.procs: a collective needs at least 2 processes, got {p.size}")
    if np.unique(p).size != p.size:
        raise ValueError("a process takes part in a collective twice")
    return p


class _Deps:
    """What each participant's next operation depends on (one or more id arrays, -1: none)."""

    def __init__(self, after, n: int):
        if after is None:
            arrs = []
        else:
            a = np.asarray(after, dtype=np.int64)
            arrs = [a] if a.ndim <= 1 else list(a)
        self.arrs = [np.broadcast_to(x, (n,)).astype(np.int64) for x in arrs] or \
            [np.full(n, -1, dtype=np.int64)]

    def of(self, sel) -> list:
        return [a[sel] for a in self.arrs]

    def set(self, sel, ids) -> None:
        """The participants ``sel`` now depend on ``ids`` only."""
        self.arrs[0][sel] = ids
        for a in self.arrs[1:]:
            a[sel] = -1

    def last(self) -> np.ndarray:
        assert all((a < 0).all() for a in self.arrs[1:]) and (self.arrs[0] >= 0).all()
        return self.arrs[0].copy()


def _reduce_cost(nbytes, rcpb: float) -> np.ndarray:
    cyc = np.ceil(np.asarray(nbytes, dtype=np.float64) * rcpb)
    if cyc.size and cyc.max() > MAX_CYCLES:     # compared as floats: above 2^63 a cast wraps
        raise ParameterError(f"traffic.reduce_cycles_per_byte: reducing {int(np.max(nbytes))} bytes "
                             f"would take {float(cyc.max()):.4g} cycles, more than {MAX_CYCLES}")
    return cyc.astype(np.int64)


def _reduced(b: ScheduleBuilder, who, recv_ids, nbytes, rcpb: float) -> np.ndarray:
    """After the receives ``recv_ids`` of the processes ``who``: the reduction computes; the ops
    the next step depends on (the compute, or the receive where the compute takes 0 cycles)."""
    out = np.asarray(recv_ids, dtype=np.int64).copy()
    if rcpb <= 0:
        return out
    cyc = np.broadcast_to(_reduce_cost(nbytes, rcpb), out.shape)
    has = cyc > 0
    if has.any():
        out[has] = b.compute(np.asarray(who)[has], cyc[has], after=[out[has]])
    return out


def split_bytes(nbytes: int, k: int) -> np.ndarray:
    """(k,) int64: ``nbytes`` in ``k`` blocks, the first ``nbytes % k`` one byte longer (MPICH)."""
    q, r = divmod(int(nbytes), int(k))
    return q + (np.arange(k) < r).astype(np.int64)


def segments(nbytes: int, segment_bytes: int) -> np.ndarray:
    """Sizes of the pipeline segments: ``segment_bytes`` each, the last one shorter (one segment
    of 0 bytes for an empty message)."""
    if segment_bytes < 1:
        raise ParameterError(f"traffic.segment_bytes: must be >= 1, got {segment_bytes}")
    k = max(1, -(-int(nbytes) // int(segment_bytes)))
    out = np.full(k, int(segment_bytes), dtype=np.int64)
    out[-1] = int(nbytes) - (k - 1) * int(segment_bytes)
    return out


def _pof2(n: int) -> int:
    return 1 << (int(n).bit_length() - 1)


def _root(root: int, n: int) -> int:
    if not 0 <= int(root) < n:
        raise ParameterError(f"traffic.root: {root} is not a process 0..{n - 1}")
    return int(root)


# --------------------------------------------------------------------------- allreduce
def allreduce_ring(b, procs, nbytes, after=None, tag=0, reduce_cycles_per_byte=0.0):
    """Ring allreduce: a reduce-scatter ring then an allgather ring, n-1 steps each.

    In reduce-scatter step s participant i sends block (i-s) mod n to i+1 and receives
    and reduces block (i-s-1) mod n from i-1; after n-1 steps it holds block (i+1) mod n
    reduced over all; in allgather step s it sends block (i+1-s) mod n and receives block
    (i-s) mod n.  2(n-1) sends per participant of about nbytes/n bytes each.
    """
    procs = _participants(procs)
    n = procs.size
    cnt = split_bytes(nbytes, n)
    i = np.arange(n)
    right, left = procs[(i + 1) % n], procs[(i - 1) % n]
    d = _Deps(after, n)
    for s in range(n - 1):
        cs, cr = (i - s) % n, (i - s - 1) % n
        snd = b.send(procs, right, cnt[cs], tag, after=d.of(slice(None)), chunk=(cs, cs + 1))
        rcv = b.recv(procs, left, cnt[cr], tag, after=[snd])
        d.set(slice(None), _reduced(b, procs, rcv, cnt[cr], reduce_cycles_per_byte))
    for s in range(n - 1):
        cs, cr = (i + 1 - s) % n, (i - s) % n
        snd = b.send(procs, right, cnt[cs], tag, after=d.of(slice(None)), chunk=(cs, cs + 1))
        d.set(slice(None), b.recv(procs, left, cnt[cr], tag, after=[snd]))
    return d.last()


def _fold_in(b, procs, d, nbytes, nblocks, tag, rcpb):
    """Non-power-of-two step (MPICH): of the first 2r participants (r = n - 2^floor(log2 n)) the
    even ones send their vector to the odd ones and sit out; returns (new rank per participant,
    -1 for those sitting out; the send ids of the even ones)."""
    n = procs.size
    pof2 = _pof2(n)
    rem = n - pof2
    i = np.arange(n)
    even = (i < 2 * rem) & (i % 2 == 0)
    odd = (i < 2 * rem) & (i % 2 == 1)
    if rem:
        s0 = b.send(procs[even], procs[i[even] + 1], nbytes, tag, after=d.of(even), chunk=(0, nblocks))
        d.set(even, s0)
        r0 = b.recv(procs[odd], procs[i[odd] - 1], nbytes, tag, after=d.of(odd))
        d.set(odd, _reduced(b, procs[odd], r0, nbytes, rcpb))
    newrank = np.where(i < 2 * rem, np.where(odd, i // 2, -1), i - rem)
    return newrank, even, odd


def _fold_out(b, procs, d, nbytes, nblocks, tag, even, odd):
    """The result back from each odd participant of the first 2r to the even one before it."""
    if not even.any():
        return
    i = np.arange(procs.size)
    s1 = b.send(procs[odd], procs[i[odd] - 1], nbytes, tag, after=d.of(odd), chunk=(0, nblocks))
    d.set(odd, s1)
    d.set(even, b.recv(procs[even], procs[i[even] + 1], nbytes, tag, after=d.of(even)))


def _real(nd, rem):
    """Participant index of new rank ``nd`` (MPICH's non-power-of-two renumbering)."""
    return np.where(nd < rem, nd * 2 + 1, nd + rem)


def allreduce_recursive_doubling(b, procs, nbytes, after=None, tag=0, reduce_cycles_per_byte=0.0):
    """Recursive-doubling allreduce: log2(2^k) steps of exchanging and reducing the whole vector
    with the partner at distance 1, 2, 4, ... (new ranks), with MPICH's non-power-of-two step
    before and after (the first 2r participants pair up; r = n - 2^floor(log2 n))."""
    procs = _participants(procs)
    n = procs.size
    pof2, rem = _pof2(n), n - _pof2(n)
    d = _Deps(after, n)
    newrank, even, odd = _fold_in(b, procs, d, nbytes, 1, tag, reduce_cycles_per_byte)
    act = newrank >= 0
    nr = newrank[act]
    mask = 1
    while mask < pof2:
        dst = procs[_real(nr ^ mask, rem)]
        snd = b.send(procs[act], dst, nbytes, tag, after=d.of(act), chunk=(0, 1))
        rcv = b.recv(procs[act], dst, nbytes, tag, after=[snd])
        d.set(act, _reduced(b, procs[act], rcv, nbytes, reduce_cycles_per_byte))
        mask <<= 1
    _fold_out(b, procs, d, nbytes, 1, tag, even, odd)
    return d.last()


def allreduce_rabenseifner(b, procs, nbytes, after=None, tag=0, reduce_cycles_per_byte=0.0):
    """Rabenseifner's allreduce: a reduce-scatter by recursive halving then an allgather by
    recursive doubling over 2^k = 2^floor(log2 n) blocks, with the same non-power-of-two step
    as recursive doubling.  At halving step m = 1, 2, ... a participant keeps the half of its
    current block range on its side of the partner (new rank xor m) and sends the other half;
    the allgather retraces the steps in reverse and doubles the range each time."""
    procs = _participants(procs)
    n = procs.size
    pof2, rem = _pof2(n), n - _pof2(n)
    cnt = split_bytes(nbytes, pof2)
    cum = np.r_[0, np.cumsum(cnt)]
    d = _Deps(after, n)
    newrank, even, odd = _fold_in(b, procs, d, nbytes, pof2, tag, reduce_cycles_per_byte)
    act = newrank >= 0
    nr = newrank[act]
    lo = np.zeros(nr.size, dtype=np.int64)            # kept block range [lo, lo + size)
    size = pof2
    mask = 1
    while mask < pof2:                                # reduce-scatter (recursive halving)
        half = size // 2
        low = nr < (nr ^ mask)
        keep = np.where(low, lo, lo + half)
        give = np.where(low, lo + half, lo)
        dst = procs[_real(nr ^ mask, rem)]
        snd = b.send(procs[act], dst, cum[give + half] - cum[give], tag, after=d.of(act),
                     chunk=(give, give + half))
        rcv = b.recv(procs[act], dst, cum[keep + half] - cum[keep], tag, after=[snd])
        d.set(act, _reduced(b, procs[act], rcv, cum[keep + half] - cum[keep], reduce_cycles_per_byte))
        lo, size = keep, half
        mask <<= 1
    mask >>= 1
    while mask > 0:                                   # allgather (recursive doubling)
        low = nr < (nr ^ mask)
        other = np.where(low, lo + size, lo - size)
        dst = procs[_real(nr ^ mask, rem)]
        snd = b.send(procs[act], dst, cum[lo + size] - cum[lo], tag, after=d.of(act),
                     chunk=(lo, lo + size))
        d.set(act, b.recv(procs[act], dst, cum[other + size] - cum[other], tag, after=[snd]))
        lo, size = np.minimum(lo, other), 2 * size
        mask >>= 1
    _fold_out(b, procs, d, nbytes, pof2, tag, even, odd)
    return d.last()


# --------------------------------------------------------------------------- allgather
def allgather_ring(b, procs, nbytes, after=None, tag=0):
    """Ring allgather (``nbytes`` per participant): in step s = 0..n-2 participant i sends
    block (i-s) mod n to i+1 and receives block (i-s-1) mod n from i-1."""
    procs = _participants(procs)
    n = procs.size
    i = np.arange(n)
    right, left = procs[(i + 1) % n], procs[(i - 1) % n]
    d = _Deps(after, n)
    for s in range(n - 1):
        cs = (i - s) % n
        snd = b.send(procs, right, nbytes, tag, after=d.of(slice(None)), chunk=(cs, cs + 1))
        d.set(slice(None), b.recv(procs, left, nbytes, tag, after=[snd]))
    return d.last()


def allgather_recursive_doubling(b, procs, nbytes, after=None, tag=0):
    """Recursive-doubling allgather (``nbytes`` per participant, n a power of two): at step
    m = 1, 2, ..., n/2 participant i exchanges the m blocks it holds (its aligned group of m)
    with participant i xor m.  MPICH's variant for other n is not implemented: refused."""
    procs = _participants(procs)
    n = procs.size
    if n & (n - 1):
        raise ParameterError(f"traffic.algorithm: recursive_doubling allgather needs a power-of-two "
                             f"number of processes, got {n} (use ring)")
    i = np.arange(n)
    d = _Deps(after, n)
    mask = 1
    while mask < n:
        lo = (i // mask) * mask
        dst = procs[i ^ mask]
        snd = b.send(procs, dst, mask * int(nbytes), tag, after=d.of(slice(None)), chunk=(lo, lo + mask))
        d.set(slice(None), b.recv(procs, dst, mask * int(nbytes), tag, after=[snd]))
        mask <<= 1
    return d.last()


# --------------------------------------------------------------------------- broadcast, reduce
def bcast_binomial(b, procs, nbytes, root=0, after=None, tag=0):
    """Binomial-tree broadcast (MPICH): relative rank r = (i - root) mod n receives from
    r with its lowest set bit cleared, then sends to r + m for m = 2^k below its lowest set
    bit (below n for the root), largest m first."""
    procs = _participants(procs)
    n = procs.size
    root = _root(root, n)
    rel = (np.arange(n) - root) % n
    d = _Deps(after, n)
    nonroot = rel > 0
    parent = (rel[nonroot] & (rel[nonroot] - 1)) + root
    d.set(nonroot, b.recv(procs[nonroot], procs[parent % n], nbytes, tag, after=d.of(nonroot)))
    mask = _pof2(n - 1) if n > 1 else 0
    while mask > 0:
        sel = (rel % (2 * mask) == 0) & (rel + mask < n)
        dst = procs[(rel[sel] + mask + root) % n]
        d.set(sel, b.send(procs[sel], dst, nbytes, tag, after=d.of(sel), chunk=(0, 1)))
        mask >>= 1
    return d.last()


def reduce_binomial(b, procs, nbytes, root=0, after=None, tag=0, reduce_cycles_per_byte=0.0):
    """Binomial-tree reduce (MPICH, commutative operation): for m = 1, 2, 4, ... relative rank
    r receives and reduces the vector of r + m while r mod 2m = 0, and sends its partial
    result to r - m when r mod 2m = m."""
    procs = _participants(procs)
    n = procs.size
    root = _root(root, n)
    rel = (np.arange(n) - root) % n
    d = _Deps(after, n)
    mask = 1
    while mask < n:
        rs = (rel % (2 * mask) == 0) & (rel + mask < n)
        rcv = b.recv(procs[rs], procs[(rel[rs] + mask + root) % n], nbytes, tag, after=d.of(rs))
        d.set(rs, _reduced(b, procs[rs], rcv, nbytes, reduce_cycles_per_byte))
        ss = rel % (2 * mask) == mask
        d.set(ss, b.send(procs[ss], procs[(rel[ss] - mask + root) % n], nbytes, tag, after=d.of(ss),
                         chunk=(0, 1)))
        mask <<= 1
    return d.last()


def bcast_chain(b, procs, nbytes, root=0, segment_bytes=8192, after=None, tag=0):
    """Pipelined chain broadcast: relative rank r receives each segment from r-1 and forwards
    it to r+1 as soon as it has arrived (segment k after segment k-1 has been sent)."""
    procs = _participants(procs)
    n = procs.size
    root = _root(root, n)
    seg = segments(nbytes, segment_bytes)
    order = (np.arange(n) + root) % n                 # participant of relative rank r
    d = _Deps(after, n)
    first = d.of(slice(None))
    rcv_of = order[1:]                                # relative ranks 1..n-1 receive from r-1
    snd_of = order[:-1]                               # relative ranks 0..n-2 send to r+1
    last_r = np.full(n - 1, -1, dtype=np.int64)       # per receiver
    last_s = np.full(n - 1, -1, dtype=np.int64)       # per sender
    for k, size in enumerate(seg):
        deps = [last_r] if k else [a[rcv_of] for a in first]
        last_r = b.recv(procs[rcv_of], procs[snd_of], size, tag, after=deps)
        got = np.r_[-1, last_r[:-1]]                  # the sender's receive of this segment
        deps = [got, last_s] if k else [got] + [a[snd_of] for a in first]
        last_s = b.send(procs[snd_of], procs[rcv_of], size, tag, after=deps, chunk=(k, k + 1))
    out = np.empty(n, dtype=np.int64)
    out[snd_of] = last_s
    out[order[-1]] = last_r[-1]
    return out


def reduce_chain(b, procs, nbytes, root=0, segment_bytes=8192, after=None, tag=0,
                 reduce_cycles_per_byte=0.0):
    """Pipelined chain reduce toward the root: relative rank r receives each segment's partial
    result from r+1, reduces it and forwards it to r-1 (r = n-1 starts the chain)."""
    procs = _participants(procs)
    n = procs.size
    root = _root(root, n)
    seg = segments(nbytes, segment_bytes)
    order = (np.arange(n) + root) % n
    d = _Deps(after, n)
    first = d.of(slice(None))
    rcv_of = order[:-1]                               # relative ranks 0..n-2 receive from r+1
    snd_of = order[1:]                                # relative ranks 1..n-1 send to r-1
    last_r = np.full(n - 1, -1, dtype=np.int64)
    last_c = np.full(n - 1, -1, dtype=np.int64)       # last reduction compute (-1: none yet)
    last_s = np.full(n - 1, -1, dtype=np.int64)
    for k, size in enumerate(seg):
        deps = [last_r, last_c] if k else [a[rcv_of] for a in first]
        rcv = b.recv(procs[rcv_of], procs[snd_of], size, tag, after=deps)
        red = _reduced(b, procs[rcv_of], rcv, size, reduce_cycles_per_byte)
        last_c = np.where(red != rcv, red, last_c)
        last_r = rcv
        got = np.r_[red[1:], -1]                      # the sender's reduced segment (none at r = n-1)
        deps = [got, last_s] if k else [got] + [a[snd_of] for a in first]
        last_s = b.send(procs[snd_of], procs[rcv_of], size, tag, after=deps, chunk=(k, k + 1))
    out = np.empty(n, dtype=np.int64)
    out[snd_of] = last_s
    out[root] = red[0]
    return out


# --------------------------------------------------------------------------- all-to-all, barrier
def alltoall_pairwise(b, procs, nbytes, after=None, tag=0):
    """Pairwise all-to-all: in step k = 1..n-1 participant i sends its block for i+k to i+k and
    receives from i-k (mod n); each step starts when the previous one has completed."""
    procs = _participants(procs)
    n = procs.size
    i = np.arange(n)
    d = _Deps(after, n)
    for k in range(1, n):
        to = (i + k) % n
        snd = b.send(procs, procs[to], nbytes, tag, after=d.of(slice(None)), chunk=(to, to + 1))
        d.set(slice(None), b.recv(procs, procs[(i - k) % n], nbytes, tag, after=[snd]))
    return d.last()


def alltoall_posted(b, procs, nbytes, after=None, tag=0):
    """All-to-all with every send (to i+1, i+2, ...) and receive posted at once, then a compute
    of 0 cycles that depends on all of them (MPI_Waitall) as the participant's last op."""
    procs = _participants(procs)
    n = procs.size
    i = np.arange(n)
    first = _Deps(after, n).of(slice(None))
    ops = []
    for k in range(1, n):
        to = (i + k) % n
        ops.append(b.send(procs, procs[to], nbytes, tag, after=first, chunk=(to, to + 1)))
    for k in range(1, n):
        ops.append(b.recv(procs, procs[(i - k) % n], nbytes, tag, after=first))
    return b.compute(procs, 0, after=ops)


def barrier_dissemination(b, procs, after=None, tag=0):
    """Dissemination barrier (Hensgen, Finkel, Manber 1988): in round k = 0..ceil(log2 n)-1
    participant i sends a zero-byte message to i + 2^k and receives one from i - 2^k (mod n)."""
    procs = _participants(procs)
    n = procs.size
    i = np.arange(n)
    d = _Deps(after, n)
    dist = 1
    while dist < n:
        snd = b.send(procs, procs[(i + dist) % n], 0, tag, after=d.of(slice(None)), chunk=(0, 1))
        d.set(slice(None), b.recv(procs, procs[(i - dist) % n], 0, tag, after=[snd]))
        dist <<= 1
    return d.last()


ALLREDUCE = {"ring": allreduce_ring, "recursive_doubling": allreduce_recursive_doubling,
             "rabenseifner": allreduce_rabenseifner}
ALLGATHER = {"ring": allgather_ring, "recursive_doubling": allgather_recursive_doubling}
BCAST = {"binomial": bcast_binomial, "chain": bcast_chain}
REDUCE = {"binomial": reduce_binomial, "chain": reduce_chain}
ALLTOALL = {"pairwise": alltoall_pairwise, "posted": alltoall_posted}


def _log2c(n: int) -> int:
    return max(1, math.ceil(math.log2(n)))


def ops_bound(collective: str, algorithm: str, n: int, nbytes: int = 0, segment_bytes: int = 1,
              reducing: bool = False) -> int:
    """An upper bound of the operations one instance adds (to refuse a schedule before it is built)."""
    r = 3 if reducing else 2
    nseg = max(1, -(-int(nbytes) // max(1, int(segment_bytes))))
    return {
        ("allreduce", "ring"): (2 + r) * n * (n - 1),
        ("allreduce", "recursive_doubling"): 3 * n * (_log2c(n) + 2),
        ("allreduce", "rabenseifner"): 3 * n * (2 * _log2c(n) + 2),
        ("allgather", "ring"): 2 * n * (n - 1),
        ("allgather", "recursive_doubling"): 2 * n * _log2c(n),
        ("broadcast", "binomial"): 2 * n,
        ("broadcast", "chain"): 2 * n * nseg,
        ("reduce", "binomial"): 3 * n,
        ("reduce", "chain"): 3 * n * nseg,
        ("alltoall", "pairwise"): 2 * n * (n - 1),
        ("alltoall", "posted"): 2 * n * (n - 1) + n,
        ("barrier", "dissemination"): 2 * n * _log2c(n),
    }[(collective, algorithm)]


# --------------------------------------------------------------------------- schedules of patterns
def placed(topo, seed, procs, placement, placement_file) -> np.ndarray:
    """Endpoints of the processes (``procs`` 0: one per endpoint), at least 2."""
    if procs < 0:
        raise ParameterError(f"traffic.procs: must be >= 0 (0: one process per endpoint), got {procs}")
    ep = place(topo, procs or None, placement, seed, placement_file or None,
               active_only=True).astype(np.int64)
    if ep.size < 2:
        raise ParameterError(f"traffic.procs: a collective needs at least 2 processes, got {ep.size}")
    return ep


def refuse_large(n_ops: int, key: str, what: str) -> None:
    if n_ops > MAX_OPS:
        raise ParameterError(f"{key}: {what} is {n_ops:,} operations, more than the {MAX_OPS:,} a "
                             "schedule may hold")


def repeated(topo, ep, body, per_iteration: int, iterations: int, compute_cycles: int,
             description: str, key: str = "traffic.procs") -> TrafficPlan:
    """The schedule plan of ``iterations`` repetitions of ``body(b, procs, after) -> last ops``
    over the processes placed on ``ep``: each repetition starts on a process when the previous
    one has completed there, after a compute of ``compute_cycles`` (none when 0).  The last op
    ``body`` returns for a process must be the last op it adds for it (true of every generator
    of this module, whose last op depends on all others).

    ``per_iteration`` bounds the operations of one repetition (refused above :data:`MAX_OPS`
    under ``key`` before anything is built).  One repetition is built and the rest are copies
    of its arrays, so the repetitions cost no Python loop."""
    n = ep.size
    refuse_large(per_iteration, key, "one iteration")
    b = ScheduleBuilder(n)
    P = np.arange(n, dtype=np.int64)
    anchor = b.compute(P, compute_cycles)              # each process's first op, removed below
    body(b, P, anchor)
    one = b.build(ep)
    per = one.n_ops - n
    total = iterations * per + (iterations - 1) * n * (compute_cycles > 0)
    refuse_large(total, "traffic.iterations", f"{description}")
    s = _tile(one, one.op_off[1:] - 1, iterations, compute_cycles > 0, description)
    return TrafficPlan("schedule", np.full(topo.n_endpoints, -1, np.int32), description,
                       ops=check(s, "traffic", topo.n_endpoints))


def _tile(one, last, k: int, keep_anchor: bool, description: str):
    """``k`` copies of the one-iteration schedule ``one`` (each process's first op an anchor
    compute that nothing precedes): copy j's anchor depends on copy j-1's ``last`` op and stays
    (``keep_anchor``) or is dropped, its dependants then depending on copy j-1's ``last``."""
    P, N1 = one.n_procs, one.n_ops
    proc1 = one.op_proc()
    start = one.op_off[:-1]
    assert (one.op_kind[start] == OP_COMPUTE).all()
    loc = np.arange(N1, dtype=np.int64) - start[proc1]     # 0 = the anchor
    m = np.diff(one.op_off) - 1                            # ops of one copy, anchor left out
    a = int(keep_anchor)
    per_proc = k * m + (k - 1) * a
    off = np.zeros(P + 1, dtype=np.int64)
    np.cumsum(per_proc, out=off[1:])
    J = np.arange(k, dtype=np.int64)[:, None]

    def new(ops, j):
        """New id of copy ``j`` of the (non-anchor) ops ``ops`` of ``one``."""
        p = proc1[ops]
        return off[p] + j * (m[p] + a) + loc[ops] - 1

    def anchor_new(p, j):
        return off[p] + j * (m[p] + 1) - 1

    oth = np.nonzero(loc > 0)[0]
    ids = new(oth, J).ravel()                               # (k * len(oth),) in copy order
    N = int(off[-1])
    cols = {}
    for name in ("op_kind", "op_peer", "op_size", "op_tag"):
        col = np.empty(N, dtype=getattr(one, name).dtype)
        col[ids] = np.tile(getattr(one, name)[oth], k)
        cols[name] = col
    chunk = None
    if one.chunk is not None:
        chunk = np.full((N, 2), -1, dtype=np.int64)
        chunk[ids] = np.tile(one.chunk[oth], (k, 1))
    # dependencies of one copy: (op, on, kind)
    dop = np.repeat(np.arange(N1, dtype=np.int64), np.diff(one.dep_off))
    don, dk = one.dep, one.dep_kind.astype(np.int64)
    on_anchor = loc[don] == 0
    ops_l, on_l, k_l = [], [], []
    inner = ~on_anchor
    ops_l.append(new(dop[inner], J).ravel())
    on_l.append(new(don[inner], J).ravel())
    k_l.append(np.tile(dk[inner], k))
    if k > 1:
        J1 = J[1:]
        prev_last = new(last[proc1[dop[on_anchor]]], J1 - 1)
        ops_l.append(new(dop[on_anchor], J1).ravel())
        on_l.append((anchor_new(proc1[dop[on_anchor]], J1) if a else prev_last).ravel())
        k_l.append(np.tile(dk[on_anchor], k - 1))
        if a:
            Pn = np.arange(P, dtype=np.int64)
            anc = anchor_new(Pn, J1).ravel()
            cols["op_kind"][anc] = OP_COMPUTE
            cols["op_peer"][anc] = -1
            cols["op_size"][anc] = one.op_size[start][np.tile(Pn, k - 1)]
            cols["op_tag"][anc] = 0
            ops_l.append(anc)
            on_l.append(new(last[np.tile(Pn, k - 1)], np.repeat(J1.ravel() - 1, P)))
            k_l.append(np.zeros(anc.size, dtype=np.int64))
    s = make_schedule(one.proc_ep, off, cols["op_kind"], cols["op_peer"], cols["op_size"],
                      cols["op_tag"], np.concatenate(ops_l), np.concatenate(on_l),
                      np.concatenate(k_l), description)
    return s if chunk is None else replace(s, chunk=chunk)


# --------------------------------------------------------------------------- registered patterns
def pick_algorithm(table: dict, algorithm: str):
    if algorithm not in table:
        raise ParameterError(f"traffic.algorithm: '{algorithm}' is not one of {', '.join(table)}")
    return table[algorithm]


def _size(nbytes: int) -> int:
    if not 0 <= nbytes <= MAX_BYTES:
        raise ParameterError(f"traffic.bytes: must be in [0, {MAX_BYTES:,}], got {nbytes}")
    return int(nbytes)


def _collective(topo, seed, procs, placement, placement_file, iterations, compute_cycles,
                collective, algorithm, gen, bound_kw, what, **kw):
    ep = placed(topo, seed, procs, placement, placement_file)
    n = ep.size
    if iterations < 1:
        raise ParameterError(f"traffic.iterations: must be >= 1, got {iterations}")
    if not 0 <= compute_cycles <= MAX_CYCLES:
        raise ParameterError(f"traffic.compute_cycles: must be in [0, {MAX_CYCLES}], got {compute_cycles}")
    if "root" in kw:
        _root(kw["root"], n)
    rcpb = kw.get("reduce_cycles_per_byte", 0.0)
    if not (rcpb >= 0 and math.isfinite(rcpb)):
        raise ParameterError(f"traffic.reduce_cycles_per_byte: must be a finite number >= 0, got {rcpb}")
    key = "traffic.segment_bytes" if algorithm == "chain" else "traffic.procs"
    bound = ops_bound(collective, algorithm, n, reducing=rcpb > 0, **bound_kw)
    desc = (f"{what} ({algorithm}), {n} processes, {iterations} iteration"
            f"{'s' if iterations > 1 else ''}"
            + (f", {compute_cycles} compute cycles between iterations" if compute_cycles else ""))
    return repeated(topo, ep, lambda b, P, after: gen(b, P, after=after, **kw), bound, iterations,
                    compute_cycles, desc, key=key)


def allreduce(topo, seed, procs=0, placement="linear", placement_file="", algorithm="ring",
              bytes=4096, iterations=1, compute_cycles=0, reduce_cycles_per_byte=0.0):
    """Allreduce of a vector of ``bytes`` bytes (every process ends with the reduction of all)."""
    gen = pick_algorithm(ALLREDUCE, algorithm)
    return _collective(topo, seed, procs, placement, placement_file, iterations, compute_cycles,
                       "allreduce", algorithm, gen, {}, f"allreduce of {_size(bytes)} bytes",
                       nbytes=bytes, reduce_cycles_per_byte=reduce_cycles_per_byte)


def allgather(topo, seed, procs=0, placement="linear", placement_file="", algorithm="ring",
              bytes=4096, iterations=1, compute_cycles=0):
    """Allgather of a block of ``bytes`` bytes per process."""
    gen = pick_algorithm(ALLGATHER, algorithm)
    return _collective(topo, seed, procs, placement, placement_file, iterations, compute_cycles,
                       "allgather", algorithm, gen, {}, f"allgather of {_size(bytes)} bytes per process",
                       nbytes=bytes)


def broadcast(topo, seed, procs=0, placement="linear", placement_file="", algorithm="binomial",
              bytes=4096, root=0, segment_bytes=8192, iterations=1, compute_cycles=0):
    """Broadcast of ``bytes`` bytes from process ``root``."""
    gen = pick_algorithm(BCAST, algorithm)
    kw = dict(nbytes=_size(bytes), root=root)
    bound_kw = {}
    if algorithm == "chain":
        if segment_bytes < 1:
            raise ParameterError(f"traffic.segment_bytes: must be >= 1, got {segment_bytes}")
        kw["segment_bytes"] = bound_kw["segment_bytes"] = segment_bytes
        bound_kw["nbytes"] = bytes
    return _collective(topo, seed, procs, placement, placement_file, iterations, compute_cycles,
                       "broadcast", algorithm, gen, bound_kw,
                       f"broadcast of {bytes} bytes from process {root}", **kw)


def reduce(topo, seed, procs=0, placement="linear", placement_file="", algorithm="binomial",
           bytes=4096, root=0, segment_bytes=8192, iterations=1, compute_cycles=0,
           reduce_cycles_per_byte=0.0):
    """Reduce of a vector of ``bytes`` bytes to process ``root``."""
    gen = pick_algorithm(REDUCE, algorithm)
    kw = dict(nbytes=_size(bytes), root=root, reduce_cycles_per_byte=reduce_cycles_per_byte)
    bound_kw = {}
    if algorithm == "chain":
        if segment_bytes < 1:
            raise ParameterError(f"traffic.segment_bytes: must be >= 1, got {segment_bytes}")
        kw["segment_bytes"] = bound_kw["segment_bytes"] = segment_bytes
        bound_kw["nbytes"] = bytes
    return _collective(topo, seed, procs, placement, placement_file, iterations, compute_cycles,
                       "reduce", algorithm, gen, bound_kw,
                       f"reduce of {bytes} bytes to process {root}", **kw)


def alltoall_collective(topo, seed, procs=0, placement="linear", placement_file="",
                        algorithm="pairwise", bytes=4096, iterations=1, compute_cycles=0):
    """All-to-all of a block of ``bytes`` bytes from every process to every other one."""
    gen = pick_algorithm(ALLTOALL, algorithm)
    return _collective(topo, seed, procs, placement, placement_file, iterations, compute_cycles,
                       "alltoall", algorithm, gen, {},
                       f"all-to-all of {_size(bytes)} bytes per process pair", nbytes=bytes)


def barrier(topo, seed, procs=0, placement="linear", placement_file="", algorithm="dissemination",
            iterations=1, compute_cycles=0):
    """Barrier: zero-byte messages only."""
    gen = pick_algorithm({"dissemination": barrier_dissemination}, algorithm)
    return _collective(topo, seed, procs, placement, placement_file, iterations, compute_cycles,
                       "barrier", algorithm, gen, {}, "barrier")


PLACEMENT = [p for p in COMMON if p.name in ("procs", "placement", "placement_file")]
"""``procs``, ``placement``, ``placement_file`` as the finite exchanges declare them."""
REPEAT = [
    Param("iterations", int, 1, "times the collective runs, each after the previous one has "
          "completed on that process", lo=1),
    Param("compute_cycles", int, 0, "a compute of this many cycles between iterations", lo=0,
          hi=MAX_CYCLES),
]
RCPB = Param("reduce_cycles_per_byte", float, 0.0, "after each received vector part that is "
             "reduced, a compute of ceil(bytes x this) cycles", lo=0.0)


def _algorithm(table, default):
    return Param("algorithm", str, default, "collective algorithm", choices=tuple(table))


def _bytes(doc):
    return Param("bytes", int, 4096, doc, lo=0, hi=MAX_BYTES)


ROOT = Param("root", int, 0, "root process (0..procs-1)", lo=0)
SEGMENT = Param("segment_bytes", int, 8192, "chain: pipeline segment size", lo=1)
REF = "Thakur, Rabenseifner, Gropp 2005 (MPICH)"

TRAFFIC.register("allreduce", allreduce, params=PLACEMENT + [
    _algorithm(ALLREDUCE, "ring"), _bytes("vector size"), RCPB] + REPEAT,
    summary="allreduce schedule (ring, recursive doubling, Rabenseifner)", reference=REF,
    finite=True)
TRAFFIC.register("allgather", allgather, params=PLACEMENT + [
    _algorithm(ALLGATHER, "ring"), _bytes("block of each process")] + REPEAT,
    summary="allgather schedule (ring, recursive doubling)", reference=REF, finite=True)
TRAFFIC.register("broadcast", broadcast, params=PLACEMENT + [
    _algorithm(BCAST, "binomial"), _bytes("message size"), ROOT, SEGMENT] + REPEAT,
    summary="broadcast schedule (binomial tree, pipelined chain)", reference=REF, finite=True)
TRAFFIC.register("reduce", reduce, params=PLACEMENT + [
    _algorithm(REDUCE, "binomial"), _bytes("vector size"), ROOT, SEGMENT, RCPB] + REPEAT,
    summary="reduce schedule (binomial tree, pipelined chain)", reference=REF, finite=True)
TRAFFIC.register("alltoall_collective", alltoall_collective, params=PLACEMENT + [
    _algorithm(ALLTOALL, "pairwise"), _bytes("block from each process to each other one")] + REPEAT,
    summary="all-to-all collective schedule (pairwise steps or all posted at once)", reference=REF,
    finite=True)
TRAFFIC.register("barrier", barrier, params=PLACEMENT + [
    _algorithm({"dissemination": None}, "dissemination")] + REPEAT,
    summary="dissemination barrier schedule",
    reference="Hensgen, Finkel, Manber 1988; Thakur, Rabenseifner, Gropp 2005",
    finite=True)
