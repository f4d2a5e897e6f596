"""Moving outboxes between partitions and reducing statistics.

Two implementations of one small interface:

* :class:`LocalGroup` -- several partitions inside one process (used by the
  in-process split tests, and by a plain serial run with one partition);
* :class:`MpiGroup` -- one partition per MPI rank; blocks go to neighbour
  ranks only, with Isend/Irecv.

Both move the same fixed-size blocks (:class:`Mailbox`), whose first two
entries are the item counts (bounded by the outboxes' capacities: one flit per cycle per
cut channel and ``speedup`` + 1 credits per cycle), so no count round-trip is needed; blocks
are packed and unpacked by the kernels of :mod:`pdes.kernels.exchange`, for
an in-process split exactly as for an MPI run.

Library code takes the communicator as an argument and never reaches for
``COMM_WORLD`` by itself.
"""
from __future__ import annotations

import time

import numpy as np

from models.core.params import PR_HRDY
from pdes.kernels import exchange as X
from pdes.kernels import cycle
from pdes.kernels.state_table import GROUPS
from pdes.state import DirectCall

_PORTS, _POOL, _INB, _CRD = (GROUPS.index(G) for G in (cycle.Ports, cycle.Pool, cycle.InputVCs,
                                                        cycle.Credits))


class Mailbox:
    """The exchange blocks of one part: per neighbour part, its cut channels and a fixed-size
    send and receive block (int32 words, see :mod:`pdes.kernels.exchange`).

    Cut channels are symmetric, so what a part sends to ``q`` is bounded like
    what ``q`` sends to it: per channel, the part's outboxes (:meth:`PartState.outbox_caps`:
    one flit per cycle of the window, and ``speedup`` (internal times input speedup)
    credits per cycle plus one, the credit of a flit a failure's drop rule discards,
    :func:`pdes.kernels.cycle.discard_front`).  A block holds every outbox full.
    :class:`LocalGroup` and :class:`MpiGroup`
    both move blocks built and read by :meth:`pack` and :meth:`unpack`, so an
    in-process split exercises exactly the path of an MPI run.
    """

    def __init__(self, part):
        p = part
        self.neighbours = [int(x) for x in np.unique(p.cut_peer_part)]
        self.cuts = {}
        self.send_buf = {}
        self.recv_buf = {}
        # the outboxes' capacities per cut channel (window and window x (speedup + 1)): a
        # block sized from window x speedup credits overflowed once a failure's drops added
        # their credits to the switch's
        focap, cocap = p.outbox_caps()
        for q in self.neighbours:
            cuts = np.nonzero(p.cut_peer_part == q)[0].astype(np.int64)
            n_cut = len(cuts)
            cap = X.HEADER + n_cut * focap * X.FLIT_WORDS + n_cut * cocap * X.CREDIT_WORDS
            self.cuts[q] = cuts
            self.send_buf[q] = np.zeros(cap, dtype=np.int32)
            self.recv_buf[q] = np.zeros(cap, dtype=np.int32)
        a = p.arrays
        focap, cocap = p.outbox_caps()
        self.part = p
        self._pack_args = (p.cut_out_channel, p.cut_in_channel, a["fo_rec"], a["fo_t"], a["fo_cnt"],
                           focap, a["co_t"], a["co_vc"], a["co_cnt"], cocap)
        # one direct call per neighbour (its own buffers): Numba's call types every argument
        self._pack_call = {q: DirectCall(X.pack_block) for q in self.neighbours}
        self._unpack_call = DirectCall(X.unpack_block, fresh=(0, 3))   # a block, a scalar

    def pack(self, q) -> np.ndarray:
        """The block for neighbour ``q`` (a view of the send buffer); clears those outboxes."""
        buf = self.send_buf[q]
        return buf[:self._pack_call[q](buf, self.cuts[q], *self._pack_args)]

    def unpack(self, block) -> None:
        """Insert a block received from a neighbour."""
        p = self.part
        g = p.groups()        # asked each time: the record pool grows between windows
        if not self._unpack_call(block, p.in_port_of_channel, p.out_port_of_channel,
                                 p.prm[PR_HRDY], p.prm, g[_PORTS], g[_POOL], g[_INB], g[_CRD]):
            raise RuntimeError("credit FIFO overflow on receive (engine bug)")


