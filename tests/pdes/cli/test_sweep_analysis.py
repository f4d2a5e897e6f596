"""``pdes sweep --analyze``: studies of structural analyses, their file, show and plot."""
import json
import math
import os

import h5py
import numpy as np
import pytest

from pdes import analysis as A
from pdes import analysis_study as AS
from pdes.cli import main

SF5 = ["--set", "topology.name=slimfly", "--set", "topology.q=5"]


def _analyze_json(capsys, q, only, *extra):
    capsys.readouterr()
    assert main(["analyze", "slimfly", "--set", f"topology.q={q}", "--only", only, "--json",
                 *extra]) == 0
    return json.loads(capsys.readouterr().out)


def _sweep(capsys, *args):
    capsys.readouterr()
    rc = main(["sweep", "--quiet", *args])
    return rc, capsys.readouterr()


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def test_each_series_equals_analyze_json(tmp_path, capsys):
    """Every metric of every series equals 'pdes analyze --json' of that series' config."""
    out = str(tmp_path / "s.h5")
    rc, _ = _sweep(capsys, "--set", "topology.name=slimfly", "--analyze",
                   "paths,moore,latency,cables,cost", "--vary", "topology.q=5,7",
                   "--vary", "analysis.switch_delay=20,100", "-o", out)
    assert rc == 0
    data = AS.read(out)
    t = data["table"]
    assert len(t) == 4 and data["complete"]
    for i, row in enumerate(t):
        q, d = int(row["topology.q"]), int(row["analysis.switch_delay"])
        rep = _analyze_json(capsys, q, "paths,moore,latency,cables,cost", "--switch-delay", str(d))
        got = dict(data["rows"][i]["report"])
        assert got.pop("seconds").keys() == rep.pop("seconds").keys()
        assert got == rep
        want = AS.flatten(rep)
        assert want["latency.nearest.max"] == rep["latency"]["switch_delay"][str(d)]["nearest"]["max"]
        for name, value in want.items():
            assert _same(float(row[name]), value), (q, d, name)
    # the numbers themselves: routers of SF q=5 and q=7, and latency growing with the delay
    assert list(t["summary.routers"]) == [50, 50, 98, 98]
    assert list(t["paths.router.diameter"]) == [2, 2, 2, 2]
    assert t["latency.nearest.max"][1] > t["latency.nearest.max"][0]


def test_vary_switch_delay_one_row_each(tmp_path, capsys, monkeypatch):
    """--vary analysis.switch_delay gives one row per delay, the network built once."""
    builds = []
    real = A.build_network
    monkeypatch.setattr(A, "build_network", lambda *a, **k: builds.append(1) or real(*a, **k))
    out = str(tmp_path / "s.h5")
    rc, _ = _sweep(capsys, *SF5, "--analyze", "latency", "--vary",
                   "analysis.switch_delay=20,60,100", "-o", out)
    assert rc == 0 and len(builds) == 1
    t = AS.read(out)["table"]
    assert list(t["analysis.switch_delay"]) == [20, 60, 100]
    assert list(t["latency.switch_delay_ns"]) == [20, 60, 100]
    for d, got in zip((20, 60, 100), t["latency.nearest.max"]):
        rep = _analyze_json(capsys, 5, "latency", "--switch-delay", str(d))
        assert got == rep["latency"]["switch_delay"][str(d)]["nearest"]["max"]
    # a diameter-2 network: three switches on the longest path, 3 x 40 ns more per step
    # (the numbers docs/analysis.md gives)
    assert list(t["latency.nearest.max"]) == [405, 525, 645]
    assert [round(v, 1) for v in t["latency.nearest.mean"]] == [380.2, 494.5, 608.8]


