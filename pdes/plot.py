"""Figures of run and study files (matplotlib, Agg backend): what the papers plot.

Each ``*_figure`` function takes an open :class:`pdes.results.Results` and
returns a matplotlib ``Figure`` whose line and image objects hold exactly the
file's numbers (the tests read them back).  ``python -m pdes plot`` saves one.

* ``latency``: packet latency against offered load, one line per series,
  saturated points drawn as crosses, each series' saturation load as a dotted
  vertical line (study files; mean and 95% interval with replications).
* ``throughput``: accepted against offered load per series, with the diagonal.
* ``hops``: the hop-count distribution of the measured packets.
* ``links``: channel load during the window (flits/cycle) by link class, and a
  rack-to-rack heat map of the load between racks (groups).
* ``series``: a run's time series per sample period.
* ``completion``: a study of finite workloads (``pdes sweep`` of a collective, exchange or
  trace): completion time against one numeric varied key (message size, process count),
  one line per combination of the other varied keys (mean and 95% interval with
  replications); 003 Figs. 10-11 plot such times.
* ``resiliency``: of one or more *analysis* files (``pdes analyze --only
  resiliency --curve -o FILE``), average path length and diameter against the
  share of failed links, one line per file (004 Fig. 5), read by
  :func:`resiliency_curve` and drawn by :func:`resiliency_figure`.
* ``path-sets``: of one or more analysis files (``pdes analyze --only path-sets -o
  FILE``), the per-pair average and longest path length, the paths crossing each link and
  the link-disjoint paths per pair, one line per path set (003 Figs. 6-8), read by
  :func:`path_sets_data` and drawn by :func:`path_sets_figure`.
* ``design``: of a *design table* (``pdes design -o TABLE.h5|TABLE.csv``), one numeric
  column against another (default: routers against the network radix ``k'``), one series per
  family, with the Moore bounds of diameter 2 and 3 when routers are plotted against ``k'``
  (000 Fig. 5, 001 Fig. 3, 004 Figs. 2-4), read by :func:`design_data` and
  :func:`design_series` and drawn by :func:`design_figure`.
* ``cost-model``: no file; the cable price against length (electric and optical) and the
  router price against radix of the cost model of ``pdes analyze --only cost`` (004 Figs.
  12a/b), drawn by :func:`cost_model_figure` from the functions that price networks.
"""
from __future__ import annotations

import numpy as np

from models.core.errors import ParameterError

KINDS = ("latency", "throughput", "hops", "links", "series", "completion", "timeline",
         "resiliency", "path-sets", "design", "cost-model", "metric")

ANALYSIS_FORMAT = "pdes-analysis"
"""The ``format`` attribute of ``pdes analyze -o`` files (the resiliency kind reads them)."""

CURVE_KEYS = ("fraction", "connected", "samples_connected",
              "diameter_mean", "diameter_std", "diameter_min", "diameter_max",
              "avg_distance_mean", "avg_distance_std", "avg_distance_min", "avg_distance_max")
"""The datasets of ``/resiliency/curve/paths`` in an analysis file."""


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _series_label(row, keys) -> str:
    def value(v):          # a row of means holds its integer keys as floats
        return int(v) if isinstance(v, float) and v.is_integer() else v
    return ", ".join(f"{k}={value(row[k])}" for k in keys) or "all points"


def _study_series(res):
    """[(label, DataFrame of that series' rows sorted by load)] of a study's table."""
    keys = res.varied_keys
    mean = res.frame("table_mean")
    replicated = int(mean["n"].max()) > 1 if len(mean) else False
    df = mean if replicated else res.frame("table")
    out = []
    for s in sorted(set(df["series"])):
        rows = df[df["series"] == s].sort_values("load")
        out.append((s, _series_label(rows.iloc[0], keys), rows))
    return out, replicated


AUTO_YMAX = 4.0
"""The latency axis ends at this multiple of the lowest latency plotted (the curves' knees
stay readable; a note counts the points above), or higher so that every series keeps its
lowest point, unless --logy or --ymax."""


