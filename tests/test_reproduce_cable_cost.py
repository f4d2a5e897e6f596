"""The 004 Fig. 12c script (run_scripts/reproduce_cable_cost.py) on its tiny networks: one row
per network with the numbers of its printed `pdes analyze` command, and 004's comparisons."""
import json
import shlex

import pytest

from tests.helpers import ROOT, run_python

SCRIPT = ROOT / "run_scripts" / "reproduce_cable_cost.py"


def test_cable_cost_script_rows_are_the_analyze_commands(tmp_path):
    """Every family of 004 Fig. 12c gets a row whose electric + optical dollars are the cable cost and whose numbers are those of the cost model on the printed command's network and layout."""
    from models.analysis.cost import cost
    from models.layout import build_layout
    from models.topology import build
    from pdes import config as C
    out = tmp_path / "t.json"
    r = run_python(SCRIPT, "--tiny", "--json", str(out), cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    rows = data["rows"]
    assert list(rows) == ["DF", "FT", "FB", "SF", "RR", "GF(3,5,2,2)", "GF(3,5,1,4)"]
    for label, row in rows.items():
        assert row["command"] in r.stdout
        assert row["electric_dollars"] + row["optical_dollars"] == pytest.approx(
            row["cable_dollars"])
        words = shlex.split(row["command"])
        assert words[:4] == ["python", "-m", "pdes", "analyze"]
        sets = [words[i + 1] for i, w in enumerate(words) if w == "--set"]
        cfg = C.resolve({}, [f"topology.name={words[4]}", *sets],
                        sections=("topology", "layout"))
        topo_cfg = {k: v for k, v in cfg["topology"].items() if k != "name"}
        topo = build(words[4], topo_cfg)
        lay = build_layout(topo, **cfg["layout"])
        want = cost(topo, lay)["cables"]
        assert (row["electric_cables"], row["optical_cables"]) == (
            want["electric"]["count"], want["optical"]["count"])
        assert row["cable_dollars"] == pytest.approx(want["dollars"], rel=1e-12)
        assert row["cabinets"] == lay.n_racks
    claims = {c[0]: c[1] for c in data["comparisons"]}
    assert claims["the five GFs have equal fiber (optical) cost"] == "yes"


def test_cable_cost_script_refuses_unknown_network():
    """An unknown --networks label is refused (argparse, exit 2)."""
    r = run_python(SCRIPT, "--tiny", "--networks", "XX", cwd=ROOT, timeout=60)
    assert r.returncode == 2 and "unknown networks ['XX']" in r.stderr
