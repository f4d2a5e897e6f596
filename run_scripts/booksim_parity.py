"""Run BookSim configs on BookSim2 and on pdes at a grid of offered loads; print one table.

    python run_scripts/booksim_parity.py --booksim PATH [--booksim-src DIR] [--configs A,B]
                                         [--loads 0.1,0.3] [--seeds N] [--jobs N] [--quick]
                                         [--workdir DIR]
    python run_scripts/booksim_parity.py --speed --booksim PATH [...]   # time both (below)

``--booksim`` is a BookSim2 binary you built (this script never ships or downloads one;
without it, it prints how to build one and exits with status 2).  The configs:

* ``sf5_p1_s1``, ``sf5_p1_s2``, ``sf5_p4_s1``, ``sf5_p4_s2``: Slim Fly q=5 (p=4), exported
  by pdes as an anynet file, ``routing_function = min``, uniform traffic, packets of 1 or 4
  flits (``p``), ``internal_speedup`` 1 or 2 (``s``), 2 VCs x 32 flits, ``credit_delay =
  2``, every other delay 1, written to the work directory;
* ``torus88``, ``mesh88_lat``, ``dragonflyconfig``, ``fattree_config``, ``flatflyconfig``:
  BookSim's own examples, copied from ``DIR/src/examples`` of a BookSim source tree given
  with ``--booksim-src`` (without it they are skipped).

For every load L of ``--loads`` (offered flits per cycle per node) both simulators read
the same file: the config with ``injection_rate_uses_flits = 1; injection_rate = L;``
appended (both keep the last value of a key given twice); ``--quick`` also appends
``sample_period = 500; max_samples = 6;``.  BookSim runs as ``BOOKSIM FILE`` in the work
directory, pdes as ``python -m pdes run FILE --quiet --json``.  With ``--seeds N`` every
(config, load) runs N times on each side, with ``seed = 1;`` .. ``seed = N;`` appended.

Near saturation one seed's mean rests on a few hundred packets of the slowest flows and
differs from another seed's by far more than the two simulators differ (``mesh88_lat`` at
0.14: BookSim 105.5 to 126.0 cycles over four seeds, pdes 103.6 to 122.1), so compare there
with ``--seeds 4`` or more and full sample periods, not with one ``--quick`` run.

Columns: BookSim's ``Network latency average`` and pdes's ``network_latency_mean``
(cycles from a packet's injection into the network to its tail's delivery), their
difference (pdes - BookSim, in cycles and in % of BookSim's; only where both runs are
stable; with ``--seeds`` the means over the seeds), BookSim's ``Accepted flit
rate average`` (its packet rate times the packet size where the flit line is missing;
an unstable run prints no overall figures) and pdes's ``accepted_load`` (flits per cycle
per node).  A run BookSim ends with ``Simulation unstable`` shows ``unstable``; a
config pdes refuses shows ``pdes refuses:`` and pdes's one error line; a pdes run its watchdog stops shows ``deadlock`` (BookSim's
``min`` and pdes's mapping of it let every hop use every VC, which can deadlock); any
other failure shows ``failed`` and the last line of the simulator's error output.  With
``--seeds`` two more columns give each side's lowest and highest latency over the seeds, and
a load is stable on a side only when every seed's run is.

Saturation throughput, per config and side: the highest load L of the grid such that
at L and at every lower load of the grid the run is stable, i.e. the simulator did not
declare it unstable (BookSim: ``Simulation unstable``, its latency blow-up above
``latency_thres``; pdes: ``saturated`` in its summary, or a deadlock) and the accepted
rate is at least 95% of the offered load.  ``< L0`` when the lowest load is already unstable; ``-`` when
the side did not run.

Speed, side by side (``--speed``)::

    python run_scripts/booksim_parity.py --speed --booksim PATH [--q 13 --p 9] [--loads 0.1,0.5]
        [--repeats 3] [--packet-size 1] [--speedup 2] [--cycles 2000] [--cpu N] [--workdir DIR]

times both simulators on one network and config: Slim Fly q, p (exported by pdes as an
anynet file) with the Slim Fly cases' keys above, ``packet_size`` and ``internal_speedup``
from the options, and a fixed length: ``sample_period = cycles / 4; warmup_periods = 1;
max_samples = 4;`` (BookSim stops after ``max_samples`` periods, warm-up included; pdes reads
the same keys as a 1-period warm-up and 3 measured periods), then each drains as it does (BookSim
until every packet has arrived, pdes to the sample boundary after every measured packet has).
pdes runs once first, untimed, so that its compiled kernels are in the cache.  Then, per
load, ``--repeats`` pairs, alternating BookSim, pdes, BookSim, pdes, ..., each a new process
pinned to one CPU with ``taskset`` (the output says when there is no ``taskset``).  Per run
it records the CPU time of the child (user + system, from ``getrusage(RUSAGE_CHILDREN)``) and
the wall time, the cycles simulated (BookSim's ``Time taken is N cycles``, pdes's summary
``cycles``) and the time of the simulation loop (BookSim's ``Total run time``, the wall time of
its simulation after reading the config and building the network; pdes's ``kernel_s`` from
the result file's ``/run``, the wall time inside the compiled kernel).  The table gives
router-cycles per CPU-second of each whole process and per second of each loop, their ratios
pdes / BookSim per pair, and per load the medians (a run its simulator calls unstable or
saturated, or that fails, has no rate: choose loads below saturation).  The CPU model
(lscpu's), the number of CPUs and the load average at start and at end are printed with it.
Compare figures from one sitting only: on a shared machine runs vary.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BUILD_HELP = """\
booksim_parity: needs --booksim PATH, a BookSim2 binary (this script does not ship or fetch one).
Build it from the BookSim2 sources (github.com/booksim/booksim2; needs bison, flex and g++):
    git clone https://github.com/booksim/booksim2
    cd booksim2/src && make
