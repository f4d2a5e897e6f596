"""``python -m pdes design``: bad input is one line and exit 2 (on 1 and 2 ranks) before any
work, the CSV and HDF5 files hold the table, the printed table is sorted."""
import csv
import json
import math
import os
import socket

import pytest

from models.design import COLUMNS, design_table
from tests.helpers import assert_refused_on_every_rank, run_pdes

BAD = [   # (arguments, the key the error line must name)
    ([], "--radix"),
    (["--radix", "x"], "--radix"),
    (["--radix", "0"], "--radix"),
    (["--radix", "300"], "--radix"),
    (["--radix", "48", "--radix-max", "40"], "--radix-max"),
    (["--radix", "48", "--radix-max", "1000"], "--radix-max"),
    (["--radix", "48", "--families", "random_regular"], "--families"),
    (["--radix", "48", "--families", "slimfly,nonesuch"], "--families"),
    (["--radix", "48", "--families", "torus"], "--families"),
    (["--radix", "48", "--families", ","], "--families"),
    (["--radix", "48", "--endpoints", "500"], "--endpoints"),
    (["--radix", "48", "--endpoints", "9:3"], "--endpoints"),
    (["--radix", "48", "--endpoints", ":"], "--endpoints"),
    (["--radix", "48", "--endpoints", "0:10"], "--endpoints"),
    (["--radix", "48", "--diameter", "0"], "--diameter"),
    (["--radix", "48", "--power", "nonesuch"], "--power"),
    (["--radix", "48", "--router-coeffs", "1"], "--router-coeffs"),
    (["--radix", "48", "--router-coeffs", "1,nan"], "--router-coeffs"),
]
BAD_OUTPUT = [   # (-o file, text of the error line); old.csv exists, its lock is held
    ("out.txt", "has no known suffix"),
    ("missing/out.csv", "directory does not exist"),
    ("held.csv", "is being written by another pdes run"),
    ("y" * 250 + ".csv", "bytes"),
]


def _files(d):
    with open(os.path.join(d, "old.csv"), "w") as fh:
        fh.write("previous table\n")
    with open(os.path.join(d, "held.csv.lock"), "w") as fh:     # held by this live process
        fh.write(json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "started": None}))


def _cases():
    return [(args + ["-o", "old.csv"], key, None) for args, key in BAD] + \
        [(["--radix", "8", "-o", out], "-o", text) for out, text in BAD_OUTPUT]


def _line_ok(key, text):
    return lambda line: line.startswith(f"pdes: error: {key}: ") and (text is None or text in line)


