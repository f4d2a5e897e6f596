"""``python -m pdes run [CONFIG | --booksim FILE] [--set k=v ...] [-o FILE] [--quiet] [--print-config]``.

Without CONFIG it runs the built-in default example: Slim Fly q=5 (p=4),
uniform traffic, minimal routing, load 0.4.  Under ``mpiexec -n N`` the
routers are partitioned over the ranks (``run.partition``); the results are
identical for any N.  A BookSim2 config (``--booksim FILE``, or a CONFIG
that is not TOML) is translated by :mod:`pdes.booksim`; the pdes keys it set
are printed on stderr, and ``--set`` still applies on top.
"""
from __future__ import annotations

import json
import sys

from models.errors import ParameterError
from pdes.cli.common import check_output, compile_notice, mpi_main, say_fn
from pdes.engine import buffer_note, check_run_memory, describe_memory, size_text

HELP = "simulate a network (default: Slim Fly q=5, uniform, minimal, load 0.4)"


def add_arguments(p):
    p.add_argument("config", nargs="?", help="TOML config file (default: built-in example), or a "
                   "BookSim2 config (.cfg, .booksim, or any file that is not TOML)")
    p.add_argument("--booksim", metavar="FILE", help="read a BookSim2 config file (anynet "
                   "topology); see docs/booksim.md")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a config value (repeatable), e.g. --set traffic.load=0.6")
    p.add_argument("-o", "--output", help="HDF5 result file (overrides output.file)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--print-config", action="store_true",
                   help="print the resolved config (TOML) and exit")
    p.add_argument("--json", action="store_true",
                   help="print the summary as one JSON object on stdout instead of the table")


def main(args) -> int:
    return mpi_main(_main, args)


def _main(args, comm) -> int:
    from pdes import __version__
    from pdes import config as C
    from pdes.engine import prepare, simulate
    from pdes.output import write_results

    rank, size = comm.Get_rank(), comm.Get_size()
    raw, told = read_config(args)
    cfg = C.resolve(raw, args.sets)
    if args.output:
        cfg["output"]["file"] = args.output
    say = say_fn(comm, args.quiet)
    if say:
        for line in told:
            say(line)
    if args.print_config:
        if rank == 0:
            print(C.to_toml(cfg))
        return 0
    out = cfg["output"]["file"]
    if out:
        check_output(out, "output.file")
    prep = prepare(cfg, comm if size > 1 else None)
    per_node = 1
    if size > 1:
        from mpi4py import MPI
        per_node = comm.Split_type(MPI.COMM_TYPE_SHARED).Get_size()   # ranks on this node
    memory = check_run_memory(prep, size, per_node)
    note = buffer_note(prep)
    if note and rank == 0:     # also under --quiet: it changes what the results mean
        print(f"[pdes] {note}", file=sys.stderr, flush=True)
    from pdes.kernels.plugin import kernel_of
    compile_notice(say, [kernel_of(cfg["routing"]["algorithm"], prep.plan)])
    topo = prep.topo
    if say:
        say(f"{topo.name} {_short(cfg['topology'])}: {topo.n_routers} routers, "
            f"{topo.n_endpoints} endpoints, {topo.n_links} links; routing {cfg['routing']['algorithm']}"
            f" ({prep.rp.num_vcs} VCs), traffic {cfg['traffic']['pattern']} load {cfg['traffic']['load']}")
        for note in prep.notes:
            say(note)
        say(f"memory estimate: {size_text(memory['per_node'])} per node at start, up to "
            f"{size_text(memory['per_node_full'])} with every buffer full ({describe_memory(memory)})")
        tm = prep.timings
        say("start-up: " + ", ".join(f"{what} {tm[key]:.2f} s" for what, key in (
            ("topology", "build_s"), ("layout", "layout_s"), ("distances", "distances_s"),
            ("routing tables", "tables_s"), ("traffic", "traffic_s")) if key in tm))

    def report(rep, window):
        if say and size > 1:
            say(f"partition '{cfg['run']['partition']}' on {size} ranks: routers/rank "
                f"{rep['routers_per_rank'].min()}..{rep['routers_per_rank'].max()}, cut links "
                f"{rep['cut_links']} ({100 * rep['cut_fraction']:.1f}%), lookahead "
                f"{rep['lookahead']} cycles (min link latency {rep['min_link_latency']}), window "
                f"{window}, imbalance {rep['imbalance']:.3f}"
                + (f", {rep['groups_split']} racks split" if rep['groups_split'] else ""))

    res = simulate(cfg, comm if size > 1 else None, progress=say, prep=prep, on_partition=report)
    rep = res["partition"]
    if rank == 0:
        if out:
            write_results(out, res, C.to_toml(cfg), nranks=size, partition=rep, version=__version__)
        if args.json:
            print(json.dumps(summary_json(res, out), sort_keys=True))
        else:
            _print_summary(res, out)
    return 0


