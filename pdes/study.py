"""Studies: many runs of one config, as one unit of work (``python -m pdes sweep``).

A study is a base config, a list of varied keys with their values (the points
are the cartesian product: one *series* per combination), a list of offered
loads, a number of replications (seeds) and optionally a saturation search.
Every point is an ordinary run of a resolved config and gives exactly the
results ``pdes run`` gives for that config, on any rank count.  When every
series runs a finite workload (a pattern registered ``finite=True``: it runs
until its messages or operations are done and reads no load), the study has
one point per series and replication, at the configured ``traffic.load``;
loads and the saturation search are refused.

One process per rank runs the whole study.  Topology, distances and routing
tables are built once per distinct network and routing (:func:`pdes.build.prepare`
with ``reuse``) and the compiled kernels stay loaded.  Under MPI the world can
be split into ``concurrent`` groups; each group takes tasks (a point, or the
bisection of one series) from a queue that world rank 0 serves, and world
rank 0 writes the study file.

The file (schema in ``docs/studies.md``) is rewritten to a temporary name and
renamed after finished points, at most every :data:`COMMIT_EVERY_S` seconds, at the end
and on the way out of a failure or signal, so a crash leaves a valid file with the points
finished before it; ``resume`` runs only the missing points.
"""
from __future__ import annotations

import copy
import functools
import itertools
import json
import math
import os
import queue
import re
import sys
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from models.core.errors import ParameterError
from pdes import config as C
from pdes import provenance as P
from pdes.config import INJECTION_KEYS
from pdes.results import STUDY_FORMAT as FORMAT
from pdes.results import STUDY_VERSION as FORMAT_VERSION
from pdes.results import check_study, plain

DEFAULT_LOADS = "0.1:1.0:0.1"
DEFAULT_RESOLUTION = 0.01
LOAD_DIGITS = 6          # loads are rounded to this many decimals (they name the points)
CRITERION = ("saturated when the measured packets are not all delivered within measure.drain_cycles "
             "after the window, when the source queues grow over the window by more than "
             "measure.backlog_tolerance ({btol:g}) of the flits offered (least-squares trend), when "
             "the flits in the network and source queues grow by more than that and three standard "
             "errors of the trend, or when the accepted load is below the offered load by more than "
             "measure.saturation_tolerance ({tol:g})")
SWEEP_KEYS = ("vary", "loads", "saturation", "resolution", "seeds")


# --------------------------------------------------------------------------- the study's spec
@dataclass
class Spec:
    """What a study is: everything that decides its points and their results."""

    raw: dict                     # the config file's tables, without [sweep]
    sets: list                    # --set overrides
    vary: list                    # [(key, [values...]), ...] in the order given
    loads: list                   # offered loads, ascending
    saturation: bool = False
    resolution: float = DEFAULT_RESOLUTION
    seeds: int = 1
    base: dict = field(default_factory=dict)   # resolved base config
    finite: bool = False          # every series a finite workload: one point per series

    def identity(self) -> dict:
        """What must be equal for a file to hold this study (``--resume``)."""
        base = copy.deepcopy(self.base)
        base["output"]["file"] = ""
        return {"base_config": C.to_toml(base), "vary": [[k, v] for k, v in self.vary],
                "loads": self.loads, "seeds": self.seeds, "saturation": self.saturation,
                "resolution": self.resolution}

    # ---- points
    @property
    def series(self) -> list[dict]:
        keys = [k for k, _ in self.vary]
        return [dict(zip(keys, combo)) for combo in itertools.product(*[v for _, v in self.vary])]

    def seed(self, series: int, rep: int) -> int:
        return int(self.config_of(series, None)["measure"]["seed"]) + rep

    def config_of(self, series: int, load: float | None, rep: int = 0) -> dict:
        """The resolved config of one point (``load=None``: the series' base)."""
        raw = C.apply_overrides(self.raw, self.sets)
        for key, value in self.series[series].items():
            C.set_key(raw, key, copy.deepcopy(value), f"--vary {key}")
        if load is not None:
            raw.setdefault("traffic", {})["load"] = load
        cfg = C.resolve(raw)
        cfg["output"]["file"] = ""
        if rep:
            cfg["measure"]["seed"] = int(cfg["measure"]["seed"]) + rep
        return cfg


def series_files(spec: Spec) -> list[dict]:
    """Per series, ``{label: path}`` of the files its runs read (:func:`pdes.provenance.input_files`;
    loads and replications read the same files)."""
    return [P.input_files(spec.config_of(s, spec.loads[0])) for s in range(len(spec.series))]


def point_name(series: int, rep: int, load: float) -> str:
    """The group name of a point: ``s<series>-r<replication>-L<load>``."""
    return f"s{series:03d}-r{rep:02d}-L{load:.{LOAD_DIGITS}f}"


def parse_loads(text, key="--loads") -> list[float]:
    """``a:b:step`` (b included) or ``v1,v2,...`` or a list of numbers -> sorted distinct loads."""
    if isinstance(text, (list, tuple)):
        vals = list(text)
    elif isinstance(text, str) and ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise ParameterError(f"{key}: expected start:stop:step, e.g. 0.1:0.9:0.1 (got {text!r})")
        try:
            a, b, st = (float(x) for x in parts)
        except ValueError:
            raise ParameterError(f"{key}: start:stop:step must be numbers (got {text!r})") from None
        if not all(math.isfinite(x) for x in (a, b, st)) or st <= 0 or b < a:
            raise ParameterError(f"{key}: needs finite start <= stop and step > 0 (got {text!r})")
        n = int(math.floor((b - a) / st + 1e-9)) + 1
        if n > 10000:
            raise ParameterError(f"{key}: {n} loads is too many (at most 10000)")
        vals = [a + i * st for i in range(n)]
    elif isinstance(text, str):
        if any(not x.strip() for x in text.split(",")):
            raise ParameterError(f"{key}: an empty item in {text!r} (numbers separated by "
                                 "commas)")
        try:
            vals = [float(x) for x in text.split(",")]
        except ValueError:
            raise ParameterError(f"{key}: expected numbers separated by commas (got {text!r})") from None
    else:
        raise ParameterError(f"{key}: expected start:stop:step or a list of loads")
    out = []
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ParameterError(f"{key}: loads must be finite numbers (got {v!r})")
        v = round(float(v), LOAD_DIGITS)
        if not 0.0 < v <= 1.0:
            raise ParameterError(f"{key}: every load must be in (0, 1] flits/cycle/endpoint (got {v:g})")
        out.append(v)
    if not out:
        raise ParameterError(f"{key}: no load given")
    return sorted(set(out))