then run:  python run_scripts/booksim_parity.py --booksim booksim2/src/booksim --booksim-src booksim2"""

STABLE_FRACTION = 0.95
"""A run is stable when its accepted rate is at least this fraction of the offered load."""

SF_KEYS = """\
routing_function = min;
traffic = uniform;
num_vcs = 2;
vc_buf_size = 32;
credit_delay = 2;
routing_delay = 1;
vc_alloc_delay = 1;
sw_alloc_delay = 1;
st_final_delay = 1;
vc_allocator = separable_input_first;
sw_allocator = separable_input_first;
sample_period = 1000;
warmup_periods = 3;
max_samples = 10;
seed = 1;
"""


def sf_base(q: int, p: int, network_file: str) -> str:
    """The Slim Fly config of the parity cases on the anynet file ``network_file``."""
    return (f"// Slim Fly q={q} p={p} (exported by pdes), BookSim's anynet min\n"
            f"topology = anynet;\nnetwork_file = {network_file};\n" + SF_KEYS)


SF_BASE = sf_base(5, 4, "sf5.anynet")
SF_CASES = {f"sf5_p{p}_s{s}": f"packet_size = {p};\ninternal_speedup = {s}.0;\n"
            for p in (1, 4) for s in (1, 2)}
EXAMPLES = ("torus88", "mesh88_lat", "dragonflyconfig", "fattree_config", "flatflyconfig")
CONFIGS = (*SF_CASES, *EXAMPLES)
DEFAULT_LOADS = "0.1,0.3,0.5,0.7,0.8,0.9"
QUICK = "sample_period = 500;\nmax_samples = 6;\n"


def _number(pattern: str, text: str) -> float | None:
    """The number after the last match of ``pattern`` (BookSim's overall statistics come last)."""
    found = re.findall(pattern + r"\s*=\s*([-+0-9.eE]+|nan|-?inf)", text)
    return float(found[-1]) if found else None


def parse_booksim(text: str, packet_size: int) -> dict:
    """{"unstable", "latency", "accepted"} of BookSim's standard output."""
    unstable = "Simulation unstable" in text
    lat = _number(r"Network latency average", text)
    acc = _number(r"Accepted flit rate average", text)
    if acc is None:
        pkt = _number(r"Accepted packet rate average", text)
        acc = None if pkt is None else pkt * packet_size
    return {"unstable": unstable, "latency": lat, "accepted": acc}


def packet_size_of(text: str) -> int:
    """The last ``packet_size`` of a BookSim config (BookSim's default 1)."""
    found = re.findall(r"^\s*packet_size\s*=\s*(\d+)\s*;", text, flags=re.M)
    return int(found[-1]) if found else 1


def last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "(no output)"


def booksim_outcome(p: subprocess.CompletedProcess, cfg: Path) -> dict:
    """:func:`parse_booksim` of a finished BookSim run of ``cfg``, with ``error`` when it failed."""
    out = parse_booksim(p.stdout, packet_size_of(cfg.read_text()))
    # BookSim's exit status says nothing (it returns -1 after a completed run): its output does
    if not out["unstable"] and (out["latency"] is None or out["accepted"] is None):
        out["error"] = f"failed (status {p.returncode}): {last_line(p.stderr or p.stdout)}"
    return out


def run_booksim(binary: str, cfg: Path) -> dict:
    p = subprocess.run([binary, cfg.name], cwd=cfg.parent, capture_output=True, text=True)
    return booksim_outcome(p, cfg)


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [x for x in [env.get("PYTHONPATH")] if x])
    return env


