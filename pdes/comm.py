"""Moving outboxes between partitions and reducing statistics.

Two implementations of one small interface:

* :class:`LocalGroup` -- several partitions inside one process (used by the
  two-partitions-in-one-process contract test, and by a plain serial run
  with one partition);
* :class:`MpiGroup` -- one partition per MPI rank; outboxes go to neighbour
  ranks only, with Isend/Irecv of fixed-size blocks whose first two entries
  are the item counts (bounded by one flit per cycle per cut channel and
  ``speedup`` credits per cycle), so no count round-trip is needed; blocks
  are packed and unpacked by the kernels of :mod:`pdes.kernels.exchange`.

Library code takes the communicator as an argument and never reaches for
``COMM_WORLD`` by itself.
"""
from __future__ import annotations

import time

import numpy as np

from pdes.kernels import exchange as X
from pdes.kernels.layout import NF


class LocalGroup:
    """All partitions live in this process."""

    rank = 0
    size = 1

    def __init__(self, parts):
        self.parts = list(parts)

    def exchange(self):
        if len(self.parts) == 1:
            return
        boxes = [p.take_outbox() for p in self.parts]
        for q, part in enumerate(self.parts):
            fch, fat, frec, cch, cat, cvc = [], [], [], [], [], []
            for box in boxes:
                f_ch, f_t, f_rec, c_ch, c_t, c_vc, f_peer, c_peer = box
                mf = f_peer == q
                mc = c_peer == q
                fch.append(f_ch[mf]); fat.append(f_t[mf]); frec.append(f_rec[mf])
                cch.append(c_ch[mc]); cat.append(c_t[mc]); cvc.append(c_vc[mc])
            part.receive(np.concatenate(fch), np.concatenate(fat),
                         np.concatenate(frec) if frec else np.zeros((0, NF), np.int32),
                         np.concatenate(cch), np.concatenate(cat), np.concatenate(cvc))

    # reductions over the parts of this process
    def sum(self, arr):
        return np.asarray(arr)

    def max(self, arr):
        return np.asarray(arr)

    def min_scalar(self, x):
        return x

    def bcast(self, obj):
        return obj

    def barrier(self):
        pass


class MpiGroup:
    """One partition per rank of ``comm``."""

    def __init__(self, comm, part, window: int, speedup: int):
        from mpi4py import MPI
        self.MPI = MPI
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.parts = [part]
        p = part
        self.neighbours = [int(x) for x in np.unique(p.cut_peer_part)]
        # per neighbour: its cut channels (local cut indices) and a fixed-size block (int32
        # words, see pdes.kernels.exchange); cut channels are symmetric, so what I send to q
        # is bounded like what q sends to me: one flit per cycle per channel and `speedup`
        # credits per cycle per channel
        self.cuts = {}
        self.send_buf = {}
        self.recv_buf = {}
        for q in self.neighbours:
            cuts = np.nonzero(p.cut_peer_part == q)[0].astype(np.int64)
            n_cut = len(cuts)
            cap = X.HEADER + n_cut * window * X.FLIT_WORDS + n_cut * window * speedup * X.CREDIT_WORDS
            self.cuts[q] = cuts
            self.send_buf[q] = np.zeros(cap, dtype=np.int32)
            self.recv_buf[q] = np.zeros(cap, dtype=np.int32)
        a = p.arrays
        focap, cocap = p.outbox_caps()
        self._pack_args = (p.cut_out_channel, p.cut_in_channel, a["fo_rec"], a["fo_t"], a["fo_cnt"],
                           focap, a["co_t"], a["co_vc"], a["co_cnt"], cocap)
        self._unpack_args = (p.in_port_of_channel, p.out_port_of_channel, p.nv, p.rp.vc_flits,
                             p.rp.routing_delay, a["rec"], a["rec_c"], a["rec_free"], a["rec_top"], a["ib_id"], a["ib_rdy"], a["ib_head"], a["ib_cnt"],
                             a["iv_ready"], a["iv_alloc"], a["iv_sa_ready"], a["iv_sa_at"], a["iv_va_at"], a["cr_t"], a["cr_head"], a["cr_cnt"])
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
        for q in self.neighbours:
            reqs.append(comm.Irecv(self.recv_buf[q], source=q, tag=7))
        for q in self.neighbours:
            buf = self.send_buf[q]
            n = X.pack_block(buf, self.cuts[q], *self._pack_args)
            reqs.append(comm.Isend(buf[:n], dest=q, tag=7))
            sent += 4 * n
        t1, c1 = time.perf_counter(), time.thread_time()
        self.MPI.Request.Waitall(reqs)
        t2, c2 = time.perf_counter(), time.thread_time()
        for q in self.neighbours:
            if not X.unpack_block(self.recv_buf[q], *self._unpack_args):
                raise RuntimeError("credit FIFO overflow on receive (engine bug)")
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

    def barrier(self):
        self.comm.Barrier()
