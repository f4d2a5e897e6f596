"""Saturation throughput of min, valiant, ugal_l, ugal_g under uniform and adversarial traffic.

Instances (small enough for a 2-core machine): Slim Fly q=13 p=9, MLFM h=5,
OFT k=6.  Adversarial traffic is each topology's worst case for minimal
routing (SF: the 000 Sec. V-C / 001 Fig. 5 pairing; MLFM: shift by h; OFT:
shift by k).  The figure is the accepted load when every endpoint offers one
flit per cycle.  The papers' shape: Valiant about half of minimal under
uniform traffic; minimal collapsing to 1/(2p) (SF), 1/h (MLFM), 1/k (OFT)
under the worst case while Valiant and UGAL do not; UGAL-L close to minimal
under uniform traffic (000 Sec. V-A, 001 Figs. 6-8).

    python run_scripts/validate_routing.py [--cycles 2000] [--vcs 4]
    python run_scripts/validate_routing.py --galaxyfly [--th-min 0.8]

``--galaxyfly`` runs min, nar, nal, nag (004 Sec. 4.2) on small Galaxyfly
instances instead, each with the VCs its scheme needs (``num_vcs = 0``) unless
``--vcs`` is given; the worst case sends cluster i to cluster i+1 (004 Sec. 5).
"""
from __future__ import annotations

import argparse
import time

from pdes import config as C
from pdes.engine import run_local

INSTANCES = {
    "SF q=13 p=9": (["topology.name=slimfly", "topology.q=13", "topology.p=9"], "1/(2p) = 0.056"),
    "MLFM h=5": (["topology.name=mlfm", "topology.h=5"], "1/h = 0.200"),
    "OFT k=6": (["topology.name=oft", "topology.k=6"], "1/k = 0.167"),
}
ALGS = ["min", "valiant", "ugal_l", "ugal_g"]
GALAXY = {
    "GF(3,5,2,2)": ["topology.name=galaxyfly", "topology.n=3", "topology.q=5", "topology.a=2",
                    "topology.p=2"],
    "GF(5,5,4,2)": ["topology.name=galaxyfly", "topology.n=5", "topology.q=5", "topology.a=4",
                    "topology.p=2"],
}
GALAXY_ALGS = ["min", "nar", "nal", "nag"]


def galaxy(args):
    vcs = args.vcs if args.vcs_given else 0
    print(f"accepted load at offered load 1.0 (channel latency 1, 64 flits/port, "
          f"{vcs or 'the minimum'} VCs, th_min {args.th_min}, {args.cycles} measured cycles)")
    print(f"{'instance':<14} {'traffic':<10} " + " ".join(f"{a:>8}" for a in GALAXY_ALGS))
    for name, sets in GALAXY.items():
        for pattern in ("uniform", "worst_case"):
            row = []
            t = time.time()
            for alg in GALAXY_ALGS:
                extra = [] if alg == "min" else [f"routing.th_min={args.th_min}"]
                cfg = C.resolve({}, sets + extra + [
                    f"routing.algorithm={alg}", f"traffic.pattern={pattern}", "traffic.load=1.0",
                    "router.link_latency=1", f"router.num_vcs={vcs}",
                    f"measure.warmup_cycles={args.cycles // 2}",
                    f"measure.measure_cycles={args.cycles}", "measure.drain_cycles=200"])
                row.append(run_local(cfg)["summary"]["accepted_load"])
            print(f"{name:<14} {pattern:<10} " + " ".join(f"{v:>8.3f}" for v in row)
                  + f"   ({time.time() - t:.0f} s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=2000)
    ap.add_argument("--vcs", type=int, default=4, help="VCs per port (>= 4 for Valiant/UGAL on SF)")
    ap.add_argument("--instances", nargs="+", default=list(INSTANCES), choices=list(INSTANCES))
    ap.add_argument("--galaxyfly", action="store_true",
                    help="min/nar/nal/nag on small Galaxyfly instances instead")
    ap.add_argument("--th-min", type=float, default=0.8, help="Galaxyfly: routing.th_min")
    args = ap.parse_args()
    if args.galaxyfly:
        import sys
        args.vcs_given = "--vcs" in sys.argv
        galaxy(args)
        return
    print(f"accepted load at offered load 1.0 (channel latency 1, 64 flits/port, {args.vcs} VCs, "
          f"{args.cycles} measured cycles)")
    print(f"{'instance':<14} {'traffic':<10} " + " ".join(f"{a:>8}" for a in ALGS) + "   min bound")
    for name in args.instances:
        sets, bound = INSTANCES[name]
        for pattern in ("uniform", "worst_case"):
            row = []
            t = time.time()
            for alg in ALGS:
                cfg = C.resolve({}, sets + [f"routing.algorithm={alg}", f"traffic.pattern={pattern}",
                                            "traffic.load=1.0", "router.link_latency=1",
                                            f"router.num_vcs={args.vcs}",
                                            f"measure.warmup_cycles={args.cycles // 2}",
                                            f"measure.measure_cycles={args.cycles}",
                                            "measure.drain_cycles=200"])
                row.append(run_local(cfg)["summary"]["accepted_load"])
            print(f"{name:<14} {pattern:<10} " + " ".join(f"{v:>8.3f}" for v in row)
                  + (f"   {bound}" if pattern == "worst_case" else "") + f"   ({time.time() - t:.0f} s)")


if __name__ == "__main__":
    main()
