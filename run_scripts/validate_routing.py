"""Saturation throughput of the routings of 000/001 under uniform and worst-case traffic.

Instances: Slim Fly q=7 and q=13 (000, 001) and a balanced Dragonfly h=4 (000's
baseline), with default settings (link latencies from the physical layout, default
buffers and VCs) unless options say otherwise.  The figure is the saturation load,
the highest offered load a run carries unsaturated, found by bisection to
``--saturation`` (0.02); ``--full-load`` gives the accepted load at offered load 1.0
instead (faster, but adaptive routings accept less beyond saturation).  Printed next to
what the papers state:

* 000 Sec. V-A (SF, uniform): MIN and UGAL-G best (a full-bandwidth SF accepts 87.5%,
  Sec. V-E), UGAL-L saturates at about 80%, VAL below 50%;
* 000 Sec. V-C (worst case): MIN limited to 1/(p+1), VAL about 40%, UGAL-L about 45%;
* 001 Sec. 4.3.1: MIN 96-98% on uniform traffic (87% for SF with the higher p) and
  1/(2p) on the worst case; indirect random routing half of the uniform MIN figure in
  both.

On the Dragonfly the Dragonfly routings run too (Kim et al. 2008; PAR: Jiang et al. 2009):
minimal routing there is the local-global-local route, limited to 1/(a p) under the
group-shift worst case.

    python run_scripts/validate_routing.py [--instances sf7 sf13 df4] [--cycles 2000] [--saturation 0.02 | --full-load]
    python run_scripts/validate_routing.py --set router.link_latency=1 --set router.buffer_flits=64
    python run_scripts/validate_routing.py --galaxyfly [--th-min 0.8]

``--galaxyfly`` runs min, nar, nal, nag (004 Sec. 4.2) on small Galaxyfly instances
instead; the worst case sends cluster i to cluster i+1 (004 Sec. 5).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from models.core.errors import ParameterError  # noqa: E402
from pdes import config as C  # noqa: E402
from pdes.engine import run_local  # noqa: E402

SF_ALGS = ["min", "valiant", "ugal_l", "ugal_g"]
DF_ALGS = SF_ALGS + ["dragonfly_valiant", "dragonfly_ugal", "dragonfly_par"]
PAPER_SF = {"uniform": "000: MIN ~0.875, UGAL-L ~0.80, VAL <0.5; 001: MIN 0.87-0.98, INR half",
            "worst_case": "000: MIN 1/(p+1), VAL ~0.40, UGAL-L ~0.45; 001: MIN 1/(2p), INR half"}
INSTANCES = {
    "sf7": ("SF q=7 p=6", ["topology.name=slimfly", "topology.q=7"], SF_ALGS, PAPER_SF,
            "1/(2p) = 0.083"),
    "sf13": ("SF q=13 p=9", ["topology.name=slimfly", "topology.q=13", "topology.p=9"], SF_ALGS,
             PAPER_SF, "1/(2p) = 0.056"),
    "df4": ("DF h=4 (a=8 p=4)", ["topology.name=dragonfly", "topology.h=4"], DF_ALGS,
            {"uniform": "Kim et al.: MIN and UGAL-L near full load, VAL half",
             "worst_case": "Kim et al.: MIN 1/(a p), VAL and UGAL ~0.5; PAR above UGAL-L"},
            "1/(a p) = 0.031"),
    "mlfm5": ("MLFM h=5", ["topology.name=mlfm", "topology.h=5"], SF_ALGS,
              {"uniform": "001: MIN 0.96-0.98, INR half", "worst_case": "001: MIN 1/h, INR half"},
              "1/h = 0.200"),
    "oft6": ("OFT k=6", ["topology.name=oft", "topology.k=6"], SF_ALGS,
             {"uniform": "001: MIN 0.96-0.98, INR half", "worst_case": "001: MIN 1/k, INR half"},
             "1/k = 0.167"),
}
GALAXY = {
    "GF(3,5,2,2)": ["topology.name=galaxyfly", "topology.n=3", "topology.q=5", "topology.a=2",
                    "topology.p=2"],
    "GF(5,5,4,2)": ["topology.name=galaxyfly", "topology.n=5", "topology.q=5", "topology.a=4",
                    "topology.p=2"],
}
GALAXY_ALGS = ["min", "nar", "nal", "nag"]


def run(sets, alg, pattern, load, cycles, extra, drain=200):
    cfg = C.resolve({}, sets + extra + [
        f"routing.algorithm={alg}", f"traffic.pattern={pattern}", f"traffic.load={load}",
        f"measure.warmup_cycles={cycles // 2}", f"measure.measure_cycles={cycles}",
        f"measure.drain_cycles={drain}"])
    return run_local(cfg)["summary"]


def accepted(sets, alg, pattern, cycles, extra, resolution=0.0):
    """Accepted load at offered load 1.0, or (``resolution > 0``) the saturation load: the
    highest offered load found unsaturated by bisection down to ``resolution``."""
    if resolution <= 0:
        return run(sets, alg, pattern, 1.0, cycles, extra)["accepted_load"]
    lo, hi = 0.0, 1.0
    if not run(sets, alg, pattern, 1.0, cycles, extra, drain=4 * cycles)["saturated"]:
        return 1.0
    while hi - lo > resolution:
        mid = round((lo + hi) / 2, 6)
        if run(sets, alg, pattern, mid, cycles, extra, drain=4 * cycles)["saturated"]:
            hi = mid
        else:
            lo = mid
    return lo


def galaxy(args):
    print(f"{'saturation load' if args.saturation else 'accepted load at offered load 1.0'} "
          f"(th_min {args.th_min}, {args.cycles} measured "
          f"cycles, extra keys: {' '.join(args.set) or 'none'})")
    print(f"{'instance':<14} {'traffic':<10} " + " ".join(f"{a:>8}" for a in GALAXY_ALGS))
    for name, sets in GALAXY.items():
        for pattern in ("uniform", "worst_case"):
            t = time.time()
            row = [accepted(sets + ([] if alg == "min" else [f"routing.th_min={args.th_min}"]),
                            alg, pattern, args.cycles, args.set, args.saturation)
                   for alg in GALAXY_ALGS]
            print(f"{name:<14} {pattern:<10} " + " ".join(f"{v:>8.3f}" for v in row)
                  + f"   ({time.time() - t:.0f} s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=2000, help="measured cycles per run")
    ap.add_argument("--instances", nargs="+", default=["sf7", "sf13", "df4"],
                    choices=list(INSTANCES))
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="a config key for every run (repeatable)")
    ap.add_argument("--saturation", type=float, default=0.02, metavar="RESOLUTION",
                    help="resolution of the bisection for the saturation load (default 0.02)")
    ap.add_argument("--full-load", action="store_true",
                    help="report the accepted load at offered load 1.0 instead (one run per "
                         "cell; adaptive routings accept less there than at saturation)")
    ap.add_argument("--traffic", nargs="+", default=["uniform", "worst_case"],
                    choices=["uniform", "worst_case"], help="traffic patterns (default: both)")
    ap.add_argument("--galaxyfly", action="store_true",
                    help="min/nar/nal/nag on small Galaxyfly instances instead")
    ap.add_argument("--th-min", type=float, default=0.8, help="Galaxyfly: routing.th_min")
    args = ap.parse_args()
    if args.full_load:
        args.saturation = 0.0
    if args.galaxyfly:
        galaxy(args)
        return
    what = (f"saturation load (bisection to {args.saturation})" if args.saturation
            else "accepted load at offered load 1.0")
    print(f"{what} ({args.cycles} measured cycles, extra keys: "
          f"{' '.join(args.set) or 'none: layout latencies, default buffers and VCs'})")
    for key in args.instances:
        name, sets, algs, paper, bound = INSTANCES[key]
        print(f"\n{name}: minimal bound under the worst case {bound}")
        print(f"  {'traffic':<10} " + " ".join(f"{a:>17}" for a in algs))
        for pattern in args.traffic:
            t = time.time()
            row = [accepted(sets, alg, pattern, args.cycles, args.set, args.saturation)
                   for alg in algs]
            print(f"  {pattern:<10} " + " ".join(f"{v:>17.3f}" for v in row)
                  + f"   ({time.time() - t:.0f} s)")
            print(f"  {'':<10} paper: {paper[pattern]}")


if __name__ == "__main__":
    try:
        main()
    except ParameterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
