"""002's latency comparison on one cabinet floor (Figs. 4-8) with ``models.analysis.latency``.

    python run_scripts/reproduce_latency.py                    # 60 ns switches (Fig. 5 at 60 ns)
    python run_scripts/reproduce_latency.py --switch-delay 20,60,100,200,500
    python run_scripts/reproduce_latency.py --with-8192        # + Fig. 7's 8,192-switch point

2,048 switches in 256 cabinets of 8 on 002's floor (``layout.preset=skywalk``:
0.6 m x 2.1 m cabinet pitch, 2 m intra-cabinet cables, Manhattan distance + 4 m
between cabinets, 5 ns/m; ``cycle_ns=0.5`` makes every cable delay exact),
300 ns of injection and reception per path (002 Sec. III-A):

* Skywalk(8, 256, 7, 4) and Skywalk(8, 256, 7, 12), straight-first;
* Dragonfly(8, 256, 39): ``dragonfly a=8 h=32 g=256``, one group per cabinet;
* HyperX(8, 256, 37): ``hyperx sizes=8,16,16``, a cabinet per dimension-0 line,
  the other two dimensions along the cabinet rows and columns;
* Hypercube(2048, 11): switches to cabinets in order, **16 per cabinet in 128
  cabinets** (pdes's hypercube racks; 002 uses 8 per cabinet in 256);
* Torus(8, 256, 6): ``torus dims=8,16,16``, the 8-ring in a cabinet;
* Random(2048, 11): ``random_regular`` with 8 consecutive switches per cabinet.

Prints per topology the degree, the cable length, and the maximum and mean
latency of nearest (fewest-hop, best of them) and fastest paths over all pairs
of switches, then 002's printed comparisons (Sec. III-B..E) beside ours.  002
draws Figs. 4-8 as plots; only the numbers its text gives are compared.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from models.analysis import latency_report  # noqa: E402
from models.core.errors import ParameterError  # noqa: E402
from models.layout import build_layout  # noqa: E402
from models.topology import build  # noqa: E402

FLOOR = {"preset": "skywalk", "cycle_ns": 0.5}
SHORT = {"skywalk4": "Skywalk(8,256,7,4)", "skywalk12": "Skywalk(8,256,7,12)",
         "dragonfly": "Dragonfly(8,256,39)", "hyperx": "HyperX(8,256,37)",
         "hypercube": "Hypercube(2048,11)", "torus": "Torus(8,256,6)", "random": "Random(2048,11)"}
"""Names for --topologies."""
INSTANCES = {   # name: (topology, params, 002's total cable length in km)
    "Skywalk(8,256,7,4)": ("skywalk", {"z": 8, "c": 256, "d_i": 7, "d_o": 4}, 59),
    "Skywalk(8,256,7,12)": ("skywalk", {"z": 8, "c": 256, "d_i": 7, "d_o": 12}, None),
    "Dragonfly(8,256,39)": ("dragonfly", {"a": 8, "h": 32, "g": 256, "p": 8}, 615),
    "HyperX(8,256,37)": ("hyperx", {"sizes": [8, 16, 16], "p": 8}, 372),
    "Hypercube(2048,11)": ("hypercube", {"n": 11, "p": 8}, 80),
    "Torus(8,256,6)": ("torus", {"dims": [8, 16, 16], "p": 8}, 31),
    "Random(2048,11)": ("random_regular", {"routers": 2048, "degree": 11, "p": 8,
                                           "group_size": 8}, 207),
}
BIG = ("Skywalk(8,1024,7,9)", ("skywalk", {"z": 8, "c": 1024, "d_i": 7, "d_o": 9}, None))


def measure(name, params, delays, threads):
    t0 = time.perf_counter()
    topo = build(name, params)
    lay = build_layout(topo, **FLOOR)
    t1 = time.perf_counter()
    rep = latency_report(topo, lay, switch_delays=delays, threads=threads)
    t2 = time.perf_counter()
    return {"degree": int(topo.degree.max()), "links": topo.n_links,
            "cable_km": float(lay.cable_m.sum()) / 1000, "racks": lay.n_racks,
            "build_s": t1 - t0, "latency_s": t2 - t1, "latency": rep}


def pct(a, b):
    return 100.0 * (a / b - 1.0)


def comparisons(res, sw: str):
    """(claim, ours, 002's) for the numbers 002's text prints (60 ns switches)."""
    def fr(name, stat):
        return res[name]["latency"]["switch_delay"][sw]["fastest"][stat]
    s4, s12, df, hx, hc = ("Skywalk(8,256,7,4)", "Skywalk(8,256,7,12)", "Dragonfly(8,256,39)",
                           "HyperX(8,256,37)", "Hypercube(2048,11)")
    rows = [  # (002's section and claim, topology, reference, statistic, 002's number)
        ("Sec. III-B: max latency Skywalk(...,4) over Dragonfly", s4, df, "max", "+19%"),
        ("Sec. III-B: max latency Skywalk(...,4) over HyperX", s4, hx, "max", "+19%"),
        ("Sec. III-B: mean latency Skywalk(...,4) over Dragonfly", s4, df, "mean", "+17%"),
        ("Sec. III-B: mean latency Skywalk(...,4) over HyperX", s4, hx, "mean", "+17%"),
        ("Sec. III-E: max latency Skywalk(...,4) over HyperX", s4, hx, "max", "+17.7%"),
        ("Sec. III-C: max latency Skywalk(...,4) against Hypercube", s4, hc, "max", "-34%"),
        ("Sec. III-E: max latency Skywalk(...,12) over Dragonfly", s12, df, "max", "+10%"),
        ("Sec. III-E: max latency Skywalk(...,12) over HyperX", s12, hx, "max", "+8.8%"),
        ("Sec. III-C: mean latency Skywalk(...,12) over Dragonfly", s12, df, "mean", "+5.98%"),
        ("Sec. III-C: mean latency Skywalk(...,12) over HyperX", s12, hx, "mean", "+4.27%"),
    ]
    out = [(claim, pct(fr(a, stat), fr(b, stat)), paper)
           for claim, a, b, stat, paper in rows if a in res and b in res]
    if BIG[0] in res:
        out += [("Sec. III-D: max latency, 8,192 switches, degree 16", fr(BIG[0], "max"),
                 "1,149 ns"),
                ("Sec. III-D: mean latency, 8,192 switches, degree 16", fr(BIG[0], "mean"),
                 "811 ns")]
    return out


def delay_list(text: str) -> list[float]:
    """``--switch-delay``: comma-separated numbers of ns, at least one."""
    try:
        delays = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        delays = []
    if not delays:
        raise argparse.ArgumentTypeError(f"want comma-separated numbers of ns, got {text!r}")
    return delays


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--switch-delay", type=delay_list, default="60",
                    help="switch delays in ns, comma-separated "
                    "(default 60; 002 Fig. 5 spans 10..1000)")
    ap.add_argument("--topologies", help="comma-separated, of: " + ", ".join(SHORT)
                    + " (default: all)")
    ap.add_argument("--with-8192", action="store_true",
                    help="add Skywalk(8,1024,7,9), 8,192 switches of degree 16 (Fig. 7; ~1 min)")
    ap.add_argument("--threads", type=int, help="threads of the searches (default: all CPUs)")
    ap.add_argument("--json", metavar="FILE", help="also write the numbers as JSON")
    args = ap.parse_args(argv)
    delays = args.switch_delay
    chosen = dict(INSTANCES)
    if args.topologies:
        names = [n.strip() for n in args.topologies.split(",") if n.strip()]
        unknown = [n for n in names if n not in SHORT]
        if unknown:
            ap.error(f"unknown topologies {unknown}; known: {', '.join(SHORT)}")
        chosen = {SHORT[n]: INSTANCES[SHORT[n]] for n in names}
    if args.with_8192:
        chosen[BIG[0]] = BIG[1]
    res = {}
    for label, (name, params, _) in chosen.items():
        res[label] = measure(name, params, delays, args.threads)
    for d in delays:
        sw = next(iter(res.values()))["latency"]["switch_delay"].keys()
        key = [k for k in sw if float(k) == d][0]
        print(f"\n{d:g} ns switches, 300 ns endpoints, 5 ns/m (latencies in ns)")
        print(f"{'topology':<21} {'deg':>3} {'km (002)':>12} {'NR max':>8} {'NR mean':>8} "
              f"{'FR max':>8} {'FR mean':>8} {'FR hops':>9} {'seconds':>8}")
        for label, r in res.items():
            x = r["latency"]["switch_delay"][key]
            paper = chosen[label][2]
            km = f"{r['cable_km']:.1f}" + (f" ({paper})" if paper else "")
            print(f"{label:<21} {r['degree']:>3} {km:>12} {x['nearest']['max']:>8.1f} "
                  f"{x['nearest']['mean']:>8.1f} {x['fastest']['max']:>8.1f} "
                  f"{x['fastest']['mean']:>8.1f} {x['fastest']['hops_max']:>3}/"
                  f"{x['fastest']['hops_mean']:<5.2f} {r['latency_s']:>8.1f}")
    if 60.0 in delays:
        key = [k for k in next(iter(res.values()))["latency"]["switch_delay"] if float(k) == 60][0]
        rows = comparisons(res, key)
        if rows:
            print("\n002's printed numbers at 60 ns (fastest paths): ours (002)")
            for claim, ours, paper in rows:
                val = f"{ours:+.1f}%" if "%" in paper else f"{ours:,.1f} ns"
                print(f"  {claim:<58} {val:>10} ({paper})")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ParameterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
