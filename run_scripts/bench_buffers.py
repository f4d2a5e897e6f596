"""Buffers: the kernel's speed with per-port capacities, and the 100K-endpoint runs.

    python run_scripts/bench_buffers.py speed --other DIR [--rounds 5] [--load 0.5]
    python run_scripts/bench_buffers.py large [--instances bdf19,gf41] [--ranks 2]
                                              [--warmup 1000] [--measure 1000]

``speed`` runs Slim Fly q=13 p=9 (minimal, uniform, 2 VCs, link latency 1,
``router.buffer_flits = 64`` given) alternately with this checkout and with the
one in ``DIR`` (another version, e.g. ``git archive`` of an older commit
unpacked there), each run in a fresh process that first compiles or loads its
kernels on a throw-away state, and prints the CPU time (``time.process_time``)
of the window loop per cycle for every run and the median of each version.
``DIR`` must hold a ``pdes`` package: each run imports its own tree first.

``large`` runs the 100K-endpoint instances of ``run_scripts/scaling.py`` with
the default (automatic) buffers, uniform traffic at load 0.3 and minimal
routing, under ``mpiexec -n RANKS python -m pdes run`` (a fixed number of
cycles, no drain: compare the accepted and offered loads), and prints the
start report's buffer and memory lines, accepted against offered load, the
peak RSS of the largest rank and the wall time per cycle of the window loop.

Both use a sample period of 200 cycles, or the measured cycles when fewer.  A run that
fails ends ``speed`` with the end of its error output and one line naming the run.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
INSTANCES = {
    "bdf19": ("BDF u=19 p=13", ["topology.name=bdf", "topology.u=19", "topology.p=13"]),
    "gf41": ("Galaxyfly GF(41,61,4,10)", ["topology.name=galaxyfly", "topology.n=41",
                                          "topology.q=61", "topology.a=4", "topology.p=10"]),
}


def speed_child(load: float, warmup: int, measure: int) -> dict:
    import numpy as np

    from pdes import config as C
    from pdes.comm import LocalGroup
    from pdes.build import make_parts, prepare
    from pdes.loop import Engine

    cfg = C.resolve({}, ["topology.q=13", "topology.p=9", "router.num_vcs=2",
                         "router.link_latency=1", "router.buffer_flits=64", f"traffic.load={load}",
                         f"measure.warmup_cycles={warmup}", f"measure.measure_cycles={measure}",
                         f"measure.sample_period={min(200, measure)}", "measure.drain_cycles=0"])
    prep = prepare(cfg)
    owner = np.zeros(prep.topo.n_routers, np.int32)
    W = cfg["measure"]["sample_period"]
    make_parts(prep, owner, [0], W)[0].advance(0, 1)      # compile or load the kernels
    parts = make_parts(prep, owner, [0], W)
    c, w = time.process_time(), time.perf_counter()
    res = Engine(prep, LocalGroup(parts), W, 0).run()
    cpu, wall = time.process_time() - c, time.perf_counter() - w
    cycles = res["summary"]["cycles"]
    return {"cpu_s": cpu, "wall_s": wall, "cycles": cycles, "ms_per_cycle": 1e3 * cpu / cycles,
            "wall_ms_per_cycle": 1e3 * wall / cycles,
            "accepted": res["summary"]["accepted_load"],
            "moves": int(res["series"][:, 4].sum())}


def child_stdout(cmd: list[str], what: str, cwd: Path) -> str:
    """Standard output of ``cmd``; if it fails, exit with the end of its standard error and one
    line naming ``what`` (its status alone would hide the child's own error)."""
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, check=False)
    if r.returncode != 0:
        tail = r.stderr.strip().splitlines()[-20:]
        raise SystemExit("\n".join([*tail, f"bench_buffers: {what} failed "
                                            f"(status {r.returncode})"]))
    return r.stdout


