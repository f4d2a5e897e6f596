"""GPCNeT's canary and congestor patterns as schedules (Chunduri et al., SC19).

GPCNeT measures congestion by running small *canary* tests (random-ring
latency, an 8-byte allreduce) on about 20% of the nodes while *congestor*
tests (all-to-all, incast, broadcast) run on the others, and comparing each
canary with and without them.  The all-to-all and the allreduce are the
collectives of :mod:`models.traffic.collectives`; this module adds the three
patterns GPCNeT uses that are not MPI collectives.  Each generator appends one
round to a :class:`~models.schedule.ScheduleBuilder` over the processes
``procs`` (participant ``i`` is process ``procs[i]``), one ``add`` per kind of
operation, and returns each participant's last operation (which depends on all
of its operations of the round), as the collectives do; ``after`` is what the
round's first operations depend on (``None``, one id per participant, -1 for
none, or a sequence of such arrays).

* :func:`ring_round` -- GPCNeT's "RR Two-sided Lat" with the ring given by the
  order of ``procs``: every participant sends ``nbytes`` to its successor and
  receives from its predecessor; the receive depends on the send, so the last
  operation completes when both have.
* :func:`incast_round` -- every participant but the root sends ``nbytes`` to the
  root (one send each); the root posts a receive from each of them at once and
  then a compute of 0 cycles that depends on all of them (MPI_Waitall).
* :func:`outcast_round` -- the root posts a send of ``nbytes`` to every other
  participant at once and then a compute of 0 cycles that depends on all of them;
  every other participant receives one message from the root (a flat broadcast).

Every send states the data it carries (:attr:`models.schedule.Schedule.chunk`):
a ring or incast send carries its sender's block (participant ``i``: block
``i``), an outcast send the root's data (block 0).

The registered patterns ``random_ring``, ``incast`` and ``outcast`` repeat a
round ``iterations`` times, each round on a process after its previous one has
completed there (:func:`models.traffic.collectives.repeated`): a sender of an
incast goes on when its send has left (MPI's local completion), the root when
all its receives have completed; the outcast's root when all its sends have
left, a receiver when its message is in; a ring process when both its send and
its receive have completed.  ``random_ring`` puts the processes on a ring in a
seeded random order (keyed by the seed only, the same ring every iteration).
"""
from __future__ import annotations

import numpy as np

from models.core.errors import ParameterError
from models.core.registry import TRAFFIC, Param
from models.schedule import MAX_CYCLES
from models.traffic.collectives import (MAX_BYTES, PLACEMENT, REPEAT, _Deps, _participants,
                                        _root, placed, repeated)

RING_TAG = 0x9C9E
"""Mixed into the seed of the random ring's order."""


# --------------------------------------------------------------------------- generators
def ring_round(b, procs, nbytes, after=None, tag=0):
    """One step of a ring: participant i sends ``nbytes`` to participant i+1 (mod n) and
    receives from i-1; the receive depends on the send (the step completes when both have)."""
    procs = _participants(procs)
    n = procs.size
    i = np.arange(n)
    d = _Deps(after, n)
    snd = b.send(procs, procs[(i + 1) % n], nbytes, tag, after=d.of(slice(None)), chunk=(i, i + 1))
    return b.recv(procs, procs[(i - 1) % n], nbytes, tag, after=[snd])


def incast_round(b, procs, nbytes, root=0, after=None, tag=0):
    """Every participant but ``root`` sends ``nbytes`` to the root; the root receives from all
    of them (posted at once) and then computes 0 cycles after all receives (MPI_Waitall)."""
    procs = _participants(procs)
    n = procs.size
    root = _root(root, n)
    d = _Deps(after, n)
    others = np.arange(n) != root
    out = np.empty(n, dtype=np.int64)
    out[others] = b.send(procs[others], procs[root], nbytes, tag, after=d.of(others),
                         chunk=(np.nonzero(others)[0], np.nonzero(others)[0] + 1))
    rcv = b.recv(np.full(n - 1, procs[root]), procs[others], nbytes, tag,
                 after=[np.broadcast_to(a[root], n - 1) for a in d.arrs])
    out[root] = b.compute(procs[root], 0, after=rcv.reshape(-1, 1))[0]
    return out


def outcast_round(b, procs, nbytes, root=0, after=None, tag=0):
    """``root`` sends ``nbytes`` to every other participant (posted at once) and then computes
    0 cycles after all its sends (MPI_Waitall); every other participant receives one message."""
    procs = _participants(procs)
    n = procs.size
    root = _root(root, n)
    d = _Deps(after, n)
    others = np.arange(n) != root
    out = np.empty(n, dtype=np.int64)
    snd = b.send(np.full(n - 1, procs[root]), procs[others], nbytes, tag,
                 after=[np.broadcast_to(a[root], n - 1) for a in d.arrs], chunk=(0, 1))
    out[root] = b.compute(procs[root], 0, after=snd.reshape(-1, 1))[0]
    out[others] = b.recv(procs[others], procs[root], nbytes, tag, after=d.of(others))
    return out


