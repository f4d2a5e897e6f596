"""``python -m pdes compile [CONFIG] [--set k=v ...] [--routings A,B,...] [--json] [--quiet]``.

Compiles every kernel a run of the config needs, or loads it from the compiled-code cache,
without running a cycle: it starts the run exactly as ``pdes run`` does on the same ranks
(network, tables, partition, the rank's kernel state, so the kernels get the same types),
then compiles the router stage of the configured routing (the cycle kernel with its stages)
and the exchange kernels.  Under ``mpiexec`` one rank per node compiles and the node's other
ranks load what it cached (:mod:`pdes.compiling`).  ``--routings`` compiles for each of
several routing algorithms; a config with a ``[sweep]`` table compiles every series of the
study.  The cache is ``$PDES_CACHE_DIR`` (else ``$NUMBA_CACHE_DIR``, else
``~/.cache/pdes``) + ``/numba-<source digest>``; see docs/cluster.md.
"""
from __future__ import annotations

import json

from models.core.errors import ParameterError
from pdes.cli.common import mpi_main, say_fn

HELP = "compile the simulation kernels a config needs (or load them from the cache), no cycles"


def add_arguments(p):
    p.add_argument("config", nargs="?", help="TOML config file (default: built-in example), may "
                   "hold a [sweep] table (every series is compiled), or a BookSim2 config")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a config value (repeatable), as for run")
    p.add_argument("--routings", metavar="A,B,...",
                   help="compile for each of these routing algorithms (routing.algorithm) instead "
                   "of the config's one")
    p.add_argument("--json", action="store_true", help="print one JSON object per config")
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def main(args) -> int:
    return mpi_main(_main, args)


def routings(text: str | None) -> list[str]:
    """The names of ``--routings`` (comma-separated, distinct, none empty); [] without it."""
    if text is None:
        return []
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise ParameterError(f"--routings: expected names separated by commas, got '{text}'")
    if len(set(names)) != len(names):
        raise ParameterError(f"--routings: a name is given twice in '{text}'")
    return names


def configs(args) -> list[dict]:
    """The resolved configs to compile for (all checked before any work)."""
    from pdes import booksim
    from pdes import config as C
    from pdes import study as S
    raw = {}
    if args.config:
        raw = booksim.load(args.config)[0] if booksim.looks_like_booksim(args.config) \
            else C.load_toml(args.config)
    variants = [[*args.sets, f"routing.algorithm={r}"] for r in routings(args.routings)] \
        or [list(args.sets)]
    out = []
    for sets in variants:
        if "sweep" in raw:
            spec = S.make_spec(raw, sets, [], None, None, None, None)
            out += [spec.config_of(s, None) for s in range(len(spec.series))]
        else:
            out.append(C.resolve(raw, sets))
    return out


def _main(args, comm) -> int:
    from models.core.routing import kernel_of
    from pdes.build import prepare
    from pdes.compiling import check_cache_dir, compile_notice, describe
    from pdes.engine import compile_kernels
    from pdes.sizing import check_run_memory

    rank, size = comm.Get_rank(), comm.Get_size()
    check_cache_dir(comm)
    cfgs = configs(args)
    say = say_fn(comm, args.quiet)
    for cfg in cfgs:
        prep = prepare(cfg, comm if size > 1 else None)
        check_run_memory(prep, size, prep.share.node_size)    # as run: the same table kinds
        kernel = kernel_of(cfg["routing"]["algorithm"], prep.plan)
        compile_notice(say, [kernel], size, booksim=cfg["router"]["allocation"] == "booksim")
        info = compile_kernels(cfg, comm if size > 1 else None, prep)
        if rank != 0:
            continue
        what = f"routing {cfg['routing']['algorithm']} ({kernel.module}.{kernel.hop})"
        if args.json:
            keep = ("compiled", "loaded", "in_memory", "nodes", "ranks", "seconds", "cache",
                    "fallback", "kernels")
            print(json.dumps({"routing": cfg["routing"]["algorithm"], "topology": prep.topo.name,
                              **{k: info[k] for k in keep}}, sort_keys=True), flush=True)
        else:
            print(f"{what}: {describe(info).removeprefix('kernels: ')}", flush=True)
            print(f"  router stage {', '.join(info['kernels'])}", flush=True)
    return 0