def compile_exchange(part) -> None:
    """Compile (or load from the cache) the kernels that pack and unpack ``part``'s exchange
    blocks, for its arrays' types, by packing no cut channel and unpacking an empty block:
    nothing of the part changes."""
    a = part.arrays
    focap, cocap = part.outbox_caps()
    buf = np.zeros(X.HEADER, dtype=np.int32)
    X.pack_block(buf, np.zeros(0, dtype=np.int64), part.cut_out_channel, part.cut_in_channel,
                 a["fo_rec"], a["fo_t"], a["fo_cnt"], focap, a["co_t"], a["co_vc"], a["co_cnt"],
                 cocap)
    ports, pool, inb, crd = (G(**{f: a[f] for f in G._fields})
                             for G in (cycle.Ports, cycle.Pool, cycle.InputVCs, cycle.Credits))
    X.unpack_block(np.zeros(X.HEADER, dtype=np.int32), part.in_port_of_channel,
                   part.out_port_of_channel, part.prm[PR_HRDY], part.prm, ports, pool, inb, crd)


class LocalGroup:
    """All partitions live in this process; blocks move between their mailboxes."""

    rank = 0
    size = 1

    def __init__(self, parts):
        self.parts = list(parts)
        self.boxes = None
        if len(self.parts) > 1:
            self.boxes = {p.part: Mailbox(p) for p in self.parts}

    def exchange(self):
        if self.boxes is None:
            return
        # every part packs all its blocks first (as every rank does before Waitall), then
        # every part unpacks the blocks addressed to it, neighbours in increasing order
        sent = {(p, q): box.pack(q) for p, box in self.boxes.items() for q in box.neighbours}
        for q, box in self.boxes.items():
            for p in box.neighbours:
                box.unpack(sent[(p, q)])

    # reductions over the parts of this process
    def sum(self, arr):
        return np.asarray(arr)

    def max(self, arr):
        return np.asarray(arr)

    def min_scalar(self, x):
        return x

    def bcast(self, obj):
        return obj

    def gather(self, obj):
        """``[obj]`` (the list of every rank's ``obj`` on rank 0)."""
        return [obj]

    def barrier(self):
        pass


class MpiGroup:
    """One partition per rank of ``comm``."""

    def __init__(self, comm, part):
        from mpi4py import MPI
        self.MPI = MPI
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.parts = [part]
        self.box = Mailbox(part)
        self.neighbours = self.box.neighbours
        # rank-local breakdown of exchange(), accumulated over the run (seconds, counts):
        # pack_s   building the send blocks (Irecv/Isend posting included)
        # wait_s   Waitall: the time this rank waits for its neighbours (imbalance + transfer)
        # unpack_s inserting the received flits/credits
        # *_cpu_s  the same phases in CPU time of this thread (differs from the wall time
        #          when ranks share cores; MPI polls while it waits, so wait_cpu_s is spin)
        self.timing = {"pack_s": 0.0, "wait_s": 0.0, "unpack_s": 0.0,
                       "pack_cpu_s": 0.0, "wait_cpu_s": 0.0, "unpack_cpu_s": 0.0,
                       "exchanges": 0, "bytes_sent": 0, "neighbours": len(self.neighbours)}

    def exchange(self):
        tm = self.timing
        t0, c0 = time.perf_counter(), time.thread_time()
        sent = 0
        reqs = []
        comm = self.comm
        box = self.box
        for q in self.neighbours:
            reqs.append(comm.Irecv(box.recv_buf[q], source=q, tag=7))
        for q in self.neighbours:
            block = box.pack(q)
            reqs.append(comm.Isend(block, dest=q, tag=7))
            sent += 4 * block.size
        t1, c1 = time.perf_counter(), time.thread_time()
        self.MPI.Request.Waitall(reqs)
        t2, c2 = time.perf_counter(), time.thread_time()
        for q in self.neighbours:
            box.unpack(box.recv_buf[q])
        t3, c3 = time.perf_counter(), time.thread_time()
        tm["pack_s"] += t1 - t0
        tm["wait_s"] += t2 - t1
        tm["unpack_s"] += t3 - t2
        tm["pack_cpu_s"] += c1 - c0
        tm["wait_cpu_s"] += c2 - c1
        tm["unpack_cpu_s"] += c3 - c2
        tm["exchanges"] += 1
        tm["bytes_sent"] += sent

    def sum(self, arr):
        arr = np.ascontiguousarray(arr)
        out = np.empty_like(arr)
        self.comm.Allreduce(arr, out, op=self.MPI.SUM)
        return out

    def max(self, arr):
        arr = np.ascontiguousarray(arr)
        out = np.empty_like(arr)
        self.comm.Allreduce(arr, out, op=self.MPI.MAX)
        return out

    def min_scalar(self, x):
        return self.comm.allreduce(x, op=self.MPI.MIN)

    def bcast(self, obj):
        return self.comm.bcast(obj, root=0)

    def gather(self, obj):
        """Every rank's ``obj`` in rank order on rank 0, ``None`` elsewhere."""
        return self.comm.gather(obj, root=0)

    def barrier(self):
        self.comm.Barrier()
