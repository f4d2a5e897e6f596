"""Single-core engine benchmark: Slim Fly q=13, p=9 (338 routers, 3,042 endpoints).

Minimal routing, uniform traffic, 1-flit packets, 64 flits/port, 2 VCs,
link latency 1, loads 0.5 and 0.8, 1,000 warm-up + 10,000 measured cycles.
Prints router-cycles/s and flit-hops/s of the kernel (JIT compilation and
cache loading are timed separately, in the first call), and the peak RSS.

    python run_scripts/bench_engine.py [--loads 0.5 0.8] [--measure 10000] [--q 13 --p 9]
    python run_scripts/bench_engine.py --set router.allocation=booksim   # BookSim's allocation

Each load runs in a fresh subprocess so that the first-call (JIT) time and
the peak RSS are per run.  Compare figures from one invocation only: the
machine this runs on may be shared and noisy.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time


def one(q, p, load, warmup, measure, vcs, sets=()):
    import numpy as np

    from pdes import config as C
    from pdes.comm import LocalGroup
    from pdes.build import make_parts, prepare
    from pdes.loop import Engine

    cfg = C.resolve({}, [f"topology.q={q}", f"topology.p={p}", f"router.num_vcs={vcs}",
                         "router.link_latency=1", "router.buffer_flits=64", "router.packet_size=1",
                         f"traffic.load={load}", f"measure.warmup_cycles={warmup}",
                         f"measure.measure_cycles={measure}", "measure.drain_cycles=5000", *sets])
    t = time.perf_counter()
    prep = prepare(cfg)
    t_prep = time.perf_counter() - t
    owner = np.zeros(prep.topo.n_routers, np.int32)
    W = cfg["measure"]["sample_period"]
    # first call: compile (or load the on-disk cache) on a throw-away state
    t = time.perf_counter()
    warm = make_parts(prep, owner, [0], W)[0]
    warm.advance(0, 1)
    t_jit = time.perf_counter() - t
    parts = make_parts(prep, owner, [0], W)
    eng = Engine(prep, LocalGroup(parts), W, 0)
    t = time.perf_counter()
    res = eng.run()
    wall = time.perf_counter() - t
    kern = res["timing"]["kernel_s"]
    cycles = res["summary"]["cycles"]
    hops = int(parts[0].arrays["link_flits"].sum())  # flit-hops inside the window
    s = res["summary"]
    return {
        "q": q, "p": p, "load": load, "routers": prep.topo.n_routers,
        "endpoints": prep.topo.n_endpoints, "cycles": cycles,
        "prepare_s": round(t_prep, 3), "first_call_s": round(t_jit, 3),
        "run_s": round(wall, 3), "kernel_s": round(kern, 3),
        "router_cycles_per_s": round(prep.topo.n_routers * cycles / kern),
        "flit_hops_per_s_window": round(hops / (kern * (s["measure_end"] - s["measure_start"]) / cycles)),
        "accepted": round(s["accepted_load"], 4), "saturated": s["saturated"],
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--q", type=int, default=13)
    ap.add_argument("--p", type=int, default=9)
    ap.add_argument("--vcs", type=int, default=2)
    ap.add_argument("--loads", type=float, nargs="+", default=[0.5, 0.8])
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--measure", type=int, default=10000)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a config key on top of the benchmark's (repeatable)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one(args.q, args.p, args.loads[0], args.warmup, args.measure, args.vcs,
                             args.set)))
        return
    rows = []
    for load in args.loads:
        out = subprocess.run([sys.executable, __file__, "--child", "--q", str(args.q), "--p", str(args.p),
                              "--vcs", str(args.vcs), "--loads", str(load), "--warmup",
                              str(args.warmup), "--measure", str(args.measure),
                              *[f"--set={kv}" for kv in args.set]],
                             capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    keys = ["load", "accepted", "saturated", "cycles", "kernel_s", "router_cycles_per_s",
            "flit_hops_per_s_window", "first_call_s", "prepare_s", "peak_rss_mb"]
    print(f"Slim Fly q={args.q} p={args.p}: {rows[0]['routers']} routers, {rows[0]['endpoints']} endpoints,"
          f" {args.vcs} VCs, link latency 1, one core" + (f"; {' '.join(args.set)}" if args.set else ""))
    print("  ".join(f"{k:>14s}" for k in keys))
    for r in rows:
        print("  ".join(f"{str(r[k]):>14s}" for k in keys))


if __name__ == "__main__":
    main()
