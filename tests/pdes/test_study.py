"""Studies: `pdes sweep` (points equal to single runs, saturation search, resume), `pdes show`,
`pdes plot`, `pdes run --json`."""
import csv
import functools
import io
import json

import h5py
import numpy as np
import pytest

from models.core.errors import ParameterError
from pdes import config as C
from pdes import study as S
from tests.helpers import assert_same_results, cli_sets, phase_sets, run_pdes

FAST = phase_sets("study")
sets = functools.partial(cli_sets, preset="study")      # FAST and then these, as --set arguments
pdes = functools.partial(run_pdes, timeout=600)


# --------------------------------------------------------------------------- the spec
def test_loads_are_parsed_inclusive_and_checked():
    """start:stop:step includes stop; lists are sorted; loads outside (0, 1] or NaN are refused."""
    assert S.parse_loads("0.1:0.5:0.1") == [0.1, 0.2, 0.3, 0.4, 0.5]
    assert S.parse_loads("0.3,0.1") == [0.1, 0.3]
    assert S.parse_loads([0.2, 0.2, 1]) == [0.2, 1.0]
    for bad in ("0:0.5:0.1", "0.1:1.2:0.1", "0.5:0.1:0.1", "0.1:0.5:0", "nan", "0.1:0.5", "a,b",
                "0.1:inf:0.1", [float("nan")], [True], "0.1,,0.2", "0.1,", ""):
        with pytest.raises(ParameterError, match="loads"):
            S.parse_loads(bad)


def test_vary_values_are_toml():
    """--vary values parse as TOML (numbers, lists), bare words stay strings."""
    assert S.parse_vary("routing.algorithm=min,ugal_l") == ("routing.algorithm", ["min", "ugal_l"])
    assert S.parse_vary("topology.q=5,7") == ("topology.q", [5, 7])
    assert S.parse_vary("topology.sizes=[4,4],[8,8]") == ("topology.sizes", [[4, 4], [8, 8]])


@pytest.mark.parametrize("kw,key", [
    (dict(vary_args=["routing.bogus=1,2"]), "routing"),
    (dict(vary_args=["traffic.load=0.1,0.2"]), "--vary traffic.load"),
    (dict(vary_args=["output.file=a,b"]), "--vary output.file"),
    (dict(vary_args=["routing.algorithm=min", "routing.algorithm=valiant"]), "given twice"),
    (dict(vary_args=["routing.algorithm=min,min"]), "given twice"),
    (dict(raw={"sweep": {"vary": {"topology.q": [5, 5.0]}}}), "given twice"),
    (dict(vary_args=["nodot=1,2"]), "section.key"),
    (dict(seeds=0), "--seeds"),
    (dict(resolution=float("nan"), saturation=True), "--resolution: must be a number"),
    (dict(resolution=0.0, saturation=True), "--resolution: must be a number"),
    (dict(resolution=0.05), "--resolution: the precision of a saturation search"),
    (dict(loads_arg="0.1:0.2:x"), "--loads"),
    (dict(raw={"sweep": {"bogus": 1}}), "sweep.bogus"),
    (dict(raw={"sweep": {"vary": {"routing.algorithm": "min"}}}), "sweep.vary"),
    (dict(raw={"sweep": {"loads": "2:3:1"}}, loads_arg=None), "sweep.loads"),
])
def test_bad_study_input_names_the_key(kw, key):
    """Every bad study input raises ParameterError naming the key, before any work."""
    args = dict(raw={}, sets=[], vary_args=[], loads_arg="0.1", saturation=None, resolution=None,
                seeds=None)
    args.update(kw)
    with pytest.raises(ParameterError, match=key.replace(".", r"\.")):
        S.make_spec(**args)


def test_sweep_table_in_config_file_and_cli_override(tmp_path):
    """A [sweep] table gives the same spec as the command line; --vary replaces the file's key."""
    raw = {"sweep": {"vary": {"routing.algorithm": ["min", "valiant"]}, "loads": "0.1:0.3:0.1",
                     "seeds": 2, "saturation": True}}
    a = S.make_spec(raw, [], [], None, None, None, None)
    b = S.make_spec({}, [], ["routing.algorithm=min,valiant"], "0.1:0.3:0.1", True, None, 2)
    assert a.identity() == b.identity()
    c = S.make_spec(raw, [], ["routing.algorithm=ugal_l"], None, None, None, None)
    assert c.vary == [("routing.algorithm", ["ugal_l"])]
    assert len(a.series) == 2 and a.loads == [0.1, 0.2, 0.3] and a.seeds == 2