def parse_vary(item: str) -> tuple[str, list]:
    """``KEY=V1,V2,...`` -> (key, values); values parsed as TOML (``[4,4],[8,8]`` gives lists)."""
    import tomllib
    if "=" not in item:
        raise ParameterError(f"--vary {item}: expected section.key=value1,value2,...")
    key, text = (x.strip() for x in item.split("=", 1))
    try:
        values = tomllib.loads(f"v = [{text}]")["v"]
    except tomllib.TOMLDecodeError:
        values = [C.parse_value(x.strip()) for x in text.split(",")]
    return key, values


def merged_vary(file_vary, vary_args) -> dict:
    """The varied keys and their values: ``[sweep] vary`` of the config file, then each
    ``--vary KEY=V1,V2`` (which replaces the file's values of its key)."""
    vary: dict = {}
    if not isinstance(file_vary, dict):
        raise ParameterError('sweep.vary: expected a table such as {"routing.algorithm" = ["min", "ugal_l"]}')
    for key, values in file_vary.items():
        if not isinstance(values, list):
            raise ParameterError(f"sweep.vary.{key}: expected a list of values")
        vary[key] = values
    given = set()
    for item in vary_args or []:
        key, values = parse_vary(item)
        if key in given:
            raise ParameterError(f"--vary {key}: given twice")
        given.add(key)
        vary[key] = values
    return vary


def _same_number(v):
    """``v`` with a float that is a whole number as that integer (5.0 and 5 are one value of
    a varied key), in lists too."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, list):
        return [_same_number(x) for x in v]
    return v


def make_spec(raw: dict, sets: list, vary_args: list, loads_arg, saturation: bool | None,
              resolution: float | None, seeds: int | None) -> Spec:
    """Check and assemble a study from a config file's tables and the command line."""
    raw = copy.deepcopy(raw)
    if isinstance(raw.get("measure", {}), dict) and "on_deadlock" not in raw.get("measure", {}):
        # a point that deadlocks is a saturated point of the study, not the end of it
        raw.setdefault("measure", {})["on_deadlock"] = "saturated"
    sweep = raw.pop("sweep", {})
    if not isinstance(sweep, dict):
        raise ParameterError("sweep: expected a [sweep] table")
    for key in sweep:
        if key not in SWEEP_KEYS:
            raise ParameterError(f"sweep.{key}: unknown key (known: {', '.join(SWEEP_KEYS)})")
    vary = merged_vary(sweep.get("vary", {}), vary_args)
    for key, values in vary.items():
        if not (key.count(".") == 1 and all(key.split("."))) and not re.fullmatch(r"jobs\.\d+\.\w+", key):
            raise ParameterError(f"--vary {key}: key must be section.key (e.g. routing.algorithm) "
                                 "or jobs.N.key")
        if key == "traffic.load":
            raise ParameterError("--vary traffic.load: give the offered loads with --loads (or sweep.loads)")
        if key.split(".")[0] in ("output", "run"):
            raise ParameterError(f"--vary {key}: [{key.split('.')[0]}] keys do not change results")
        if not values:
            raise ParameterError(f"--vary {key}: no values")
        if len({json.dumps(_same_number(v), sort_keys=True) for v in values}) != len(values):
            raise ParameterError(f"--vary {key}: a value is given twice")
    sat = bool(sweep.get("saturation", False)) if saturation is None else saturation
    if not isinstance(sweep.get("saturation", False), bool):
        raise ParameterError("sweep.saturation: expected true/false")
    if not sat and (resolution is not None or "resolution" in sweep):
        raise ParameterError(("--resolution" if resolution is not None else "sweep.resolution")
                             + ": the precision of a saturation search; give it with "
                             "--saturation (or sweep.saturation = true)")
    base = C.resolve(raw, list(sets or []))
    have = len(base.get("jobs") or [])
    for key in vary:
        if key.startswith("jobs.") and int(key.split(".")[1]) >= have:
            raise ParameterError(
                f"--vary {key}: the config has no job {key.split('.')[1]} ("
                + (f"its [[jobs]] are numbered 0 to {have - 1}" if have else "it has no [[jobs]]")
                + "); vary the keys of the jobs it gives")
    finite = finite_patterns(base, vary)
    if finite:
        given = ("--loads" if loads_arg is not None else "sweep.loads" if "loads" in sweep else
                 "--saturation" if saturation else "sweep.saturation" if sat else None)
        if given:
            raise ParameterError(
                f"{given}: " + ("[[jobs]] are finite workloads" if finite == ["jobs"] else
                                f"traffic.pattern {finite[0]!r} is a finite workload")
                + ": it runs until its "
                "messages or operations are done and does not read the offered load, so its "
                "study has one point per series and no "
                + ("saturation search" if "saturation" in given else "loads")
                + ("; vary the jobs' keys (jobs.N.key) instead" if finite == ["jobs"] else
                   f"; vary its own keys instead ('pdes info {finite[0]}' lists them)"))
        loads = [round(float(base["traffic"]["load"]), LOAD_DIGITS)]
    else:
        loads = parse_loads(loads_arg if loads_arg is not None else sweep.get("loads", DEFAULT_LOADS),
                            "--loads" if loads_arg is not None else "sweep.loads")
    res = sweep.get("resolution", DEFAULT_RESOLUTION) if resolution is None else resolution
    if isinstance(res, bool) or not isinstance(res, (int, float)) or not math.isfinite(res) \
            or not 1e-4 <= res <= 0.5:
        key = "--resolution" if resolution is not None else "sweep.resolution"
        raise ParameterError(f"{key}: must be a number in [0.0001, 0.5] (got {res!r})")
    n = sweep.get("seeds", 1) if seeds is None else seeds
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1000:
        key = "--seeds" if seeds is not None else "sweep.seeds"
        raise ParameterError(f"{key}: must be an integer in 1..1000 (got {n!r})")
    spec = Spec(raw=raw, sets=list(sets or []), vary=list(vary.items()), loads=loads,
                saturation=sat, resolution=float(res), seeds=n, base=base, finite=bool(finite))
    if len(spec.series) * len(loads) * n > 100000:
        raise ParameterError("--vary/--loads/--seeds: more than 100000 points in one study")
    # every point's config must resolve (unknown keys, wrong types) before any work
    for s in range(len(spec.series)):
        spec.config_of(s, loads[0])
    return spec