@pytest.mark.parametrize("args,key,text", _cases(),
                         ids=[f"{c[1]}-{i}" for i, c in enumerate(_cases())])
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, monkeypatch, args, key, text):
    """Every bad argument or output: status 2, one `pdes: error: <key>: ` line, the existing
    output untouched and nothing else written."""
    from pdes.cli import main
    _files(tmp_path)
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path))
    capsys.readouterr()
    status = main(["design", *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and _line_ok(key, text)(err[0]), err
    assert sorted(os.listdir(tmp_path)) == before
    assert (tmp_path / "old.csv").read_text() == "previous table\n"


def test_bad_input_from_the_command_line(tmp_path):
    """`python -m pdes design` with an unknown family exits 2 with one error line and no
    traceback."""
    r = run_pdes("design", "--radix", "48", "--families", "nonesuch", cwd=tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
    assert len(lines) == 1 and lines[0].startswith("pdes: error: --families: 'nonesuch' "), lines


@pytest.mark.mpi(min_size=2)
def test_bad_input_under_mpi_is_refused_on_every_rank(tmp_path, capfd):
    """Under MPI every bad argument or output gives status 2 on every rank, one error line
    (rank 0), the existing output untouched and nothing else written."""
    from mpi4py import MPI

    from pdes.cli import main
    comm = MPI.COMM_WORLD
    d = comm.bcast(str(tmp_path), root=0)
    here = os.getcwd()
    os.chdir(d)
    try:
        if comm.Get_rank() == 0:
            _files(d)
        comm.Barrier()
        before = sorted(os.listdir(d))
        for args, key, text in _cases():
            capfd.readouterr()
            status = main(["design", *args])
            assert_refused_on_every_rank(comm, status, capfd.readouterr().err,
                                         _line_ok(key, text), args)
            comm.Barrier()
            assert sorted(os.listdir(d)) == before
            with open("old.csv") as fh:
                assert fh.read() == "previous table\n"
    finally:
        os.chdir(here)
        comm.Barrier()


@pytest.mark.mpi(min_size=2)
def test_under_mpi_rank_0_alone_prints_and_writes(tmp_path, capfd):
    """Under MPI every rank returns 0, rank 0 alone prints the table and writes the file, and
    the file holds the table of one process."""
    from mpi4py import MPI

    from pdes.cli import main
    comm = MPI.COMM_WORLD
    out = os.path.join(comm.bcast(str(tmp_path), root=0), "t.csv")
    capfd.readouterr()
    status = main(["design", "--radix", "16", "-o", out])
    printed = capfd.readouterr().out
    if comm.Get_rank() == 0:
        with open(out, newline="") as fh:
            got = [{c: _cell(c, r[c]) for c in COLUMNS} for r in csv.DictReader(fh)]
        mine = printed.startswith("family ") and got == design_table(16).rows and \
            sorted(os.listdir(os.path.dirname(out))) == ["t.csv"]
    else:
        mine = printed == ""
    # every rank learns every verdict, so a failure fails all ranks together
    assert comm.allgather((status, mine)) == [(0, True)] * comm.Get_size()


def _cell(column, value):
    """A CSV cell back as the table's value (empty: not given)."""
    if value == "":
        return None
    if column in ("family", "params", "diameter_source", "bisection"):
        return value
    if column == "bisection_exact":
        return value == "True"
    number = float(value)
    return int(value) if number.is_integer() and "." not in value else number


def test_csv_and_hdf5_hold_the_table(tmp_path, capsys, monkeypatch):
    """`-o t.csv` and `-o t.h5` write every row and column of the table (None as an empty cell,
    -1 or NaN; the HDF5 Moore bound as a number); an earlier table is replaced."""
    import h5py

    from pdes.cli import main
    monkeypatch.chdir(tmp_path)
    args = ["design", "--radix", "20", "--families", "slimfly,dragonfly,fattree,galaxyfly,torus",
            "--endpoints", ":2000"]
    want = design_table(20, families=["slimfly", "dragonfly", "fattree", "galaxyfly", "torus"],
                        endpoints=(None, 2000)).rows
    (tmp_path / "t.csv").write_text(",".join(COLUMNS) + "\nan,earlier,table\n")
    assert main([*args, "-o", "t.csv"]) == 0
    with open(tmp_path / "t.csv", newline="") as fh:
        got = list(csv.DictReader(fh))
    assert tuple(got[0]) == COLUMNS
    assert [{c: _cell(c, r[c]) for c in COLUMNS} for r in got] == want
    assert main([*args, "-o", "t.h5"]) == 0
    with h5py.File(tmp_path / "t.h5") as f:
        assert (f.attrs["format"], bool(f.attrs["complete"])) == ("pdes-design", True)
        assert json.loads(f.attrs["options"])["radix"] == 20
        table = {c: f["table"][c][()] for c in COLUMNS}
    for i, row in enumerate(want):
        for c in COLUMNS:
            v = table[c][i]
            v = v.decode() if isinstance(v, bytes) else v.item()
            if row[c] is None:
                assert v == -1 or (isinstance(v, float) and math.isnan(v)), (c, row)
            else:
                assert v == (float(row[c]) if c == "moore_bound" else row[c]), (c, row)
    assert sorted(os.listdir(tmp_path)) == ["t.csv", "t.h5"]


def test_printed_table_is_sorted_by_family_then_endpoints(tmp_path, capsys):
    """The printed table has one line per configuration, sorted by family, then endpoints,
    and says how many there are and what was left out."""
    from pdes.cli import main
    capsys.readouterr()
    assert main(["design", "--radix", "32", "--radix-max", "48"]) == 0
    out = capsys.readouterr().out.splitlines()
    table = design_table(32, 48)
    n = len(table.rows)
    body = out[1:1 + n]
    keys = [(ln.split()[0], int(ln.split()[-10].replace(",", ""))) for ln in body]
    assert keys == sorted(keys) and {f for f, _ in keys} == {r["family"] for r in table.rows}
    assert out[1 + n].startswith(f"{n} configurations (radix 32..48)")
    assert table.left_out and out[2 + n:] == [
        f"left out: {k} {f} configuration(s) beyond the engine's limits"
        for f, k in sorted(table.left_out.items())]
