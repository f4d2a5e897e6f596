"""``python -m pdes analyze``: compare networks on paper before simulating them.

    python -m pdes analyze slimfly --set topology.q=19 --only cost,power
    python -m pdes analyze dragonfly --set topology.h=4 --only bisection,resiliency --json
    python -m pdes analyze network.toml -o analysis.h5
    mpiexec -n 4 python -m pdes analyze slimfly --set topology.q=17 --only resiliency
    python -m pdes analyze slimfly --set topology.q=5 --only resiliency --curve -o sf.h5
    python -m pdes analyze skywalk --set topology.c=256 --set layout.preset=skywalk --only latency
    python -m pdes analyze slimfly --set topology.q=5 --only throughput --traffic worst_case
    python -m pdes analyze slimfly --set topology.q=5 --only path-sets --layers 4,8

The positional argument is a TOML config (its ``[topology]`` and ``[layout]``
sections are used) or a registered topology name.  Sections: paths, moore,
shortest-paths, latency, bisection, resiliency, cables, cost, power, load, and
throughput and path-sets when asked for (see ``models.analysis``); throughput also reads the
``[traffic]`` section (``--traffic`` sets its pattern).  Under ``mpiexec`` the
resiliency samples are split over the ranks (identical answer for any rank count);
rank 0 prints and writes the file.  The ``-o`` file follows the rules of every output (docs/output.md, "Output files"), checked
and claimed on every rank before the network is built; an existing file is replaced.
The all-pairs sections (shortest-paths, latency) say on standard error what they will
do when it is large, before they start.
"""
from __future__ import annotations

import json
import os
import sys

from models.core.errors import ParameterError
from pdes.cli.common import mpi_main, resolve_used
from pdes import analysis
from pdes import config as cfgmod
from pdes.analysis import _float, _floats, clean as _clean  # noqa: F401 - used by other CLIs
from pdes.cli.topo import _jsonable
from pdes.files import hdf5_written

HELP = ("structural analysis: distances, Moore bound, shortest paths, latency, bisection, "
        "resiliency, cables, cost, power, LP throughput, path sets of multipath routings")

FORMAT = "pdes-analysis"
FORMAT_VERSION = 1


