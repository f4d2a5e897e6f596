"""Shared helpers of the test suite: configs, result comparison, subprocesses, small inputs.

Test modules import them as ``from tests.helpers import ...`` (the repository root is on
``sys.path`` through ``pythonpath`` in ``pyproject.toml``); ``tests/conftest.py`` offers the
same as fixtures for test bodies.  No test module imports another test module.

* Configs: :data:`PHASES` names the measurement phases the tests run with;
  :func:`make_cfg` resolves ``section.key=value`` strings on top of a preset,
  :func:`cfg_builder` makes a module's ``cfg_of`` with its own fixed keys,
  :func:`cli_sets` gives the same as ``--set`` arguments.
* Results: :func:`assert_same_results` compares two result dicts or two HDF5
  result files exactly and names the first key that differs.
* Subprocesses: :func:`mpiexec`, :func:`subprocess_env`, :func:`python_argv`,
  :func:`run_python` and :func:`run_pdes` (``python -m pdes ...``, on 1 or N ranks),
  :func:`descendants` (the ranks of an ``mpiexec`` job).
* Engine states: :func:`one_part`, :func:`restarted_on_other_part_counts`.
* Small inputs: :func:`anynet_ring`.
* Schedules: :func:`replay` (the data each operation of a schedule is guaranteed to
  hold, by dependencies only) and :func:`final` (each process's at its last operation).
"""
from __future__ import annotations

import contextlib
from collections import deque
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
"""The repository root."""

# --------------------------------------------------------------------------- configs
PHASES = {
    # name: (warmup_cycles, measure_cycles, sample_period, drain_cycles); None: the default
    "plan": (100, 100, 100, None),       # configs that are planned or prepared, hardly run
    "cli": (200, 300, 100, None),        # `pdes run` in a subprocess
    "golden": (200, 300, 100, 300),      # the golden configs (tests/golden.py)
    "restart": (200, 400, 100, 1000),    # checkpoint and restart through the CLI
    "docs": (200, 400, None, 2000),      # appended to the docs' `pdes run` and `pdes sweep`
    "short": (300, 500, 100, None),      # MPI determinism, next-hop tables
    "routing": (300, 500, 100, 300),     # routing algorithms
    "buffers": (300, 400, 100, 400),     # buffer capacities and shared buffers
    "prefetch": (300, 400, 100, 600),    # the stages' prefetch pipelines
    "study": (300, 600, 100, None),      # sweeps
    "engine": (400, 600, 100, None),     # engine contract, latency formula
    "long": (300, 1000, 100, 300),       # throughput comparisons (Dragonfly PAR)
    "exchange": (None, None, 100, None),  # finite exchanges (they run until every message is in)
}
_PHASE_KEYS = ("warmup_cycles", "measure_cycles", "sample_period", "drain_cycles")


def phase_sets(preset: str) -> list[str]:
    """The ``measure.*=value`` strings of a phase preset of :data:`PHASES`."""
    return [f"measure.{k}={v}" for k, v in zip(_PHASE_KEYS, PHASES[preset]) if v is not None]


def make_cfg(*sets: str, preset: str) -> dict:
    """The resolved config (:func:`pdes.config.resolve`) of the preset's phases and then
    ``sets`` (``section.key=value`` strings, later ones win)."""
    from pdes import config as C
    return C.resolve({}, [*phase_sets(preset), *sets])


def cfg_builder(preset: str, *base: str):
    """``cfg_of(*sets)``: :func:`make_cfg` of the preset with ``base`` before ``sets``."""
    def cfg_of(*sets: str) -> dict:
        return make_cfg(*base, *sets, preset=preset)
    cfg_of.__doc__ = f"Resolved config: phases {preset!r}, then {list(base)}, then the sets."
    return cfg_of


def cli_sets(*sets: str, preset: str | None = None) -> list[str]:
    """``--set`` arguments of the preset's phases (if any) and then ``sets``."""
    out = []
    for s in [*(phase_sets(preset) if preset else []), *sets]:
        out += ["--set", s]
    return out


