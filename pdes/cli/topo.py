"""``python -m pdes topo``: build a topology, lay it out, report its structure.

    python -m pdes topo slimfly --set topology.q=13 --set topology.p=9 --json
    python -m pdes topo bdf --set topology.u=19 --export edgelist bdf19.txt
    python -m pdes topo --config examples/run.toml

Parameters use the same ``--set section.key=value`` spelling as ``pdes run``;
only the ``[topology]``, ``[layout]`` and ``[router]`` sections are read.
``--export anynet|edgelist`` writes each link's latency as a run would use it
(``router.link_latency`` if > 0, else the latencies a file topology carries,
else the layout's) and, for edge lists, its cable length.
"""
from __future__ import annotations

import json
import sys
import time

from models.core.errors import ParameterError
from pdes import config as cfgmod
from pdes.cli.common import resolve_used

HELP = "build a topology and print its structure (size, diameter, distances, cables)"


def add_arguments(parser) -> None:
    parser.add_argument("name", nargs="?", metavar="NAME",
                        help="registered topology name (see 'python -m pdes info'); "
                             "optional with --config")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config key, e.g. topology.q=13 or layout.preset=skywalk "
                             "(repeatable)")
    parser.add_argument("--config", metavar="FILE", help="TOML config; its [topology] and "
                        "[layout] sections are used")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--export", nargs=2, metavar=("FORMAT", "PATH"),
                        help="also write the router graph: FORMAT is edgelist, anynet or graphml")
    parser.add_argument("--force", action="store_true",
                        help="with --export: replace an existing file (and its .groups side file)")
    parser.add_argument("--sample", type=int, metavar="N",
                        help="distance metrics from N random source routers "
                             "(required above 20000 routers)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the --sample draw (default 0)")


def _jsonable(obj):
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    return str(obj)


def report(args) -> dict:
    """The structure report for the parsed arguments (no printing)."""
    from models.metrics import check_exact
    from models.topologies.file import FORMATS
    from pdes.sizing import check_network

    raw = cfgmod.load_toml(args.config) if args.config else {}
    overrides = list(args.sets)
    if args.name:
        given = raw.get("topology")
        if isinstance(given, dict) and given.get("name", args.name) != args.name:
            raw = dict(raw)
            raw.pop("topology")  # another topology's parameters would not apply
        for item in args.sets:
            key, _, value = item.partition("=")
            if key.strip() == "topology.name" and value.strip() != args.name:
                raise ParameterError(f"topology.name: NAME is {args.name!r} but --set gives "
                                     f"{value.strip()!r}; give one of them")
        overrides.insert(0, f"topology.name={args.name}")
    elif not args.config:
        raise ParameterError("topo: give a topology NAME or a --config file with a [topology] "
                             "section (see 'python -m pdes info')")
    if args.export and args.export[0] not in FORMATS:
        raise ParameterError(f"--export: unknown format {args.export[0]!r} "
                             f"(known: {', '.join(FORMATS)})")
    if args.sample is not None and not 1 <= args.sample <= 2 ** 63 - 1:
        raise ParameterError(f"--sample: must be an integer in [1, 2**63-1], got {args.sample}")
    if not 0 <= args.seed <= 2 ** 63 - 1:
        raise ParameterError(f"--seed: must be an integer in [0, 2**63-1], got {args.seed}")
    cfg = resolve_used(raw, overrides, ("topology", "layout", "router"))
    name, params = cfgmod.topology_params(cfg)
    size = check_network(cfg, distances=False)      # from the parameters, before building
    if size is not None:
        check_exact(size.routers, args.sample)
    claim = export_claim(args, cfg)
    try:
        return _report(args, cfg, name, params)
    finally:
        claim.release()


def export_paths(args) -> list[str]:
    """The files ``--export FORMAT PATH`` writes: PATH, and PATH.groups for anynet."""
    from models.topologies.file import GROUPS_SUFFIX
    if not args.export:
        return []
    fmt, path = args.export
    return [path] + ([path + GROUPS_SUFFIX] if fmt == "anynet" else [])


def export_claim(args, cfg):
    """Check the export paths as ``run -o`` checks its output (a regular file or a new one, a
    name that fits, none of the inputs, an existing file only with ``--force``) and claim
    them (:class:`pdes.cli.outputs.Claim`)."""
    from pdes.cli.common import check_output
    from pdes.cli.outputs import Claim, check_not_input, claim
    from pdes.provenance import input_files
    paths = export_paths(args)
    if not paths:
        return Claim()
    inputs = {**({"config": args.config} if args.config else {}), **input_files(cfg)}
    for p in paths:
        check_output(p, "--export")
        check_not_input(p, "--export", inputs)

    def refuse_existing():
        for p in paths:
            check_output(p, "--export", replace=args.force)
    return claim(None, [(p, "--export") for p in paths], then=refuse_existing)