def add_arguments(parser) -> None:
    parser.add_argument("target", nargs="?", metavar="CONFIG_OR_TOPOLOGY",
                        help="TOML config file or registered topology name "
                             "(see 'python -m pdes info')")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config key, e.g. topology.q=13 or layout.preset=skywalk "
                             "(repeatable)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--only", metavar="LIST",
                        help="comma-separated sections: paths, moore, shortest-paths, latency, "
                             "bisection, resiliency, cables, cost, power, load, throughput, "
                             "path-sets (default: all but throughput and path-sets; load only "
                             "up to 20,000 routers)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="also write the report to this HDF5 file")
    parser.add_argument("--seed", default="0", help="seed of the resiliency samples, the first "
                        "METIS seed, --sample and the routings' tables (default 0)")
    parser.add_argument("--sample", metavar="N",
                        help="paths, shortest-paths, latency and path-sets from N random source "
                             "routers (required above 20000 routers)")
    parser.add_argument("--threads", metavar="N", help="threads of the distance searches "
                        "(default: all CPUs; 1 per rank under mpiexec)")
    g = parser.add_argument_group("latency")
    g.add_argument("--switch-delay", metavar="NS[,NS...]",
                   help="delay of each switch a packet crosses, ns; several give one result "
                        "per delay (default 60: 002 Sec. III)")
    g.add_argument("--endpoint-delay", metavar="NS",
                   help="injection + reception delay added to every path, ns (default 300: "
                        "002 Sec. III-A, 150 ns at each end)")
    g.add_argument("--latency-bin", metavar="NS",
                   help="width of the latency histogram bins, ns (default 10)")
    g = parser.add_argument_group("throughput (linear programming)")
    g.add_argument("--traffic", metavar="PATTERN",
                   help="traffic pattern of the demand (sets traffic.pattern; default: the "
                        "config's, else uniform; 003 Fig. 9 uses an adversarial one: worst_case)")
    g.add_argument("--pair-fractions", metavar="F[,F...]",
                   help="fractions of the pattern's communicating endpoint pairs, drawn with "
                        "--seed (default 0.2,0.55,1)")
    g.add_argument("--restrict", metavar="LIST",
                   help="path sets of the restricted LPs: min, layered, rues, fatpaths, or "
                        "none (default: min,layered)")
    g.add_argument("--layers", metavar="N[,N...]",
                   help="layer counts of the layered, rues and fatpaths path sets, and of the "
                        "path-sets routings that take layers (default 4)")
    g.add_argument("--max-lp-variables", metavar="N",
                   help="refuse an LP with more variables, before building it (default "
                        "2000000)")
    g = parser.add_argument_group("path sets of multipath routings")
    g.add_argument("--routing", metavar="LIST",
                   help="path-sets: min (every shortest path) and routings with next-hop tables "
                        "(layered, rues, table_min, dfsssp, ...) (default: min,layered,rues)")
    g.add_argument("--preserve", metavar="F[,F...]",
                   help="path-sets: fractions of links kept per layer, one result each, for "
                        "the routings that take preserve (rues; default: the routing's 0.6; "
                        "003 Sec. 6 uses 0.4,0.6,0.8)")
    g = parser.add_argument_group("bisection")
    g.add_argument("--bisection-seeds", default="16", metavar="N",
                   help="METIS runs with consecutive seeds; the smallest cut wins (default 16)")
    g = parser.add_argument_group("resiliency")
    g.add_argument("--samples", metavar="N",
                   help="exact number of failure samples (default: until the 95%% confidence "
                        "interval of each mean threshold is at most --ci-width wide)")
    g.add_argument("--max-samples", default="400", metavar="N",
                   help="upper limit of the adaptive sample count (default 400)")
    g.add_argument("--ci-width", default="2", metavar="PCT",
                   help="target width of the 95%% confidence interval, in percentage points "
                        "of the links (default 2, as in 000 Sec. III-D)")
    g.add_argument("--criteria", default="disconnect,diameter,distance", metavar="LIST",
                   help="resiliency criteria: disconnect, diameter, distance (default: all)")
    g.add_argument("--step", default="0.05", metavar="F",
                   help="failure step as a fraction of the links (default 0.05)")
    g.add_argument("--level", default="0.5", metavar="F",
                   help="share of samples that must tolerate a step for the tabulated value "
                        "(default 0.5: the median)")
    g.add_argument("--curve", action="store_true",
                   help="also record the diameter and average distance at every step up to "
                        "disconnection (004 Fig. 5; one all-pairs search per step and sample)")
    g = parser.add_argument_group("cost and power")
    g.add_argument("--cables", default="fdr10", metavar="PRESET",
                   help="cable price preset (default fdr10: 000 Sec. VI-B1)")
    g.add_argument("--cable-coeffs", metavar="AE,BE,AO,BO",
                   help="custom cable prices a*x+b $/Gb/s: electric a,b then optical a,b")
    g.add_argument("--cable-gbps", metavar="G", help="bandwidth per cable in Gb/s (fdr10: 40)")
    g.add_argument("--router-coeffs", metavar="A,B",
                   help="custom router price a*k+b $ (fdr10: 350.4,-892.3)")
    g.add_argument("--router-radix", default="max", metavar="MODE",
                   help="radix routers are priced and powered at: max (default), used, or an "
                        "integer")
    g.add_argument("--electric-max-m", metavar="M",
                   help="cables up to M metres are electric (default: intra-rack electric, "
                        "inter-rack optical)")
    g.add_argument("--endpoint-cables", action="store_true",
                   help="also price one electric cable per endpoint")
    g.add_argument("--power", default="slimfly", metavar="MODEL",
                   help="power model: slimfly (000 Sec. VI-C, 2.8 W/port) or galaxyfly "
                        "(004 Sec. 6.2, + 10 W per NIC)")


# --------------------------------------------------------------------------- argument parsing
def options(args) -> dict:
    """Keyword arguments of :func:`models.analysis.analyze` from the parsed arguments."""
    return analysis.options({k: getattr(args, k) for k in analysis.OPTION_DEFAULTS})


def resolve_config(args, sections=("topology", "layout")) -> dict:
    """The resolved ``[topology]`` and ``[layout]`` config of the command line (or the
    given ``sections``; ``--traffic`` sets ``traffic.pattern``)."""
    target = args.target
    raw: dict = {}
    overrides = list(args.sets)
    if target is None:
        raise ParameterError("analyze: give a TOML config file or a topology NAME "
                             "(see 'python -m pdes info')")
    if target.endswith(".toml") or os.path.isfile(target):
        raw = cfgmod.load_toml(target)
    else:
        overrides.insert(0, f"topology.name={target}")
    if "traffic" in sections and getattr(args, "traffic", None) is not None:
        overrides.append(f"traffic.pattern={args.traffic}")
    return resolve_used(raw, overrides, sections)