def pdes_outcome(p: subprocess.CompletedProcess) -> dict:
    """{"unstable", "latency", "accepted", "cycles"} of a finished ``pdes run --json``, or its
    ``error`` (a refusal, a deadlock the watchdog stopped, any other failure)."""
    if p.returncode == 2:
        errors = [ln for ln in p.stderr.splitlines() if ln.startswith("pdes: error")]
        return {"error": "pdes refuses: " + (errors[0] if errors else last_line(p.stderr))}
    if p.returncode != 0:
        if "SimulationError: deadlock:" in p.stderr:      # the watchdog (routing.vcs = "any")
            return {"unstable": True, "deadlock": True, "latency": None, "accepted": None}
        return {"error": f"failed (status {p.returncode}): {last_line(p.stderr)}"}
    s = json.loads(p.stdout.strip().splitlines()[-1])
    return {"unstable": bool(s["saturated"]), "latency": s["network_latency_mean"],
            "accepted": s["accepted_load"], "cycles": s["cycles"]}


def run_pdes(cfg: Path) -> dict:
    p = subprocess.run([sys.executable, "-m", "pdes", "run", cfg.name, "--quiet", "--json"],
                       cwd=cfg.parent, capture_output=True, text=True, env=_env())
    return pdes_outcome(p)


def stable(r: dict, load: float) -> bool:
    return ("error" not in r and not r.get("unstable") and r.get("accepted") is not None
            and r["accepted"] >= STABLE_FRACTION * load)


def saturation(results: list[tuple[float, dict]]) -> str:
    """The saturation column of one side (see the module docstring)."""
    if not results or all("error" in r for _, r in results):
        return "-"
    best = None
    for load, r in sorted(results, key=lambda x: x[0]):
        if not stable(r, load):
            break
        best = load
    return f"< {min(x for x, _ in results):g}" if best is None else f"{best:g}"


def export_slimfly(work: Path, q: int, p: int | None, name: str) -> int:
    """Write Slim Fly q (p endpoints per router; pdes's default when None), 1-cycle links, as
    the anynet file ``work/name`` with ``pdes topo --export``; its number of routers."""
    sets = ["--set", f"topology.q={q}"] + ([] if p is None else ["--set", f"topology.p={p}"])
    r = subprocess.run([sys.executable, "-m", "pdes", "topo", "slimfly", *sets,
                        "--set", "router.link_latency=1", "--export", "anynet", name, "--force"],
                       cwd=work, capture_output=True, text=True, env=_env())
    if r.returncode != 0:
        raise SystemExit(f"booksim_parity: exporting SF q={q} failed: {last_line(r.stderr)}")
    return sum(1 for ln in (work / name).read_text().splitlines() if ln.startswith("router "))


def write_configs(work: Path, names, booksim_src: str | None, loads, quick: bool,
                  seeds: int = 1) -> dict:
    """{name: {load: [config path per seed]}} (names without a source: {"skip": reason})."""
    out = {}
    if any(n in SF_CASES for n in names):
        export_slimfly(work, 5, None, "sf5.anynet")
    for name in names:
        if name in SF_CASES:
            base = SF_BASE + SF_CASES[name]
        else:
            src = Path(booksim_src or "") / "src" / "examples" / name
            if not booksim_src:
                out[name] = {"skip": "skipped: needs --booksim-src"}
                continue
            if not src.is_file():
                out[name] = {"skip": f"skipped: {src} not found"}
                continue
            base = src.read_text()
        out[name] = {}
        for load in loads:
            out[name][load] = []
            for seed in range(1, seeds + 1):
                path = work / (f"{name}_{load:g}.cfg" if seeds == 1 else f"{name}_{load:g}_s{seed}.cfg")
                path.write_text(base + "\n// booksim_parity\ninjection_rate_uses_flits = 1;\n"
                                f"injection_rate = {load:g};\n" + (QUICK if quick else "")
                                + (f"seed = {seed};\n" if seeds > 1 else ""))
                out[name][load].append(path)
    return out


