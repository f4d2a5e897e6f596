"""Cluster use (docs/cluster.md): ``pdes compile``, one compiler per node, the cache
directory (``PDES_CACHE_DIR``), the start-up line that says whether the kernels were
compiled or loaded, ``pdes info --mpi``, and the commands of the page's job scripts."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import sys

import numpy as np
import pytest

from tests.helpers import (ROOT, assert_refused_on_every_rank, assert_same_results, cli_sets,
                           run_pdes, run_python)

FAST = cli_sets(preset="cli")


def _library_line() -> str:
    """The first line of the MPI library's version text (as a child process sees it)."""
    r = run_python("-c", "from mpi4py import MPI; print(MPI.Get_library_version().strip())")
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()[0]


def _cache_dir(**env) -> str:
    """The cache directory a child process with ``env`` uses."""
    r = run_python("-c", "from models.core.jit import cache_dir; print(cache_dir())", env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


# --------------------------------------------------------------------------- pdes compile
def test_compile_says_which_kernels_where_and_whether_it_compiled(tmp_path):
    """pdes compile compiles or loads the config's router stage without running a cycle, and
    says which kernel, where the cache is and which it did (a second call loads)."""
    cache = _cache_dir()
    first = run_pdes("compile", "--json", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    info = json.loads(first.stdout)
    assert (info["routing"], info["ranks"], info["cache"]) == ("min", 1, cache)
    assert info["compiled"] + info["loaded"] == 1 and not info["fallback"]
    assert [k.rsplit("_", 1)[0] for k in info["kernels"]] == \
        ["pdes.kernels.routed_models_routing_minimal_min_hop_None"]
    again = run_pdes("compile", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0] == (
        f"routing min (models.routing.minimal.min_hop): loaded from the cache {cache}")
    assert "router stage pdes.kernels.routed_models_routing_minimal_min_hop_None_" in again.stdout
    assert "cycle" not in again.stderr       # no progress line: no cycle ran
    assert sorted(os.listdir(tmp_path)) == []


def test_compile_routings_are_checked_before_any_work(tmp_path):
    """--routings takes distinct names separated by commas; an unknown routing names
    routing.algorithm; each is one error line with exit 2."""
    for arg, key in (("min,,ugal_l", "--routings"), ("min,min", "--routings"),
                     ("min,nosuch", "routing.algorithm")):
        r = run_pdes("compile", "--routings", arg, cwd=tmp_path)
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"pdes: error: {key}"), r.stderr
        assert r.stdout == ""


def test_run_start_line_says_the_kernels_were_loaded(tmp_path):
    """After pdes compile, a run's start report says its kernels were loaded from the cache,
    and where."""
    assert run_pdes("compile", cwd=tmp_path).returncode == 0
    r = run_pdes("run", *FAST, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"[pdes] kernels: loaded from the cache {_cache_dir()}\n" in r.stderr, r.stderr


def test_run_start_line_under_mpi_names_the_library_and_every_rank_loading(tmp_path):
    """On 2 ranks the start report names the MPI library and the nodes, and says both ranks
    loaded the kernels from the cache."""
    assert run_pdes("compile", cwd=tmp_path).returncode == 0
    r = run_pdes("run", *FAST, nranks=2, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lib = " ".join(_library_line().split())
    assert f"[pdes] MPI: {lib}; 2 ranks on 1 node, 2 of them on rank 0's node\n" in r.stderr
    assert f"[pdes] kernels: loaded from the cache {_cache_dir()} on every rank (2)\n" in r.stderr


def test_info_mpi_names_the_library_and_the_ranks_per_host(tmp_path):
    """info --mpi prints the MPI library's version text and the ranks per host (on 2 ranks:
    once, from rank 0); --json gives the same."""
    r = run_pdes("info", "--mpi", nranks=2, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("MPI library (MPI_Get_library_version):\n  "
                               + _library_line().rstrip() + "\n"), r.stdout
    assert re.search(r"^2 ranks on 1 host: \S+ \(2\)$", r.stdout, flags=re.M), r.stdout
    data = json.loads(run_pdes("info", "--mpi", "--json", cwd=tmp_path).stdout)
    assert data["library"].splitlines()[0] == _library_line() and data["ranks"] == 1


# --------------------------------------------------------------------------- the cache directory
def test_pdes_cache_dir_comes_before_numba_cache_dir(tmp_path):
    """PDES_CACHE_DIR sets the cache's base directory, before NUMBA_CACHE_DIR; each keeps the
    numba-<source digest> subdirectory."""
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    both = _cache_dir(PDES_CACHE_DIR=a, NUMBA_CACHE_DIR=b)
    numba = _cache_dir(PDES_CACHE_DIR="", NUMBA_CACHE_DIR=b)
    assert re.fullmatch(re.escape(a) + r"/numba-[0-9a-f]{16}", both)
    assert numba == b + "/" + os.path.basename(both)


def _unwritable(tmp_path) -> str:
    """A cache directory that cannot be created: below a regular file (also for root)."""
    (tmp_path / "plain").write_text("a file\n")
    return str(tmp_path / "plain" / "cache")


@pytest.mark.parametrize("cmd", [["run", *FAST, "-o", "out.h5"], ["compile"],
                                 ["sweep", *FAST, "--loads", "0.1", "-o", "study.h5"]],
                         ids=["run", "compile", "sweep"])
def test_unusable_pdes_cache_dir_is_one_line_exit_2(tmp_path, cmd):
    """A PDES_CACHE_DIR that cannot be created or written: exit 2 with one
    `pdes: error: PDES_CACHE_DIR:` line, no traceback, no file written."""
    bad = _unwritable(tmp_path)
    r = run_pdes(*cmd, cwd=tmp_path, env={"PDES_CACHE_DIR": bad})
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if not ln.startswith("[pdes]")]
    assert lines == [f"pdes: error: PDES_CACHE_DIR: cannot create {bad} (Not a directory); set "
                     "it to a writable directory (or unset it for the default cache)"], r.stderr
    assert sorted(os.listdir(tmp_path)) == ["plain"]


@pytest.mark.mpi(min_size=2)
def test_pdes_cache_dir_unusable_on_one_rank_is_refused_on_every_rank(tmp_path, capfd,
                                                                     monkeypatch):
    """A PDES_CACHE_DIR only the last rank cannot use: exit 2 on every rank, one error line
    (rank 0), nothing written."""
    from mpi4py import MPI

    from pdes.cli import main
    comm = MPI.COMM_WORLD
    d = comm.bcast(str(tmp_path), root=0)
    if comm.Get_rank() == 0:
        (tmp_path / "plain").write_text("a file\n")
    comm.Barrier()
    here = os.getcwd()
    os.chdir(d)
    last = comm.Get_rank() == comm.Get_size() - 1
    monkeypatch.setenv("PDES_CACHE_DIR", os.path.join(d, "plain" if last else "good", "cache"))
    try:
        for cmd in (["run", *FAST, "-o", "out.h5"], ["compile"]):
            capfd.readouterr()
            status = main(cmd)
            err = capfd.readouterr().err
            assert_refused_on_every_rank(
                comm, status, err, lambda line: line.startswith(
                    f"pdes: error: PDES_CACHE_DIR: cannot create {d}/plain/cache"), cmd)
        comm.Barrier()
        assert "out.h5" not in os.listdir(d)
    finally:
        os.chdir(here)
        comm.Barrier()


# --------------------------------------------------------------------------- one compiler per node
SOURCE = '''
from models.core.jit import njit


@njit
def advance(t0, t1):
    return t1 - t0 + {salt}
'''


class _Part:
    """A stand-in for a part: its ``kernel`` module's ``advance`` is the compiled function."""

    def __init__(self, kernel, fail=False):
        self.kernel = kernel
        self.fail = fail

    @property
    def kernel_advance(self):
        return self.kernel.advance

    def advance(self, t0, t1):
        if self.fail:
            raise ValueError("no compiler here")
        return self.kernel.advance(np.int64(t0), np.int64(t1))


@pytest.fixture
def fresh_kernel(tmp_path, monkeypatch):
    """A module (the same file on every rank) with a jit function no cache holds yet, cached
    under a fresh PDES_CACHE_DIR of the test."""
    from mpi4py import MPI

    from models.core import jit
    comm = MPI.COMM_WORLD
    d = comm.bcast(str(tmp_path), root=0)
    salt = comm.bcast(int.from_bytes(os.urandom(4), "little"), root=0)
    name = f"_pdes_fresh_kernel_{salt}"
    path = os.path.join(d, name + ".py")
    if comm.Get_rank() == 0:
        with open(path, "w") as f:
            f.write(SOURCE.format(salt=salt))
    comm.Barrier()
    monkeypatch.setenv("PDES_CACHE_DIR", os.path.join(d, "cache"))
    jit.cache_dir.cache_clear()
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        yield mod, salt, os.path.join(d, "cache")
    finally:
        sys.modules.pop(name, None)
        jit.cache_dir.cache_clear()
        comm.Barrier()


@pytest.mark.mpi(min_size=2)
def test_one_rank_per_node_compiles_and_the_others_load(fresh_kernel):
    """With an empty cache, the node's rank 0 compiles and every other rank of the node loads
    its cache entry (Numba's counts), and the function works on every rank."""
    from mpi4py import MPI

    from pdes.compiling import compile_parts, describe
    mod, salt, cache = fresh_kernel
    comm = MPI.COMM_WORLD
    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
    try:
        info = compile_parts([_Part(mod)], comm, node)
        nodes = comm.allreduce(1 if node.Get_rank() == 0 else 0)
        here = (sum(mod.advance.stats.cache_misses.values()),
                sum(mod.advance.stats.cache_hits.values()))
        mine = here == ((1, 0) if node.Get_rank() == 0 else (0, 1))
        assert all(comm.allgather(mine)), comm.allgather(here)
        assert (info["compiled"], info["loaded"], info["nodes"], info["ranks"]) == \
            (nodes, comm.Get_size() - nodes, nodes, comm.Get_size())
        assert info["cache"].startswith(cache + "/numba-") and not info["fallback"]
        assert mod.advance(np.int64(3), np.int64(10)) == 7 + salt
        if nodes == 1:
            assert describe(info).startswith("kernels: compiled in ") and describe(info).endswith(
                f" on one rank per node (1 node), loaded from the cache by the other "
                f"{comm.Get_size() - 1} rank{'s' if comm.Get_size() > 2 else ''}; "
                f"cache {info['cache']}")
    finally:
        node.Free()


@pytest.mark.mpi(min_size=2)
def test_kernels_in_the_cache_are_loaded_by_every_rank_of_a_node_at_once(fresh_kernel,
                                                                          monkeypatch):
    """Once the cache holds the kernels (a new process: here the same file imported again),
    the ranks of a node load them at once, none waits for another; the next call of the
    same process finds them in memory."""
    from mpi4py import MPI

    import pdes.compiling as PC
    mod, salt, _cache = fresh_kernel
    comm = MPI.COMM_WORLD
    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
    try:
        PC.compile_parts([_Part(mod)], comm, node)       # rank 0 compiles, the others load
        spec = importlib.util.spec_from_file_location(mod.__name__, mod.__file__)
        again = importlib.util.module_from_spec(spec)    # a new dispatcher, its index on disk
        sys.modules[mod.__name__] = again
        spec.loader.exec_module(again)

        def in_turn(node, work):
            raise AssertionError("the ranks of the node took turns")
        monkeypatch.setattr(PC, "_first_on_node", in_turn)
        info = PC.compile_parts([_Part(again)], comm, node)
        here = (sum(again.advance.stats.cache_misses.values()),
                sum(again.advance.stats.cache_hits.values()))
        assert all(comm.allgather(here == (0, 1))), comm.allgather(here)
        assert (info["compiled"], info["loaded"]) == (0, comm.Get_size())
        info = PC.compile_parts([_Part(again)], comm, node)
        assert info["in_memory"] == comm.Get_size()
        assert again.advance(np.int64(3), np.int64(10)) == 7 + salt
    finally:
        node.Free()
        comm.Barrier()


@pytest.mark.mpi(min_size=2)
def test_a_failure_of_the_compiling_rank_reaches_every_rank_of_its_node(fresh_kernel):
    """An exception on the node's compiling rank is raised there and, quoted, on the node's
    waiting ranks: none waits forever, and none compiles after it."""
    from mpi4py import MPI

    from pdes.compiling import compile_parts
    mod, _salt, _cache = fresh_kernel
    comm = MPI.COMM_WORLD
    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
    try:
        first = node.Get_rank() == 0
        with pytest.raises(ValueError if first else RuntimeError) as err:
            compile_parts([_Part(mod, fail=first)], comm, node)
        if not first:
            assert "failed on this node's first rank: ValueError: no compiler here" in str(err.value)
        assert sum(mod.advance.stats.cache_misses.values()) == 0
    finally:
        node.Free()
        comm.Barrier()


def test_compile_lock_holds_off_a_second_compiler(tmp_path, monkeypatch):
    """compile_lock of a kernel that is neither in memory nor in the cache takes its lock
    file: a second holder (another open of the file, as another process would) enters only
    after the first has let go; a kernel in memory or in the cache locks nothing."""
    import threading
    import types

    from models.core import jit
    from pdes.compiling import compile_lock
    monkeypatch.setenv("PDES_CACHE_DIR", str(tmp_path / "cache"))
    jit.cache_dir.cache_clear()
    try:
        def fake(module, name, overloads):
            fn = types.SimpleNamespace(__module__=module, __name__=name)
            return types.SimpleNamespace(py_func=fn, overloads=overloads)
        mod = fake("pdes.kernels.routed_fake_0123", "advance", {})
        order = []
        first_in = threading.Event()
        release = threading.Event()

        def first():
            with compile_lock(mod):
                order.append("first in")
                first_in.set()
                release.wait(10)
                order.append("first out")

        def second():
            first_in.wait(10)
            with compile_lock(mod) as waited:
                order.append("second in")
                assert waited >= 0.0
        a, b = threading.Thread(target=first), threading.Thread(target=second)
        a.start()
        b.start()
        first_in.wait(10)
        b.join(0.5)                       # second must still be waiting on the lock
        assert order == ["first in"]
        release.set()
        a.join(10)
        b.join(10)
        assert order == ["first in", "first out", "second in"]
        locks = tmp_path / "cache" / os.path.basename(jit.cache_dir()) / "locks"
        assert (locks / "routed_fake_0123.advance.lock").exists()
        with compile_lock(fake("pdes.kernels.routed_fake_0123", "advance_iq", {})):
            pass                          # another function of the module: its own lock
        assert (locks / "routed_fake_0123.advance_iq.lock").exists()
        with compile_lock(fake("pdes.kernels.routed_fake_4567", "advance", {"sig": 1})) as waited:
            assert waited == 0.0
        assert not (locks / "routed_fake_4567.advance.lock").exists()
    finally:
        jit.cache_dir.cache_clear()


def test_a_waiting_rank_looks_after_a_millisecond_then_at_doubling_intervals(monkeypatch):
    """A rank waiting for its node's compiler looks after 1 ms, then at intervals doubling up
    to 50 ms: a sweep's points, whose kernels are loaded already, wait a few milliseconds,
    a long compilation is not polled faster than every 50 ms."""
    import pdes.compiling as PC

    class Req:
        def __init__(self, n):
            self.n = n

        def Test(self):
            self.n -= 1
            return self.n < 0

    class Node:
        def Get_size(self):
            return 2

        def Get_rank(self):
            return 1

        def Ibcast(self, buf, root):
            return Req(9)

    slept = []
    monkeypatch.setattr(PC.time, "sleep", slept.append)
    ran = []
    PC._first_on_node(Node(), lambda: ran.append(1))
    assert ran == [1]
    assert slept == [0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.05, 0.05, 0.05]


def test_describe_says_a_process_waited_for_another_compiler():
    from pdes.compiling import describe
    info = {"ranks": 1, "compiled": 0, "loaded": 1, "in_memory": 0, "nodes": 1, "seconds": 40.0,
            "cache": "/c", "fallback": False, "waited_s": 38.5}
    assert describe(info) == ("kernels: loaded from the cache /c, after waiting 38.5 s for "
                              "another process that compiled them")
    assert describe({**info, "waited_s": 0.2}) == "kernels: loaded from the cache /c"


@pytest.mark.slow
def test_an_empty_shared_cache_is_compiled_once_per_node_then_loaded(tmp_path):
    """On 2 ranks of one node with an empty PDES_CACHE_DIR, pdes compile compiles on one rank
    and loads on the other; a run then loads the kernels on both (a full compile)."""
    env = {"PDES_CACHE_DIR": str(tmp_path / "cache")}
    r = run_pdes("compile", "--json", nranks=2, cwd=tmp_path, env=env, timeout=1200)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert (info["compiled"], info["loaded"], info["nodes"], info["ranks"]) == (1, 1, 1, 2)
    cache = _cache_dir(**env)
    assert info["cache"] == cache
    r = run_pdes("run", *FAST, nranks=2, cwd=tmp_path, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    assert f"[pdes] kernels: loaded from the cache {cache} on every rank (2)\n" in r.stderr


# --------------------------------------------------------------------------- the job scripts
STUDY = """\
# a small stand-in for the job scripts' study.toml
[topology]
name = "slimfly"
q = 5

[measure]
warmup_cycles = 200
measure_cycles = 300
sample_period = 100
"""


def script_commands() -> list[tuple[str, list[list[str]]]]:
    """(scheduler, [(ranks, pdes arguments), ...]) of every job script of docs/cluster.md: the
    ```sh blocks that start with ``#!/bin/bash`` and hold ``#SBATCH`` or ``#PBS`` lines; per
    ``python -m pdes`` line the launcher's ``-n`` and the arguments after ``python -m pdes``."""
    text = (ROOT / "docs" / "cluster.md").read_text()
    out = []
    for body in re.findall(r"^```sh\n(#!/bin/bash\n.*?)^```", text, flags=re.M | re.S):
        kind = "slurm" if "#SBATCH" in body else "pbs" if "#PBS" in body else None
        if kind is None:
            continue
        cmds = []
        for line in body.splitlines():
            argv = shlex.split(line, comments=True)
            if "python" not in argv:
                continue
            i = argv.index("python")
            assert argv[i + 1:i + 3] == ["-m", "pdes"], line
            assert argv[0] in ("srun", "mpirun") and "-n" in argv[:i], line
            cmds.append((int(argv[argv.index("-n") + 1]), argv[i + 3:]))
        out.append((kind, cmds))
    return out


SCRIPT = [(1, ["compile", "study.toml"]), (64, ["info", "--mpi"]),
          (64, ["run", "study.toml", "-o", "out.h5"])]
"""The pdes commands each job script runs: (launcher's -n, arguments after python -m pdes)."""


def test_the_page_has_a_slurm_and_a_pbs_script_of_64_ranks():
    """docs/cluster.md has one Slurm and one PBS script; each compiles on one rank, then runs
    pdes info --mpi and pdes run study.toml -o out.h5 on 64 (the commands run below)."""
    scripts = dict(script_commands())
    assert sorted(scripts) == ["pbs", "slurm"]
    for cmds in scripts.values():
        assert cmds == SCRIPT


@pytest.mark.parametrize("nranks", [2, 4])
def test_the_job_scripts_commands_run(tmp_path, nranks):
    """The pdes commands of the page's scripts run in order (the 64-rank ones on 2 and on 4
    ranks, a small study.toml): exit 0, info --mpi counts the ranks, the run loads the
    compiled kernels on every rank, and its results equal a 1-rank run's."""
    (tmp_path / "study.toml").write_text(STUDY)
    for n, args in SCRIPT:
        r = run_pdes(*args, nranks=1 if n == 1 else nranks, cwd=tmp_path)
        assert r.returncode == 0, (args, r.stderr)
        if args[0] == "info":
            assert f"{nranks} ranks on 1 host" in r.stdout, r.stdout
        if args[0] == "run":
            assert f"[pdes] kernels: loaded from the cache {_cache_dir()} on every rank " \
                   f"({nranks})\n" in r.stderr, r.stderr
    r = run_pdes("run", "study.toml", "-o", "one.h5", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert_same_results(tmp_path / "out.h5", tmp_path / "one.h5")
