"""``python -m pdes show FILE.h5 [--csv] [--table NAME]``.

Prints a run file's summary (one ``key value`` line each; then, for several jobs, one row
per job) or a study file's table (one row per point) in the terminal, or one of them as
CSV with ``--csv``.
"""
from __future__ import annotations

import sys

from models.core.errors import ParameterError

HELP = "print a run's summary or a study's table (terminal table or CSV)"
RUN_TABLES = ("summary", "jobs")
STUDY_TABLES = ("table", "table_mean", "saturation")


def add_arguments(p):
    p.add_argument("file", help="HDF5 file written by 'pdes run' or 'pdes sweep'")
    p.add_argument("--csv", action="store_true", help="CSV on stdout instead of a terminal table")
    p.add_argument("--table", choices=RUN_TABLES + STUDY_TABLES, default=None,
                   help="the table to print: a study's table (default), table_mean or saturation "
                        "(default: table, then saturation if present; with --csv only table); a "
                        "run's summary (default) or jobs (default: summary, then jobs if the run "
                        "has several; with --csv only summary)")
    p.add_argument("--wide", action="store_true",
                   help="every column in the terminal (CSV always has every column)")


def main(args) -> int:
    from pdes.analysis_study import is_analysis_study, read, show_table
    from pdes.results import open_results
    if is_analysis_study(args.file):       # pdes sweep --analyze
        if args.table:
            raise ParameterError("--table: an analysis study has one table")
        print(show_table(read(args.file), csv=args.csv))
        return 0
    try:
        with open_results(args.file) as res:
            if res.kind == "run":
                if args.table in STUDY_TABLES:
                    raise ParameterError(f"--table: a run file has no {args.table}; its tables "
                                         f"are {' and '.join(RUN_TABLES)}")
                if args.table == "jobs" and not res.has("jobs"):
                    raise ParameterError(f"--table: {args.file} has no jobs (a run of one "
                                         "workload)")
                if args.table in (None, "summary"):
                    _show_run(res.summary(), args.csv)
                if res.has("jobs") and (args.table == "jobs" or (args.table is None
                                                                 and not args.csv)):
                    _show_jobs(res.group()["jobs"], args.csv, after=args.table is None)
            else:
                if args.table in RUN_TABLES:
                    raise ParameterError(f"--table: a study file has no {args.table}; its "
                                         f"tables are {', '.join(STUDY_TABLES)}")
                names = [args.table] if args.table else ["table"] + (
                    ["saturation"] if res.has("saturation") and not args.csv else [])
                for i, name in enumerate(names):
                    if not res.has(name):
                        raise ParameterError(f"--table: {args.file} has no {name}")
                    df = res.frame(name)
                    if not args.csv and not args.wide:
                        df = _compact(df, name, res.varied_keys, res.finite)
                    if args.csv:
                        df.to_csv(sys.stdout, index=False)
                    else:
                        if len(names) > 1:
                            print(("" if i == 0 else "\n") + f"{name}:")
                        print(_terminal(df))
                if not args.csv and not res.finished:
                    n = len(res.frame('table'))
                    print(f"(study not finished: {n} point{'s' * (n != 1)} so far)")
    except BrokenPipeError:
        return 0
    return 0


def _show_run(summary: dict, csv: bool) -> None:
    if csv:
        import csv as C
        w = C.writer(sys.stdout)
        w.writerow(["key", "value"])
        for k, v in summary.items():
            w.writerow([k, v])
        return
    width = max(len(k) for k in summary)
    for k, v in summary.items():
        print(f"{k:<{width}}  {_fmt(v)}")


def _show_jobs(g, csv: bool, after: bool) -> None:
    """Several jobs: one row per job (``/jobs/<name>``), in the config's order; ``after`` the
    summary, under a heading."""
    import json

    import pandas as pd

    from pdes.results import plain
    names = json.loads(g.attrs["names"])
    df = pd.DataFrame([{"job": n, **{k: plain(g[n][k][()]) for k in g[n]}} for n in names])
    cols = ["job", "processes", "start_cycle", "cycles", "bandwidth_bytes_per_cycle_per_process",
            "message_latency_mean", "message_latency_p99", "alone_cycles", "slowdown"]
    if csv:
        df.to_csv(sys.stdout, index=False)
        return
    if after:
        print("\njobs:")
    print(_terminal(df[[c for c in cols if c in df.columns]]))


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4f}" if abs(v) < 1e6 else f"{v:.6g}"
    return str(v)


COMPACT = {
    "table": ("seed", "load", "accepted", "latency_mean", "latency_p99", "hops_mean", "saturated"),
    "table_mean": ("load", "n", "accepted", "accepted_ci95", "latency_mean", "latency_mean_ci95",
                   "saturated"),
    "saturation": ("seed", "saturation_load", "lo", "hi", "accepted_hi", "status"),
}
COMPACT_FINITE = {
    # a study of finite workloads: no load axis, the time to completion instead
    "table": ("seed", "completion_cycles", "effective_throughput", "message_latency_mean",
              "message_latency_p99", "finish_mean", "finish_max"),
    "table_mean": ("n", "completion_cycles", "completion_cycles_ci95", "effective_throughput",
                   "effective_throughput_ci95"),
}
SCHEDULE_ONLY = ("finish_mean", "finish_max")
"""Columns only a schedule fills (a finite exchange's points hold -1 or NaN)."""


def _compact(df, name, keys, finite=False):
    """The columns a person reads first: the varied keys and the main metrics (of a study of
    finite workloads: completion time, throughput, message latency, the processes' finish)."""
    cols = [k for k in keys if k in df.columns]
    if finite and name in COMPACT_FINITE:
        if df["load"].nunique() > 1:       # written before finite studies had one load
            cols.append("load")
        cols += [c for c in COMPACT_FINITE[name] if c in df.columns and not (
            c in SCHEDULE_ONLY and ((df[c] < 0) | df[c].isna()).all())]
    else:
        cols += [c for c in COMPACT[name] if c in df.columns]
    if "seed" in cols and df["seed"].nunique() == 1:
        cols.remove("seed")
    return df[cols]


def _terminal(df) -> str:
    import pandas as pd
    with pd.option_context("display.max_rows", None, "display.max_columns", None,
                           "display.width", 250, "display.max_colwidth", 60):
        return df.to_string(index=False, float_format=lambda x: f"{x:.6g}")
