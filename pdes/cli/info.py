"""``python -m pdes info``: list the registered topologies, routings and traffic patterns;
``python -m pdes info --mpi``: the MPI library and where the ranks run.

For each entry: name, summary, reference (paper and section) and its
parameters (name, type, default, declared range, doc), i.e. the keys accepted
in the ``[topology]``, ``[routing]`` and ``[traffic]`` sections.
"""
from __future__ import annotations

import importlib
import json
import sys

HELP = "list registered topologies, routing algorithms and traffic patterns with their parameters"

# (title, module that registers the entries, registry attribute, config section)
KINDS = (
    ("topologies", "models.topologies", "TOPOLOGIES", "topology"),
    ("routing algorithms", "models.routing", "ROUTINGS", "routing"),
    ("traffic patterns", "models.traffic", "TRAFFIC", "traffic"),
)


def add_arguments(parser) -> None:
    parser.add_argument("name", nargs="?", metavar="NAME",
                        help="show only the entries with this name")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--mpi", action="store_true",
                        help="instead: the MPI library mpi4py loaded, how mpi4py was built, and "
                        "(under mpiexec) the ranks per host; no registry is listed")


def mpi_info(comm) -> dict:
    """The MPI library's version text, mpi4py's version and build configuration, the ranks
    and how many run on each host (collective over ``comm``)."""
    import mpi4py
    from mpi4py import MPI

    from pdes.cli.common import mpi_library
    hosts = {}
    for h in comm.allgather(MPI.Get_processor_name()):
        hosts[h] = hosts.get(h, 0) + 1
    return {"library": mpi_library(), "standard": "%d.%d" % MPI.Get_version(),
            "mpi4py": mpi4py.__version__,
            "mpi4py_config": {k: str(v) for k, v in mpi4py.get_config().items()},
            "ranks": comm.Get_size(), "hosts": hosts}


def main_mpi(args) -> int:
    from pdes.cli.common import world
    comm = world()
    data = mpi_info(comm)
    if comm.Get_rank() != 0:
        return 0
    if args.json:
        json.dump(data, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    lines = ["MPI library (MPI_Get_library_version):"]
    lines += ["  " + ln.rstrip() for ln in data["library"].splitlines() if ln.strip()]
    lines.append(f"MPI standard {data['standard']}; mpi4py {data['mpi4py']}, built with: "
                 + (", ".join(f"{k}={v}" for k, v in data["mpi4py_config"].items()) or "(not recorded)"))
    lines.append(f"{data['ranks']} rank{'s' if data['ranks'] > 1 else ''} on "
                 f"{len(data['hosts'])} host{'s' if len(data['hosts']) > 1 else ''}: "
                 + ", ".join(f"{h} ({n})" for h, n in data["hosts"].items()))
    print("\n".join(lines))
    return 0


def _type(kind) -> str:
    return kind if isinstance(kind, str) else kind.__name__


def _default(p) -> str:
    from models.core.registry import REQUIRED
    if p.default is REQUIRED:
        return "required"
    if p.default is None:
        return "derived"
    return json.dumps(p.default)


def _range(p) -> dict:
    """The declared range: ``range`` as text plus the bounds that are set (empty when none)."""
    text = p.range_text()
    if not text:
        return {}
    out = {"range": text}
    if p.lo is not None:
        out["lo"] = p.lo
        if p.lo_open:
            out["lo_open"] = True
    if p.hi is not None:
        out["hi"] = p.hi
    return out


def collect() -> dict:
    """``{section: [entry dict, ...]}`` for every registry whose module exists."""
    import models.core.registry as reg
    out = {}
    for _title, module, attr, section in KINDS:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
        entries = []
        for e in getattr(reg, attr):
            entries.append({
                "name": e.name, "summary": e.summary, "reference": e.reference,
                "params": [{"name": p.name, "type": _type(p.kind), "default": _default(p),
                            "doc": p.doc, **({"choices": list(p.choices)} if p.choices else {}),
                            **_range(p)}
                           for p in e.params],
            })
        out[section] = entries
    return out


def main(args) -> int:
    if args.mpi:
        if args.name:
            from models.core.errors import ParameterError
            raise ParameterError("info: --mpi takes no NAME")
        return main_mpi(args)
    data = collect()
    if args.name:
        data = {k: [e for e in v if e["name"] == args.name] for k, v in data.items()}
        if not any(data.values()):
            from models.core.errors import ParameterError
            raise ParameterError(f"info: nothing registered under the name '{args.name}'")
    if args.json:
        json.dump(data, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    lines = []
    for title, _module, _attr, section in KINDS:
        entries = data.get(section, [])
        if args.name and not entries:
            continue
        lines.append(f"{title} ([{section}]):")
        if not entries:
            lines.append("  (none registered)")
        for e in entries:
            lines.append(f"  {e['name']}: {e['summary']}")
            lines.append(f"      reference: {e['reference']}")
            if e["params"]:
                w = max(len(p["name"]) for p in e["params"])
                tw = max(len(p["type"]) for p in e["params"])
                dw = max(len(p["default"]) for p in e["params"])
                rw = max(len(p.get("range", "")) for p in e["params"])
                for p in e["params"]:
                    doc = p["doc"] + (f" [{'|'.join(map(str, p['choices']))}]" if "choices" in p else "")
                    rng = f"{p.get('range', ''):<{rw}}  " if rw else ""
                    lines.append(f"      {p['name']:<{w}}  {p['type']:<{tw}}  {p['default']:<{dw}}  "
                                 f"{rng}{doc}")
        lines.append("")
    print("\n".join(lines).rstrip())
    return 0
