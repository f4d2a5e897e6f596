"""``python -m pdes design``: every network a router radix can build, one row per configuration.

    python -m pdes design --radix 48
    python -m pdes design --radix 36 --radix-max 64 --families slimfly -o sf.csv
    python -m pdes design --radix 48 --families torus,hypercube --endpoints 1000:20000
    python -m pdes design --radix 48 --diameter 3 --endpoints 10000: -o table.h5

The table is :func:`models.design.design_table`: per family its balanced
configurations (the rules are in :mod:`models.design`), with counts, diameter, links
and ports per endpoint, Moore-bound ratio, bisection formula, router cost and power.
``-o`` writes CSV (``.csv``) or HDF5 (``.h5``, ``.hdf5``), following the rules of every
output (docs/output.md, "Output files"): checked and claimed before any work, written
under a temporary name and renamed when complete; an existing file is replaced.  Under
``mpiexec`` every rank checks the arguments and rank 0 alone computes, prints and
writes.
"""
from __future__ import annotations

import csv
import json
import os
import sys

from models.core.errors import ParameterError
from pdes.analysis import integer_option
from pdes.cli.common import world_if_parallel
from pdes.files import hdf5_written, replaced_when_whole

HELP = "list every configuration of the topology families that fits a router radix"

FORMAT = "pdes-design"
FORMAT_VERSION = 1
SUFFIXES = {".csv": "csv", ".h5": "hdf5", ".hdf5": "hdf5"}
"""Output file suffix -> format."""


def add_arguments(parser) -> None:
    parser.add_argument("--radix", metavar="K",
                        help="router radix (ports per router): the configurations that use at "
                             "most K ports")
    parser.add_argument("--radix-max", metavar="M",
                        help="sweep the radix from K to M: the configurations that use between K "
                             "and M ports")
    parser.add_argument("--families", metavar="LIST",
                        help="comma-separated families (default: every family whose size the "
                             "radix bounds; torus needs --endpoints with a maximum)")
    parser.add_argument("--endpoints", metavar="MIN:MAX",
                        help="keep the configurations with MIN to MAX endpoints (either side may "
                             "be empty: 1000: or :50000)")
    parser.add_argument("--diameter", metavar="N",
                        help="keep the configurations whose diameter (or proven upper bound) is "
                             "at most N")
    parser.add_argument("--power", default="slimfly", metavar="MODEL",
                        help="power model: slimfly (000 Sec. VI-C, default) or galaxyfly "
                             "(004 Sec. 6.2)")
    parser.add_argument("--router-coeffs", metavar="A,B",
                        help="custom router price a*k+b $ (default fdr10: 350.4,-892.3)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="also write the table: FILE.csv (CSV) or FILE.h5 / FILE.hdf5 (HDF5)")


def _endpoints(text) -> tuple[int | None, int | None]:
    if text is None:
        return None, None
    if str(text).count(":") != 1:
        raise ParameterError(f"--endpoints: expected MIN:MAX (either may be empty), got {text!r}")
    lo, hi = (s.strip() for s in str(text).split(":"))
    if not lo and not hi:
        raise ParameterError(f"--endpoints: give MIN, MAX or both, got {text!r}")
    lo = integer_option("--endpoints", lo, 1) if lo else None
    hi = integer_option("--endpoints", hi, 1) if hi else None
    if lo is not None and hi is not None and lo > hi:
        raise ParameterError(f"--endpoints: MIN {lo} is above MAX {hi}")
    return lo, hi


def options(args) -> dict:
    """Keyword arguments of :func:`models.design.design_table`, checked (no work done)."""
    from models.analysis.cost import POWER_MODELS
    from models.design import MAX_RADIX, check_families, default_families
    from pdes.analysis import _floats
    if args.radix is None:
        raise ParameterError("--radix: required (the router radix K: ports per router)")
    radix = integer_option("--radix", args.radix, 1)
    if radix > MAX_RADIX:
        raise ParameterError(f"--radix: must be at most {MAX_RADIX}, got {args.radix!r}")
    radix_max = None
    if args.radix_max is not None:
        radix_max = integer_option("--radix-max", args.radix_max, radix)
        if radix_max > MAX_RADIX:
            raise ParameterError(f"--radix-max: must be at most {MAX_RADIX}, "
                                 f"got {args.radix_max!r}")
    endpoints = _endpoints(args.endpoints)
    if args.families is None:
        families = default_families()
    else:
        families = [s.strip() for s in str(args.families).split(",") if s.strip()]
        if not families:
            raise ParameterError(f"--families: no family named in {args.families!r}")
    families = check_families(families, endpoints[1], key="--families")
    diameter = None if args.diameter is None else integer_option("--diameter", args.diameter, 1)
    if args.power not in POWER_MODELS:
        raise ParameterError(f"--power: unknown model {args.power!r} "
                             f"(known: {', '.join(POWER_MODELS)})")
    coeffs = _floats("--router-coeffs", args.router_coeffs, 2)
    return {"radix": radix, "radix_max": radix_max, "families": families,
            "endpoints": endpoints, "diameter": diameter, "power_model": args.power,
            "router_coeffs": coeffs}


def output_format(path: str) -> str:
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in SUFFIXES:
        raise ParameterError(f"-o: {path} has no known suffix (.csv for CSV, .h5 or .hdf5 for "
                             "HDF5)")
    return SUFFIXES[suffix]


# --------------------------------------------------------------------------- output
def write_csv(path: str, table) -> None:
    """The rows as CSV, one header line of :data:`models.design.COLUMNS`; an empty cell
    where a value is not given."""
    from models.design import COLUMNS
    with replaced_when_whole(path) as tmp:
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(COLUMNS)
            for r in table.rows:
                w.writerow(["" if r[c] is None else r[c] for c in COLUMNS])


def write_hdf5(path: str, table, version: str) -> None:
    """The rows as HDF5: one dataset per column of :data:`models.design.COLUMNS` under
    ``/table`` (text as UTF-8 strings; integers with -1 and numbers with NaN where a value
    is not given, booleans as int8 with -1; ``moore_bound`` as a number, as it may exceed
    64 bits), root attributes ``format = "pdes-design"``,
    ``format_version``, ``pdes_version``, ``options`` (JSON), ``left_out`` (JSON) and
    ``complete``."""
    import h5py
    import numpy as np

    from models.design import COLUMNS
    text = {"family", "params", "diameter_source", "bisection"}
    floats = {"links_per_endpoint", "ports_per_endpoint", "moore_bound", "moore_ratio",
              "router_cost", "router_cost_per_endpoint", "power_w", "power_per_endpoint_w"}
    with hdf5_written(path) as f:
        f.attrs["format"] = FORMAT
        f.attrs["format_version"] = FORMAT_VERSION
        f.attrs["pdes_version"] = version
        f.attrs["options"] = json.dumps(table.options, sort_keys=True)
        f.attrs["left_out"] = json.dumps(table.left_out, sort_keys=True)
        g = f.create_group("table")
        for c in COLUMNS:
            col = table.column(c)
            if c in text:
                data = np.array(col, dtype=h5py.string_dtype("utf-8"))
            elif c in floats:
                data = np.array([np.nan if v is None else v for v in col], dtype=np.float64)
            elif c == "bisection_exact":
                data = np.array([-1 if v is None else int(v) for v in col], dtype=np.int8)
            else:
                data = np.array([-1 if v is None else v for v in col], dtype=np.int64)
            g.create_dataset(c, data=data)
        f.attrs["complete"] = True


def _num(v, nd=3) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.{nd}g}"
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)