def latency_figure(res, logy: bool = False, network: bool = False, ymax: float | None = None):
    """Latency against offered load per series (study) or the one point (run)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    col = "network_latency_mean" if network else "latency_mean"
    what = "network latency" if network else "packet latency"
    plotted, lowest = [], []        # every latency drawn; each series' lowest
    if res.kind == "run":
        s = res.summary()
        key = "network_latency_mean" if network else "packet_latency_mean"
        ax.plot([s["offered_load_config"]], [s[key]], "o", label="run")
        plotted.append(s[key])
    else:
        series, replicated = _study_series(res)
        if replicated and network:
            raise ParameterError("--network: replicated studies plot the mean packet latency")
        sat = res.frame("saturation") if res.has("saturation") else None
        lines = False
        for i, (s, label, rows) in enumerate(series):
            color = f"C{i % 10}"
            x = rows["load"].to_numpy()
            y = rows[col].to_numpy()
            plotted.extend(y.tolist())
            if np.isfinite(y).any():
                lowest.append(float(np.nanmin(y)))
            if replicated:
                ax.errorbar(x, y, yerr=rows["latency_mean_ci95"].fillna(0).to_numpy(), color=color,
                            marker="o", ms=4, capsize=3, label=label)
                satd = rows["saturated"].to_numpy() > 0
            else:
                ax.plot(x, y, color=color, marker="o", ms=4, label=label)
                satd = rows["saturated"].to_numpy().astype(bool)
            if satd.any():
                ax.plot(x[satd], y[satd], linestyle="none", marker="x", ms=9, color=color,
                        label="_saturated")
            if sat is not None:
                loads = sat[sat["series"] == s]["saturation_load"].dropna().to_numpy()
                if loads.size:
                    ax.axvline(float(loads.mean()), color=color, linestyle=":",
                               label=f"_saturation {float(loads.mean()):g}")
                    lines = True
        if lines:
            ax.plot([], [], color="gray", linestyle=":", label="saturation load")
        ax.plot([], [], color="gray", linestyle="none", marker="x", label="saturated point")
    ax.set_xlabel("offered load (flits/cycle/endpoint)")
    ax.set_ylabel(f"{what} (cycles)" + (", mean and 95% CI" if res.kind == "study" and
                                         _study_series(res)[1] else ""))
    if logy:
        ax.set_yscale("log")
    else:
        ys = np.asarray(plotted, dtype=np.float64)
        ys = ys[np.isfinite(ys)]
        top = ymax if ymax else (max(AUTO_YMAX * ys.min(), 1.1 * max(lowest, default=0.0))
                                 if ys.size and ys.min() > 0 else None)
        if top and ys.size and ys.max() > top:
            ax.set_ylim(0, top)
            ax.annotate(f"{int((ys > top).sum())} points above {top:.0f} cycles not shown",
                        xy=(0.99, 0.02), xycoords="axes fraction", ha="right", va="bottom", fontsize=8,
                        color="gray")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(_title(res))
    fig.tight_layout()
    return fig


def throughput_figure(res):
    """Accepted against offered load per series, with the diagonal accepted = offered."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 5))
    top = 0.0
    if res.kind == "run":
        s = res.summary()
        ax.plot([s["offered_load"]], [s["accepted_load"]], "o", label="run")
        top = max(s["offered_load"], s["accepted_load"])
    else:
        series, _ = _study_series(res)
        for i, (_, label, rows) in enumerate(series):
            x = rows["load"].to_numpy()
            y = rows["accepted"].to_numpy()
            ax.plot(x, y, color=f"C{i % 10}", marker="o", ms=4, label=label)
            top = max(top, float(x.max()), float(y.max()))
    top = min(1.0, top * 1.05) if top > 0 else 1.0
    ax.plot([0, top], [0, top], color="gray", linestyle="--", linewidth=1, label="accepted = offered")
    ax.set_xlabel("offered load (flits/cycle/endpoint)")
    ax.set_ylabel("accepted load (flits/cycle/endpoint)")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(_title(res))
    fig.tight_layout()
    return fig


def _points(res, point):
    """[(label, group)] of the run groups a per-point figure shows."""
    if res.kind == "run" or point:
        return [(point or "run", res.group(point))]
    # a study: each series at its lowest load (a per-point figure needs one run per line)
    df = res.frame("table")
    keys = res.varied_keys
    out = []
    for s in sorted(set(df["series"])):
        rows = df[(df["series"] == s) & (df["seed"] == df[df["series"] == s]["seed"].min())]
        row = rows.sort_values("load").iloc[0]
        out.append((f"{_series_label(row, keys)}, load {row['load']:g}", res.group(row["point"])))
    return out


def _busiest_point(res, point):
    """(label, group): the named point, the run, or a study's first series at its highest
    unsaturated load (its lowest load if every point saturated)."""
    if res.kind == "run" or point:
        return _points(res, point)[0]
    df = res.frame("table")
    rows = df[df["series"] == df["series"].min()].sort_values("load")
    ok = rows[~rows["saturated"].astype(bool)]
    row = ok.iloc[-1] if len(ok) else rows.iloc[0]
    return f"{_series_label(row, res.varied_keys)}, load {row['load']:g}", res.group(row["point"])


