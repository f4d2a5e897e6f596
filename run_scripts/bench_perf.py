"""Where the host's time goes in the cycle kernel: perf's clock samples of the compiled
stages, per stage and per instruction.

The engine benchmark's network (Slim Fly q=13 p=9, minimal routing, uniform traffic, 1-flit
packets, 2 VCs, link latency 1; ``bench_engine.py``) runs once under ``perf record -e
cpu-clock``: a software event, so it works where perf has no hardware counters (as on the
virtual machine of docs/performance.md), and on the host's own kernels, the code a run
loads from the cache (``bench_cachegrind.py`` counts instructions of kernels compiled for
another CPU).  The run first fills the cache without perf, then runs ``--warmup`` cycles and
``--cycles`` measured ones under perf.  The measured run keeps the object code of every
compiled function it loads and the address it was loaded at; each sample's instruction
address is mapped to its function and its offset there.

Printed: the samples in the window loop's three stages (endpoints, routers: the routing and
the allocators inlined into it, outputs) as shares of the kernel's samples and of all
samples, the kernel's router-cycles per second during the run, and for each stage its
``--top`` instructions with the most samples, disassembled (``objdump``, when present) with
the instruction before each: a clock sample lands on the instruction after one that made
the core wait, so a hot instruction that follows a load is that load's latency.  Then the
``--top`` functions of "other compiled code" with the most samples: a helper LLVM did not
inline into a stage shows there, a call per router or flit that passes every array of its
arguments.

    python run_scripts/bench_perf.py                         # SF q=13, load 0.5
    python run_scripts/bench_perf.py --load 0.1 --top 8 --json out.json
    python run_scripts/bench_perf.py --set router.allocation=booksim

Needs ``perf`` (``--perf``) allowed to sample a process it starts
(``/proc/sys/kernel/perf_event_paranoid`` at most 2) and ``nm`` (binutils).
"""
from __future__ import annotations

import argparse
import bisect
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from bench_cachegrind import engine_part  # run as a script: run_scripts/ is on the path
from compiled_code import (OTHER, OUTSIDE, STAGES, capture, disassemble, locator, short_name,
                           stage_of, symbols)


def child(args) -> None:
    """Build the network, run ``--warmup`` cycles and then ``--cycles`` cycles; with
    ``--outdir``, save the object code of the compiled functions loaded and print their
    symbols (address, size, name, object file, offset in it) with the figures, as JSON."""
    captured = capture() if args.outdir else None
    prep, part, cycles = engine_part(args)
    cycles(0, args.warmup)
    syms = symbols(captured, args.outdir) if args.outdir else []
    t = time.perf_counter()
    c0 = time.process_time()
    cycles(args.warmup, args.warmup + args.cycles)
    secs, cpu = time.perf_counter() - t, time.process_time() - c0
    print(json.dumps({"routers": int(prep.topo.n_routers), "cycles": args.cycles,
                      "kernel_s": secs, "kernel_cpu_s": cpu,
                      "link_flits": int(part.arrays["link_flits"].sum()),
                      "symbols": syms}))


def aggregate(ips, syms) -> tuple[collections.Counter, dict]:
    """Samples per stage (:func:`stage_of`; :data:`OUTSIDE` for addresses in no symbol),
    and per symbol name a Counter of the samples at each offset in its object file."""
    where = locator(syms)
    per_stage = collections.Counter()
    per_symbol: dict = {}
    for ip, n in collections.Counter(ips).items():
        at = where(ip)
        if at is None:
            per_stage[OUTSIDE] += n
            continue
        name, off = at
        per_stage[stage_of(name)] += n
        per_symbol.setdefault(name, collections.Counter())[off] += n
    return per_stage, per_symbol


def perf_ips(perf: str, data: str) -> list[int]:
    """The instruction address of every sample in ``data`` (``perf script``)."""
    r = subprocess.run([perf, "script", "-i", data, "-F", "ip"], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"bench_perf: perf script failed:\n{r.stderr[-2000:]}")
    out = []
    for line in r.stdout.split():
        try:
            out.append(int(line, 16))
        except ValueError:
            pass
    return out