# --------------------------------------------------------------------------- output
CURVE_UNITS = {"fraction": "share of links failed", "connected": "share of samples",
               "samples_connected": "samples",
               **{f"{q}_{k}": "router hops" for q in ("diameter", "avg_distance")
                  for k in ("mean", "std", "min", "max")}}
"""The ``units`` attribute of each ``/resiliency/curve/paths`` dataset (``--curve``)."""


def write_analysis(path: str, report: dict, cfg_toml: str, version: str,
                   options: dict | None = None) -> None:
    """Write ``report`` to an HDF5 file (temporary name, renamed when complete).

    Root attributes: ``format = "pdes-analysis"``, ``format_version``,
    ``pdes_version``, ``config_toml``, ``options`` (JSON), ``report_json``
    (the whole report as JSON) and ``complete``.  Every section is also a
    group: nested dicts are subgroups, lists of numbers datasets, scalars and
    strings attributes (``None`` is left out); the ``/resiliency/curve/paths`` datasets
    also carry a ``units`` attribute (:data:`CURVE_UNITS`).
    """
    import numpy as np

    def put(group, key, value):
        if value is None:
            return
        if isinstance(value, dict):
            sub = group.create_group(key)
            for k, v in value.items():
                put(sub, str(k), v)
        elif isinstance(value, (list, tuple)):
            if all(isinstance(v, (int, float, bool)) and v is not None for v in value):
                group.create_dataset(key, data=np.asarray(value))
            else:
                group.attrs[key] = json.dumps(value)
        else:
            group.attrs[key] = value

    rep = _clean(report)
    with hdf5_written(path) as f:
        f.attrs["format"] = FORMAT
        f.attrs["format_version"] = FORMAT_VERSION
        f.attrs["pdes_version"] = version
        f.attrs["config_toml"] = cfg_toml
        f.attrs["options"] = json.dumps(_clean(options or {}), sort_keys=True)
        f.attrs["report_json"] = json.dumps(rep)
        for key, value in rep.items():
            if key == "summary":
                value = dict(value)
                value["params"] = json.dumps(value.get("params", {}), sort_keys=True)
            put(f, key, value)
        curve = f.get("resiliency/curve/paths")
        if curve is not None:
            for key, unit in CURVE_UNITS.items():
                if key in curve:
                    curve[key].attrs["units"] = unit
        f.attrs["complete"] = True


def _fmt(v, nd=4) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.{nd}g}" if abs(v) < 1e4 else f"{v:,.0f}"
    return str(v)


def _pct(f) -> str:
    return "n/a" if f is None else f"{100 * f:.0f}%"


def _curve_row(pc: dict, points: int = 6) -> str:
    """``curve.paths`` in one line: at most ``points`` steps (the first, the last, evenly
    between), each ``failed%: avg distance/mean diameter (connected share)``."""
    n = len(pc["fraction"])
    idx = sorted({round(i * (n - 1) / (points - 1)) for i in range(points)}) if n > 1 else [0]
    return "  ".join(f"{_pct(pc['fraction'][i])}: {pc['avg_distance_mean'][i]:.2f}/"
                     f"{pc['diameter_mean'][i]:.1f}"
                     + ("" if pc["connected"][i] == 1 else f" ({_pct(pc['connected'][i])})")
                     for i in idx) + "  (failed: avg distance/diameter, connected samples only)"


