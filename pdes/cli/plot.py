"""``python -m pdes plot FILE.h5 [--kind latency|throughput|hops|links|series|completion] [-o fig.png|fig.pdf]``.

    python -m pdes plot sf.h5 df.h5 gf.h5 --kind resiliency -o fig5.png
    python -m pdes plot sf.h5 --kind path-sets -o fig6-8.png
    python -m pdes plot table.h5 --logy -o fig5a.png                  # a 'pdes design -o' table
    python -m pdes plot table.csv --x endpoints --y ports_per_endpoint -o fig3.png
    python -m pdes plot --kind cost-model -o fig12ab.png          # the cost model, no FILE

Saves a figure of a run or study file, or the resiliency curves of one or more analysis files
(``pdes analyze --only resiliency --curve -o FILE``; the default kind for an analysis file),
or the path sets of analysis files (``--kind path-sets``: ``pdes analyze --only path-sets -o FILE``),
or one column of a design table against another (``--kind design``, the default kind for a
``pdes design -o`` file, HDF5 or CSV), or, without FILE, the cable and router prices of the
cost model of ``pdes analyze --only cost`` (``--kind cost-model``, with that command's
``--cables``, ``--cable-coeffs``, ``--cable-gbps`` and ``--router-coeffs``), see
:mod:`pdes.plot`.  The default output is ``<FILE stem>-<kind>.png`` next to (the first) FILE,
``cost-model.png`` for ``--kind cost-model``.  The figure file follows the rules of
every output (docs/output.md, "Output files"): checked and claimed before FILE is read
(when its name does not depend on FILE's kind), never FILE itself, written to
``<name>.tmp-<pid>`` and renamed; an existing figure is replaced.
"""
from __future__ import annotations

import os

from models.core.errors import ParameterError
from pdes.cli.outputs import Claim
from pdes.files import replaced_when_whole

FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}
"""Figure file extensions and the matplotlib format each names."""

HELP = ("plot a run or study file: latency/throughput vs load, hops, link load, time series, "
        "completion time of finite workloads; or resiliency curves or path sets of analysis "
        "files; or a design table's columns; or the cost model (--kind cost-model, no file)")


def add_arguments(p):
    from pdes.plot import KINDS
    p.add_argument("file", nargs="*", help="HDF5 file written by 'pdes run' or 'pdes sweep'; "
                   "with --kind resiliency one or more written by 'pdes analyze --curve -o', "
                   "with --kind path-sets by 'pdes analyze --only path-sets -o', "
                   "with --kind design a table (.h5 or .csv) written by 'pdes design -o'; "
                   "none with --kind cost-model")
    p.add_argument("--kind", choices=KINDS, default=None,
                   help="what to plot (default: latency for a study, completion for a study of "
                        "finite workloads, series for a run, resiliency for an analysis file, "
                        "design for a design table)")
    p.add_argument("-o", "--output", help="figure file, .png, .pdf or .svg (default: FILE-KIND.png)")
    p.add_argument("--point", help="a study's point (its name in 'pdes show --wide') for hops, "
                   "links and series (default: each series at its lowest load)")
    p.add_argument("--logy", action="store_true",
                   help="latency (--kind design: the y column) on a logarithmic axis")
    p.add_argument("--ymax", type=float, metavar="CYCLES",
                   help="latency axis limit (default: 4x the lowest latency, when points exceed it)")
    p.add_argument("--network", action="store_true",
                   help="network latency (from injection into the network) instead of packet latency")
    p.add_argument("--x", metavar="KEY",
                   help="--kind completion: the varied key on the x axis (default: the first "
                        "numeric varied key); --kind metric: a numeric varied key or a metric "
                        "column (then the first varied key runs along each line); --kind design: "
                        "the column on the x axis (default: network_radix)")
    p.add_argument("--y", metavar="COLUMN",
                   help="--kind metric: the metric column on the y axis; --kind design: the "
                        "column on the y axis (default: routers; the Moore "
                        "bounds of diameter 2 and 3 are drawn when it is routers against "
                        "network_radix)")
    p.add_argument("--families", metavar="LIST",
                   help="--kind design: the comma-separated families to plot (default: every "
                        "family of the table)")
    g = p.add_argument_group("--kind cost-model (the prices of 'pdes analyze --only cost')")
    for flag, meta, text in COST_MODEL_OPTIONS:
        g.add_argument(flag, metavar=meta, help=text)


