"""Running a simulation: the public entry.

:func:`simulate` runs a resolved config on the ranks of a communicator (or in this process),
:func:`run_local` in this process, optionally split into parts by hand.  Both build the run
(:func:`pdes.build.prepare`, :func:`pdes.build.make_parts`), size its windows
(:mod:`pdes.loop`), continue a checkpoint if asked (:mod:`pdes.checkpoint`) and run the
window loop (:class:`pdes.loop.Engine`), whose results :mod:`pdes.reduce` reduces.  The
buffers and the memory estimate are sized in :mod:`pdes.sizing`; the loop's state, the
checkpoint plan and the errors that end a run early are in :mod:`pdes.loopstate`.
"""
from __future__ import annotations

import time

import numpy as np

from pdes.build import Prepared, make_parts, prepare
from pdes.checkpoint import audit_restored, restore
from pdes.comm import LocalGroup, MpiGroup
from pdes.compiling import compile_parts
from pdes.loop import Engine, lookahead_of, sync_period, window_for
from pdes.loopstate import CheckpointPlan, LoopState


def run_local(cfg: dict, owner=None, progress=None, prep: Prepared | None = None,
              checkpoint: CheckpointPlan | None = None, restart=None) -> dict:
    """Run a resolved config in this process, optionally split into parts by ``owner``.

    With ``owner`` (router -> part), every part is simulated here and the
    outboxes are moved by hand at window boundaries: the same contract the
    MPI run uses, without MPI.  ``checkpoint`` and ``restart`` (an opened
    :class:`pdes.checkpoint.Checkpoint` to continue from) as for :func:`simulate`.
    The kernels are compiled (or loaded) first under the node's compile lock
    (:func:`pdes.compiling.compile_lock`), as :func:`simulate` does: processes
    started together on a node with an empty cache compile a kernel once.
    """
    prep = at_restart(prep or prepare(cfg), restart)
    if owner is not None and len(owner) != prep.topo.n_routers:   # restarted after a reroute
        import partition as PT
        owner = PT.assign(prep.topo, prep.link_latency, len(set(np.asarray(owner).tolist())),
                          cfg["run"]["partition"], seed=cfg["measure"]["seed"])
    owner = np.zeros(prep.topo.n_routers, np.int32) if owner is None else np.asarray(owner, np.int32)
    la = lookahead_of(prep.topo, owner, prep.link_latency)
    W = window_for(la, sync_period(prep))
    parts = make_parts(prep, owner, sorted(set(owner.tolist())), W)
    # as simulate's start: a kernel missing from the cache is compiled by one process of
    # the node at a time (its compile lock), the others then load it
    compile_parts(parts)
    group = LocalGroup(parts)
    resume = _restore(restart, prep, group)
    engine = Engine(prep, group, W, la, progress=progress, checkpoint=checkpoint)
    res = engine.run(resume)
    res["prepared"] = engine.prep        # the degraded network's after a reroute
    return res


def at_restart(prep: Prepared, restart) -> Prepared:
    """The network a run restarted from ``restart`` continues on: the degraded one when the
    checkpoint is from after a reroute (``faults.at_cycle``), else ``prep``."""
    f = prep.failure
    if restart is not None and f is not None and restart.cycle > f.reroute_at:
        return f.degraded
    return prep


def _restore(restart, prep: Prepared, group) -> LoopState | None:
    """The parts of ``group`` set to the state of checkpoint ``restart``; its loop state."""
    if restart is None:
        return None
    state = restore(restart, prep, group.parts)
    if prep.failure is not None and state.cycle > prep.failure.at_cycle:
        from pdes.failure import resume        # after a failure: its ports down again
        for p in group.parts:
            resume(p, prep)
    audit_restored(restart, prep, group)       # conservation, before the first cycle
    return state


def _node_of(comm, prep: Prepared):
    """(the ranks of ``comm`` on this node, whether this call made it): the node communicator
    of the run's node-shared tables when they were built over ``comm``, else a new split."""
    if comm is None or comm.Get_size() == 1:
        return None, False
    share = prep.share
    if share is not None and share.comm is comm and share.node is not None:
        return share.node, False
    from mpi4py import MPI
    return comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank()), True


