"""Reading result files: a run file (``pdes run``) or a study file (``pdes sweep``).

:func:`open_results` checks the file and gives a small reader used by
``pdes show`` and ``pdes plot``; users can equally read the files with plain
h5py or pandas (``pandas.DataFrame(h5py.File(f)["table"][()])``).
"""
from __future__ import annotations

import contextlib
import json

import numpy as np

from models.core.errors import ParameterError


STUDY_FORMAT = "pdes-study"
STUDY_VERSION = 1
"""The study file's ``format`` and ``format_version`` (:mod:`pdes.study` writes them)."""

STUDY_ATTRS = {"study": "a JSON object", "config_toml": "TOML text", "varied_keys":
               "a JSON list of keys", "criterion": "text", "finished": "true/false"}
"""The root attributes of a study file beside its format (docs/studies.md)."""

# column kinds: i integer, f number, b true/false (or a count), S text
STUDY_TABLES = {
    "table": ({"point": "S", "series": "i", "seed": "i", "load": "f", "offered_config": "f",
               "offered": "f", "accepted": "f", "latency_mean": "f", "latency_p50": "i",
               "latency_p99": "i", "latency_max": "i", "network_latency_mean": "f",
               "hops_mean": "f", "measured_packets": "i", "saturated": "b", "reason": "S",
               "wall_s": "f"},
              {"completion_cycles": "i", "effective_throughput": "f", "message_latency_mean": "f",
               "message_latency_p99": "i", "message_latency_max": "i", "finish_mean": "f",
               "finish_max": "i"}),
    "table_mean": ({"series": "i", "load": "f", "n": "i", "accepted": "f", "accepted_ci95": "f",
                    "latency_mean": "f", "latency_mean_ci95": "f", "saturated": "b"},
                   {"completion_cycles": "f", "completion_cycles_ci95": "f",
                    "effective_throughput": "f", "effective_throughput_ci95": "f"}),
    "saturation": ({"series": "i", "seed": "i", "saturation_load": "f", "lo": "f", "hi": "f",
                    "accepted_lo": "f", "accepted_hi": "f", "resolution": "f", "status": "S"}, {}),
}
"""Per study table: (its columns, optional columns), each with its kind, beside one column per
varied key; ``saturation`` is there only after a saturation search.  The optional columns are
those of finite workloads (files written before them lack them)."""
_KINDS = {"i": ("iu", "an integer"), "f": ("fiu", "a number"), "b": ("biu", "true/false"),
          "S": ("SUO", "text")}
POINT_ATTRS = ("study_series", "study_rep", "study_load", "study_wall_s", "seed")
"""Attributes of every ``/points/<name>`` group (with ``points=``: ``sweep --resume``)."""


def _text_attr(v):
    return v.decode() if isinstance(v, bytes) else v if isinstance(v, str) else None


def _config_ok(text: str) -> bool:
    """Whether ``text`` is TOML naming a topology, a routing and a traffic pattern."""
    import tomllib
    try:
        cfg = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    return all(isinstance(cfg.get(sec), dict) and isinstance(cfg[sec].get(key), str)
               for sec, key in (("topology", "name"), ("routing", "algorithm"),
                                ("traffic", "pattern")))


RUN_ARRAYS = {"hist/hops": (1, "iu"), "links/routers": (2, "iu"), "links/link_class": (1, "iu"),
              "routers/group": (1, "iu"), "routers/endpoints": (1, "iu")}
"""The arrays of a run (a run file, or a study's ``/points/<name>``) that ``show`` and ``plot``
read beside the series' columns (:data:`pdes.output.SERIES_COLUMNS`): (dimensions, dtype
kinds)."""
RUN_SUMMARY = ("measure_start", "measure_end", "active_endpoints")
"""Summary values the figures compute with (integers)."""


def check_version(f, path: str, kind: str, expected: int) -> None:
    """Refuse a file whose ``format_version`` attribute is not the integer ``expected``."""
    version = f.attrs.get("format_version")
    if isinstance(version, (bool, np.bool_)) or not isinstance(version, (int, np.integer)):
        raise ParameterError(f"{path}: attribute format_version: expected an integer, got "
                             f"{version!r}"[:200])
    if int(version) != expected:
        raise ParameterError(f"{path}: {kind} format_version {int(version)}, this pdes reads "
                             f"{expected}")