COST_MODEL_OPTIONS = (
    ("--cables", "PRESET", "cable price preset (default fdr10: 000 Sec. VI-B1)"),
    ("--cable-coeffs", "AE,BE,AO,BO", "custom cable prices a*x+b $/Gb/s: electric a,b then "
                                      "optical a,b"),
    ("--cable-gbps", "G", "bandwidth per cable in Gb/s (fdr10: 40; shown in the axis label)"),
    ("--router-coeffs", "A,B", "custom router price a*k+b $ (fdr10: 350.4,-892.3)"),
    ("--max-m", "M", "longest cable drawn, metres (default 30)"),
    ("--max-radix", "K", "largest router radix drawn (default 80)"),
)
"""The options of --kind cost-model: (flag, metavar, help)."""


def _cost_model_given(args) -> list[str]:
    """The --kind cost-model options given on the command line."""
    return [flag for flag, _m, _t in COST_MODEL_OPTIONS
            if getattr(args, flag[2:].replace("-", "_")) is not None]


def _cost_model(args, out: str) -> None:
    """Check the --kind cost-model options (before any figure is claimed) or, with ``out``,
    draw the cost model to it."""
    from pdes.analysis import _float, _floats, integer_option
    from pdes.plot import COST_MODEL_MAX_M, COST_MODEL_MAX_RADIX, cost_model_figure
    from models.analysis.cost import CABLE_PRESETS
    cables = "fdr10" if args.cables is None else args.cables
    if cables not in CABLE_PRESETS:
        raise ParameterError(f"--cables: unknown preset {cables!r} "
                             f"(known: {', '.join(CABLE_PRESETS)})")
    gbps = _float("--cable-gbps", args.cable_gbps, allow_none=True)
    if gbps is not None and gbps <= 0:
        raise ParameterError(f"--cable-gbps: must be > 0, got {args.cable_gbps}")
    max_m = COST_MODEL_MAX_M if args.max_m is None else _float("--max-m", args.max_m)
    max_radix = (COST_MODEL_MAX_RADIX if args.max_radix is None
                 else integer_option("--max-radix", args.max_radix, 1))
    fig = cost_model_figure(cables, _floats("--cable-coeffs", args.cable_coeffs, 4), gbps,
                            "fdr10", _floats("--router-coeffs", args.router_coeffs, 2),
                            max_m=max_m, max_radix=max_radix)
    if out is not None:
        save(fig, out)


ANALYSIS_KINDS = ("resiliency", "path-sets")
"""The kinds that plot analysis files (one or more)."""


def _analysis_kind(path: str) -> str:
    """The kind an analysis file is plotted as by default: path-sets when it holds those and
    no resiliency curve, else resiliency (whose reader names what is missing)."""
    import json

    import h5py
    with h5py.File(path, "r") as f:
        try:
            sections = json.loads(f.attrs.get("analyses", "[]"))
        except (TypeError, ValueError):
            sections = []
    return "path-sets" if "path-sets" in sections and "resiliency" not in sections else "resiliency"


def _check_resiliency_options(args, kind: str = "resiliency") -> None:
    """The options of the run, study and design kinds have no meaning for the analysis kinds."""
    for flag, given in (("--point", args.point is not None), ("--logy", args.logy),
                        ("--ymax", args.ymax is not None), ("--network", args.network),
                        ("--x", args.x is not None), ("--y", args.y is not None),
                        ("--families", args.families is not None)):
        if given:
            raise ParameterError(f"{flag}: not an option of --kind {kind}")