def combine(runs: list[dict]) -> dict:
    """One side's outcome of a (config, load) over its seeds: the first error if any run
    failed; unstable (or deadlocked) when any run was; else the mean latency and accepted
    rate, with ``range`` the lowest and highest latency of the seeds."""
    for r in runs:
        if "error" in r:
            return r
    out = {"unstable": any(r.get("unstable") for r in runs),
           "deadlock": any(r.get("deadlock") for r in runs)}
    acc = [r["accepted"] for r in runs if r.get("accepted") is not None]
    out["accepted"] = sum(acc) / len(acc) if acc else None
    lat = [r["latency"] for r in runs if r.get("latency") is not None]
    out["latency"] = None if out["unstable"] or not lat else sum(lat) / len(lat)
    out["range"] = None if out["latency"] is None else (min(lat), max(lat))
    return out


def _fmt(x, spec=".2f") -> str:
    return "-" if x is None else format(x, spec)


def _latency(r: dict) -> str:
    if r.get("deadlock"):
        return "deadlock"
    if r.get("unstable"):
        return "unstable"
    return "-" if "error" in r else _fmt(r["latency"])


def _range(r: dict) -> str:
    lo_hi = r.get("range")
    return "-" if not lo_hi else f"{lo_hi[0]:.2f}..{lo_hi[1]:.2f}"


def table(names, loads, cfgs, bs, pd, seeds: int = 1) -> list[str]:
    """The report's lines: a row per (config, load), then each side's errors of the config
    once with the loads they occurred at, then the saturation throughputs."""
    head = (f"{'config':16s} {'load':>5s} {'BookSim lat':>11s} {'pdes lat':>9s} {'diff':>7s} "
            f"{'diff %':>7s} {'BookSim acc':>11s} {'pdes acc':>9s}"
            + (f" {'BookSim seeds':>15s} {'pdes seeds':>15s}" if seeds > 1 else ""))
    lines = [head, "-" * len(head)]
    sat = []
    for name in names:
        if "skip" in cfgs[name]:
            lines.append(f"{name:16s} {cfgs[name]['skip']}")
            continue
        errors: dict = {}
        for load in loads:
            b, p = bs[(name, load)], pd[(name, load)]
            diff = pct = "-"
            if not any("error" in r or r.get("unstable") for r in (b, p)):
                diff = f"{p['latency'] - b['latency']:+.2f}"
                pct = f"{100 * (p['latency'] - b['latency']) / b['latency']:+.1f}"
            ba = "-" if "error" in b or b.get("unstable") else _fmt(b.get("accepted"), ".4f")
            pa = "-" if "error" in p or p.get("deadlock") else _fmt(p.get("accepted"), ".4f")
            lines.append(f"{name:16s} {load:5g} {_latency(b):>11s} {_latency(p):>9s} {diff:>7s} "
                         f"{pct:>7s} {ba:>11s} {pa:>9s}"
                         + (f" {_range(b):>15s} {_range(p):>15s}" if seeds > 1 else ""))
            for who, r in (("BookSim", b), ("pdes", p)):
                if "error" in r:
                    errors.setdefault((who, r["error"]), []).append(f"{load:g}")
        for (who, err), at in errors.items():
            where = "every load" if len(at) == len(loads) else "load " + ", ".join(at)
            lines.append(f"{'':16s} {who} ({where}): {err}")
        sat.append(f"{name:16s} BookSim {saturation([(x, bs[(name, x)]) for x in loads]):>6s}   "
                   f"pdes {saturation([(x, pd[(name, x)]) for x in loads]):>6s}")
    return lines + ["", f"saturation throughput (highest stable load of the grid, accepted >= "
                        f"{STABLE_FRACTION:g} x offered):"] + sat


# ------------------------------------------------------------------------------ --speed
SPEED_LOADS = "0.1,0.5"
SPEED_PERIODS = 4
"""A --speed run: 1 warm-up and 3 measured sample periods of --cycles / 4 cycles each."""