def _json_names(attrs, name: str) -> list | None:
    """The attribute ``name`` as a JSON list of texts, None if missing or anything else."""
    try:
        v = json.loads(_text_attr(attrs.get(name)) or "")
    except ValueError:
        return None
    return v if isinstance(v, list) and all(isinstance(x, str) for x in v) else None


def check_run_attrs(f, path: str) -> None:
    """Refuse a run file whose root attributes ``format_version`` and ``config_toml`` are
    missing or malformed."""
    from pdes.output import FORMAT_VERSION
    check_version(f, path, "run", FORMAT_VERSION)
    text = _text_attr(f.attrs.get("config_toml"))
    if text is None or not _config_ok(text):
        raise ParameterError(f"{path}: attribute config_toml: expected TOML text with "
                             "topology.name, routing.algorithm and traffic.pattern")


def check_run(g, where: str) -> None:
    """Refuse a run group (a run file, or ``/points/<name>`` of a study) that lacks what
    ``show`` and ``plot`` read, naming it: ``<where>: <what>`` (:class:`ParameterError`).

    Checked: ``/summary`` a group of single values, with the integers of
    :data:`RUN_SUMMARY`; the arrays of :data:`RUN_ARRAYS` in their shapes and kinds; the
    series' columns of one length and its ``sample_period``; the links' classes, names
    and routers consistent with ``/routers``; ``/links/channel_flits`` (when present) one
    value per channel; ``/jobs`` and ``/workload`` (when present) in the shapes the
    figures read."""
    import h5py

    def bad(what):
        return ParameterError(f"{where}: {what}")

    def array(name, ndim, kinds):
        d = g.get(name)
        if not isinstance(d, h5py.Dataset):
            raise bad(f"dataset /{name} missing" if d is None else f"/{name} is not a dataset")
        if d.ndim != ndim or d.dtype.kind not in kinds or d.dtype.names is not None:
            raise bad(f"dataset /{name}: expected {ndim} dimension(s) of "
                      f"{'integers' if kinds == 'iu' else 'numbers'}, got shape {d.shape} of "
                      f"{d.dtype}")
        return d

    summary = g.get("summary")
    if not isinstance(summary, h5py.Group):
        raise bad("group /summary missing" if summary is None else "/summary is not a group")
    for k in summary:
        d = summary.get(k)
        if not isinstance(d, h5py.Dataset) or d.shape != () or d.dtype.names is not None:
            raise bad(f"/summary/{k}: expected one value")
    for k in RUN_SUMMARY:
        d = summary.get(k)
        if d is None or d.dtype.kind not in "iu":
            raise bad(f"/summary/{k}: missing or not an integer")
    if int(summary["measure_end"][()]) < int(summary["measure_start"][()]):
        raise bad("/summary: measure_end before measure_start")
    from pdes.output import SERIES_COLUMNS
    arrays = {name: array(name, *spec) for name, spec in RUN_ARRAYS.items()}
    if len({array(f"series/{c}", 1, "iuf").shape[0] for c in SERIES_COLUMNS}) != 1:
        raise bad("/series: its columns differ in length")
    period = g["series"].attrs.get("sample_period")
    if isinstance(period, (bool, np.bool_)) or not isinstance(period, (int, np.integer)) \
            or int(period) < 1:
        raise bad("/series: attribute sample_period missing or not a positive integer")
    links, cls, group = (arrays["links/routers"], arrays["links/link_class"],
                         arrays["routers/group"])
    if links.shape[1] != 2 or cls.shape[0] != links.shape[0]:
        raise bad(f"/links: routers {links.shape} and link_class {cls.shape} do not describe "
                  "the same links")
    if arrays["routers/endpoints"].shape != group.shape:
        raise bad("/routers: endpoints and group differ in length")
    names = _json_names(g["links"].attrs, "link_class_names")
    if names is None:
        raise bad("/links: attribute link_class_names missing or not a JSON list of names")
    r, c, gr = links[()], cls[()], group[()]
    if r.size and (r.min() < 0 or r.max() >= gr.shape[0]):
        raise bad("/links/routers: a router id outside /routers")
    if c.size and (c.min() < 0 or c.max() >= len(names)):
        raise bad("/links/link_class: a class outside link_class_names")
    if gr.size and gr.min() < 0:
        raise bad("/routers/group: a negative group")
    if "channel_flits" in g["links"]:
        d = array("links/channel_flits", 1, "iuf")
        if d.shape[0] != 2 * links.shape[0]:
            raise bad(f"/links/channel_flits: {d.shape[0]} values for {2 * links.shape[0]} "
                      "channels")
    if "workload" in g:
        off = array("workload/proc_op_offset", 1, "iu")
        ops = [array(f"workload/{k}", 1, "iu") for k in ("op_start", "op_end", "op_kind")]
        if len({d.shape[0] for d in ops}) != 1 or off.shape[0] < 1:
            raise bad("/workload: its operation columns differ in length")
    if "jobs" in g:
        jobs = g["jobs"]
        jnames = _json_names(jobs.attrs, "names")
        if jnames is None or not all(isinstance(jobs.get(x), h5py.Group) for x in jnames):
            raise bad("/jobs: attribute names missing, or a job it names has no group")
        for x in jnames:
            for k in jobs[x]:
                d = jobs[x].get(k)
                if not isinstance(d, h5py.Dataset) or d.shape != ():
                    raise bad(f"/jobs/{x}/{k}: expected one value")