def finite_patterns(base: dict, vary: dict) -> list[str]:
    """The finite workloads (:func:`models.traffic.is_finite_pattern`) the study's series run,
    in the order given; empty when every series runs a load-driven pattern.  A study that
    mixes both is refused: a finite workload has no load axis."""
    from models.traffic import is_finite_pattern
    if base.get("jobs"):        # [[jobs]]: schedules, finite by construction (models.jobs)
        return ["jobs"]
    patterns = vary.get("traffic.pattern", [base["traffic"]["pattern"]])
    if not all(isinstance(p, str) for p in patterns):
        return []          # the series' own config check names the bad value
    finite = [p for p in patterns if is_finite_pattern(p)]
    if finite and len(finite) < len(patterns):
        driven = [p for p in patterns if p not in finite]
        raise ParameterError(
            f"--vary traffic.pattern: {', '.join(finite)} "
            f"{'is a finite workload' if len(finite) == 1 else 'are finite workloads'} (one point "
            f"per series, no load axis) and {', '.join(driven)} "
            f"{'is' if len(driven) == 1 else 'are'} load-driven (a point per offered load): "
            "one study cannot hold both; sweep them in two studies")
    return finite


# --------------------------------------------------------------------------- saturation search
def bisection(spec: Spec, series: int, rep: int, summary_of) -> dict:
    """Saturation throughput of one series by bisection on the offered load.

    ``summary_of(load)`` returns a point's summary (running it if needed).  The
    bracket starts at the study's loads: the lowest saturated load and the
    highest unsaturated one below it; it is halved until narrower than the
    resolution.  The result names the offered load found (the bracket's
    unsaturated end), the bracket, and a status for series that have no such
    number (saturated at the lowest load, or never saturated).
    """
    flags = {L: bool(summary_of(L)["saturated"]) for L in spec.loads}
    sat = [L for L in spec.loads if flags[L]]
    out = {"series": series, "rep": rep, "seed": spec.seed(series, rep), "load": math.nan,
           "lo": math.nan, "hi": math.nan, "accepted_lo": math.nan, "accepted_hi": math.nan}
    if not sat:
        top = spec.loads[-1]
        out.update(status=f"not saturated up to load {top:g}", lo=top,
                   accepted_lo=summary_of(top)["accepted_load"])
        return out
    hi = sat[0]
    below = [L for L in spec.loads if L < hi]
    if not below:
        out.update(status=f"saturated at the lowest load {hi:g}", hi=hi,
                   accepted_hi=summary_of(hi)["accepted_load"])
        return out
    lo = below[-1]
    while hi - lo > spec.resolution + 1e-12:
        mid = round((lo + hi) / 2, LOAD_DIGITS)
        if mid <= lo or mid >= hi:
            break
        if summary_of(mid)["saturated"]:
            hi = mid
        else:
            lo = mid
    out.update(status="found", load=lo, lo=lo, hi=hi, accepted_lo=summary_of(lo)["accepted_load"],
               accepted_hi=summary_of(hi)["accepted_load"])
    return out


# --------------------------------------------------------------------------- running points
SUMMARY_COLUMNS = (
    ("offered_load_config", "offered_config", np.float64),
    ("offered_load", "offered", np.float64),
    ("accepted_load", "accepted", np.float64),
    ("packet_latency_mean", "latency_mean", np.float64),
    ("packet_latency_p50", "latency_p50", np.int64),
    ("packet_latency_p99", "latency_p99", np.int64),
    ("packet_latency_max", "latency_max", np.int64),
    ("network_latency_mean", "network_latency_mean", np.float64),
    ("hops_mean", "hops_mean", np.float64),
    ("measured_packets", "measured_packets", np.int64),
    ("saturated", "saturated", np.bool_),
)
KEEP = tuple(k for k, _, _ in SUMMARY_COLUMNS) + ("saturated_reason",)
FINITE_COLUMNS = (("completion_cycles", np.int64, -1), ("effective_throughput", np.float64, math.nan),
                  ("message_latency_mean", np.float64, math.nan),
                  ("message_latency_p99", np.int64, -1), ("message_latency_max", np.int64, -1),
                  ("finish_mean", np.float64, math.nan), ("finish_max", np.int64, -1))
"""Finite workloads only (other points hold the fill value): completion time, throughput and
message latencies; ``finish_*`` (when the processes finished) of schedules only."""
FINITE_MEANS = ("completion_cycles", "effective_throughput")
"""The columns ``/table_mean`` of a finite study averages over the replications."""


def point_summary(summary) -> dict:
    """What the study keeps of a point's summary (``summary``: a dict or an HDF5 group)."""
    out = {k: plain(summary[k][()]) if hasattr(summary, "visititems") else summary[k] for k in KEEP}
    for k, _, fill in FINITE_COLUMNS:
        if k in summary:
            out[k] = plain(summary[k][()]) if hasattr(summary, "visititems") else summary[k]
        else:
            out[k] = fill           # a load-driven run has no completion time
    return out


