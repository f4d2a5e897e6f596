"""The conservative window loop.

:class:`Engine` runs the windows of one or more :class:`~pdes.state.PartState` objects and a
group (:mod:`pdes.comm`) that moves their outboxes at every window boundary and reduces
their statistics (:mod:`pdes.reduce`).  A window is at most the lookahead (the smallest
latency of a cut link), so nothing a part sends is needed by another part before the
exchange; windows also end at every multiple of :func:`sync_period` (sample boundaries and
routing epochs).

Measurement follows BookSim's latency mode: warm-up, a measurement window
``[m0, m1)`` in which created packets are *measured*, then a drain in which
injection continues until every measured packet has been delivered (or the
drain limit passes: the run is saturated).  Every decision is taken at a
sample boundary (a multiple of ``measure.sample_period``), on globally
reduced integer counters, so it is identical for any number of ranks.

Sample boundaries are also where checkpoints are taken (:class:`~pdes.loopstate.CheckpointPlan`,
:mod:`pdes.checkpoint`): every partition's windows end there, so the state is the same for
any partition, and :meth:`Engine.run` continues from a checkpoint's
:class:`~pdes.loopstate.LoopState`.
"""
from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from models.core import params as prm_slots
from models.core.record import (C_CREATED, C_DELIVERED, C_INJECTED, C_MOVES, ERR_CREDIT,
    ERR_OUTBOX, ERR_ROUTE, ERR_VC, ERR_VC_ORDER, S_CREATED_MEAS, S_DELIVERED_FLITS,
    S_DELIVERED_MEAS, S_DROPPED_MEAS, S_INFLIGHT, S_LAST_MOVE)
from pdes import interrupt, reduce
from pdes.checkpoint import save
from pdes.comm import LocalGroup
from pdes.failure import carry_over, fail, restore_degraded
from pdes.kernels.schedule import post_initial
from pdes.workload import is_finite, total_flits
from pdes.loopstate import CheckpointPlan, CheckpointStop, LoopState, SimulationError


# --------------------------------------------------------------------------- windows
def epoch_of(prep) -> int:
    """Cycles between the routing's occupancy snapshots, 0 if it reads none."""
    return int(prep.plan.snapshot_every)


def sync_period(prep) -> int:
    """Every window must divide this: the sample period and the routing epoch."""
    sp = prep.cfg["measure"]["sample_period"]
    ep = epoch_of(prep)
    return math.gcd(sp, ep) if ep else sp


def lookahead_of(topo, owner, link_latency) -> int:
    """Minimum latency over links whose ends are owned by different parts (0 if none)."""
    owner = np.asarray(owner)
    cut = owner[topo.links[:, 0]] != owner[topo.links[:, 1]]
    if not np.any(cut):
        return 0
    return int(np.asarray(link_latency)[cut].min())


def window_for(lookahead: int, sync: int) -> int:
    """Longest window: the lookahead, but no longer than the sync period.

    Windows also end at every multiple of ``sync`` (sample boundaries and
    routing epochs), so a window is ``min(lookahead, cycles to the next
    multiple of sync)``; with no cut link (one part) it is the sync period.
    """
    if lookahead <= 0 or lookahead >= sync:
        return sync
    return lookahead