def hops_figure(res, point: str | None = None):
    """Fraction of measured packets per hop count."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    pts = _points(res, point)
    width = 0.8 / len(pts)
    for i, (label, g) in enumerate(pts):
        h = g["hist/hops"][()].astype(np.float64)
        n = int(np.nonzero(h)[0].max()) + 1 if h.any() else 1
        frac = h[:n] / h.sum() if h.sum() else h[:n]
        ax.bar(np.arange(n) + (i - (len(pts) - 1) / 2) * width, frac, width=width, label=label,
               color=f"C{i % 10}")
        if not h.any():
            ax.text(0.5, 0.5, f"{label}: no measured packet", transform=ax.transAxes,
                    ha="center", fontsize=9, color="gray")
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("router-to-router hops")
    ax.set_ylabel("fraction of measured packets")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(_title(res))
    fig.tight_layout()
    return fig


def link_loads(g):
    """(flits/cycle per channel, link class per channel, class names) of one run group."""
    import json
    if "channel_flits" not in g["links"]:
        raise ParameterError("--kind links: the file has no per-link counts (output.per_link = false)")
    flits = g["links/channel_flits"][()].astype(np.float64)
    window = int(g["summary/measure_end"][()]) - int(g["summary/measure_start"][()])
    cls = np.repeat(g["links/link_class"][()], 2)
    names = json.loads(g["links"].attrs["link_class_names"])
    return flits / max(window, 1), cls, names


def rack_matrix(g):
    """Rack-to-rack load (flits/cycle summed over the channels from rack i to rack j)."""
    load, _, _ = link_loads(g)
    links = g["links/routers"][()]
    group = g["routers/group"][()]
    n = int(group.max()) + 1
    src = np.empty(2 * len(links), np.int64)
    dst = np.empty(2 * len(links), np.int64)
    src[0::2], dst[0::2] = group[links[:, 0]], group[links[:, 1]]
    src[1::2], dst[1::2] = group[links[:, 1]], group[links[:, 0]]
    m = np.zeros((n, n))
    np.add.at(m, (src, dst), load)
    return m


def links_figure(res, point: str | None = None):
    """Channel load by link class (histogram) and the rack-to-rack load (heat map)."""
    plt = _plt()
    label, g = _busiest_point(res, point)
    load, cls, names = link_loads(g)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.5))
    bins = np.linspace(0, max(1.0, float(load.max())), 41)
    for c in np.unique(cls):
        a1.hist(load[cls == c], bins=bins, alpha=0.6, label=f"{names[c]} ({int((cls == c).sum())} channels)")
    a1.set_xlabel("channel load during the window (flits/cycle)")
    a1.set_ylabel("channels")
    a1.legend(fontsize=8)
    a1.grid(True, alpha=0.3)
    m = rack_matrix(g)
    im = a2.imshow(m, cmap="viridis", interpolation="nearest", origin="upper")
    a2.set_xlabel("to rack (group)")
    a2.set_ylabel("from rack (group)")
    fig.colorbar(im, ax=a2, label="flits/cycle between the racks")
    fig.suptitle(f"{_title(res)}: {label}", fontsize=10)
    fig.tight_layout()
    return fig


def _failure(g):
    """The ``/faults`` attributes of a run group's failure during the run, or None (no
    failure, or one before the run)."""
    if "faults" not in g or "at_cycle" not in g["faults"].attrs:
        return None
    return g["faults"].attrs


def _failure_marks(g) -> list:
    """[(cycle, label, line style)] of a run group's failure during the run and its reroute
    (``faults.at_cycle``, ``faults.reroute_cycles``) that happened within the run; [] without
    one."""
    f = _failure(g)
    if f is None:
        return []
    end = int(g["summary/cycles"][()])
    at, rr = int(f["at_cycle"]), int(f["reroute_cycle"])
    return [m for m in ((at, f"failure (cycle {at})", "-"), (rr, "reroute", "-."))
            if m[0] <= end]


def _sample_endpoints(g, t, period: int):
    """The active endpoints of each sample ending at cycles ``t``: the run's, or, with a
    failure during the run, those of the part of the run each sample covers."""
    f = _failure(g)
    if f is None or "active_before_failure" not in f:
        return int(g["summary/active_endpoints"][()])
    from pdes.failure import active_over
    act = (int(f["active_before_failure"]), int(f["active_until_reroute"]),
           int(f["active_after_reroute"]))
    at, rr = int(f["at_cycle"]), int(f["reroute_cycle"])
    return np.array([active_over(act, at, rr, int(c) - period, int(c)) for c in t])


def series_figure(res, point: str | None = None):
    """A run's time series: delivered and injected flits per cycle per endpoint, flits in flight."""
    plt = _plt()
    pts = _points(res, point)
    label, g = pts[0]
    sr = g["series"]
    period = int(sr.attrs["sample_period"])
    t = sr["cycle"][()]
    n_ep = _sample_endpoints(g, t, period)
    mk = {"marker": "o", "ms": 3} if t.size <= 20 else {}     # a few samples: shown as points
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(t, sr["delivered_flits"][()] / (period * n_ep), label="delivered (flits/cycle/endpoint)",
            **mk)
    ax.plot(t, sr["injected_flits"][()] / (period * n_ep), label="injected (flits/cycle/endpoint)",
            **mk)
    m0, m1 = int(g["summary/measure_start"][()]), int(g["summary/measure_end"][()])
    ax.axvspan(m0, m1, color="gray", alpha=0.12, label="measurement window")
    for cycle, what, style in _failure_marks(g):
        ax.axvline(cycle, color="k", linestyle=style, linewidth=1, label=what)
    ax.set_xlabel("cycle")
    ax.set_ylabel("flits/cycle/endpoint")
    ax.set_ylim(bottom=0)
    ax2 = ax.twinx()
    ax2.plot(t, sr["in_flight_flits"][()], color="C3", linestyle="--", label="flits in flight", **mk)
    ax2.set_ylabel("flits in flight")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="lower right")
    ax.grid(True, alpha=0.3)
    ax.set_title(f"{_title(res)}: {label}", fontsize=10)
    fig.tight_layout()
    return fig


TIMELINE_MAX_PROCS = 512
TIMELINE_MAX_OPS = 200_000
"""The largest schedule a timeline draws (one segment per operation)."""


def timeline_figure(res, point: str | None = None):
    """A schedule's operations over time: one row per process, a segment from each
    operation's post to its completion (sends, receives and computes in three colours),
    rows grouped by job when there are several."""
    import json
    plt = _plt()
    from matplotlib.collections import LineCollection
    label, g = _points(res, point)[0]
    if "workload" not in g:
        raise ParameterError(f"--kind timeline: {res.path} is not a run of a schedule (no "
                             "/workload: a collective, skeleton, trace or [[jobs]])")
    w = g["workload"]
    start, end, kind = w["op_start"][()], w["op_end"][()], w["op_kind"][()]
    off = w["proc_op_offset"][()]
    P, N = off.size - 1, start.size
    if P > TIMELINE_MAX_PROCS or N > TIMELINE_MAX_OPS:
        raise ParameterError(f"--kind timeline: {P} processes and {N} operations; the timeline "
                             f"draws at most {TIMELINE_MAX_PROCS} processes and "
                             f"{TIMELINE_MAX_OPS} operations")
    proc = np.repeat(np.arange(P), np.diff(off))
    fig, ax = plt.subplots(figsize=(9, max(3.0, min(12.0, 0.18 * P + 1.5))))
    done = end >= 0
    for k, (name, color, dy) in enumerate((("send", "C0", -0.22), ("receive", "C1", 0.0),
                                           ("compute", "0.55", 0.22))):
        m = done & (kind == k)
        segs = np.stack([np.stack([start[m], proc[m] + dy], 1),
                         np.stack([np.maximum(end[m], start[m] + 0.5), proc[m] + dy], 1)], 1)
        ax.add_collection(LineCollection(segs, colors=color, linewidths=3,
                                         label=name if m.any() else f"_{name}"))
    if "jobs" in g:
        names = json.loads(g["jobs"].attrs["names"])
        first = 0
        for n in names:
            cnt = int(g["jobs"][n]["processes"][()])
            if first:
                ax.axhline(first - 0.5, color="k", linewidth=0.6)
            ax.text(0, first + cnt / 2 - 0.5, f" {n}", va="center", fontsize=8)
            first += cnt
    ax.set_xlim(0, max(1, int(end.max(initial=0)) + 1))
    ax.set_ylim(P - 0.5, -0.5)
    ax.set_xlabel("cycle")
    ax.set_ylabel("process")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))    # beside the rows
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(f"{_title(res)}: {label}", fontsize=10)
    fig.tight_layout()
    return fig