class Runner:
    """Runs points on one group of ranks, keeping what the points share."""

    def __init__(self, spec: Spec, comm, version: str, world_rank: int = 0,
                 records: list | None = None):
        self.spec = spec
        self.records = records            # per series: its input files' record (pdes.provenance)
        self.world_rank = world_rank
        self.comm = comm                   # the group's communicator (None: this process)
        self.size = 1 if comm is None else comm.Get_size()
        self.version = version
        self.preps: dict = {}

    @staticmethod
    def prep_key(cfg: dict) -> str:
        """Every key a prepared network depends on: all sections but [output] and [run], the
        traffic without the keys set per run, and of [measure] the seed."""
        key = {k: v for k, v in cfg.items() if k not in ("output", "run", "measure")}
        t = key["traffic"] = dict(cfg["traffic"])
        for name in ("load",) + INJECTION_KEYS:    # set per run, not in the prepared network
            t.pop(name)
        key["seed"] = cfg["measure"]["seed"]
        return json.dumps(key, sort_keys=True)

    def prepared(self, cfg: dict):
        """The prepared network of ``cfg``, built once per distinct network, routing and traffic."""
        from pdes.build import prepare
        key = self.prep_key(cfg)
        prep = self.preps.get(key)
        if prep is None:
            from pdes.build import same_network
            reuse = next((p for p in self.preps.values() if same_network(p.cfg, cfg)), None)
            prep = prepare(cfg, self.comm if self.size > 1 else None, reuse=reuse)
            self.preps[key] = prep
        from pdes.build import with_config
        return with_config(prep, cfg)

    def check_all(self, loads_first: float) -> None:
        """Prepare every series once (validation against the built network, memory estimate)
        before any run."""
        from pdes.sizing import check_run_memory
        node = 1
        if self.comm is not None:
            from mpi4py import MPI
            node = self.comm.Split_type(MPI.COMM_TYPE_SHARED).Get_size()
        import partition as PT
        for s in range(len(self.spec.series)):
            for rep in range(self.spec.seeds):
                prep = self.prepared(self.spec.config_of(s, loads_first, rep))
                run = prep.cfg["run"]
                # the partition simulate will take: refused here, not in the group's first point
                PT.assign(prep.topo, prep.link_latency, self.size, run["partition"],
                          seed=prep.cfg["measure"]["seed"], max_imbalance=run["max_imbalance"])
                check_run_memory(prep, self.size, node)

    def run(self, series: int, rep: int, load: float, poll=None, leader: bool = False):
        """Run one point; returns (summary dict, point record for the file on the leader, else None)."""
        from pdes.engine import simulate
        from pdes.output import run_image, write_run
        cfg = self.spec.config_of(series, load, rep)
        prep = self.prepared(cfg)
        if self.records is not None:
            prep.provenance = P.attrs(self.records[series])
        t0 = time.perf_counter()
        res = simulate(cfg, self.comm if self.size > 1 else None, progress=poll, prep=prep)
        wall = time.perf_counter() - t0
        summary = point_summary(res["summary"])
        if not leader:
            return summary, None
        rec = {"name": point_name(series, rep, load), "series": series, "rep": rep,
               "seed": int(cfg["measure"]["seed"]), "load": load, "summary": summary,
               "wall_s": wall, "world_rank": self.world_rank}
        args = dict(nranks=self.size, partition=res["partition"], version=self.version)
        if self.world_rank == 0:     # the file's writer: the results go into the file as they are
            rec["write"] = lambda g, shared=None: write_run(g, res, C.to_toml(cfg), shared=shared, **args)
        else:                        # sent to the writer as an HDF5 image
            rec["image"] = run_image(res, C.to_toml(cfg), **args)
        return summary, rec


# --------------------------------------------------------------------------- the study file
REASON_WIDTH = 128   # bytes of a saturation reason in /table (the whole text is in the point)
COMMIT_EVERY_S = 2.0
"""Seconds at least between two writes of the study file while points finish (the first point
and the end are written at once): a commit writes the whole file, so committing after every
point of a study of short points would cost more than the points."""
COMMIT_SHARE = 10
"""Commits are also at least this many times their own duration apart (at most a tenth of the
wall time goes to rewriting a large study file)."""
BACKGROUND_WRITES = None
"""Whether finished points are written into the file image on a thread of their own while the
next point runs (:class:`PointWriter`): ``None`` decides (a study in one process that may run
on more than one CPU), ``True`` or ``False`` force it."""
WRITES_AHEAD = 2
"""Finished points at most waiting for the writer thread (then the next one waits for it)."""
SWITCH_INTERVAL_S = 0.001
"""Python's thread switch interval while the writer thread runs: the longest the study's own
thread waits for the interpreter when a window of the kernel returns (5 ms by default)."""


def background_writes(world_size: int) -> bool:
    """Whether a study on ``world_size`` ranks writes its points on a thread of its own
    (:data:`BACKGROUND_WRITES`): by default in one process allowed more than one CPU, where
    the writes then take no time from the kernels (under MPI rank 0's cores run kernels)."""
    if BACKGROUND_WRITES is not None:
        return bool(BACKGROUND_WRITES)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:        # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return world_size == 1 and cpus > 1