def table(rep: dict) -> str:
    """A short human-readable report."""
    s = rep["summary"]
    params = ", ".join(f"{k}={v}" for k, v in s["params"].items() if v is not None)
    rows = [("topology", f"{s['topology']} ({params})"),
            ("routers / endpoints / links", f"{s['routers']} / {s['endpoints']} / {s['links']}"),
            ("router radix (max)", s["router_radix_max"])]
    if "paths" in rep:
        p = rep["paths"]
        r, e, mp = p["router"], p["endpoint"], p["min_paths"]
        rows += [
            ("diameter (routers / endpoints)", f"{_fmt(r['diameter'])} / {_fmt(e['diameter'])}"
             + (f"  (sampled {p['sampled']} sources)" if p["sampled"] else "")),
            ("avg distance (routers / endpoints)",
             f"{_fmt(r['avg_distance'])} / {_fmt(e['avg_distance'])}"),
            ("endpoint distance distribution",
             "  ".join(f"{d}:{100 * x:.1f}%" for d, x in enumerate(e["histogram"]))),
            ("minimal paths", f"mean {_fmt(mp['mean'])} (non-adjacent {_fmt(mp['mean_nonadjacent'])}),"
                              f" max {_fmt(mp['max'])}, >1 for {100 * mp['frac_multi']:.1f}% of pairs"),
        ]
    if "moore" in rep:
        m = rep["moore"]
        rows.append(("Moore bound", f"{m['bound']} for k'={m['k']}, D={m['diameter']} "
                                    f"(ratio {_fmt(m['ratio'])})" if m["applicable"]
                     else f"n/a ({m['reason']})"))
    if "shortest-paths" in rep:
        sp = rep["shortest-paths"]

        def part(x):
            return "n/a" if not x["pairs"] else \
                f"{100 * x['frac_multi']:.1f}% of {x['pairs']:,} (mean {_fmt(x['mean'])})"
        rows.append(("shortest paths > 1", part(sp["all"])
                     + (f"  (sampled {sp['sampled']} sources)" if sp["sampled"] else "")))
        for k in ("group", "cluster"):
            if f"intra_{k}" in sp:
                kind = sp["group_kind"] if k == "group" else "cluster"
                rows.append((f"  intra / inter {kind}",
                             f"{part(sp[f'intra_{k}'])} / {part(sp[f'inter_{k}'])}"))
    if "latency" in rep:
        la = rep["latency"]
        m = la["model"]
        rows.append(("latency model", f"{_fmt(m['endpoint_delay_ns'])} ns endpoints + switch "
                     f"delay per switch + links of {_fmt(m['link_ns_min'])}-"
                     f"{_fmt(m['link_ns_max'])} ns ({m['source']}"
                     + (f"; {m['latency_keys_links']} links from layout latency keys"
                        if m.get("latency_keys_links") else "") + ")"
                     + (f"  (sampled {la['sampled']} sources)" if la["sampled"] else "")))
        for sw, x in la["switch_delay"].items():
            n, f = x["nearest"], x["fastest"]
            rows.append((f"latency {sw} ns switches", f"nearest max {_fmt(n['max'])} mean "
                         f"{_fmt(n['mean'])} ns ({_fmt(n['hops_mean'])} hops); fastest max "
                         f"{_fmt(f['max'])} mean {_fmt(f['mean'])} ns ({_fmt(f['hops_mean'])} "
                         "hops)"))
    if "bisection" in rep:
        b = rep["bisection"]
        an = b["analytic"]
        rows.append(("bisection", f"{b['links_cut']} links cut, beta = C/"
                     f"({'N' if b['endpoints'] else 'R'}/2) = {b['beta']:.3f}"
                     + (f"  (analytic {an['links']}: {an['formula']})" if an else "")))
    if "resiliency" in rep:
        r = rep["resiliency"]
        for c, label in (("disconnect", "connected"), ("diameter", "diameter <= D0+2"),
                         ("distance", "avg distance <= A0+1")):
            if c in r:
                x = r[c]
                ci = x["ci95_width"]
                rows.append((f"resiliency: {label}", f"up to {_pct(x['fraction'])} of links fail "
                             f"(mean threshold {x['mean']:.1f}%"
                             + (f" +- {ci / 2:.1f} at 95%)" if ci is not None else ")")))
        rows.append(("resiliency samples", f"{r['samples']} (seed {r['seed']})"))
        if "paths" in r["curve"]:
            rows.append(("resiliency curve", _curve_row(r["curve"]["paths"])))
    for name, why in rep.get("omitted", {}).items():
        rows.append((name, f"not computed: {why}"))
    if "cables" in rep:
        c = rep["cables"]["cables"]
        rows += [("cables intra-rack (electric)", f"{c['intra_rack']['count']} / "
                                                  f"{_fmt(c['intra_rack']['m'])} m"),
                 ("cables inter-rack (optical)", f"{c['inter_rack']['count']} / "
                                                 f"{_fmt(c['inter_rack']['m'])} m")]
    if "cost" in rep:
        c = rep["cost"]
        rows.append(("cost", f"${c['total']:,.0f} total, ${_fmt(c['per_endpoint'])} per endpoint "
                             f"(routers ${c['routers']['dollars']:,.0f} at radix "
                             f"{c['routers']['radix_max']}, cables ${c['cables']['dollars']:,.0f})"))
    if "power" in rep:
        w = rep["power"]
        rows.append(("power", f"{w['total']:,.0f} W total, {_fmt(w['per_endpoint'])} W per endpoint "
                              f"({w['model']} model)"))
    if "throughput" in rep:
        tp = rep["throughput"]
        rows.append(("throughput (LP) pattern", f"{tp['pattern']} ({tp['endpoint_pairs']:,} "
                     f"endpoint pairs, seed {tp['seed']})"))
        for row in tp["fractions"]:
            parts = [f"{k} {_fmt(v['throughput'])}" for k, v in row.items()
                     if isinstance(v, dict)]
            rows.append((f"  {100 * row['fraction']:.0f}% of pairs", ", ".join(parts)))
    if "path-sets" in rep:
        ps = rep["path-sets"]
        rows.append(("path sets", f"{ps['sources']} source routers x {ps['routers']} routers "
                     f"with endpoints (seed {ps['seed']})"
                     + (f"  (sampled {ps['sampled']} sources)" if ps["sampled"] else "")))
        for label, x in ps["results"].items():
            ln, dj, lk = x["length"], x["disjoint"], x["links"]
            if not x["pairs"] or ln["mean"] is None:
                rows.append((f"  {label}", "no pair has a path"))
                continue
            rows.append((f"  {label}", f"paths/pair {x['paths']['mean']:.2f}, length avg "
                         f"{ln['avg_mean']:.2f} max {ln['max_mean']:.2f} (longest {ln['max']}), "
                         f">=3 disjoint {100 * dj['share_ge_3']:.1f}% (mean {dj['mean']:.2f}), "
                         f"paths per link {lk['mean']:.1f} sd {lk['std']:.1f} [{lk['min']}, "
                         f"{lk['max']}]"
                         + (f", {x['pairs_without_path']} pairs without a path"
                            if x["pairs_without_path"] else "")))
    if "load" in rep:
        for split, what in (("hop", "per-hop split"), ("path", "per-path split")):
            x = rep["load"][split]
            rows.append((f"uniform min load ({what})",
                         f"max {x['max']:.4f}, mean {x['mean']:.4f} flits/cycle per unit load: "
                         f"saturation <= {_fmt(x['saturation_bound'])}"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


# --------------------------------------------------------------------------- main
def main(args) -> int:
    # the project's error and signal rules (one line, status 2; a failure or signal on one
    # rank ends the job): the ranks of a resiliency analysis wait for each other
    return mpi_main(_mpi_main, args)


def _mpi_main(args, comm) -> int:
    world = comm if comm.Get_size() > 1 else None
    opts = options(args)
    # the ranks share the resiliency samples; without them every rank computes alike
    shared = world if opts["only"] is None or "resiliency" in opts["only"] else None
    return _main(args, opts, shared, world)


def claim_output(args, cfg: dict, world):
    """Check ``-o`` as ``run -o`` checks its output (a regular file or a new one, a name that
    fits with its temporary twin, none of the inputs: the config file and the files it names)
    and claim it on rank 0 of ``world`` (:class:`pdes.cli.outputs.Claim`).  An existing HDF5
    file written by pdes (or an empty file) is replaced, any other file refused."""
    from pdes.cli.common import check_output
    from pdes.cli.outputs import Claim, check_not_input, check_replaceable, claim
    from pdes.provenance import input_files
    out = args.output
    if out is None:
        return Claim()
    check_output(out, "-o")
    config = {"config": args.target} if args.target and os.path.isfile(args.target) else {}
    check_not_input(out, "-o", {**config, **input_files(cfg)})
    check_replaceable(out, "-o", "hdf5")
    return claim(world, [(out, "-o")])


def _main(args, opts, comm, world) -> int:
    cfg = resolve_config(args)
    claim = claim_output(args, cfg, world)      # before any work
    try:
        return _analyze(args, opts, comm, world, cfg)
    finally:
        claim.release()


NOTICE_STEPS = 200_000_000
"""Above this many source-link steps a section says, on standard error, what it will do."""


def _notice_work(topo, kw) -> None:
    """One line on standard error per all-pairs section above :data:`NOTICE_STEPS` steps,
    before it starts: its sources, its searches and the sampling (``--sample``)."""
    from models.analysis import ANALYSES
    from models.analysis.latency import latency_work
    from models.analysis.shortest_paths import shortest_paths_work
    names = kw["only"] or ANALYSES
    sample = kw["sample"]
    works = []
    if "shortest-paths" in names:
        works.append(("shortest-paths", shortest_paths_work(topo, sample), "BFS path counts"))
    if "latency" in names:
        n = len(kw["latency_opts"]["switch_delays"])
        works.append(("latency", latency_work(topo, sample, n),
                      f"BFS + Dijkstra searches ({n} switch delay{'s' * (n > 1)})"))
    if "resiliency" in names and kw["resiliency_opts"].get("curve"):
        works.append(("resiliency", _curve_work(topo, kw), "BFS"))
    if "path-sets" in names:
        from models.analysis.path_sets import NOTICE_PAIRS, path_sets_work
        p = kw["path_sets_opts"]
        w = path_sets_work(topo, sample, len(p["sets"]) if p.get("sets") is not None else 1)
        if w["pairs"] * w["sets"] > NOTICE_PAIRS:
            how = (f"{w['sources']} random sources (--sample {sample}, --seed {kw['seed']})"
                   if w["sources"] < w["routers"] else
                   f"all {w['sources']} sources (exact; --sample N takes N random sources)")
            print(f"pdes: note: path-sets: {how} to {w['routers']} routers with endpoints: "
                  f"{w['pairs']:,} router pairs x {w['sets']} path sets", file=sys.stderr,
                  flush=True)
    for name, w, what in works:
        if name == "resiliency":
            if w["source_link_steps"] > NOTICE_STEPS:
                print(f"pdes: note: resiliency: --curve: all {w['sources']} sources at up to "
                      f"{w['steps']} steps of {w['samples']} samples"
                      f"{'' if kw['samples'] is not None else ' (at most, --max-samples)'}: "
                      f"{w['searches']:,} {what} over up to {topo.n_links:,} links = "
                      f"{w['source_link_steps']:.2g} source-link steps", file=sys.stderr, flush=True)
            continue
        if w["source_link_steps"] <= NOTICE_STEPS:
            continue
        how = (f"{w['sources']} random sources (--sample {sample}, --seed {kw['seed']})"
               if sample is not None and sample < w["routers"] else
               f"all {w['sources']} sources (exact; --sample N takes N random sources)")
        print(f"pdes: note: {name}: {how} to {w['routers']} routers: {w['searches']:,} {what} "
              f"over {topo.n_links:,} links = {w['source_link_steps']:.2g} source-link steps",
              file=sys.stderr, flush=True)


def _curve_work(topo, kw) -> dict:
    """Upper bound of the searches of ``resiliency --curve``: one BFS per terminal router at
    every step of every sample (fewer when samples disconnect early)."""
    import numpy as np
    r = kw["resiliency_opts"]
    T = int(np.count_nonzero(np.asarray(topo.endpoints) > 0)) or topo.n_routers
    samples = kw["samples"] if kw["samples"] is not None else r["max_samples"]
    steps = round(1 / r["step"])
    searches = samples * steps * T
    return {"sources": T, "steps": steps, "samples": samples, "searches": searches,
            "source_link_steps": searches * int(topo.n_links)}


def _analyze(args, opts, comm, world, cfg) -> int:
    from pdes import __version__
    full = dict(cfg)
    if opts["only"] is not None and "throughput" in opts["only"]:
        full["traffic"] = resolve_config(args, sections=("traffic",))["traffic"]
    rank = world.Get_rank() if world is not None else 0
    rep = analysis.report(full, opts, comm=comm, rank=rank, notice=_notice_work)
    if rank != 0:       # rank 0 prints and writes the file
        return 0
    if args.output:
        write_analysis(args.output, rep, cfgmod.to_toml(cfg), __version__, options=opts)
    if args.json:
        json.dump(rep, sys.stdout, default=_jsonable)
        sys.stdout.write("\n")
    else:
        print(table(rep))
        if args.output:
            print(f"{'report':<8}  {args.output}")
    return 0
