"""Moving outboxes between partitions and reducing statistics.

Two implementations of one small interface:

* :class:`LocalGroup` -- several partitions inside one process (used by the
  two-partitions-in-one-process contract test, and by a plain serial run
  with one partition);
* :class:`MpiGroup` -- one partition per MPI rank; outboxes go to neighbour
  ranks only, with Isend/Irecv of fixed-size blocks whose first two entries
  are the item counts (bounded by one flit per cycle per cut channel and
  ``speedup`` credits per cycle), so no count round-trip is needed.

Library code takes the communicator as an argument and never reaches for
``COMM_WORLD`` by itself.
"""
from __future__ import annotations

import time

import numpy as np

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
        peers_f = np.unique(p.cut_peer_part)
        self.neighbours = [int(x) for x in peers_f]
        # fixed block sizes (int32 words): header(2) + flits + credits
        self.send_cap = {}
        self.recv_cap = {}
        for q in self.neighbours:
            n_cut = int(np.count_nonzero(p.cut_peer_part == q))
            # cut channels are symmetric: what I send on to q equals what q sends to me
            cap = 2 + n_cut * window * (NF + 2) + n_cut * window * speedup * 3
            self.send_cap[q] = cap
            self.recv_cap[q] = cap
        self.send_buf = {q: np.zeros(self.send_cap[q], dtype=np.int32) for q in self.neighbours}
        self.recv_buf = {q: np.zeros(self.recv_cap[q], dtype=np.int32) for q in self.neighbours}
        # rank-local breakdown of exchange(), accumulated over the run (seconds, counts):
        # pack_s   take_outbox + building the send blocks (Irecv/Isend posting included)
        # wait_s   Waitall: the time this rank waits for its neighbours (imbalance + transfer)
        # unpack_s inserting the received flits/credits (part.receive)
        # *_cpu_s  the same phases in CPU time of this thread (differs from the wall time
        #          when ranks share cores; MPI polls while it waits, so wait_cpu_s is spin)
        self.timing = {"pack_s": 0.0, "wait_s": 0.0, "unpack_s": 0.0,
                       "pack_cpu_s": 0.0, "wait_cpu_s": 0.0, "unpack_cpu_s": 0.0,
                       "exchanges": 0, "bytes_sent": 0, "neighbours": len(self.neighbours)}

    def exchange(self):
        tm = self.timing
        t0, c0 = time.perf_counter(), time.thread_time()
        part = self.parts[0]
        f_ch, f_t, f_rec, c_ch, c_t, c_vc, f_peer, c_peer = part.take_outbox()
        sent = 0
        reqs = []
        for q in self.neighbours:
            reqs.append(self.comm.Irecv(self.recv_buf[q], source=q, tag=7))
        for q in self.neighbours:
            mf = f_peer == q
            mc = c_peer == q
            nf = int(mf.sum())
            nc = int(mc.sum())
            buf = self.send_buf[q]
            buf[0] = nf
            buf[1] = nc
            o = 2
            if nf:
                blk = np.empty((nf, NF + 2), dtype=np.int32)
                blk[:, 0] = f_ch[mf]
                blk[:, 1] = f_t[mf]
                blk[:, 2:] = f_rec[mf]
                buf[o:o + blk.size] = blk.ravel()
                o += blk.size
            if nc:
                blk = np.empty((nc, 3), dtype=np.int32)
                blk[:, 0] = c_ch[mc]
                blk[:, 1] = c_t[mc]
                blk[:, 2] = c_vc[mc]
                buf[o:o + blk.size] = blk.ravel()
                o += blk.size
            reqs.append(self.comm.Isend(buf[:max(o, 2)], dest=q, tag=7))
            sent += 4 * max(o, 2)
        t1, c1 = time.perf_counter(), time.thread_time()
        self.MPI.Request.Waitall(reqs)
        t2, c2 = time.perf_counter(), time.thread_time()
        for q in self.neighbours:
            buf = self.recv_buf[q]
            nf, nc = int(buf[0]), int(buf[1])
            o = 2
            fl = buf[o:o + nf * (NF + 2)].reshape(nf, NF + 2)
            o += nf * (NF + 2)
            cr = buf[o:o + nc * 3].reshape(nc, 3)
            part.receive(fl[:, 0].astype(np.int64), fl[:, 1].astype(np.int64), fl[:, 2:],
                         cr[:, 0].astype(np.int64), cr[:, 1].astype(np.int64),
                         cr[:, 2].astype(np.int64))
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
