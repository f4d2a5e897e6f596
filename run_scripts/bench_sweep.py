"""A study as one sweep against the same points as separate ``pdes run`` processes.

Slim Fly q=5 (p=4), uniform traffic, 4 routings (min, valiant, ugal_l, ugal_g) x 5 loads
(0.1..0.5), 1,000 warm-up and 2,000 measured cycles per point: 20 points.  Runs a short
warm-up sweep of the 4 routings first so the compiled-kernel cache holds every kernel, then

* ``python -m pdes sweep ... -o <tmp>/study.h5`` once (one process),
* a sweep of its first load alone, one point per routing (the time outside the kernel of
  the two sweeps gives the start-up, which a sweep pays once: the process, imports,
  building the network and loading each routing's kernel, and the time per point), and
* twenty ``python -m pdes run ...`` processes, one per point (not with ``--no-runs``),

and prints the wall times, their ratio, the CPU time of each (children's user + system),
and the share of the sweep's wall time spent outside the simulation kernel (the sum of the
points' ``/run`` ``kernel_s`` against the sweep's wall time), split into the start-up and
the time per point outside the kernel.  It checks that every point of the sweep equals its
single run (accepted load and mean latency).

    python run_scripts/bench_sweep.py [--ranks N] [--measure 2000] [--no-runs]

With ``--ranks N`` both run under ``mpiexec -n N``.  The machine may be shared: run it twice,
and quote the CPU times beside the wall times.  The ``pdes`` commands run this checkout's
package; the sample period is 200 cycles, or ``--measure`` when fewer.  A command that fails
ends the script with the end of its error output and one line naming the command.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUTINGS = ("min", "valiant", "ugal_l", "ugal_g")
LOADS = (0.1, 0.2, 0.3, 0.4, 0.5)


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd, what):
    """Run ``cmd`` with this checkout first on PYTHONPATH; if it fails, exit with the end of its
    standard error and one line naming ``what``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [x for x in [env.get("PYTHONPATH")] if x])
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                       check=False)
    if r.returncode != 0:
        tail = r.stderr.strip().splitlines()[-20:]
        raise SystemExit("\n".join([*tail, f"bench_sweep: {what} failed (status {r.returncode})"]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--measure", type=int, default=2000)
    ap.add_argument("--no-runs", action="store_true", help="the sweeps only (no single runs)")
    args = ap.parse_args(argv)
    import h5py

    pre = ["mpiexec", "-n", str(args.ranks)] if args.ranks > 1 else []
    base = [sys.executable, "-m", "pdes"]
    sets = ["--set", "measure.warmup_cycles=1000", "--set", f"measure.measure_cycles={args.measure}",
            "--set", f"measure.sample_period={min(200, args.measure)}",
            "--set", "router.num_vcs=4", "--quiet"]
    with tempfile.TemporaryDirectory() as d:
        # warm the cache with every routing's kernels
        run(pre + base + ["sweep", "--set", "measure.warmup_cycles=100", "--set",
                          "measure.measure_cycles=200", "--set", "router.num_vcs=4", "--quiet",
                          "--vary", "routing.algorithm=" + ",".join(ROUTINGS), "--loads", "0.1",
                          "-o", os.path.join(d, "warm.h5")], "the warm-up sweep")
        study = os.path.join(d, "study.h5")
        c0, t0 = child_cpu(), time.perf_counter()
        run(pre + base + ["sweep", *sets, "--vary", "routing.algorithm=" + ",".join(ROUTINGS),
                          "--loads", ",".join(map(str, LOADS)), "-o", study], "the sweep")
        t_sweep, c_sweep = time.perf_counter() - t0, child_cpu() - c0
        few = os.path.join(d, "few.h5")
        t0 = time.perf_counter()
        run(pre + base + ["sweep", *sets, "--vary", "routing.algorithm=" + ",".join(ROUTINGS),
                          "--loads", str(LOADS[0]), "-o", few], "the sweep of the first load")
        t_few = time.perf_counter() - t0
        with h5py.File(few) as f:
            k_few = sum(float(g["run"].attrs["kernel_s"]) for g in f["points"].values())
            n_few = len(f["points"])
        c0, t0 = child_cpu(), time.perf_counter()
        singles = {}
        if not args.no_runs:
            for alg in ROUTINGS:
                for load in LOADS:
                    out = os.path.join(d, f"{alg}-{load}.h5")
                    run(pre + base + ["run", *sets, "--set", f"routing.algorithm={alg}",
                                      "--set", f"traffic.load={load}", "-o", out],
                        f"pdes run of {alg} at load {load}")
                    singles[(alg, load)] = out
        t_runs, c_runs = time.perf_counter() - t0, child_cpu() - c0
        kernel = 0.0
        with h5py.File(study) as f:
            for row in f["table"][()]:
                g = f["points"][row["point"].decode()]
                kernel += float(g["run"].attrs["kernel_s"])
                if singles:
                    with h5py.File(singles[(row["routing.algorithm"].decode(),
                                            float(row["load"]))]) as s:
                        assert s["summary/accepted_load"][()] == row["accepted"]
                        assert s["summary/packet_latency_mean"][()] == row["latency_mean"]
            npts = len(f["table"])
    print(f"20 points of SF q=5 ({', '.join(ROUTINGS)} x loads {LOADS[0]}..{LOADS[-1]}, "
          f"{args.measure} measured cycles), {args.ranks} rank(s)"
          + ("; every point equals its single run" if singles else ""))
    print(f"one sweep:          {t_sweep:7.2f} s wall  {c_sweep:7.2f} s CPU")
    if singles:
        print(f"20 pdes run calls:  {t_runs:7.2f} s wall  {c_runs:7.2f} s CPU")
        print(f"ratio (runs/sweep): {t_runs / t_sweep:7.2f} x wall  {c_runs / c_sweep:7.2f} x CPU")
    outside, outside_few = t_sweep - kernel, t_few - k_few
    per = (outside - outside_few) / (npts - n_few)     # the two sweeps differ by points only
    start = outside - npts * per
    print(f"sweep outside the kernel: {100 * outside / t_sweep:.1f}% of its wall time "
          f"(kernel {kernel:.2f} s of {t_sweep:.2f} s)")
    print(f"  of which start-up {start:.2f} s (from a sweep of {n_few} points, one per routing: "
          f"the process, imports, network, loading the kernels) and {1000 * per:.0f} ms per point "
          f"against {1000 * kernel / npts:.0f} ms in the kernel "
          f"({100 * npts * per / (npts * per + kernel):.1f}% of the points' time)")
    print(f"load average: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
