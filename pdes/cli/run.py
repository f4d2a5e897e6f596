"""``python -m pdes run [CONFIG | --booksim FILE | --restart CKPT] [--set k=v ...] [-o FILE] [--quiet]
[--print-config] [--checkpoint FILE] [--checkpoint-every N] [--stop-at CYCLE]``.

Without CONFIG it runs the built-in default example: Slim Fly q=5 (p=4),
uniform traffic, minimal routing, load 0.4.  Under ``mpiexec -n N`` the
routers are partitioned over the ranks (``run.partition``); the results are
identical for any N.  A BookSim2 config (``--booksim FILE``, or a CONFIG
that is not TOML) is translated by :mod:`pdes.booksim`; the pdes keys it set
are printed on stderr, and ``--set`` still applies on top.

Checkpoints (:mod:`pdes.checkpoint`, docs/parallel.md): with a checkpoint
file (``--checkpoint FILE``, or ``<output>.ckpt.h5`` next to the output
file), SIGTERM or SIGUSR1 to any rank writes a checkpoint at the next sample
boundary and stops with status 75; ``--checkpoint-every N`` writes one every
N cycles, ``--stop-at CYCLE`` writes one and stops.  ``--restart CKPT``
continues a checkpoint on any number of ranks.
"""
from __future__ import annotations

import json
import sys

from models.core.errors import ParameterError
from models.core.registry import Param
from pdes.cli.common import (StopRequest, check_output, mpi_main, mpi_text, same_on_every_rank,
                             say_fn)
from pdes.cli.outputs import Claim, check_not_input, check_replaceable
from pdes.cli.outputs import claim as claim_outputs
from pdes.provenance import input_files
from pdes.compiling import check_cache_dir, compile_notice, describe
from pdes.loopstate import EXIT_STOPPED

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
    p.add_argument("--restart", metavar="CKPT",
                   help="continue the run saved in checkpoint CKPT (on any number of ranks); its "
                   "config is used, and a config or --set given with it must match it")
    p.add_argument("--checkpoint", metavar="FILE",
                   help="checkpoint file (default: the output file's name ending in .ckpt.h5)")
    p.add_argument("--checkpoint-every", metavar="N",
                   help="write a checkpoint every N cycles (rounded up to a multiple of "
                   "measure.sample_period)")
    p.add_argument("--stop-at", metavar="CYCLE",
                   help="write a checkpoint at the first sample boundary at or after CYCLE, "
                   f"then stop with status {EXIT_STOPPED}")
    p.add_argument("--alone", action="store_true",
                   help="with [[jobs]]: also run each job alone on the same endpoints and report "
                   "its slowdown (cycles with the others / cycles alone)")
    p.add_argument("--allow-changed-inputs", action="store_true",
                   help="with --restart: continue although a file the config names (network, "
                   "placement) changed since the checkpoint was written; the output records it")


def main(args) -> int:
    return mpi_main(_main, args)


def _main(args, comm) -> int:
    from pdes import config as C
    from pdes.checkpoint import open_checkpoint, restart_config
    from pdes.loopstate import CheckpointStop

    rank = comm.Get_rank()
    raw, told = read_config(args)
    ck = None
    if args.restart is not None:
        ck = open_checkpoint(args.restart)
        cfg = restart_config(ck, raw if (args.config or args.booksim) else None, args.sets)
    else:
        cfg = C.resolve(raw, args.sets)
    if args.output:
        cfg["output"]["file"] = args.output
    same_on_every_rank(comm, "config", C.to_toml(cfg))
    say = say_fn(comm, args.quiet)
    if say:
        for line in told:
            say(line)
    if args.print_config:
        if rank == 0:
            print(C.to_toml(cfg))
        return 0
    check_cache_dir(comm)
    out = cfg["output"]["file"]
    if out:
        check_output(out, "output.file")
    plan = checkpoint_plan(args, cfg)
    prov = input_provenance(args, cfg, ck, comm)
    inputs = {**({"config": args.booksim or args.config} if args.booksim or args.config else {}),
              **input_files(cfg)}
    if out:
        check_not_input(out, "output.file", {**inputs, "restart": args.restart})
        check_replaceable(out, "output.file", "hdf5")
    if plan is not None:     # a restart may write its checkpoints over the one it continues
        check_not_input(plan.path, "checkpoint", inputs)
        check_replaceable(plan.path, "checkpoint", "hdf5")
    stop = StopRequest()
    claim = Claim()
    try:
        claim = claim_outputs(comm, [(out, "output.file")]
                              + ([(plan.path, "checkpoint")] if plan is not None else []))
        if plan is not None:     # a signal asks for a checkpoint at the next sample boundary
            stop.install()
            plan.requested = stop
            if say:
                plan.on_write = lambda T: say(f"checkpoint at cycle {T} written to {plan.path}")
        return _simulate(args, comm, cfg, ck, plan, say, prov)
    except CheckpointStop as exc:
        if rank == 0:
            why = (f"terminated by {signal_name(exc.signum)}" if exc.signum
                   else f"stopped (--stop-at {plan.stop_at})")
            print(f"pdes: {why} at cycle {exc.cycle}: checkpoint written to {exc.path}; continue "
                  f"with: python -m pdes run --restart {exc.path}", file=sys.stderr, flush=True)
        return EXIT_STOPPED
    finally:
        stop.uninstall()
        claim.release()


