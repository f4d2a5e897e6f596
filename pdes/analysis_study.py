"""Studies of structural analyses: ``pdes sweep CONFIG --analyze SECTIONS --vary KEY=V1,V2``.

Each series is one combination of the varied keys; it is not simulated: its report is
:func:`pdes.analysis.report` of the series' config, and every numeric scalar of the report
is one column of the study's table, named by its path (``latency.nearest.max_ns``).  The
varied keys are config keys (``topology.*``, ``layout.*``, ``routing.*``, ``traffic.*``) and
analysis options (``analysis.switch_delay``; the options of ``pdes analyze`` with
underscores), which are also given as an ``[analysis]`` table or ``--set analysis.KEY=V``.
A topology is built once for consecutive series that differ only in analysis options or
keys that do not change the network.  The file (docs/output.md, "Analysis study files") is
rewritten whole after each series under a temporary name, so a stopped study resumes
(``--resume``) with the series it has.
"""
from __future__ import annotations

import copy
import itertools
import json
import math
from dataclasses import dataclass, field

import numpy as np

from models.core.errors import ParameterError
from pdes import analysis as A
from pdes import config as C

FORMAT = "pdes-analysis-study"
FORMAT_VERSION = 1
NETWORK_SECTIONS = ("topology", "layout")
"""The config sections a series' network is built from (the others reuse it)."""


def option_key(key: str) -> str:
    return f"analysis.{key}"


@dataclass
class AnalysisSpec:
    """What an analysis study is: everything that decides its series and their metrics."""

    raw: dict                     # the config file's tables, without [analysis] and [sweep]
    sets: list                    # --set overrides of config keys
    options: dict                 # analysis options: [analysis] table and --set analysis.*
    vary: list                    # [(key, [values...]), ...] in the order given
    sections: str                 # --analyze
    base: dict = field(default_factory=dict)

    @property
    def series(self) -> list[dict]:
        keys = [k for k, _ in self.vary]
        return [dict(zip(keys, combo)) for combo in itertools.product(*[v for _, v in self.vary])]

    def identity(self) -> dict:
        """What must be equal for a file to hold this study (``--resume``)."""
        base = copy.deepcopy(self.base)
        base["output"]["file"] = ""
        return {"base_config": C.to_toml(base), "vary": [[k, v] for k, v in self.vary],
                "analyze": self.sections, "options": self.options}

    def config_of(self, s: int) -> dict:
        raw = C.apply_overrides(self.raw, self.sets)
        for key, value in self.series[s].items():
            if not key.startswith("analysis."):
                C.set_key(raw, key, copy.deepcopy(value), f"--vary {key}")
        cfg = C.resolve(raw)
        cfg["output"]["file"] = ""
        return cfg

    def options_of(self, s: int) -> dict:
        values = dict(self.options)
        for key, value in self.series[s].items():
            if key.startswith("analysis."):
                values[key.split(".", 1)[1]] = value
        values["only"] = self.sections
        return A.options(values, name=option_key)


def make_spec(raw: dict, sets: list, vary_args: list, sections: str) -> AnalysisSpec:
    """Check and assemble an analysis study; every refusal before any work."""
    from pdes.study import merged_vary
    raw = copy.deepcopy(raw)
    sweep = raw.pop("sweep", {})
    if not isinstance(sweep, dict):
        raise ParameterError("sweep: expected a [sweep] table")
    for key in sweep:
        if key != "vary":
            raise ParameterError(f"sweep.{key}: an analysis study (--analyze) takes only "
                                 "sweep.vary (it has no loads, saturation search or seeds)")
    options = raw.pop("analysis", {})
    if not isinstance(options, dict):
        raise ParameterError("analysis: expected an [analysis] table")
    options = dict(options)
    config_sets = []
    for item in sets or []:
        key, sep, value = item.partition("=")
        if key.strip().startswith("analysis."):
            if not sep:
                raise ParameterError(f"--set {item}: expected analysis.KEY=VALUE")
            options[key.strip().split(".", 1)[1]] = value.strip()
        else:
            config_sets.append(item)
    vary = merged_vary(sweep.get("vary", {}), vary_args)
    for key, values in vary.items():
        if not (key.count(".") == 1 and all(key.split("."))):
            raise ParameterError(f"--vary {key}: key must be section.key (e.g. "
                                 "topology.q or analysis.switch_delay)")
        if key.split(".")[0] in ("output", "run", "measure", "sim"):
            raise ParameterError(f"--vary {key}: [{key.split('.')[0]}] keys do not change "
                                 "a structural analysis")
        if not isinstance(values, list) or not values:
            raise ParameterError(f"--vary {key}: no values")
        if len({json.dumps(v, sort_keys=True) for v in values}) != len(values):
            raise ParameterError(f"--vary {key}: a value is given twice")
    for key in [*options, *(k.split(".", 1)[1] for k in vary if k.startswith("analysis."))]:
        if key == "only":
            raise ParameterError("analysis.only: give the sections with --analyze")
        if key not in A.OPTION_DEFAULTS:
            raise ParameterError(f"analysis.{key}: unknown option (known: "
                                 f"{', '.join(k for k in A.OPTION_DEFAULTS if k != 'only')})")
    from models.analysis import parse_only
    try:
        parse_only(sections)
    except ParameterError as exc:
        raise ParameterError(str(exc).replace("--only", "--analyze", 1)) from None
    base = C.resolve(raw, config_sets)
    spec = AnalysisSpec(raw=raw, sets=config_sets, options=options,
                        vary=list(vary.items()), sections=sections, base=base)
    for s in range(len(spec.series)):       # every series' options and config, before work
        spec.options_of(s)
        spec.config_of(s)
    return spec