# --------------------------------------------------------------------------- registered patterns
def ring_order(seed: int, n: int) -> np.ndarray:
    """(n,) int64: the processes in the order of the random ring (process ``order[k]`` sends to
    ``order[k+1]``), a seeded permutation."""
    return np.random.default_rng([int(seed), RING_TAG]).permutation(n).astype(np.int64)


def _check(bytes, iterations, compute_cycles):
    if not 0 <= bytes <= MAX_BYTES:
        raise ParameterError(f"traffic.bytes: must be in [0, {MAX_BYTES:,}], got {bytes}")
    if iterations < 1:
        raise ParameterError(f"traffic.iterations: must be >= 1, got {iterations}")
    if not 0 <= compute_cycles <= MAX_CYCLES:
        raise ParameterError(f"traffic.compute_cycles: must be in [0, {MAX_CYCLES}], got "
                             f"{compute_cycles}")


def _desc(what, n, iterations, compute_cycles):
    return (f"{what}, {n} processes, {iterations} iteration{'s' if iterations > 1 else ''}"
            + (f", {compute_cycles} compute cycles between iterations" if compute_cycles else ""))


def random_ring(topo, seed, procs=0, placement="linear", placement_file="", bytes=8,
                iterations=1, compute_cycles=0):
    """GPCNeT's random-ring latency test: each iteration every process sends ``bytes`` to its
    successor on a seeded random ring and receives from its predecessor."""
    _check(bytes, iterations, compute_cycles)
    ep = placed(topo, seed, procs, placement, placement_file)
    n = ep.size
    order = ring_order(seed, n)

    def body(b, P, after):
        last = np.empty(n, dtype=np.int64)
        last[order] = ring_round(b, P[order], bytes, after=after[order])
        return last

    return repeated(topo, ep, body, 2 * n, iterations, compute_cycles,
                    _desc(f"random ring of {bytes}-byte messages", n, iterations, compute_cycles))


def _rooted(gen, what, topo, seed, procs, placement, placement_file, bytes, root, iterations,
            compute_cycles):
    _check(bytes, iterations, compute_cycles)
    ep = placed(topo, seed, procs, placement, placement_file)
    n = ep.size
    _root(root, n)
    return repeated(topo, ep, lambda b, P, after: gen(b, P, bytes, root=root, after=after),
                    2 * n, iterations, compute_cycles,
                    _desc(f"{what} of {bytes} bytes, root {root}", n, iterations, compute_cycles))


def incast(topo, seed, procs=0, placement="linear", placement_file="", bytes=4096, root=0,
           iterations=1, compute_cycles=0):
    """Incast congestor: each round every process but ``root`` sends ``bytes`` to the root."""
    return _rooted(incast_round, "incast", topo, seed, procs, placement, placement_file, bytes,
                   root, iterations, compute_cycles)


def outcast(topo, seed, procs=0, placement="linear", placement_file="", bytes=4096, root=0,
            iterations=1, compute_cycles=0):
    """Outcast (flat broadcast) congestor: each round ``root`` sends ``bytes`` to every other
    process."""
    return _rooted(outcast_round, "outcast", topo, seed, procs, placement, placement_file, bytes,
                   root, iterations, compute_cycles)


def _bytes(default, doc):
    return Param("bytes", int, default, doc, lo=0, hi=MAX_BYTES)


_REPEAT = [Param("iterations", int, 1, "rounds, each after the previous one has completed on "
                 "that process", lo=1), REPEAT[1]]
_ROOT = Param("root", int, 0, "root process (0..procs-1)", lo=0)
REF = "Chunduri et al. SC19 (GPCNeT)"

TRAFFIC.register("random_ring", random_ring, params=PLACEMENT + [
    _bytes(8, "message to the ring successor per iteration")] + _REPEAT,
    summary="GPCNeT random-ring latency schedule: each iteration a message to the successor on "
            "a seeded random ring", reference=REF, finite=True)
TRAFFIC.register("incast", incast, params=PLACEMENT + [
    _bytes(4096, "message from each process to the root per round"), _ROOT] + _REPEAT,
    summary="incast congestor schedule: every process but the root sends to it, round after round",
    reference=REF, finite=True)
TRAFFIC.register("outcast", outcast, params=PLACEMENT + [
    _bytes(4096, "message from the root to each process per round"), _ROOT] + _REPEAT,
    summary="outcast (flat broadcast) congestor schedule: the root sends to every process, round "
            "after round", reference=REF, finite=True)