def input_provenance(args, cfg, ck, comm) -> dict:
    """The attributes recording the run's input files (:mod:`pdes.provenance`), read on rank 0.

    On a restart the files' digests must equal the checkpoint's; a difference is refused
    (``restart: <key>: <path> changed since the checkpoint was written ...``) unless
    ``--allow-changed-inputs`` is given, which records every accepted change
    (``changed_inputs``, with those of earlier restarts).
    """
    from pdes import provenance as P
    if args.allow_changed_inputs and ck is None:
        raise ParameterError("--allow-changed-inputs: only with --restart (a run without one "
                             "has nothing to compare its input files with)")
    rec = P.shared_record(P.input_files(cfg), comm if comm.Get_size() > 1 else None)
    if ck is None:
        return P.attrs(rec)
    found = P.changes(P.stored(ck.attrs, f"restart: {ck.path}"), rec,
                      at=f"restart from {ck.path} at cycle {ck.cycle}")
    if not args.allow_changed_inputs:
        P.refuse(found, "restart", "the checkpoint was written")
    earlier = P.accepted(ck.attrs)
    keep = args.allow_changed_inputs or P.CHANGED_ATTR in ck.attrs
    return P.attrs(rec, earlier + found if keep else None)


def _simulate(args, comm, cfg, ck, plan, say, prov) -> int:
    from pdes import __version__
    from pdes import config as C
    from pdes.build import prepare
    from pdes.engine import simulate
    from pdes.output import write_results
    from pdes.sizing import (buffer_note, buffer_text, buffers_fixed, check_run_memory,
                             describe_memory, size_text)

    rank, size = comm.Get_rank(), comm.Get_size()
    out = cfg["output"]["file"]
    if args.alone and not cfg.get("jobs"):
        raise ParameterError("--alone: only with [[jobs]] (it runs each job alone)")
    prep = prepare(cfg, comm if size > 1 else None)
    prep.provenance = prov
    per_node = prep.share.node_size      # ranks on this node
    memory = check_run_memory(prep, size, per_node)
    note = buffer_note(prep)
    if note and rank == 0:     # also under --quiet: it changes what the results mean
        print(f"[pdes] {note}", file=sys.stderr, flush=True)
    if prep.deadlock_warning and rank == 0:     # also under --quiet
        print(f"[pdes] {prep.deadlock_warning}", file=sys.stderr, flush=True)
    from models.core.routing import kernel_of
    compile_notice(say, [kernel_of(cfg["routing"]["algorithm"], prep.plan)], size,
                   booksim=cfg["router"]["allocation"] == "booksim")
    topo = prep.topo
    mpi_line = mpi_text(comm, prep.share.node_rank, per_node) if size > 1 else ""   # collective
    if say:
        say(f"{topo.name} {_short(cfg['topology'])}: {topo.n_routers} routers, "
            f"{topo.n_endpoints} endpoints, {topo.n_links} links; routing {cfg['routing']['algorithm']}"
            f" ({prep.rp.num_vcs} VCs), " + (
                "jobs " + ", ".join(f"{j['name']} ({j['pattern']})" for j in cfg["jobs"])
                if cfg.get("jobs") else
                f"traffic {cfg['traffic']['pattern']} load {cfg['traffic']['load']}"))
        for note in prep.notes:
            say(note)
        if mpi_line:
            say(mpi_line)
        say("buffers: " + buffer_text(prep)
            + (" (router.buffer_flits, vc_buffer_flits)" if buffers_fixed(cfg["router"]) else
               " (automatic: each port's VCs cover its own link's credit round trip)")
            + f"; {size_text(memory['buffers'])} per rank with every buffer full, resident only as "
            "flits use them")
        say(f"memory estimate: {size_text(memory['per_node'])} per node at start, up to "
            f"{size_text(memory['per_node_full'])} with every buffer full ({describe_memory(memory)})")
        if ck is not None:
            say(f"restart from {ck.path} at cycle {ck.cycle} (phase {ck.state.phase})")
        if plan is not None:
            say(f"checkpoints to {plan.path}: "
                + ", ".join(w for w in (f"every {plan.every} cycles" if plan.every else "",
                                        f"at cycle {plan.stop_at} (then stop)" if plan.stop_at else "",
                                        "on SIGTERM or SIGUSR1 (then stop)") if w))

    def report(rep, window):
        if say and size > 1:
            say(f"partition '{cfg['run']['partition']}' on {size} ranks: routers/rank "
                f"{rep['routers_per_rank'].min()}..{rep['routers_per_rank'].max()}, cut links "
                f"{rep['cut_links']} ({100 * rep['cut_fraction']:.1f}%), lookahead "
                f"{rep['lookahead']} cycles (min link latency {rep['min_link_latency']}), window "
                f"{window}, imbalance {rep['imbalance']:.3f}"
                + (f", {rep['groups_split']} racks split" if rep['groups_split'] else ""))

    def ready(tm):
        if say:
            say("start-up: " + ", ".join(f"{what} {tm[key]:.2f} s" for what, key in STARTUP)
                + f"; total {sum(tm[key] for _, key in STARTUP):.2f} s")
            say(describe(tm["kernels"]))

    res = simulate(cfg, comm if size > 1 else None, progress=say, prep=prep, on_partition=report,
                   checkpoint=plan, restart=ck, on_ready=ready)
    rep = res["partition"]
    if args.alone:
        jobs_alone(cfg, res, comm if size > 1 else None, say)
    if rank == 0:
        if out:
            write_results(out, res, C.to_toml(cfg), nranks=size, partition=rep, version=__version__)
        if args.json:
            print(json.dumps(summary_json(res, out), sort_keys=True))
        else:
            _print_summary(res, out)
    return 0


