"""``python -m pdes plot --kind cost-model``: the cable and router prices of the cost model
(004 Figs. 12a/b) drawn from the functions ``pdes analyze --only cost`` prices with; bad
options are one line and exit 2, with no figure written."""
import numpy as np
import pytest

from models.analysis.cost import (CABLE_PRESETS, ROUTER_PRESETS, cable_cost_per_gbps,
                                  router_prices)
from tests.helpers import run_pdes

PNG = b"\x89PNG\r\n\x1a\n"


def test_cost_model_png_written(tmp_path, capsys):
    """--kind cost-model takes no file and writes the figure named by -o (a PNG)."""
    from pdes.cli import main
    out = tmp_path / "f.png"
    assert main(["plot", "--kind", "cost-model", "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG
    assert capsys.readouterr().out.strip() == str(out)


def test_cost_model_lines_are_the_cost_functions():
    """The lines hold cable_cost_per_gbps of the preset's electric and optical coefficients and router_prices from the first radix with a non-negative price."""
    from pdes.plot import cost_model_figure
    fig = cost_model_figure("fdr10", max_m=20.0, max_radix=64)
    cables, routers = fig.axes
    el, op = cables.get_lines()
    x = el.get_xdata()
    assert x[0] == 0.0 and x[-1] == 20.0
    assert np.array_equal(el.get_ydata(), cable_cost_per_gbps(x, CABLE_PRESETS["fdr10"].electric))
    assert np.array_equal(op.get_ydata(), cable_cost_per_gbps(x, CABLE_PRESETS["fdr10"].optical))
    (line,) = routers.get_lines()
    k = line.get_xdata()
    assert k[0] == 3 and k[-1] == 64            # 350.4 k - 892.3 < 0 for k <= 2
    assert np.array_equal(line.get_ydata(), router_prices(k, ROUTER_PRESETS["fdr10"]))


def test_cost_model_custom_coefficients():
    """--cable-coeffs, --cable-gbps and --router-coeffs replace the preset as in pdes analyze."""
    from pdes.plot import cost_model_figure
    fig = cost_model_figure("fdr10", (1, 2, 0.5, 4), 10, "fdr10", (100, 50), max_m=10.0,
                            max_radix=8)
    el, op = fig.axes[0].get_lines()
    assert el.get_ydata()[-1] == 12.0 and op.get_ydata()[-1] == 9.0
    assert "10 Gb/s" in fig.axes[0].get_ylabel()
    assert fig.axes[1].get_lines()[0].get_ydata().tolist() == [100 * k + 50 for k in range(1, 9)]


@pytest.mark.parametrize("args,msg", [
    (["--cables", "qdr"], "--cables: unknown preset 'qdr'"),
    (["--cable-coeffs", "1,2"], "--cable-coeffs: expected 4 comma-separated numbers"),
    (["--cable-gbps", "0"], "--cable-gbps: must be > 0"),
    (["--router-coeffs", "1,x"], "--router-coeffs: expected a number"),
    (["--router-coeffs", "1,-100", "--max-radix", "50"], "--router-coeffs: the router price 1 k - 100 is"),
    (["--max-m", "inf"], "--max-m: expected a finite number"),
    (["--max-m", "0"], "--max-m: must be a positive number"),
    (["--max-radix", "0"], "--max-radix: must be an integer >= 1"),
    (["--max-radix", "99999999999"], "--max-radix: must be an integer in [1, 65536]"),
    (["--max-m", "1e300"], "--max-m: must be a positive number of metres, at most 100000"),
    (["--logy"], "--logy: not an option of --kind cost-model"),
    (["study.h5"], "file: --kind cost-model plots no file"),
    (["-o", "f.txt"], "-o: the figure file must end in .png, .pdf or .svg"),
])
def test_cost_model_bad_options_one_line_exit_2(tmp_path, args, msg):
    """A bad --kind cost-model option exits 2 with one 'pdes: error:' line and writes no figure."""
    if "-o" not in args:
        args = [*args, "-o", "f.png"]
    proc = run_pdes("plot", "--kind", "cost-model", *args, cwd=str(tmp_path))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"pdes: error: {msg}"), proc.stderr
    assert proc.stdout == "" and list(tmp_path.iterdir()) == []


def test_cost_model_options_belong_to_cost_model(tmp_path):
    """The cost-model options are refused with another kind, and other kinds still need a file."""
    proc = run_pdes("plot", "s.h5", "--cables", "fdr10", cwd=str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip() == "pdes: error: --cables: only --kind cost-model takes --cables"
    proc = run_pdes("plot", "--kind", "latency", cwd=str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("pdes: error: file: give the file to plot")