# --------------------------------------------------------------------------- results
RESULT_ARRAYS = ("hist_packet_latency", "hist_network_latency", "hist_hops", "link_flits",
                 "endpoint_injected", "endpoint_delivered", "series")
"""The arrays every result dict has, compared by :func:`assert_same_results`."""
OPTIONAL_ARRAYS = ("hist_message_latency",)
"""Arrays only some runs have (finite exchanges); compared too, absent in both is equal."""


def _isnan(v) -> bool:
    return isinstance(v, (float, np.floating)) and math.isnan(v)


def _equal(x, y) -> bool:
    """Exact equality: arrays of the same shape, dtype and elements (NaN equal to NaN), other
    values equal by ``==`` or both NaN."""
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        a, b = np.asarray(x), np.asarray(y)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if _isnan(x) and _isnan(y):
        return True
    return bool(x == y)


def _result_items(res: dict) -> dict:
    """{key: value} of a result dict: every summary and counter entry and the result arrays."""
    out = {}
    for group in ("summary", "counters"):
        for k, v in res[group].items():
            out[f"{group}/{k}"] = v
    for k in RESULT_ARRAYS:
        out[k] = res[k]
    for k in OPTIONAL_ARRAYS:
        out[k] = res.get(k)
    for k, v in (res.get("workload") or {}).items():     # a schedule's per-operation cycles
        out[f"workload/{k}"] = v
    return out


def _drop_output_name(toml: str) -> str:
    return "\n".join(ln for ln in str(toml).splitlines() if not ln.startswith("file ="))


def file_content(obj, *, attrs: bool = True, output_name: bool = False) -> dict:
    """{key: value} of an HDF5 result file (a path) or group: every dataset (``name``) and, with
    ``attrs``, every attribute (``name@attr``, ``@attr`` at the top) outside ``/run`` (timings
    and partition depend on the ranks).  Without ``output_name`` the output file's name
    (``config/output/file`` and the ``file =`` line of ``config_toml``) is left out."""
    import h5py
    if isinstance(obj, (str, os.PathLike)):
        with h5py.File(obj, "r") as f:
            return file_content(f, attrs=attrs, output_name=output_name)
    out = {}

    def add_attrs(prefix, o):
        for k, v in o.attrs.items():
            if k == "config_toml" and not output_name:
                v = _drop_output_name(v)
            out[f"{prefix}@{k}"] = np.asarray(v)

    if attrs:
        add_attrs("", obj)

    def visit(name, o):
        if name.split("/")[0] == "run" or (name == "config/output/file" and not output_name):
            return
        if attrs:
            add_attrs(name, o)
        if isinstance(o, h5py.Dataset):
            out[name] = np.asarray(o[()])
    obj.visititems(visit)
    return out


def first_difference(a: dict, b: dict) -> str | None:
    """The first key (in ``a``'s order) whose values differ, or a note on the keys only one
    side has; None when both are equal."""
    if a.keys() != b.keys():
        return (f"keys only in the first: {sorted(set(a) - set(b))}, "
                f"only in the second: {sorted(set(b) - set(a))}")
    for k in a:
        if not _equal(a[k], b[k]):
            return f"{k}: {a[k]!r} != {b[k]!r}"[:2000]
    return None


def assert_same_results(a, b, *, attrs: bool = True, output_name: bool = False) -> None:
    """``a`` and ``b`` are exactly the same results; the message names the first key that
    differs.

    Two result dicts (:func:`pdes.engine.run_local`, :func:`pdes.engine.simulate`): every
    entry of ``summary`` and ``counters`` and the arrays of :data:`RESULT_ARRAYS` and
    :data:`OPTIONAL_ARRAYS`.  Two HDF5
    result files or groups: :func:`file_content` (``attrs``, ``output_name``)."""
    if isinstance(a, dict) and isinstance(b, dict):
        x, y = _result_items(a), _result_items(b)
    else:
        x = file_content(a, attrs=attrs, output_name=output_name)
        y = file_content(b, attrs=attrs, output_name=output_name)
    diff = first_difference(x, y)
    assert diff is None, diff