# --------------------------------------------------------------------------- points = runs
def test_sweep_points_equal_single_runs(tmp_path):
    """Every point of a sweep has the datasets of `pdes run` of the same resolved config."""
    out = tmp_path / "study.h5"
    r = pdes("sweep", *sets(), "--vary", "routing.algorithm=min,ugal_g", "--loads", "0.3,0.7",
             "-o", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    with h5py.File(out) as f:
        assert f.attrs["finished"] and f.attrs["format"] == "pdes-study"
        table = f["table"][()]
        assert len(table) == 4
        for row in table:
            name = row["point"].decode()
            alg = row["routing.algorithm"].decode()
            ref = tmp_path / f"{name}.h5"
            rr = pdes("run", *sets(f"routing.algorithm={alg}", f"traffic.load={row['load']}",
                                   "measure.on_deadlock=saturated"), "-o", str(ref), "--quiet")
            assert rr.returncode == 0, rr.stderr
            with h5py.File(ref) as g:
                assert_same_results(f["points"][name], g, attrs=False)
                assert f["points"][name]["config/routing/algorithm"][()].decode() == alg
                assert row["accepted"] == g["summary/accepted_load"][()]
                assert row["latency_mean"] == g["summary/packet_latency_mean"][()]


def test_run_file_holds_config_as_datasets(tmp_path):
    """A run file holds every resolved config key as /config/<section>/<key>."""
    out = tmp_path / "r.h5"
    r = pdes("run", *sets("traffic.load=0.25", "topology.q=7"), "-o", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    with h5py.File(out) as f:
        assert f["config/traffic/load"][()] == 0.25
        assert f["config/topology/q"][()] == 7
        assert f["config/routing/algorithm"][()].decode() == "min"
        cfg = C.resolve({}, [f"{s}" for s in FAST] + ["traffic.load=0.25", "topology.q=7"])
        for sec, body in cfg.items():
            for k, v in body.items():
                if v is not None and k != "file":
                    assert f"config/{sec}/{k}" in f, (sec, k)


def test_run_json_prints_the_summary(tmp_path):
    """`pdes run --json` prints one JSON object with the summary values."""
    out = tmp_path / "r.h5"
    r = pdes("run", *sets(), "-o", str(out), "--quiet", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    with h5py.File(out) as f:
        assert d["accepted_load"] == f["summary/accepted_load"][()]
        assert d["saturated"] is False and d["results_file"] == str(out)


# --------------------------------------------------------------------------- saturation
def _sweep_in_process(tmp_path, name, *args):
    from pdes.cli import main
    out = tmp_path / name
    assert main(["sweep", *args, "-o", str(out), "--quiet"]) == 0
    return out


def test_saturation_worst_case_minimal_slimfly(tmp_path):
    """SF q=5 p=4, worst case, minimal routing saturates at 1/(2p) = 0.125 (001 Sec. 4.3.1)."""
    out = _sweep_in_process(tmp_path, "wc.h5", *sets("measure.measure_cycles=1500",
                                                    "traffic.pattern=worst_case", "topology.p=4"),
                            "--loads", "0.05:0.25:0.05", "--saturation")
    with h5py.File(out) as f:
        sat = f["saturation"][()]
        assert len(sat) == 1 and sat["status"][0].decode() == "found"
        assert abs(sat["saturation_load"][0] - 0.125) <= 0.01
        assert sat["hi"][0] - sat["lo"][0] <= 0.01 + 1e-9
        assert "drain_cycles" in f.attrs["criterion"]


def test_saturation_uniform_agrees_with_single_runs(tmp_path):
    """The bracket found on uniform traffic holds: a single run at lo is unsaturated, at hi saturated."""
    from pdes.engine import run_local
    extra = ("topology.p=4", "router.num_vcs=4")
    out = _sweep_in_process(tmp_path, "u.h5", *sets(*extra), "--loads", "0.6:1.0:0.2",
                            "--saturation", "--resolution", "0.02")
    with h5py.File(out) as f:
        sat = f["saturation"][()][0]
    assert sat["status"].decode() == "found" and sat["hi"] - sat["lo"] <= 0.02 + 1e-9
    assert 0.6 <= sat["lo"] < 1.0
    for load, expect in ((sat["lo"], False), (sat["hi"], True)):
        cfg = C.resolve({}, FAST + list(extra) + [f"traffic.load={load}"])
        assert run_local(cfg)["summary"]["saturated"] is expect


def test_saturation_reports_series_without_a_number(tmp_path):
    """A series saturated at the lowest load, or never, is reported as such (no number)."""
    out = _sweep_in_process(tmp_path, "n.h5", *sets("traffic.pattern=worst_case", "topology.p=4"),
                            "--vary", "routing.algorithm=min,valiant", "--loads", "0.3,0.35",
                            "--saturation")
    with h5py.File(out) as f:
        sat = f["saturation"][()]
        status = [s.decode() for s in sat["status"]]
    assert status[0] == "saturated at the lowest load 0.3" and np.isnan(sat["saturation_load"][0])
    assert status[1] == "not saturated up to load 0.35" and np.isnan(sat["saturation_load"][1])


def test_seeds_give_mean_and_confidence_interval(tmp_path):
    """--seeds N runs N replications (seeds s, s+1, ...); /table_mean has their mean and 95% CI."""
    out = _sweep_in_process(tmp_path, "s.h5", *sets(), "--loads", "0.2,0.4", "--seeds", "3")
    with h5py.File(out) as f:
        t = f["table"][()]
        m = f["table_mean"][()]
    assert sorted(set(t["seed"].tolist())) == [1, 2, 3]
    assert len(t) == 6 and len(m) == 2
    from scipy.stats import t as student
    for row in m:
        x = t[t["load"] == row["load"]]["accepted"]
        assert row["n"] == 3 and row["accepted"] == pytest.approx(x.mean(), rel=1e-12)
        assert row["accepted_ci95"] == pytest.approx(student.ppf(0.975, 2) * x.std(ddof=1) / np.sqrt(3))
    # replications differ (different random streams)
    assert len(set(t["accepted"][t["load"] == 0.4].tolist())) > 1


# --------------------------------------------------------------------------- crash and resume
def test_crash_then_resume_equals_uninterrupted(tmp_path):
    """A sweep killed after 2 points leaves a valid file with them; --resume completes it to the
    same file an uninterrupted sweep writes."""
    args = ["sweep", *sets("traffic.pattern=worst_case", "topology.p=4"), "--vary",
            "routing.algorithm=min,valiant", "--loads", "0.1,0.3", "--saturation", "--quiet"]
    full = tmp_path / "full.h5"
    assert pdes(*args, "-o", str(full)).returncode == 0
    part = tmp_path / "part.h5"
    r = pdes(*args, "-o", str(part), env={"PDES_TEST_CRASH_AFTER_POINTS": "2"})
    assert r.returncode != 0
    with h5py.File(part) as f:
        assert not f.attrs["finished"] and len(f["points"]) == 2 and len(f["table"]) == 2
    from pdes.plot import latency_figure
    from pdes.results import open_results
    with open_results(str(part)) as res:      # the figure says the study is unfinished
        assert latency_figure(res).axes[0].get_title().endswith("(unfinished: 2 points)")
    refused = pdes(*args, "-o", str(part))
    assert refused.returncode == 2 and "--resume" in refused.stderr
    r = pdes(*args, "-o", str(part), "--resume")
    assert r.returncode == 0, r.stderr
    with h5py.File(full) as a, h5py.File(part) as b:
        assert b.attrs["finished"]
        assert sorted(a["points"]) == sorted(b["points"])
        for name in a["points"]:
            assert_same_results(a["points"][name], b["points"][name], attrs=False)
        for tab in ("table", "table_mean", "saturation"):
            ta, tb = a[tab][()], b[tab][()]
            for col in ta.dtype.names:
                if col != "wall_s":
                    assert np.array_equal(ta[col], tb[col]) or \
                        (ta[col].dtype.kind == "f" and np.array_equal(ta[col], tb[col], equal_nan=True)), col


def test_a_failed_write_ends_the_sweep_with_one_line(tmp_path):
    """The study's directory removed while it runs: the next commit fails, and the sweep ends
    with one error line and status 3 (it crashed with status 139 at exit, its file image
    still open)."""
    import shutil
    import subprocess
    import time
    from tests.helpers import python_argv, subprocess_env
    sub = tmp_path / "sub"
    sub.mkdir()
    proc = subprocess.Popen(python_argv("-m", "pdes", "sweep", "--set", "measure.warmup_cycles=200",
                                        "--set", "measure.measure_cycles=3000", "--loads",
                                        "0.05:0.95:0.05", "-o", str(sub / "s.h5"), "--quiet"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=subprocess_env())
    deadline = time.monotonic() + 300
    while not (sub / "s.h5").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    shutil.rmtree(sub)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 3, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pdes: error (rank 0): FileNotFoundError"), err


def test_resume_refuses_another_study(tmp_path):
    """--resume on a file of another study says what differs and leaves the file alone."""
    out = _sweep_in_process(tmp_path, "a.h5", *sets(), "--loads", "0.2")
    before = out.read_bytes()
    r = pdes("sweep", *sets(), "--loads", "0.3", "-o", str(out), "--resume")
    assert r.returncode == 2
    assert r.stderr.startswith("pdes: error: --resume:") and "loads" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert out.read_bytes() == before


@pytest.mark.parametrize("args,key", [
    (["--vary", "routing.algorithm=min,nosuch"], "routing.algorithm"),
    (["--loads", "1.5"], "--loads"),
    (["--concurrent", "2"], "--concurrent"),
    (["--vary", "topology.q=5,6"], "topology.q"),
    (["--set", "router.num_vcs=1", "--vary", "routing.algorithm=min,valiant"], "router.num_vcs"),
])
def test_sweep_bad_input_exit_2_no_file(tmp_path, args, key):
    """Bad sweep input: one `pdes: error: <key>` line, exit 2, no output file."""
    out = tmp_path / "x.h5"
    r = pdes("sweep", *sets(), "--loads", "0.2", *args, "-o", str(out))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"pdes: error: {key}"), r.stderr
    assert not out.exists()


def test_sweep_refuses_symlink_output(tmp_path):
    """-o through a symbolic link is refused, and the link's target is untouched."""
    target = tmp_path / "t.h5"
    target.write_bytes(b"keep")
    link = tmp_path / "l.h5"
    link.symlink_to(target)
    r = pdes("sweep", *sets(), "--loads", "0.2", "-o", str(link), "--force")
    assert r.returncode == 2 and "symbolic link" in r.stderr
    assert target.read_bytes() == b"keep"


def test_run_rejects_sweep_table(tmp_path):
    """`pdes run` with a config holding [sweep] says the table belongs to `pdes sweep`."""
    cfg = tmp_path / "c.toml"
    cfg.write_text('[sweep]\nloads = "0.1:0.2:0.1"\n')
    r = pdes("run", str(cfg))
    assert r.returncode == 2 and "pdes: error: sweep:" in r.stderr


# --------------------------------------------------------------------------- show and plot
@pytest.fixture(scope="module")
def study_file(tmp_path_factory):
    from pdes.cli import main
    out = tmp_path_factory.mktemp("study") / "st.h5"
    assert main(["sweep", *sets(), "--vary", "routing.algorithm=min,ugal_l", "--loads",
                 "0.2,0.5,0.8", "--saturation", "--resolution", "0.1", "-o", str(out),
                 "--quiet"]) == 0
    return out


def test_points_link_the_config_sections_and_network_arrays_they_share(study_file):
    """A study's points hold each config section and network array once: a later point's
    equal section or array is an HDF5 hard link to the first (the same object); sections that
    differ (the varied routing, the load) and results are each point's own."""
    with h5py.File(study_file) as f:
        pts = [f["points"][row["point"].decode()] for row in f["table"][()]]
        first, same_series, other_series = pts[0], pts[1], pts[-1]
        for p in pts[1:]:
            for name in ("config/topology", "config/router", "config/measure", "links/routers",
                         "links/latency_cycles", "routers/group", "endpoints/router",
                         "hist/latency_edges"):
                assert p[name] == first[name], name          # one object, two names
            assert p["summary/accepted_load"] != first["summary/accepted_load"]
            if p.attrs["study_load"] != first.attrs["study_load"]:
                assert p["config/traffic"] != first["config/traffic"]
            else:
                assert p["config/traffic"] == first["config/traffic"]
        assert same_series["config/routing"] == first["config/routing"]
        assert other_series["config/routing"] != first["config/routing"]
        assert other_series["config/routing/algorithm"][()] != first["config/routing/algorithm"][()]


def test_shared_writes_link_equal_content_only(tmp_path):
    """``pdes.output.Shared`` links an array or config section only to an equal one."""
    from pdes.output import Shared, write_config
    sh = Shared()
    with h5py.File(tmp_path / "s.h5", "w") as f:
        a, b = f.create_group("a"), f.create_group("b")
        sh.put(a, "x", np.arange(4, dtype=np.int32))
        sh.put(b, "x", np.arange(4, dtype=np.int32))           # equal: linked
        sh.put(b, "y", np.arange(4, dtype=np.int64))           # another name: written
        c = f.create_group("c")
        sh.put(c, "x", np.arange(4, dtype=np.int64))           # another dtype: written
        d = f.create_group("d")
        sh.put(d, "x", np.array([0, 1, 2, 5], dtype=np.int32))  # other values: written
        assert b["x"] == a["x"] and c["x"] != a["x"] and d["x"] != a["x"]
        assert d["x"][()].tolist() == [0, 1, 2, 5] and c["x"].dtype == np.int64
        write_config(f.create_group("c1"), {"s": {"k": 1}, "t": {"k": [1, 2]}}, sh)
        write_config(f.create_group("c2"), {"s": {"k": 1}, "t": {"k": [1, 3]}}, sh)
        assert f["c2/s"] == f["c1/s"] and f["c2/t"] != f["c1/t"]
        assert f["c2/t/k"][()].tolist() == [1, 3]


def test_show_table_and_csv(study_file):
    """`pdes show` prints every point; --csv gives the whole /table, parseable as CSV."""
    r = pdes("show", str(study_file))
    assert r.returncode == 0, r.stderr
    with h5py.File(study_file) as f:
        t = f["table"][()]
    assert "saturation:" in r.stdout and "ugal_l" in r.stdout
    r = pdes("show", str(study_file), "--csv")
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) == len(t)
    for row, ref in zip(rows, t):
        assert row["point"] == ref["point"].decode()
        assert float(row["accepted"]) == ref["accepted"]


def test_table_loads_into_pandas(study_file):
    """The documented line: pandas.DataFrame(h5py.File(f)["table"][()])."""
    import pandas
    df = pandas.DataFrame(h5py.File(study_file)["table"][()])
    assert {"routing.algorithm", "load", "accepted", "latency_mean", "saturated"} <= set(df.columns)


def test_show_run_file_and_bad_file(tmp_path):
    """`pdes show` prints a run's summary; a non-pdes file is one error line with exit 2."""
    out = tmp_path / "r.h5"
    assert pdes("run", *sets(), "-o", str(out), "--quiet").returncode == 0
    r = pdes("show", str(out))
    assert r.returncode == 0 and "accepted_load" in r.stdout
    bad = tmp_path / "bad.h5"
    bad.write_text("not hdf5")
    r = pdes("show", str(bad))
    assert r.returncode == 2 and r.stderr == f"pdes: error: {bad}: not an HDF5 file\n"


def test_latency_plot_data_is_the_table(study_file):
    """The latency figure's lines hold /table's loads and latencies per series, the saturation
    lines /saturation's loads."""
    from pdes.plot import latency_figure, throughput_figure
    from pdes.results import open_results
    with open_results(str(study_file)) as res:
        fig = latency_figure(res)
        df = res.frame("table")
        sat = res.frame("saturation")
        lines = {ln.get_label(): ln for ln in fig.axes[0].lines}
        for alg in ("min", "ugal_l"):
            rows = df[df["routing.algorithm"] == alg].sort_values("load")
            ln = lines[f"routing.algorithm={alg}"]
            assert np.array_equal(ln.get_xdata(), rows["load"].to_numpy())
            assert np.array_equal(ln.get_ydata(), rows["latency_mean"].to_numpy())
        vlines = [ln for ln in fig.axes[0].lines if ln.get_label().startswith("_saturation")]
        found = sat["saturation_load"].dropna().to_numpy()
        assert sorted(v.get_xdata()[0] for v in vlines) == sorted(found.tolist())
        fig = throughput_figure(res)
        lines = {ln.get_label(): ln for ln in fig.axes[0].lines}
        rows = df[df["routing.algorithm"] == "ugal_l"].sort_values("load")
        assert np.array_equal(lines["routing.algorithm=ugal_l"].get_ydata(), rows["accepted"].to_numpy())


def test_point_figures_hold_the_point_data(study_file):
    """hops bars are the hop histogram's fractions; the rack matrix sums the channel loads."""
    from pdes.plot import hops_figure, link_loads, rack_matrix, series_figure
    from pdes.results import open_results
    with open_results(str(study_file)) as res:
        name = res.frame("table")["point"][0]
        g = res.group(name)
        fig = hops_figure(res, name)
        h = g["hist/hops"][()]
        heights = [p.get_height() for p in fig.axes[0].patches]
        assert np.allclose(heights, h[:len(heights)] / h.sum())
        load, cls, _ = link_loads(g)
        window = g["summary/measure_end"][()] - g["summary/measure_start"][()]
        assert np.allclose(load * window, g["links/channel_flits"][()])
        assert rack_matrix(g).sum() == pytest.approx(load.sum())
        fig = series_figure(res, name)
        assert np.array_equal(fig.axes[0].lines[0].get_xdata(), g["series/cycle"][()])


def test_plot_command_writes_each_kind(study_file, tmp_path):
    """`pdes plot` writes a PNG/PDF for every kind; an unknown extension is refused."""
    for kind in ("latency", "throughput", "hops", "links", "series"):
        out = tmp_path / f"{kind}.png"
        r = pdes("plot", str(study_file), "--kind", kind, "-o", str(out))
        assert r.returncode == 0, r.stderr
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = pdes("plot", str(study_file), "-o", str(tmp_path / "f.pdf"), "--logy")
    assert r.returncode == 0 and (tmp_path / "f.pdf").read_bytes()[:4] == b"%PDF"
    r = pdes("plot", str(study_file), "-o", str(tmp_path / "f.txt"))
    assert r.returncode == 2 and "pdes: error: -o" in r.stderr


@pytest.mark.parametrize("kind, flag", [("throughput", "--logy"), ("hops", "--network"),
                                        ("links", "--ymax"), ("series", "--logy"),
                                        ("latency", "--point")])
def test_an_option_a_kind_does_not_take_is_refused(study_file, kind, flag):
    """Every option a kind does not use is refused with one line (they were ignored)."""
    from pdes.plot import figure
    from pdes.results import open_results
    value = {"--logy": {"logy": True}, "--network": {"network": True}, "--ymax": {"ymax": 50.0},
             "--point": {"point": "p0"}}[flag]
    with open_results(str(study_file)) as res, \
            pytest.raises(ParameterError, match=f"^{flag}: not an option of --kind {kind}$"):
        figure(res, kind, **value)


def test_latency_figure_title_legend_and_axis(study_file):
    """The title leaves out the varied keys (the legend has them), the saturation entry of the
    legend comes with a saturation line, and the latency axis keeps every series' lowest point."""
    from pdes.plot import latency_figure
    from pdes.results import open_results
    with open_results(str(study_file)) as res:
        fig = latency_figure(res)
        ax = fig.axes[0]
        assert "ugal_l" not in ax.get_title() and "min" not in ax.get_title().split(", ")
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert ("saturation load" in labels) == any(
            ln.get_label().startswith("_saturation") for ln in ax.lines)
        lows = [np.nanmin(ln.get_ydata()) for ln in ax.lines
                if ln.get_label().startswith("routing.algorithm=")]
        assert ax.get_ylim()[1] >= max(lows)


def test_latency_and_throughput_of_finite_workloads_are_refused(finite_study):
    """A study of finite workloads has no offered load: latency and throughput are refused."""
    from pdes.plot import figure
    from pdes.results import open_results
    with open_results(str(finite_study)) as res:
        for kind in ("latency", "throughput"):
            with pytest.raises(ParameterError, match=f"--kind {kind}: .* finite workloads.*"
                               "completion"):
                figure(res, kind)


def test_series_labels_keep_integer_keys_integers():
    """A row of means holds integer keys as floats: the legend shows them as integers."""
    from pdes.plot import _series_label
    assert _series_label({"router.num_vcs": 4.0, "traffic.load": 0.5},
                         ["router.num_vcs", "traffic.load"]) == "router.num_vcs=4, traffic.load=0.5"


RING = ("topology.name=torus", "topology.dims=[8]", "traffic.pattern=uniform", "routing.vcs=any",
        "router.num_vcs=2", "router.packet_size=4", "router.vc_buffer_flits=4",
        "router.link_latency=1", "measure.watchdog_cycles=400")
"""A ring of 8 routers with its 2 VCs open to every hop: uniform traffic runs at 0.1 and
deadlocks it at 0.9."""


def test_a_deadlocked_point_is_a_saturated_point(tmp_path):
    """A point that deadlocks ends as a saturated point whose reason is the watchdog's report
    (the same on any rank count), the study goes on, and the saturation search treats it as
    saturated; the same run alone stops with the report (exit 3) unless
    measure.on_deadlock = "saturated"."""
    from pdes.engine import run_local
    out = _sweep_in_process(tmp_path, "d.h5", *sets(*RING), "--loads", "0.1,0.9", "--saturation",
                            "--resolution", "0.2")
    with h5py.File(out) as f:
        assert f.attrs["finished"]
        rows = {float(r["load"]): r for r in f["table"][()]}
        sat = f["saturation"][()][0]
        reason = f["points"][rows[0.9]["point"].decode()]["summary/saturated_reason"][()].decode()
    assert not rows[0.1]["saturated"] and rows[0.9]["saturated"]
    assert reason.startswith("deadlock: no flit moved for 400 cycles before cycle ")
    assert "blocked" not in reason and 'routing.vcs "any"' in reason
    assert sat["status"].decode() == "found" and 0.1 <= sat["lo"] < sat["hi"] <= 0.9
    cfg = C.resolve({}, FAST + list(RING) + ["traffic.load=0.9", "measure.on_deadlock=saturated"])
    alone = run_local(cfg)["summary"]
    assert alone["saturated"] and alone["saturated_reason"] == reason
    r = pdes("run", *sets(*RING, "traffic.load=0.9"), "--quiet", cwd=tmp_path)
    assert r.returncode == 3 and "deadlock: no flit moved for 400 cycles" in r.stderr
    assert "; blocked: router " in r.stderr
    halted = pdes("sweep", *sets(*RING, "measure.on_deadlock=error"), "--loads", "0.9",
                  "-o", str(tmp_path / "e.h5"), "--quiet", cwd=tmp_path)
    assert halted.returncode == 3 and "deadlock: no flit moved" in halted.stderr


# --------------------------------------------------------------------------- MPI
@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("concurrent", [1, 2])
def test_mpi_sweep_points_equal_one_rank_runs(tmp_path, concurrent):
    """A 3-load, 2-routing sweep on all ranks (K groups) gives, point by point, the datasets of
    1-rank runs of the same configs; the saturation search runs across the groups too."""
    from mpi4py import MPI

    from pdes.cli import main
    from pdes.engine import simulate
    from pdes.output import run_image
    comm = MPI.COMM_WORLD
    out = comm.bcast(str(tmp_path / "mpi.h5"), root=0)
    args = ["sweep", *sets("traffic.pattern=worst_case", "topology.p=4"), "--vary",
            "routing.algorithm=min,valiant", "--loads", "0.1,0.2,0.3", "--saturation",
            "--resolution", "0.05", "--concurrent", str(concurrent), "-o", out, "--quiet"]
    assert main(args) == 0
    comm.Barrier()
    if comm.Get_rank() == 0:
        with h5py.File(out) as f:
            assert f.attrs["finished"]
            table = f["table"][()]
            assert len(table) > 6          # the grid and the bisection probes
            for row in table:
                name = row["point"].decode()
                alg = row["routing.algorithm"].decode()
                cfg = C.resolve({}, FAST + ["traffic.pattern=worst_case", "topology.p=4",
                                            f"routing.algorithm={alg}", f"traffic.load={row['load']}",
                                            "measure.on_deadlock=saturated"])
                res = simulate(cfg, None)
                image = run_image(res, C.to_toml(cfg), nranks=1, partition=res["partition"], version="")
                with h5py.File(io.BytesIO(image), "r") as g:
                    assert_same_results(f["points"][name], g, attrs=False)
    comm.Barrier()


def test_finite_exchange_sweep_has_completion_times(tmp_path):
    """A sweep of a finite exchange tabulates each point's completion time and throughput."""
    from pdes.engine import run_local
    out = _sweep_in_process(tmp_path, "x.h5", *sets("traffic.pattern=alltoall",
                                                   "traffic.message_packets=1"),
                            "--vary", "routing.algorithm=min,valiant")
    with h5py.File(out) as f:
        t = f["table"][()]
    for row in t:
        cfg = C.resolve({}, FAST + ["traffic.pattern=alltoall", "traffic.message_packets=1",
                                    f"routing.algorithm={row['routing.algorithm'].decode()}"])
        s = run_local(cfg)["summary"]
        assert row["completion_cycles"] == s["completion_cycles"] > 0
        assert row["effective_throughput"] == s["effective_throughput"]


# --------------------------------------------------------------------------- finite workloads
ALLREDUCE = ("traffic.pattern=allreduce", "traffic.procs=4")
VARY = ("traffic.bytes=64,8192", "traffic.algorithm=ring,recursive_doubling")
VARY_ARGS = [a for v in VARY for a in ("--vary", v)]


@pytest.fixture(scope="module")
def finite_study(tmp_path_factory):
    """A study of a 4-process allreduce on SF q=5: 2 sizes x 2 algorithms, one point each."""
    from pdes.cli import main
    out = tmp_path_factory.mktemp("finite") / "coll.h5"
    assert main(["sweep", *sets(*ALLREDUCE), *VARY_ARGS, "-o", str(out), "--quiet"]) == 0
    return out


def test_finite_study_has_one_point_per_series(finite_study):
    """A study of a finite workload has one point per series, at the configured (unread) load,
    and each point's columns are the summary of `pdes run` of its config."""
    from pdes.engine import run_local
    spec = S.make_spec({}, FAST + list(ALLREDUCE), list(VARY), None, None, None, None)
    load = C.resolve({}, FAST)["traffic"]["load"]
    assert spec.finite and spec.loads == [load] and len(spec.series) == 4
    with h5py.File(finite_study) as f:
        t = f["table"][()]
        assert sorted(f["points"]) == [S.point_name(s, 0, load) for s in range(4)]
    assert len(t) == 4 and set(t["load"].tolist()) == {load}
    for row in t:
        cfg = C.resolve({}, FAST + list(ALLREDUCE) + [
            f"traffic.bytes={row['traffic.bytes']}",
            f"traffic.algorithm={row['traffic.algorithm'].decode()}"])
        s = run_local(cfg)["summary"]
        for col in ("completion_cycles", "effective_throughput", "message_latency_mean",
                    "message_latency_p99", "message_latency_max", "finish_mean", "finish_max"):
            assert row[col] == s[col], col
        assert row["completion_cycles"] > 0 and row["finish_max"] == s["completion_cycles"] - 1


def _sweep_config(tmp_path, name, text):
    cfg = tmp_path / name
    cfg.write_text(text)
    return [str(cfg)]


@pytest.mark.parametrize("case,key,pattern", [
    ("loads", "--loads", "allreduce"),
    ("saturation", "--saturation", "allreduce"),
    ("file-loads", "sweep.loads", "allreduce"),
    ("file-saturation", "sweep.saturation", "allreduce"),
    ("mixed", "--vary traffic.pattern", "allreduce"),
    ("exchange-loads", "--loads", "alltoall"),
])
def test_finite_study_refuses_loads_saturation_and_mixed_series(tmp_path, capsys, case, key,
                                                                 pattern):
    """Loads, a saturation search, or load-driven series beside finite ones: exit 2, one line
    naming the option and the finite pattern, before any work and without a file."""
    from pdes.cli import main
    args = {"loads": [*sets(*ALLREDUCE), "--loads", "0.2"],
            "saturation": [*sets(*ALLREDUCE), "--saturation"],
            "file-loads": _sweep_config(tmp_path, "l.toml", '[sweep]\nloads = "0.1:0.3:0.1"\n')
            + sets(*ALLREDUCE),
            "file-saturation": _sweep_config(tmp_path, "s.toml", "[sweep]\nsaturation = true\n")
            + sets(*ALLREDUCE),
            "mixed": [*sets(), "--vary", "traffic.pattern=uniform,allreduce"],
            "exchange-loads": [*sets("traffic.pattern=alltoall"), "--loads", "0.1,0.2"]}[case]
    out = tmp_path / "x.h5"
    capsys.readouterr()
    status = main(["sweep", *args, "-o", str(out)])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"pdes: error: {key}: ") and f"{pattern}" in lines[0], err
    assert ("two studies" if case == "mixed" else "vary its own keys") in lines[0], err
    assert not out.exists()


def test_finite_study_replications_of_random_placement(tmp_path):
    """--seeds with random placement: the replications place the processes differently and
    /table_mean holds the mean completion time and its 95% interval."""
    out = _sweep_in_process(tmp_path, "rep.h5", *sets(*ALLREDUCE, "traffic.placement=random",
                                                      "traffic.bytes=512"), "--seeds", "3")
    with h5py.File(out) as f:
        t = f["table"][()]
        m = f["table_mean"][()]
        eps = [f["points"][p.decode()]["workload/proc_endpoint"][()] for p in t["point"]]
    assert len(t) == 3 and len(m) == 1 and m["n"][0] == 3
    assert len({tuple(e) for e in eps}) == 3
    from scipy.stats import t as student
    x = t["completion_cycles"].astype(np.float64)
    assert m["completion_cycles"][0] == pytest.approx(x.mean(), rel=1e-12)
    assert m["completion_cycles_ci95"][0] == pytest.approx(
        student.ppf(0.975, 2) * x.std(ddof=1) / np.sqrt(3), rel=1e-12)
    y = t["effective_throughput"]
    assert m["effective_throughput"][0] == pytest.approx(y.mean(), rel=1e-12)


def test_finite_study_resumes_after_a_crash(tmp_path, monkeypatch):
    """A finite study stopped after 2 points resumes to the file an uninterrupted study
    writes, running only the missing points."""
    spec = S.make_spec({}, FAST + list(ALLREDUCE), list(VARY), None, None, None, None)
    full, part = str(tmp_path / "full.h5"), str(tmp_path / "part.h5")
    S.run_study(spec, full, None)

    class Stop(Exception):
        pass

    def stop(*_):
        raise Stop
    monkeypatch.setenv("PDES_TEST_CRASH_AFTER_POINTS", "2")
    monkeypatch.setattr(S.os, "kill", stop)
    with pytest.raises(Stop):
        S.run_study(spec, part, None)
    monkeypatch.undo()
    with h5py.File(part) as f:
        assert not f.attrs["finished"] and len(f["points"]) == 2
    said = []
    S.run_study(spec, part, None, resume=True, say=said.append)
    assert any("2 points done, 2 grid points to run" in s for s in said), said
    with h5py.File(full) as a, h5py.File(part) as b:
        assert b.attrs["finished"] and sorted(a["points"]) == sorted(b["points"])
        for name in a["points"]:
            assert_same_results(a["points"][name], b["points"][name], attrs=False)
        for col in ("point", "completion_cycles", "finish_max"):
            assert np.array_equal(a["table"][col], b["table"][col])


def test_points_survive_a_signal_during_a_commit(tmp_path, monkeypatch):
    """A signal while a commit writes the file (no writer thread, as under MPI) leaves the
    previous file on disk; on the way out the points finished so far are committed again."""
    spec = S.make_spec({}, FAST + list(ALLREDUCE), list(VARY), None, None, None, None)
    path = tmp_path / "a.h5"
    monkeypatch.setattr(S, "BACKGROUND_WRITES", False)
    monkeypatch.setattr(S, "COMMIT_EVERY_S", 0.0)
    monkeypatch.setattr(S, "COMMIT_SHARE", 0.0)      # a commit after every point
    replace, calls = S.os.replace, []

    def interrupted(src, dst):
        calls.append(src)
        if len(calls) == 3:         # the commit after the third point
            raise KeyboardInterrupt
        return replace(src, dst)
    monkeypatch.setattr(S.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        S.run_study(spec, str(path), None)
    assert len(calls) == 4          # the rescue's commit
    with h5py.File(path) as f:
        assert not f.attrs["finished"] and len(f["points"]) == 3 and len(f["table"]) == 3


def _commits(monkeypatch, path):
    """Count the renames of a study file onto ``path`` (one per commit)."""
    seen = []
    replace = S.os.replace

    def spy(src, dst):
        if str(dst) == str(path):
            seen.append(src)
        return replace(src, dst)
    monkeypatch.setattr(S.os, "replace", spy)
    return seen


def test_study_file_is_rewritten_at_most_every_few_seconds(tmp_path, monkeypatch):
    """Short points share commits: with a long commit interval the file is written after the
    first point and at the end only; with none, after every point and at the end."""
    spec = S.make_spec({}, FAST + list(ALLREDUCE), list(VARY), None, None, None, None)
    path = tmp_path / "a.h5"
    seen = _commits(monkeypatch, path)
    monkeypatch.setattr(S, "COMMIT_EVERY_S", 1e9)
    S.run_study(spec, str(path), None)
    assert len(seen) == 2
    seen.clear()
    monkeypatch.setattr(S, "COMMIT_EVERY_S", 0.0)
    monkeypatch.setattr(S, "COMMIT_SHARE", 0)
    S.run_study(spec, str(tmp_path / "b.h5"), None)
    assert seen == []
    path.unlink()
    S.run_study(spec, str(path), None)
    assert len(seen) == 5
    with h5py.File(path) as f:
        assert f.attrs["finished"] and len(f["points"]) == 4


def test_a_stopped_study_keeps_the_points_not_yet_written(tmp_path, monkeypatch):
    """A signal (or failure) between two commits: the points finished since the last commit
    are written on the way out, and --resume runs only the others."""
    spec = S.make_spec({}, FAST + list(ALLREDUCE), list(VARY), None, None, None, None)
    path = str(tmp_path / "part.h5")
    monkeypatch.setattr(S, "COMMIT_EVERY_S", 1e9)
    run = S.Runner.run
    calls = []

    def stop_at_third(self, *a, **kw):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return run(self, *a, **kw)
    monkeypatch.setattr(S.Runner, "run", stop_at_third)
    with pytest.raises(KeyboardInterrupt):
        S.run_study(spec, path, None)
    with h5py.File(path) as f:
        assert not f.attrs["finished"] and len(f["points"]) == 2 and len(f["table"]) == 2
    monkeypatch.setattr(S.Runner, "run", run)
    said = []
    S.run_study(spec, path, None, resume=True, say=said.append)
    assert any("2 points done, 2 grid points to run" in s for s in said), said


def _study_files_equal(a_path, b_path):
    with h5py.File(a_path) as a, h5py.File(b_path) as b:
        assert a.attrs["finished"] and b.attrs["finished"]
        assert sorted(a["points"]) == sorted(b["points"])
        for name in a["points"]:
            assert_same_results(a["points"][name], b["points"][name], attrs=False)
        x, y = a["table"][()], b["table"][()]
        for col in x.dtype.names:
            if col != "wall_s":
                assert np.array_equal(x[col], y[col], equal_nan=x[col].dtype.kind == "f"), col


def test_points_written_on_a_thread_equal_points_written_at_once(tmp_path, monkeypatch):
    """A study in one process writes its finished points and its commits on a thread of its
    own while the next point runs: the file is the one the study's own thread writes, and the
    thread is gone (and the interpreter's switch interval as it was) when the study ends."""
    import sys
    spec = S.make_spec({}, FAST + list(ALLREDUCE), list(VARY), None, None, None, None)
    interval = sys.getswitchinterval()
    threads = []
    start = S.PointWriter.__init__

    def spy(self):
        start(self)
        threads.append(self._thread)
    monkeypatch.setattr(S.PointWriter, "__init__", spy)
    monkeypatch.setattr(S, "BACKGROUND_WRITES", True)
    S.run_study(spec, str(tmp_path / "thread.h5"), None)
    assert len(threads) == 1 and not threads[0].is_alive()
    assert sys.getswitchinterval() == interval
    monkeypatch.setattr(S, "BACKGROUND_WRITES", False)
    S.run_study(spec, str(tmp_path / "here.h5"), None)
    assert len(threads) == 1
    _study_files_equal(tmp_path / "thread.h5", tmp_path / "here.h5")


def test_background_writes_only_in_one_process_with_cpus_to_spare(monkeypatch):
    monkeypatch.setattr(S, "BACKGROUND_WRITES", None)
    monkeypatch.setattr(S.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert S.background_writes(1) and not S.background_writes(2)
    monkeypatch.setattr(S.os, "sched_getaffinity", lambda pid: {3}, raising=False)
    assert not S.background_writes(1)
    monkeypatch.setattr(S, "BACKGROUND_WRITES", True)
    assert S.background_writes(4)


def test_a_point_the_writer_thread_fails_on_ends_the_study(tmp_path, monkeypatch):
    """The writer thread's failure is raised in the study's thread; the file on disk keeps the
    points committed before it (the image may hold half a point: it is not committed)."""
    import sys
    spec = S.make_spec({}, FAST + list(ALLREDUCE), list(VARY), None, None, None, None)
    path = str(tmp_path / "w.h5")
    monkeypatch.setattr(S, "BACKGROUND_WRITES", True)
    monkeypatch.setattr(S, "COMMIT_EVERY_S", 1e9)
    interval = sys.getswitchinterval()
    add = S.StudyFile._add_group
    seen = []

    def fail_on_second(self, rec):
        seen.append(rec["name"])
        if len(seen) == 2:
            self.f["points"].create_group(rec["name"])     # half a point
            raise OSError("disk full")
        return add(self, rec)
    monkeypatch.setattr(S.StudyFile, "_add_group", fail_on_second)
    with pytest.raises(OSError, match="disk full"):
        S.run_study(spec, path, None)
    assert sys.getswitchinterval() == interval
    with h5py.File(path) as f:
        assert not f.attrs["finished"] and list(f["points"]) == seen[:1]


def test_show_prints_the_completion_columns(finite_study, capsys):
    """`pdes show` of a finite study prints completion time, throughput, message latency and
    the processes' finish instead of load, accepted load and packet latency."""
    from pdes.cli import main
    capsys.readouterr()
    assert main(["show", str(finite_study)]) == 0
    header = capsys.readouterr().out.splitlines()[0].split()
    assert header == ["traffic.bytes", "traffic.algorithm", "completion_cycles",
                      "effective_throughput", "message_latency_mean", "message_latency_p99",
                      "finish_mean", "finish_max"]
    assert main(["show", str(finite_study), "--table", "table_mean"]) == 0
    header = capsys.readouterr().out.splitlines()[0].split()
    assert header == ["traffic.bytes", "traffic.algorithm", "n", "completion_cycles",
                      "completion_cycles_ci95", "effective_throughput", "effective_throughput_ci95"]


def test_completion_plot_data_is_the_table(finite_study):
    """The completion figure has one line per algorithm holding /table's sizes and completion
    times; the time axis is logarithmic, and so is the size axis (64..8192 spans > 100)."""
    from pdes.plot import completion_figure
    from pdes.results import open_results
    with open_results(str(finite_study)) as res:
        assert res.finite
        ax = completion_figure(res).axes[0]
        df = res.frame("table")
    lines = {ln.get_label(): ln for ln in ax.lines}
    assert sorted(lines) == ["traffic.algorithm=recursive_doubling", "traffic.algorithm=ring"]
    for alg in ("ring", "recursive_doubling"):
        rows = df[df["traffic.algorithm"] == alg].sort_values("traffic.bytes")
        ln = lines[f"traffic.algorithm={alg}"]
        assert np.array_equal(ln.get_xdata(), rows["traffic.bytes"].to_numpy(np.float64))
        assert np.array_equal(ln.get_ydata(), rows["completion_cycles"].to_numpy(np.float64))
    assert ax.get_yscale() == "log" and ax.get_xscale() == "log"
    assert ax.get_xlabel() == "traffic.bytes"


def test_completion_plot_of_replications_is_mean_and_interval(tmp_path):
    """With replications the completion figure draws /table_mean's mean with its 95% interval
    as error bars; a size span of at most 100 keeps a linear size axis."""
    from pdes.plot import completion_figure
    from pdes.results import open_results
    out = _sweep_in_process(tmp_path, "rep.h5", *sets(*ALLREDUCE, "traffic.placement=random"),
                            "--vary", "traffic.bytes=64,512", "--seeds", "2")
    with open_results(str(out)) as res:
        ax = completion_figure(res).axes[0]
        m = res.frame("table_mean").sort_values("traffic.bytes")
    (bars,) = ax.containers
    line, _, (segments,) = bars
    assert np.array_equal(line.get_ydata(), m["completion_cycles"].to_numpy())
    half = [abs(seg[1, 1] - seg[0, 1]) / 2 for seg in segments.get_segments()]
    assert np.allclose(half, m["completion_cycles_ci95"].to_numpy())
    assert ax.get_xscale() == "linear" and "95% CI" in ax.get_ylabel()


def test_plot_completion_is_the_default_and_refuses_a_non_numeric_x(finite_study, tmp_path):
    """`pdes plot` of a finite study writes the completion figure by default; --x naming a
    text key, or an unvaried key, is one error line with exit 2 and no figure."""
    from pdes.cli import main
    assert main(["plot", str(finite_study), "-o", str(tmp_path / "c.png")]) == 0
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["plot", str(finite_study), "--x", "traffic.bytes", "--kind", "completion",
                 "-o", str(tmp_path / "d.pdf")]) == 0
    for x, rule in (("traffic.algorithm", "--x: traffic.algorithm is not numeric"),
                    ("traffic.procs", "--x: traffic.procs is not a varied key")):
        r = pdes("plot", str(finite_study), "--x", x, "-o", str(tmp_path / "bad.png"))
        assert r.returncode == 2 and r.stderr.startswith(f"pdes: error: {rule}"), r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "bad.png").exists()


def test_completion_plot_needs_a_numeric_varied_key(tmp_path):
    """A finite study that varies only text keys has no x axis: the completion plot is refused
    naming the varied keys."""
    from pdes.plot import completion_figure
    from pdes.results import open_results
    out = _sweep_in_process(tmp_path, "alg.h5", *sets(*ALLREDUCE),
                            "--vary", "traffic.algorithm=ring,recursive_doubling")
    with open_results(str(out)) as res, pytest.raises(ParameterError,
                                                      match=r"--kind completion: .*varies none "
                                                            r"\(varied: traffic\.algorithm\)"):
        completion_figure(res)


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("concurrent", [1, 2])
def test_mpi_finite_study_points_equal_one_rank_runs(tmp_path, concurrent):
    """A finite study on all ranks (K groups) gives, point by point, the datasets of 1-rank
    runs of the same configs, /workload included."""
    from mpi4py import MPI

    from pdes.cli import main
    from pdes.engine import simulate
    from pdes.output import run_image
    comm = MPI.COMM_WORLD
    out = comm.bcast(str(tmp_path / "mpi.h5"), root=0)
    assert main(["sweep", *sets(*ALLREDUCE), *VARY_ARGS, "--concurrent", str(concurrent),
                 "-o", out, "--quiet"]) == 0
    comm.Barrier()
    if comm.Get_rank() == 0:
        with h5py.File(out) as f:
            assert f.attrs["finished"] and len(f["table"]) == 4
            for row in f["table"][()]:
                cfg = C.resolve({}, FAST + list(ALLREDUCE) + [
                    f"traffic.bytes={row['traffic.bytes']}",
                    f"traffic.algorithm={row['traffic.algorithm'].decode()}",
                    "measure.on_deadlock=saturated"])
                res = simulate(cfg, None)
                image = run_image(res, C.to_toml(cfg), nranks=1, partition=res["partition"],
                                  version="")
                with h5py.File(io.BytesIO(image), "r") as g:
                    assert "workload" in g
                    assert_same_results(f["points"][row["point"].decode()], g, attrs=False)
    comm.Barrier()


def test_sweep_resolution_without_saturation_is_refused(tmp_path, capsys):
    """sweep.resolution without a saturation search is refused as --resolution is (it would
    do nothing): exit 2, one line naming the table's key, no file."""
    from pdes.cli import main
    out = tmp_path / "x.h5"
    capsys.readouterr()
    status = main(["sweep", *_sweep_config(tmp_path, "c.toml", "[sweep]\nresolution = 0.02\n"),
                   *sets(), "--loads", "0.3", "-o", str(out)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(lines) == 1, lines
    assert lines[0].startswith("pdes: error: sweep.resolution: the precision of a saturation"), lines
    assert not out.exists()


@pytest.mark.parametrize("args", [["--loads", "0.3"], ["--analyze", "paths"]])
def test_force_replaces_only_a_file_pdes_wrote(tmp_path, capsys, args):
    """sweep --force replaces a study file but not a file pdes did not make (a typo in -o):
    exit 2, one line, the file untouched."""
    from pdes.cli import main
    out = tmp_path / "notes.txt"
    out.write_text("my notes\n")
    capsys.readouterr()
    status = main(["sweep", *sets(), *args, "-o", str(out), "--force"])
    lines = [ln for ln in capsys.readouterr().err.strip().splitlines()
             if ln.startswith("pdes: error")]
    assert status == 2 and lines == [f"pdes: error: -o: {out} exists and is not an HDF5 file "
                                     "written by pdes; pdes replaces only such a file: remove "
                                     "it or give another name"]
    assert out.read_text() == "my notes\n"


@pytest.mark.parametrize("table,key", [("seeds = true", "sweep.seeds"),
                                       ("seeds = 0", "sweep.seeds"),
                                       ("resolution = 2.0", "sweep.resolution")])
def test_a_bad_sweep_table_value_names_its_key(tmp_path, capsys, table, key):
    """A bad value in the config file's [sweep] table names the table's key, not the command
    line's option: exit 2, one line, no file."""
    from pdes.cli import main
    out = tmp_path / "x.h5"
    capsys.readouterr()
    status = main(["sweep", *_sweep_config(tmp_path, "c.toml", f"[sweep]\n{table}\n"), *sets(),
                   "-o", str(out)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and lines[0].startswith(f"pdes: error: {key}: "), lines
    assert not out.exists()
