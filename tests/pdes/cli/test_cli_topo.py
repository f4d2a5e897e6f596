"""Tests of ``python -m pdes topo`` and ``python -m pdes info`` (run as subprocesses)."""
import functools
import json

import pytest

from tests.helpers import ROOT, cli_sets, run_pdes

REQUIRED_KEYS = {
    "topology", "params", "routers", "endpoints", "links", "network_radix_min",
    "network_radix_max", "router_radix_max", "groups", "diameter", "avg_distance",
    "cable_m_total", "endpoint_avg_distance", "degree_histogram", "moore_bound", "moore_ratio",
    "min_paths", "cables", "seconds",
}


pdes = functools.partial(run_pdes, cwd=ROOT)       # `python -m pdes ARGS`, in the repository root


def topo_json(*args, cwd=None):
    proc = pdes("topo", *args, "--json", cwd=cwd or ROOT)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


def test_topo_json_keys():
    """--json prints one JSON object with the structural, cable and timing keys."""
    rep = topo_json("slimfly", "--set", "topology.q=5")
    assert REQUIRED_KEYS <= set(rep)
    assert rep["routers"] == 50 and rep["diameter"] == 2 and rep["moore_ratio"] == 1.0
    assert set(rep["min_paths"]) == {"min", "mean", "max", "frac_multi"}
    assert {"intra_rack", "inter_rack", "electric", "optical", "by_class"} <= set(rep["cables"])
    assert {"build", "layout", "metrics"} <= set(rep["seconds"])


def test_topo_layout_set():
    """--set layout.* changes the cable model the same way as in pdes run."""
    a = topo_json("slimfly", "--set", "topology.q=5")
    b = topo_json("slimfly", "--set", "topology.q=5", "--set", "layout.preset=skywalk")
    assert b["layout"]["preset"] == "skywalk" and b["cable_m_total"] > a["cable_m_total"]


def test_topo_table():
    """Without --json a short aligned table is printed."""
    proc = pdes("topo", "slimfly", "--set", "topology.q=5")
    assert proc.returncode == 0, proc.stderr
    rows = dict(line.split(None, 1) for line in proc.stdout.splitlines() if line.startswith(("routers", "diameter")))
    assert rows == {"routers": "50", "diameter": "2"}


def test_topo_sample():
    """--sample N marks the report as sampled."""
    rep = topo_json("slimfly", "--set", "topology.q=7", "--sample", "10")
    assert rep["sampled"] == 10


def test_topo_config_file(tmp_path):
    """NAME may come from the [topology] section of --config."""
    cfg = tmp_path / "c.toml"
    cfg.write_text('[topology]\nname = "slimfly"\nq = 7\n[layout]\npreset = "skywalk"\n')
    rep = topo_json("--config", str(cfg))
    assert rep["routers"] == 98 and rep["layout"]["preset"] == "skywalk"
    rep = topo_json("slimfly", "--config", str(cfg), "--set", "topology.q=5")
    assert rep["routers"] == 50


@pytest.mark.parametrize("fmt,ext", [("edgelist", ".txt"), ("anynet", ".anynet"), ("graphml", ".graphml")])
def test_topo_export_then_import(tmp_path, fmt, ext):
    """--export writes a file that topology 'file' reads back to the same structure."""
    path = str(tmp_path / f"sf{ext}")
    a = topo_json("slimfly", "--set", "topology.q=5", "--export", fmt, path)
    assert a["exported"][0] == path
    b = topo_json("file", "--set", f"topology.path={json.dumps(path)}")
    for key in ("routers", "endpoints", "links", "groups", "diameter", "degree_histogram",
                "cable_m_total", "min_paths", "avg_distance"):
        assert a[key] == b[key], key