def test_set_and_table_options(tmp_path, capsys):
    """An [analysis] table and --set analysis.KEY give every series the option."""
    cfg = tmp_path / "c.toml"
    cfg.write_text('[topology]\nname = "slimfly"\nq = 5\n[analysis]\nendpoint_delay = 100\n')
    out = str(tmp_path / "s.h5")
    rc, _ = _sweep(capsys, str(cfg), "--set", "analysis.switch_delay=60", "--analyze", "latency",
                   "-o", out)
    assert rc == 0
    t = AS.read(out)["table"]
    rep = _analyze_json(capsys, 5, "latency", "--switch-delay", "60", "--endpoint-delay", "100")
    assert len(t) == 1 and t["latency.nearest.max"][0] == \
        rep["latency"]["switch_delay"]["60"]["nearest"]["max"]


def test_resume_runs_only_missing_series(tmp_path, capsys, monkeypatch):
    """--resume of a file with some series computes only the others; the result equals a
    full run."""
    args = [*SF5, "--analyze", "paths,latency", "--vary", "analysis.switch_delay=20,60,100"]
    full = str(tmp_path / "full.h5")
    assert _sweep(capsys, *args, "-o", full)[0] == 0
    part = str(tmp_path / "part.h5")
    spec = AS.make_spec({}, ["topology.name=slimfly", "topology.q=5"],
                        ["analysis.switch_delay=20,60,100"], "paths,latency")
    AS.write(part, spec, [r for r in AS.read(full)["rows"] if r["series"] == 1], "test")
    assert not AS.read(part)["complete"]
    calls = []
    real = A.report
    monkeypatch.setattr(A, "report", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert _sweep(capsys, *args, "-o", part)[0] == 2          # exists: needs --resume
    assert _sweep(capsys, *args, "-o", part, "--resume")[0] == 0
    assert len(calls) == 2
    a, b = AS.read(full), AS.read(part)
    assert b["complete"] and a["table"].dtype == b["table"].dtype
    assert a["table"].tobytes() == b["table"].tobytes()
    # another study's file is refused
    rc, cap = _sweep(capsys, *SF5, "--analyze", "paths", "-o", part, "--resume")
    assert rc == 2 and "holds another analysis study" in cap.err


@pytest.mark.parametrize("args, key", [
    (["--analyze", "latency,nope"], "--analyze"),
    (["--analyze", "latency", "--vary", "analysis.nope=1,2"], "analysis.nope"),
    (["--analyze", "latency", "--set", "analysis.colour=red"], "analysis.colour"),
    (["--analyze", "latency", "--vary", "analysis.switch_delay=-5,20"], "analysis.switch_delay"),
    (["--analyze", "cost", "--set", "analysis.cables=gold"], "analysis.cables"),
    (["--analyze", "latency", "--loads", "0.1,0.2"], "--loads"),
    (["--analyze", "latency", "--saturation"], "--saturation"),
    (["--analyze", "latency", "--seeds", "2"], "--seeds"),
    (["--analyze", "latency", "--concurrent", "2"], "--concurrent"),
])
def test_refusals(tmp_path, capsys, args, key):
    """Bad input: one 'pdes: error: <key>: ...' line, exit 2, no file."""
    out = tmp_path / "s.h5"
    rc, cap = _sweep(capsys, *SF5, *args, "-o", str(out))
    lines = cap.err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith(f"pdes: error: {key}"), lines
    assert not out.exists() and os.listdir(tmp_path) == []


def test_a_bad_network_of_a_later_series_is_refused_before_any_work(tmp_path, capsys):
    """A series whose network parameters are refused (SF q=6 after q=5) stops the study before
    the first series is analysed: one error line, exit 2, no file (it wrote q=5's)."""
    out = tmp_path / "s.h5"
    rc, cap = _sweep(capsys, "--set", "topology.name=slimfly", "--analyze", "paths",
                     "--vary", "topology.q=5,6", "-o", str(out))
    lines = cap.err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("pdes: error: topology.q"), lines
    assert not out.exists() and os.listdir(tmp_path) == []


@pytest.mark.parametrize("table, key", [
    ("[sweep]\nvary = 3\n", "sweep.vary"),
    ('[sweep]\nvary = {"topology.q" = 5}\n', "sweep.vary.topology.q"),
    ('[sweep]\nloads = "0.1:0.5:0.1"\n', "sweep.loads"),
    ("[analysis]\nswitch_delay = 20\nbogus = 1\n", "analysis.bogus"),
])
def test_refusals_of_the_config_file(tmp_path, capsys, table, key):
    """A malformed [sweep] or [analysis] table of the config file: one error line naming the
    key, exit 2, no file."""
    cfg = tmp_path / "c.toml"
    cfg.write_text('[topology]\nname = "slimfly"\nq = 5\n' + table)
    out = tmp_path / "s.h5"
    rc, cap = _sweep(capsys, str(cfg), "--analyze", "latency", "-o", str(out))
    lines = cap.err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith(f"pdes: error: {key}"), lines
    assert not out.exists()


def test_show_and_plot(tmp_path, capsys):
    """show prints the table (and CSV), plot --kind metric writes a PNG; a bad --y and a
    malformed file are refused."""
    out = str(tmp_path / "s.h5")
    assert _sweep(capsys, *SF5, "--analyze", "latency", "--vary", "analysis.switch_delay=20,60",
                  "-o", out)[0] == 0
    assert main(["show", out, "--csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    head = lines[0].split(",")
    assert len(lines) == 3 and head[0] == "analysis.switch_delay"
    col = head.index("latency.nearest.max")
    assert [float(r.split(",")[col]) for r in lines[1:]] == list(AS.read(out)["table"]
                                                              ["latency.nearest.max"])
    assert main(["show", out]) == 0 and "latency.nearest.max" in capsys.readouterr().out
    png = str(tmp_path / "f.png")
    assert main(["plot", out, "--kind", "metric", "--x", "analysis.switch_delay", "--y",
                 "latency.nearest.mean", "-o", png]) == 0
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert main(["plot", out]) == 0                      # default kind of this file: metric
    assert os.path.exists(str(tmp_path / "s-metric.png"))
    capsys.readouterr()
    assert main(["plot", out, "--kind", "metric", "--y", "nope", "-o", png]) == 2
    assert capsys.readouterr().err.startswith("pdes: error: --y: 'nope'")
    bad = str(tmp_path / "bad.h5")
    with h5py.File(bad, "w") as f:
        f.attrs["format"] = AS.FORMAT
        f.attrs["format_version"] = AS.FORMAT_VERSION
    assert main(["show", bad]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pdes: error: ") and "malformed" in err[0]


@pytest.mark.parametrize("column, unit", [
    ("latency.nearest.max", "ns"), ("latency.nearest.hops_mean", None),
    ("latency.model.ns_per_m", "ns/m"), ("cables.cables.m_mean", "m"),
    ("cables.cables.optical.count", None), ("cost.per_endpoint", "$"),
    ("cost.routers.radix_max", None), ("power.per_endpoint", "W"),
    ("cables.latency_cycles.max", "cycles"), ("resiliency.disconnect.mean", "% of links"),
    ("resiliency.disconnect.fraction", None), ("resiliency.baseline.diameter", None),
    ("bisection.beta", None)])
def test_metric_axes_name_their_unit(column, unit):
    """A metric figure's axis names the column's unit where it has one."""
    assert AS.metric_unit(column) == unit


def test_a_metric_without_any_value_is_refused(tmp_path, capsys):
    """The Moore ratio of fat trees (indirect networks) is undefined at every point: plotting it
    is refused in one line instead of drawing an empty figure."""
    out = str(tmp_path / "ft.h5")
    assert _sweep(capsys, "--set", "topology.name=fattree", "--set", "topology.k=4",
                  "--analyze", "paths,moore", "--vary", "topology.k=4,6", "-o", out)[0] == 0
    capsys.readouterr()
    png = str(tmp_path / "ft.png")
    assert main(["plot", out, "--kind", "metric", "--y", "moore.ratio", "-o", png]) == 2
    assert capsys.readouterr().err.strip() == (
        "pdes: error: --y: 'moore.ratio' has no value at any point of the study (the analysis "
        "does not define it for these networks); pick another column")
    assert not os.path.exists(png)
    assert main(["plot", out, "--kind", "metric", "--y", "paths.router.diameter", "-o", png]) == 0


def test_metric_on_the_x_axis_skywalk(tmp_path, capsys):
    """Latency against cable length (002 Fig. 10's form) on Skywalk: a metric column as --x,
    the first varied key along each line, one line per value of the second; every series is
    what 'pdes analyze' reports for its config."""
    out = str(tmp_path / "sky.h5")
    base = ["--set", "topology.name=skywalk", "--set", "topology.c=16", "--set",
            "layout.preset=skywalk", "--set", "layout.cycle_ns=0.5"]
    assert _sweep(capsys, *base, "--set", "analysis.switch_delay=60", "--analyze",
                  "latency,cables", "--vary", "topology.r_limit=0.5,1.0", "--vary",
                  "topology.d_o=1,2", "-o", out)[0] == 0
    data = AS.read(out)
    t = data["table"]
    assert len(t) == 4
    for row in t:
        r, d = float(row["topology.r_limit"]), int(row["topology.d_o"])
        capsys.readouterr()
        assert main(["analyze", "skywalk", "--set", "topology.c=16", "--set",
                     "layout.preset=skywalk", "--set", "layout.cycle_ns=0.5", "--set",
                     f"topology.r_limit={r}", "--set", f"topology.d_o={d}", "--only",
                     "latency,cables", "--switch-delay", "60", "--json"]) == 0
        rep = json.loads(capsys.readouterr().out)
        assert row["cables.cable_m_total"] == rep["cables"]["cable_m_total"]
        assert row["latency.fastest.max"] == rep["latency"]["switch_delay"]["60"]["fastest"]["max"]
    x, y, lines = AS.metric_series(data, "cables.cable_m_total", "latency.fastest.mean")
    assert (x, y) == ("cables.cable_m_total", "latency.fastest.mean")
    assert [label for label, _, _ in lines] == ["topology.d_o=1", "topology.d_o=2"]
    for label, xs, ys in lines:
        rows = t[t["topology.d_o"] == float(label.split("=")[1])]
        assert len(xs) == 2 and list(xs) == sorted(rows["cables.cable_m_total"])
        assert sorted(zip(xs, ys)) == sorted(zip(rows["cables.cable_m_total"],
                                                 rows["latency.fastest.mean"]))
    # more links (d_o = 2) mean more cable on this floor
    assert lines[1][1].max() > lines[0][1].max()
    png = str(tmp_path / "f.png")
    assert main(["plot", out, "--kind", "metric", "--x", "cables.cable_m_total", "--y",
                 "latency.fastest.max", "-o", png]) == 0
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()
    assert main(["plot", out, "--kind", "metric", "--x", "cables.nope", "-o", png]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pdes: error: --x: 'cables.nope' is neither")


@pytest.mark.mpi(min_size=2)
def test_two_ranks_equal_one(tmp_path):
    """An analysis study with resiliency on all ranks of the world writes, on rank 0, the
    same table as on one process."""
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    base = world.bcast(str(tmp_path), root=0)
    spec = AS.make_spec({}, ["topology.name=slimfly", "topology.q=5", "analysis.samples=4"],
                        ["analysis.switch_delay=20,60"], "latency,resiliency")
    AS.run(spec, os.path.join(base, "par.h5"), world, False, "test")
    if world.Get_rank() == 0:
        AS.run(spec, os.path.join(base, "ser.h5"), None, False, "test")
        a, b = AS.read(os.path.join(base, "par.h5")), AS.read(os.path.join(base, "ser.h5"))
        assert a["table"].tobytes() == b["table"].tobytes() and len(a["table"]) == 2
        assert np.all(a["table"]["resiliency.samples"] == 4)
    world.Barrier()
