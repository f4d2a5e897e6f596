"""Reduction over the parts and ranks: the statistics counters at every sample boundary and,
when the window loop ends, the run's result dict (summary, counters, histograms, per-link
and per-endpoint counts, series, timings).

Every function here is collective: each rank calls it with its group
(:mod:`pdes.comm`), and every rank gets the same reduced values.
"""
from __future__ import annotations

import math
import resource
import sys

import numpy as np

from models.core.record import (HIST_OCTAVES, HIST_SUB, S_CREATED_MEAS, S_CREATED_PKTS,
    S_CREATED_WIN_FLITS, S_DELIVERED_FLITS, S_DELIVERED_MEAS, S_DELIVERED_WIN, S_DROPPED_FLITS,
    S_DROPPED_MEAS, S_DROPPED_PKTS, S_INFLIGHT,
    S_INJECTED_FLITS, S_INJECTED_WIN, S_LAST_DELIVERY, S_MAX_NLAT, S_MAX_PLAT, S_SUM_HOPS,
    S_SUM_NLAT, S_SUM_PLAT, S_SUM_PLAT_SQ, STAT_MAX)
from models.schedule import OP_SEND
from pdes.loopstate import INT32_MAX, LoopState, SimulationError
from pdes.workload import is_finite


# --------------------------------------------------------------------------- counters
def stats(group) -> np.ndarray:
    """The statistics counters ``st`` of every part of every rank: sums, but the largest value
    of the counters that are maxima (:data:`models.core.record.STAT_MAX`)."""
    parts = group.parts
    if len(parts) == 1:           # every sample boundary of a run on one rank
        st = parts[0].arrays["st"].copy()
        mx = st
    else:
        st = sum(p.arrays["st"] for p in parts)
        mx = np.max(np.stack([p.arrays["st"] for p in parts]), axis=0)
    total = group.sum(st)
    maxed = group.max(mx)
    for i in STAT_MAX:
        total[i] = maxed[i]
    return total


def sample(group) -> np.ndarray:
    """The sample counters ``smp`` summed over the parts and ranks; the parts' are cleared."""
    parts = group.parts
    smp = parts[0].arrays["smp"].copy() if len(parts) == 1 else \
        sum(p.arrays["smp"] for p in parts).copy()
    for p in group.parts:
        p.arrays["smp"][:] = 0
    return group.sum(smp)


def summed(group, name: str) -> np.ndarray:
    """A kernel array (a histogram) summed over the parts and ranks."""
    return group.sum(sum(p.arrays[name] for p in group.parts).copy())


def gathered(group, size: int, index_of) -> np.ndarray:
    """A global array of ``size`` counts from every part's ``index_of(part)`` = (global
    indices, values), summed over the ranks."""
    out = np.zeros(size, dtype=np.int64)
    for p in group.parts:
        idx, vals = index_of(p)
        out[idx] += vals
    return group.sum(out)


def _total(group, x: int) -> int:
    return int(group.sum(np.array([x], np.int64))[0])