LOG_X_SPAN = 100.0
"""The completion plot's x axis is logarithmic when its values span more than this factor."""


def numeric_keys(res) -> list[str]:
    """The varied keys of a study whose ``/table`` column holds numbers (not true/false)."""
    t = res.f["table"].dtype
    return [k for k in res.varied_keys if t[k].kind in "iuf"]


def completion_x(res, x: str | None) -> str:
    """The key on the completion plot's x axis: ``x`` (checked: varied and numeric) or the
    first numeric varied key."""
    keys = res.varied_keys
    numeric = numeric_keys(res)
    varied = ", ".join(keys) or "none"
    if x is None:
        if not numeric:
            raise ParameterError(
                f"--kind completion: the x axis needs a numeric varied key and {res.path} varies "
                f"none (varied: {varied}); vary one such as traffic.bytes or traffic.procs, or "
                f"read the completion times with 'pdes show {res.path}'")
        return numeric[0]
    if x not in keys:
        raise ParameterError(f"--x: {x} is not a varied key of {res.path} (varied: {varied})")
    if x not in numeric:
        values = ", ".join(str(v) for v in res.frame("table")[x].unique()[:6])
        raise ParameterError(f"--x: {x} is not numeric (values: {values}); the x axis needs "
                             f"a number (numeric varied keys: {', '.join(numeric) or 'none'})")
    return x


def completion_figure(res, x: str | None = None):
    """Completion time (cycles, log axis) of a study of finite workloads against the varied key
    ``x`` (:func:`completion_x`; a log axis when its values span more than
    :data:`LOG_X_SPAN`), one line per combination of the other varied keys, named in the
    legend; with replications the mean of ``/table_mean`` and its 95% interval."""
    if res.kind != "study":
        raise ParameterError(f"--kind completion: plots a study of finite workloads ('pdes "
                             f"sweep'), {res.path} is a run file")
    if not res.finite:
        raise ParameterError(f"--kind completion: {res.path} is not a study of finite workloads "
                             "(its points have no completion time); plot it with --kind latency")
    x = completion_x(res, x)
    table = res.frame("table")
    if table.groupby("series")["load"].nunique().max() > 1:
        raise ParameterError(f"--kind completion: {res.path} has several loads per series (written "
                             "before studies of finite workloads had one point per series); "
                             "plot it with --kind latency")
    mean = res.frame("table_mean")
    replicated = int(mean["n"].max()) > 1
    if replicated and "completion_cycles_ci95" not in mean.columns:
        raise ParameterError(f"--kind completion: {res.path}: /table_mean has no "
                             "completion_cycles_ci95 column (written by an older pdes)")
    df = mean if replicated else table
    others = [k for k in res.varied_keys if k != x]
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    groups = [((), df)] if not others else df.groupby(others, sort=False)
    for i, (_, rows) in enumerate(groups):
        rows = rows.sort_values(x)
        label = _series_label(rows.iloc[0], others)
        xs = rows[x].to_numpy(np.float64)
        ys = rows["completion_cycles"].to_numpy(np.float64)
        color = f"C{i % 10}"
        if replicated:
            ax.errorbar(xs, ys, yerr=rows["completion_cycles_ci95"].fillna(0).to_numpy(),
                        color=color, marker="o", ms=4, capsize=3, label=label)
        else:
            ax.plot(xs, ys, color=color, marker="o", ms=4, label=label)
    ax.set_yscale("log")
    values = df[x].to_numpy(np.float64)
    pos = values[values > 0]
    if pos.size and pos.max() > LOG_X_SPAN * pos.min():
        if pos.size == values.size:
            ax.set_xscale("log")
        else:                        # a zero (or negative) value: linear around it
            ax.set_xscale("symlog", linthresh=float(pos.min()))
    ax.set_xlabel(x)
    ax.set_ylabel("completion time (cycles)" + (", mean and 95% CI" if replicated else ""))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(_title(res))
    fig.tight_layout()
    return fig


def _title(res) -> str:
    """The network, workload and routing the series share: a varied key is in the legend, not
    here (the base config's value of it is no series')."""
    import tomllib
    cfg = tomllib.loads(res.f.attrs["config_toml"])
    varied = set(res.varied_keys)
    t = cfg["topology"]
    if "topology.name" in varied:       # the series' networks are of different families
        name = params = ""
    else:
        name = t["name"]
        params = " ".join(f"{k}={v}" for k, v in t.items()
                          if k != "name" and f"topology.{k}" not in varied)
    work = ("jobs " + ", ".join(j.get("name", "") for j in cfg["jobs"]) if cfg.get("jobs")
            else "" if "traffic.pattern" in varied else cfg["traffic"]["pattern"])
    parts = [" ".join(x for x in (name, params) if x), work]
    if "routing.algorithm" not in varied:
        parts.append(cfg["routing"]["algorithm"])
    title = ", ".join(x for x in parts if x)
    if res.kind == "study" and not res.finished:
        title += f" (unfinished: {len(res.frame('table'))} points)"
    return title


OPTIONS = {"latency": ("--logy", "--network", "--ymax"), "throughput": (),
           "hops": ("--point",), "links": ("--point",), "series": ("--point",),
           "timeline": ("--point",), "completion": ("--x",)}
"""The options each kind of a run or study file takes; any other is refused, not ignored."""


def _finite_run(res) -> bool:
    """A run of a finite workload (exchange, collective, trace, jobs): it has no offered load."""
    if res.kind != "run":
        return res.finite
    return float(res.summary().get("completion_cycles", -1)) >= 0