# --------------------------------------------------------------------------- subprocesses
def mpiexec() -> str:
    """The ``mpiexec`` next to this Python (the MPI that mpi4py was built with), else the one on
    PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else (shutil.which("mpiexec") or "mpiexec")


def subprocess_env(**extra: str) -> dict:
    """The environment of a child Python: this one, the repository root first on PYTHONPATH
    (the child imports this tree), and ``extra``."""
    e = dict(os.environ, **extra)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in e.get("PYTHONPATH", "").split(os.pathsep) if p])
    return e


def python_argv(*argv: str, nranks: int = 1) -> list[str]:
    """``python ARGV...``, under ``mpiexec -n NRANKS`` when ``nranks > 1``."""
    pre = [mpiexec(), "-n", str(nranks)] if nranks > 1 else []
    return pre + [sys.executable, *map(str, argv)]


def run_python(*argv: str, nranks: int = 1, cwd=None, timeout: float = 300,
               env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``python ARGV...`` (:func:`python_argv`) with :func:`subprocess_env` plus ``env``;
    the result has ``returncode``, ``stdout`` and ``stderr`` (text)."""
    return subprocess.run(python_argv(*argv, nranks=nranks), capture_output=True, text=True,
                          cwd=cwd, env=subprocess_env(**(env or {})), timeout=timeout)


def stand_in(directory, name: str, script: str) -> str:
    """Write ``script`` (Python, without its first line) as an executable named ``name`` in
    ``directory`` that this interpreter runs: a stand-in for a program a script under test
    calls (Valgrind, perf, BookSim).  Returns its path."""
    path = Path(directory) / name
    path.write_text(f"#!{sys.executable}\n" + script)
    path.chmod(0o755)
    return str(path)


def run_pdes(*args: str, **kw) -> subprocess.CompletedProcess:
    """``python -m pdes ARGS...`` through :func:`run_python` (same keywords)."""
    return run_python("-m", "pdes", *args, **kw)


def assert_refused_on_every_rank(comm, status: int, err: str, line_ok, context) -> None:
    """Status 2 on every rank of ``comm``, one error line on rank 0 (``line_ok(line)`` true)
    and none on the others (``[pdes]`` progress lines aside).  Every rank learns every
    verdict before asserting, so a failure fails all ranks together instead of leaving the
    others waiting in the next collective."""
    lines = [ln for ln in err.strip().splitlines() if ln and not ln.startswith("[pdes]")]
    mine = (len(lines) == 1 and line_ok(lines[0])) if comm.Get_rank() == 0 else lines == []
    verdicts = comm.allgather((status, mine))
    assert [s for s, _ in verdicts] == [2] * comm.Get_size(), (context, err)
    assert all(ok for _, ok in verdicts), (context, err)


def descendants(pid: int, pattern: str) -> list[int]:
    """Processes below ``pid`` (this Python's, run by ``mpiexec``) whose command line contains
    ``pattern``."""
    table = subprocess.run(["ps", "-e", "-o", "pid=,ppid=,args="], capture_output=True,
                           text=True).stdout.splitlines()
    rows = []
    for ln in table:
        parts = ln.split(None, 2)
        if len(parts) >= 2:
            rows.append((int(parts[0]), int(parts[1]), parts[2] if len(parts) > 2 else ""))
    children: dict = {}
    for p, pp, _ in rows:
        children.setdefault(pp, []).append(p)
    args = {p: a for p, _, a in rows}
    out, todo = [], list(children.get(pid, []))
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        if pattern in args.get(p, "") and sys.executable in args.get(p, ""):
            out.append(p)
    return out


# --------------------------------------------------------------------------- engine states
def one_part(prep):
    """The state of all routers of a prepared run as one part."""
    from pdes.build import make_parts
    (part,) = make_parts(prep, np.zeros(prep.topo.n_routers, np.int32), [0], 1)
    return part


