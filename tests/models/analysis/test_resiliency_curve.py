"""Resiliency distance curves (004 Fig. 5): ``resiliency(curve=True)``, ``pdes analyze --curve``
and ``pdes plot --kind resiliency``."""
import threading

import h5py
import numpy as np
import pytest

from models.analysis import resiliency
from models.core.errors import ParameterError
from models.topology import build, from_edges
from tests.models.analysis.test_analysis import _ThreadComm, ring


def complete(n):
    u, v = np.triu_indices(n, 1)
    return from_edges("complete", {}, n, u, v, 1, 0)


def without_paths(rep):
    """The report without ``curve.paths`` (what resiliency() gives without curve=True)."""
    out = dict(rep)
    out["curve"] = {k: v for k, v in rep["curve"].items() if k != "paths"}
    return out


def test_curve_ring_is_a_path_after_one_failure():
    """A 20-ring: step 0 is the cycle (D 10, APL 100/19), one failed link leaves the path
    (D 19, APL 7), two disconnect every sample, so the curve ends after step 1."""
    pc = resiliency(ring(20), seed=4, samples=5, curve=True)["curve"]["paths"]
    assert pc["fraction"] == [0.0, 0.05]
    assert pc["connected"] == [1.0, 1.0] and pc["samples_connected"] == [5, 5]
    for k in ("mean", "min", "max"):
        assert [pc[f"diameter_{k}"][0], pc[f"diameter_{k}"][1]] == [10.0, 19.0]
        assert pc[f"avg_distance_{k}"] == pytest.approx([100 / 19, 7.0], rel=1e-12)
    assert pc["diameter_std"] == [0.0, 0.0] and pc["avg_distance_std"] == [0.0, 0.0]


