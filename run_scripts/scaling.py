"""Strong scaling of the MPI engine: the same run on 1, 2, 4, 8 ... ranks.

    python run_scripts/scaling.py [--instances sf13,bdf19,gf41] [--ranks 1 2 4 8]
                                  [--cycles 10000] [-o scaling.h5] [--set key=value ...]
    python run_scripts/scaling.py --instances small --ranks 64 --cycles 400   # 64-rank check
    python run_scripts/scaling.py --table scaling.h5 [--project 64]            # reprint, project

Instances (uniform traffic, minimal routing, load 0.3, link latencies from the
layout, default router; ``--set`` adds overrides to every run):

* ``sf13``  -- Slim Fly q=13 p=9 (338 routers, 3,042 endpoints), 000 Sec. VI-B layout;
* ``bdf19`` -- BDF u=19 p=13 (7,620 routers, 99,060 endpoints);
* ``gf41``  -- Galaxyfly GF(41,61,4,10) (10,004 routers, 100,040 endpoints);
* ``small`` -- Slim Fly q=7 (98 routers), for rank counts up to 98.

Every run simulates a fixed number of cycles (``--cycles``: one tenth warm-up,
the rest measurement, no drain), so the work is the same on every rank count;
the summary therefore always says "saturated" (measured packets were still in
flight at the end) -- compare the accepted and offered loads instead.

For each instance and rank count (a 1-rank run is added unless
``--no-baseline``: it is the reference for speed-ups and results) the parent starts ``mpiexec -n R python
scaling.py --child ...``.  Each rank first warms up the Numba kernels on a tiny
network (not timed), then runs :func:`pdes.engine.simulate` on ``COMM_WORLD``.
Rank 0 gathers per rank: the engine's wall-clock kernel/exchange times, the
exchange breakdown of :class:`pdes.comm.MpiGroup` (pack, wait, unpack; wall and
thread CPU time), kernel CPU time, bytes sent, neighbour count, peak RSS, and
the partition report (lookahead, window, cut links, imbalance), and prints one
JSON line.  The parent prints a table, checks that the results (summary,
counters, histograms, per-link and per-endpoint counts, time series) are
bit-identical to the 1-rank run ("same" column), and writes everything to HDF5:
one group ``/<instance>/ranks_<R>`` per run (scalars as attributes, per-rank
figures as datasets indexed by rank, the summary in ``summary`` attributes).

Times: ``wall`` is simulate() (setup + window loop), ``loop`` the window loop
only; the first speed-up is the loop's, against the 1-rank run of the same
invocation or file.  ``kcpu sum`` is the kernel CPU time summed over the ranks;
``cpu-path`` is the slowest rank's kernel + pack + unpack CPU time, i.e. the
loop time if every rank had a core to itself, and the second speed-up is
computed from it.
With more ranks than cores the ranks share cores: wall times then measure the
machine, not the algorithm, and the CPU-time columns are the ones to use (see
``--project``).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import resource
import subprocess
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SAMPLE_PERIOD = 200
LOAD = 0.3
INSTANCES = {
    "sf13": ("Slim Fly q=13 p=9", ["topology.name=slimfly", "topology.q=13", "topology.p=9"]),
    "bdf19": ("BDF u=19 p=13", ["topology.name=bdf", "topology.u=19", "topology.p=13"]),
    "gf41": ("Galaxyfly GF(41,61,4,10)", ["topology.name=galaxyfly", "topology.n=41", "topology.q=61",
                                          "topology.a=4", "topology.p=10"]),
    "small": ("Slim Fly q=7", ["topology.name=slimfly", "topology.q=7"]),
}
PER_RANK = ("loop_s", "total_s", "kernel_s", "exchange_s", "pack_s", "wait_s", "unpack_s",
            "kernel_cpu_s", "pack_cpu_s", "wait_cpu_s", "unpack_cpu_s", "cpu_s", "exchanges",
            "bytes_sent", "neighbours", "rss_mb", "routers", "endpoints", "cut_links")
RESULT_ARRAYS = ("hist_packet_latency", "hist_network_latency", "hist_hops", "link_flits",
                 "endpoint_injected", "endpoint_delivered", "series")
TAG = "SCALING-JSON "


# ----------------------------------------------------------------------------- helpers
def phase_cycles(cycles: int) -> tuple[int, int]:
    """(warm-up, measurement) cycles, multiples of the sample period, adding up to ``cycles``."""
    sp = SAMPLE_PERIOD
    total = max(2 * sp, (cycles // sp) * sp)
    warm = max(sp, (total // 10) // sp * sp)
    return warm, total - warm


def instance_sets(name: str, cycles: int, extra=()) -> list[str]:
    """The ``--set`` strings of one instance for a fixed-length run."""
    if name not in INSTANCES:
        raise SystemExit(f"scaling.py: unknown instance '{name}' (known: {', '.join(INSTANCES)})")
    warm, meas = phase_cycles(cycles)
    return [*INSTANCES[name][1], f"traffic.load={LOAD}", "measure.warmup=fixed",
            f"measure.sample_period={SAMPLE_PERIOD}", f"measure.warmup_cycles={warm}",
            f"measure.measure_cycles={meas}", "measure.drain_cycles=0", "output.file=", *extra]


def digest(res: dict) -> str:
    """SHA-256 over everything a run reports that must not depend on the rank count."""
    h = hashlib.sha256()
    h.update(json.dumps(res["summary"], sort_keys=True).encode())
    h.update(json.dumps(res["counters"], sort_keys=True).encode())
    for k in RESULT_ARRAYS:
        a = np.ascontiguousarray(res[k], dtype=np.int64)
        h.update(k.encode() + str(a.shape).encode() + a.tobytes())
    return h.hexdigest()


def _stats(v):
    v = np.asarray(v, dtype=float)
    return float(v.max()), float(v.mean())


def run_key(r: dict) -> tuple:
    """Runs with the same key simulate the same thing (instance, config overrides, length)."""
    return (r["instance"], tuple(r.get("sets", ())))


def derive(rows: list[dict]) -> list[dict]:
    """Add speed-up, efficiency and "same as 1 rank" against the 1-rank run of the same key."""
    base = {run_key(r): r for r in rows if r.get("ranks") == 1 and "error" not in r}
    for r in rows:
        b = None if "error" in r else base.get(run_key(r))
        if b is None:
            r.update(speedup_loop=float("nan"), speedup_wall=float("nan"), efficiency=float("nan"),
                     speedup_cpu=float("nan"), same=None)
            continue
        r["speedup_loop"] = b["loop_s"] / r["loop_s"]
        r["speedup_wall"] = b["wall_s"] / r["wall_s"]
        r["efficiency"] = r["speedup_loop"] / r["ranks"]
        r["speedup_cpu"] = cpu_path(b) / cpu_path(r)
        r["same"] = r["digest"] == b["digest"]
    return rows


def cpu_path(r: dict) -> float:
    """Loop time if every rank had a core of its own: the slowest rank's kernel + pack + unpack
    CPU time (waiting for a neighbour that is itself busy is not counted)."""
    pr = r["per_rank"]
    return max(k + p + u for k, p, u in zip(pr["kernel_cpu_s"], pr.get("pack_cpu_s", [0] * r["ranks"]),
                                            pr.get("unpack_cpu_s", [0] * r["ranks"])))


COLUMNS = [
    # header, width, function(row) -> str
    ("instance", 8, lambda r: r["instance"]),
    ("R", 3, lambda r: str(r["ranks"])),
    ("cycles", 6, lambda r: str(r["cycles"])),
    ("wall s", 7, lambda r: f"{r['wall_s']:.1f}"),
    ("loop s", 7, lambda r: f"{r['loop_s']:.1f}"),
    ("speedup", 7, lambda r: f"{r['speedup_loop']:.2f}"),
    ("kernel max/mean", 15, lambda r: "{:.1f}/{:.1f}".format(*_stats(r["per_rank"]["kernel_s"]))),
    ("kcpu sum", 8, lambda r: f"{sum(r['per_rank']['kernel_cpu_s']):.1f}"),
    ("cpu-path", 8, lambda r: f"{cpu_path(r):.1f}"),
    ("speedup", 7, lambda r: f"{r['speedup_cpu']:.2f}"),
    ("pack max/mean", 13, lambda r: "{:.2f}/{:.2f}".format(*_stats(r["per_rank"]["pack_s"]))),
    ("wait max/mean", 13, lambda r: "{:.2f}/{:.2f}".format(*_stats(r["per_rank"]["wait_s"]))),
    ("unpack max/mean", 15, lambda r: "{:.2f}/{:.2f}".format(*_stats(r["per_rank"]["unpack_s"]))),
    ("LA", 3, lambda r: str(r["lookahead"])),
    ("W", 3, lambda r: str(r["window"])),
    ("cut %", 5, lambda r: f"{100 * r['cut_fraction']:.1f}"),
    ("imbal", 5, lambda r: f"{r['imbalance']:.3f}"),
    ("RSS max/sum MB", 14, lambda r: "{:.0f}/{:.0f}".format(max(r["per_rank"]["rss_mb"]),
                                                           sum(r["per_rank"]["rss_mb"]))),
    ("job MB", 6, lambda r: "-" if r.get("machine_mem_mb") is None else f"{r['machine_mem_mb']:.0f}"),
    ("other", 5, lambda r: "-" if r.get("other_cores") is None else f"{r['other_cores']:.2f}"),
    ("accepted", 8, lambda r: f"{r['summary']['accepted_load']:.4f}"),
    ("same", 4, lambda r: {True: "yes", False: "NO", None: "-"}[r["same"]]),
]


def format_table(rows: list[dict]) -> str:
    """One line per run; failed runs show their error."""
    head = "  ".join(f"{h:>{w}s}" for h, w, _ in COLUMNS)
    lines = [head, "-" * len(head)]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['instance']:>8s}  {r['ranks']:>3d}  FAILED: {r['error']}")
            continue
        lines.append("  ".join(f"{f(r):>{w}s}" for _, w, f in COLUMNS))
    return "\n".join(lines)


# ----------------------------------------------------------------------------- child
def _warm_jit():
    """Compile (or load) every kernel on a tiny 2-part network, outside the timed run."""
    from pdes import config as C
    from pdes.engine import run_local
    cfg = C.resolve({}, ["measure.warmup_cycles=0", "measure.measure_cycles=200",
                         "measure.drain_cycles=0", "output.file="])
    run_local(cfg, owner=np.arange(50, dtype=np.int32) % 2)


def child(args) -> None:
    from mpi4py import MPI

    from pdes import config as C
    from pdes.engine import simulate
    from pdes.state import PartState

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    cfg = C.resolve({}, instance_sets(args.instance, args.cycles, args.sets))
    t = time.perf_counter()
    _warm_jit()
    jit_s = time.perf_counter() - t

    # kernel CPU time (the wall time of a rank that shares a core includes the others' turns)
    kcpu = [0.0]
    advance = PartState.advance

    def timed_advance(self, t0, t1):
        c = time.thread_time()
        try:
            return advance(self, t0, t1)
        finally:
            kcpu[0] += time.thread_time() - c
    PartState.advance = timed_advance

    comm.Barrier()
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    res = simulate(cfg, comm if size > 1 else None)
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    tm = res["timing"]
    rep = res["partition"]
    mine = {
        "loop_s": tm["wall_warmup_s"] + tm["wall_measure_s"] + tm["wall_drain_s"],
        "total_s": wall, "kernel_s": tm["kernel_s"], "exchange_s": tm["exchange_s"],
        "kernel_cpu_s": kcpu[0],
        "cpu_s": (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime),
        "rss_mb": ru1.ru_maxrss / 1024.0,   # kilobytes on Linux
        "setup": {k: tm.get(k, 0.0) for k in ("build_s", "layout_s", "distances_s")},
    }
    for k in ("pack_s", "wait_s", "unpack_s", "pack_cpu_s", "wait_cpu_s", "unpack_cpu_s",
              "exchanges", "bytes_sent", "neighbours"):
        mine[k] = tm.get(k, 0)
    allr = comm.gather(mine, root=0)
    if rank:
        return
    prep = res["prepared"]
    per_rank = {k: [r[k] for r in allr] for k in PER_RANK if k in allr[0]}
    per_rank["routers"] = [int(x) for x in rep["routers_per_rank"]]
    per_rank["endpoints"] = [int(x) for x in rep["endpoints_per_rank"]]
    per_rank["cut_links"] = [int(x) for x in rep["cut_links_per_rank"]]
    s = res["summary"]
    out = {
        "instance": args.instance, "description": INSTANCES[args.instance][0], "ranks": size,
        "cycles": s["cycles"], "sets": instance_sets(args.instance, args.cycles, args.sets),
        "n_routers": int(prep.topo.n_routers), "n_endpoints": int(prep.topo.n_endpoints),
        "n_links": int(prep.topo.n_links), "num_vcs": int(prep.rp.num_vcs),
        "wall_s": max(r["total_s"] for r in allr), "loop_s": max(r["loop_s"] for r in allr),
        "jit_s": jit_s, "setup": allr[0]["setup"],
        "lookahead": int(res["lookahead"]), "window": int(res["window"]),
        "cut_links": int(rep["cut_links"]), "cut_fraction": float(rep["cut_fraction"]),
        "imbalance": float(rep["imbalance"]), "groups_split": int(rep["groups_split"]),
        "min_link_latency": int(rep["min_link_latency"]),
        "summary": s, "counters": res["counters"], "digest": digest(res), "per_rank": per_rank,
    }
    print(TAG + json.dumps(out), flush=True)


# ----------------------------------------------------------------------------- parent
class Monitor:
    """Machine-wide view of a run (Linux /proc; figures are None elsewhere).

    ``used_mb``: lowest MemAvailable during the run below the value before it
    (the whole job's footprint, shared pages counted once); ``other_cores``:
    CPU time used by processes outside the job, per second of the run (how
    many cores someone else took -- the machine may be shared).
    """

    def __init__(self):
        self.base = self._avail()
        self.low = self.base
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)
        self.other_cores = None

    @staticmethod
    def _avail():
        try:
            with open("/proc/meminfo") as fh:
                for line in fh:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) / 1024.0
        except OSError:
            pass
        return None

    @staticmethod
    def _busy():
        try:
            with open("/proc/stat") as fh:
                f = [int(x) for x in fh.readline().split()[1:]]
            return (sum(f) - f[3] - f[4]) / os.sysconf("SC_CLK_TCK")   # minus idle, iowait
        except (OSError, ValueError, IndexError):
            return None

    def _loop(self):
        while not self._stop.wait(0.5):
            a = self._avail()
            if a is not None and self.low is not None:
                self.low = min(self.low, a)

    def __enter__(self):
        self._b0 = self._busy()
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        self._c0 = ru.ru_utime + ru.ru_stime
        self._w0 = time.perf_counter()
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        b1 = self._busy()
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        job_cpu = ru.ru_utime + ru.ru_stime - self._c0
        if b1 is not None and self._b0 is not None:
            self.other_cores = max(0.0, (b1 - self._b0) - job_cpu) / (time.perf_counter() - self._w0)

    @property
    def used_mb(self):
        return None if self.base is None else self.base - self.low


def mpiexec_cmd(explicit: str | None) -> str:
    if explicit:
        return explicit
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.path.exists(here) else "mpiexec"


def run_one(name, ranks, args) -> dict:
    cmd = [mpiexec_cmd(args.mpiexec), "-n", str(ranks), sys.executable, os.path.abspath(__file__),
           "--child", "--instance", name, "--cycles", str(args.cycles)]
    for s in args.sets:
        cmd += ["--set", s]
    t = time.perf_counter()
    with Monitor() as mw:
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            return {"instance": name, "ranks": ranks, "error": f"timeout after {args.timeout} s"}
    elapsed = time.perf_counter() - t
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith(TAG)]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {"instance": name, "ranks": ranks, "error": f"exit {p.returncode}: {tail}"}
    row = json.loads(lines[-1][len(TAG):])
    row["job_s"] = elapsed
    row["machine_mem_mb"] = mw.used_mb
    row["other_cores"] = mw.other_cores
    return row


def _put(g, key, value):
    if value is None:
        return
    if isinstance(value, (dict, list)) and not (isinstance(value, list) and value and
                                                isinstance(value[0], (int, float))):
        g.attrs[key] = json.dumps(value)
    elif isinstance(value, list):
        g.create_dataset(key, data=np.asarray(value))
    else:
        g.attrs[key] = value


def write_h5(path: str, rows: list[dict], cmdline: str) -> None:
    """Add (or replace) one group per run; other groups of an existing file are kept."""
    import h5py
    with h5py.File(path, "a") as f:
        f.attrs["format"] = "pdes-scaling"
        f.attrs["cpu_count"] = os.cpu_count() or 0
        f.attrs["last_command"] = cmdline
        for r in rows:
            if "error" in r:
                continue
            name = f"{r['instance']}/ranks_{r['ranks']}"
            if name in f:
                del f[name]
            g = f.create_group(name)
            g.attrs["created"] = time.strftime("%Y-%m-%d %H:%M:%S")
            for k, v in r.items():
                if k in ("per_rank", "summary", "counters", "speedup_loop", "speedup_wall",
                         "efficiency", "speedup_cpu", "same"):
                    continue
                _put(g, k, v)
            pr = g.create_group("per_rank")
            for k, v in r["per_rank"].items():
                pr.create_dataset(k, data=np.asarray(v))
            sg = g.create_group("summary")
            for k, v in r["summary"].items():
                sg.attrs[k] = v
            g.attrs["counters"] = json.dumps(r["counters"])


def read_h5(path: str) -> list[dict]:
    import h5py
    rows = []
    with h5py.File(path, "r") as f:
        for inst in f:
            for rk in sorted(f[inst], key=lambda s: int(s.split("_")[1])):
                g = f[inst][rk]
                r = {}
                for k, v in g.attrs.items():
                    v = v.item() if hasattr(v, "item") else v
                    if k in ("sets", "setup", "counters"):
                        v = json.loads(v)
                    r[k] = v
                r["per_rank"] = {k: g["per_rank"][k][()].tolist() for k in g["per_rank"]}
                r["summary"] = {k: (v.item() if hasattr(v, "item") else v)
                                for k, v in g["summary"].attrs.items()}
                rows.append(r)
    return rows


# ----------------------------------------------------------------------------- projection
NET_LATENCY_S = 2e-6       # one-way small-message latency of a cluster network (assumed)
NET_OVERHEAD_S = 0.5e-6    # CPU overhead per message posted (assumed)
NET_BANDWIDTH = 10e9       # bytes/s per rank (assumed)
REDUCTIONS_PER_SAMPLE = 3  # Allreduce calls per sample boundary (sample + stats sum/max)


def _partition_at(instance: str, ranks: int, extra=()):
    """Partition figures at ``ranks`` from the topology and layout alone (no simulation)."""
    import partition as PT
    from models import layout as L
    from models.topology import build
    from pdes import config as C
    from pdes.loop import window_for
    cfg = C.resolve({}, instance_sets(instance, 1000, extra))
    topo = build(*C.topology_params(cfg))
    fixed = cfg["router"]["link_latency"]
    lat = np.full(topo.n_links, fixed, np.int64) if fixed > 0 else \
        np.asarray(L.build_layout(topo, **cfg["layout"]).latency, dtype=np.int64)
    owner = PT.assign(topo, lat, ranks, cfg["run"]["partition"], seed=cfg["measure"]["seed"],
                      max_imbalance=cfg["run"]["max_imbalance"])
    rep = PT.report(topo, owner, lat)
    u, v = owner[topo.links[:, 0]], owner[topo.links[:, 1]]
    cut = u != v
    pairs = np.unique(np.stack([np.r_[u[cut], v[cut]], np.r_[v[cut], u[cut]]], 1), axis=0)
    nbr = np.bincount(pairs[:, 0], minlength=ranks)
    W = window_for(rep["lookahead"], SAMPLE_PERIOD)
    return rep, W, nbr


def fit_exchange_cost(pts: np.ndarray, ys: np.ndarray) -> tuple[float, float, float]:
    """Non-negative least squares of y = x0 + x_n * neighbours + x_b * bytes.

    Columns without variation in the data cannot be told apart from the
    constant and are left out (coefficient 0); with a single distinct point
    the cost is taken as proportional to the bytes.
    """
    from scipy.optimize import nnls
    cols = [2]
    if np.ptp(pts[:, 2]) > 0:
        cols.insert(0, 0)
        if np.ptp(pts[:, 1]) > 0 and len(pts) >= 3:
            cols.insert(1, 1)
    A = pts[:, cols]
    scale = np.maximum(np.abs(A).max(axis=0), 1e-30)   # nnls on comparable columns
    c, _ = nnls(A / scale, ys)
    coef = [0.0, 0.0, 0.0]
    for j, v in zip(cols, c / scale):
        coef[j] = float(v)
    return coef[0], coef[1], coef[2]


def project(rows: list[dict], target: int) -> str:
    """Efficiency at ``target`` ranks (one core each) from the measured compute/exchange split.

    Model, per instance, for C cycles:

        T(R) = K1 * s_R * I_R / R  +  N_R * [x0 + x_n * n_R + x_b * b_R
                                                   + n_R * o + L + b_R / B]  +  (C / 200) * 3 * log2(R) * L

    K1 = kernel CPU time of the 1-rank run; I_R = work imbalance (max/mean routers+endpoints)
    of the partition at R; N_R = (C / 200) * ceil(200 / W_R) windows; s_R = measured kernel-CPU overhead of splitting (sum over ranks of
    kernel CPU at the largest measured R / K1); W_R = window (from the lookahead at R);
    n_R = neighbour ranks and b_R = bytes sent per window by the busiest rank (bytes per
    cut link and cycle measured, times its cut links at R, times W_R); x0, x_n, x_b = CPU cost
    of packing + unpacking per window, per neighbour and per byte (least squares over every
    measured multi-rank run, in CPU time so that sharing cores does not inflate them);
    o, L, B = per-message overhead, latency and bandwidth of a cluster network (assumed).
    """
    good = [r for r in rows if "error" not in r]
    pts, ys = [], []
    for r in good:
        if r["ranks"] < 2:
            continue
        pr = r["per_rank"]
        for i in range(r["ranks"]):
            n_ex = max(1, pr["exchanges"][i])
            pts.append([1.0, pr["neighbours"][i], pr["bytes_sent"][i] / n_ex])
            ys.append((pr["pack_cpu_s"][i] + pr["unpack_cpu_s"][i]) / n_ex)
    if not pts:
        return "projection: needs multi-rank measurements"
    x0, xn, xb = fit_exchange_cost(np.asarray(pts), np.asarray(ys))
    out = [f"projection to {target} ranks, one core each (model in scaling.py:project)",
           f"  fitted pack+unpack CPU per window: {x0 * 1e6:.1f} us + {xn * 1e6:.2f} us/neighbour"
           f" + {xb * 1e9:.3f} ns/byte; network assumed: latency {NET_LATENCY_S * 1e6:g} us,"
           f" {NET_OVERHEAD_S * 1e6:g} us/message, {NET_BANDWIDTH / 1e9:g} GB/s",
           f"  {'instance':>8s}  {'K1 s':>7s}  {'s_R':>5s}  {'I_R':>5s}  {'LA':>3s}  {'W':>3s}"
           f"  {'nbrs':>4s}  {'B/win':>8s}  {'compute s':>9s}  {'exch s':>7s}  {'T(R) s':>7s}"
           f"  {'speedup':>7s}  {'eff':>5s}"]
    for key in dict.fromkeys(run_key(r) for r in good):
        inst = key[0]
        rs = sorted((r for r in good if run_key(r) == key), key=lambda r: r["ranks"])
        one = next((r for r in rs if r["ranks"] == 1), None)
        multi = [r for r in rs if r["ranks"] > 1]
        if one is None or not multi or target > one["n_routers"]:
            continue
        K1 = sum(one["per_rank"]["kernel_cpu_s"])
        C_ = one["cycles"]
        big = multi[-1]
        sR = sum(big["per_rank"]["kernel_cpu_s"]) / K1
        # bytes per cut link per cycle, averaged over the measured multi-rank runs
        bpl = np.mean([sum(r["per_rank"]["bytes_sent"]) / (r["cycles"] * 2 * r["cut_links"])
                       for r in multi if r["cut_links"]])
        extra = [s for s in one["sets"] if s not in instance_sets(inst, 1000)
                 and not s.startswith("measure.")]
        rep, W, nbr = _partition_at(inst, target, extra)
        busiest = int(np.argmax(rep["cut_links_per_rank"]))
        b = bpl * rep["cut_links_per_rank"][busiest] * W
        n = int(nbr.max())
        compute = K1 * sR * rep["imbalance"] / target
        per_win = x0 + xn * n + xb * b + n * NET_OVERHEAD_S + NET_LATENCY_S + b / NET_BANDWIDTH
        red = (C_ / SAMPLE_PERIOD) * REDUCTIONS_PER_SAMPLE * math.log2(target) * NET_LATENCY_S
        n_win = (C_ / SAMPLE_PERIOD) * math.ceil(SAMPLE_PERIOD / W)   # windows also end at samples
        exch = n_win * per_win + red
        T = compute + exch
        T1 = one["loop_s"]
        out.append(f"  {inst:>8s}  {K1:7.1f}  {sR:5.2f}  {rep['imbalance']:5.3f}  {rep['lookahead']:3d}"
                   f"  {W:3d}  {n:4d}  {b:8.0f}  {compute:9.2f}  {exch:7.2f}  {T:7.2f}"
                   f"  {T1 / T:7.1f}  {T1 / (T * target):5.2f}")
    return "\n".join(out)


# ----------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", default="sf13,bdf19,gf41",
                    help=f"comma-separated, from {', '.join(INSTANCES)}")
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--cycles", type=int, default=10000, help="cycles per run (10%% warm-up)")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                    help="extra config override for every run (repeatable)")
    ap.add_argument("-o", "--output", default="scaling.h5", help="HDF5 file (groups are added)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    ap.add_argument("--mpiexec", default=None, help="launcher (default: next to python, else PATH)")
    ap.add_argument("--no-baseline", dest="baseline", action="store_false",
                    help="do not add the 1-rank reference run (--table then compares against the "
                         "1-rank group already in the file)")
    ap.add_argument("--table", metavar="H5", help="print the table of an existing file and exit")
    ap.add_argument("--project", type=int, default=0, metavar="R",
                    help="also print the projected efficiency at R ranks")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--instance", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args)
        return 0
    if args.table:
        rows = derive(read_h5(args.table))
        print(format_table(rows))
        if args.project:
            print(project(rows, args.project))
        return 0
    names = [s.strip() for s in args.instances.split(",") if s.strip()]
    for n in names:
        instance_sets(n, args.cycles)          # unknown names stop here
    ranks = sorted(set(args.ranks) | ({1} if args.baseline else set()))
    rows = []
    for n in names:
        for R in ranks:
            print(f"[scaling] {n} on {R} rank(s), {args.cycles} cycles ...", file=sys.stderr, flush=True)
            row = run_one(n, R, args)
            rows.append(row)
            msg = row.get("error") or (f"wall {row['wall_s']:.1f} s, loop {row['loop_s']:.1f} s, "
                                       f"RSS max {max(row['per_rank']['rss_mb']):.0f} MB")
            print(f"[scaling]   {msg}", file=sys.stderr, flush=True)
            write_h5(args.output, [row], " ".join(sys.argv))
    derive(rows)
    print(format_table(rows))
    if args.project:
        print(project(rows, args.project))
    return 0 if all("error" not in r for r in rows) and all(r["same"] is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