PRINTED = (("family", "family"), ("params", "parameters"), ("routers", "routers"),
           ("endpoints", "endpoints"), ("radix", "k"), ("network_radix", "k'"),
           ("diameter", "D"), ("links_per_endpoint", "links/N"), ("ports_per_endpoint", "ports/N"),
           ("moore_ratio", "Moore"), ("bisection_links", "bisection"),
           ("router_cost_per_endpoint", "$/N"), ("power_per_endpoint_w", "W/N"))
"""The columns the printed table shows (key, heading)."""


def table_text(table) -> str:
    """The rows as an aligned text table, then notes on what was left out."""
    head = [h for _, h in PRINTED]
    body = []
    for r in table.rows:
        cells = [_num(r[k]) for k, _ in PRINTED]
        if r["diameter"] is None and r["diameter_bound"] is not None:
            cells[6] = f"<={r['diameter_bound']}"
        if r["bisection_links"] is not None and not r["bisection_exact"]:
            cells[10] = f"~{cells[10]}"
        body.append(cells)
    width = [max([len(h)] + [len(b[i]) for b in body]) for i, h in enumerate(head)]
    left = {0, 1}

    def line(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, width))).rstrip()
    out = [line(head)] + [line(b) for b in body]
    o = table.options
    rng = f"radix {o['radix']}..{o['radix_max']}" if o["radix_max"] is not None \
        else f"radix <= {o['radix']}"
    out.append(f"{len(table.rows)} configurations ({rng}); D: router-graph diameter (<=: upper "
               "bound only); bisection: links, ~ = estimate, - = no formula; $/N: routers only "
               f"(cables need a layout: pdes analyze --only cost); W/N: {o['power_model']} model")
    for name, n in sorted(table.left_out.items()):
        out.append(f"left out: {n} {name} configuration(s) beyond the engine's limits")
    return "\n".join(out)


# --------------------------------------------------------------------------- main
def claim_output(args, world):
    """Check ``-o`` as ``run -o`` checks its output (a regular file or a new one, a name that
    fits with its temporary twin; the command reads no file) and claim it on rank 0 of
    ``world`` (:class:`pdes.cli.outputs.Claim`).  An existing design table of the same format
    (or an empty file) is replaced, any other file refused."""
    from pdes.cli.common import check_output
    from pdes.cli.outputs import Claim, check_replaceable, claim
    if args.output is None:
        return Claim()
    fmt = output_format(args.output)
    check_output(args.output, "-o")
    check_replaceable(args.output, "-o", "csv" if fmt == "csv" else "hdf5")
    return claim(world, [(args.output, "-o")])


def main(args) -> int:
    world = world_if_parallel()
    rank = world.Get_rank() if world is not None else 0
    try:
        opts = options(args)
        lock = claim_output(args, world)        # before any work
    except ParameterError as exc:
        if world is None:
            raise
        if rank == 0:   # found identically on every rank, before any work
            print(f"pdes: error: {exc}", file=sys.stderr, flush=True)
        return 2
    if rank != 0:
        return 0
    try:
        return _main(args, opts)
    finally:
        lock.release()


def _main(args, opts) -> int:
    from models.design import design_table
    from pdes import __version__
    table = design_table(**opts)
    if args.output:
        if output_format(args.output) == "csv":
            write_csv(args.output, table)
        else:
            write_hdf5(args.output, table, __version__)
    print(table_text(table))
    if args.output:
        print(f"written: {args.output}")
    return 0
