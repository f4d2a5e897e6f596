"""``python -m pdes sweep [CONFIG] [--set k=v ...] --vary KEY=V1,V2 ... --loads 0.1:0.9:0.1
[--saturation] [--seeds N] [--concurrent K] -o study.h5 [--resume]``.

Runs a study (see :mod:`pdes.study`): the cartesian product of the varied
keys, each at every offered load (and replication), optionally followed by a
saturation search per series, all in one process per rank.  A study of
finite workloads (collectives, exchanges, traces) has one point per series
instead and takes no loads.  The same keys can be given in a ``[sweep]``
table of the config file.
"""
from __future__ import annotations

import json
import math
import sys

from pdes.cli.common import check_output, mpi_main, same_on_every_rank, say_fn
from pdes.cli.outputs import check_not_input, check_replaceable, claim
from pdes.compiling import check_cache_dir

HELP = "run a study: latency-load sweeps over varied keys, saturation search, replications"


def add_arguments(p):
    p.add_argument("config", nargs="?", help="TOML config file, may hold a [sweep] table "
                   "(default: built-in example)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a config value of every point (repeatable)")
    p.add_argument("--vary", action="append", default=[], metavar="SECTION.KEY=V1,V2,...",
                   help="a key and its values (repeatable; the points are the cartesian product), "
                        "e.g. --vary routing.algorithm=min,ugal_l")
    p.add_argument("--loads", metavar="START:STOP:STEP|L1,L2,...",
                   help="offered loads in flits/cycle/endpoint, stop included (default 0.1:1.0:0.1; "
                        "not for finite workloads, which have one point per series)")
    p.add_argument("--saturation", action="store_true", default=None,
                   help="find each series' saturation load by bisection on the offered load")
    p.add_argument("--resolution", type=float, metavar="R",
                   help="bisection resolution in flits/cycle/endpoint (default 0.01)")
    p.add_argument("--seeds", type=int, metavar="N",
                   help="replications per point with seeds measure.seed, +1, ... (default 1)")
    p.add_argument("--concurrent", type=int, default=1, metavar="K",
                   help="split the MPI ranks into K groups that run points side by side (default 1)")
    p.add_argument("-o", "--output", help="HDF5 study file (default: output.file of the config)")
    p.add_argument("--resume", action="store_true",
                   help="continue the study in the output file: run only its missing points")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    p.add_argument("--allow-changed-inputs", action="store_true",
                   help="with --resume: continue although a file the config names (network, "
                   "placement) changed since the study was written; the study file records it")
    p.add_argument("--analyze", metavar="SECTIONS",
                   help="a study of structural analyses instead of simulations: the sections "
                        "of 'pdes analyze' (e.g. latency,paths), one series per combination "
                        "of the varied keys (which may be analysis.* options), no loads")
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def main(args) -> int:
    return mpi_main(_main, args)


def _analysis_study(args, comm, raw: dict) -> int:
    """``--analyze``: a study of structural analyses (:mod:`pdes.analysis_study`)."""
    from models.core.errors import ParameterError
    from pdes import __version__
    from pdes import analysis_study as AS
    for flag, given in (("--loads", args.loads is not None), ("--saturation", args.saturation),
                        ("--seeds", args.seeds is not None),
                        ("--resolution", args.resolution is not None),
                        ("--concurrent", args.concurrent != 1),
                        ("--allow-changed-inputs", args.allow_changed_inputs)):
        if given:
            raise ParameterError(f"{flag}: not with --analyze (an analysis study has no loads, "
                                 "simulations or groups of ranks: one report per series)")
    spec = AS.make_spec(raw, args.sets, args.vary, args.analyze)
    path = args.output or spec.base["output"]["file"]
    if not path:
        raise ParameterError("-o: a sweep needs an output file (-o study.h5 or output.file)")
    if args.resume and args.force:
        raise ParameterError("--resume: cannot be combined with --force")
    check_output(path, "-o")
    check_not_input(path, "-o", {"config": args.config} if args.config else {})
    say = say_fn(comm, args.quiet)
    if say:
        say(f"analysis study: {len(spec.series)} series (varying "
            + (", ".join(f"{k} ({len(v)})" for k, v in spec.vary) or "nothing")
            + f"), sections {args.analyze}")
    with claim(comm, [(path, "-o")], then=lambda: _check_study_output(path, args)):
        AS.run(spec, path, comm if comm.Get_size() > 1 else None, args.resume, __version__,
               say=say)
    if comm.Get_rank() == 0:
        print(f"study written to {path}", file=sys.stderr if args.quiet else sys.stdout)
    return 0