def _start(cfg: dict, comm, prep: Prepared | None, on_partition=None):
    """What :func:`simulate` does before the first cycle, up to the kernels: the prepared run,
    the partition, its report, lookahead and window, the group of parts, and the start-up
    times so far."""
    import partition as PT

    size = 1 if comm is None else comm.Get_size()
    rank = 0 if comm is None else comm.Get_rank()
    prep = prep or prepare(cfg, comm if size > 1 else None)
    t = time.perf_counter()
    owner = PT.assign(prep.topo, prep.link_latency, size, cfg["run"]["partition"],
                      seed=cfg["measure"]["seed"], max_imbalance=cfg["run"]["max_imbalance"])
    rep = PT.report(prep.topo, owner, prep.link_latency)
    la = lookahead_of(prep.topo, owner, prep.link_latency)
    W = window_for(la, sync_period(prep))
    t_partition = time.perf_counter() - t
    if on_partition is not None:
        on_partition(rep, W)
    t = time.perf_counter()
    if size == 1:
        group = LocalGroup(make_parts(prep, owner, [0], W))
    else:
        group = MpiGroup(comm, make_parts(prep, owner, [rank], W)[0])
    times = {**prep.timings, "partition_s": t_partition, "state_s": time.perf_counter() - t}
    return prep, rep, la, W, group, times


def _compile(group, comm, prep: Prepared, exchange: bool) -> dict:
    """Compile the parts' kernels or load them from the cache, one compiler per node
    (:func:`pdes.compiling.compile_parts`)."""
    node, made = _node_of(comm, prep)
    try:
        return compile_parts(group.parts, comm if comm is not None and comm.Get_size() > 1
                             else None, node, exchange=exchange)
    finally:
        if made:
            node.Free()


def compile_kernels(cfg: dict, comm=None, prep: Prepared | None = None) -> dict:
    """Compile (or load from the cache) every kernel a run of ``cfg`` on the ranks of ``comm``
    needs, without running a cycle: the same start as :func:`simulate` (so the same types),
    then the router stage of its routing kernel and the exchange kernels, one compiler per
    node.  Returns :func:`pdes.compiling.compile_parts`' report, with ``prepared``."""
    prep, _rep, _la, _W, group, _times = _start(cfg, comm, prep)
    info = _compile(group, comm, prep, exchange=True)
    info["prepared"] = prep
    return info


def simulate(cfg: dict, comm=None, progress=None, prep: Prepared | None = None,
             on_partition=None, checkpoint: CheckpointPlan | None = None, restart=None,
             on_ready=None) -> dict:
    """Run a resolved config on the ranks of ``comm`` (``None`` = this process only).

    Every rank builds the same topology and tables, takes the routers that
    :func:`partition.assign` gives it, and runs the window loop; results
    (identical on every rank) are returned everywhere.  The partition report
    is in ``res["partition"]``.  ``checkpoint`` says when to write checkpoints
    (:class:`~pdes.loopstate.CheckpointPlan`; :class:`~pdes.loopstate.CheckpointStop` is raised on every rank
    when the run stops after one); ``restart``, an opened
    :class:`pdes.checkpoint.Checkpoint` of this config, is the state to
    continue from, on any number of ranks.  ``on_ready(timings)`` is called before the first
    cycle with the start-up times so far (``prepare``'s, ``partition_s``, ``state_s``,
    ``compile_s``) and, under ``kernels``, whether the kernels were compiled or loaded
    (:func:`pdes.compiling.compile_parts`; also ``res["kernels"]``).  The kernels are
    compiled by one rank per node first, the node's other ranks then load them.
    """
    size = 1 if comm is None else comm.Get_size()
    t0 = time.perf_counter()
    if restart is not None:          # after a reroute: the degraded network's state
        prep = at_restart(prep or prepare(cfg, comm if size > 1 else None), restart)
    prep, rep, la, W, group, startup = _start(cfg, comm, prep, on_partition)
    t = time.perf_counter()
    kernels = _compile(group, comm, prep, exchange=size > 1)   # no cycle runs
    startup["compile_s"] = time.perf_counter() - t
    t = time.perf_counter()
    resume = _restore(restart, prep, group)
    startup["state_s"] += time.perf_counter() - t
    if on_ready is not None:
        on_ready({**startup, "kernels": kernels})
    engine = Engine(prep, group, W, la, progress=progress, checkpoint=checkpoint)
    res = engine.run(resume)
    prep = engine.prep                   # the degraded network's after a reroute
    res["timing"].update(startup)
    res["timing"].update(getattr(group, "timing", {}))   # rank-local exchange breakdown
    res["prepared"] = prep
    res["partition"] = rep
    res["kernels"] = kernels
    res["timing"]["total_s"] = time.perf_counter() - t0
    return res