def _report(args, cfg, name, params) -> dict:
    from models.layout import build_layout
    from models.metrics import structure_report
    from models.topologies.file import file_link_latency, link_latency_of
    from models.topology import build

    t0 = time.perf_counter()
    topo = build(name, params)
    t1 = time.perf_counter()
    layout = build_layout(topo, **cfg["layout"])
    t2 = time.perf_counter()
    out = structure_report(topo, layout, sample=args.sample, seed=args.seed)
    t3 = time.perf_counter()
    lat, cable = link_latency_of(topo, layout, cfg["router"]["link_latency"])
    source = "router.link_latency" if cfg["router"]["link_latency"] > 0 else \
        "file" if file_link_latency(topo) is not None else "layout"
    if source == "file" and layout.latency_set.any():
        source = "file and layout latency keys"
    out["link_latency_source"] = source
    if source != "layout" and "layout" in out and lat.size:
        out["layout"]["latency_cycles"] = {"min": int(lat.min()), "max": int(lat.max()),
                                           "mean": float(lat.mean())}
    if args.export:
        out["exported"] = export(topo, args.export[0], args.export[1], lat, cable)
    out["seconds"] = {"build": round(t1 - t0, 4), "layout": round(t2 - t1, 4),
                      "metrics": round(t3 - t2, 4)}
    return out


def export(topo, fmt: str, path: str, lat, cable) -> list[str]:
    """Write the export to temporary names and rename them to ``path`` (and its side file):
    a name never holds a partial file, and a link put there meanwhile is replaced, not
    followed."""
    import os

    from models.topologies.file import GROUPS_SUFFIX, export_topology
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        written = export_topology(topo, fmt, tmp, latency=lat, cable_m=cable)
        final = [path + w[len(tmp):] for w in written]
        for w, f in zip(written, final):
            os.replace(w, f)
        return final
    finally:
        for w in (tmp, tmp + GROUPS_SUFFIX):
            if os.path.exists(w):
                os.remove(w)


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:,.1f}"
    return str(value)


def _span(mm: dict) -> str:
    return str(mm["min"]) if mm["min"] == mm["max"] else f"{mm['min']}..{mm['max']}"


def _table(rep: dict) -> str:
    mp = rep["min_paths"]
    cab = rep.get("cables", {})
    params = ", ".join(f"{k}={v}" for k, v in rep["params"].items() if v is not None)
    rows = [
        ("topology", f"{rep['topology']} ({params})"),
        ("routers", rep["routers"]),
        ("endpoints", rep["endpoints"]),
        ("links", rep["links"]),
        ("network radix", f"{rep['network_radix_min']}..{rep['network_radix_max']}"
         if rep["network_radix_min"] != rep["network_radix_max"] else rep["network_radix_max"]),
        ("router radix (max)", rep["router_radix_max"]),
        ("groups", f"{rep['groups']} ({rep['group_kind']})"),
        ("degree histogram", ", ".join(f"{k}:{v}" for k, v in rep["degree_histogram"].items())),
        ("diameter", rep["diameter"] if rep["connected"] else "disconnected"),
        ("avg distance", _fmt(rep["avg_distance"])),
        ("endpoint avg distance", _fmt(rep["endpoint_avg_distance"])),
        ("minimal paths", f"min {_fmt(mp['min'])}, mean {_fmt(mp['mean'])}, max {_fmt(mp['max'])}, "
                          f">1 for {100 * mp['frac_multi']:.1f}% of pairs"),
        ("Moore bound", f"{rep['moore_bound']} (ratio {_fmt(rep['moore_ratio'])})"
         if rep["moore_bound"] is not None else "n/a"),
    ]
    if rep.get("sampled"):
        rows.append(("sampled sources", rep["sampled"]))
    if cab:
        lay = rep["layout"]
        rows += [
            ("layout", f"{lay['preset']}: {lay['racks']} "
                       + ("racks" if lay["racks_from"] == "groups" else "cabinets")
                       + f" in {lay['rows']} rows of {lay['racks_per_row']}"),
            ("cable total", f"{_fmt(rep['cable_m_total'])} m in {cab['count']} cables "
                            f"(max {_fmt(cab['m_max'])} m)"),
            ("  intra-rack (electric)", f"{cab['intra_rack']['count']} / {_fmt(cab['intra_rack']['m'])} m"),
            ("  inter-rack (optical)", f"{cab['inter_rack']['count']} / {_fmt(cab['inter_rack']['m'])} m"),
        ]
        rows += [(f"  class {k}", f"{v['count']} / {_fmt(v['m'])} m") for k, v in cab["by_class"].items()]
        if lay["racks_from"] == "cabinets":
            rr, re_ = lay["rack_routers"], lay["rack_endpoints"]
            rows.append(("per cabinet", f"{_span(rr)} routers, {_span(re_)} endpoints"))
        keys = [f"{k} {lay[k]}" for k in ("electric_cycles", "optical_cycles") if lay[k]]
        if lay["class_cycles"]:
            keys.append("class_cycles " + ",".join(f"{c}:{v}" for c, v in lay["class_cycles"].items()))
        if keys:
            rows.append(("latency keys", f"{', '.join(keys)} cycles "
                                         f"({lay['latency_set_links']} links)"))
        lat = lay["latency_cycles"]
        src = rep.get("link_latency_source", "layout")
        rows.append(("link latency (cycles)", f"{lat['min']}..{lat['max']} (mean {_fmt(lat['mean'])})"
                     + ("" if src == "layout" else f", from {src}")))
    if rep.get("exported"):
        rows.append(("exported", ", ".join(rep["exported"])))
    sec = rep["seconds"]
    rows.append(("seconds", f"build {sec['build']:.3f}, layout {sec['layout']:.3f}, "
                            f"metrics {sec['metrics']:.3f}"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def main(args) -> int:
    rep = report(args)
    if args.json:
        json.dump(rep, sys.stdout, default=_jsonable)
        sys.stdout.write("\n")
    else:
        print(_table(rep))
    return 0