def _check_design_options(args) -> tuple[str, str, list | None]:
    """(x column, y column, families or None) of --kind design, checked before any file is
    read; the options of the run and study kinds have no meaning for a design table."""
    from pdes.plot import DESIGN_X, DESIGN_Y, check_design_column
    for flag, given in (("--point", args.point is not None), ("--ymax", args.ymax is not None),
                        ("--network", args.network)):
        if given:
            raise ParameterError(f"{flag}: not an option of --kind design")
    x = check_design_column("--x", DESIGN_X if args.x is None else args.x)
    y = check_design_column("--y", DESIGN_Y if args.y is None else args.y)
    families = None
    if args.families is not None:
        families = list(dict.fromkeys(s.strip() for s in args.families.split(",") if s.strip()))
        if not families:
            raise ParameterError(f"--families: no family named in {args.families!r}")
    return x, y, families


def _check_not_design_options(args, kind: str) -> None:
    """--y belongs to --kind design and metric, --families to design."""
    for flag, given, kinds in (("--y", args.y is not None, "design and metric take"),
                               ("--families", args.families is not None, "design takes")):
        if given:
            raise ParameterError(f"{flag}: only --kind {kinds} {flag} (got --kind {kind})")


def _design(args, x: str, y: str, families, out: str) -> None:
    """Plot the design table ``args.file[0]`` (its columns ``x`` and ``y``) to ``out``."""
    from pdes.plot import design_data, design_figure, design_series
    path = args.file[0]
    series = design_series(design_data(path), x, y, families)
    save(design_figure(series, x, y, logy=args.logy,
                       title=f"{os.path.basename(path)}: {y} against {x}"), out)


def _metric(args, out, claim):
    """``--kind metric``: a metric column of an analysis study (``pdes sweep --analyze``)
    against a varied key, one line per combination of the other varied keys."""
    from pdes.analysis_study import metric_figure, metric_series, read
    for flag, given in (("--point", args.point is not None), ("--ymax", args.ymax is not None),
                        ("--network", args.network), ("--families", args.families is not None)):
        if given:
            raise ParameterError(f"{flag}: not an option of --kind metric")
    path = args.file[0]
    x, y, lines = metric_series(read(path), args.x, args.y)
    if out is None:
        out = output_path(args, "metric")
        claim = claim_output(args, out)
    fig = metric_figure(x, y, lines, title=f"{os.path.basename(path)}: {y} against {x}")
    if args.logy:
        fig.axes[0].set_yscale("log")
    save(fig, out)
    return out, claim


def main(args) -> int:
    from pdes.analysis_study import is_analysis_study
    from pdes.plot import (figure, is_analysis, is_design, path_sets_data, path_sets_figure,
                           resiliency_curve, resiliency_figure)
    from pdes.results import open_results
    if args.ymax is not None and not (args.ymax > 0 and args.ymax < float("inf")):
        raise ParameterError(f"--ymax: must be a positive number of cycles (got {args.ymax})")
    if args.kind == "cost-model":
        return _main_cost_model(args)
    if not args.file:
        raise ParameterError("file: give the file to plot (only --kind cost-model takes none)")
    given = _cost_model_given(args)
    if given:
        raise ParameterError(f"{given[0]}: only --kind cost-model takes {given[0]}")
    if args.kind is None and is_analysis(args.file[0]):
        args.kind = _analysis_kind(args.file[0])
    if args.kind in ANALYSIS_KINDS:
        _check_resiliency_options(args, args.kind)
    elif len(args.file) > 1 and args.kind is not None:
        raise ParameterError(f"file: only --kind resiliency and path-sets plot several files "
                             f"(got {len(args.file)} for --kind {args.kind})")
    elif args.kind == "design":
        _check_design_options(args)
    elif args.kind is not None and args.kind != "metric":
        _check_not_design_options(args, args.kind)
    claim = Claim()
    try:
        out = None
        if args.output or args.kind:       # the figure's name is known before reading FILE
            out = output_path(args, args.kind)
            claim = claim_output(args, out)
        if args.kind == "path-sets":
            results = []
            for path in args.file:
                for r in path_sets_data(path):
                    if len(args.file) > 1:
                        r["label"] = f"{os.path.basename(path)}: {r['label']}"
                    results.append(r)
            save(path_sets_figure(results), out)
            print(out)
            return 0
        if args.kind == "metric" or (args.kind is None and len(args.file) == 1
                                     and is_analysis_study(args.file[0])):
            out, claim = _metric(args, out, claim)
            print(out)
            return 0
        if args.kind == "design" or (args.kind is None and len(args.file) == 1
                                     and is_design(args.file[0])):
            x, y, families = _check_design_options(args)
            if out is None:
                out = output_path(args, "design")
                claim = claim_output(args, out)
            _design(args, x, y, families, out)
            print(out)
            return 0
        if args.kind == "resiliency" or (args.kind is None and is_analysis(args.file[0])):
            _check_resiliency_options(args)
            curves = [resiliency_curve(path) for path in args.file]
            if out is None:
                out = output_path(args, "resiliency")
                claim = claim_output(args, out)
            save(resiliency_figure(curves), out)
            print(out)
            return 0
        if len(args.file) > 1:
            raise ParameterError(f"file: only --kind resiliency and path-sets plot several "
                                 f"files (got {len(args.file)})")
        with open_results(args.file[0]) as res:
            kind = args.kind or ("series" if res.kind == "run" else
                                 "completion" if res.finite else "latency")
            _check_not_design_options(args, kind)
            if out is None:
                out = output_path(args, kind)
                claim = claim_output(args, out)
            fig = figure(res, kind, point=args.point, logy=args.logy, network=args.network,
                         ymax=args.ymax, x=args.x)
        save(fig, out)
    finally:
        claim.release()
    print(out)
    return 0


