"""Saturation throughput of degraded networks against the share of failed links.

For each network (Slim Fly q=7, a balanced Dragonfly and a balanced Galaxyfly of a few
hundred endpoints each, or the ones named by ``--networks``), each routing (``--routings``, default min and
ugal_l) and each failed-link fraction (``--fractions``), ``pdes sweep --saturation`` finds the
saturation load under uniform traffic by bisection (the links drawn with ``faults.seed``:
with one seed a larger fraction fails a superset of the links of a smaller one).  Beside it,
``pdes analyze --only resiliency`` gives the structural figure: the share of samples in which
that many failed links leave the endpoints connected (000 Sec. III-D's disconnection
criterion).  Prints one table; ``--csv FILE`` also writes it.

    python run_scripts/resiliency_perf.py [--networks sf,df,gf] [--fractions 0,0.01,0.05,0.1]
        [--routings min,ugal_l] [--cycles 2000] [--ranks 1] [--resolution 0.02] [--csv out.csv]

The ``pdes`` commands run this checkout's package.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

NETWORKS = {
    "sf": ("Slim Fly q=7, p=6", ["topology.name=slimfly", "topology.q=7"]),
    "sf13": ("Slim Fly q=13, p=9", ["topology.name=slimfly", "topology.q=13", "topology.p=9"]),
    "df": ("Dragonfly h=3 (a=6, p=3, g=19)", ["topology.name=dragonfly", "topology.h=3"]),
    "gf": ("Galaxyfly n=5, q=7, a=4, p=2", ["topology.name=galaxyfly", "topology.n=5",
                                            "topology.q=7", "topology.a=4", "topology.p=2"]),
}
ROUTER = ["router.link_latency=1", "router.num_vcs=0"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sets(items):
    out = []
    for s in items:
        out += ["--set", s]
    return out


def pdes(args, ranks):
    """``python -m pdes ARGS`` of this checkout (first on PYTHONPATH), on ``ranks`` ranks."""
    cmd = [sys.executable, "-m", "pdes", *args]
    if ranks > 1:
        cmd = [os.path.join(os.path.dirname(sys.executable), "mpiexec"), "-n", str(ranks), *cmd]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [x for x in [env.get("PYTHONPATH")] if x])
    return subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)


def saturation(net, fractions, routings, cycles, resolution, ranks, workdir):
    """{(routing, fraction): saturation load, '<0.05' if saturated at the lowest load, '>1'
    if never}."""
    import h5py
    out = os.path.join(workdir, f"{net}.h5")
    args = ["sweep", *sets(NETWORKS[net][1] + ROUTER + [
        f"measure.warmup_cycles={cycles // 2}", f"measure.measure_cycles={cycles}",
        f"measure.drain_cycles={2 * cycles}"]),
        "--vary", "routing.algorithm=" + ",".join(routings),
        "--vary", "faults.link_fraction=" + ",".join(str(f) for f in fractions),
        "--loads", "0.05,1.0", "--saturation", "--resolution", str(resolution),
        "--quiet", "--force", "-o", out]
    p = pdes(args, ranks)
    if p.returncode != 0:
        raise SystemExit(f"{net}: pdes sweep failed:\n{p.stderr}")
    res = {}
    with h5py.File(out) as f:
        for row in f["saturation"][()]:
            alg = row["routing.algorithm"]
            alg = alg.decode() if isinstance(alg, bytes) else str(alg)
            load, status = float(row["saturation_load"]), row["status"].decode()
            if load == load:
                res[(alg, float(row["faults.link_fraction"]))] = f"{load:.3f}"
            else:
                res[(alg, float(row["faults.link_fraction"]))] = \
                    ">1" if status.startswith("not saturated") else "<0.05"
    return res


def structural(net, fractions, ranks):
    """{fraction: share of samples still connected} from ``pdes analyze``."""
    p = pdes(["analyze", NETWORKS[net][1][0].split("=")[1], *sets(NETWORKS[net][1][1:]),
              "--only", "resiliency", "--criteria", "disconnect", "--step", "0.01", "--json"],
             ranks)
    if p.returncode != 0:
        raise SystemExit(f"{net}: pdes analyze failed:\n{p.stderr}")
    curve = json.loads(p.stdout)["resiliency"]["curve"]
    out = {}
    for f in fractions:
        i = min(range(len(curve["fraction"])), key=lambda j: abs(curve["fraction"][j] - f))
        out[f] = curve["disconnect"][i]
    return out


def fraction_list(text: str) -> list[float]:
    """``--fractions``: comma-separated shares of failed links, each in [0, 1]."""
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or not all(0 <= f <= 1 for f in out):
        raise argparse.ArgumentTypeError(f"want comma-separated shares in [0, 1], got {text!r}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", default="sf,df,gf",
                    help=f"comma-separated, of {', '.join(NETWORKS)} (default sf,df,gf)")
    ap.add_argument("--fractions", type=fraction_list, default="0,0.01,0.05,0.1",
                    help="failed-link shares")
    ap.add_argument("--routings", default="min,ugal_l")
    ap.add_argument("--cycles", type=int, default=2000, help="measured cycles per point")
    ap.add_argument("--resolution", type=float, default=0.02, help="bisection resolution")
    ap.add_argument("--ranks", type=int, default=1, help="MPI ranks per pdes command")
    ap.add_argument("--csv", default="", help="also write the table to this CSV file")
    a = ap.parse_args(argv)
    nets = [n for n in a.networks.split(",") if n]
    bad = [n for n in nets if n not in NETWORKS]
    if bad:
        ap.error(f"--networks: unknown '{bad[0]}' (known: {', '.join(NETWORKS)})")
    fractions = a.fractions
    routings = [r for r in a.routings.split(",") if r]
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for net in nets:
            sat = saturation(net, fractions, routings, a.cycles, a.resolution, a.ranks, d)
            conn = structural(net, fractions, a.ranks)
            for f in fractions:
                rows.append([NETWORKS[net][0], f, conn[f]] + [sat.get((r, f)) for r in routings])
    head = ["network", "failed links", "connected"] + [f"sat. {r}" for r in routings]
    print(" | ".join(head))
    for r in rows:
        print(" | ".join([r[0], f"{r[1]:.2f}", f"{r[2]:.2f}"] +
                         ["-" if v is None else v for v in r[3:]]))
    if a.csv:
        with open(a.csv, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(head)
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
