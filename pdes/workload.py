"""A schedule workload's kernel tables (:mod:`pdes.kernels.schedule`), built once per run.

The kernel numbers operations endpoint by endpoint (the processes in endpoint
order, each process's operations in its own order), so that each endpoint's
operations are one range of ``msg_off``; ``op_of_kop`` maps that numbering back
to the schedule's, in which the results are written.  A message of ``b``
bytes is ``ceil(b / (router.flit_bytes x router.packet_size))`` packets, at
least one.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from models.core.errors import ParameterError
from models.schedule import OP_COMPUTE, OP_RECV, OP_SEND, packets

MAX_OPS = 2**30 - 1
"""Operations a schedule may have (a successor entry holds ``2 * op + kind`` in an int32)."""

STATIC = ("op_kind", "op_match", "op_soff", "op_succ")
"""The schedule's tables every rank holds identically (node-shared); ``op_wait0`` is the
initial dependency count and ``op_of_kop`` the numbering map."""


def schedule_tables(plan, n_endpoints: int, packet_size: int, flit_bytes: int,
                    key: str = "traffic.pattern"):
    """``(plan, tables)``: the traffic plan with its per-operation message tables
    (``msg_off`` by endpoint, ``msg_dst``, ``msg_pkts``) and the schedule's other tables;
    ``key`` names where its messages' sizes come from in an error."""
    s = plan.ops
    N = s.n_ops
    if N > MAX_OPS:
        raise ParameterError(f"traffic.pattern: a schedule of {N:,} operations is more than the "
                             f"engine's {MAX_OPS:,}")
    E = n_endpoints
    P = s.n_procs
    porder = np.argsort(s.proc_ep, kind="stable")
    lens = np.diff(s.op_off)
    klens = lens[porder]
    kstart = np.zeros(P + 1, dtype=np.int64)
    np.cumsum(klens, out=kstart[1:])
    op_of_kop = (np.repeat(s.op_off[:-1][porder] - kstart[:-1], klens)
                 + np.arange(N, dtype=np.int64))
    kop_of_op = np.empty(N, dtype=np.int64)
    kop_of_op[op_of_kop] = np.arange(N, dtype=np.int64)
    per_ep = np.zeros(E, dtype=np.int64)
    per_ep[s.proc_ep] = lens
    msg_off = np.zeros(E + 1, dtype=np.int64)
    np.cumsum(per_ep, out=msg_off[1:])
    kind = s.op_kind[op_of_kop]
    proc = s.op_proc()[op_of_kop]
    own_ep = s.proc_ep[proc]
    peer_ep = s.proc_ep[np.maximum(s.op_peer[op_of_kop], 0)]
    dst = np.where(kind == OP_SEND, peer_ep, own_ep).astype(np.int32)
    size = s.op_size[op_of_kop]
    pk = np.where(kind == OP_COMPUTE, size, packets(size, flit_bytes, packet_size))
    big = np.nonzero((kind == OP_SEND) & (pk > 2**31 - 1))[0]   # a receive takes its send's
    if big.size:
        raise ParameterError(f"{key}: {s.name(int(op_of_kop[big[0]]))}: "
                             f"{int(pk[big[0]]):,} packets, more than 2^31 - 1 "
                             "(raise router.flit_bytes or router.packet_size)")
    match = np.where(kind == OP_COMPUTE, -1, kop_of_op[np.maximum(s.match[op_of_kop], 0)])
    # a receive waits for the packets of the message it matched (its send's size), not for
    # those of its own size: a receive larger than its message would wait forever, a smaller
    # one would complete before its message is in (LogGOPSim times the sender's message)
    recv = kind == OP_RECV
    pk[recv] = pk[match[recv]]
    # successors: dependency d of op -> entry 2 * op + kind in d's list
    dop = np.repeat(np.arange(N, dtype=np.int64), np.diff(s.dep_off))
    src = kop_of_op[s.dep]
    ent = 2 * kop_of_op[dop] + s.dep_kind.astype(np.int64)
    order = np.lexsort((ent, src))
    soff = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=N)[:N], out=soff[1:])
    wait0 = np.diff(s.dep_off)[op_of_kop].astype(np.int32)
    tables = {"op_kind": kind.astype(np.int8), "op_match": match.astype(np.int32),
              "op_soff": soff, "op_succ": ent[order].astype(np.int32), "op_wait0": wait0,
              "op_of_kop": op_of_kop}
    plan = replace(plan, msg_off=msg_off, msg_dst=dst, msg_pkts=pk.astype(np.int32))
    return plan, tables


def empty_tables(n_endpoints: int) -> dict:
    """Stand-ins for runs without a schedule."""
    z32 = np.zeros(0, np.int32)
    return {"op_kind": np.zeros(0, np.int8), "op_match": z32, "op_soff": np.zeros(1, np.int64),
            "op_succ": z32, "op_wait0": z32, "op_of_kop": np.zeros(0, np.int64)}


def kernel_arrays(plan, tables: dict) -> dict:
    """The Messages group's arrays for one rank: the static tables (shared) and fresh copies
    of the per-operation state (each rank writes its own operations)."""
    pk = np.asarray(plan.msg_pkts, dtype=np.int32)
    N = pk.size
    kind = tables["op_kind"]
    sched = plan.kind == "schedule"
    out = dict(msg_off=np.asarray(plan.msg_off, dtype=np.int64), msg_dst=np.asarray(plan.msg_dst, np.int32),
               msg_pkts=pk, msg_recv=np.zeros(N, np.int32),
               msg_left=np.where(kind == OP_SEND, pk, 0).astype(np.int32) if sched else pk.copy(),
               op_kind=kind, op_match=tables["op_match"], op_soff=tables["op_soff"],
               op_succ=tables["op_succ"])
    if not sched:
        out.update(no_schedule())
        return out
    most = int(np.diff(plan.msg_off).max()) if N else 0
    out.update(op_wait=tables["op_wait0"].copy(), op_post=np.zeros(N, np.int32),
               op_done=np.full(N, -1, np.int32), op_arr=np.full(N, -1, np.int32),
               op_heap=np.zeros(N, np.int32), op_work=np.zeros(2 * most + 2, np.int32))
    return out


def no_schedule() -> dict:
    """The schedule rows of the Messages group for a run without a schedule."""
    z32 = np.zeros(0, np.int32)
    return dict(op_kind=np.zeros(0, np.int8), op_match=z32, op_soff=np.zeros(1, np.int64),
                op_succ=z32, op_wait=z32, op_post=z32, op_done=z32, op_arr=z32, op_heap=z32,
                op_work=np.zeros(2, np.int32))


def is_finite(plan) -> bool:
    """A finite workload: the run ends when its messages (or operations) are done."""
    return plan.kind in ("messages", "schedule")




def total_flits(prep) -> int:
    """Flits a finite workload sends (its sends' packets), -1 for a load pattern."""
    tr = prep.traffic
    if not is_finite(tr):
        return -1
    pk = np.asarray(tr.msg_pkts, dtype=np.int64)
    if tr.kind == "schedule":
        pk = pk[prep.workload["op_kind"] == OP_SEND]
    return int(pk.sum()) * prep.rp.packet_size