class PointWriter:
    """Writes into the study file on a thread of its own, in order, while the study's thread
    runs the next point (its kernels release the interpreter): the finished points into the
    file's image, and the commits (tables, then the image to disk).  HDF5 takes some hundred
    microseconds per object, and a point of a small network writes about 60 datasets and 30
    attributes: 15 to 25 ms, against a few hundred ms of kernel; a commit rewrites the whole
    image and waits for the disk.  A failure is raised in the study's thread at its next
    :meth:`put` or :meth:`wait`; nothing queued after it is written."""

    def __init__(self):
        self._jobs: queue.Queue = queue.Queue(maxsize=WRITES_AHEAD)
        self.error: BaseException | None = None
        self._interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self._interval, SWITCH_INTERVAL_S))
        self._thread = threading.Thread(target=self._loop, name="pdes-study-writer", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                if job is None:
                    return
                if self.error is None:
                    job()
            except BaseException as exc:  # noqa: BLE001 - raised in the study's thread
                self.error = exc
            finally:
                self._jobs.task_done()

    def put(self, job) -> None:
        """Queue ``job()`` (waits while :data:`WRITES_AHEAD` are queued)."""
        self.check()
        self._jobs.put(job)

    def wait(self) -> None:
        """Wait until every queued job is done; raise the writer's failure."""
        self._jobs.join()
        self.check()

    def check(self) -> None:
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        """Let the queued jobs run, end the thread, restore the switch interval."""
        if self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join()
        sys.setswitchinterval(self._interval)


class StudyFile:
    """The study's HDF5 file, written by one process (world rank 0).

    The file is kept as an HDF5 image in memory; every commit writes that image
    to ``<path>.tmp-<pid>`` and renames it over ``path``, so the file on disk is
    always whole and holds every point committed so far.  A commit costs one
    sequential write of the file, not a copy of every point through HDF5.
    """

    def __init__(self, path: str, spec: Spec, version: str, say=None, records: list | None = None,
                 allow_changed_inputs: bool = False, background: bool = False):
        import io

        import h5py
        self.path = path
        self.records = records or [[] for _ in spec.series]   # per series (pdes.provenance)
        self.allow_changed_inputs = allow_changed_inputs
        self.changed = [] if allow_changed_inputs else None   # accepted changes of the inputs
        self.spec = spec
        self.version = version
        self.say = say
        self.rows: dict = {}          # point name -> row (summary and keys)
        self.dirty = False
        self.adding = False           # inside add(): the image may hold half a point
        self.t_commit = None          # end of the last commit (None: none yet)
        self.commit_s = 0.0           # how long the last commit took
        self.saturation: list = []
        self.t0 = self.t_first = time.perf_counter()
        self.done_here = 0
        self.expected = 0
        self.buf = io.BytesIO()
        self.f = h5py.File(self.buf, "w")
        self.f.create_group("points")
        from pdes.output import Shared
        self.shared = Shared()        # what later points link to instead of writing again
        # with ``background``, the points' groups are written on a thread of their own, started
        # with the first point (a study refused before it starts none)
        self.background = background
        self.writer: PointWriter | None = None

    # ---- reading an existing study (resume)
    def load_existing(self) -> None:
        import io

        import h5py
        try:
            with open(self.path, "rb") as fh:
                data = fh.read()
            buf = io.BytesIO(data)
            f = h5py.File(buf, "r+")
        except OSError as exc:
            raise ParameterError(f"--resume: cannot read {self.path} as a study ({exc})") from None
        try:
            try:
                check_study(f, self.path, points=KEEP)
            except ParameterError as exc:
                raise ParameterError(f"--resume: {exc}") from None
            theirs = json.loads(f.attrs["study"])
            ours = json.loads(json.dumps(self.spec.identity()))
            diff = [k for k in ours if theirs.get(k) != ours[k]]
            if diff:
                raise ParameterError(
                    f"--resume: {self.path} holds a different study ({', '.join(diff)} differ); "
                    "give the same config, --set, --vary, --loads, --seeds and --saturation, "
                    "or write a new file")
            self._compare_inputs(f.attrs)
            rows = {}
            for name in f["points"]:
                g = f["points"][name]
                summary = point_summary(g["summary"])
                rows[name] = {"name": name, "series": int(g.attrs["study_series"]),
                              "rep": int(g.attrs["study_rep"]), "seed": int(g.attrs["seed"]),
                              "load": float(g.attrs["study_load"]), "summary": summary,
                              "wall_s": float(g.attrs["study_wall_s"])}
        except (KeyError, ValueError) as exc:
            f.close()
            if isinstance(exc, ParameterError):
                raise
            raise ParameterError(f"--resume: cannot read {self.path} as a study ({exc})") from None
        self.f.close()
        self.f, self.buf, self.rows = f, buf, rows
        from pdes.output import Shared
        self.shared = Shared()

    def _compare_inputs(self, attrs) -> None:
        """Refuse to resume a study whose input files changed since it was written (unless
        allowed: the changes are then recorded, with those accepted before)."""
        old = P.stored(attrs, f"--resume: {self.path}")
        if old is not None and len(old) != len(self.records):
            raise ParameterError(f"--resume: {self.path}: attribute {P.ATTR} does not hold one "
                                 "record per series (damaged file)")
        found, seen = [], set()
        for s, rec in enumerate(self.records):
            for c in P.changes(None if old is None else old[s], rec, at="resume"):
                if (c["key"], c["path"]) not in seen:
                    seen.add((c["key"], c["path"]))
                    found.append(c)
        if not self.allow_changed_inputs:
            P.refuse(found, "--resume", "the study was written")
        if self.allow_changed_inputs or P.CHANGED_ATTR in attrs:
            self.changed = P.accepted(attrs) + found

    def summaries(self) -> dict:
        return {name: row["summary"] for name, row in self.rows.items()}

    # ---- writing
    def add(self, rec: dict) -> None:
        """Put a finished point into the file image (written out at the next commit): at once,
        or queued for the writer thread."""
        if self.background and self.writer is None:
            self.writer = PointWriter()
        if self.writer is not None:
            self.writer.put(functools.partial(self._write_point, rec))
        else:
            self._write_point(rec)
        self.rows[rec["name"]] = {k: v for k, v in rec.items() if k not in ("image", "write")}
        self.dirty = True
        self.done_here += 1
        if self.say:
            self.say(self._progress_line(self.rows[rec["name"]]))

    def _write_point(self, rec) -> None:
        self.adding = True
        self._add_group(rec)
        self.adding = False

    def _add_group(self, rec) -> None:
        import io

        import h5py
        pts = self.f["points"]
        if rec["name"] in pts:        # the same point again (cannot happen in one study)
            raise RuntimeError(f"point {rec['name']} written twice")
        g = pts.create_group(rec["name"])
        if "write" in rec:
            rec["write"](g, self.shared)
        else:
            with h5py.File(io.BytesIO(rec["image"]), "r") as src:
                for k, v in src.attrs.items():
                    g.attrs[k] = v
                for k in src:
                    src.copy(src[k], g, name=k)
        g.attrs["study_series"] = rec["series"]
        g.attrs["study_rep"] = rec["rep"]
        g.attrs["study_load"] = rec["load"]
        g.attrs["study_wall_s"] = rec["wall_s"]
        g["run"].attrs["study_world_rank"] = rec.get("world_rank", 0)

    def _progress_line(self, row) -> str:
        keys = self.spec.series[row["series"]]
        s = row["summary"]
        kv = "  ".join(f"{k}={_fmt(v)}" for k, v in keys.items())
        if self.spec.finite:
            what = (f"completion {s['completion_cycles']} cycles  effective throughput "
                    f"{s['effective_throughput']:.4f}")
        else:
            what = (f"load {row['load']:g}  accepted {s['accepted_load']:.4f}  latency "
                    f"{s['packet_latency_mean']:.1f}  saturated {'yes' if s['saturated'] else 'no'}")
        now = time.perf_counter()
        if self.done_here == 1:
            self.t_first = now
        left = max(self.expected - self.done_here, 0)
        # the first point's time includes building and compiling: the rate is taken after it
        per = (now - self.t_first) / (self.done_here - 1) if self.done_here > 1 else now - self.t0
        eta = f"ETA {_duration(per * left)}" if left else "last point"
        seed = f"  seed {row['seed']}" if self.spec.seeds > 1 else ""
        return (f"point {self.done_here}/{max(self.expected, self.done_here)}  {kv}{seed}  "
                f"{what}  ({row['wall_s']:.1f} s, {eta})")

    def commit(self, finished: bool = False, now: bool = False) -> None:
        """Write the file with every point so far to a temporary name, then rename it: at once
        for the first point, at the end (``finished``) and when ``now``; otherwise only when
        :data:`COMMIT_EVERY_S` and :data:`COMMIT_SHARE` times the last commit have passed.
        With the writer thread the commit is queued after the points added so far (and
        waited for at the end and when ``now``)."""
        if not self.dirty and not finished:
            return
        hook = os.environ.get("PDES_TEST_CRASH_AFTER_POINTS")   # tests: a crash right after a commit
        t0 = time.perf_counter()
        if not (finished or now or hook or self.t_commit is None
                or t0 - self.t_commit >= max(COMMIT_EVERY_S, COMMIT_SHARE * self.commit_s)):
            return
        m = self.spec.base["measure"]
        attrs = {"format": FORMAT, "format_version": FORMAT_VERSION, "pdes_version": self.version,
                 "study": json.dumps(self.spec.identity()),
                 "config_toml": self.spec.identity()["base_config"],
                 "varied_keys": json.dumps([k for k, _ in self.spec.vary]),
                 "criterion": CRITERION.format(tol=m["saturation_tolerance"],
                                               btol=m["backlog_tolerance"]),
                 "finished": bool(finished),
                 P.ATTR: json.dumps(self.records, sort_keys=True)}
        if self.changed is not None:
            attrs[P.CHANGED_ATTR] = json.dumps(self.changed, sort_keys=True)
        crash = hook and not finished and len(self.rows) >= int(hook)
        job = functools.partial(self._write_file, attrs, self._tables(), crash)
        self.dirty = False
        self.t_commit = t0
        if self.writer is None:
            try:
                job()
            except BaseException:
                self.dirty = True  # not on disk: a rescue on the way out commits it again
                raise
            return
        self.writer.put(job)
        if finished or now:
            self.writer.wait()

    def _write_file(self, attrs: dict, tables: dict, crash: bool) -> None:
        """The commit's writes: the root attributes and tables into the image, then the image
        to ``<path>.tmp-<pid>``, renamed over ``path``."""
        t0 = time.perf_counter()
        f = self.f
        for k, v in attrs.items():
            f.attrs[k] = v
        for name, table in tables.items():
            self._put(f, name, table)
        f.flush()
        tmp = f"{self.path}.tmp-{os.getpid()}"
        try:
            with open(tmp, "wb") as fh:
                fh.write(self.buf.getbuffer())
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise
        self.commit_s = time.perf_counter() - t0
        if crash:
            os.kill(os.getpid(), 9)

    def rescue(self) -> None:
        """On the way out of a failed or stopped study: write the points not yet committed
        (unless the failure came in the middle of adding one; the file on disk then stays as
        the last commit left it)."""
        if self.writer is not None:
            writer, self.writer = self.writer, None
            writer.stop()          # what was queued is written first
            if writer.error is not None:
                return             # the image may hold half a point: the file stays as it was
        if self.dirty and not self.adding:
            try:
                self.commit(now=True)
            except Exception:  # noqa: BLE001 - the original failure is the one to report
                pass

    def close(self) -> None:
        if self.writer is not None:
            writer, self.writer = self.writer, None
            writer.stop()
            writer.check()
        self.discard()

    def discard(self) -> None:
        """Close the file image if it is still open (a study refused, failed or stopped): an
        h5py file on an in-memory buffer left open until the interpreter's exit crashed the
        process there (status 139) after a failed write."""
        if self.writer is not None:
            writer, self.writer = self.writer, None
            writer.stop()
        if self.f:
            self.f.close()

    @staticmethod
    def _put(f, name, table) -> None:
        """Write a table dataset, resizing the one already there (no space is left behind)."""
        if name in f and f[name].dtype == table.dtype:
            f[name].resize(table.shape)
            f[name][...] = table
        else:
            if name in f:
                del f[name]
            f.create_dataset(name, data=table, maxshape=(None,), chunks=(256,))

    def _key_columns(self):
        cols = []
        for key, values in self.spec.vary:
            kinds = {type(v) for v in values}
            if kinds <= {bool}:
                cols.append((key, np.bool_, lambda v: bool(v)))
            elif kinds <= {int}:
                cols.append((key, np.int64, lambda v: int(v)))
            elif kinds <= {int, float}:
                cols.append((key, np.float64, lambda v: float(v)))
            else:
                texts = [v if isinstance(v, str) else json.dumps(v) for v in values]
                width = max(len(t.encode()) for t in texts)
                cols.append((key, f"S{width}",
                             lambda v: (v if isinstance(v, str) else json.dumps(v)).encode()))
        return cols

    def _tables(self) -> dict:
        """The study's tables as they stand (made in the study's thread, written by the
        commit)."""
        rows = sorted(self.rows.values(), key=lambda r: (r["series"], r["rep"], r["load"]))
        keycols = self._key_columns()
        fields = [("point", "S32"), ("series", np.int64)] + [(k, t) for k, t, _ in keycols] + \
            [("seed", np.int64), ("load", np.float64)] + [(c, t) for _, c, t in SUMMARY_COLUMNS] + \
            [(k, t) for k, t, _ in FINITE_COLUMNS] + \
            [("reason", f"S{REASON_WIDTH}"), ("wall_s", np.float64)]
        table = np.zeros(len(rows), dtype=fields)
        for i, r in enumerate(rows):
            vals = self.spec.series[r["series"]]
            table[i]["point"] = r["name"].encode()
            table[i]["series"] = r["series"]
            for key, _, conv in keycols:
                table[i][key] = conv(vals[key])
            table[i]["seed"] = r["seed"]
            table[i]["load"] = r["load"]
            for src, col, _ in SUMMARY_COLUMNS:
                table[i][col] = r["summary"][src]
            for k, _, _ in FINITE_COLUMNS:
                table[i][k] = r["summary"][k]
            table[i]["reason"] = r["summary"]["saturated_reason"].encode()[:REASON_WIDTH]
            table[i]["wall_s"] = r["wall_s"]
        out = {"table": table, "table_mean": self._mean_table(rows, keycols)}
        if self.saturation:
            out["saturation"] = self._saturation_table(keycols)
        return out

    def _mean_table(self, rows, keycols):
        """Replications of each (series, load): mean and 95% confidence half-width (of the
        completion time and effective throughput too, in a finite study)."""
        groups: dict = {}
        for r in rows:
            groups.setdefault((r["series"], r["load"]), []).append(r)
        means = [("accepted_load", "accepted"), ("packet_latency_mean", "latency_mean")] + (
            [(k, k) for k in FINITE_MEANS] if self.spec.finite else [])
        fields = [("series", np.int64)] + [(k, t) for k, t, _ in keycols] + [
            ("load", np.float64), ("n", np.int64)] + [
            (c, np.float64) for _, col in means for c in (col, col + "_ci95")] + [
            ("saturated", np.int64)]
        table = np.zeros(len(groups), dtype=fields)
        for i, ((s, load), rs) in enumerate(sorted(groups.items())):
            table[i]["series"] = s
            for key, _, conv in keycols:
                table[i][key] = conv(self.spec.series[s][key])
            table[i]["load"] = load
            table[i]["n"] = len(rs)
            table[i]["saturated"] = sum(bool(r["summary"]["saturated"]) for r in rs)
            for src, col in means:
                x = np.array([r["summary"][src] for r in rs], dtype=np.float64)
                table[i][col] = x.mean()
                table[i][col + "_ci95"] = ci95(x)
        return table

    def _saturation_table(self, keycols):
        fields = [("series", np.int64)] + [(k, t) for k, t, _ in keycols] + [
            ("seed", np.int64), ("saturation_load", np.float64), ("lo", np.float64), ("hi", np.float64),
            ("accepted_lo", np.float64), ("accepted_hi", np.float64), ("resolution", np.float64),
            ("status", "S64")]
        rows = sorted(self.saturation, key=lambda r: (r["series"], r["rep"]))
        table = np.zeros(len(rows), dtype=fields)
        for i, r in enumerate(rows):
            table[i]["series"] = r["series"]
            for key, _, conv in keycols:
                table[i][key] = conv(self.spec.series[r["series"]][key])
            table[i]["seed"] = r["seed"]
            table[i]["saturation_load"] = r["load"]
            for k in ("lo", "hi", "accepted_lo", "accepted_hi"):
                table[i][k] = r[k]
            table[i]["resolution"] = self.spec.resolution
            table[i]["status"] = r["status"].encode()
        return table


def ci95(x: np.ndarray) -> float:
    """Half-width of the 95% confidence interval of the mean of ``x`` (Student's t); NaN for
    fewer than two values."""
    if x.size < 2:
        return math.nan
    from scipy.stats import t as student_t   # only with replications (slow import)
    return float(student_t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))


