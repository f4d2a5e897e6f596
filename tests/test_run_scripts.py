"""The scripts of run_scripts/ as a user meets them: this checkout's packages, one-line errors
for bad options, a failed child's own error, and short measured windows."""
import ast
import json
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT, run_python

SCRIPTS = ROOT / "run_scripts"
PACKAGES = ("pdes", "models", "partition")


def _script(name, *args, cwd=ROOT, timeout=300):
    return run_python(SCRIPTS / name, *args, cwd=cwd, timeout=timeout)


def _imports_packages(node) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] in PACKAGES for a in node.names)
    return isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PACKAGES


def _is_path_insert(stmt) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and ast.unparse(stmt.value.func) == "sys.path.insert"
            and ast.unparse(stmt.value.args[0]) == "0")


@pytest.mark.parametrize("path", sorted(SCRIPTS.glob("*.py")), ids=lambda p: p.name)
def test_scripts_import_this_checkout(path):
    """A script that imports pdes, models or partition puts the repository root first on
    sys.path, at module level before any such import."""
    tree = ast.parse(path.read_text())
    if not any(_imports_packages(n) for n in ast.walk(tree)):
        return
    body = tree.body
    inserts = [i for i, s in enumerate(body) if _is_path_insert(s)]
    assert inserts, f"{path.name}: no sys.path.insert(0, <repository root>) at module level"
    top = [i for i, s in enumerate(body) if _imports_packages(s)]
    assert all(i > inserts[0] for i in top), f"{path.name}: imports a package before the insert"


@pytest.mark.parametrize("name, args, err", [
    ("goal_trace.py", ["--read", "missing.goal"], "error: file: cannot read 'missing.goal'"),
    ("bench_scale.py", ["--instance", "sf5", "--set", "measure.nope=1"],
     "error: measure.nope: unknown key"),
    ("validate_routing.py", ["--set", "router.num_vcs=abc"],
     "error: router.num_vcs: expected an integer"),
    ("validate_exchanges.py", ["--vcs", "-1", "--instances", "SF q=13 p=9"],
     "error: router.num_vcs: must be in [0, 127]"),
    ("validate_min.py", ["--cycles", "0"], "error: measure.measure_cycles: must be in"),
])
def test_parameter_errors_are_one_line_from_this_checkout(tmp_path, name, args, err):
    """A bad config value ends the script with status 2 and one error line, no traceback; the
    packages come from this checkout even when PYTHONPATH names others first."""
    for pkg in PACKAGES:        # stand-ins that fail on import
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text(f"raise ImportError('the {pkg} stand-in')\n")
    r = subprocess.run([sys.executable, str(SCRIPTS / name), *args], capture_output=True,
                       text=True, cwd=tmp_path, timeout=300, check=False,
                       env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [r.stderr.strip()] and err in r.stderr, r.stderr


@pytest.mark.parametrize("name, args, err", [
    ("goal_trace.py", ["--check", "-o", "x.goal"], "--check: only with --read FILE"),
    ("reproduce_latency.py", ["--switch-delay", "abc"], "--switch-delay: want comma-separated"),
    ("resiliency_perf.py", ["--fractions", "abc"], "--fractions: want comma-separated shares"),
    ("resiliency_perf.py", ["--fractions", "0,1.5"], "--fractions: want comma-separated shares"),
    ("bench_buffers.py", ["large", "--instances", "bdf19,nope"], "unknown instance 'nope'"),
    ("reproduce_tables.py", ["--max-n", "10"], "--max-n: no network of Table III fits"),
])
def test_bad_options_are_usage_errors(tmp_path, name, args, err):
    """A bad option is argparse's usage error (status 2), before any work."""
    r = _script(name, *args, cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and err in r.stderr.strip().splitlines()[-1], r.stderr
    assert "Traceback" not in r.stderr and not list(tmp_path.iterdir())


def test_compiled_code_is_not_a_script():
    """compiled_code.py, a module of two scripts, refuses to run as one (status 2)."""
    r = _script("compiled_code.py", "--anything", timeout=60)
    assert r.returncode == 2 and "not a script" in r.stderr


def test_bench_engine_short_window_and_child_error():
    """bench_engine.py measures fewer cycles than the default sample period; a child's failure
    shows the child's error, then one line naming the run."""
    small = ["--q", "5", "--p", "4", "--loads", "0.3", "--warmup", "50", "--measure", "100"]
    r = _script("bench_engine.py", *small)
    assert r.returncode == 0, r.stderr
    row = r.stdout.splitlines()[-1].split()
    assert row[0] == "0.3" and int(row[3]) >= 150            # load, ..., cycles
    r = _script("bench_engine.py", *small, "--set", "measure.nope=1")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert lines[-2].startswith("error: measure.nope: unknown key")
    assert lines[-1] == "bench_engine: the run at load 0.3 failed (status 2)"


def test_bench_sweep_shows_the_failed_command():
    """bench_sweep.py ends with the pdes command's own error and one line naming it."""
    r = _script("bench_sweep.py", "--measure", "0")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1, r.stderr
    assert "measure.measure_cycles: must be in" in lines[-2]
    assert lines[-1] == "bench_sweep: the sweep failed (status 2)"


def test_bench_buffers_speed_times_the_other_tree(tmp_path):
    """bench_buffers.py speed refuses an --other without a pdes package, and its runs of the
    other tree import that tree's pdes (a stand-in here, whose error is shown)."""
    for other in (tmp_path / "missing", tmp_path):
        r = _script("bench_buffers.py", "speed", "--other", str(other), timeout=120)
        assert r.returncode == 1 and r.stderr.strip().splitlines() == [
            f"bench_buffers: --other: {other} has no pdes package (pdes/__init__.py)"]
    (tmp_path / "pdes").mkdir()
    (tmp_path / "pdes" / "__init__.py").write_text("raise ImportError('the other tree')\n")
    r = _script("bench_buffers.py", "speed", "--other", str(tmp_path), "--rounds", "1",
                timeout=120)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and lines[-2] == "ImportError: the other tree", r.stderr
    assert lines[-1] == "bench_buffers: the run of other in round 0 failed (status 1)"


def test_bench_buffers_speed_child_short_window():
    """The speed runs measure fewer cycles than the default sample period."""
    r = _script("bench_buffers.py", "speed-child", "--tree", str(ROOT), "--warmup", "10",
                "--measure", "20")
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout.strip().splitlines()[-1])
    assert row["cycles"] >= 30 and row["moves"] > 0