def read_config(args) -> tuple[dict, list[str]]:
    """(raw config, lines to report) of CONFIG or ``--booksim FILE``; ``{}`` without either."""
    from pdes import booksim
    from pdes import config as C
    if args.booksim and args.config:
        raise ParameterError("config: give a config file or --booksim FILE, not both")
    path = args.booksim or args.config
    if not path:
        return {}, []
    if args.booksim or booksim.looks_like_booksim(path):
        raw, used, notes = booksim.load(path)
        return raw, booksim.describe(path, used, notes)
    raw = C.load_toml(path)
    if "sweep" in raw:
        raise ParameterError("sweep: the [sweep] table is read by 'pdes sweep', not 'pdes run'")
    return raw, []


def summary_json(res, out) -> dict:
    """The run's summary as plain JSON values (NaN as null), with the result file's path."""
    import math
    d = {}
    for k, v in res["summary"].items():
        if hasattr(v, "item"):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            v = None
        d[k] = v
    d["results_file"] = out or None
    return d


def _short(sec: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in sec.items() if k != "name" and v is not None)


def _print_summary(res, out):
    s = res["summary"]
    if "completion_cycles" in s:
        rows = [
            ("workload", s["workload"]),
            ("completion", f"{s['completion_cycles']} cycles"),
            ("effective throughput", f"{100 * s['effective_throughput']:.1f}% of injection bandwidth "
                                     f"({s['processes']} processes)"),
            ("message latency", f"mean {s['message_latency_mean']:.1f}  p50 {s['message_latency_p50']}"
                                f"  p99 {s['message_latency_p99']}  max {s['message_latency_max']} cycles"
                                f" ({s['messages_completed']} of {s['messages']} messages)"),
            ("network latency", f"mean {s['network_latency_mean']:.2f}  p99 {s['network_latency_p99']}"
                                " cycles"),
            ("hops", f"mean {s['hops_mean']:.3f}"),
        ]
        if out:
            rows.append(("results", out))
        w = max(len(k) for k, _ in rows)
        for k, v in rows:
            print(f"{k:<{w}}  {v}")
        return
    rows = [
        ("offered load", f"{s['offered_load']:.4f} flits/cycle/endpoint (configured {s['offered_load_config']})"),
        ("accepted load", f"{s['accepted_load']:.4f} flits/cycle/endpoint"),
        ("packet latency", f"mean {s['packet_latency_mean']:.2f}  p50 {s['packet_latency_p50']}  "
                           f"p99 {s['packet_latency_p99']}  max {s['packet_latency_max']} cycles"),
        ("network latency", f"mean {s['network_latency_mean']:.2f}  p50 {s['network_latency_p50']}  "
                            f"p99 {s['network_latency_p99']}  max {s['network_latency_max']} cycles"),
        ("hops", f"mean {s['hops_mean']:.3f}"),
        ("measured packets", f"{s['measured_packets']} (window {s['measure_start']}..{s['measure_end']},"
                             f" {s['cycles']} cycles simulated)"),
        ("saturated", "yes: " + s["saturated_reason"] if s["saturated"] else "no"),
    ]
    if out:
        rows.append(("results", out))
    w = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{w}}  {v}")