# --------------------------------------------------------------------------- the loop
class Engine:
    """The conservative window loop over the parts of this process."""

    def __init__(self, prep, group, window: int, lookahead: int, progress=None,
                 checkpoint: CheckpointPlan | None = None):
        self.prep = prep
        self.group = group
        self.parts = group.parts
        self.window = window
        self.lookahead = lookahead
        self.progress = progress  # callable(str) or None
        self.checkpoint = checkpoint
        self._snap_local = None   # _snapshot: this process's share of the occupancy snapshot
        self._active = None       # (prep, its active endpoints): read at every sample boundary

    # ---------------------------------------------------------------- helpers
    def _set_window(self, m0, m1):
        for p in self.parts:
            p.prm[prm_slots.PR_M0] = m0
            p.prm[prm_slots.PR_M1] = m1

    def _raise_status(self, status, T):
        algo = self.prep.cfg["routing"]["algorithm"]
        if status == ERR_VC:
            raise SimulationError(f"routing '{algo}' asked for a VC >= num_vcs near cycle {T}")
        if status == ERR_ROUTE:
            raise SimulationError(f"routing '{algo}' found no output port near cycle {T}")
        if status == ERR_OUTBOX:
            raise SimulationError("outbox overflow: window longer than the lookahead (engine bug)")
        if status == ERR_VC_ORDER:
            raise SimulationError(f"routing '{algo}' lowered the VC class along a path near cycle "
                                  f"{T} (its VC scheme would not be deadlock-free)")
        if status == ERR_CREDIT:
            raise SimulationError("credit FIFO overflow: more credits than buffer slots (engine bug)")
        raise SimulationError(f"kernel status {status}")

    # ------------------------------------------------------------------- run
    def initial_state(self) -> LoopState:
        """The loop state at cycle 0: warm-up (a finite exchange: measured from cycle 0)."""
        if is_finite(self.prep.traffic):
            return LoopState(phase="exchange", m0=0,
                             phase_wall={"warmup": 0.0, "measure": 0.0, "drain": 0.0, "exchange": 0.0})
        return LoopState()

    def run(self, resume: LoopState | None = None) -> dict:
        """Run the window loop to the end of the measurement; from ``resume`` (the loop state
        of a checkpoint, its parts restored by :func:`pdes.checkpoint.restore`) if given."""
        prep = self.prep
        SP = prep.cfg["measure"]["sample_period"]
        sync = sync_period(prep)
        assert SP % sync == 0 and self.window <= sync
        if resume is None:
            s = self.initial_state()
        else:
            s = replace(resume, series=list(resume.series), phase_wall=dict(resume.phase_wall))
        assert s.cycle % SP == 0
        self._set_window(s.m0, s.m1)
        self._wall0 = self._last_print = self._t_phase = time.perf_counter()
        epoch = epoch_of(prep)
        assert not epoch or epoch % sync == 0
        # a finite exchange: every packet is measured, the run ends when all arrived
        self._total_flits = total_flits(prep)
        if resume is None and prep.traffic.kind == "schedule":
            for p in self.parts:        # cycle 0: the operations without dependencies
                post_initial(p.group_of("Messages"), p.arrays["ep_gid"])
        failure = prep.failure
        inkernel = self._kernel_snapshots(epoch)
        while True:
            if failure is not None:
                if s.cycle == failure.at_cycle:
                    fail(self.group, self.prep.topo, failure, s.cycle)
                if s.cycle == failure.reroute_at and self.prep is not failure.degraded:
                    self._reroute(s)
                    inkernel = self._kernel_snapshots(epoch)
            if inkernel:        # the kernel takes the snapshots: windows end at sample boundaries
                step = SP - s.cycle % SP
            else:
                step = min(self.window, sync - s.cycle % sync)   # windows end at multiples of sync
            if failure is not None:                          # ... at the failure and reroute
                for c in (failure.at_cycle, failure.reroute_at):
                    if s.cycle < c:
                        step = min(step, c - s.cycle)
            self._advance(s, step)
            if epoch and not inkernel and s.cycle % epoch == 0:
                self._snapshot(s.cycle)
            if s.cycle % SP == 0 and self._sample_boundary(s):
                break
        s.phase_wall[s.phase] += time.perf_counter() - self._t_phase
        res = reduce.results(self.prep, self.group, s, self.window, self.lookahead)
        if resume is not None:
            res["restarted_from_cycle"] = resume.cycle
        return res

    def _kernel_snapshots(self, epoch: int) -> bool:
        """Whether the window loop takes the routing's snapshots itself (``PR_SNAP``): a part
        that holds the whole network, in one process.  Otherwise windows end at every
        snapshot (every ``epoch`` cycles) and :meth:`_snapshot` sums the parts' and ranks'."""
        own = bool(epoch) and len(self.parts) == 1 and isinstance(self.group, LocalGroup)
        for p in self.parts:
            p.prm[prm_slots.PR_SNAP] = epoch if own else 0
        return own

    def _advance(self, s: LoopState, step: int) -> None:
        """One window of ``step`` cycles on every part, then the exchange of their outboxes."""
        t0 = time.perf_counter()
        for p in self.parts:
            status = p.advance(s.cycle, s.cycle + step)
            if status != 0:
                self._raise_status(status, s.cycle)
        t1 = time.perf_counter()
        self.group.exchange()
        t2 = time.perf_counter()
        s.kernel_s += t1 - t0
        s.exchange_s += t2 - t1
        s.cycle += step
        interrupt.raise_pending()     # a Ctrl-C Python dropped ends the run here

    def _reroute(self, s: LoopState) -> None:
        """At ``faults.at_cycle + reroute_cycles`` (collective): the run goes on as a run of the
        degraded network, partitioned anew, from the intact one's state (:mod:`pdes.failure`)."""
        import partition as PT
        from pdes.build import make_parts
        from pdes.comm import LocalGroup, MpiGroup
        G2, smp = carry_over(self.prep, self.group, s.cycle)
        deg, cfg, group = self.prep.failure.degraded, self.prep.cfg, self.group
        mpi = isinstance(group, MpiGroup)
        n = group.size if mpi else len(group.parts)
        owner = PT.assign(deg.topo, deg.link_latency, n, cfg["run"]["partition"],
                          seed=cfg["measure"]["seed"], max_imbalance=cfg["run"]["max_imbalance"])
        la = lookahead_of(deg.topo, owner, deg.link_latency)
        W = window_for(la, sync_period(deg))
        if mpi:
            new = MpiGroup(group.comm, make_parts(deg, owner, [group.rank], W)[0])
        else:
            new = LocalGroup(make_parts(deg, owner, sorted(set(owner.tolist())), W))
        restore_degraded(new.parts, deg, G2, smp, s.m0, s.m1)
        self.prep, self.group, self.parts, self.window, self.lookahead = deg, new, new.parts, W, la
        reduce.audit(deg, new)                 # conservation across the carry-over

    def _sample_boundary(self, s: LoopState) -> bool:
        """At a sample boundary: record the sample, move between phases, decide whether the run
        ends (True) and, if it goes on, write a checkpoint when one is due."""
        m = self.prep.cfg["measure"]
        T = s.cycle
        smp = reduce.sample(self.group)
        st = reduce.stats(self.group)
        s.series.append((T, int(smp[C_DELIVERED]), int(smp[C_INJECTED]), int(smp[C_CREATED]),
                         int(smp[C_MOVES]), int(st[S_INFLIGHT])))
        if self._active is None or self._active[0] is not self.prep:   # (a reroute: a new one)
            self._active = (self.prep, self.prep.active_endpoints)
        rate = smp[C_DELIVERED] / (m["sample_period"] * self._active[1])
        now = time.perf_counter()
        self._next_phase(s, rate, now)
        s.prev_rate = rate
        finished = self._finished(s, st)
        if self.progress and (now - self._last_print > 1.0 or finished):
            self._last_print = now
            self.progress(f"cycle {T:>8d}  {s.phase:<7s}  accepted {rate:.4f} flits/cycle/endpoint"
                          f"  in flight {int(st[S_INFLIGHT])}  {now - self._wall0:6.1f}s")
        if finished:
            return True
        if self.checkpoint is not None:
            wall = {**s.phase_wall, s.phase: s.phase_wall[s.phase] + now - self._t_phase}
            self._checkpoint(T, lambda: replace(s, phase_wall=wall))
        return False

    def _next_phase(self, s: LoopState, rate, now: float) -> None:
        """Warm-up ends (fixed length, or the accepted rate converged), then the measurement."""
        m = self.prep.cfg["measure"]
        T = s.cycle
        if s.phase == "warmup" and T >= m["warmup_cycles"]:
            done = m["warmup"] == "fixed"
            if not done and s.prev_rate is not None:
                done = abs(rate - s.prev_rate) <= m["warmup_tolerance"] * max(s.prev_rate, 1e-12)
            if not done and T >= m["warmup_cycles"] + m["max_warmup_cycles"]:
                done = True
            if done:
                s.phase_wall["warmup"] += now - self._t_phase
                self._t_phase = now
                s.phase = "measure"
                s.m0, s.m1 = T, T + m["measure_cycles"]
                self._set_window(s.m0, s.m1)
        elif s.phase == "measure" and T >= s.m1:
            s.phase_wall["measure"] += now - self._t_phase
            self._t_phase = now
            s.phase = "drain"

    def _finished(self, s: LoopState, st) -> bool:
        """Whether the run ends at this sample boundary (every packet delivered, drained,
        saturated, or ``run.max_cycles``); a deadlock raises."""
        m = self.prep.cfg["measure"]
        T = s.cycle
        finished = self._total_flits >= 0 and int(st[S_DELIVERED_FLITS]) == self._total_flits
        if s.phase == "drain":
            outstanding = int(st[S_CREATED_MEAS] - st[S_DELIVERED_MEAS] - st[S_DROPPED_MEAS])
            if outstanding == 0:
                finished = True
            elif T - s.m1 >= m["drain_cycles"]:
                s.saturated = True
                s.reason = (f"{outstanding} measured packets not delivered within "
                            f"drain_cycles = {m['drain_cycles']} after the window")
                finished = True
        if st[S_INFLIGHT] > 0 and T - 1 - st[S_LAST_MOVE] >= m["watchdog_cycles"]:
            if m["on_deadlock"] == "error":
                self._deadlock(T, st)
            s.saturated = True        # measure.on_deadlock = "saturated": the run ends here
            s.reason = self._deadlock_report(T, st)
            return True
        max_cycles = self.prep.cfg["run"]["max_cycles"]
        if max_cycles and T >= max_cycles and not finished:
            s.saturated = True
            s.reason = s.reason or f"run.max_cycles = {max_cycles} reached in phase {s.phase}"
            finished = True
        return finished

    def _checkpoint(self, T: int, state) -> None:
        """At sample boundary ``T``: write a checkpoint of ``state()`` when one is due or asked
        for (a signal on any rank, ``stop_at`` reached), and stop after it when asked
        (:class:`CheckpointStop`)."""
        plan = self.checkpoint
        signum = int(self.group.max(np.array([plan.requested()], np.int64))[0])
        stop = signum > 0 or (plan.stop_at > 0 and T >= plan.stop_at)
        if not stop and not (plan.every and T % plan.every == 0):
            return
        save(self.prep, self.group, state(), plan.path)
        if plan.on_write is not None:
            plan.on_write(T)
        if stop:
            raise CheckpointStop(T, plan.path, signum)

    def _snapshot(self, T):
        """Network-wide output-port occupancy at the start of cycle ``T`` (``RoutingPlan.snapshot_every``)."""
        snap = self.parts[0].arrays["snap"]
        local = self._snap_local
        if local is None or local.shape != snap.shape or local.dtype != snap.dtype:
            local = self._snap_local = np.zeros_like(snap)
        else:
            local[:] = 0
        for p in self.parts:
            p.port_occupancy(T - 1, local)
        snap[:] = self.group.sum(local)

    def _deadlock(self, T, st):
        """Stop the run with the watchdog's report and the first blocked input VCs of this
        process's parts."""
        blocked = []
        for p in self.parts:
            nz = np.nonzero(p.arrays["ib_cnt"])[0][:8]
            for ivc in nz:
                P = ivc // p.nv
                r = int(p.router_gid[p.arrays["port_router"][P]])
                blocked.append(f"router {r} port {int(P - p.arrays['port_off'][p.arrays['port_router'][P]])}"
                               f" vc {int(ivc % p.nv)}")
        raise SimulationError(f"{self._deadlock_report(T, st)}; blocked: {', '.join(blocked[:8])}")

    def _deadlock_report(self, T, st) -> str:
        """The watchdog's report, the same on every rank: how long nothing moved, the flits in
        flight, the routing and its VCs."""
        algo = self.prep.cfg["routing"]["algorithm"]
        return (f"deadlock: no flit moved for {self.prep.cfg['measure']['watchdog_cycles']} cycles "
                f"before cycle {T} with {int(st[S_INFLIGHT])} flits in flight (routing '{algo}', "
                f"num_vcs {self.prep.rp.num_vcs}, routing.vcs \"{self.prep.cfg['routing']['vcs']}\")")