def jobs_alone(cfg, res, comm, say) -> None:
    """Run every job of ``res`` alone on the endpoints it had, with its start cycle, and add
    ``alone_cycles`` and ``slowdown`` (its cycles with the others / alone) to its results."""
    import copy

    from pdes.engine import simulate
    prep = res["prepared"]
    s, off = prep.traffic.ops, prep.traffic.job_proc_off
    for j, job in enumerate(cfg["jobs"]):
        one = copy.deepcopy(cfg)
        eps = [int(e) for e in s.proc_ep[off[j]:off[j + 1]]]
        one["jobs"] = [{**job, "placement": "list", "placement_file": "", "endpoints": eps}]
        one["output"]["file"] = ""
        if say:
            say(f"job {job['name']} alone on its {len(eps)} endpoints")
        alone = simulate(one, comm)["jobs"][job["name"]]
        mine = res["jobs"][job["name"]]
        mine["alone_cycles"] = alone["cycles"]
        mine["slowdown"] = mine["cycles"] / max(alone["cycles"], 1)
        for k in ("message_latency_mean", "message_latency_p99"):
            mine[f"alone_{k}"] = alone[k]


STARTUP = (("topology", "build_s"), ("layout", "layout_s"), ("distances", "distances_s"),
           ("routing tables", "tables_s"), ("traffic", "traffic_s"), ("partition", "partition_s"),
           ("state", "state_s"), ("kernels", "compile_s"))
"""The start-up phases the start report lists (keys of ``/run``)."""


CYCLES = Param("cycles", int, None, "", lo=1, hi=2 ** 31 - 1)


