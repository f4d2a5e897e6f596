"""The scaling script, and a run on 64 ranks that must equal the 1-rank run.

The 64-rank test is marked slow: on a 2-core machine the ranks are
oversubscribed 32 times (about a minute and 6 GB of memory in all).
"""
import h5py
import numpy as np
import pytest

from tests.helpers import ROOT, assert_same_results, run_pdes, run_python

SCRIPT = ROOT / "run_scripts" / "scaling.py"


def _script(*args, timeout=600):
    return run_python(SCRIPT, *args, cwd=ROOT, timeout=timeout)


def test_scaling_script_table_and_file(tmp_path):
    """A short 1- and 2-rank study: table, identical results, per-rank figures in HDF5."""
    out = tmp_path / "scaling.h5"
    r = _script("--instances", "small", "--ranks", "2", "--cycles", "400", "-o", str(out))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    header = lines[0]
    for col in ("wall s", "speedup", "kernel max/mean", "pack max/mean", "wait max/mean",
                "unpack max/mean", "LA", "cut %", "RSS max/sum MB", "same"):
        assert col in header
    rows = [ln.split() for ln in lines[2:4]]
    assert [row[:2] for row in rows] == [["small", "1"], ["small", "2"]]
    assert all(row[-1] == "yes" for row in rows), r.stdout       # bit-identical to 1 rank
    with h5py.File(out, "r") as f:
        assert set(f["small"]) == {"ranks_1", "ranks_2"}
        g = f["small/ranks_2"]
        W, la = int(g.attrs["window"]), int(g.attrs["lookahead"])
        assert 1 <= W <= la and 0 < g.attrs["cut_fraction"] < 1
        pr = g["per_rank"]
        for k in ("kernel_s", "kernel_cpu_s", "pack_s", "wait_s", "unpack_s", "rss_mb", "routers"):
            assert pr[k].shape == (2,), k
        # windows of W cycles that also end at every sample boundary (200 cycles)
        assert np.all(pr["exchanges"][()] == g.attrs["cycles"] // 200 * -(-200 // W))
        assert np.all(pr["bytes_sent"][()] > 0) and np.all(pr["neighbours"][()] == 1)
        assert pr["routers"][()].sum() == g.attrs["n_routers"]
        assert g.attrs["digest"] == f["small/ranks_1"].attrs["digest"]
        assert g["summary"].attrs["accepted_load"] == f["small/ranks_1/summary"].attrs["accepted_load"]
    # the table is reprinted from the file, with the projection
    r2 = _script("--table", str(out), "--project", "16")
    assert r2.returncode == 0, r2.stderr
    assert r2.stdout.splitlines()[2:4] == lines[2:4]
    assert "projection to 16 ranks" in r2.stdout


def test_scaling_script_rejects_unknown_instance(tmp_path):
    r = _script("--instances", "nope", "-o", str(tmp_path / "x.h5"))
    assert r.returncode != 0 and "unknown instance 'nope'" in r.stderr
    assert not (tmp_path / "x.h5").exists()


def _mem_available_mb():
    """MemAvailable in MB (None if unknown), read the way scaling.py reads it."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("scaling_script", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.Monitor._avail()


@pytest.mark.slow
def test_64_ranks_equal_one_rank(tmp_path):
    """`mpiexec -n 64 python -m pdes run` (Slim Fly q=7, 98 routers) equals the 1-rank file."""
    avail = _mem_available_mb()
    if avail is not None and avail < 64 * 200:
        pytest.skip(f"64 ranks need about 13 GB of free memory ({avail:.0f} MB available)")
    sets = ["--set", "topology.q=7", "--set", "measure.warmup_cycles=200",
            "--set", "measure.measure_cycles=200"]
    one, many = tmp_path / "one.h5", tmp_path / "many.h5"
    r1 = run_pdes("run", "--quiet", *sets, "-o", str(one))
    assert r1.returncode == 0, r1.stderr
    r64 = run_pdes("run", "--quiet", *sets, "-o", str(many), nranks=64, timeout=1800)
    assert r64.returncode == 0, r64.stderr[-2000:]
    assert r64.stdout == r1.stdout.replace(str(one), str(many))
    assert_same_results(one, many)
    with h5py.File(many, "r") as f:
        assert f["run"].attrs["nranks"] == 64
        rpr = f["run/partition/routers_per_rank"][()]
        assert rpr.shape == (64,) and rpr.min() >= 1 and rpr.sum() == 98


def test_bench_scale_reports_memory_startup_and_moves():
    """bench_scale.py reports per-rank and per-node memory, every start-up phase, and flit moves
    that agree with the delivered flits' router traversals (accepted x endpoints x (hops + 1))."""
    import json
    r = run_python(ROOT / "run_scripts" / "bench_scale.py", "--instance", "sf5",
                   "--cycles", "1000", "--project", "64", "--json", nranks=2, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout.strip().splitlines()[-1])
    assert rep["ranks"] == 2 and len(rep["per_rank"]) == 2 and len(rep["per_node"]) == 1
    assert set(rep["startup_s"]) == {"build_s", "layout_s", "distances_s", "tables_s", "traffic_s",
                                     "partition_s", "state_s", "compile_s"}
    node = rep["per_node"][0]
    assert node["ranks"] == 2 and node["pss_mb"] > 0
    assert node["project_mb"] > node["pss_mb"]
    assert abs(rep["accepted_load"] - 0.3) < 0.03
    traversals = rep["accepted_load"] * rep["endpoints"] * (rep["hops_mean"] + 1)
    assert abs(rep["flit_moves_per_cycle"] / traversals - 1) < 0.05