def _main_cost_model(args) -> int:
    """``pdes plot --kind cost-model``: no FILE, none of the other kinds' options; every
    option is checked (the figure drawn) before the output is claimed."""
    if args.file:
        raise ParameterError(f"file: --kind cost-model plots no file (got {args.file[0]})")
    for flag, given in (("--point", args.point is not None), ("--logy", args.logy),
                        ("--ymax", args.ymax is not None), ("--network", args.network),
                        ("--x", args.x is not None), ("--y", args.y is not None),
                        ("--families", args.families is not None)):
        if given:
            raise ParameterError(f"{flag}: not an option of --kind cost-model")
    out = output_path(args, "cost-model")
    _cost_model(args, None)                       # every option checked before the claim
    claim = claim_output(args, out)
    try:
        _cost_model(args, out)
    finally:
        claim.release()
    print(out)
    return 0


def output_path(args, kind: str) -> str:
    """The figure file: ``-o``, else ``<FILE stem>-<kind>.png`` (``cost-model.png`` without
    FILE); its extension is checked."""
    out = args.output or (f"{os.path.splitext(args.file[0])[0]}-{kind}.png" if args.file
                          else f"{kind}.png")
    if os.path.splitext(out)[1].lower() not in FORMATS:
        raise ParameterError(f"-o: the figure file must end in .png, .pdf or .svg (got {out})")
    return out


def claim_output(args, out: str):
    """Check the figure file as ``run -o`` checks its output (a regular file or a new one, a
    name that fits with its temporary twin, not FILE) and claim it
    (:class:`pdes.cli.outputs.Claim`).  An existing figure of the name's format (or an empty
    file) is replaced, any other file refused."""
    from pdes.cli.common import check_output
    from pdes.cli.outputs import check_not_input, check_replaceable, claim
    check_output(out, "-o")
    for path in args.file:
        check_not_input(out, "-o", {"plotted file": path})
    kind = FORMATS.get(os.path.splitext(out)[1].lower())
    if kind is not None:     # output_path checked the extension
        check_replaceable(out, "-o", kind)
    return claim(None, [(out, "-o")])


def save(fig, out: str) -> None:
    """Save ``fig`` to ``<out>.tmp-<pid>`` (the format named by ``out``'s extension), then
    rename it to ``out``; the figure is closed (pyplot keeps every open one)."""
    try:
        with replaced_when_whole(out) as tmp:
            fig.savefig(tmp, dpi=150, format=FORMATS[os.path.splitext(out)[1].lower()])
    finally:
        import matplotlib.pyplot as plt
        plt.close(fig)