# --------------------------------------------------------------------------- histograms
def hist_edges(hmax: int) -> np.ndarray:
    """Lower edge (cycles) of every latency histogram bin (:func:`pdes.kernels.cycle.hist_bin`):
    ``0 .. hmax - 1``, then ``HIST_SUB`` bins per octave ``[hmax 2^k, hmax 2^(k+1))``."""
    k = np.repeat(np.arange(HIST_OCTAVES, dtype=np.int64), HIST_SUB)
    j = np.tile(np.arange(HIST_SUB, dtype=np.int64), HIST_OCTAVES)
    base = np.int64(hmax) << k
    return np.concatenate([np.arange(hmax, dtype=np.int64), base + (base * j) // HIST_SUB])


def percentile(hist, edges, q: float) -> int:
    """The lower edge of the bin that holds quantile ``q`` of a histogram (-1 if empty)."""
    tot = hist.sum()
    if tot == 0:
        return -1
    return int(edges[np.searchsorted(np.cumsum(hist), math.ceil(q * tot))])


def exact_percentile(values: np.ndarray, q: float) -> float:
    """Quantile ``q`` of ``values`` by the rule :func:`percentile` applies to a histogram of
    1-cycle bins (the smallest value with at least ``ceil(q n)`` values at or below it), so
    that a job's percentiles and the run's agree; NaN when empty."""
    if values.size == 0:
        return float("nan")
    k = max(math.ceil(q * values.size), 1)
    return float(np.partition(values, k - 1)[k - 1])


def backlog_growth(series, m0: int, m1: int, packet_size: int) -> float | None:
    """Growth of the source-queue backlog over the window ``[m0, m1)``, in flits.

    The backlog after each sample of the window is the running sum of the flits
    created minus the flits injected; the growth is the least-squares slope of
    that curve times the window length.  ``None`` with fewer than 3 samples.
    """
    trend = _trend(series, m0, m1, packet_size, in_flight=False)
    return None if trend is None else trend[0]


def system_growth(series, m0: int, m1: int, packet_size: int) -> tuple[float, float] | None:
    """Growth over the window ``[m0, m1)`` of the flits in the system (source queues and
    network: the running sum of the flits created minus injected, plus the flits in flight
    at each sample), in flits, and its standard error: the least-squares slope of that curve
    and the slope's error, times the window length.  Flits a failure dropped
    (``faults.at_cycle``) leave the system: they are not growth.  ``None`` with fewer than 4
    samples."""
    return _trend(series, m0, m1, packet_size, in_flight=True)


def _trend(series, m0: int, m1: int, packet_size: int, in_flight: bool):
    """(growth, standard error) over the samples of ``[m0, m1)`` of the source-queue backlog
    (the running sum of the flits created minus injected) or, ``in_flight``, of the flits in
    the system (that backlog plus the flits in flight, the series' last column); ``None``
    with too few samples (3, or 4 for the system's standard error)."""
    rows = [r for r in series if m0 < r[0] <= m1]
    if len(rows) < (4 if in_flight else 3):
        return None
    t = np.array([r[0] for r in rows], dtype=np.float64)
    level = np.cumsum(np.array([r[3] * packet_size - r[2] for r in rows], dtype=np.float64))
    if in_flight:
        level += np.array([r[5] for r in rows], dtype=np.float64)
    x = t - t.mean()
    slope, icpt = np.polyfit(x, level, 1)
    res = level - (slope * x + icpt)
    se = float(np.sqrt((res @ res) / max(len(rows) - 2, 1) / (x @ x)))
    return float(slope * (m1 - m0)), se * (m1 - m0)


# --------------------------------------------------------------------------- results
def results(prep, group, state: LoopState, window: int, lookahead: int) -> dict:
    """The result dict of a run whose window loop ended in ``state`` (collective).

    Checks flit conservation first (created = delivered + queued + in flight).
    """
    st = stats(group)
    counts = _counts(prep, group)
    _audit(prep, st, counts)
    if not all(p.occupancy_ok() for p in group.parts):
        raise SimulationError("input port occupancy (ip_occ) differs from the buffers "
                              "(engine bug)")
    finite = is_finite(prep.traffic)
    wl = _schedule_results(prep, group) if prep.traffic.kind == "schedule" else None
    m0, m1, M = _measure_window(st, state, finite, wl)
    edges = hist_edges(prep.cfg["measure"]["latency_hist_max"])
    n_act = prep.active_endpoints
    # a failure during the run: the sources of each part of the window (the intact network's
    # until the failure, ..., the degraded network's after the reroute), not only the last's
    div = n_act if prep.failure is None else prep.failure.window_endpoints(m0, m1)
    loads = {"offered_load": int(st[S_CREATED_WIN_FLITS]) / (M * div),
             "injected_load": int(st[S_INJECTED_WIN]) / (M * div),
             "accepted_load": int(st[S_DELIVERED_WIN]) / (M * div)}
    if prep.failure is not None:     # packets a failure destroyed are lost, not late
        loads["dropped_load"] = int(st[S_DROPPED_MEAS]) * prep.rp.packet_size / (M * div)
    saturated, reason = _saturation(prep, st, state, loads, finite)
    hist_m = summed(group, "hist_msg") if finite else None
    summary = _message_summary(prep, st, hist_m, edges, M) if finite else {}
    if wl is not None:
        summary.update(_schedule_summary(prep, wl))
    jobs = job_results(prep, wl) if wl is not None and prep.traffic.job_names else None
    summary.update({"offered_load_config": float(prep.cfg["traffic"]["load"]), **loads})
    summary.update(_latency_summary(st, counts, edges))
    summary.update({
        "saturated": bool(saturated),
        "saturated_reason": reason,
        "cycles": int(state.cycle),
        "measure_start": int(m0),
        "measure_end": int(m1),
        "active_endpoints": n_act,
    })
    return {
        "summary": summary,
        "counters": _counters(st, counts, prep.failure is not None),
        "hist_packet_latency": counts["hist_plat"],
        "hist_latency_edges": edges,
        "hist_network_latency": counts["hist_nlat"],
        "hist_hops": counts["hist_hops"],
        "hist_message_latency": hist_m,
        "workload": wl,
        "jobs": jobs,
        "link_flits": counts["link"],
        "endpoint_injected": counts["ep_inj"],
        "endpoint_delivered": counts["ep_del"],
        "series": np.array(state.series, dtype=np.int64).reshape(-1, 6),
        "timing": {"wall_warmup_s": state.phase_wall["warmup"],
                   "wall_measure_s": state.phase_wall["measure"],
                   "wall_drain_s": state.phase_wall["drain"], "kernel_s": state.kernel_s,
                   "exchange_s": state.exchange_s, **prep.timings},
        "window": window,
        "lookahead": lookahead,
        "peak_rss_mb": peak_rss_mb(group),
        "next_hops": next_hops(group),
    }


def _counts(prep, group) -> dict:
    """Histograms, per-channel and per-endpoint counts, flits in flight and in source queues."""
    topo = prep.topo
    out = {name: summed(group, name) for name in ("hist_plat", "hist_nlat", "hist_hops")}
    out["link"] = gathered(group, 2 * topo.n_links,
                           lambda p: (p.out_channel[p.is_net], p.arrays["link_flits"][p.is_net]))
    out["ep_inj"] = gathered(group, topo.n_endpoints, lambda p: (p.ep_gid, p.arrays["ep_inj"]))
    out["ep_del"] = gathered(group, topo.n_endpoints, lambda p: (p.ep_gid, p.arrays["ep_del"]))
    out["held"] = _total(group, sum(p.flits_held() for p in group.parts))
    out["queued"] = _total(group, sum(p.source_queue_flits() for p in group.parts))
    return out


def audit(prep, group) -> None:
    """The conservation audit (:func:`_audit`) of the parts' state now (collective): a
    restart runs it once before the first cycle."""
    counts = {"held": _total(group, sum(p.flits_held() for p in group.parts)),
              "queued": _total(group, sum(p.source_queue_flits() for p in group.parts))}
    _audit(prep, stats(group), counts)


def _audit(prep, st, counts) -> None:
    """Every flit created is delivered, in a source queue or in the network."""
    created_flits = int(st[S_CREATED_PKTS]) * prep.rp.packet_size
    delivered, dropped = int(st[S_DELIVERED_FLITS]), int(st[S_DROPPED_FLITS])
    held, queued = counts["held"], counts["queued"]
    if not ((created_flits == delivered + dropped + queued + held)
            and (held == int(st[S_INFLIGHT]))):
        raise SimulationError(
            f"conservation audit failed: created {created_flits} flits != delivered {delivered}"
            + (f" + dropped {dropped}" if dropped else "")
            + f" + source queues {queued} + in flight {held} (kernel count {int(st[S_INFLIGHT])})")


def _measure_window(st, state: LoopState, finite: bool, wl=None) -> tuple[int, int, int]:
    """(start, end, length) of the measurement window; a finite exchange's is from cycle 0
    (every message posted) to its last delivery (the completion time); a schedule's to the
    cycle its last operation completes."""
    m0, m1 = state.m0, state.m1
    if wl is not None:
        M = max(int(wl["op_end"].max(initial=-1)) + 1, int(st[S_LAST_DELIVERY]) + 1
                if int(st[S_DELIVERED_FLITS]) else 1, 1)
        m0, m1 = 0, M
    elif finite:
        M = int(st[S_LAST_DELIVERY]) + 1 if int(st[S_DELIVERED_FLITS]) else 1
        m0, m1 = 0, M
    else:
        M = (m1 - m0) if m1 < INT32_MAX else 0
    if M == 0:
        raise SimulationError("the run ended before the measurement window started")
    return m0, m1, M


def _saturation(prep, st, state: LoopState, loads: dict, finite: bool) -> tuple[bool, str]:
    """(saturated, why): as the loop found, or the accepted load well below the offered one,
    or (load-driven) source queues that grew over the window."""
    saturated, reason = state.saturated, state.reason
    offered, accepted = loads["offered_load"], loads["accepted_load"]
    accepted += loads.get("dropped_load", 0.0)
    m = prep.cfg["measure"]
    tol = m["saturation_tolerance"]
    if not saturated and accepted < offered * (1.0 - tol):
        saturated = True
        what = "accepted load" if "dropped_load" not in loads else \
            "accepted load plus dropped load"
        reason = (f"{what} {accepted:.4f} is more than {100 * tol:g}% below the offered "
                  f"load {offered:.4f}")
    if not saturated and not finite:
        grew = backlog_growth(state.series, state.m0, state.m1, prep.rp.packet_size)
        limit = m["backlog_tolerance"] * int(st[S_CREATED_WIN_FLITS])
        if grew is not None and grew > limit and grew > prep.active_endpoints:
            saturated = True
            reason = (f"source queues grew by {grew:.0f} flits over the window (least-squares "
                      f"trend), more than {100 * m['backlog_tolerance']:g}% "
                      f"of the {int(st[S_CREATED_WIN_FLITS])} flits offered")
    if not saturated and not finite and prep.failure is None:
        # flits piling up in the network while the sources still keep up (a run just past
        # saturation in a short window): the same limit, and a rise the samples' scatter
        # around the trend does not explain (three standard errors). Not with a failure
        # during the run: its reroute's longer paths hold more flits in flight, a step that
        # is not congestion
        trend = system_growth(state.series, state.m0, state.m1, prep.rp.packet_size)
        limit = m["backlog_tolerance"] * int(st[S_CREATED_WIN_FLITS])
        if trend is not None:
            grew, se = trend
            if grew > limit and grew > prep.active_endpoints and grew > 3.0 * se:
                saturated = True
                reason = (f"flits in the network and source queues grew by {grew:.0f} over the "
                          f"window (least-squares trend, +- {se:.0f}), more than "
                          f"{100 * m['backlog_tolerance']:g}% of the "
                          f"{int(st[S_CREATED_WIN_FLITS])} flits offered")
    return saturated, reason


def _message_summary(prep, st, hist_m, edges, M: int) -> dict:
    """The summary of a finite exchange: completion time, messages, their latencies."""
    n_act = prep.active_endpoints
    created_flits = int(st[S_CREATED_PKTS]) * prep.rp.packet_size
    n = hist_m.sum()
    return {
        "workload": prep.traffic.description,
        "completion_cycles": M,
        "messages": int(prep.traffic.msg_pkts.size),
        "messages_completed": int(n),
        "total_flits": created_flits,
        "processes": n_act,
        "effective_throughput": created_flits / (M * n_act),
        "message_latency_mean": float((hist_m * edges).sum() / n) if n else float("nan"),
        "message_latency_p50": percentile(hist_m, edges, 0.5),
        "message_latency_p99": percentile(hist_m, edges, 0.99),
        "message_latency_max": int(edges[np.nonzero(hist_m)[0].max()]) if n else -1,
    }


def _schedule_results(prep, group) -> dict:
    """A schedule's per-operation start (post) and end (completion; -1: not completed)
    cycles and per-process finish cycles, in the schedule's numbering (collective)."""
    s = prep.traffic.ops
    N = s.n_ops

    def owned(p):       # the kernel ids of the part's operations
        off = p.arrays["msg_off"]
        eg = p.ep_gid.astype(np.int64)
        lo, n = off[eg], off[eg + 1] - off[eg]
        return np.repeat(lo - np.cumsum(n) + n, n) + np.arange(int(n.sum()), dtype=np.int64)

    post = gathered(group, N, lambda p: (owned(p), p.arrays["op_post"][owned(p)]))
    done = gathered(group, N, lambda p: (owned(p), p.arrays["op_done"][owned(p)]))
    back = prep.workload["op_of_kop"]
    start = np.empty(N, np.int64)
    end = np.empty(N, np.int64)
    start[back] = post
    end[back] = done
    end_or_0 = np.maximum(end, 0)
    nonempty = np.diff(s.op_off) > 0
    finish = np.zeros(s.n_procs, np.int64)
    if N:
        finish[nonempty] = np.maximum.reduceat(end_or_0, s.op_off[:-1][nonempty])
    start[end < 0] = -1            # not completed (a run stopped by run.max_cycles)
    return {"op_start": start, "op_end": end, "op_kind": s.op_kind, "proc_finish": finish,
            "proc_endpoint": s.proc_ep, "proc_op_offset": s.op_off}


def _schedule_summary(prep, wl) -> dict:
    """A schedule's counts: operations, those completed, the last process's finish."""
    s = prep.traffic.ops
    done = int((wl["op_end"] >= 0).sum())
    return {"messages": int((s.op_kind == OP_SEND).sum()),
            "operations": s.n_ops, "operations_completed": done,
            "processes": s.n_procs,
            "bytes_sent": int(s.op_size[s.op_kind == OP_SEND].sum()),
            "finish_mean": float(wl["proc_finish"].mean()) if s.n_procs else 0.0,
            "finish_max": int(wl["proc_finish"].max(initial=0))}


def job_results(prep, wl) -> dict:
    """Per job (:mod:`models.jobs`), from the per-operation cycles: its processes, when it
    started and completed (the cycle after its last operation), the bytes it sent, its
    achieved bandwidth (bytes per cycle per process, over its own span) and the latencies
    of its messages (from the send's post to the receive's completion)."""
    s = prep.traffic.ops
    off = prep.traffic.job_proc_off
    start, end = wl["op_start"], wl["op_end"]
    send = s.op_kind == OP_SEND
    out = {}
    for j, name in enumerate(prep.traffic.job_names):
        a, b = int(s.op_off[off[j]]), int(s.op_off[off[j + 1]])
        ops = slice(a, b)
        first = int(prep.cfg["jobs"][j]["start_cycle"]) if prep.cfg.get("jobs") else 0
        done = int(end[ops].max(initial=-1)) + 1
        snd = np.nonzero(send[ops])[0] + a
        lat = (end[s.match[snd]] - start[snd]).astype(np.int64)
        lat = lat[end[s.match[snd]] >= 0]
        nproc = int(off[j + 1] - off[j])
        span = max(done - first, 1)
        out[name] = {
            "processes": nproc, "operations": b - a,
            "operations_completed": int((end[ops] >= 0).sum()),
            "start_cycle": first, "completion_cycle": done, "cycles": done - first,
            "messages": int(snd.size), "bytes_sent": int(s.op_size[snd].sum()),
            "bandwidth_bytes_per_cycle_per_process": float(s.op_size[snd].sum()) / span / max(nproc, 1),
            "message_latency_mean": float(lat.mean()) if lat.size else float("nan"),
            "message_latency_p50": exact_percentile(lat, 0.5),
            "message_latency_p99": exact_percentile(lat, 0.99),
            "message_latency_max": int(lat.max()) if lat.size else -1,
        }
    return out


def _latency_summary(st, counts, edges) -> dict:
    """Packet and network latencies and hops of the measured packets."""
    n_meas = int(st[S_DELIVERED_MEAS])
    hist_p, hist_n = counts["hist_plat"], counts["hist_nlat"]
    return {
        "measured_packets": n_meas,
        "measured_packets_created": int(st[S_CREATED_MEAS]),
        "packet_latency_mean": st[S_SUM_PLAT] / n_meas if n_meas else float("nan"),
        "packet_latency_p50": percentile(hist_p, edges, 0.5),
        "packet_latency_p99": percentile(hist_p, edges, 0.99),
        "packet_latency_max": int(st[S_MAX_PLAT]) if n_meas else -1,
        "network_latency_mean": st[S_SUM_NLAT] / n_meas if n_meas else float("nan"),
        "network_latency_p50": percentile(hist_n, edges, 0.5),
        "network_latency_p99": percentile(hist_n, edges, 0.99),
        "network_latency_max": int(st[S_MAX_NLAT]) if n_meas else -1,
        "hops_mean": st[S_SUM_HOPS] / n_meas if n_meas else float("nan"),
    }


def _counters(st, counts, failure: bool = False) -> dict:
    """The run's integer totals (``/counters``; with a failure during the run, its drops)."""
    sums = {k: int(st[i]) for k, i in (
        ("created_packets", S_CREATED_PKTS), ("created_measured", S_CREATED_MEAS),
        ("injected_flits", S_INJECTED_FLITS), ("delivered_flits", S_DELIVERED_FLITS),
        ("delivered_measured", S_DELIVERED_MEAS), ("sum_packet_latency", S_SUM_PLAT),
        ("sum_packet_latency_sq", S_SUM_PLAT_SQ), ("sum_network_latency", S_SUM_NLAT),
        ("sum_hops", S_SUM_HOPS))}
    sums.update(source_queue_flits=counts["queued"], in_flight_flits=counts["held"])
    if failure:
        sums.update(dropped_flits=int(st[S_DROPPED_FLITS]), dropped_packets=int(st[S_DROPPED_PKTS]),
                    dropped_measured=int(st[S_DROPPED_MEAS]))
    return sums


def next_hops(group) -> dict:
    """The kind of the parts' next-hop tables, their bytes (all ranks) and the largest
    rank's (``none``, 0: the routing scans the distance rows)."""
    parts = group.parts
    kind = parts[0].next_hops["kind"] if parts else "none"
    mine = sum(p.next_hops["bytes"] for p in parts)
    total = _total(group, mine)
    most = int(group.max(np.array([mine], np.int64))[0])
    return {"kind": kind, "bytes": total, "bytes_max_rank": most}


def peak_rss_mb(group) -> float:
    """The largest peak resident memory of any rank's process so far, in MB (10^6 bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    peak *= 1 if sys.platform == "darwin" else 1024          # bytes on macOS, KiB on Linux
    return int(group.max(np.array([peak], np.int64))[0]) / 1e6