def test_curve_complete_graph():
    """K12: each failed link puts one pair at distance >= 2, so APL >= 1 + 2m/(n(n-1)), equal
    while the diameter is 2; with m <= n-2 failed links the diameter is exactly 2."""
    n, L = 12, 66
    r = resiliency(complete(n), seed=1, samples=6, step=0.1, curve=True)
    pc = r["curve"]["paths"]
    m = [(s * L) // 10 for s in range(len(pc["fraction"]))]
    assert pc["diameter_max"][0] == 1.0 and pc["avg_distance_max"][0] == 1.0
    assert m[1] <= n - 2 and pc["connected"][1] == 1.0
    assert pc["diameter_min"][1] == pc["diameter_max"][1] == 2.0
    for s, ms in enumerate(m):
        low = 1 + 2 * ms / (n * (n - 1))
        assert pc["avg_distance_min"][s] >= low - 1e-12
        if pc["diameter_max"][s] == 2.0:
            assert pc["avg_distance_max"][s] == pytest.approx(low, rel=1e-12)
    assert pc["connected"] == r["curve"]["disconnect"][:len(m)]


def test_curve_keeps_thresholds_and_is_reproducible():
    """The same seed gives the same curve; with the curve the thresholds and samples (also
    adaptive ones) equal those without; another seed gives another curve; the curve's
    connected share is the disconnect curve, the means never fall while every sample is
    connected and lie between the minimum and the maximum."""
    topo = build("slimfly", {"q": 5})
    a = resiliency(topo, seed=7, samples=6, curve=True)
    assert a == resiliency(topo, seed=7, samples=6, curve=True)
    assert without_paths(a) == resiliency(topo, seed=7, samples=6)
    kw = dict(seed=3, criteria=("disconnect",), ci_width=6.0, max_samples=32, batch=8)
    b = resiliency(topo, curve=True, **kw)
    plain = resiliency(topo, **kw)
    assert b["samples"] == plain["samples"] and b["disconnect"] == plain["disconnect"]
    pc = a["curve"]["paths"]
    assert resiliency(topo, seed=8, samples=6, curve=True)["curve"]["paths"] != pc
    n = len(pc["fraction"])
    assert pc["connected"] == a["curve"]["disconnect"][:n] and pc["connected"][-1] > 0
    assert n == 20 or a["curve"]["disconnect"][n] == 0.0
    assert pc["samples_connected"] == [round(c * 6) for c in pc["connected"]]
    full = [s for s in range(n) if pc["connected"][s] == 1.0]
    for q in ("diameter", "avg_distance"):
        mean = [pc[f"{q}_mean"][s] for s in full]
        assert all(x <= y for x, y in zip(mean, mean[1:]))
        assert all(pc[f"{q}_min"][s] - 1e-12 <= pc[f"{q}_mean"][s] <= pc[f"{q}_max"][s] + 1e-12
                   for s in range(n))
    assert pc["diameter_mean"][0] == a["baseline"]["diameter"]


def test_curve_same_on_two_thread_ranks():
    """Samples with curves dealt to 2 ranks (a thread communicator) give the serial result."""
    topo = build("dragonfly", {"h": 2})
    kw = dict(seed=5, samples=6, threads=1, curve=True)
    serial = resiliency(topo, **kw)
    shared = {"size": 2, "slots": [None] * 2, "barrier": threading.Barrier(2)}
    results = [None] * 2

    def run(rank):
        results[rank] = resiliency(topo, comm=_ThreadComm(rank, shared), **kw)

    threads = [threading.Thread(target=run, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [serial, serial]


@pytest.mark.mpi(min_size=2)
def test_curve_mpi_equals_serial():
    """Under mpiexec the resiliency curve equals the single-process curve."""
    from mpi4py import MPI
    topo = build("dragonfly", {"h": 2})
    assert resiliency(topo, seed=2, samples=6, curve=True, comm=MPI.COMM_WORLD) == \
        resiliency(topo, seed=2, samples=6, curve=True)


def test_curve_option_must_be_a_bool():
    """curve must be true or false: anything else raises ParameterError naming resiliency.curve."""
    with pytest.raises(ParameterError, match="resiliency.curve"):
        resiliency(ring(6), samples=2, curve="yes")


# ----------------------------------------------------------------------------- CLI
@pytest.fixture(scope="module")
def analysis_files(tmp_path_factory):
    """Analysis files of SF q=5 and DF h=2 with curves, and one of SF q=5 without a curve."""
    from pdes.cli import main
    d = tmp_path_factory.mktemp("rescurve")
    common = ["--only", "resiliency", "--samples", "4", "--criteria", "disconnect"]
    assert main(["analyze", "slimfly", "--set", "topology.q=5", *common, "--curve",
                 "-o", str(d / "sf.h5")]) == 0
    assert main(["analyze", "dragonfly", "--set", "topology.h=2", *common, "--curve",
                 "-o", str(d / "df.h5")]) == 0
    assert main(["analyze", "slimfly", "--set", "topology.q=5", *common,
                 "-o", str(d / "plain.h5")]) == 0
    return d


def test_cli_analyze_curve_datasets_and_table(analysis_files, capsys):
    """analyze --curve writes /resiliency/curve/paths datasets with units equal to the report,
    and the table has one 'resiliency curve' row starting at 0% failed."""
    import json

    from pdes.cli import main
    with h5py.File(analysis_files / "sf.h5") as f:
        g = f["resiliency/curve/paths"]
        rep = json.loads(f.attrs["report_json"])["resiliency"]["curve"]["paths"]
        for key, values in rep.items():
            assert g[key][()].tolist() == values
        assert g["diameter_mean"].attrs["units"] == "router hops"
        assert g["fraction"].attrs["units"] == "share of links failed"
    with h5py.File(analysis_files / "plain.h5") as f:
        assert "paths" not in f["resiliency/curve"]
    capsys.readouterr()
    assert main(["analyze", "slimfly", "--set", "topology.q=5", "--only", "resiliency",
                 "--samples", "2", "--criteria", "disconnect", "--curve"]) == 0
    rows = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("resiliency curve")]
    assert len(rows) == 1 and "0%: 1.86/2.0" in rows[0]


def test_cli_curve_note_before_large_work(monkeypatch, capsys):
    """Above NOTICE_STEPS, analyze --curve says on stderr how many searches it may run."""
    from pdes.cli import analyze as cli
    from pdes.cli import main
    monkeypatch.setattr(cli, "NOTICE_STEPS", 0)
    assert main(["analyze", "slimfly", "--set", "topology.q=5", "--only", "resiliency",
                 "--samples", "2", "--curve", "--json"]) == 0
    assert capsys.readouterr().err.strip().splitlines() == [
        "pdes: note: resiliency: --curve: all 50 sources at up to 20 steps of 2 samples: "
        "2,000 BFS over up to 175 links = 3.5e+05 source-link steps"]


def test_plot_resiliency_of_several_files(analysis_files, capsys):
    """plot --kind resiliency of two analysis files writes a PNG; the figure's first line per
    file and axis holds the file's mean curve over the steps every sample survives."""
    from pdes.cli import main
    from pdes.plot import resiliency_curve, resiliency_figure
    out = analysis_files / "fig5.png"
    files = [str(analysis_files / "sf.h5"), str(analysis_files / "df.h5")]
    assert main(["plot", *files, "--kind", "resiliency", "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    curves = [resiliency_curve(f) for f in files]
    assert curves[0]["label"] == "slimfly q=5 (50 routers)"
    assert curves[1]["label"] == "dragonfly h=2 (36 routers)"
    fig = resiliency_figure(curves)
    for ax, q in zip(fig.axes, ("avg_distance", "diameter")):
        solid = [ln for ln in ax.get_lines() if ln.get_linestyle() == "-"]
        assert len(solid) == 2
        for ln, c in zip(solid, curves):
            full = int((c["connected"] == 1.0).sum())
            assert ln.get_xdata().tolist() == (100 * c["fraction"][:full]).tolist()
            assert ln.get_ydata().tolist() == c[f"{q}_mean"][:full].tolist()
    # an analysis file alone defaults to the resiliency kind, named after the file
    assert main(["plot", files[0]]) == 0
    assert (analysis_files / "sf-resiliency.png").exists()


@pytest.mark.parametrize("case, text", [
    ("plain", "no resiliency curve"),
    ("latency", "only --kind resiliency and path-sets plot several files"),
    ("point", "--point: not an option of --kind resiliency"),
    ("study", "--kind resiliency plots 'pdes analyze -o' files, not a file without a format"),
])
def test_plot_resiliency_refusals(analysis_files, tmp_path, capsys, case, text):
    """A file without a curve, several files of another kind, a run option, a file that is
    not an analysis file: exit 2, one 'pdes: error:' line, no figure."""
    from pdes.cli import main
    sf = str(analysis_files / "sf.h5")
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["x"] = np.arange(3)
    argv = {"plain": [str(analysis_files / "plain.h5")],
            "latency": [sf, sf, "--kind", "latency"],
            "point": [sf, "--kind", "resiliency", "--point", "p0"],
            "study": [sf, str(other), "--kind", "resiliency"]}[case]
    out = tmp_path / "f.png"
    capsys.readouterr()
    assert main(["plot", *argv, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pdes: error: ") and text in err[0], err
    assert not out.exists()
