"""Several jobs sharing the network: each a schedule on endpoints of its own.

A config's ``[[jobs]]`` entries (:mod:`pdes.config`) each name a schedule
pattern (a collective, an application skeleton, a GOAL trace: any traffic
pattern whose plan is a :class:`models.schedule.Schedule`) with its parameters,
and where its processes run.  Jobs are placed one after the other, as a batch
scheduler would, on the endpoints no earlier job holds:

* ``linear``: the first free endpoints in endpoint order (router by router);
* ``random``: free endpoints drawn by a seeded permutation (keyed by the seed and
  the job's index, so adding a job after it does not move it);
* ``racks``: the free endpoints rack by rack (racks in order, a rack's endpoints
  in endpoint order), so a job fills whole racks before it starts another;
* ``file``: the endpoints listed in ``placement_file``; ``list``: those of
  ``endpoints``; each must be free.

A job may start later (``start_cycle``): every operation of it that depends on
nothing then depends on a compute of that many cycles.  The jobs' schedules are
joined into one (processes job by job), which the engine runs like any schedule;
``job_proc_off`` says which processes are whose.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from models.core.errors import ParameterError
from models.placement import read_placement_file
from models.schedule import DEP_DONE, OP_COMPUTE, check, make_schedule

PLACEMENTS = ("linear", "random", "racks", "file", "list")
JOB_KEYS = ("name", "pattern", "start_cycle", "placement", "placement_file", "endpoints")
"""The keys of a job that are not its pattern's parameters."""

_RANDOM_TAG = 0x10B5


def job_endpoints(job: dict, index: int, free: np.ndarray, n: int, seed: int,
                  n_endpoints: int, rack_of=None) -> np.ndarray:
    """The endpoints of a job's ``n`` processes among the ``free`` ones (sorted);
    ``rack_of``: the rack of every endpoint (for ``racks``)."""
    key = f"jobs.{index}"
    how = job["placement"]
    if how == "racks":
        free = free[np.lexsort((free, rack_of[free]))]
    if how in ("linear", "random", "racks"):
        if n > free.size:
            raise ParameterError(f"{key}.procs: {n} processes, but only {free.size} endpoints are "
                                 "free after the jobs before it")
        if how in ("linear", "racks"):
            return free[:n]
        return np.random.default_rng([int(seed), _RANDOM_TAG, index]).permutation(free)[:n]
    if how == "file":
        eps = read_placement_file(job["placement_file"], n_endpoints, f"{key}.placement_file")
        what = f"{key}.placement_file"
    else:
        eps = np.asarray(job["endpoints"] or [], dtype=np.int64)
        what = f"{key}.endpoints"
        bad = eps[(eps < 0) | (eps >= n_endpoints)]
        if bad.size:
            raise ParameterError(f"{what}: endpoint {int(bad[0])} is not in 0..{n_endpoints - 1}")
    if eps.size < n:
        raise ParameterError(f"{what}: lists {eps.size} endpoints for {n} processes")
    eps = eps[:n]
    if np.unique(eps).size != eps.size:
        raise ParameterError(f"{what}: an endpoint is listed twice")
    taken = eps[~np.isin(eps, free)]
    if taken.size:
        raise ParameterError(f"{what}: endpoint {int(taken[0])} belongs to an earlier job")
    return eps


def _delayed(s, start: int):
    """The schedule ``s`` with every operation that depends on nothing waiting for a compute
    of ``start`` cycles first (one per process, its new first operation)."""
    P, N = s.n_procs, s.n_ops
    new_off = s.op_off + np.arange(P + 1, dtype=np.int64)       # one more op per process
    proc = s.op_proc()
    new_id = np.arange(N, dtype=np.int64) + proc + 1             # old op -> new
    first = new_off[:-1]                                         # the delay of each process
    kind = np.empty(N + P, np.int64)
    peer = np.empty(N + P, np.int64)
    size = np.empty(N + P, np.int64)
    tag = np.empty(N + P, np.int64)
    kind[first], peer[first], size[first], tag[first] = OP_COMPUTE, -1, start, 0
    kind[new_id], peer[new_id], size[new_id], tag[new_id] = s.op_kind, s.op_peer, s.op_size, s.op_tag
    dop = np.repeat(np.arange(N, dtype=np.int64), np.diff(s.dep_off))
    free = np.nonzero(np.diff(s.dep_off) == 0)[0]
    op = np.concatenate([new_id[dop], new_id[free]])
    on = np.concatenate([new_id[s.dep], first[proc[free]]])
    dk = np.concatenate([s.dep_kind.astype(np.int64), np.full(free.size, DEP_DONE)])
    return make_schedule(s.proc_ep, new_off, kind, peer, size, tag, op, on, dk, s.description)


def combine(topo, seed: int, jobs: list, build) -> tuple:
    """``(schedule, names, job_proc_off, descriptions)``: the jobs' schedules joined, each
    on its own endpoints.  ``build(index, job)`` returns the job pattern's plan with its
    processes placed linearly (on endpoints 0..n-1)."""
    E = topo.n_endpoints
    free = np.arange(E, dtype=np.int64)
    if topo.is_degraded:       # no process on a failed or cut-off router (models.faults)
        free = free[topo.endpoint_up]
    parts, names, descs = [], [], []
    for i, job in enumerate(jobs):
        plan = build(i, job)
        if plan.kind != "schedule":
            raise ParameterError(f"jobs.{i}.pattern: '{job['pattern']}' is not a schedule (a "
                                 "collective, an application skeleton or a GOAL trace); load "
                                 "patterns and finite exchanges cannot run as jobs")
        s = plan.ops
        eps = job_endpoints(job, i, free, s.n_procs, seed, E,
                            np.asarray(topo.group)[topo.endpoint_router])
        free = np.setdiff1d(free, eps, assume_unique=True)
        s = replace(s, proc_ep=eps[s.proc_ep.argsort().argsort()] if s.n_procs else eps)
        if job["start_cycle"]:
            s = _delayed(s, job["start_cycle"])
        parts.append(s)
        names.append(job["name"])
        descs.append(plan.description)
    P = np.cumsum([0] + [s.n_procs for s in parts]).astype(np.int64)
    O = np.cumsum([0] + [s.n_ops for s in parts]).astype(np.int64)
    op_off = np.concatenate([[0]] + [s.op_off[1:] + O[j] for j, s in enumerate(parts)])
    cat = lambda f: np.concatenate([getattr(s, f) for s in parts])   # noqa: E731
    peer = np.concatenate([np.where(s.op_kind == OP_COMPUTE, -1, s.op_peer.astype(np.int64) + P[j])
                           for j, s in enumerate(parts)])
    dop = np.concatenate([np.repeat(np.arange(s.n_ops, dtype=np.int64), np.diff(s.dep_off)) + O[j]
                          for j, s in enumerate(parts)])
    on = np.concatenate([s.dep + O[j] for j, s in enumerate(parts)])
    sched = make_schedule(cat("proc_ep"), op_off, cat("op_kind"), peer, cat("op_size"),
                          cat("op_tag"), dop, on, cat("dep_kind"),
                          "; ".join(f"{n}: {d}" for n, d in zip(names, descs)))
    return check(sched, "jobs", E), names, P, descs
