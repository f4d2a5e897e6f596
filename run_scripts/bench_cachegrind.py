"""Where a flit-hop's time goes, without hardware counters: instructions and simulated cache
misses per flit-hop of the cycle kernel, from Valgrind's cachegrind.

The engine benchmark's network (Slim Fly q=13 p=9, minimal routing, uniform traffic, 1-flit
packets, 2 VCs, link latency 1; ``bench_engine.py``) runs twice under cachegrind, from the
same seed: ``--warmup`` cycles and then ``--short`` or ``--long`` cycles.  The two runs are
the same up to the end of the shorter one, so the difference of their totals is what the
``--long`` minus ``--short`` cycles cost at steady state: Python's start-up, the network
build, loading the kernels and the warm-up cancel out.  The flit-hops of those cycles are
the difference of the runs' link counters.  Two more runs of the same lengths without
Valgrind give the native time of those cycles.

Printed per flit-hop (a flit crossing a router-to-router link; a router traversal is one
switch move and one link move) and per router-cycle: instructions, data reads and writes,
first-level data cache misses and last-level misses of the simulated caches, the bytes
those misses move (64-byte lines), and with the native time the rates they imply.

    python run_scripts/bench_cachegrind.py                       # SF q=13, load 0.5
    python run_scripts/bench_cachegrind.py --load 0.1 --json out.json
    python run_scripts/bench_cachegrind.py --d1 32768,8,64 --ll 1048576,8,64   # the caches simulated

The simulated caches default to a 32 KiB 8-way first level and a 1 MiB 8-way last level,
a core's L1d and L2 on the AMD EPYC (Zen 4) of docs/performance.md; its shared L3 is not
simulated, so a last-level miss here is an L2 miss there, not necessarily a memory access.

Every run compiles the kernels for one named CPU (``--cpu``, default ``x86-64-v3``: AVX2,
which Valgrind runs) instead of the host's: Numba keys its cache on the CPU, and under
Valgrind the processor reports other features, so the runs would otherwise compile the
kernels again under Valgrind (hours).  The code measured is thus that CPU's, close to but
not the same as the host-tuned kernels of a normal run; the first run compiles it once.
Under cachegrind everything runs about 50 times slower: the defaults take several minutes.

``--stages N`` runs the two Valgrind runs under callgrind instead (the same cache
simulation, counted per instruction address; slower still) and the runs keep the object
code of every compiled function they load (``compiled_code.py``, as ``bench_perf.py``
does): the figures are also split by the window loop's stage (endpoints, routers,
outputs, other compiled code, the rest), and each stage's ``N`` instructions with the most
last-level misses are printed, disassembled, with their misses and instructions per
flit-hop, and its ``N`` costliest runs of instructions by the instructions they execute per
flit-hop (a run: instructions in code order executed equally often, with none executed
another number of times between them: a basic block, or a few in a row).  A miss is counted at the instruction that made it, so these are the loads and
stores whose lines came from beyond the last level.  With ``objdump`` each stage's
instructions with an operand in its stack frame are also counted per flit-hop: moves from
the frame (values and array addresses reloaded), moves into it (spilled), other uses.

    python run_scripts/bench_cachegrind.py --stages 12 --json cg.json

``--branches`` has Valgrind simulate branch prediction as well (``--branch-sim=yes``: its
simple predictor, not the host's): conditional and indirect branches and their
mispredictions per flit-hop, per stage with ``--stages``, and each stage's ``N`` branches with
the most mispredictions, disassembled, with how often they ran.

    python run_scripts/bench_cachegrind.py --q 5 --p 4 --stages 25 --branches
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from compiled_code import (OTHER, OUTSIDE, STAGES, capture, disassemble, locator, stage_of,
                           symbols)

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

EVENTS = ("Ir", "Dr", "Dw", "D1mr", "D1mw", "DLmr", "DLmw")
# with --branches: conditional branches and their mispredictions, indirect ones and theirs
BRANCH_EVENTS = ("Bc", "Bcm", "Bi", "Bim")


def events_of(args) -> tuple:
    """The events counted: :data:`EVENTS`, and :data:`BRANCH_EVENTS` with ``--branches``."""
    return EVENTS + BRANCH_EVENTS if args.branches else EVENTS


def engine_part(args):
    """``(prep, part, cycles)``: the engine benchmark's network with ``args``'s size, VCs,
    load and overrides as one part whose link counters count every cycle up to ``--warmup``
    plus ``--cycles``, and ``cycles(t0, t1)``, which runs cycles ``t0 .. t1 - 1`` in windows
    of the sample period (one call of the kernel each, as a run does).  Also used by
    ``bench_perf.py``."""
    import numpy as np

    from models.core import params as P
    from pdes import config as C
    from pdes.build import make_parts, prepare
    cfg = C.resolve({}, [f"topology.q={args.q}", f"topology.p={args.p}",
                         f"router.num_vcs={args.vcs}", "router.link_latency=1",
                         "router.buffer_flits=64", "router.packet_size=1",
                         f"traffic.load={args.load}", *args.set])
    prep = prepare(cfg)
    owner = np.zeros(prep.topo.n_routers, np.int32)
    W = cfg["measure"]["sample_period"]
    part = make_parts(prep, owner, [0], W)[0]
    part.prm[P.PR_M0], part.prm[P.PR_M1] = 0, args.warmup + args.cycles   # links count all cycles

    def cycles(t0, t1):
        for t in range(t0, t1, W):
            part.advance(t, min(t + W, t1))
    return prep, part, cycles


def child(args) -> None:
    """Build the network, run ``--warmup`` and then ``--cycles`` cycles, print JSON (with
    ``--outdir``: and the compiled functions' symbols, :func:`compiled_code.symbols`)."""
    captured = capture() if args.outdir else None
    prep, part, cycles = engine_part(args)
    cycles(0, args.warmup)
    syms = symbols(captured, args.outdir) if args.outdir else []
    t = time.perf_counter()
    c0 = time.process_time()
    cycles(args.warmup, args.warmup + args.cycles)
    print(json.dumps({"routers": int(prep.topo.n_routers), "cycles": args.cycles,
                      "link_flits": int(part.arrays["link_flits"].sum()),
                      "kernel_s": time.perf_counter() - t,
                      "kernel_cpu_s": time.process_time() - c0, "symbols": syms}))


def cachegrind_totals(path: str) -> dict:
    """The ``summary:`` totals of a cachegrind output file, by event name."""
    events = summary = None
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("summary:"):
                summary = [int(x) for x in line.split()[1:]]
    if events is None or summary is None:
        raise SystemExit(f"bench_cachegrind: no totals in {path}")
    return dict(zip(events, summary))


def callgrind_costs(path: str) -> tuple[list, dict]:
    """(event names, {instruction address: its own counts}) of a callgrind output file
    written with ``--dump-instr=yes --dump-line=no --compress-pos=no`` (absolute
    addresses); a call's inclusive counts (the line after ``calls=``) are left out."""
    events, costs, call = None, {}, False
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("calls="):
                call = True
            elif line.startswith("0x"):
                if call:
                    call = False
                    continue
                p = line.split()
                c = [int(x) for x in p[1:]]
                have = costs.get(int(p[0], 16))
                if have is None:
                    costs[int(p[0], 16)] = c + [0] * (len(events) - len(c))
                else:
                    for i, x in enumerate(c):
                        have[i] += x
    if events is None:
        raise SystemExit(f"bench_cachegrind: no events in {path}")
    return events, costs


def by_stage(run: dict, path: str, ev: tuple = EVENTS) -> tuple[dict, dict]:
    """A callgrind run's counts of the events ``ev`` per stage (:data:`compiled_code.STAGES`,
    ``OTHER``, ``OUTSIDE``: the totals less the compiled code's) and per (symbol, offset in
    its object file)."""
    events, costs = callgrind_costs(path)
    col = [events.index(e) if e in events else None for e in ev]
    where = locator(run["symbols"])
    stages = {s: [0] * len(ev) for s in (*STAGES, OTHER)}
    per_ins: dict = {}
    for ip, c in costs.items():
        at = where(ip)
        if at is None:
            continue
        v = [0 if i is None else c[i] for i in col]
        acc = stages[stage_of(at[0])]
        for i, x in enumerate(v):
            acc[i] += x
        have = per_ins.setdefault(at, [0] * len(ev))
        for i, x in enumerate(v):
            have[i] += x
    totals = cachegrind_totals(path)
    stages[OUTSIDE] = [totals.get(e, 0) - sum(stages[s][i] for s in (*STAGES, OTHER))
                       for i, e in enumerate(ev)]
    return ({s: dict(zip(ev, v)) for s, v in stages.items()},
            {k: dict(zip(ev, v)) for k, v in per_ins.items()})


def stage_figures(args, a: tuple, b: tuple, hops: int, objdump: str | None) -> dict:
    """Per stage: the events per flit-hop (the difference of the two runs' counts), its
    ``args.stages`` instructions with the most last-level misses per flit-hop, and its
    ``args.stages`` runs of instructions that cost the most instructions per flit-hop (a
    run: instructions in code order executed equally often, with none executed another
    number of times between them)."""
    (ra, path_a), (rb, path_b) = a, b
    ev = events_of(args)
    sa, ia = by_stage(ra, path_a, ev)
    sb, ib = by_stage(rb, path_b, ev)
    out = {"stages": {s: {e: (sb[s][e] - sa[s][e]) / hops for e in ev} for s in sb},
           "top": {}, "runs": {}, "frame": {}, "mispredicts": {}}
    syms = {n: (int(off), int(size), path) for _, size, n, path, off in rb["symbols"]}
    zero = dict.fromkeys(ev, 0)
    text_of = {}

    def text(name, off):
        if name not in text_of:
            lo, size, path = syms[name]
            text_of[name] = disassemble(objdump, path, lo, lo + size)
        return text_of[name].get(off, "")

    def listed(name, off, n):
        """An instruction's row of a stage's list: where, what, its counts per flit-hop."""
        return {"symbol": name, "offset": off - syms[name][0], "instruction": text(name, off),
                **{e: v / hops for e, v in n.items()}}
    for s in STAGES:
        rows = []
        for (name, off), c in ib.items():
            if stage_of(name) != s:
                continue
            n = {e: c[e] - ia.get((name, off), zero)[e] for e in ev}
            rows.append((name, off, n))
        rows.sort(key=lambda r: (r[0], r[1]))
        if objdump is not None:
            out["frame"][s] = frame_traffic(rows, text, hops)
        misses = sorted(rows, key=lambda r: (-(r[2]["DLmr"] + r[2]["DLmw"]), r[0], r[1]))
        out["top"][s] = [listed(name, off, n) for name, off, n in misses[:args.stages]]
        if args.branches:
            mis = sorted(rows, key=lambda r: (-(r[2]["Bcm"] + r[2]["Bim"]), r[0], r[1]))
            out["mispredicts"][s] = [listed(name, off, n) for name, off, n in mis[:args.stages]
                                     if n["Bcm"] + n["Bim"] > 0]
        runs = []
        for name, off, n in rows:
            last = runs[-1] if runs else None
            if last and last["symbol"] == name and last["count"] == n["Ir"]:
                last["end"] = off
                last["n"] += 1
                last["lm"] += n["DLmr"] + n["DLmw"]
            elif n["Ir"] > 0:
                runs.append({"symbol": name, "start": off, "end": off, "count": n["Ir"],
                             "n": 1, "lm": n["DLmr"] + n["DLmw"]})
        runs.sort(key=lambda r: (-r["count"] * r["n"], r["symbol"], r["start"]))
        out["runs"][s] = [{"symbol": r["symbol"], "offset": r["start"] - syms[r["symbol"]][0],
                           "end": r["end"] - syms[r["symbol"]][0], "instructions": r["n"],
                           "executions": r["count"] / hops, "Ir": r["count"] * r["n"] / hops,
                           "L2_misses": r["lm"] / hops, "first": text(r["symbol"], r["start"])}
                          for r in runs[:args.stages]]
    return out


def frame_kind(ins: str) -> str | None:
    """What an instruction (AT&T syntax) does with the stack frame: ``load`` (a move from
    it: a value or an array's address spilled earlier), ``store`` (a move into it), ``use``
    (another instruction with an operand there), or None (no operand in the frame; pushes,
    pops and calls are the prologue's and the calls', not the body's)."""
    if "(%rsp)" not in ins:
        return None
    op, _, operands = ins.partition(" ")
    if op.startswith("mov") or op.startswith("vmov"):
        src = operands.split(",")[0]
        return "load" if "(%rsp)" in src else "store"
    return "use"


def frame_traffic(rows: list, text, hops: int) -> dict:
    """A stage's instructions per flit-hop that move values between the registers and the
    stack frame (``rows``: (symbol, address, counts)), by :func:`frame_kind`."""
    res = {"load": 0.0, "store": 0.0, "use": 0.0}
    for name, off, n in rows:
        kind = frame_kind(text(name, off))
        if kind is not None:
            res[kind] += n["Ir"] / hops
    return res


def print_stages(fig: dict, n: int) -> None:
    st = fig["stages"]
    ev = tuple(next(iter(st.values())))
    lm = sum(v["DLmr"] + v["DLmw"] for v in st.values())
    print("per flit-hop by stage:")
    print(f"  {'stage':<26}" + "".join(f"{e:>9}" for e in ev))
    for s, v in st.items():
        print(f"  {s:<26}" + "".join(f"{v[e]:>9.1f}" for e in ev))
    if fig["frame"]:
        print("per flit-hop by stage, instructions with an operand in the stack frame: moves "
              "from it, moves into it, others")
        for s, v in fig["frame"].items():
            ir = st[s]["Ir"]
            tot = v["load"] + v["store"] + v["use"]
            share = 100 * tot / ir if ir > 0 else 0.0
            print(f"  {s:<26}{v['load']:>9.1f}{v['store']:>9.1f}{v['use']:>9.1f}"
                  f"   {share:4.1f}% of its instructions")
    for s, rows in fig["top"].items():
        print(f"{s}: its {n} instructions with the most last-level misses (per flit-hop: "
              f"read and write misses, instructions executed; share of all the misses; "
              f"offset, instruction)")
        for r in rows:
            share = 100 * (r["DLmr"] + r["DLmw"]) / lm if lm > 0 else 0.0
            print(f"  {r['DLmr']:6.2f} {r['DLmw']:6.2f} {r['Ir']:7.2f} {share:5.1f}%  "
                  f"+{r['offset']:<6x} {r['instruction']}")
        if s in fig["mispredicts"]:
            print(f"{s}: its {n} branches with the most mispredictions (per flit-hop: "
                  f"mispredictions, executions; offset, instruction)")
            for r in fig["mispredicts"][s]:
                print(f"  {r['Bcm'] + r['Bim']:6.2f} {r['Bc'] + r['Bi']:6.2f}  "
                      f"+{r['offset']:<6x} {r['instruction']}")
        print(f"{s}: its {n} costliest runs of instructions executed equally often (per "
              f"flit-hop: instructions, executions, last-level misses; instructions in the "
              f"run, offsets, the first one)")
        for r in fig["runs"][s]:
            print(f"  {r['Ir']:7.1f} {r['executions']:6.2f} {r['L2_misses']:6.2f} "
                  f"{r['instructions']:4d}  +{r['offset']:x}..+{r['end']:x}  {r['first']}")


def run_child(args, cycles: int, valgrind: str | None, out: str | None) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--cycles", str(cycles),
           "--q", str(args.q), "--p", str(args.p), "--vcs", str(args.vcs),
           "--load", str(args.load), "--warmup", str(args.warmup)]
    for s in args.set:
        cmd += ["--set", s]
    bsim = ["--branch-sim=yes"] if args.branches else []
    if valgrind and args.stages:
        cmd += ["--outdir", os.path.dirname(out) + os.sep + f"obj.{cycles}"]
        os.makedirs(cmd[-1], exist_ok=True)
        cmd = [valgrind, "--tool=callgrind", "--cache-sim=yes", *bsim, f"--D1={args.d1}",
               f"--LL={args.ll}", "--smc-check=all-non-file", "--dump-instr=yes",
               "--dump-line=no", "--compress-pos=no", "--compress-strings=no",
               f"--callgrind-out-file={out}", *cmd]
    elif valgrind:
        cmd = [valgrind, "--tool=cachegrind", "--cache-sim=yes", *bsim, f"--D1={args.d1}",
               f"--LL={args.ll}", "--smc-check=all-non-file", f"--cachegrind-out-file={out}",
               *cmd]
    # one BLAS thread and a fixed hash seed: NumPy's BLAS starts threads that spin-wait a
    # varying while, and string hashes vary per process; either made the two runs' totals
    # differ by tens of millions of instructions that have nothing to do with the cycles
    env = dict(os.environ, NUMBA_CPU_NAME=args.cpu, NUMBA_CPU_FEATURES=args.cpu_features,
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONHASHSEED="0")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"bench_cachegrind: {' '.join(cmd[:3])} ... failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--q", type=int, default=13)
    ap.add_argument("--p", type=int, default=9)
    ap.add_argument("--vcs", type=int, default=2)
    ap.add_argument("--load", type=float, default=0.5)
    ap.add_argument("--warmup", type=int, default=200, help="cycles before the compared ones")
    ap.add_argument("--short", type=int, default=50, help="cycles of the shorter run")
    ap.add_argument("--long", type=int, default=350, help="cycles of the longer run")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="config override for both runs (repeatable)")
    ap.add_argument("--valgrind", default="valgrind", help="the valgrind executable")
    ap.add_argument("--d1", default="32768,8,64", help="simulated L1d: size,ways,line bytes")
    ap.add_argument("--ll", default="1048576,8,64", help="simulated last level: size,ways,line")
    ap.add_argument("--cpu", default="x86-64-v3",
                    help="the CPU the kernels are compiled for, in every run (NUMBA_CPU_NAME)")
    ap.add_argument("--cpu-features", default="+avx2",
                    help="its features (NUMBA_CPU_FEATURES; not empty)")
    ap.add_argument("--stages", type=int, default=0, metavar="N",
                    help="count per instruction (callgrind): the figures per stage and each "
                         "stage's N instructions with the most last-level misses")
    ap.add_argument("--branches", action="store_true",
                    help="also simulate branch prediction: conditional and indirect branches "
                         "and their mispredictions per flit-hop (with --stages: each stage's "
                         "N branches with the most)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cycles", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--outdir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return 0
    if not 0 < args.short < args.long:
        ap.error("--short must be positive and less than --long")
    if args.stages < 0:
        ap.error("--stages must not be negative")
    if args.stages and shutil.which("nm") is None:
        ap.error("--stages: nm (binutils) not found")
    valgrind = shutil.which(args.valgrind)
    if valgrind is None:
        ap.error(f"--valgrind: {args.valgrind!r} not found")
    ev = events_of(args)
    native = {n: run_child(args, n, None, None) for n in (args.short, args.long)}  # also warms the cache
    sim = {}
    with tempfile.TemporaryDirectory() as d:
        for n in (args.short, args.long):
            out = os.path.join(d, f"cg.{n}")
            sim[n] = (run_child(args, n, valgrind, out), cachegrind_totals(out), out)
        a, b = sim[args.short], sim[args.long]
        hops = b[0]["link_flits"] - a[0]["link_flits"]
        stages = stage_figures(args, (a[0], a[2]), (b[0], b[2]), hops,
                               shutil.which("objdump")) if args.stages and hops > 0 else None
    cycles = args.long - args.short
    hops = b[0]["link_flits"] - a[0]["link_flits"]
    if hops <= 0 or native[args.long]["link_flits"] - native[args.short]["link_flits"] != hops:
        raise SystemExit("bench_cachegrind: the runs under Valgrind and without it differ")
    routers = b[0]["routers"]
    diff = {e: b[1].get(e, 0) - a[1].get(e, 0) for e in ev}
    secs = native[args.long]["kernel_s"] - native[args.short]["kernel_s"]
    res = {"q": args.q, "p": args.p, "load": args.load, "routers": routers,
           "cycles": cycles, "flit_hops": hops, "native_s": secs, "d1": args.d1, "ll": args.ll,
           "per_flit_hop": {e: diff[e] / hops for e in ev},
           "per_router_cycle": {e: diff[e] / (routers * cycles) for e in ev}}
    ph = res["per_flit_hop"]
    res["bytes_per_flit_hop_into_l1"] = 64 * (ph["D1mr"] + ph["D1mw"])
    res["bytes_per_flit_hop_past_ll"] = 64 * (ph["DLmr"] + ph["DLmw"])
    res["ns_per_flit_hop"] = 1e9 * secs / hops if secs > 0 else float("nan")
    print(f"Slim Fly q={args.q} p={args.p}, load {args.load}: cycles {args.warmup + args.short}.."
          f"{args.warmup + args.long} ({cycles} cycles, {routers} routers), {hops} flit-hops "
          f"({hops / (routers * cycles):.3f} per router-cycle)")
    print(f"simulated caches: L1d {args.d1}, last level {args.ll}")
    print(f"{'event':<8} {'per flit-hop':>14} {'per router-cycle':>18}")
    for e in ev:
        print(f"{e:<8} {ph[e]:>14.1f} {res['per_router_cycle'][e]:>18.1f}")
    print(f"bytes per flit-hop: {res['bytes_per_flit_hop_into_l1']:.0f} into L1d, "
          f"{res['bytes_per_flit_hop_past_ll']:.0f} from beyond the last level")
    if stages is not None:
        res.update(stages)
        print_stages(stages, args.stages)
    if secs > 0:
        ns = res["ns_per_flit_hop"]
        print(f"native: {ns:.1f} ns per flit-hop ({secs:.3f} s for the {cycles} cycles); "
              f"{ph['Ir'] / ns:.2f} instructions per ns; "
              f"{res['bytes_per_flit_hop_into_l1'] / ns:.2f} GB/s into L1d, "
              f"{res['bytes_per_flit_hop_past_ll'] / ns:.2f} GB/s from beyond the last level")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