def speed(args) -> None:
    other = Path(args.other).resolve()
    if not (other / "pdes" / "__init__.py").is_file():
        # without one the other runs would import this checkout's: a comparison with itself
        raise SystemExit(f"bench_buffers: --other: {args.other} has no pdes package "
                         "(pdes/__init__.py)")
    trees = {"this": ROOT, "other": other}
    runs = {k: [] for k in trees}
    for i in range(args.rounds):
        for name in (("this", "other") if i % 2 else ("other", "this")):
            out = child_stdout([sys.executable, __file__, "speed-child", "--tree", str(trees[name]),
                                "--load", str(args.load), "--warmup", str(args.warmup),
                                "--measure", str(args.measure)],
                               f"the run of {name} in round {i}", trees[name])
            row = json.loads(out.strip().splitlines()[-1])
            runs[name].append(row)
            print(f"{name:5s} round {i}: {row['ms_per_cycle']:.4f} ms CPU per cycle "
                  f"({row['wall_ms_per_cycle']:.4f} wall), accepted {row['accepted']:.4f}, moves {row['moves']}", flush=True)
    med = {k: statistics.median(r["ms_per_cycle"] for r in v) for k, v in runs.items()}
    print(f"median ms CPU per cycle: this {med['this']:.4f}, other {med['other']:.4f} "
          f"({100 * (med['this'] / med['other'] - 1):+.1f}%)")
    wall = {k: statistics.median(r["wall_ms_per_cycle"] for r in v) for k, v in runs.items()}
    print(f"median ms wall per cycle: this {wall['this']:.4f}, other {wall['other']:.4f} "
          f"({100 * (wall['this'] / wall['other'] - 1):+.1f}%)")
    same = {json.dumps([r["moves"] for r in v]) for v in runs.values()}
    print("same flit movements in every run" if len(same) == 1 else "runs differ in flit movements")


def large(args) -> None:
    for key in args.instances:
        title, sets = INSTANCES[key]
        sets = sets + ["traffic.load=0.3", "routing.algorithm=min",
                       f"measure.warmup_cycles={args.warmup}",
                       f"measure.measure_cycles={args.measure}", "measure.drain_cycles=0",
                       f"measure.sample_period={min(200, args.measure)}",
                       "measure.watchdog_cycles=100000"]
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.h5")
            cmd = ["mpiexec", "-n", str(args.ranks), sys.executable, "-m", "pdes", "run", "--json",
                   "-o", out] + [x for s in sets for x in ("--set", s)]
            t = time.perf_counter()
            r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            wall = time.perf_counter() - t
            if r.returncode != 0:
                print(f"{title}: failed\n{r.stderr}")
                continue
            s = json.loads(r.stdout.strip().splitlines()[-1])
            import h5py
            with h5py.File(out) as f:
                run = dict(f["run"].attrs)
        loop = run["wall_warmup_s"] + run["wall_measure_s"] + run["wall_drain_s"]
        print(f"{title} on {args.ranks} ranks ({wall:.0f} s in all):")
        for line in r.stderr.splitlines():
            if "buffers:" in line or "memory estimate" in line or "note:" in line:
                print("  " + line.replace("[pdes] ", ""))
        print(f"  offered {s['offered_load']:.4f}, accepted {s['accepted_load']:.4f}; peak RSS "
              f"{run['peak_rss_mb']:.0f} MB (largest rank); {1e3 * loop / s['cycles']:.1f} ms per "
              f"cycle (window loop, {s['cycles']} cycles), kernel {run['kernel_s']:.1f} s")


def instance_list(text: str) -> list[str]:
    """``--instances``: comma-separated keys of :data:`INSTANCES`."""
    keys = [k for k in text.split(",") if k]
    for k in keys or [text]:
        if k not in INSTANCES:
            raise argparse.ArgumentTypeError(f"unknown instance '{k}' (known: "
                                             f"{', '.join(INSTANCES)})")
    return keys


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    sp = sub.add_parser("speed")
    sp.add_argument("--other", required=True, help="another checkout to compare with")
    sp.add_argument("--rounds", type=int, default=5)
    child = sub.add_parser("speed-child")
    child.add_argument("--tree", required=True, help="the checkout whose pdes to time")
    for p in (sp, child):
        p.add_argument("--load", type=float, default=0.5)
        p.add_argument("--warmup", type=int, default=1000)
        p.add_argument("--measure", type=int, default=5000)
    lp = sub.add_parser("large")
    lp.add_argument("--instances", type=instance_list, default="bdf19,gf41")
    lp.add_argument("--ranks", type=int, default=2)
    lp.add_argument("--warmup", type=int, default=1000)
    lp.add_argument("--measure", type=int, default=1000)
    args = ap.parse_args()
    if args.what == "speed-child":
        sys.path.insert(0, args.tree)
        print(json.dumps(speed_child(args.load, args.warmup, args.measure)))
    elif args.what == "speed":
        speed(args)
    else:
        large(args)


if __name__ == "__main__":
    main()