def _fmt(v) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def _duration(s: float) -> str:
    s = int(round(s))
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


# --------------------------------------------------------------------------- the task queue
TAG_UP = 7101     # to world rank 0: ("next", records) or ("records", records)
TAG_DOWN = 7102   # from world rank 0: the next task index, -1 when none is left


class Queue:
    """Tasks handed to the groups by world rank 0, which also writes the file.

    World rank 0 leads a group too: between its own points, and at every
    progress callback inside them (about once a second), it answers the other
    group leaders' requests and writes the points they send.  A leader sends
    its finished points before asking for the next task, so when every leader
    has been told that no task is left, rank 0 holds every point.
    """

    def __init__(self, world, gcomm, file: StudyFile | None):
        self.world = world
        self.gcomm = gcomm
        self.wrank = 0 if world is None else world.Get_rank()
        self.leader = gcomm is None or gcomm.Get_rank() == 0
        if world is None:
            self.others = []
        else:
            flags = world.allgather(self.leader)
            self.others = [r for r, f in enumerate(flags) if f and r != 0]
        self.file = file
        self._next = 0
        self._ntasks = 0
        self._finished = 0

    def _bcast(self, value):
        return value if self.gcomm is None or self.gcomm.Get_size() == 1 else \
            self.gcomm.bcast(value, root=0)

    # ---- world rank 0
    def poll(self, *_):
        """Answer waiting requests and write received points (world rank 0)."""
        if self.wrank != 0 or not self.others:
            return
        from mpi4py import MPI
        st = MPI.Status()
        while self.world.Iprobe(source=MPI.ANY_SOURCE, tag=TAG_UP, status=st):
            self._handle(self.world.recv(source=st.Get_source(), tag=TAG_UP), st.Get_source())
        self.file.commit()

    def _handle(self, msg, src):
        kind, records = msg
        for rec in records:
            self.file.add(rec)
        if kind == "next":
            if self._next < self._ntasks:
                self.world.send(self._next, dest=src, tag=TAG_DOWN)
                self._next += 1
            else:
                self.world.send(-1, dest=src, tag=TAG_DOWN)
                self._finished += 1

    def emit(self, rec):
        """A leader's finished point: written by rank 0, sent to it by the others."""
        if self.wrank == 0:
            self.file.add(rec)
            self.file.commit()
        else:
            self.world.send(("records", [rec]), dest=0, tag=TAG_UP)

    def run(self, ntasks: int, task) -> None:
        """Run tasks 0..ntasks-1 over the groups; ``task(i)`` is called on every rank of a group."""
        if self.wrank == 0:
            self._next, self._ntasks, self._finished = 0, ntasks, 0
            while self._next < ntasks:
                i = self._next
                self._next += 1
                self._bcast(i)
                task(i)
                self.poll()
            self._bcast(-1)
            if not self.others:
                return         # one group: a sweep on one rank loads no MPI (cli.common)
            from mpi4py import MPI
            st = MPI.Status()
            while self._finished < len(self.others):
                msg = self.world.recv(source=MPI.ANY_SOURCE, tag=TAG_UP, status=st)
                self._handle(msg, st.Get_source())
                self.file.commit()
        elif self.leader:
            while True:
                self.world.send(("next", []), dest=0, tag=TAG_UP)
                i = self.world.recv(source=0, tag=TAG_DOWN)
                self._bcast(i)
                if i < 0:
                    break
                task(i)
        else:
            while True:
                i = self._bcast(None)
                if i < 0:
                    break
                task(i)