def child_cmd(args, outdir: str | None, cycles: int) -> list[str]:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--q", str(args.q),
           "--p", str(args.p), "--vcs", str(args.vcs), "--load", str(args.load),
           "--warmup", str(args.warmup), "--cycles", str(cycles)]
    for s in args.set:
        cmd += ["--set", s]
    if outdir:
        cmd += ["--outdir", outdir]
    return cmd


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--q", type=int, default=13)
    ap.add_argument("--p", type=int, default=9)
    ap.add_argument("--vcs", type=int, default=2)
    ap.add_argument("--load", type=float, default=0.5)
    ap.add_argument("--warmup", type=int, default=200, help="cycles before the sampled ones")
    ap.add_argument("--cycles", type=int, default=3000, help="cycles sampled")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="config override (repeatable)")
    ap.add_argument("--freq", type=int, default=4999, help="samples per second")
    ap.add_argument("--top", type=int, default=12, help="instructions shown per stage")
    ap.add_argument("--perf", default="perf", help="the perf executable")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--outdir", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args)
        return 0
    if args.cycles <= 0 or args.warmup < 0 or args.top < 0 or args.freq <= 0:
        ap.error("--cycles and --freq must be positive, --warmup and --top not negative")
    perf = shutil.which(args.perf)
    if perf is None:
        ap.error(f"--perf: {args.perf!r} not found")
    if shutil.which("nm") is None:
        ap.error("nm (binutils) not found")
    objdump = shutil.which("objdump")
    # fill the compiled-code cache first: the sampled run loads the kernels
    r = subprocess.run(child_cmd(args, None, 1), capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"bench_perf: the run without perf failed:\n{r.stderr[-3000:]}")
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "perf.data")
        cmd = [perf, "record", "-q", "-e", "cpu-clock", "-F", str(args.freq), "-o", data,
               "--", *child_cmd(args, d, args.cycles)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"bench_perf: perf record failed:\n{r.stderr[-3000:]}")
        run = json.loads(r.stdout.strip().splitlines()[-1])
        per_stage, per_symbol = aggregate(perf_ips(perf, data), run["symbols"])
        total = sum(per_stage.values())
        kernel = sum(per_stage[s] for s in STAGES)
        if kernel == 0:
            raise SystemExit("bench_perf: no sample in the kernel's stages")
        rate = run["routers"] * run["cycles"] / run["kernel_s"]
        res = {"q": args.q, "p": args.p, "load": args.load, "cycles": args.cycles,
               "router_cycles_per_s": rate, "samples": total, "kernel_samples": kernel,
               "stages": {s: per_stage[s] for s in (*STAGES, OTHER, OUTSIDE)}, "top": {}}
        print(f"Slim Fly q={args.q} p={args.p}, load {args.load}, {args.set or 'defaults'}: "
              f"{args.cycles} cycles after {args.warmup}, {rate:,.0f} router-cycles/s in the "
              f"kernel (under perf); {total} samples, {kernel} in the stages")
        for s in (*STAGES, OTHER, OUTSIDE):
            share = f"{100 * per_stage[s] / kernel:5.1f}% of the stages, " if s in STAGES else ""
            print(f"  {s:<26} {per_stage[s]:>8}  {share}{100 * per_stage[s] / total:5.1f}% of all")
        syms = {n: (int(off), int(size), path) for _, size, n, path, off in run["symbols"]}
        for name, counts in sorted(per_symbol.items(), key=lambda kv: -sum(kv[1].values())):
            s = stage_of(name)
            if s not in STAGES or s in res["top"]:
                continue
            off, size, path = syms[name]
            text = disassemble(objdump, path, off, off + size)
            order = sorted(text)
            n = sum(counts.values())
            rows = []
            print(f"{s}: its {args.top} hottest instructions (samples, share of the stage, "
                  f"offset; the instruction before, then the sampled one)")
            for o, c in counts.most_common(args.top):
                i = bisect.bisect_left(order, o)
                before = text.get(order[i - 1], "") if 0 < i <= len(order) else ""
                rows.append({"offset": o - off, "samples": c, "before": before,
                             "instruction": text.get(o, "")})
                print(f"  {c:>6} {100 * c / n:5.1f}%  +{o - off:<6x} {before:<38.38} | "
                      f"{text.get(o, '')}")
            res["top"][s] = rows
        # a helper LLVM did not inline into a stage runs as a function of its own: its
        # samples are "other compiled code" (its arguments are pushed at every call)
        others = sorted(((sum(c.values()), n) for n, c in per_symbol.items()
                         if stage_of(n) == OTHER), reverse=True)[:args.top]
        res["other"] = [{"symbol": n, "samples": k} for k, n in others]
        if others:
            print(f"{OTHER}: its {len(others)} functions with the most samples")
            for k, n in others:
                print(f"  {k:>6}  {short_name(n)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