def figure(res, kind: str, *, point=None, logy=False, network=False, ymax=None, x=None):
    """The figure of one kind (see :data:`KINDS`)."""
    given = {"--point": bool(point), "--logy": logy, "--network": network,
             "--ymax": ymax is not None, "--x": x is not None}
    for flag, on in given.items():
        if on and kind in OPTIONS and flag not in OPTIONS[kind]:
            raise ParameterError(f"{flag}: not an option of --kind {kind}" + (
                " (its time axis is logarithmic)" if (kind, flag) == ("completion", "--logy")
                else ""))
    if kind in ("latency", "throughput") and _finite_run(res):
        raise ParameterError(f"--kind {kind}: {res.path} holds finite workloads, which have no "
                             "offered load; plot --kind "
                             + ("completion" if res.kind == "study" else "series or timeline"))
    if kind == "completion":
        return completion_figure(res, x)
    if kind == "latency":
        if logy and ymax is not None:
            raise ParameterError("--ymax: not with --logy (a logarithmic axis shows every point)")
        return latency_figure(res, logy=logy, network=network, ymax=ymax)
    if kind == "throughput":
        return throughput_figure(res)
    if kind == "hops":
        return hops_figure(res, point)
    if kind == "links":
        return links_figure(res, point)
    if kind == "series":
        return series_figure(res, point)
    if kind == "timeline":
        return timeline_figure(res, point)
    if kind in ("resiliency", "path-sets"):
        raise ParameterError(f"--kind: {kind} plots 'pdes analyze -o' files, {res.path} is "
                             f"a {res.kind} file")
    raise ParameterError(f"--kind: unknown kind '{kind}' (known: {', '.join(KINDS)})")



# --------------------------------------------------------------------------- resiliency
def is_analysis(path: str) -> bool:
    """Whether ``path`` is an HDF5 file whose ``format`` is :data:`ANALYSIS_FORMAT` (False for
    anything else, including a missing or unreadable file)."""
    import h5py
    try:
        with h5py.File(path, "r") as f:
            fmt = f.attrs.get("format")
    except (OSError, ValueError):
        return False
    return (fmt.decode() if isinstance(fmt, bytes) else fmt) == ANALYSIS_FORMAT


def _open_analysis(path: str, kind: str):
    """``path`` opened with h5py after checking it is a complete analysis file (else a
    :class:`ParameterError` naming it and ``--kind``)."""
    import os

    import h5py
    if not os.path.isfile(path):
        raise ParameterError(f"{path}: does not exist or is not a regular file")
    try:
        f = h5py.File(path, "r")
    except OSError:
        raise ParameterError(f"{path}: not an HDF5 file") from None
    try:
        fmt = f.attrs.get("format")
        fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
        if fmt != ANALYSIS_FORMAT:
            raise ParameterError(f"{path}: --kind {kind} plots 'pdes analyze -o' files, not "
                                 + (f"format {fmt!r}" if fmt else "a file without a format "
                                    "attribute"))
        if not f.attrs.get("complete"):
            raise ParameterError(f"{path}: incomplete analysis file (no 'complete' attribute)")
    except BaseException:
        f.close()
        raise
    return f


def _analysis_label(path: str, f) -> tuple[str, dict]:
    """(topology name, its non-zero numeric config parameters and router count; the report)
    of an open analysis file."""
    import json
    import tomllib
    try:
        topo = tomllib.loads(f.attrs["config_toml"])["topology"]
        report = json.loads(f.attrs["report_json"])
        routers = report["summary"]["routers"]
    except (KeyError, TypeError, ValueError):
        raise ParameterError(f"{path}: config_toml or report_json attribute missing or "
                             "malformed") from None
    params = "".join(f" {k}={v}" for k, v in topo.items() if k != "name" and
                     isinstance(v, (int, float)) and not isinstance(v, bool) and v != 0)
    return f"{topo.get('name', '?')}{params} ({routers} routers)", report


def resiliency_curve(path: str) -> dict:
    """The ``/resiliency/curve/paths`` arrays of an analysis file (:data:`CURVE_KEYS`) and a
    ``label`` (topology name, its non-zero numeric config parameters -- defaults included, strings
    and zero-valued options such as latencies left out -- and router count); a file that is not
    a complete analysis file with such a curve raises :class:`ParameterError` naming it."""
    import h5py
    with _open_analysis(path, "resiliency") as f:
        g = f.get("resiliency/curve/paths")
        if not isinstance(g, h5py.Group):
            raise ParameterError(f"{path}: no resiliency curve (write one with 'pdes analyze "
                                 "... --only resiliency --curve -o FILE')")
        out = {}
        for key in CURVE_KEYS:
            d = g.get(key)
            if not isinstance(d, h5py.Dataset) or d.ndim != 1 or d.size == 0 \
                    or d.dtype.kind not in "iuf":
                raise ParameterError(f"{path}: /resiliency/curve/paths/{key} missing or not a "
                                     "non-empty list of numbers")
            out[key] = np.asarray(d[()], dtype=np.float64)
            if not np.all(np.isfinite(out[key])) or out[key].size != out["fraction"].size:
                raise ParameterError(f"{path}: /resiliency/curve/paths/{key} not finite or not "
                                     "as long as fraction")
        out["label"] = _analysis_label(path, f)[0]
    return out


def resiliency_figure(curves: list):
    """004 Fig. 5: (a) average path length and (b) diameter, in router hops, against the
    share of failed links (%), one colour per curve of :func:`resiliency_curve`: the mean over
    the connected samples as a solid line with markers while every sample is connected, dotted
    where only some are (their share is in ``connected``), and the band from the smallest to the
    largest sample value.  The first line of each curve on each axis is the solid one."""
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for i, c in enumerate(curves):
        color = f"C{i % 10}"
        x = 100.0 * c["fraction"]
        full = int(np.count_nonzero(c["connected"] >= 1.0))
        for ax, q in zip(axes, ("avg_distance", "diameter")):
            y = c[f"{q}_mean"]
            ax.plot(x[:full], y[:full], "-o", ms=3, color=color, label=c["label"])
            if full < x.size:
                ax.plot(x[full - 1:], y[full - 1:], ":", color=color)
            ax.fill_between(x, c[f"{q}_min"], c[f"{q}_max"], color=color, alpha=0.15, lw=0)
    for ax, title in zip(axes, ("(a) average path length", "(b) diameter")):
        ax.set_title(title)
        ax.set_xlabel("failed links (%)")
        ax.set_ylabel("router hops")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("resiliency to random link failures (mean over connected samples; dotted: "
                 "some samples disconnected)", fontsize=9)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- path sets