def speed_config(q: int, p: int, network_file: str, load: float, packet_size: int,
                 speedup: int, period: int) -> str:
    """The --speed config: the parity cases' Slim Fly keys on SF q, p, then a fixed run."""
    return (sf_base(q, p, network_file)
            + f"packet_size = {packet_size};\ninternal_speedup = {speedup}.0;\n"
            + "\n// booksim_parity --speed: 1 warm-up + 3 measured sample periods, then the drain\n"
            + f"injection_rate_uses_flits = 1;\ninjection_rate = {load:g};\n"
            + f"sample_period = {period};\nwarmup_periods = 1;\nmax_samples = {SPEED_PERIODS};\n")


def machine_name() -> str:
    """The CPU's model name (lscpu's, else /proc/cpuinfo's), or ``unknown``."""
    if shutil.which("lscpu"):
        r = subprocess.run(["lscpu"], capture_output=True, text=True)
        for ln in r.stdout.splitlines():
            if ln.startswith("Model name:"):
                return ln.split(":", 1)[1].strip()
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                return ln.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def load_average() -> str:
    try:
        return "{:.2f}, {:.2f}, {:.2f} (1, 5, 15 min)".format(*os.getloadavg())
    except OSError:
        return "unknown"


def timed(cmd: list[str], cwd: Path, env: dict | None = None):
    """(finished process, CPU seconds (user + system), wall seconds) of ``cmd`` in a new process;
    the CPU time is this process's children's usage before and after (one child at a time)."""
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    return p, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), wall


def pinned_to(cpu: int | None, prog: str) -> list[str]:
    """The ``taskset`` prefix that pins a run to ``cpu`` (default: the first CPU this process
    may run on; refused, as ``prog: --cpu: ...``, if it may not run there), or ``[]`` without
    taskset; prints the machine, the load average and the pinning."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    cpu = cpu if cpu is not None else (cpus[0] if cpus else 0)
    if cpus and cpu not in cpus:
        raise SystemExit(f"{prog}: --cpu: {cpu} is not one of this process's CPUs "
                         f"({', '.join(map(str, cpus))})")
    taskset = shutil.which("taskset")
    print(f"machine: {machine_name()}, {os.cpu_count()} CPUs", flush=True)
    print(f"load average at start: {load_average()}", flush=True)
    print(f"pinned to CPU {cpu} with taskset" if taskset else
          "taskset not found: the runs are NOT pinned to a core", flush=True)
    return [taskset, "-c", str(cpu)] if taskset else []


def speed_booksim(binary: str, cfg: Path, pin: list[str]) -> dict:
    """One timed BookSim run: its outcome, ``cycles`` (its ``Time taken is N cycles``) and
    ``loop_s`` (its ``Total run time``: the wall time of its simulation, without reading the
    config and building the network)."""
    p, cpu, wall = timed([*pin, binary, cfg.name], cfg.parent)
    out = booksim_outcome(p, cfg)
    cycles = re.findall(r"Time taken is (\d+) cycles", p.stdout)
    loop = re.findall(r"Total run time\s+([0-9.eE+-]+)", p.stdout)
    if "error" not in out and not out["unstable"] and not cycles:
        out["error"] = "failed: no 'Time taken is N cycles' line in its output"
    out.update(cpu_s=cpu, wall_s=wall, cycles=int(cycles[-1]) if cycles else None,
               loop_s=float(loop[-1]) if loop else None)
    return out


def speed_pdes(cfg: Path, result: str, pin: list[str]) -> dict:
    """One timed ``pdes run`` of ``cfg``: its outcome and ``loop_s``, the result file's
    ``/run`` ``kernel_s`` (wall time inside the compiled kernel)."""
    p, cpu, wall = timed([*pin, sys.executable, "-m", "pdes", "run", cfg.name, "--quiet",
                          "--json", "-o", result], cfg.parent, _env())
    out = pdes_outcome(p)
    out.update(cpu_s=cpu, wall_s=wall, loop_s=None)
    if "error" not in out:
        import h5py
        with h5py.File(cfg.parent / result, "r") as f:
            out["loop_s"] = float(f["run"].attrs["kernel_s"])
    return out


def _rate(routers: int, r: dict, key: str) -> float | None:
    """Router-cycles per second of ``r[key]`` (None without a completed run)."""
    if "error" in r or r.get("unstable") or not r.get("cycles") or not r.get(key):
        return None
    return routers * r["cycles"] / r[key]


def _ratio(a, b):
    return None if a is None or b is None else a / b


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _run_line(n: int, who: str, load: float, pair: int, r: dict) -> str:
    """The line printed as each timed run ends."""
    head = f"{n:4d}  {who:8s} load {load:<5g} pair {pair}: "
    if "error" in r:
        return head + r["error"]
    if r.get("unstable"):
        return head + f"unstable ({r['cpu_s']:.2f} s CPU, {r['wall_s']:.2f} s wall)"
    loop = "run" if who == "BookSim" else "kernel"
    return (head + f"{r['cycles']} cycles, {r['cpu_s']:.2f} s CPU, {r['wall_s']:.2f} s wall, "
            f"{loop} {_fmt(r['loop_s'])} s, network latency {_fmt(r['latency'])}")


SPEED_COLUMNS = (f"{'load':>5s} {'pair':>6s} | {'cycles':>6s} {'CPU s':>7s} {'wall s':>7s} "
                 f"{'/CPU-s':>8s} {'/run-s':>8s} | {'cycles':>6s} {'CPU s':>6s} {'wall s':>6s} "
                 f"{'kernel s':>8s} {'/CPU-s':>9s} {'/kernel-s':>9s} | {'process':>7s} {'loop':>6s}")
_bar = [i for i, c in enumerate(SPEED_COLUMNS) if c == "|"]
SPEED_HEAD = (f"{'':{_bar[0] + 2}s}{'BookSim2':{_bar[1] - _bar[0]}s}{'pdes':{_bar[2] - _bar[1]}s}"
              "pdes / BookSim")
"""The table's two header lines: the sides, then the columns."""