@contextlib.contextmanager
def restarted_on_other_part_counts(cfg, prep, path):
    """Checkpoint a run on 2 parts at cycle 500 into ``path``, yield the checkpoint file open
    (for the caller's checks of what was saved), then continue from it on 1 and 3 parts and
    assert the uninterrupted run's results."""
    import h5py

    from pdes import checkpoint as K
    from pdes.engine import run_local
    from pdes.loopstate import CheckpointPlan, CheckpointStop
    R = prep.topo.n_routers
    whole = run_local(cfg, prep=prep)
    with pytest.raises(CheckpointStop):
        run_local(cfg, owner=(np.arange(R) % 2).astype(np.int32), prep=prep,
                  checkpoint=CheckpointPlan(str(path), stop_at=500))
    ck = K.open_checkpoint(str(path))
    with h5py.File(path) as f:
        yield f
    for owner in (None, ((np.arange(R) * 3) // R).astype(np.int32)):
        assert_same_results(whole, run_local(cfg, owner=owner, prep=prep, restart=ck))


# --------------------------------------------------------------------------- schedules
def replay(s, init, reduce=False):
    """(N,) list: per operation, the chunk masks its process is guaranteed to hold when it
    has completed; ``init(p)`` gives process p's masks at the start.  Data is a bit mask of
    contributing processes per chunk (:attr:`models.schedule.Schedule.chunk`); only what
    dependencies order counts, so a missing dependency shows as missing data.  With
    ``reduce=True`` a receive that would add a contribution twice fails."""
    from models.schedule import DEP_START, OP_RECV, OP_SEND
    assert s.match is not None
    N = s.n_ops
    proc = s.op_proc()
    C_ = int(s.chunk[s.op_kind == OP_SEND, 1].max())
    start = [list(init(p)) for p in range(s.n_procs)]
    assert all(len(v) == C_ for v in start)
    preds = [list(s.dep[s.dep_off[o]:s.dep_off[o + 1]]) for o in range(N)]
    kinds = [list(s.dep_kind[s.dep_off[o]:s.dep_off[o + 1]]) for o in range(N)]
    succ = [[] for _ in range(N)]
    indeg = [0] * N
    for o in range(N):
        ins = preds[o] + ([s.match[o]] if s.op_kind[o] == OP_RECV else [])
        indeg[o] = len(ins)
        for d in ins:
            succ[d].append(o)
    view, done = [None] * N, [None] * N
    ready = deque(o for o in range(N) if indeg[o] == 0)
    while ready:
        o = ready.popleft()
        v = list(start[proc[o]])
        for d, k in zip(preds[o], kinds[o]):
            v = [a | b for a, b in zip(v, view[d] if k == DEP_START else done[d])]
        view[o] = v
        out = list(v)
        if s.op_kind[o] == OP_RECV:
            m = s.match[o]
            lo, hi = s.chunk[m]
            for c in range(max(lo, 0), max(hi, 0)):
                got = done[m][c]
                if reduce and got & out[c] and out[c] & ~got:
                    raise AssertionError(f"{s.name(o)}: receives {got:b} into {out[c]:b} in chunk {c}: "
                                         "a contribution would be reduced twice")
                out[c] |= got
        done[o] = out
        for w in succ[o]:
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    assert all(d is not None for d in done), "an operation was never reached"
    return done


def final(s, done):
    """Masks of each process at its last operation (which must close over all its operations)."""
    proc = s.op_proc()
    out = []
    for p in range(s.n_procs):
        a, b = int(s.op_off[p]), int(s.op_off[p + 1])
        last = b - 1
        seen, stack = {last}, [last]                   # the last op's ancestors in its process
        while stack:
            o = stack.pop()
            for d in s.dep[s.dep_off[o]:s.dep_off[o + 1]]:
                if int(d) not in seen:
                    seen.add(int(d))
                    stack.append(int(d))
        assert seen == set(range(a, b)), f"process {p}: its last op does not follow all its ops"
        assert all(proc[o] == p for o in seen)
        out.append(done[last])
    return out


# --------------------------------------------------------------------------- small inputs
def anynet_ring(tmp_path, weights=None, name="net.anynet") -> str:
    """An anynet ring of 6 routers with 2 nodes each (weights per link or none)."""
    lines = []
    for r in range(6):
        w = f" {weights[r]}" if weights else ""
        lines.append(f"router {r} node {2 * r} node {2 * r + 1} router {(r + 1) % 6}{w}")
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return str(path)
