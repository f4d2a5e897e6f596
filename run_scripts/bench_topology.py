"""Time and memory of building 100K-endpoint topologies, their layout and routing tables.

    python run_scripts/bench_topology.py            # every instance, one subprocess each
    python run_scripts/bench_topology.py --json     # one JSON line per instance
    python run_scripts/bench_topology.py --threads 1

Instances: BDF u=19 p=13 (7,620 routers, 99,060 endpoints) and Galaxyfly
GF(41,61,4,10) (10,004 routers, 100,040 endpoints), built with their layout
and distance matrix; HyperX 16x16x16 (4,096 routers, 92,160 links) and torus
32x32x32 (32,768 routers, 98,304 links), built with their layout only (the
torus's distance matrix alone would take 1 GiB).  Each instance runs in a
fresh Python process so that its peak resident memory (``ru_maxrss``) is its
own.  The families' modules are imported and the kernels compiled (or loaded
from the cache) on a tiny graph before the clock starts; that time is
reported as ``jit``.
Targets: < 30 s and < 2 GB per instance; the build-only instances build in
< 2 s each.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

INSTANCES = {
    "bdf_u19": ("bdf", {"u": 19, "p": 13}),
    "galaxyfly_41_61_4_10": ("galaxyfly", {"n": 41, "q": 61, "a": 4, "p": 10}),
    "hyperx_16x16x16": ("hyperx", {"sizes": [16, 16, 16]}),
    "torus_32x32x32": ("torus", {"dims": [32, 32, 32]}),
}
BUILD_ONLY = {"hyperx_16x16x16", "torus_32x32x32"}     # no distance matrix
BUILD_ONLY_TARGET_S = 2.0


def run_one(key: str, threads: int | None) -> dict:
    import numpy as np

    from models.layout import build_layout
    from models.metrics import distance_matrix
    from models.topology import build, from_edges

    t = time.perf_counter()
    import models.topologies  # noqa: F401  (the families' modules, imported before the clock)
    ring = from_edges("ring", {}, 4, np.arange(4), (np.arange(4) + 1) % 4, 1, 0)
    distance_matrix(ring, threads=threads)
    jit = time.perf_counter() - t

    name, params = INSTANCES[key]
    t0 = time.perf_counter()
    topo = build(name, params)
    topo.port_neighbor  # CSR arrays are part of the build
    t1 = time.perf_counter()
    layout = build_layout(topo, preset="slimfly")
    t2 = time.perf_counter()
    if key in BUILD_ONLY:
        dist = None
    else:
        dist = distance_matrix(topo, threads=threads)
    t3 = time.perf_counter()
    reached = dist < 255 if dist is not None else None
    return {
        "instance": key, "topology": name, "params": params,
        "routers": topo.n_routers, "endpoints": topo.n_endpoints, "links": topo.n_links,
        "groups": topo.n_groups, "diameter": int(dist[reached].max()) if dist is not None else None,
        "connected": bool(reached.all()) if dist is not None else None,
        "cable_m_total": round(layout.totals["cable_m_total"], 1),
        "jit_s": round(jit, 3), "build_s": round(t1 - t0, 3), "layout_s": round(t2 - t1, 3),
        "distance_matrix_s": round(t3 - t2, 3) if dist is not None else None,
        "total_s": round(t3 - t0, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "threads": threads,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--one", choices=sorted(INSTANCES), help=argparse.SUPPRESS)
    ap.add_argument("--only", choices=sorted(INSTANCES), action="append",
                    help="run only this instance (repeatable)")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads for the distance matrix (default: all available CPUs)")
    ap.add_argument("--json", action="store_true", help="print one JSON object per instance")
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one, args.threads)))
        return 0
    rows = []
    failed = 0
    for key in args.only or INSTANCES:
        cmd = [sys.executable, os.path.abspath(__file__), "--one", key]
        if args.threads is not None:
            cmd += ["--threads", str(args.threads)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            failed += 1
            print(f"{key}: failed (exit {proc.returncode})\n{proc.stderr.strip()}", file=sys.stderr)
            continue
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return 1 if failed else 0
    head = ("instance", "routers", "endpoints", "links", "diam", "build_s", "layout_s",
            "distmat_s", "total_s", "rss_MB", "ok")
    print("  ".join(f"{h:>10}" if i else f"{h:<22}" for i, h in enumerate(head)))
    for r in rows:
        ok = r["total_s"] < 30 and r["peak_rss_mb"] < 2048
        if r["instance"] in BUILD_ONLY:
            ok = ok and r["build_s"] < BUILD_ONLY_TARGET_S
        vals = (r["instance"], r["routers"], r["endpoints"], r["links"], r["diameter"],
                r["build_s"], r["layout_s"], r["distance_matrix_s"], r["total_s"],
                r["peak_rss_mb"], "yes" if ok else "NO")
        vals = tuple("-" if v is None else v for v in vals)
        print("  ".join(f"{v:>10}" if i else f"{v:<22}" for i, v in enumerate(vals)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
