"""Run BookSim configs on BookSim2 and on pdes at a grid of offered loads; print one table.

    python run_scripts/booksim_parity.py --booksim PATH [--booksim-src DIR] [--configs A,B]
                                         [--loads 0.1,0.3] [--jobs N] [--quick] [--workdir DIR]

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
directory, pdes as ``python -m pdes run FILE --quiet --json``.

Columns: BookSim's ``Network latency average`` and pdes's ``network_latency_mean``
(cycles from a packet's injection into the network to its tail's delivery), their
difference (pdes - BookSim, in cycles and in % of BookSim's; only where both runs are
stable), BookSim's ``Accepted flit
rate average`` (its packet rate times the packet size where the flit line is missing;
an unstable run prints no overall figures) and pdes's ``accepted_load`` (flits per cycle
per node).  A run BookSim ends with ``Simulation unstable`` shows ``unstable``; a
config pdes refuses shows ``pdes refuses:`` and pdes's one error line; a pdes run its watchdog stops shows ``deadlock`` (BookSim's
``min`` and pdes's mapping of it let every hop use every VC, which can deadlock); any
other failure shows ``failed`` and the last line of the simulator's error output.

Saturation throughput, per config and side: the highest load L of the grid such that
at L and at every lower load of the grid the run is stable, i.e. the simulator did not
declare it unstable (BookSim: ``Simulation unstable``, its latency blow-up above
``latency_thres``; pdes: ``saturated`` in its summary, or a deadlock) and the accepted
rate is at least 95% of the offered load.  ``< L0`` when the lowest load is already unstable; ``-`` when
the side did not run.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
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

SF_BASE = """\
// Slim Fly q=5 p=4 (exported by pdes), BookSim's anynet min
topology = anynet;
network_file = sf5.anynet;
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


def run_booksim(binary: str, cfg: Path) -> dict:
    p = subprocess.run([binary, cfg.name], cwd=cfg.parent, capture_output=True, text=True)
    out = parse_booksim(p.stdout, packet_size_of(cfg.read_text()))
    # BookSim's exit status says nothing (it returns -1 after a completed run): its output does
    if not out["unstable"] and (out["latency"] is None or out["accepted"] is None):
        out["error"] = f"failed (status {p.returncode}): {last_line(p.stderr or p.stdout)}"
    return out


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [x for x in [env.get("PYTHONPATH")] if x])
    return env


def run_pdes(cfg: Path) -> dict:
    p = subprocess.run([sys.executable, "-m", "pdes", "run", cfg.name, "--quiet", "--json"],
                       cwd=cfg.parent, capture_output=True, text=True, env=_env())
    if p.returncode == 2:
        errors = [ln for ln in p.stderr.splitlines() if ln.startswith("pdes: error")]
        return {"error": "pdes refuses: " + (errors[0] if errors else last_line(p.stderr))}
    if p.returncode != 0:
        if "SimulationError: deadlock:" in p.stderr:      # the watchdog (routing.vcs = "any")
            return {"unstable": True, "deadlock": True, "latency": None, "accepted": None}
        return {"error": f"failed (status {p.returncode}): {last_line(p.stderr)}"}
    s = json.loads(p.stdout.strip().splitlines()[-1])
    return {"unstable": bool(s["saturated"]), "latency": s["network_latency_mean"],
            "accepted": s["accepted_load"]}


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


def write_configs(work: Path, names, booksim_src: str | None, loads, quick: bool) -> dict:
    """{name: {load: config path}} (names without a source: {"skip": reason})."""
    out = {}
    if any(n in SF_CASES for n in names):
        p = subprocess.run([sys.executable, "-m", "pdes", "topo", "slimfly", "--set", "topology.q=5",
                            "--set", "router.link_latency=1", "--export", "anynet", "sf5.anynet",
                            "--force"],
                           cwd=work, capture_output=True, text=True, env=_env())
        if p.returncode != 0:
            raise SystemExit(f"booksim_parity: exporting SF q=5 failed: {last_line(p.stderr)}")
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
            path = work / f"{name}_{load:g}.cfg"
            path.write_text(base + "\n// booksim_parity\ninjection_rate_uses_flits = 1;\n"
                            f"injection_rate = {load:g};\n" + (QUICK if quick else ""))
            out[name][load] = path
    return out


def _fmt(x, spec=".2f") -> str:
    return "-" if x is None else format(x, spec)


def _latency(r: dict) -> str:
    if r.get("deadlock"):
        return "deadlock"
    if r.get("unstable"):
        return "unstable"
    return "-" if "error" in r else _fmt(r["latency"])


def table(names, loads, cfgs, bs, pd) -> list[str]:
    """The report's lines: a row per (config, load), then each side's errors of the config
    once with the loads they occurred at, then the saturation throughputs."""
    head = (f"{'config':16s} {'load':>5s} {'BookSim lat':>11s} {'pdes lat':>9s} {'diff':>7s} "
            f"{'diff %':>7s} {'BookSim acc':>11s} {'pdes acc':>9s}")
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
                         f"{pct:>7s} {ba:>11s} {pa:>9s}")
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--booksim", help="path of a BookSim2 binary you built")
    ap.add_argument("--booksim-src", help="BookSim2 source tree (for src/examples/*)")
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help=f"comma-separated subset of: {', '.join(CONFIGS)}")
    ap.add_argument("--loads", default=DEFAULT_LOADS, help="offered loads, flits/cycle/node")
    ap.add_argument("--jobs", type=int, default=1, help="runs at a time (default 1)")
    ap.add_argument("--quick", action="store_true", help="fewer and shorter sample periods")
    ap.add_argument("--workdir", help="keep the configs here (default: a temporary directory)")
    args = ap.parse_args(argv)
    if not args.booksim:
        print(BUILD_HELP, file=sys.stderr)
        return 2
    binary = os.path.abspath(args.booksim if os.path.dirname(args.booksim)
                             else shutil.which(args.booksim) or args.booksim)
    if not os.path.isfile(binary) or not os.access(binary, os.X_OK):
        print(f"booksim_parity: --booksim {args.booksim}: not an executable file\n{BUILD_HELP}",
              file=sys.stderr)
        return 2
    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        print(f"booksim_parity: --configs: unknown {', '.join(unknown)} (known: "
              f"{', '.join(CONFIGS)})", file=sys.stderr)
        return 2
    try:
        loads = sorted({float(x) for x in args.loads.split(",") if x.strip()})
    except ValueError:
        print(f"booksim_parity: --loads: expected comma-separated numbers, got {args.loads!r}",
              file=sys.stderr)
        return 2
    if not loads or not all(0 < x <= 1 for x in loads):
        print("booksim_parity: --loads: every load must be in (0, 1]", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.workdir or tmp).resolve()
        work.mkdir(parents=True, exist_ok=True)
        cfgs = write_configs(work, names, args.booksim_src, loads, args.quick)
        todo = [(n, x) for n in names if "skip" not in cfgs[n] for x in loads]
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            bsf = {k: pool.submit(run_booksim, binary, cfgs[k[0]][k[1]]) for k in todo}
            pdf = {k: pool.submit(run_pdes, cfgs[k[0]][k[1]]) for k in todo}
            bs = {k: f.result() for k, f in bsf.items()}
            pd = {k: f.result() for k, f in pdf.items()}
        print("\n".join(table(names, loads, cfgs, bs, pd)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