def _speed_row(load, pair, b, p, routers) -> tuple[str, tuple]:
    """A table row of one pair and its (BookSim CPU rate, BookSim run rate, pdes CPU rate,
    pdes kernel rate, process ratio, loop ratio)."""
    bc, bl = _rate(routers, b, "cpu_s"), _rate(routers, b, "loop_s")
    pc, pk = _rate(routers, p, "cpu_s"), _rate(routers, p, "loop_s")
    figs = (bc, bl, pc, pk, _ratio(pc, bc), _ratio(pk, bl))
    return _figures_row(f"{load:5g} {pair:>6}", b, p, figs), figs


def _figures_row(lead: str, b: dict | None, p: dict | None, figs) -> str:
    """A table row: the runs' cycles and times (none for a median row), then ``figs``."""
    rates = [_fmt(x, ",.0f") for x in figs[:4]]
    ratios = [_fmt(x, ".3g") for x in figs[4:]]

    def runs(r):
        if r is None:
            return ["", "", ""]
        done = "error" not in r and not r.get("unstable") and r.get("cycles") is not None
        return [str(r["cycles"]) if done else "-", _fmt(r.get("cpu_s")), _fmt(r.get("wall_s"))]

    (bcyc, bcpu, bwall), (pcyc, pcpu, pwall) = runs(b), runs(p)
    pker = "" if p is None else _fmt(p.get("loop_s"))
    return (f"{lead} | {bcyc:>6s} {bcpu:>7s} {bwall:>7s} {rates[0]:>8s} {rates[1]:>8s} | "
            f"{pcyc:>6s} {pcpu:>6s} {pwall:>6s} {pker:>8s} {rates[2]:>9s} {rates[3]:>9s} | "
            f"{ratios[0]:>7s} {ratios[1]:>6s}")


