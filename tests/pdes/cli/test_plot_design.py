"""``python -m pdes plot`` of ``pdes design`` tables (``--kind design``): the figure holds the
table's columns per family, HDF5 and CSV alike, with the Moore bounds for routers against k';
bad columns and malformed tables are one line and exit 2, with no figure written."""
import os
import shutil

import h5py
import numpy as np
import pytest

from models.design import COLUMNS, design_table
from models.metrics import moore_bound
from tests.helpers import run_pdes

FAMILIES = ["slimfly", "dragonfly"]
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """``pdes design --radix 20 --families slimfly,dragonfly`` written as t.h5 and t.csv."""
    from pdes.cli import main
    d = tmp_path_factory.mktemp("dplot")
    for name in ("t.h5", "t.csv"):
        assert main(["design", "--radix", "20", "--families", ",".join(FAMILIES),
                     "-o", str(d / name)]) == 0
    return d


def _expected(x, y):
    """{family: (xs, ys)} of the table's rows with both values given, sorted by x."""
    rows = design_table(20, families=FAMILIES).rows
    out = {}
    for fam in FAMILIES:
        pts = sorted((float(r[x]), float(r[y])) for r in rows
                     if r["family"] == fam and r[x] is not None and r[y] is not None)
        out[fam] = ([p[0] for p in pts], [p[1] for p in pts])
    return out


def test_design_plot_default_is_routers_against_network_radix(tables, capsys):
    """A design table (HDF5 or CSV) plots by default as --kind design to FILE-design.png: one
    line per family with the table's (k', routers), and the Moore bounds of diameter 2 and 3."""
    from pdes.cli import main
    from pdes.plot import design_data, design_figure, design_series, is_design
    want = _expected("network_radix", "routers")
    for name in ("t.h5", "t.csv"):
        path = str(tables / name)
        assert is_design(path)
        assert main(["plot", path, "--logy"]) == 0
        png = tables / f"{os.path.splitext(name)[0]}-design.png"
        assert png.read_bytes()[:8] == PNG
        series = design_series(design_data(path))
        assert {s[0]: (s[1].tolist(), s[2].tolist()) for s in series} == want
        lines = design_figure(series, logy=True).axes[0].get_lines()
        assert [ln.get_label() for ln in lines] == [      # families in table order
            "dragonfly (5)", "slimfly (6)", "Moore bound, diameter 2", "Moore bound, diameter 3"]
        by_label = {ln.get_label().split(" (")[0]: ln for ln in lines}
        for fam, (xs, ys) in want.items():
            assert by_label[fam].get_xdata().tolist() == xs
            assert by_label[fam].get_ydata().tolist() == ys
        for d in (2, 3):
            ln = by_label[f"Moore bound, diameter {d}"]
            ks = ln.get_xdata().tolist()
            assert ks == list(range(2, 15))          # k' of the table: 2 (DF h=1) .. 14 (DF h=5)
            assert ln.get_ydata().tolist() == [moore_bound(k, d) for k in ks]
    assert not is_design(str(tables / "t-design.png"))