def checkpoint_plan(args, cfg):
    """When and where to write checkpoints (:class:`pdes.engine.CheckpointPlan`), or None when
    there is no checkpoint file (neither ``--checkpoint`` nor an output file)."""
    import os

    from pdes.loopstate import CheckpointPlan
    every = 0 if args.checkpoint_every is None else CYCLES.coerce(args.checkpoint_every,
                                                                  "checkpoint-every")
    stop_at = 0 if args.stop_at is None else CYCLES.coerce(args.stop_at, "stop-at")
    out = cfg["output"]["file"]
    path = args.checkpoint
    if path is None and out:
        path = (out[:-3] if out.endswith(".h5") else out) + ".ckpt.h5"
    if path is None:
        if every or stop_at:
            raise ParameterError("checkpoint: give --checkpoint FILE or an output file (-o) to "
                                 "write checkpoints to")
        return None
    check_output(path, "checkpoint")
    if out and os.path.abspath(path) == os.path.abspath(out):
        raise ParameterError(f"checkpoint: {path} is also the output file")
    sp = cfg["measure"]["sample_period"]
    return CheckpointPlan(path=path, every=-(-every // sp) * sp, stop_at=stop_at)


def signal_name(signum: int) -> str:
    import signal
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def read_config(args) -> tuple[dict, list[str]]:
    """(raw config, lines to report) of CONFIG or ``--booksim FILE``; ``{}`` without either."""
    from pdes import booksim
    from pdes import config as C
    from pdes.files import check_regular
    if args.booksim and args.config:
        raise ParameterError("config: give a config file or --booksim FILE, not both")
    path = args.booksim or args.config
    if not path:
        return {}, []
    check_regular(path, "config")      # read twice below: TOML or BookSim, then its content
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


def _latency(s: dict, which: str) -> str:
    """One latency row of the summary; without a measured packet "none" (the file keeps its
    NaN mean and -1 percentiles)."""
    k = f"{which}_latency"
    if s["measured_packets"] == 0:
        return "none (no measured packet)"
    return (f"mean {s[k + '_mean']:.2f}  p50 {s[k + '_p50']}  p99 {s[k + '_p99']}  "
            f"max {s[k + '_max']} cycles")


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
        what = "operations" if "operations" in s else "messages"   # a schedule, an exchange
        done, total = s[f"{what}_completed"], s[what]
        if s["saturated"] or done < total:
            # a run cut short (run.max_cycles, a deadlock): its "completion" is not the workload's
            rows.insert(2, ("incomplete", f"{done} of {total} {what} completed"
                            + (f"; saturated: {s['saturated_reason']}" if s["saturated"] else "")))
        for name, j in (res.get("jobs") or {}).items():
            rows.append((f"job {name}", f"{j['processes']} processes, {j['cycles']} cycles from "
                         f"cycle {j['start_cycle']}, {j['bandwidth_bytes_per_cycle_per_process']:.1f} "
                         f"B/cycle/process, message latency mean {j['message_latency_mean']:.1f} "
                         f"p99 {j['message_latency_p99']:.0f}"
                         + (f"; alone {j['alone_cycles']} cycles, slowdown {j['slowdown']:.3f}"
                            if "slowdown" in j else "")))
        if res.get("peak_rss_mb") is not None:
            rows.append(("peak memory", f"{res['peak_rss_mb']:.0f} MB resident (the largest rank)"))
        if out:
            rows.append(("results", out))
        w = max(len(k) for k, _ in rows)
        for k, v in rows:
            print(f"{k:<{w}}  {v}")
        return
    rows = [
        ("offered load", f"{s['offered_load']:.4f} flits/cycle/endpoint (configured {s['offered_load_config']})"),
        ("accepted load", f"{s['accepted_load']:.4f} flits/cycle/endpoint"),
        ("packet latency", _latency(s, "packet")),
        ("network latency", _latency(s, "network")),
        ("hops", f"mean {s['hops_mean']:.3f}" if s["measured_packets"] else "none"),
        ("measured packets", f"{s['measured_packets']} (window {s['measure_start']}..{s['measure_end']},"
                             f" {s['cycles']} cycles simulated)"),
        ("saturated", "yes: " + s["saturated_reason"] if s["saturated"] else "no"),
    ]
    fail = getattr(res.get("prepared"), "failure", None)
    if fail is not None:            # a failure during the run (faults.at_cycle)
        end = s["cycles"]
        rows.append(("failure", f"none: the run ended at cycle {end}, before faults.at_cycle = "
                     f"{fail.at_cycle}" if end <= fail.at_cycle else
                     f"at cycle {fail.at_cycle}, " + (f"rerouted at cycle {fail.reroute_at}"
                     if end > fail.reroute_at else f"not rerouted (the run ended at cycle {end}, "
                     f"before cycle {fail.reroute_at})")))
    if res.get("peak_rss_mb") is not None:
        rows.append(("peak memory", f"{res['peak_rss_mb']:.0f} MB resident (the largest rank)"))
    if out:
        rows.append(("results", out))
    w = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{w}}  {v}")