# --------------------------------------------------------------------------- metrics
def flatten(report: dict, prefix: str = "") -> dict:
    """The numeric scalars of a report, by dotted path (``None`` as NaN; strings, lists and
    histograms are left out: the whole report is kept per series as JSON; so are the
    ``seconds`` the sections took, which are no property of the network).  A latency
    section of one switch delay gives its results without the delay in their names
    (``latency.nearest.max``, the same column whichever delay the series has)."""
    out = {}
    lat = report.get("latency") if not prefix else None
    if isinstance(lat, dict) and len(lat.get("switch_delay") or {}) == 1:
        (delay, res), = lat["switch_delay"].items()
        lat = {k: v for k, v in lat.items() if k != "switch_delay"}
        report = {**report, "latency": {**lat, "switch_delay_ns": float(delay), **res}}
    for key, value in report.items():
        name = f"{prefix}{key}"
        if name == "seconds":
            continue
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        elif isinstance(value, bool):
            out[name] = float(value)
        elif isinstance(value, (int, float)):
            out[name] = float(value)
        elif value is None:
            out[name] = math.nan
    return out


# --------------------------------------------------------------------------- the file
def _key_text(v) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def table_array(vary: list, rows: list[dict]) -> np.ndarray:
    """The ``/table`` compound array: ``series``, the varied keys, then the metrics."""
    metrics = sorted({k for r in rows for k in r["metrics"]})
    dtype = [("series", np.int64)]
    for key, values in vary:
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            dtype.append((key, np.float64))
        else:
            width = max(len(_key_text(v).encode()) for v in values)
            dtype.append((key, f"S{width}"))
    dtype += [(m, np.float64) for m in metrics]
    table = np.zeros(len(rows), dtype=dtype)
    for i, r in enumerate(rows):
        table["series"][i] = r["series"]
        for key, _ in vary:
            v = r["keys"][key]
            table[key][i] = (float(v) if table.dtype[key].kind == "f"
                             else _key_text(v).encode())
        for m in metrics:
            table[m][i] = r["metrics"].get(m, math.nan)
    return table


def write(path: str, spec: AnalysisSpec, rows: list[dict], version: str) -> None:
    """The whole study file, under a temporary name renamed when complete."""
    from pdes.files import hdf5_written
    rows = sorted(rows, key=lambda r: r["series"])
    with hdf5_written(path) as f:
        f.attrs["format"] = FORMAT
        f.attrs["format_version"] = FORMAT_VERSION
        f.attrs["pdes_version"] = version
        f.attrs["spec"] = json.dumps(spec.identity(), sort_keys=True)
        f.attrs["base_config_toml"] = spec.identity()["base_config"]
        f.attrs["n_series"] = len(spec.series)
        f.attrs["complete"] = len(rows) == len(spec.series)
        f.create_dataset("table", data=table_array(spec.vary, rows))
        g = f.create_group("series")
        for r in rows:
            s = g.create_group(f"s{r['series']:04d}")
            s.attrs["keys_json"] = json.dumps(r["keys"])
            s.attrs["report_json"] = json.dumps(r["report"])