def check_study(f, path: str, points=None) -> None:
    """Refuse an open HDF5 file that does not have the study schema of docs/studies.md, naming
    what is missing or malformed: ``<path>: <what>`` (:class:`ParameterError`).

    Checked: the format and its version; the root attributes and their types (the base config
    parses as TOML and names a topology, routing and traffic pattern; ``varied_keys`` is a
    list of keys); ``/points`` a group; ``/table`` and ``/table_mean`` (and ``/saturation``
    when present) one-dimensional tables holding every column of :data:`STUDY_TABLES` in
    its kind and one column per varied key; ``/table`` at least one point, each named by
    its ``point`` column in ``/points``.  With ``points`` (the summary keys a resumed study
    reads), every ``/points/<name>`` group also has the attributes :data:`POINT_ATTRS` and a
    ``summary`` with those keys.  The runs inside the points are not checked here.
    """
    import tomllib

    import h5py

    def bad(what):
        return ParameterError(f"{path}: {what}")

    fmt = _text_attr(f.attrs.get("format"))
    if fmt != STUDY_FORMAT:
        raise bad("not a pdes study file" + (f" (format {fmt!r})" if fmt else " (no format attribute)"))
    check_version(f, path, "study", STUDY_VERSION)
    for name, kind in STUDY_ATTRS.items():
        if name not in f.attrs:
            raise bad(f"attribute {name} missing ({kind})")
        v = f.attrs[name]
        if name == "finished":
            ok = isinstance(v, (bool, np.bool_))
        else:
            v = _text_attr(v)
            ok = v is not None
            try:
                if ok and name == "study":
                    ok = isinstance(json.loads(v), dict)
                elif ok and name == "varied_keys":
                    keys = json.loads(v)
                    ok = isinstance(keys, list) and all(isinstance(k, str) for k in keys)
                elif ok and name == "config_toml":
                    ok = _config_ok(v)
            except (ValueError, tomllib.TOMLDecodeError):
                ok = False
        if not ok:
            raise bad(f"attribute {name}: expected {kind}" + (
                " with topology.name, routing.algorithm and traffic.pattern"
                if name == "config_toml" else "") + f", got {f.attrs[name]!r}"[:200])
    keys = json.loads(_text_attr(f.attrs["varied_keys"]))
    if not isinstance(f.get("points"), h5py.Group):
        raise bad("group /points missing")
    for name, (columns, optional) in STUDY_TABLES.items():
        if name == "saturation" and name not in f:
            continue
        d = f.get(name)
        if not isinstance(d, h5py.Dataset):
            raise bad(f"dataset /{name} missing" if d is None else f"/{name} is not a dataset")
        if d.dtype.names is None or d.ndim != 1:
            raise bad(f"dataset /{name}: expected a one-dimensional table (compound type), got "
                      f"shape {d.shape} of {d.dtype}")
        for col, kind in list(columns.items()) + [(k, None) for k in keys] + list(optional.items()):
            if col not in d.dtype.names:
                if col in optional:
                    continue
                raise bad(f"dataset /{name}: no column {col!r}" +
                          (" (a varied key of the study)" if kind is None else ""))
            got = d.dtype[col]
            if got.shape or (kind is not None and got.kind not in _KINDS[kind][0]) or \
                    (kind is None and got.kind not in "biufSUO"):
                raise bad(f"dataset /{name}: column {col!r} should hold "
                          f"{_KINDS[kind][1] if kind else 'a value'}, not {got}")
        if name == "table" and d.shape[0] == 0:
            raise bad("dataset /table has no points")
    have = set(f["points"])
    for point in f["table"]["point"]:
        point = point.decode(errors="replace") if isinstance(point, bytes) else str(point)
        if point not in have:
            raise bad(f"dataset /table names point {point!r}, which /points does not hold")
    if points is None:
        return
    for name in have:
        g = f["points"][name]
        if not isinstance(g, h5py.Group):
            raise bad(f"/points/{name} is not a group")
        for a in POINT_ATTRS:
            v = g.attrs.get(a)
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer,
                                                                     np.floating)):
                raise bad(f"/points/{name}: attribute {a} missing or not a number")
        summary = g.get("summary")
        if not isinstance(summary, h5py.Group):
            raise bad(f"/points/{name}: group summary missing")
        for k in points:
            if not isinstance(summary.get(k), h5py.Dataset) or summary[k].shape != ():
                raise bad(f"/points/{name}: summary/{k} missing or not one value")


