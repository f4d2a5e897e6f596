"""Memory and speed of one large run on the current MPI world (a node's view of a big instance).

    mpiexec -n 2  python run_scripts/bench_scale.py --instance sf97 --cycles 100
    mpiexec -n 16 python run_scripts/bench_scale.py --instance sf97 --cycles 10 --project 64
    python run_scripts/bench_scale.py --instance sf5 --cycles 200 --json      # one rank

Instances (uniform traffic, minimal routing, link latencies from the layout,
automatic buffers, load 0.3 unless ``--set`` says otherwise):

* ``sf97``  -- Slim Fly q=97 p=73 (18,818 routers, 1,373,714 endpoints);
* ``bdf19`` -- BDF u=19 p=13 (7,620 routers, 99,060 endpoints);
* ``gf41``  -- Galaxyfly GF(41,61,4,10) (10,004 routers, 100,040 endpoints);
* ``sf13``  -- Slim Fly q=13 p=9 (338 routers, 3,042 endpoints);
* ``sf5``   -- Slim Fly q=5 (50 routers), a smoke test.

The run simulates ``--cycles`` cycles, all of them measured (no warm-up, no
drain), after every rank has compiled or loaded the kernels on a tiny network.
Rank 0 prints:

* per rank: peak resident memory (``ru_maxrss``), and at the end of the last cycle the resident,
  proportional (PSS: shared pages divided among the processes that map them)
  and private memory, and the private memory after start-up (``prepare``:
  topology, layout, distances, routing and traffic tables) less the memory of
  the process before it;
* per node: the sum of the ranks' PSS (what the node really holds), of their
  private memory, and the node-shared part (the difference); the sum of the
  ranks' peaks is an upper bound that counts shared pages once per rank;
* ``--project N``: the memory of one node running ``N`` ranks, from this run:
  the node-shared part once, the private memory before and by start-up once per
  rank, and the kernel state (private memory beyond start-up) of this node's
  ranks once: the same routers split over more ranks hold about the same state;
* the start-up breakdown (``/run``'s ``*_s`` keys), ms per cycle of the window
  loop (wall and CPU time of the slowest rank), flit moves per cycle and µs per
  flit move per core, accepted against offered load.

Flit moves are router traversals (flits forwarded by a router's switch) over
the simulated cycles: half of the kernel's ``moves`` counter (``/series/moves``
counts every switch traversal and every departure from an output queue; the
two differ by the change in output-queue occupancy, a few flits per port).
µs per flit move per core is the loop's CPU time summed over the ranks divided
by the flit moves (wall time times ranks is printed beside it).  With more
ranks than cores the wall times measure the machine; compare CPU times.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from models.core.errors import ParameterError  # noqa: E402

INSTANCES = {
    "sf97": ("Slim Fly q=97 p=73", ["topology.name=slimfly", "topology.q=97", "topology.p=73"]),
    "bdf19": ("BDF u=19 p=13", ["topology.name=bdf", "topology.u=19", "topology.p=13"]),
    "gf41": ("Galaxyfly GF(41,61,4,10)", ["topology.name=galaxyfly", "topology.n=41", "topology.q=61",
                                          "topology.a=4", "topology.p=10"]),
    "sf13": ("Slim Fly q=13 p=9", ["topology.name=slimfly", "topology.q=13", "topology.p=9"]),
    "sf5": ("Slim Fly q=5", ["topology.name=slimfly", "topology.q=5"]),
}
LOAD = 0.3


def memory_mb() -> dict:
    """This process's resident, proportional and private memory now and its peak, in MB."""
    out = {"peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}
    try:
        with open("/proc/self/smaps_rollup") as fh:
            kb = {}
            for line in fh:
                f = line.split()
                if len(f) >= 2 and f[0].endswith(":") and f[1].isdigit():
                    kb[f[0][:-1]] = int(f[1])
        out.update(rss=kb["Rss"] / 1024.0, pss=kb["Pss"] / 1024.0,
                   private=(kb["Private_Clean"] + kb["Private_Dirty"]) / 1024.0)
    except OSError:          # not Linux: peak only
        out.update(rss=float("nan"), pss=float("nan"), private=float("nan"))
    return out


def config(args) -> dict:
    from pdes import config as C
    if args.instance not in INSTANCES:
        raise SystemExit(f"bench_scale.py: unknown instance '{args.instance}' "
                         f"(known: {', '.join(INSTANCES)})")
    sp = min(args.cycles, 100)
    cycles = -(-args.cycles // sp) * sp
    sets = [*INSTANCES[args.instance][1], f"traffic.load={LOAD}", "measure.warmup=fixed",
            "measure.warmup_cycles=0", f"measure.measure_cycles={cycles}", "measure.drain_cycles=0",
            f"measure.sample_period={sp}", "output.file=", *args.sets]
    return C.resolve({}, sets)


def warm_kernels() -> None:
    """Compile (or load) the kernels on a tiny 2-part network, outside the measured run."""
    import numpy as np

    from pdes import config as C
    from pdes.engine import run_local
    cfg = C.resolve({}, ["measure.warmup_cycles=0", "measure.measure_cycles=200",
                         "measure.drain_cycles=0", "output.file="])
    run_local(cfg, owner=np.arange(50, dtype=np.int32) % 2)


def measure(args, comm) -> dict | None:
    """Run the instance on ``comm``; rank 0 gets the report, the others None."""
    from pdes.build import prepare
    from pdes.engine import simulate
    cfg = config(args)
    warm_kernels()
    comm.Barrier()
    before = memory_mb()
    prep = prepare(cfg, comm if comm.Get_size() > 1 else None)
    after_prep = memory_mb()
    marks = {}

    def ready(_timings):
        marks["cpu"] = time.process_time()

    def progress(_line):     # at sample boundaries, and at the last one (the parts still alive)
        marks["end"] = memory_mb()
        marks["end_cpu"] = time.process_time()
    import inspect
    extra = {"on_ready": ready} if "on_ready" in inspect.signature(simulate).parameters else {}
    res = simulate(cfg, comm if comm.Get_size() > 1 else None, prep=prep, progress=progress, **extra)
    loop_cpu = marks["end_cpu"] - marks["cpu"] if "cpu" in marks else float("nan")
    end = marks["end"]
    from mpi4py import MPI
    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
    mine = {"rank": comm.Get_rank(), "host": MPI.Get_processor_name(), "node_size": node.Get_size(),
            "before": before, "after_prepare": after_prep, "end": end, "loop_cpu_s": loop_cpu,
            "shared_mb": getattr(getattr(prep, "share", None), "node_bytes", 0) / 1e6}
    node.Free()
    ranks = comm.gather(mine, root=0)
    if comm.Get_rank() != 0:
        return None
    return report(args, cfg, res, ranks, comm.Get_size())


def report(args, cfg, res, ranks, size) -> dict:
    s, tm = res["summary"], res["timing"]
    cycles = int(s["cycles"])
    moves = int(res["series"][:, 4].sum()) // 2            # router traversals (see the docstring)
    loop_wall = tm["wall_warmup_s"] + tm["wall_measure_s"] + tm["wall_drain_s"]
    loop_cpu = max(r["loop_cpu_s"] for r in ranks)
    cpu_sum = sum(r["loop_cpu_s"] for r in ranks)
    nodes = {}
    for r in ranks:
        nodes.setdefault(r["host"], []).append(r)
    per_node = []
    for host, rs in sorted(nodes.items()):
        pss = sum(r["end"]["pss"] for r in rs)
        private = sum(r["end"]["private"] for r in rs)
        startup = [r["after_prepare"]["private"] - r["before"]["private"] for r in rs]
        state = sum(r["end"]["private"] - r["after_prepare"]["private"] for r in rs)
        node = {"host": host, "ranks": len(rs), "pss_mb": pss, "private_mb": private,
                "shared_mb": pss - private, "peak_sum_mb": sum(r["end"]["peak"] for r in rs),
                "startup_private_mb_per_rank": sum(startup) / len(rs),
                "base_private_mb_per_rank": sum(r["before"]["private"] for r in rs) / len(rs),
                "state_private_mb": state}
        if args.project:
            k = args.project
            node["project_ranks"] = k
            node["project_mb"] = (node["shared_mb"] + k * (node["base_private_mb_per_rank"]
                                                           + node["startup_private_mb_per_rank"])
                                  + state)
        per_node.append(node)
    return {
        "instance": args.instance, "description": INSTANCES[args.instance][0], "ranks": size,
        "routers": res["prepared"].topo.n_routers, "endpoints": res["prepared"].topo.n_endpoints,
        "cycles": cycles, "offered_load": s["offered_load"], "accepted_load": s["accepted_load"],
        "startup_s": {k: v for k, v in tm.items()
                      if k in ("build_s", "layout_s", "distances_s", "tables_s", "traffic_s",
                               "partition_s", "state_s", "compile_s")},
        "ms_per_cycle": 1e3 * loop_wall / cycles, "cpu_ms_per_cycle": 1e3 * loop_cpu / cycles,
        "flit_moves_per_cycle": moves / cycles,
        "hops_mean": s["hops_mean"],
        "us_per_move_core_cpu": 1e6 * cpu_sum / moves if moves else float("nan"),
        "us_per_move_core_wall": 1e6 * loop_wall * size / moves if moves else float("nan"),
        "per_rank": [{"rank": r["rank"], "host": r["host"], "peak_mb": r["end"]["peak"],
                      "rss_mb": r["end"]["rss"], "pss_mb": r["end"]["pss"],
                      "private_mb": r["end"]["private"],
                      "startup_private_mb": r["after_prepare"]["private"] - r["before"]["private"]}
                     for r in ranks],
        "per_node": per_node,
        "shared_tables_mb": ranks[0]["shared_mb"],
    }


def print_report(rep: dict) -> None:
    print(f"{rep['description']}: {rep['routers']:,} routers, {rep['endpoints']:,} endpoints, "
          f"{rep['ranks']} rank(s), {rep['cycles']} cycles")
    print("start-up: " + ", ".join(f"{k[:-2]} {v:.2f} s" for k, v in rep["startup_s"].items())
          + f"; total {sum(rep['startup_s'].values()):.2f} s")
    print(f"loop: {rep['ms_per_cycle']:.1f} ms/cycle wall, {rep['cpu_ms_per_cycle']:.1f} ms/cycle "
          f"CPU (slowest rank); {rep['flit_moves_per_cycle']:,.0f} flit moves/cycle; "
          f"{rep['us_per_move_core_cpu']:.3f} us per flit move per core (CPU; wall x ranks "
          f"{rep['us_per_move_core_wall']:.3f})")
    print(f"load: offered {rep['offered_load']:.4f}, accepted {rep['accepted_load']:.4f} "
          f"flits/cycle/endpoint; hops mean {rep['hops_mean']:.3f}")
    print("rank  peak MB   RSS MB   PSS MB  private MB  start-up private MB")
    for r in rep["per_rank"]:
        print(f"{r['rank']:4d} {r['peak_mb']:8.0f} {r['rss_mb']:8.0f} {r['pss_mb']:8.0f} "
              f"{r['private_mb']:11.0f} {r['startup_private_mb']:20.0f}")
    for n in rep["per_node"]:
        line = (f"node {n['host']}: {n['ranks']} ranks, {n['pss_mb']:.0f} MB in all (PSS sum) = "
                f"{n['private_mb']:.0f} MB private + {n['shared_mb']:.0f} MB shared; sum of peaks "
                f"{n['peak_sum_mb']:.0f} MB; per rank: {n['base_private_mb_per_rank']:.0f} MB "
                f"before start-up, {n['startup_private_mb_per_rank']:.0f} MB by start-up; "
                f"kernel state {n['state_private_mb']:.0f} MB in all")
        print(line)
        if "project_mb" in n:
            print(f"  projected for {n['project_ranks']} ranks on this node: "
                  f"{n['project_mb'] / 1e3:.2f} GB")
    print(f"node-shared tables: {rep['shared_tables_mb']:.0f} MB per node")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instance", default="sf13")
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--project", type=int, default=0, metavar="N",
                    help="project the node's memory to N ranks on it")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--json", action="store_true", help="one JSON line instead of the table")
    args = ap.parse_args(argv)
    if args.cycles < 1:
        raise SystemExit("bench_scale.py: --cycles must be >= 1")
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    try:
        rep = measure(args, comm)
    except ParameterError as exc:        # every rank raises it alike: one line, from rank 0
        if comm.Get_rank() == 0:
            print(f"error: {exc}", file=sys.stderr)
        return 2
    if rep is not None:
        if args.json:
            print(json.dumps(rep, sort_keys=True))
        else:
            print_report(rep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