def read(path: str) -> dict:
    """``{"spec", "table" (structured array), "rows", "complete", "n_series"}`` of an
    analysis study file; a file that is not one is refused (ParameterError)."""
    import h5py
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise ParameterError(f"{path}: not an HDF5 file ({exc})") from None
    with f:
        if f.attrs.get("format") != FORMAT:
            raise ParameterError(f"{path}: not an analysis study file (format "
                                 f"{f.attrs.get('format')!r}, expected {FORMAT!r})")
        if f.attrs.get("format_version") != FORMAT_VERSION:
            raise ParameterError(f"{path}: analysis study format_version "
                                 f"{f.attrs.get('format_version')!r}, this pdes reads "
                                 f"{FORMAT_VERSION}")
        try:
            spec = json.loads(f.attrs["spec"])
            table = f["table"][...]
            rows = [{"series": int(name[1:]), "keys": json.loads(g.attrs["keys_json"]),
                     "report": json.loads(g.attrs["report_json"])}
                    for name, g in f["series"].items()]
            complete = bool(f.attrs["complete"])
            n_series = int(f.attrs["n_series"])
        except (KeyError, ValueError, TypeError) as exc:
            raise ParameterError(f"{path}: malformed analysis study file ({exc})") from None
    if len(rows) != len(table) or (table.dtype.names or ())[:1] != ("series",):
        raise ParameterError(f"{path}: malformed analysis study file (/table has {len(table)} "
                             f"rows, /series {len(rows)})")
    for r in rows:
        r["metrics"] = flatten(r["report"])
    return {"spec": spec, "table": table, "rows": rows, "complete": complete,
            "n_series": n_series}


def is_analysis_study(path: str) -> bool:
    import h5py
    try:
        with h5py.File(path, "r") as f:
            return f.attrs.get("format") == FORMAT
    except OSError:
        return False


# --------------------------------------------------------------------------- running
def _raise_everywhere(comm, err: str | None) -> None:
    """Rank 0's refusal (``err``, None: none) raised on every rank of ``comm``."""
    if comm is not None:
        err = comm.bcast(err, root=0)
    if err is not None:
        raise ParameterError(err)


def run(spec: AnalysisSpec, path: str, comm, resume: bool, version: str, say=None) -> list:
    """Compute the missing series (all of them unless ``resume``) and write the file on rank
    0.  ``comm``: every rank of the job (None on one process); the ranks share the
    resiliency samples, every other section is computed on rank 0 alone."""
    rank = comm.Get_rank() if comm is not None else 0
    rows, err = [], None
    if rank == 0 and resume:
        try:
            old = read(path)
            if old["spec"] != json.loads(json.dumps(spec.identity(), sort_keys=True)):
                raise ParameterError(f"--resume: {path} holds another analysis study (its "
                                     "config, varied keys, sections or options differ)")
            rows = old["rows"]
        except ParameterError as exc:
            err = str(exc)
    _raise_everywhere(comm, err)
    done = {r["series"] for r in rows}
    if comm is not None:
        done = comm.bcast(done, root=0)
    share = "resiliency" in spec.sections.split(",") if spec.sections else True
    sub = comm if comm is not None and comm.Get_size() > 1 and share else None
    network, net_key = None, None
    todo = [s for s in range(len(spec.series)) if s not in done]
    if say and todo != list(range(len(spec.series))):
        say(f"resume: {len(done)} of {len(spec.series)} series in {path}")
    for s in todo:      # what the parameters alone refuse, for every series before any work
        A.check_network_params(spec.config_of(s), spec.options_of(s))
    for s in todo:
        cfg, opts = spec.config_of(s), spec.options_of(s)
        key = json.dumps([cfg[k] for k in NETWORK_SECTIONS], sort_keys=True, default=str)
        if key != net_key:
            network, net_key = None, key
        if network is None:
            network = A.build_network(cfg, opts)
        A.check_options(network[0], opts, network[1], option_key)   # every rank, before work
        err = None
        if sub is not None or rank == 0:    # without shared samples rank 0 alone computes
            try:
                rep = A.report(cfg, opts, comm=sub, rank=rank, network=network,
                               name=option_key)
            except ParameterError as exc:
                err = str(exc)
        _raise_everywhere(comm, err)
        if rank == 0:
            rows.append({"series": s, "keys": spec.series[s], "report": rep,
                         "metrics": flatten(rep)})
            write(path, spec, rows, version)
            if say:
                say(f"series {s + 1}/{len(spec.series)}: "
                    + ("  ".join(f"{k}={_key_text(v)}" for k, v in spec.series[s].items())
                       or "base"))
    if rank == 0 and not todo:
        write(path, spec, rows, version)
    if comm is not None:
        comm.Barrier()
    return rows


# --------------------------------------------------------------------------- show
def show_table(data: dict, csv: bool = False) -> str:
    """The table of an analysis study: one row per series, keys then metrics."""
    table = data["table"]
    names = [n for n in table.dtype.names if n != "series"]

    def cell(v):
        if isinstance(v, bytes):
            return v.decode()
        v = float(v)
        if math.isnan(v):
            return "" if csv else "n/a"
        return f"{v:.6g}"
    lines = [[cell(row[n]) for n in names] for row in table]
    if csv:
        import io
        import csv as csvmod
        buf = io.StringIO()
        w = csvmod.writer(buf, lineterminator="\n")
        w.writerow(names)
        w.writerows(lines)
        return buf.getvalue().rstrip("\n")
    # one block per series: the table is wide, so each metric is one line
    out = []
    for row, cells in zip(table, lines):
        out.append(f"series {int(row['series'])}")
        width = max(len(n) for n in names)
        out += [f"  {n:<{width}}  {c}" for n, c in zip(names, cells)]
    if not data["complete"]:
        out.append(f"({len(table)} of {data['n_series']} series: incomplete, --resume adds "
                   "the others)")
    return "\n".join(out)


