"""`pdes show`, `pdes plot` and `pdes sweep --resume` check a study file's schema: a file edited
by hand, or not a study at all, gives one line `pdes: error: <file>: <what>` and exit 2."""
import json
import shutil

import h5py
import numpy as np
import pytest

from tests.helpers import cli_sets, run_pdes

STUDY = [*cli_sets(preset="study"), "--vary", "topology.p=3,4", "--loads", "0.2,0.9",
         "--saturation", "--resolution", "0.5"]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A valid study file (two series, a saturation search), a run file and a checkpoint."""
    from pdes.cli import main
    d = tmp_path_factory.mktemp("studies")
    assert main(["sweep", *STUDY, "-o", str(d / "good.h5"), "--quiet"]) == 0
    assert main(["run", *cli_sets(preset="cli"), "-o", str(d / "run.h5"), "--quiet"]) == 0
    assert main(["run", *cli_sets(preset="cli"), "--quiet", "--checkpoint", str(d / "ck.h5"),
                 "--stop-at", "200"]) == 75
    return d


def _rewrite_table(f, name, change):
    """Replace the table ``name`` by ``change(its array)``."""
    t = f[name][()]
    del f[name]
    f.create_dataset(name, data=change(t))


def _drop_column(t, col):
    keep = [n for n in t.dtype.names if n != col]
    out = np.zeros(t.shape, dtype=[(n, t.dtype[n]) for n in keep])
    for n in keep:
        out[n] = t[n]
    return out


def _retype_column(t, col, dtype):
    out = np.zeros(t.shape, dtype=[(n, dtype if n == col else t.dtype[n]) for n in t.dtype.names])
    for n in t.dtype.names:
        out[n] = t[n] if n != col else np.zeros(t.shape, dtype)
    return out


def _del(path):
    def change(f):
        del f[path]
    return change


def _attr(name, value=None):
    def change(f):
        if value is None:
            del f.attrs[name]
        else:
            f.attrs[name] = value
    return change


def _table(name, fn):
    return lambda f: _rewrite_table(f, name, fn)


def _first_point_gone(f):
    del f["points"][sorted(f["points"])[0]]


MALFORMED = [   # (id, change to a copy of the good study, what the error line must say)
    ("table-missing", _del("table"), "dataset /table missing"),
    ("table-mean-missing", _del("table_mean"), "dataset /table_mean missing"),
    ("points-missing", _del("points"), "group /points missing"),
    ("table-not-a-table", _table("table", lambda t: np.arange(len(t))),
     "dataset /table: expected a one-dimensional table"),
    ("table-2d", _table("table", lambda t: t.reshape(-1, 1)),
     "dataset /table: expected a one-dimensional table"),
    ("table-is-a-group", lambda f: (f.__delitem__("table"), f.create_group("table")),
     "/table is not a dataset"),
    ("column-missing", _table("table", lambda t: _drop_column(t, "latency_mean")),
     "dataset /table: no column 'latency_mean'"),
    ("column-wrong-type", _table("table", lambda t: _retype_column(t, "accepted", "S8")),
     "dataset /table: column 'accepted' should hold a number, not |S8"),
    ("column-of-arrays", _table("table_mean", lambda t: _retype_column(t, "n", ("i8", (2,)))),
     "dataset /table_mean: column 'n' should hold an integer"),
    ("zero-points", _table("table", lambda t: t[:0]), "dataset /table has no points"),
    ("varied-key-no-column", _attr("varied_keys", json.dumps(["topology.p", "routing.c"])),
     "dataset /table: no column 'routing.c' (a varied key of the study)"),
    ("varied-column-dropped", _table("table_mean", lambda t: _drop_column(t, "topology.p")),
     "dataset /table_mean: no column 'topology.p' (a varied key of the study)"),
    ("saturation-column-missing", _table("saturation", lambda t: _drop_column(t, "status")),
     "dataset /saturation: no column 'status'"),
    ("point-not-held", _first_point_gone, "which /points does not hold"),
    ("attr-varied-keys-missing", _attr("varied_keys"), "attribute varied_keys missing"),
    ("attr-varied-keys-not-a-list", _attr("varied_keys", "5"), "attribute varied_keys: expected a JSON list"),
    ("attr-finished-text", _attr("finished", "yes"), "attribute finished: expected true/false"),
    ("attr-config-not-toml", _attr("config_toml", "[[["), "attribute config_toml: expected TOML text"),
    ("attr-config-no-topology", _attr("config_toml", "[routing]\nalgorithm = \"min\"\n"),
     "with topology.name, routing.algorithm and traffic.pattern"),
    ("attr-study-missing", _attr("study"), "attribute study missing"),
    ("attr-version-text", _attr("format_version", "1"), "attribute format_version: expected an integer"),
    ("attr-version-newer", _attr("format_version", 2), "study format_version 2, this pdes reads 1"),
]


def _malformed(study, tmp_path, change):
    path = tmp_path / "bad.h5"
    shutil.copy(study / "good.h5", path)
    with h5py.File(path, "r+") as f:
        change(f)
    return path


def _one_error_line(status, err, path, what):
    lines = err.strip().splitlines()
    assert status == 2, err
    assert len(lines) == 1 and lines[0].startswith(f"pdes: error: {path}: "), err
    assert what in lines[0], err
    assert "Traceback" not in err


def test_the_good_study_is_shown_and_plotted(study, tmp_path, capsys):
    """The unedited files pass: show and plot a study and a run file exit 0."""
    from pdes.cli import main
    for name in ("good.h5", "run.h5"):
        assert main(["show", str(study / name)]) == 0
        assert main(["plot", str(study / name), "-o", str(tmp_path / f"{name}.png")]) == 0
    capsys.readouterr()


def test_show_refuses_the_other_kinds_tables(study, capsys):
    """A run file's tables are summary and jobs, a study file's table, table_mean and
    saturation: asking one for the other's is one line, exit 2."""
    from pdes.cli import main
    good, run = str(study / "good.h5"), str(study / "run.h5")
    assert main(["show", run, "--table", "summary", "--csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "key,value"
    cases = [([good, "--table", "summary"], "pdes: error: --table: a study file has no summary; "
              "its tables are table, table_mean, saturation"),
             ([run, "--table", "saturation"], "pdes: error: --table: a run file has no "
              "saturation; its tables are summary and jobs"),
             ([run, "--table", "jobs"], f"pdes: error: --table: {run} has no jobs (a run of "
              "one workload)")]
    for args, message in cases:
        assert main(["show", *args]) == 2
        assert capsys.readouterr().err.strip() == message


@pytest.mark.parametrize("command", ["show", "plot"])
@pytest.mark.parametrize("change,what", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_study_is_one_line_exit_2(study, tmp_path, capsys, command, change, what):
    """A study file with this malformation: exit 2 and one line naming the file and the fault."""
    from pdes.cli import main
    path = _malformed(study, tmp_path, change)
    out = tmp_path / "fig.png"
    status = main([command, str(path)] + (["-o", str(out)] if command == "plot" else []))
    _one_error_line(status, capsys.readouterr().err, path, what)
    assert not out.exists()


def _replace(path, data):
    def change(f):
        del f[path]
        f.create_dataset(path, data=data)
    return change


MALFORMED_RUN = [   # (id, change to a copy of the run file, what the error line must say)
    ("summary-missing", _del("summary"), "group /summary missing"),
    ("summary-a-dataset", lambda f: (f.__delitem__("summary"), f.create_dataset("summary", data=3)),
     "/summary is not a group"),
    ("summary-holds-a-group", lambda f: f["summary"].create_group("x"), "/summary/x: expected one value"),
    ("summary-window-missing", _del("summary/measure_end"), "/summary/measure_end: missing"),
    ("series-missing", _del("series"), "dataset /series/cycle missing"),
    ("series-uneven", _replace("series/moves", np.zeros(2)), "/series: its columns differ in length"),
    ("hist-missing", _del("hist"), "dataset /hist/hops missing"),
    ("links-missing", _del("links"), "dataset /links/routers missing"),
    ("link-classes-short", _replace("links/link_class", np.zeros(1, np.int32)),
     "do not describe the same links"),
    ("link-router-outside", _replace("links/routers", np.full((175, 2), 10 ** 6, np.int32)),
     "/links/routers: a router id outside /routers"),
    ("link-class-names", lambda f: f["links"].attrs.__setitem__("link_class_names", "[["),
     "attribute link_class_names missing or not a JSON list"),
    ("channel-flits-short", _replace("links/channel_flits", np.zeros(3)),
     "/links/channel_flits: 3 values for 350 channels"),
    ("config-not-toml", _attr("config_toml", "[[["), "attribute config_toml: expected TOML text"),
    ("version-newer", _attr("format_version", 999), "run format_version 999, this pdes reads 1"),
    ("version-text", _attr("format_version", "abc"), "attribute format_version: expected an integer"),
]


@pytest.mark.parametrize("command", ["show", "plot", "plot-links", "plot-series"])
@pytest.mark.parametrize("change,what", [m[1:] for m in MALFORMED_RUN],
                         ids=[m[0] for m in MALFORMED_RUN])
def test_malformed_run_file_is_one_line_exit_2(study, tmp_path, capsys, command, change, what):
    """A run file with this damage: exit 2 and one line naming the file and the fault, for
    `show` and every figure of a run (no traceback, no figure)."""
    from pdes.cli import main
    path = tmp_path / "bad.h5"
    shutil.copy(study / "run.h5", path)
    with h5py.File(path, "r+") as f:
        assert f["links/routers"].shape == (175, 2)
        change(f)
    out = tmp_path / "fig.png"
    cmd, _, kind = command.partition("-")
    status = main([cmd, str(path)] + (["-o", str(out)] if cmd == "plot" else [])
                  + (["--kind", kind] if kind else []))
    _one_error_line(status, capsys.readouterr().err, path, what)
    assert not out.exists()


NOT_STUDIES = [   # (id, file in the fixture's directory or made here, what the line says)
    ("checkpoint", "ck.h5", "not a pdes result or study file (format 'pdes-checkpoint')"),
    ("random-hdf5", None, "not a pdes result or study file (no format attribute)"),
    ("not-hdf5", "text", "not an HDF5 file"),
    ("missing", "absent", "does not exist or is not a regular file"),
]


def _not_a_study(study, tmp_path, name):
    if name is None:
        path = tmp_path / "random.h5"
        with h5py.File(path, "w") as f:
            f["x"] = np.arange(3)
        return path
    if name == "text":
        path = tmp_path / "notes.h5"
        path.write_text("not HDF5\n")
        return path
    return tmp_path / "absent.h5" if name == "absent" else study / name


@pytest.mark.parametrize("command", ["show", "plot"])
@pytest.mark.parametrize("name,what", [m[1:] for m in NOT_STUDIES], ids=[m[0] for m in NOT_STUDIES])
def test_a_file_that_is_not_a_study_is_one_line_exit_2(study, tmp_path, capsys, command, name, what):
    """A checkpoint, an HDF5 file of something else, a text file, a missing file: exit 2 and one
    line naming the file."""
    from pdes.cli import main
    path = _not_a_study(study, tmp_path, name)
    status = main([command, str(path)] + (["-o", str(tmp_path / "f.png")] if command == "plot" else []))
    _one_error_line(status, capsys.readouterr().err, path, what)


@pytest.mark.parametrize("name,what", [
    ("run.h5", "not a pdes study file (format 'pdes-results')"),
    ("ck.h5", "not a pdes study file (format 'pdes-checkpoint')"),
    (None, "not a pdes study file (no format attribute)"),
    ("point-summary", "summary/accepted_load missing or not one value"),
    ("point-attr", "attribute study_load missing or not a number"),
], ids=["run-file", "checkpoint", "random-hdf5", "point-summary", "point-attribute"])
def test_resume_checks_the_study_schema(study, tmp_path, capsys, name, what):
    """`sweep --resume` refuses a file that is not a study, or a study whose points lack what it
    reads, with the same check, and leaves the file as it was."""
    from pdes.cli import main
    if name == "point-summary":
        path = _malformed(study, tmp_path, lambda f: f.__delitem__(
            f"points/{sorted(f['points'])[0]}/summary/accepted_load"))
    elif name == "point-attr":
        path = _malformed(study, tmp_path, lambda f: f[f"points/{sorted(f['points'])[0]}"]
                          .attrs.__delitem__("study_load"))
    else:
        path = _not_a_study(study, tmp_path, name)
        if name is not None:
            path = shutil.copy(path, tmp_path / "copy.h5")
    before = open(path, "rb").read()
    status = main(["sweep", *STUDY, "-o", str(path), "--resume", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert status == 2 and "\n" not in err, err
    assert err.startswith(f"pdes: error: --resume: {path}: ") and what in err, err
    assert open(path, "rb").read() == before


def test_cli_prints_no_traceback(study, tmp_path):
    """Through the command line: a study without /table_mean and a checkpoint, for show and plot,
    exit 2 with the one line on stderr."""
    path = _malformed(study, tmp_path, _del("table_mean"))
    for command in ("show", "plot"):
        for target, what in ((path, "dataset /table_mean missing"),
                             (study / "ck.h5", "not a pdes result or study file")):
            r = run_pdes(command, str(target), cwd=tmp_path)
            _one_error_line(r.returncode, r.stderr, target, what)