class Results:
    """An open run or study file (a study's schema checked, :func:`check_study`)."""

    def __init__(self, f, path: str):
        self.f = f
        self.path = path
        fmt = _text_attr(f.attrs.get("format"))
        self._checked = set()
        if fmt == "pdes-results":
            self.kind = "run"
            check_run_attrs(f, path)
        elif fmt == STUDY_FORMAT:
            self.kind = "study"
            check_study(f, path)
        else:
            raise ParameterError(f"{path}: not a pdes result or study file" + (
                f" (format {fmt!r})" if fmt else " (no format attribute)"))

    def has(self, name: str) -> bool:
        return name in self.f

    @property
    def finished(self) -> bool:
        return bool(self.f.attrs.get("finished", True))

    @property
    def varied_keys(self) -> list[str]:
        return json.loads(self.f.attrs["varied_keys"]) if self.kind == "study" else []

    @property
    def finite(self) -> bool:
        """A study of finite workloads: every point of ``/table`` has a completion time (a
        load-driven point holds -1, a file written before the column has none)."""
        if self.kind != "study" or "completion_cycles" not in self.f["table"].dtype.names:
            return False
        return bool((self.f["table"]["completion_cycles"] >= 0).all())

    def summary(self, point: str | None = None) -> dict:
        g = self.group(point)["summary"]
        return {k: plain(g[k][()]) for k in g}

    def group(self, point: str | None = None):
        """The run group: the file itself for a run file, ``/points/<point>`` in a study."""
        if self.kind == "run":
            if point:
                raise ParameterError("--point: only a study file has points")
            g, where = self.f, self.path
        else:
            if point is None:
                raise ParameterError("--point: name one point of the study (see 'pdes show')")
            if point not in self.f["points"]:
                raise ParameterError(f"--point: no point '{point}' in {self.path} "
                                     f"(points: {', '.join(list(self.f['points'])[:6])}, ...)")
            g, where = self.f["points"][point], f"{self.path}: /points/{point}"
        if point not in self._checked:
            check_run(g, where)
            self._checked.add(point)
        return g

    def frame(self, name: str = "table"):
        """A study table as a pandas DataFrame, strings decoded."""
        import pandas as pd
        df = pd.DataFrame(self.f[name][()])
        for col in df.columns:
            if df[col].dtype == object:
                df[col] = [v.decode() if isinstance(v, bytes) else v for v in df[col]]
        return df


def plain(v):
    """An HDF5 value as a plain Python value (bytes decoded, numpy scalars unwrapped)."""
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.generic):
        return v.item()
    return v


@contextlib.contextmanager
def open_results(path: str):
    """Open a result or study file for reading, with one-line errors for bad files."""
    import os

    import h5py
    if not os.path.isfile(path):
        raise ParameterError(f"{path}: does not exist or is not a regular file")
    try:
        f = h5py.File(path, "r")
    except OSError:
        raise ParameterError(f"{path}: not an HDF5 file") from None
    try:
        yield Results(f, path)
    finally:
        f.close()