def _main(args, comm) -> int:
    from models.core.errors import ParameterError
    from pdes import __version__
    from pdes import config as C
    from pdes import study as S

    rank, size = comm.Get_rank(), comm.Get_size()
    raw = C.load_toml(args.config) if args.config else {}
    same_on_every_rank(comm, "config", json.dumps(raw, sort_keys=True, default=str))
    if args.analyze is not None:
        return _analysis_study(args, comm, raw)
    spec = S.make_spec(raw, args.sets, args.vary, args.loads, args.saturation, args.resolution,
                       args.seeds)
    path = args.output or spec.base["output"]["file"]
    if not path:
        raise ParameterError("-o: a sweep needs an output file (-o study.h5 or output.file)")
    if args.resume and args.force:
        raise ParameterError("--resume: cannot be combined with --force")
    if args.allow_changed_inputs and not args.resume:
        raise ParameterError("--allow-changed-inputs: only with --resume (a new study has "
                             "nothing to compare its input files with)")
    check_output(path, "-o")
    check_cache_dir(comm)
    files = S.series_files(spec)
    inputs = {"config": args.config} if args.config else {}
    for s, found in enumerate(files):
        for key, f in found.items():
            inputs[key if inputs.get(key, f) == f else f"{key} of series {s}"] = f
    check_not_input(path, "-o", inputs)
    say = say_fn(comm, args.quiet)
    n = len(spec.series) * len(spec.loads) * spec.seeds
    keys = ", ".join(f"{k} ({len(v)})" for k, v in spec.vary) or "nothing"
    loads = "of finite workloads (one point each)" if spec.finite else f"x {len(spec.loads)} loads"
    intro = (f"study: {len(spec.series)} series (varying {keys}) {loads} x "
             f"{spec.seeds} seeds = {n} points" + (f", then a saturation search to "
                                                  f"{spec.resolution:g}" if spec.saturation else "")
             + (f"; {args.concurrent} groups of ranks" if args.concurrent > 1 else ""))
    with claim(comm, [(path, "-o")], then=lambda: _check_study_output(path, args)):
        sat = S.run_study(spec, path, comm if size > 1 else None, concurrent=args.concurrent,
                          resume=args.resume, say=say, version=__version__, intro=intro,
                          files=files, allow_changed_inputs=args.allow_changed_inputs)
    if rank == 0:
        if sat:
            for r in sat:
                keys = "  ".join(f"{k}={S._fmt(v)}" for k, v in spec.series[r["series"]].items())
                seed = f"  seed {r['seed']}" if spec.seeds > 1 else ""
                value = (f"saturation load {r['load']:g} (bracket {r['lo']:g}..{r['hi']:g})"
                         if not math.isnan(r["load"]) else r["status"])
                print("  ".join(x for x in (keys, seed.strip(), value) if x))
        print(f"study written to {path}", file=sys.stderr if args.quiet else sys.stdout)
    return 0


def _check_study_output(path: str, args) -> None:
    """The study file ``-o``: an existing one only with ``--resume`` or ``--force``, and with
    ``--force`` only a file pdes wrote (a typo in ``-o`` never replaces another file)."""
    check_output(path, "-o", replace=args.resume or args.force,
                 exists="use --resume to continue that study, or --force to replace it")
    if args.force:
        check_replaceable(path, "-o", "hdf5")
