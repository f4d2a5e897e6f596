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
import math
import os
import sys

from models.core.errors import ParameterError
from pdes.cli.common import world_if_parallel
from pdes import config as cfgmod
from pdes.cli.topo import _jsonable
from pdes.files import replaced_when_whole

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
def _int(name: str, text, lo: int, allow_none: bool = False):
    if text is None and allow_none:
        return None
    try:
        value = int(str(text).strip(), 10)
    except ValueError:
        raise ParameterError(f"{name}: expected an integer, got {text!r}") from None
    if value < lo:
        raise ParameterError(f"{name}: must be an integer >= {lo}, got {text!r}")
    return value


def _float(name: str, text, allow_none: bool = False):
    if text is None and allow_none:
        return None
    try:
        value = float(str(text).strip())
    except ValueError:
        raise ParameterError(f"{name}: expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise ParameterError(f"{name}: expected a finite number, got {text!r}")
    return value


def _floats(name: str, text, n: int):
    if text is None:
        return None
    parts = [s for s in str(text).replace(" ", ",").split(",") if s]
    if len(parts) != n:
        raise ParameterError(f"{name}: expected {n} comma-separated numbers, got {text!r}")
    return tuple(_float(name, s) for s in parts)


def options(args) -> dict:
    """Keyword arguments of :func:`models.analysis.analyze` from the parsed arguments."""
    from models.analysis import latency_options, parse_only
    from models.analysis.path_sets import parse_preserve, parse_routings
    from models.analysis.throughput import (MAX_LP_VARIABLES, parse_fractions, parse_layers,
                                            parse_restrict)
    radix = str(args.router_radix).strip()
    if radix not in ("max", "used"):
        radix = _int("--router-radix", radix, 1)
    only = parse_only(args.only) if args.only is not None else None
    crit = [c.strip() for c in str(args.criteria).split(",") if c.strip()]
    cost_opts = {"cables": args.cables, "radix": radix,
                 "cable_coeffs": _floats("--cable-coeffs", args.cable_coeffs, 4),
                 "cable_gbps": _float("--cable-gbps", args.cable_gbps, allow_none=True),
                 "router_coeffs": _floats("--router-coeffs", args.router_coeffs, 2),
                 "electric_max_m": _float("--electric-max-m", args.electric_max_m, allow_none=True),
                 "endpoint_cables": bool(args.endpoint_cables)}
    return {
        "only": only,
        "seed": _int("--seed", args.seed, 0),
        "samples": _int("--samples", args.samples, 1, allow_none=True),
        "sample": _int("--sample", args.sample, 1, allow_none=True),
        "threads": _int("--threads", args.threads, 1, allow_none=True),
        "bisection_seeds": _int("--bisection-seeds", args.bisection_seeds, 1),
        "resiliency_opts": {"max_samples": _int("--max-samples", args.max_samples, 1),
                            "ci_width": _float("--ci-width", args.ci_width),
                            "criteria": crit,
                            "step": _float("--step", args.step),
                            "level": _float("--level", args.level),
                            "curve": bool(args.curve)},
        "cost_opts": cost_opts,
        "power_model": args.power,
        "latency_opts": latency_options(args.switch_delay, args.endpoint_delay, args.latency_bin),
        "throughput_opts": {
            "fractions": parse_fractions(args.pair_fractions),
            "restrict": parse_restrict(args.restrict),
            "layers": parse_layers(args.layers),
            "max_variables": (MAX_LP_VARIABLES if args.max_lp_variables is None else
                              _int("--max-lp-variables", args.max_lp_variables, 1))},
        "path_sets_opts": {"routings": parse_routings(args.routing),
                           "layers": parse_layers(args.layers),
                           "preserve": parse_preserve(args.preserve)},
    }


def _check_options(topo, opts, layout) -> None:
    """Validate the cost/power/resiliency/latency options before any (collective) work
    starts."""
    from models.analysis import ANALYSES
    from models.analysis.cost import CABLE_PRESETS, POWER_MODELS, router_radix
    from models.analysis.latency import check_latency
    from models.analysis.resiliency import CRITERIA
    c = opts["cost_opts"]
    if c["cables"] not in CABLE_PRESETS:
        raise ParameterError(f"--cables: unknown preset {c['cables']!r} "
                             f"(known: {', '.join(CABLE_PRESETS)})")
    if opts["power_model"] not in POWER_MODELS:
        raise ParameterError(f"--power: unknown model {opts['power_model']!r} "
                             f"(known: {', '.join(POWER_MODELS)})")
    for crit in opts["resiliency_opts"]["criteria"]:
        if crit not in CRITERIA:
            raise ParameterError(f"--criteria: unknown criterion {crit!r} "
                                 f"(known: {', '.join(CRITERIA)})")
    r = opts["resiliency_opts"]
    if not 0 < r["step"] < 1 or abs(round(1 / r["step"]) * r["step"] - 1) > 1e-9:
        raise ParameterError(f"--step: must be in (0, 1) with 1/step an integer, got {r['step']}")
    if not 0 < r["level"] <= 1:
        raise ParameterError(f"--level: must be in (0, 1], got {r['level']}")
    if r["ci_width"] <= 0:
        raise ParameterError(f"--ci-width: must be > 0, got {r['ci_width']}")
    if c["radix"] not in ("max", "used"):
        try:
            router_radix(topo, c["radix"])
        except ParameterError as exc:
            raise ParameterError(str(exc).replace("cost.router_radix", "--router-radix")) from None
    if c["cable_gbps"] is not None and c["cable_gbps"] <= 0:
        raise ParameterError(f"--cable-gbps: must be > 0, got {c['cable_gbps']}")
    if c["electric_max_m"] is not None and c["electric_max_m"] < 0:
        raise ParameterError(f"--electric-max-m: must be >= 0, got {c['electric_max_m']}")
    if "latency" in (opts["only"] or ANALYSES):
        check_latency(topo, layout, **opts["latency_opts"])     # the histogram's bins


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
    return cfgmod.resolve(raw, overrides, sections=sections)


# --------------------------------------------------------------------------- output
def _clean(obj):
    """The report with numpy scalars turned into Python numbers and non-finite floats into None."""
    import numpy as np
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _clean(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


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
    import h5py
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
    with replaced_when_whole(path) as tmp:
        with h5py.File(tmp, "w") as f:
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
        rows.append(("bisection", f"{b['links_cut']} links cut, beta = C/(N/2) = {b['beta']:.3f}"
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
    world = world_if_parallel()
    rank = world.Get_rank() if world is not None else 0
    try:
        opts = options(args)
        # the ranks share the resiliency samples; without them every rank computes alike
        comm = world if opts["only"] is None or "resiliency" in opts["only"] else None
        return _main(args, opts, comm, world)
    except ParameterError as exc:
        if world is None:
            raise
        if rank == 0:  # found identically on every rank before any collective work
            print(f"pdes: error: {exc}", file=sys.stderr, flush=True)
        return 2
    except Exception as exc:  # noqa: BLE001 - one failing rank must end the whole job
        if world is None:
            raise
        print(f"pdes: error (rank {rank}): {type(exc).__name__}: {exc}", file=sys.stderr,
              flush=True)
        world.Abort(3)
        return 3


def claim_output(args, cfg: dict, world):
    """Check ``-o`` as ``run -o`` checks its output (a regular file or a new one, a name that
    fits with its temporary twin, none of the inputs: the config file and the files it names)
    and claim it on rank 0 of ``world`` (:class:`pdes.cli.outputs.Claim`).  An existing file
    is replaced."""
    from pdes.cli.common import check_output
    from pdes.cli.outputs import Claim, check_not_input, claim
    from pdes.provenance import input_files
    out = args.output
    if out is None:
        return Claim()
    check_output(out, "-o")
    config = {"config": args.target} if args.target and os.path.isfile(args.target) else {}
    check_not_input(out, "-o", {**config, **input_files(cfg)})
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


def _traffic_plan(topo, tcfg: dict, opts: dict):
    """The traffic plan of the throughput section: the ``[traffic]`` pattern and its
    parameters, seeded with ``--seed`` (the load and injection keys do not apply); checked
    on every rank before any (collective) work."""
    from models.analysis.throughput import check_plan, check_variables
    from models.core.registry import TRAFFIC
    from pdes.config import INJECTION_KEYS
    check_variables(topo.n_routers, topo.n_links, opts["throughput_opts"]["max_variables"])
    t = dict(tcfg)
    pattern = t.pop("pattern")
    t.pop("load", None)
    for key in INJECTION_KEYS:
        t.pop(key, None)
    plan = TRAFFIC.get(pattern).func(topo, opts["seed"], **t)
    check_plan(plan)
    return plan


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
    from models.analysis import analyze
    from models.layout import build_layout
    from models.metrics import check_exact
    from models.topology import build
    from pdes import __version__
    from pdes.sizing import check_network

    name, params = cfgmod.topology_params(cfg)
    size = check_network(cfg, distances=False)      # from the parameters, before building
    if size is not None and (opts["only"] is None or {"paths", "moore", "shortest-paths",
                                                      "latency", "path-sets"} & set(opts["only"])):
        check_exact(size.routers, opts["sample"])
    lp = opts["only"] is not None and "throughput" in opts["only"]
    if lp:
        from models.analysis.throughput import check_variables
        tcfg = resolve_config(args, sections=("traffic",))["traffic"]
        if size is not None and size.exact:
            check_variables(size.routers, size.links, opts["throughput_opts"]["max_variables"])
    topo = build(name, params)
    layout = build_layout(topo, **cfg["layout"])
    _check_options(topo, opts, layout)
    plan = _traffic_plan(topo, tcfg, opts) if lp else None
    rank = world.Get_rank() if world is not None else 0
    kw = dict(opts)
    if lp:
        kw["throughput_opts"] = dict(opts["throughput_opts"], plan=plan)
    if comm is not None and kw["threads"] is None:
        kw["threads"] = 1
    if opts["only"] is not None and "path-sets" in opts["only"]:
        # every rank builds the routings' tables: a routing without a path set is refused
        # on every rank before any (collective) work
        from models.analysis.path_sets import build_sets
        from models.metrics import distance_matrix
        p = opts["path_sets_opts"]
        dist = distance_matrix(topo, threads=kw["threads"])
        kw["path_sets_opts"] = dict(p, dist=dist, sets=build_sets(
            topo, dist, p["routings"], p["layers"], p["preserve"], opts["seed"]))
    if comm is not None and rank != 0:
        # the other ranks only help with the resiliency samples
        kw["only"] = ("resiliency",)
    if rank == 0:
        _notice_work(topo, kw)
    err = None
    try:
        rep = analyze(topo, layout, comm=comm, **kw)
    except ParameterError as exc:
        if comm is None:
            raise
        err = str(exc)
    if comm is not None:
        # rank 0 alone computes the sections after the shared samples: a refusal found
        # there (a restricted LP above its limit) is every rank's refusal
        err = comm.bcast(err, root=0)
        if err is not None:
            raise ParameterError(err)
    if rank != 0:       # rank 0 prints and writes the file
        return 0
    rep = _clean(rep)
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