# --------------------------------------------------------------------------- plot
def metric_series(data: dict, x: str | None, y: str | None) -> tuple[str, str, list]:
    """``(x, y, [(label, xs, ys), ...])``. ``x`` is a numeric varied key (default: the first)
    or a numeric metric column, ``y`` a metric column (default: the first
    ``latency.nearest.max`` or ``paths.router.diameter`` there is). With a varied key on the x
    axis there is one line per combination of the other varied keys; with a metric on the x
    axis (latency against cable length, say) the first varied key runs along each line and
    there is one line per combination of the varied keys after it. Points are sorted by x."""
    table = data["table"]
    keys = [k for k, _ in data["spec"]["vary"]]
    numeric = [k for k in keys if table.dtype[k].kind == "f"]
    metrics = [n for n in table.dtype.names if n != "series" and n not in keys]
    if x is None:
        if not numeric:
            raise ParameterError("--x: the study varies no numeric key to put on the x axis")
        x = numeric[0]
    elif x in metrics:
        if not keys:
            raise ParameterError(f"--x: the study varies no key, so {x!r} has one value")
    elif x not in keys:
        raise ParameterError(f"--x: {x!r} is neither a varied key of the study (varied: "
                             f"{', '.join(keys) or 'none'}) nor a metric column ('pdes show "
                             f"FILE --csv' lists them)")
    elif x not in numeric:
        raise ParameterError(f"--x: the varied key {x!r} is not numeric")
    if y is None:
        y = next((m for m in ("latency.nearest.max", "paths.router.diameter") if m in metrics),
                 metrics[0] if metrics else None)
    if y not in metrics:
        raise ParameterError(f"--y: {y!r} is not a metric column of the study (e.g. "
                             f"{', '.join(metrics[:6])}; 'pdes show FILE --csv' lists them)")
    ys = np.asarray(table[y], dtype=np.float64) if table.dtype[y].kind in "fiub" else None
    if ys is not None and ys.size and np.isnan(ys).all():
        raise ParameterError(f"--y: {y!r} has no value at any point of the study (the analysis "
                             "does not define it for these networks); pick another column")
    others = keys[1:] if x in metrics else [k for k in keys if k != x]
    groups: dict = {}
    for row in table:
        label = "  ".join(f"{k}={_cell(row[k])}" for k in others) or y
        groups.setdefault(label, []).append((float(row[x]), float(row[y])))
    lines = []
    for label, pts in groups.items():
        pts.sort()
        lines.append((label, np.array([p[0] for p in pts]), np.array([p[1] for p in pts])))
    return x, y, lines


def _cell(v) -> str:
    return v.decode() if isinstance(v, bytes) else f"{float(v):g}"


def metric_unit(name: str) -> str | None:
    """The unit of an analysis study's column (docs/analysis.md's JSON keys), or None for a
    count, a ratio or a key whose unit is not known here."""
    parts = name.split(".")
    last = parts[-1]
    if last == "ns_per_m":
        return "ns/m"
    if last.endswith("_ns") or (parts[0] == "latency" and len(parts) == 3
                                and last in ("max", "mean", "endpoint_mean")):
        return "ns"
    if parts[0] == "cost" and (last in ("dollars", "per_endpoint", "total")
                                  or last.startswith("unit_")):
        return "$"
    if parts[0] == "power" and (last in ("per_endpoint", "total") or last.endswith("_w")
                                or last.startswith("w_per")):
        return "W"
    if last == "m" or last.endswith("_m") or last.startswith("m_"):
        return "m"
    if last.endswith("_cycles") or (parts[0] == "cables" and "latency_cycles" in parts):
        return "cycles"
    if parts[0] == "resiliency" and parts[-2:-1] != ["baseline"] and last in (
            "mean", "median", "min", "max", "std", "ci95_width"):
        return "% of links"
    return None


def _labelled(name: str) -> str:
    unit = metric_unit(name)
    return f"{name} ({unit})" if unit else name


def metric_figure(x: str, y: str, lines: list, title: str = ""):
    """One line with markers per series group of :func:`metric_series`."""
    from pdes.plot import _plt
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (label, xs, ys) in enumerate(lines):
        ax.plot(xs, ys, "-o", ms=4, color=f"C{i % 10}", label=label)
    ax.set_xlabel(_labelled(x))
    ax.set_ylabel(_labelled(y))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig
