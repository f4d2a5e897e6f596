"""Saturation throughput of minimal routing under uniform traffic on Slim Fly q=13, p=9 and p=10.

001 Sec. 4.3.1 (and 000 Sec. V-E) report about 96-98 % for p=9 and about 87 %
for p=10.  Two figures are printed per configuration:

* ``accepted@1.0`` -- accepted load with every endpoint offering a full flit
  per cycle (BookSim's usual "throughput at saturation");
* ``sat. load`` -- the highest offered load of the sweep (step ``--step``) at
  which the network is not saturated (accepted within 2 % of offered and every
  measured packet drained).

Router configurations:

* ``booksim``: 000 Sec. V -- 64 flits per port, speedup 2, channel latency 1,
  with ``--vcs`` VCs (2 = one per hop class; 4 = two per class);
* ``deep``: closer to 001's input-output-buffered switches -- 256 flits per
  port, 8 VCs, 64-flit output queues, speedup 4.

    python run_scripts/validate_min.py [--cycles 3000] [--step 0.05]
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

ROUTERS = {
    "booksim-2vc": ["router.num_vcs=2", "router.buffer_flits=64", "router.internal_speedup=2"],
    "booksim-4vc": ["router.num_vcs=4", "router.buffer_flits=64", "router.internal_speedup=2"],
    "deep": ["router.num_vcs=8", "router.buffer_flits=256", "router.output_buffer_flits=64",
             "router.internal_speedup=4"],
}


def run(p, router, load, cycles):
    sets = ["topology.q=13", f"topology.p={p}", "router.link_latency=1", f"traffic.load={load}",
            f"measure.warmup_cycles={cycles // 3}", f"measure.measure_cycles={cycles}",
            f"measure.drain_cycles={cycles}"] + ROUTERS[router]
    return run_local(C.resolve({}, sets))["summary"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=3000, help="measured cycles per run")
    ap.add_argument("--step", type=float, default=0.05, help="load step of the sweep")
    ap.add_argument("--routers", nargs="+", default=list(ROUTERS), choices=list(ROUTERS))
    args = ap.parse_args()
    print("Slim Fly q=13, minimal routing, uniform traffic, channel latency 1")
    print(f"{'p':>3} {'router':<12} {'accepted@1.0':>13} {'sat. load':>10} {'paper':>8} {'s':>6}")
    for p in (9, 10):
        for router in args.routers:
            t = time.time()
            full = run(p, router, 1.0, args.cycles)["accepted_load"]
            sat = 0.0
            load = round(max(0.5, full - 2 * args.step), 4)
            while load <= 1.0 + 1e-9:
                s = run(p, router, load, args.cycles)
                if s["saturated"]:
                    break
                sat = load
                load = round(load + args.step, 4)
            paper = "0.96-0.98" if p == 9 else "0.87"
            print(f"{p:>3} {router:<12} {full:>13.3f} {sat:>10.2f} {paper:>8} {time.time() - t:>6.0f}")


if __name__ == "__main__":
    try:
        main()
    except ParameterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