@pytest.mark.parametrize("args,msg", [
    (["nosuchtopo"], "topology.name"),
    (["slimfly", "--set", "topology.q=abc"], "topology.q"),
    (["slimfly", "--set", "topology.zzz=1"], "topology.zzz"),
    (["slimfly", "--set", "layout.cycle_ns=0"], "layout.cycle_ns"),
    (["slimfly", "--set", "layout.preset=moon"], "layout.preset"),
    (["slimfly", "--set", "topology.q=6"], "topology.q"),
    (["dragonfly", "--set", "topology.h=0"], "topology.h: must be >= 1 (got 0)"),
    (["dragonfly", "--set", "topology.h=true"], "topology.h: expected an integer, got True"),
    (["hypercube", "--set", "topology.n=31"], "topology.n: must be in [1, 30] (got 31)"),
    (["skywalk", "--set", "topology.r_limit=1.5"], "topology.r_limit: must be in (0, 1] (got 1.5)"),
    (["skywalk", "--set", "topology.d_d=5"], "topology.d_d: Skywalk d_d = 5 > d_o = 4"),
    (["skywalk", "--set", "topology.d_d=-1"], "topology.d_d: must be >= 0 (got -1)"),
    (["torus", "--set", "topology.dims=[4,0]"], "topology.dims: must be >= 1 (got 0)"),
    (["fattree", "--set", "topology.levels=4"], "topology.levels: must be in [2, 3] (got 4)"),
    (["fattree", "--set", "topology.k=7"], "topology.k: fat tree radix k = 7 must be even"),
    (["file", "--set", "topology.path=does_not_exist.txt"], "topology.path"),
    (["file", "--set", "topology.path=MALFORMED"], "line 2"),
    (["file"], "topology.path"),
    (["slimfly", "--export", "dot", "x.dot"], "--export"),
    (["slimfly", "--sample", "0"], "--sample"),
    (["slimfly", "--set", "routing.algorithm=nosuch"], "routing.algorithm: unknown routing"),
    (["slimfly", "--set", "topology.name=dragonfly"], "topology.name: NAME is 'slimfly'"),
    (["slimfly", "--set", "measure.warmup_cycles=-5"], "measure.warmup_cycles"),
    (["slimfly", "--sample", "99999999999999999999"], "--sample"),
    (["slimfly", "--sample", "3", "--seed=-1"], "--seed"),
    (["--config", "missing.toml"], "config"),
    ([], "NAME"),
])
def test_topo_bad_input_one_line_exit_2(tmp_path, args, msg):
    """Bad input exits with status 2 and exactly one 'pdes: error:' line, no traceback."""
    bad = tmp_path / "bad.txt"
    bad.write_text("0 1\n1 two\n")
    args = [a.replace("MALFORMED", str(bad)) for a in args]
    proc = pdes("topo", *args, cwd=str(tmp_path))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pdes: error:"), proc.stderr
    assert msg in lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_info_lists_topologies():
    """info lists every registered topology with its parameters."""
    proc = pdes("info")
    assert proc.returncode == 0, proc.stderr
    assert "slimfly:" in proc.stdout and "file:" in proc.stdout and "path" in proc.stdout
    proc = pdes("info", "--json")
    data = json.loads(proc.stdout)
    names = {e["name"] for e in data["topology"]}
    assert {"slimfly", "file"} <= names
    sf = next(e for e in data["topology"] if e["name"] == "slimfly")
    assert {p["name"] for p in sf["params"]} >= {"q", "p"}
    assert all({"name", "type", "default", "doc"} <= set(p) for p in sf["params"])


def test_info_shows_parameter_ranges():
    """info prints each parameter's declared range, and --json gives it with the bounds."""
    proc = pdes("info", "hypercube")
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines()[2:]}
    assert "in [1, 30]" in rows["n"] and ">= 0" in rows["p"]
    data = json.loads(pdes("info", "--json").stdout)
    sky = {p["name"]: p for e in data["topology"] if e["name"] == "skywalk" for p in e["params"]}
    assert sky["r_limit"]["range"] == "in (0, 1]"
    assert (sky["r_limit"]["lo"], sky["r_limit"]["hi"], sky["r_limit"]["lo_open"]) == (0.0, 1.0, True)
    assert sky["z"]["range"] == ">= 1" and sky["z"]["lo"] == 1 and "hi" not in sky["z"]


def test_info_unknown_name():
    """info NAME with an unknown name is a one-line error, exit 2."""
    proc = pdes("info", "nosuch")
    assert proc.returncode == 2 and proc.stderr.startswith("pdes: error:")


SKYWALK_MIX = ["topology.name=skywalk", "topology.z=2", "topology.c=9", "topology.d_i=1",
               "topology.d_o=2", "topology.p=2"]
"""A Skywalk of 9 cabinets of 2 switches (3 x 3 grid: d_smax = d_dmax = 2)."""


def test_skywalk_mix_set_and_vary(tmp_path):
    """topology.d_d works in --set (pdes topo) and in pdes sweep --vary: one series per mix, each its own network."""
    for d_d in (0, 2):
        rep = topo_json("skywalk", *cli_sets(*SKYWALK_MIX[1:], f"topology.d_d={d_d}"))
        assert (rep["params"]["d_s"], rep["params"]["d_d"]) == (2 - d_d, d_d)
    from pdes.results import open_results
    out = str(tmp_path / "mix.h5")
    proc = pdes("sweep", "--quiet", *cli_sets(*SKYWALK_MIX, preset="cli"),
                "--vary", "topology.d_d=0,2", "--loads", "0.2", "-o", out, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    with open_results(out) as res:
        table = res.frame("table")
    assert sorted(table["topology.d_d"].tolist()) == [0, 2]
    assert table["latency_mean"].nunique() == 2