def speed(args, binary: str) -> int:
    """--speed: BookSim2 and pdes timed on the same core, alternating (see the docstring)."""
    loads = parse_loads(args.loads or SPEED_LOADS)
    checks = [("q", args.q, 2), ("p", args.p, 1), ("repeats", args.repeats, 1),
              ("packet-size", args.packet_size, 1), ("speedup", args.speedup, 1),
              ("cycles", args.cycles, SPEED_PERIODS)]
    for name, value, lo in checks:
        if value < lo:
            raise SystemExit(f"booksim_parity: --{name}: must be at least {lo}, got {value}")
    if args.cycles % SPEED_PERIODS:
        raise SystemExit(f"booksim_parity: --cycles: must be a multiple of {SPEED_PERIODS} (1 "
                         f"warm-up and 3 measured sample periods), got {args.cycles}")
    pin = pinned_to(args.cpu, "booksim_parity")
    period = args.cycles // SPEED_PERIODS
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.workdir or tmp).resolve()
        work.mkdir(parents=True, exist_ok=True)
        net = f"sf{args.q}_p{args.p}.anynet"
        routers = export_slimfly(work, args.q, args.p, net)
        cfgs = {}
        for load in loads:
            cfgs[load] = work / f"speed_sf{args.q}_{load:g}.cfg"
            cfgs[load].write_text(speed_config(args.q, args.p, net, load, args.packet_size,
                                               args.speedup, period))
        print(f"network: Slim Fly q={args.q} p={args.p}, {routers} routers (anynet file exported "
              f"by pdes); BookSim anynet min, pdes table_min with routing.vcs = any and "
              f"router.allocation = booksim (the same config file); uniform, {args.packet_size}-flit "
              f"packets, 2 VCs x 32 flits, internal_speedup {args.speedup}, separable input-first "
              f"allocators, link latency 1", flush=True)
        print(f"each run: {SPEED_PERIODS} sample periods of {period} cycles (1 warm-up, 3 measured),"
              f" then the simulator's drain; loads {', '.join(f'{x:g}' for x in loads)}; "
              f"{args.repeats} pairs per load, alternating BookSim, pdes, BookSim, pdes, ..., each "
              f"a new process", flush=True)
        warm = speed_pdes(cfgs[loads[0]], "speed_warmup.h5", pin)
        if "error" in warm:
            print(f"booksim_parity: pdes's warm-up run failed: {warm['error']}", file=sys.stderr)
            return 1
        print(f"pdes: compiled-kernel cache warmed by one untimed run ({warm['wall_s']:.1f} s wall)",
              flush=True)
        pairs: dict[float, list] = {x: [] for x in loads}
        n = 0
        for load in loads:
            for pair in range(1, args.repeats + 1):
                b = speed_booksim(binary, cfgs[load], pin)
                n += 1
                print(_run_line(n, "BookSim", load, pair, b), flush=True)
                p = speed_pdes(cfgs[load], f"speed_{load:g}_{pair}.h5", pin)
                n += 1
                print(_run_line(n, "pdes", load, pair, p), flush=True)
                pairs[load].append((b, p))
    print(f"load average at end: {load_average()}")
    print()
    print(f"router-cycles per second ({routers} routers x the cycles each simulator simulated):\n"
          "  /CPU-s     per CPU-second of the whole process (user + system, start-up included)\n"
          "  /run-s     per second of BookSim's 'Total run time' (wall time of its simulation)\n"
          "  /kernel-s  per second of pdes's kernel_s in the result file (wall time inside the\n"
          "             compiled kernel; the kernels were compiled or loaded before, untimed)\n"
          "  process    pdes's /CPU-s over BookSim's; loop: pdes's /kernel-s over BookSim's /run-s")
    print(SPEED_HEAD)
    print(SPEED_COLUMNS)
    print("-" * len(SPEED_COLUMNS))
    for load in loads:
        figs = []
        for pair, (b, p) in enumerate(pairs[load], 1):
            line, f = _speed_row(load, pair, b, p, routers)
            print(line)
            figs.append(f)
        med = tuple(_median(col) for col in zip(*figs))
        print(_figures_row(f"{load:5g} {'median':>6s}", None, None, med))
    return 0


