"""Effective throughput of all-to-all and 3D nearest-neighbour exchanges (001 Sec. 4.4).

Instances: Slim Fly q=13 p=9, MLFM h=15, OFT k=12 (001's sizes), routing
min, valiant, ugal_l; contiguous (linear) process placement, channel
latency 1.  001 Figs. 13-14: all-to-all about 100 % for minimal and adaptive
routing and about 50 % for indirect random; nearest neighbour about 70 % for
indirect random with minimal far lower.

Message sizes are scaled down by default so a run takes seconds, not hours,
on a 2-core machine: all-to-all ``--a2a-packets`` (001: 30) and nearest
neighbour ``--nn-packets`` (001: 2048 = 512 KB); the throughput of a large
exchange depends little on the message size once it is many round trips long.

    python run_scripts/validate_exchanges.py [--a2a-packets 1] [--nn-packets 128]
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

INSTANCES = {
    "SF q=13 p=9": ["topology.name=slimfly", "topology.q=13", "topology.p=9"],
    "MLFM h=15": ["topology.name=mlfm", "topology.h=15"],
    "OFT k=12": ["topology.name=oft", "topology.k=12"],
}
ALGS = ["min", "valiant", "ugal_l"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a2a-packets", type=int, default=1)
    ap.add_argument("--nn-packets", type=int, default=128)
    ap.add_argument("--vcs", type=int, default=4)
    ap.add_argument("--instances", nargs="+", default=list(INSTANCES), choices=list(INSTANCES))
    args = ap.parse_args()
    print(f"effective throughput, % of injection bandwidth (channel latency 1, {args.vcs} VCs; "
          f"all-to-all {args.a2a_packets} packet(s)/message, nearest neighbour {args.nn_packets})")
    print(f"{'instance':<13} {'exchange':<28} " + " ".join(f"{a:>8}" for a in ALGS))
    for name in args.instances:
        for pattern, pk in (("alltoall", args.a2a_packets), ("nn3d", args.nn_packets)):
            row, desc = [], ""
            t = time.time()
            for alg in ALGS:
                cfg = C.resolve({}, INSTANCES[name] + [
                    f"routing.algorithm={alg}", f"traffic.pattern={pattern}",
                    f"traffic.message_packets={pk}", "router.link_latency=1",
                    f"router.num_vcs={args.vcs}", "measure.sample_period=100"])
                s = run_local(cfg)["summary"]
                row.append(100 * s["effective_throughput"])
                desc = s["workload"].split(",")[0]
            print(f"{name:<13} {desc[:28]:<28} " + " ".join(f"{v:>7.1f}%" for v in row)
                  + f"   ({time.time() - t:.0f} s)")


if __name__ == "__main__":
    try:
        main()
    except ParameterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