LINK_BIN = 20
"""Width of the bins of paths per link in the path-sets figure (003 Fig. 7's bin size)."""


def path_sets_data(path: str) -> list[dict]:
    """The ``path-sets`` results of an analysis file (``pdes analyze --only path-sets -o``),
    in report order, each with ``label`` (the result's name, prefixed by the topology when
    needed by the caller) and its histograms; a file without the section raises
    :class:`ParameterError` naming it."""
    with _open_analysis(path, "path-sets") as f:
        topo, report = _analysis_label(path, f)
    ps = report.get("path-sets")
    if not isinstance(ps, dict) or not isinstance(ps.get("results"), dict):
        raise ParameterError(f"{path}: no path-sets section (write one with 'pdes analyze ... "
                             "--only path-sets -o FILE')")
    out = []
    for label, x in ps["results"].items():
        try:
            rec = {"label": label, "topology": topo, "pairs": int(x["pairs"]),
                   "avg_bin": float(x["length"]["avg_bin"]),
                   "avg": np.asarray(x["length"]["avg_histogram"], dtype=np.float64),
                   "max": np.asarray(x["length"]["max_histogram"], dtype=np.float64),
                   "links": np.asarray(x["links"]["histogram"], dtype=np.float64),
                   "disjoint": np.asarray(x["disjoint"]["histogram"], dtype=np.float64)}
        except (KeyError, TypeError, ValueError):
            raise ParameterError(f"{path}: path-sets result {label!r} malformed") from None
        out.append(rec)
    return out


def _bins(ax, width, values, **kw):
    """``values`` of bins ``width`` wide from 0 as a step line whose last bin has its right
    edge too (a step line alone ends at the last bin's left edge, so that bin, often the
    largest, was a bare vertical line): the line's y holds the values, then the last again."""
    x = np.arange(values.size + 1) * width
    ax.step(x, np.append(values, values[-1:]), where="post", **kw)


def path_sets_figure(results: list[dict]):
    """003 Figs. 6-8, one step line per path set: (a) the per-pair average and (b) longest
    path length, as shares of the pairs with a path; (c) the links crossed by a number of
    paths, in bins of :data:`LINK_BIN` paths (the line's x holds the bins' edges); (d) the
    link-disjoint paths per pair, as shares of the pairs."""
    plt = _plt()
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    (a, b), (c, d) = axes
    for i, r in enumerate(results):
        kw = {"color": f"C{i % 10}", "label": r["label"]}
        n = r["max"].sum()
        if n:
            _bins(a, r["avg_bin"], r["avg"] / n, **kw)
            _bins(b, 1, r["max"] / n, **kw)
            _bins(d, 1, r["disjoint"] / n, **kw)
        h = r["links"]
        nb = -(-h.size // LINK_BIN)
        binned = np.zeros(nb)
        np.add.at(binned, np.arange(h.size) // LINK_BIN, h)
        _bins(c, LINK_BIN, binned, **kw)
    for ax, title, xl, yl in (
            (a, "(a) average path length per pair", "router hops (bins of 1/8)", "share of pairs"),
            (b, "(b) longest path per pair", "router hops", "share of pairs"),
            (c, f"(c) paths crossing each link (bins of {LINK_BIN})", "paths", "links"),
            (d, "(d) link-disjoint paths per pair", "disjoint paths", "share of pairs")):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        ax.grid(alpha=0.3)
    a.legend(fontsize=7)
    topos = sorted({r["topology"] for r in results})
    fig.suptitle(f"path sets of {', '.join(topos)} (003 Figs. 6-8)", fontsize=10)
    fig.tight_layout()
    return fig



# --------------------------------------------------------------------------- design tables
DESIGN_FORMAT = "pdes-design"
"""The ``format`` attribute of ``pdes design -o TABLE.h5`` files."""
DESIGN_FORMAT_VERSION = 1
"""The ``format_version`` of the design tables this module reads."""
DESIGN_TEXT = ("family", "params", "diameter_source", "bisection")
"""The text columns of a design table."""
DESIGN_BOOL = ("bisection_exact",)
"""The true/false columns of a design table (int8 with -1 where not given in HDF5)."""
DESIGN_X = "network_radix"
DESIGN_Y = "routers"
DESIGN_LABELS = {"network_radix": "network radix k' (network ports per router)",
                 "radix": "router radix k (ports per router)",
                 "routers": "routers", "endpoints": "endpoints",
                 "p": "endpoints per router p", "diameter": "diameter (router hops)",
                 "links_per_endpoint": "links per endpoint",
                 "ports_per_endpoint": "router ports per endpoint",
                 "moore_ratio": "routers / Moore bound",
                 "bisection_links": "bisection (links)",
                 "router_cost_per_endpoint": "router cost per endpoint ($)",
                 "power_per_endpoint_w": "power per endpoint (W)"}
"""Axis labels of some design columns (the others are labelled by their name)."""
MOORE_DIAMETERS = (2, 3)
"""The diameters whose Moore bound the design figure draws when it plots routers against k'."""


def design_numeric() -> tuple[str, ...]:
    """The numeric columns of a design table (every column but the text and true/false ones),
    in table order."""
    from models.design import COLUMNS
    return tuple(c for c in COLUMNS if c not in DESIGN_TEXT and c not in DESIGN_BOOL)


def check_design_column(key: str, column: str) -> str:
    """``column`` if it is a numeric column of a design table, else a :class:`ParameterError`
    naming ``key`` (``--x`` or ``--y``)."""
    from models.design import COLUMNS
    numeric = design_numeric()
    if column in numeric:
        return column
    if column in COLUMNS:
        what = "text" if column in DESIGN_TEXT else "true/false"
        raise ParameterError(f"{key}: column {column} is not numeric ({what}); the axis needs "
                             f"a number (numeric columns: {', '.join(numeric)})")
    raise ParameterError(f"{key}: unknown column {column!r} of a design table (numeric "
                         f"columns: {', '.join(numeric)})")


def _is_design_csv(path: str) -> bool:
    import csv

    from models.design import COLUMNS
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh), None)
    except (OSError, UnicodeDecodeError, csv.Error):
        return False
    return header is not None and tuple(header) == COLUMNS


