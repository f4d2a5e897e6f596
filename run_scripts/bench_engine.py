"""Single-core engine benchmark: Slim Fly q=13, p=9 (338 routers, 3,042 endpoints).

Minimal routing, uniform traffic, 1-flit packets, 64 flits/port, 2 VCs,
link latency 1, loads 0.5 and 0.8, 1,000 warm-up + 10,000 measured cycles.
Prints router-cycles/s and flit-hops/s of the kernel (JIT compilation and
cache loading are timed separately, in the first call), and the peak RSS.

    python run_scripts/bench_engine.py [--loads 0.5 0.8] [--measure 10000] [--q 13 --p 9]
    python run_scripts/bench_engine.py --set router.allocation=booksim   # BookSim's allocation
    python run_scripts/bench_engine.py --booksim booksim2/src/booksim --loads 0.5 0.1 --warmup 300 --measure 3000

Each load runs in a fresh subprocess so that the first-call (JIT) time and
the peak RSS are per run.  Compare figures from one invocation only: the
machine this runs on may be shared and noisy.

``--booksim PATH`` (a BookSim2 binary you built) times BookSim2 beside each run, on the
same network and core: the Slim Fly exported as an anynet file, BookSim's anynet ``min``,
uniform traffic at the same load in flits, the same VCs and 32 flits per VC (64 per port
with 2 VCs), ``internal_speedup`` 2, separable input-first allocators, 1-cycle links, and a
fixed length (one warm-up and three measured sample periods of (warm-up + measured) / 4
cycles, then BookSim's drain): the parity cases' keys of ``booksim_parity.py``.  pdes runs
its engine benchmark (its default router, ``router.allocation = "vct"``, with any ``--set``
given); ``booksim_parity.py --speed`` compares BookSim's allocation on the same config file
instead.  ``--repeats`` pairs per load alternate BookSim, pdes, BookSim, pdes, ..., each a
new process pinned with ``taskset`` to one core (``--cpu``); the table gives each pair's
router-cycles per second of BookSim's loop (its ``Total run time``) and of pdes's kernel,
their ratio, and per load the medians.  BookSim2 simulates 5,000 to 10,000 router-cycles per
second on SF q=13 at 0.5: shorten the runs (``--warmup 300 --measure 3000``: about 3 minutes per
BookSim run at 0.5 on a 2-core AMD EPYC) rather than use the defaults.

The sample period (the window the kernel runs between exchanges) is 200 cycles, or the
measured cycles when fewer; the rates divide by the cycles simulated, not by samples.  A child
that fails ends the benchmark with the end of its error output and one line naming the run.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from models.core.errors import ParameterError  # noqa: E402


def one(q, p, load, warmup, measure, vcs, sets=()):
    import numpy as np

    from pdes import config as C
    from pdes.comm import LocalGroup
    from pdes.build import make_parts, prepare
    from pdes.loop import Engine

    cfg = C.resolve({}, [f"topology.q={q}", f"topology.p={p}", f"router.num_vcs={vcs}",
                         "router.link_latency=1", "router.buffer_flits=64", "router.packet_size=1",
                         f"traffic.load={load}", f"measure.warmup_cycles={warmup}",
                         f"measure.measure_cycles={measure}",
                         f"measure.sample_period={min(200, measure)}", "measure.drain_cycles=5000",
                         *sets])
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


def child_cmd(args, load: float) -> list[str]:
    """The command of one pdes run (a child process) at ``load``."""
    return [sys.executable, __file__, "--child", "--q", str(args.q), "--p", str(args.p),
            "--vcs", str(args.vcs), "--loads", str(load), "--warmup", str(args.warmup),
            "--measure", str(args.measure), *[f"--set={kv}" for kv in args.set]]


def child_stdout(cmd: list[str], what: str) -> str:
    """Standard output of ``cmd``; if it fails, exit with the end of its standard error and one
    line naming ``what`` (its status alone would hide the child's own error)."""
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        tail = r.stderr.strip().splitlines()[-20:]
        raise SystemExit("\n".join([*tail, f"bench_engine: {what} failed (status {r.returncode})"]))
    return r.stdout


def side_by_side(args) -> int:
    """--booksim: BookSim2 and the engine benchmark timed alternately on one core."""
    import booksim_parity as bp        # run_scripts/ is this script's directory
    binary = shutil.which(args.booksim) or args.booksim
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        raise SystemExit(f"bench_engine: --booksim: {args.booksim!r} is not an executable file")
    if args.repeats < 1:
        raise SystemExit(f"bench_engine: --repeats: must be at least 1, got {args.repeats}")
    if args.vcs != 2:
        raise SystemExit("bench_engine: --vcs: BookSim's side runs the parity cases' 2 VCs")
    bad = [x for x in args.loads if not 0 < x <= 1]
    if bad:
        raise SystemExit(f"bench_engine: --loads: every load must be in (0, 1], got {bad[0]:g}")
    pin = bp.pinned_to(args.cpu, "bench_engine")
    period = max(1, (args.warmup + args.measure) // bp.SPEED_PERIODS)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        net = f"sf{args.q}_p{args.p}.anynet"
        routers = bp.export_slimfly(work, args.q, args.p, net)
        print(f"Slim Fly q={args.q} p={args.p}, {routers} routers, 2 VCs, link latency 1; BookSim: "
              f"anynet min, 32 flits per VC, internal_speedup 2, {bp.SPEED_PERIODS} sample periods "
              f"of {period} cycles then its drain; pdes: this benchmark"
              + (f" with {' '.join(args.set)}" if args.set else "") + f"; {args.repeats} pairs "
              "per load, alternating", flush=True)
        for load in args.loads:
            cfg = work / f"speed_{load:g}.cfg"
            cfg.write_text(bp.speed_config(args.q, args.p, net, load, 1, 2, period))
            for pair in range(1, args.repeats + 1):
                b = bp.speed_booksim(binary, cfg, pin)
                rb = bp._rate(routers, b, "loop_s")       # None without a completed run
                out = child_stdout([*pin, *child_cmd(args, load)], f"the pdes run at load {load:g}")
                p = json.loads(out.strip().splitlines()[-1])
                rp = p["router_cycles_per_s"]
                why = b.get("error") or ("BookSim: unstable" if b.get("unstable") else "")
                rows.append((load, pair, b, rb, p, rp, why))
                print(f"load {load:g} pair {pair}: BookSim {b.get('cycles') or '-'} cycles in "
                      f"{bp._fmt(b.get('loop_s'))} s, pdes {p['cycles']} cycles in "
                      f"{p['kernel_s']:.2f} s{'; ' + why if why else ''}", flush=True)
    print(f"load average at end: {bp.load_average()}")
    print()
    print("router-cycles per second: BookSim's loop (its 'Total run time') and pdes's kernel "
          "(kernel_s), each over the cycles it simulated")
    print(f"{'load':>5s} {'pair':>6s} {'BookSim2':>10s} {'pdes':>11s} {'pdes/BookSim':>13s}")
    for load in args.loads:
        mine = [x for x in rows if x[0] == load]
        for _, pair, _, rb, _, rp, _ in mine:
            ratio = bp._ratio(rp, rb)
            print(f"{load:5g} {pair:>6d} {bp._fmt(rb, ',.0f'):>10s} {rp:>11,.0f} "
                  f"{bp._fmt(ratio, '.1f'):>13s}")
        mb = bp._median(x[3] for x in mine)
        mr = bp._median(bp._ratio(x[5], x[3]) for x in mine)
        print(f"{load:5g} {'median':>6s} {bp._fmt(mb, ',.0f'):>10s} "
              f"{bp._median(x[5] for x in mine):>11,.0f} {bp._fmt(mr, '.1f'):>13s}")
    return 0


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
    ap.add_argument("--booksim", metavar="PATH",
                    help="also time this BookSim2 binary on the same network, alternating")
    ap.add_argument("--repeats", type=int, help="with --booksim: pairs per load (default 3)")
    ap.add_argument("--cpu", type=int, help="with --booksim: the CPU to pin the runs to "
                                            "(default: the first this process may run on)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.booksim:
        if args.repeats is None:
            args.repeats = 3
        sys.exit(side_by_side(args))
    if args.repeats is not None or args.cpu is not None:
        ap.error("--repeats, --cpu: only with --booksim")
    if args.child:
        try:
            print(json.dumps(one(args.q, args.p, args.loads[0], args.warmup, args.measure,
                                 args.vcs, args.set)))
        except ParameterError as exc:
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(2)
        return
    rows = []
    for load in args.loads:
        out = child_stdout(child_cmd(args, load), f"the run at load {load:g}")
        rows.append(json.loads(out.strip().splitlines()[-1]))
    keys = ["load", "accepted", "saturated", "cycles", "kernel_s", "router_cycles_per_s",
            "flit_hops_per_s_window", "first_call_s", "prepare_s", "peak_rss_mb"]
    print(f"Slim Fly q={args.q} p={args.p}: {rows[0]['routers']} routers, {rows[0]['endpoints']} endpoints,"
          f" {args.vcs} VCs, link latency 1, one core" + (f"; {' '.join(args.set)}" if args.set else ""))
    print("  ".join(f"{k:>14s}" for k in keys))
    for r in rows:
        print("  ".join(f"{str(r[k]):>14s}" for k in keys))


if __name__ == "__main__":
    main()