def test_design_plot_chosen_columns_and_families(tables):
    """--x/--y pick any numeric columns (no Moore bounds then), --families the series in its
    order; HDF5 and CSV give the same series, and rows without the y value are left out."""
    from pdes.cli import main
    from pdes.plot import design_data, design_figure, design_series
    h5, csv = design_data(str(tables / "t.h5")), design_data(str(tables / "t.csv"))
    want = _expected("endpoints", "ports_per_endpoint")
    for data in (h5, csv):
        got = design_series(data, "endpoints", "ports_per_endpoint", ["dragonfly", "slimfly"])
        assert [s[0] for s in got] == ["dragonfly", "slimfly"]
        assert {s[0]: (s[1].tolist(), s[2].tolist()) for s in got} == want
        fig = design_figure(got, "endpoints", "ports_per_endpoint")
        assert not [ln for ln in fig.axes[0].get_lines() if "Moore" in ln.get_label()]
        # Slim Fly has no bisection formula: its series is empty, Dragonfly's has every row
        bis = dict((s[0], s[2].tolist()) for s in design_series(data, y="bisection_links"))
        assert bis == {"slimfly": [], "dragonfly": _expected("network_radix",
                                                             "bisection_links")["dragonfly"][1]}
    out = tables / "fig3.png"
    assert main(["plot", str(tables / "t.csv"), "--x", "endpoints", "--y",
                 "ports_per_endpoint", "--families", "dragonfly", "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG


def _malformed(tables, d, case):
    """A file for a refusal case, in the directory ``d``."""
    if case in ("format", "column", "incomplete"):
        p = d / "bad.h5"
        shutil.copy(tables / "t.h5", p)
        with h5py.File(p, "a") as f:
            if case == "format":
                f.attrs["format"] = "pdes-analysis"
            elif case == "column":
                del f["table/routers"]
            else:
                del f.attrs["complete"]
        return p
    p = d / "bad.csv"
    text = (tables / "t.csv").read_text().splitlines()
    if case == "header":
        text[0] = text[0].replace("routers", "switches")
    else:                                          # a cell that is not a number
        cells = text[1].split(",")
        cells[COLUMNS.index("routers")] = "many"
        text[1] = ",".join(cells)
    p.write_text("\n".join(text) + "\n")
    return p


REFUSALS = [   # (case, extra arguments, key of the error line, text it holds)
    ("t.h5", ["--y", "nonesuch"], "--y", "unknown column 'nonesuch'"),
    ("t.csv", ["--y", "family"], "--y", "column family is not numeric (text)"),
    ("t.h5", ["--x", "bisection_exact"], "--x", "not numeric (true/false)"),
    ("t.h5", ["--families", "slimfly,hypercube"], "--families", "'hypercube' is not in the table"),
    ("t.h5", ["--point", "p0"], "--point", "not an option of --kind design"),
    ("t.h5", ["--kind", "latency", "--y", "routers"], "--y", "only --kind design and metric take --y"),
    ("format", ["--kind", "design"], None, "not format 'pdes-analysis'"),
    ("column", [], None, "/table/routers missing"),
    ("incomplete", ["--kind", "design"], None, "incomplete design table"),
    ("header", ["--kind", "design"], None, "header is not the design columns"),
    ("cell", [], None, "routers 'many' is not a number"),
]


@pytest.mark.parametrize("case,extra,key,text", REFUSALS,
                         ids=[f"{r[0]}-{i}" for i, r in enumerate(REFUSALS)])
def test_design_plot_refusals(tables, tmp_path, capsys, case, extra, key, text):
    """A bad column, family or option, or a malformed design table: exit 2, one line
    `pdes: error: <key>: ...` (the file's name for a malformed file), no figure written."""
    from pdes.cli import main
    path = tables / case if case.startswith("t.") else _malformed(tables, tmp_path, case)
    out = tmp_path / "f.png"
    before = sorted(os.listdir(tmp_path))
    capsys.readouterr()
    assert main(["plot", str(path), *extra, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"pdes: error: {key or path}: ") \
        and text in err[0], err
    assert sorted(os.listdir(tmp_path)) == before


def test_design_plot_bad_column_from_the_command_line(tables, tmp_path):
    """`python -m pdes plot TABLE --y nonesuch` exits 2 with one error line, no traceback and
    no figure."""
    out = tmp_path / "f.png"
    r = run_pdes("plot", str(tables / "t.h5"), "--y", "nonesuch", "-o", str(out), cwd=tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
    assert len(lines) == 1 and lines[0].startswith("pdes: error: --y: unknown column"), lines
    assert not out.exists()


def test_design_format_names_agree():
    """The plot reads the format and text columns that `pdes design -o` writes."""
    from pdes.cli.design import FORMAT, FORMAT_VERSION
    from pdes.plot import DESIGN_FORMAT, DESIGN_FORMAT_VERSION, DESIGN_TEXT
    assert (DESIGN_FORMAT, DESIGN_FORMAT_VERSION) == (FORMAT, FORMAT_VERSION)
    rows = design_table(20, families=FAMILIES).rows
    text = {c for c in COLUMNS if any(isinstance(r[c], str) for r in rows)}
    assert text == set(DESIGN_TEXT)
    assert np.all([isinstance(r["bisection_exact"], (bool, type(None))) for r in rows])