def is_design(path: str) -> bool:
    """Whether ``path`` is a design table: an HDF5 file whose ``format`` is
    :data:`DESIGN_FORMAT`, or a ``.csv`` file whose header line is the design columns (False
    for anything else, including a missing or unreadable file)."""
    import os

    import h5py
    if os.path.splitext(path)[1].lower() == ".csv":
        return os.path.isfile(path) and _is_design_csv(path)
    try:
        with h5py.File(path, "r") as f:
            fmt = f.attrs.get("format")
    except (OSError, ValueError):
        return False
    return (fmt.decode() if isinstance(fmt, bytes) else fmt) == DESIGN_FORMAT


def _design_hdf5(path: str) -> dict:
    import h5py

    from models.design import COLUMNS
    try:
        f = h5py.File(path, "r")
    except OSError:
        raise ParameterError(f"{path}: not an HDF5 file (nor a .csv design table)") from None
    with f:
        fmt = f.attrs.get("format")
        fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
        if fmt != DESIGN_FORMAT:
            raise ParameterError(f"{path}: --kind design plots 'pdes design -o' tables, not "
                                 + (f"format {fmt!r}" if fmt else "a file without a format "
                                    "attribute"))
        version = f.attrs.get("format_version")
        if version != DESIGN_FORMAT_VERSION:
            raise ParameterError(f"{path}: design table format_version {version!r}, this pdes "
                                 f"reads {DESIGN_FORMAT_VERSION}")
        if not f.attrs.get("complete"):
            raise ParameterError(f"{path}: incomplete design table (no 'complete' attribute)")
        g = f.get("table")
        if not isinstance(g, h5py.Group):
            raise ParameterError(f"{path}: no /table group")
        out = {}
        for c in COLUMNS:
            d = g.get(c)
            text = c in DESIGN_TEXT
            if not isinstance(d, h5py.Dataset) or d.ndim != 1 or \
                    (d.dtype.kind not in "OSU" if text else d.dtype.kind not in "iuf"):
                raise ParameterError(f"{path}: /table/{c} missing or not a list of "
                                     + ("text" if text else "numbers"))
            if text:
                out[c] = [v.decode() if isinstance(v, bytes) else str(v) for v in d[()]]
            else:
                v = np.asarray(d[()], dtype=np.float64)
                if d.dtype.kind in "iu":
                    v[v == -1] = np.nan        # -1: not given
                out[c] = v
            if len(out[c]) != len(out["family"]):
                raise ParameterError(f"{path}: /table/{c} is not as long as /table/family")
    return out


def _design_csv(path: str) -> dict:
    import csv

    from models.design import COLUMNS
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ParameterError(f"{path}: not a readable CSV file ({exc})") from None
    if not rows or tuple(rows[0]) != COLUMNS:
        raise ParameterError(f"{path}: --kind design plots 'pdes design -o' tables, and this "
                             f"CSV file's header is not the design columns ({', '.join(COLUMNS)})")
    out = {c: [] for c in COLUMNS}
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(COLUMNS):
            raise ParameterError(f"{path}: line {line} has {len(row)} cells, not {len(COLUMNS)}")
        for c, cell in zip(COLUMNS, row):
            if c in DESIGN_TEXT or c in DESIGN_BOOL:
                out[c].append(cell)
                continue
            try:
                v = float(cell) if cell != "" else np.nan      # empty: not given
            except ValueError:
                raise ParameterError(f"{path}: line {line}: {c} {cell!r} is not a number") \
                    from None
            if cell != "" and not np.isfinite(v):
                raise ParameterError(f"{path}: line {line}: {c} {cell!r} is not finite")
            out[c].append(v)
    return {c: (v if c in DESIGN_TEXT or c in DESIGN_BOOL else np.asarray(v, dtype=np.float64))
            for c, v in out.items()}


def design_data(path: str) -> dict:
    """The columns of a design table (``pdes design -o``; CSV for a ``.csv`` file, else HDF5):
    the text columns as lists of strings, the numeric ones (:func:`design_numeric`) as float
    arrays with NaN where a value is not given.  A file that is not a complete design table
    (missing, another format, a missing or mistyped column, a bad cell) raises
    :class:`ParameterError` naming it."""
    import os
    if not os.path.isfile(path):
        raise ParameterError(f"{path}: does not exist or is not a regular file")
    data = _design_csv(path) if os.path.splitext(path)[1].lower() == ".csv" \
        else _design_hdf5(path)
    if not data["family"]:
        raise ParameterError(f"{path}: the design table has no rows (nothing to plot)")
    return data


def design_series(data: dict, x: str = DESIGN_X, y: str = DESIGN_Y,
                  families: list[str] | None = None) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """[(family, xs, ys)] of a table of :func:`design_data`: one series per family (those of
    ``families`` in that order, else every family in table order), its rows with both values
    given, sorted by x (rows of equal x keep their table order).  ``x``, ``y`` and
    ``families`` are checked (:func:`check_design_column`; a family not in the table is a
    :class:`ParameterError` naming ``--families``)."""
    check_design_column("--x", x)
    check_design_column("--y", y)
    fam = np.asarray(data["family"], dtype=object)
    present = list(dict.fromkeys(data["family"]))
    if families is None:
        families = present
    for name in families:
        if name not in present:
            raise ParameterError(f"--families: {name!r} is not in the table (its families: "
                                 f"{', '.join(present)})")
    xs_all, ys_all = data[x], data[y]
    out = []
    for name in families:
        keep = (fam == name) & np.isfinite(xs_all) & np.isfinite(ys_all)
        xs, ys = xs_all[keep], ys_all[keep]
        order = np.argsort(xs, kind="stable")
        out.append((name, xs[order], ys[order]))
    return out