def parse_loads(text: str) -> list[float]:
    """The sorted loads of ``--loads`` (each in (0, 1])."""
    try:
        loads = sorted({float(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise SystemExit(f"booksim_parity: --loads: expected comma-separated numbers, got {text!r}")
    if not loads or not all(0 < x <= 1 for x in loads):
        raise SystemExit("booksim_parity: --loads: every load must be in (0, 1]")
    return loads


PARITY_ONLY = ("configs", "booksim_src", "jobs", "quick", "seeds")
SPEED_ONLY = ("q", "p", "repeats", "packet_size", "speedup", "cycles", "cpu")
SPEED_DEFAULTS = {"q": 13, "p": 9, "repeats": 3, "packet_size": 1, "speedup": 2, "cycles": 2000}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--booksim", help="path of a BookSim2 binary you built")
    ap.add_argument("--booksim-src", help="BookSim2 source tree (for src/examples/*)")
    ap.add_argument("--configs", help=f"comma-separated subset of: {', '.join(CONFIGS)}")
    ap.add_argument("--loads", help="offered loads, flits/cycle/node (default "
                    f"{DEFAULT_LOADS}; with --speed {SPEED_LOADS})")
    ap.add_argument("--jobs", type=int, help="runs at a time (default 1)")
    ap.add_argument("--quick", action="store_true", default=None,
                    help="fewer and shorter sample periods")
    ap.add_argument("--seeds", type=int, help="runs per config and load on each side, with "
                    "seed = 1..N; the table gives their means and ranges (default 1)")
    ap.add_argument("--workdir", help="keep the configs here (default: a temporary directory)")
    sp = ap.add_argument_group("--speed: both simulators timed on one core, alternating")
    sp.add_argument("--speed", action="store_true", help="time BookSim2 and pdes side by side")
    sp.add_argument("--q", type=int, help="Slim Fly q (default 13)")
    sp.add_argument("--p", type=int, help="endpoints per router (default 9)")
    sp.add_argument("--repeats", type=int, help="pairs of runs per load (default 3)")
    sp.add_argument("--packet-size", type=int, help="flits per packet (default 1)")
    sp.add_argument("--speedup", type=int, help="internal_speedup (default 2)")
    sp.add_argument("--cycles", type=int, help="warm-up + measured cycles of a run, a multiple "
                    "of 4 (default 2000)")
    sp.add_argument("--cpu", type=int, help="the CPU to pin the runs to (default: the first "
                    "this process may run on)")
    args = ap.parse_args(argv)
    given = lambda names: [f"--{n.replace('_', '-')}" for n in names  # noqa: E731
                           if getattr(args, n) is not None]
    if args.speed and given(PARITY_ONLY):
        print(f"booksim_parity: {', '.join(given(PARITY_ONLY))}: not used with --speed",
              file=sys.stderr)
        return 2
    if not args.speed and given(SPEED_ONLY):
        print(f"booksim_parity: {', '.join(given(SPEED_ONLY))}: only with --speed", file=sys.stderr)
        return 2
    if not args.booksim:
        print(BUILD_HELP, file=sys.stderr)
        return 2
    binary = os.path.abspath(args.booksim if os.path.dirname(args.booksim)
                             else shutil.which(args.booksim) or args.booksim)
    if not os.path.isfile(binary) or not os.access(binary, os.X_OK):
        print(f"booksim_parity: --booksim {args.booksim}: not an executable file\n{BUILD_HELP}",
              file=sys.stderr)
        return 2
    if args.speed:
        for k, v in SPEED_DEFAULTS.items():
            if getattr(args, k) is None:
                setattr(args, k, v)
        try:
            return speed(args, binary)
        except SystemExit as e:
            if isinstance(e.code, str):
                print(e.code, file=sys.stderr)
                return 2
            raise
    names = [n.strip() for n in (args.configs or ",".join(CONFIGS)).split(",") if n.strip()]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        print(f"booksim_parity: --configs: unknown {', '.join(unknown)} (known: "
              f"{', '.join(CONFIGS)})", file=sys.stderr)
        return 2
    try:
        loads = parse_loads(args.loads or DEFAULT_LOADS)
    except SystemExit as e:
        print(e.code, file=sys.stderr)
        return 2
    seeds = 1 if args.seeds is None else args.seeds
    if not 1 <= seeds <= 100:
        print("booksim_parity: --seeds: must be in 1..100", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.workdir or tmp).resolve()
        work.mkdir(parents=True, exist_ok=True)
        cfgs = write_configs(work, names, args.booksim_src, loads, bool(args.quick), seeds)
        todo = [(n, x) for n in names if "skip" not in cfgs[n] for x in loads]
        with ThreadPoolExecutor(max(1, args.jobs or 1)) as pool:
            bsf = {k: [pool.submit(run_booksim, binary, c) for c in cfgs[k[0]][k[1]]] for k in todo}
            pdf = {k: [pool.submit(run_pdes, c) for c in cfgs[k[0]][k[1]]] for k in todo}
            bs = {k: combine([f.result() for f in fs]) for k, fs in bsf.items()}
            pd = {k: combine([f.result() for f in fs]) for k, fs in pdf.items()}
        print("\n".join(table(names, loads, cfgs, bs, pd, seeds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