# --------------------------------------------------------------------------- the study
def run_study(spec: Spec, path: str, world, concurrent: int = 1, resume: bool = False, say=None,
              version: str = "", intro: str = "", files: list | None = None,
              allow_changed_inputs: bool = False) -> dict | None:
    """Run every missing point of ``spec`` and write ``path``; returns the saturation results on
    world rank 0 (``None`` elsewhere).  ``world`` is the communicator of all ranks (or None).

    ``files`` (:func:`series_files`, computed here when None) are digested by world rank 0
    and recorded in the study file and its points; ``resume`` refuses a study whose files
    changed since it was written unless ``allow_changed_inputs``.

    Everything is checked before the first point runs (every rank raises the same
    :class:`ParameterError`); ``intro`` is then said, and the compile notice.
    """
    size = 1 if world is None else world.Get_size()
    wrank = 0 if world is None else world.Get_rank()
    if not 1 <= concurrent <= size:
        raise ParameterError(f"--concurrent: must be between 1 and the number of ranks ({size}), "
                             f"got {concurrent}")
    if world is not None and concurrent > 1:
        gcomm = world.Split(wrank * concurrent // size, wrank)
    else:
        gcomm = world
    gsize = 1 if gcomm is None else gcomm.Get_size()
    records = None
    if wrank == 0:
        cache: dict = {}
        records = [P.record(f, cache) for f in (series_files(spec) if files is None else files)]
    if world is not None and size > 1:
        records = world.bcast(records, root=0)
    file = StudyFile(path, spec, version, say=say, records=records,
                     allow_changed_inputs=allow_changed_inputs,
                     background=background_writes(size)) if wrank == 0 else None
    try:
        known, error = {}, None
        if wrank == 0 and resume and os.path.exists(path):
            try:
                file.load_existing()
            except ParameterError as exc:
                error = str(exc)
        if world is not None and size > 1:
            error = world.bcast(error, root=0)
        if error:
            raise ParameterError(error)
        runner = Runner(spec, gcomm if gsize > 1 else None, version, world_rank=wrank, records=records)
        try:             # in groups of ranks (--concurrent) a check may fail in some groups only
            runner.check_all(spec.loads[0])
        except ParameterError as exc:
            error = str(exc) if gsize == size else f"--concurrent {concurrent}: in a group of {gsize} ranks: {exc}"
        if world is not None and size > 1:
            error = next((e for e in world.allgather(error) if e), None)
        if error:
            raise ParameterError(error)
        if say:
            if intro:
                say(intro)
            from pdes.compiling import compile_notice
            compile_notice(say)
        if wrank == 0:
            known = file.summaries()
        if world is not None and size > 1:
            known = world.bcast(known, root=0)
        queue = Queue(world if size > 1 else None, gcomm if gsize > 1 else None, file)
        poll = queue.poll if wrank == 0 and size > 1 else None

        nseries = len(spec.series)
        grid = [(s, r, L) for s in range(nseries) for r in range(spec.seeds) for L in spec.loads
                if point_name(s, r, L) not in known]
        if wrank == 0:
            est = len(grid)
            if spec.saturation:
                est += nseries * spec.seeds * max(0, math.ceil(math.log2(
                    max(np.diff(spec.loads).max() if len(spec.loads) > 1 else 0.1, spec.resolution)
                    / spec.resolution)))
            file.expected = est
            if say and known:
                say(f"resuming {path}: {len(known)} points done, {len(grid)} grid points to run")

        def grid_task(i):
            s, r, L = grid[i]
            _, rec = runner.run(s, r, L, poll=poll, leader=queue.leader)
            if rec is not None:
                queue.emit(rec)

        results = None
        try:
            queue.run(len(grid), grid_task)
            if wrank == 0:
                file.commit()

            if spec.saturation:
                if wrank == 0:
                    known = file.summaries()
                if world is not None and size > 1:
                    known = world.bcast(known, root=0)
                pairs = [(s, r) for s in range(nseries) for r in range(spec.seeds)]

                def sat_task(i):
                    s, r = pairs[i]

                    def summary_of(load):
                        name = point_name(s, r, load)
                        if name not in known:
                            summary, rec = runner.run(s, r, load, poll=poll, leader=queue.leader)
                            known[name] = summary
                            if rec is not None:
                                queue.emit(rec)
                        return known[name]
                    bisection(spec, s, r, summary_of)

                queue.run(len(pairs), sat_task)
                if wrank == 0:
                    allk = file.summaries()

                    def lookup_factory(s, r):
                        return lambda load: allk[point_name(s, r, load)]
                    results = [bisection(spec, s, r, lookup_factory(s, r)) for s, r in pairs]
                    file.saturation = results
            if wrank == 0:
                file.commit(finished=True)
                file.close()
        except BaseException:
            if wrank == 0:        # a failure or a signal: keep the points finished so far
                file.rescue()
            raise
    finally:
        if file is not None:
            file.discard()      # a study that ended early leaves no file image open
    if gcomm is not None and gcomm is not world:
        gcomm.Free()
    return results if wrank == 0 else None