def moore_curves(ks) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """[(diameter, k', Moore bound)] for each of :data:`MOORE_DIAMETERS`, over every integer
    ``k'`` from the smallest to the largest of ``ks`` (:func:`models.metrics.moore_bound`)."""
    from models.metrics import moore_bound
    ks = np.asarray(ks, dtype=np.float64)
    ks = ks[np.isfinite(ks)]
    if not ks.size:
        return []
    grid = np.arange(int(ks.min()), int(ks.max()) + 1)
    return [(d, grid.astype(np.float64),
             np.array([float(moore_bound(int(k), d)) for k in grid])) for d in MOORE_DIAMETERS]


def design_figure(series, x: str = DESIGN_X, y: str = DESIGN_Y, logy: bool = False,
                  title: str = ""):
    """One line with markers per family of :func:`design_series` (labelled with the family
    and its number of points), and, when ``y`` is routers and ``x`` the network radix, the
    Moore bounds of diameter 2 and 3 (:func:`moore_curves`) as dashed gray reference lines
    (000 Fig. 5a/b); ``logy`` for a logarithmic y axis."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (name, xs, ys) in enumerate(series):
        ax.plot(xs, ys, "-o", ms=4, color=f"C{i % 10}", label=f"{name} ({xs.size})")
    if x == "network_radix" and y == "routers":
        ks = np.concatenate([s[1] for s in series]) if series else np.zeros(0)
        for j, (d, k, bound) in enumerate(moore_curves(ks)):
            ax.plot(k, bound, linestyle=("--", ":")[j % 2], color="gray", linewidth=1,
                    label=f"Moore bound, diameter {d}")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(DESIGN_LABELS.get(x, x))
    ax.set_ylabel(DESIGN_LABELS.get(y, y))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


COST_MODEL_MAX_M = 30.0
"""Default longest cable of ``--kind cost-model`` (metres)."""
COST_MODEL_MAX_RADIX = 80
"""Default largest router radix of ``--kind cost-model`` (004 Table 6 goes up to 72)."""
COST_MODEL_M_LIMIT = 100_000.0
COST_MODEL_RADIX_LIMIT = 65_536
"""The largest ``--max-m`` and ``--max-radix`` the cost-model figure draws to."""


def _affine(coeffs, var: str) -> str:
    """``a var + b`` as text, with the sign of ``b``."""
    a, b = coeffs
    return f"{a:g} {var} {'-' if b < 0 else '+'} {abs(b):g}"


def cost_model_figure(cables: str = "fdr10", cable_coeffs=None, cable_gbps=None,
                      routers: str = "fdr10", router_coeffs=None,
                      max_m: float = COST_MODEL_MAX_M, max_radix: int = COST_MODEL_MAX_RADIX):
    """The cost model of ``pdes analyze --only cost`` (004 Figs. 12a and 12b): the price of an
    electric and an optical cable in $/Gb/s against its length from 0 to ``max_m`` metres
    (left), and the price of a router against its radix from the smallest radix with a
    non-negative price to ``max_radix`` (right).  The numbers come from
    :func:`models.analysis.cost.cable_model`, :func:`~models.analysis.cost.cable_cost_per_gbps`,
    :func:`~models.analysis.cost.router_model` and :func:`~models.analysis.cost.router_prices`,
    the functions :func:`models.analysis.cost.cost` prices a network with.

    Raises
    ------
    ParameterError
        What those functions refuse; ``max_m`` not a positive finite number, ``max_radix``
        not an integer >= 1, or no radix up to it with a non-negative price.
    """
    from models.analysis.cost import (cable_cost_per_gbps, cable_model, cheapest_priced_radix,
                                      router_model, router_prices)
    if not (isinstance(max_m, (int, float)) and np.isfinite(max_m) and 0 < max_m <= COST_MODEL_M_LIMIT):
        raise ParameterError(f"--max-m: must be a positive number of metres, at most "
                             f"{COST_MODEL_M_LIMIT:g} (got {max_m})")
    if isinstance(max_radix, bool) or not isinstance(max_radix, (int, np.integer)) or \
            not 1 <= max_radix <= COST_MODEL_RADIX_LIMIT:
        raise ParameterError(f"--max-radix: must be an integer in [1, {COST_MODEL_RADIX_LIMIT}] "
                             f"(got {max_radix})")
    el, op, gbps = cable_model(cables, cable_coeffs, cable_gbps)
    ra, rb = router_model(routers, router_coeffs)
    k0 = cheapest_priced_radix((ra, rb), max_radix)
    if k0 is None:
        raise ParameterError(f"{'--router-coeffs' if router_coeffs is not None else '--max-radix'}: "
                             f"the router price {ra:g} k {'-' if rb < 0 else '+'} {abs(rb):g} is "
                             "negative for every radix up "
                             f"to {max_radix} (--max-radix)")
    x = np.linspace(0.0, float(max_m), 61)
    k = np.arange(k0, int(max_radix) + 1)
    plt = _plt()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for name, coeffs, color in (("electric", el, "C0"), ("optical", op, "C1")):
        ax1.plot(x, cable_cost_per_gbps(x, coeffs), color=color,
                 label=f"{name}: {_affine(coeffs, 'x')}")
    ax1.set_xlabel("cable length x (m)")
    ax1.set_ylabel(f"cable price ($/Gb/s; x {gbps:g} Gb/s per cable)")
    ax1.set_title(f"(a) cables: {cables if cable_coeffs is None else 'custom'}", fontsize=10)
    ax1.grid(True, alpha=0.3)
    ax1.legend(fontsize=8)
    ax2.plot(k, router_prices(k, (ra, rb)), "-", color="C2", label=_affine((ra, rb), "k"))
    ax2.set_xlabel("router radix k (ports)")
    ax2.set_ylabel("router price ($)")
    ax2.set_title(f"(b) routers: {routers if router_coeffs is None else 'custom'}", fontsize=10)
    ax2.grid(True, alpha=0.3)
    ax2.legend(fontsize=8)
    fig.tight_layout()
    return fig
