"""Input provenance and output safety (docs/output.md#output-files, docs/checkpoint.md):
a restart or a resumed study refuses input files that changed; an output is claimed by one
writer, is never one of the command's inputs, and has a name that fits the file system,
all checked before any work; `topo --export`, `plot -o` and `analyze -o` follow the same
rules."""
import json
import os
import shutil
import socket
import subprocess
import sys
from types import SimpleNamespace

import h5py
import pytest

from models.core.errors import ParameterError
from pdes import provenance as P
from pdes.cli import outputs as O
from tests.helpers import anynet_ring, assert_refused_on_every_rank, cli_sets, run_pdes

RUN = cli_sets(preset="restart")
STUDY = cli_sets(preset="study")


def ring_sets(net):
    """--set arguments of topology 'file' on the anynet ring ``net``."""
    return ["--set", "topology.name=file", "--set", f"topology.path={net}"]


def pdes(*args, cwd, nranks=1):
    return run_pdes(*args, cwd=cwd, nranks=nranks, timeout=600)


def one_error(r, text):
    """Exit 2 with one `pdes: error:` line holding ``text``, no traceback."""
    lines = [ln for ln in r.stderr.strip().splitlines() if not ln.startswith("[pdes]")]
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1 and lines[0].startswith("pdes: error: ") and text in lines[0], r.stderr


def in_process(capsys, *argv):
    """`python -m pdes ARGV` in this process: its status and stderr, as :func:`one_error`
    reads them."""
    from pdes.cli import main
    capsys.readouterr()
    status = main(list(argv))
    return SimpleNamespace(returncode=status, stderr=capsys.readouterr().err)


def lock_of(pid, host=None):
    """The text of a lock held by process ``pid`` of ``host`` (default: this host)."""
    return json.dumps({"host": host or socket.gethostname(), "pid": pid, "started": None})


def dead_pid():
    """The id of a process that has ended."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def stop_ring(tmp_path, *extra):
    """A run on the anynet ring stopped at cycle 300: (network file, checkpoint)."""
    net = anynet_ring(tmp_path, weights=[1, 2, 1, 2, 1, 2])
    r = pdes("run", "--quiet", *RUN, *ring_sets(net), "-o", "a.h5", "--stop-at", "300", *extra,
             cwd=tmp_path)
    assert r.returncode == 75, r.stderr
    return net, tmp_path / "a.ckpt.h5"


# --------------------------------------------------------------------------- 1: provenance
def test_input_files_come_from_the_registry():
    """Every key declared with `files` is found in a config: the network file (and an anynet
    file's groups side file) and a placement file only under placement = "file"."""
    from pdes import config as C
    cfg = C.resolve({}, ["topology.name=file", "topology.path=n.anynet",
                         "traffic.pattern=subset_uniform", "traffic.placement_file=p.txt"])
    assert P.input_files(cfg) == {"topology.path": "n.anynet",
                                  "topology.path (groups file)": "n.anynet.groups"}
    cfg = C.resolve({}, ["topology.name=file", "topology.path=n.txt", "traffic.pattern=subset_uniform",
                         "traffic.placement=file", "traffic.placement_file=p.txt"])
    assert P.input_files(cfg) == {"topology.path": "n.txt", "traffic.placement_file": "p.txt"}
    assert P.input_files(C.resolve({}, [])) == {}


def test_every_parameter_naming_a_file_declares_it():
    """Every registered parameter whose name says it is a file or path declares `files`
    (output.file, an output, excepted), so its content is recorded."""
    import models.routing  # noqa: F401
    import models.topologies  # noqa: F401
    import models.traffic  # noqa: F401
    from models.core.registry import ROUTINGS, TOPOLOGIES, TRAFFIC
    from pdes import config as C
    params = [(f"{s}.{p.name}", p) for s, ps in list(C.STATIC.items()) + list(C.COMMON.items())
              for p in ps]
    for reg in (TOPOLOGIES, ROUTINGS, TRAFFIC):
        params += [(f"{reg.section}.{e.name}.{p.name}", p) for e in reg for p in e.params]
    named = [k for k, p in params if ("file" in p.name or "path" in p.name) and p.kind is str]
    assert "topology.file.path" in named and "traffic.alltoall.placement_file" in named
    missing = [k for k, p in params if k in named and not p.files and k != "output.file"]
    assert not missing, missing


def test_restart_refuses_a_changed_network_file(tmp_path):
    """A network file edited between --stop-at and --restart is refused (exit 2, naming the key
    and the file, nothing written); --allow-changed-inputs continues and records the change."""
    net, ck = stop_ring(tmp_path)
    with open(net) as fh:
        text = fh.read()
    with open(net, "w") as fh:
        fh.write(text.replace("router 1 1", "router 1 2", 1))
    r = pdes("run", "--quiet", "--restart", str(ck), "-o", "r.h5", cwd=tmp_path)
    one_error(r, f"restart: topology.path: {net} changed since the checkpoint was written")
    assert not (tmp_path / "r.h5").exists()
    r = pdes("run", "--quiet", "--restart", str(ck), "-o", "r.h5", "--allow-changed-inputs",
             cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with h5py.File(tmp_path / "r.h5") as f:
        changed = json.loads(f.attrs[P.CHANGED_ATTR])
        files = json.loads(f.attrs[P.ATTR])
    assert [c["key"] for c in changed] == ["topology.path"] and changed[0]["path"] == net
    assert files[0] == {"key": "topology.path", "path": net, "sha256": P.digest(net)}


def test_resume_refuses_a_changed_placement_file(tmp_path):
    """`sweep --resume` after the placement file changed is refused (exit 2, the study file
    unchanged); --allow-changed-inputs resumes and records the change in the study file."""
    net = anynet_ring(tmp_path)
    place = tmp_path / "place.txt"
    place.write_text("\n".join(str(e) for e in range(12)) + "\n")
    args = ["sweep", "--quiet", *STUDY, *ring_sets(net), "--set", "traffic.pattern=subset_uniform",
            "--set", "traffic.placement=file", "--set", f"traffic.placement_file={place}",
            "--loads", "0.2", "-o", "s.h5"]
    assert pdes(*args, cwd=tmp_path).returncode == 0
    with h5py.File(tmp_path / "s.h5") as f:
        assert [e["key"] for e in json.loads(f.attrs[P.ATTR])[0]] == [
            "topology.path", "topology.path (groups file)", "traffic.placement_file"]
    before = (tmp_path / "s.h5").read_bytes()
    place.write_text("\n".join(str(e) for e in reversed(range(12))) + "\n")
    r = pdes(*args, "--resume", cwd=tmp_path)
    one_error(r, f"--resume: traffic.placement_file: {place} changed since the study was written")
    assert (tmp_path / "s.h5").read_bytes() == before
    r = pdes(*args, "--resume", "--allow-changed-inputs", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with h5py.File(tmp_path / "s.h5") as f:
        changed = json.loads(f.attrs[P.CHANGED_ATTR])
    assert [(c["key"], c["path"]) for c in changed] == [("traffic.placement_file", str(place))]


# --------------------------------------------------------------------------- 3: one writer
def test_an_output_being_written_is_refused_and_a_stale_lock_taken_over(tmp_path):
    """A lock held by a live process refuses `run` and `sweep` on that output (exit 2, lock and
    directory untouched); the lock of a process that has ended is taken over and removed,
    with the temporary file of the write it did not finish."""
    lock = tmp_path / "o.h5.lock"
    lock.write_text(lock_of(os.getpid()))
    for args in (["run", *RUN], ["sweep", *STUDY, "--loads", "0.2"]):
        r = pdes(*args, "--quiet", "-o", "o.h5", cwd=tmp_path)
        one_error(r, "o.h5 is being written by another pdes run (lock o.h5.lock, process")
        assert sorted(os.listdir(tmp_path)) == ["o.h5.lock"]
        assert lock.read_text() == lock_of(os.getpid())
    dead = dead_pid()
    lock.write_text(lock_of(dead))
    (tmp_path / f"o.h5.tmp-{dead}").write_bytes(b"half a file")
    r = pdes("run", *RUN, "--quiet", "-o", "o.h5", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(tmp_path)) == ["o.h5"]


def test_lock_claims_in_process(tmp_path):
    """One claim per path at a time, also within a process; a lock of another host or an
    unreadable lock is respected; release removes only this process's lock."""
    out = str(tmp_path / "x.h5")
    with O.claim(None, [(out, "-o")]):
        assert os.path.exists(out + ".lock")
        with pytest.raises(ParameterError, match="is being written by another pdes run"):
            O.claim(None, [(out, "-o")])
    assert not os.path.exists(out + ".lock")
    for text in (lock_of(1, host="another-host"), ""):
        with open(out + ".lock", "w") as fh:
            fh.write(text)
        with pytest.raises(ParameterError, match="remove the lock"):
            O.claim(None, [(out, "-o")])
        with open(out + ".lock") as fh:
            assert fh.read() == text


def test_a_lock_that_cannot_be_removed_stays_silently(tmp_path, monkeypatch):
    """Releasing a lock on a file system that refuses the removal (turned read-only) leaves
    the lock for the next writer to take over instead of raising: the error that ended the
    command is the one reported (the lock's OSError replaced it)."""
    out = str(tmp_path / "x.h5")
    c = O.claim(None, [(out, "-o")])

    def refuse(path):
        raise OSError(30, "Read-only file system", path)
    monkeypatch.setattr(O.os, "remove", refuse)
    c.release()
    monkeypatch.undo()
    assert os.path.exists(out + ".lock") and c.locks == []


@pytest.fixture
def small_disk(tmp_path):
    """A file system of its own (tmpfs), filled by ``fill(free)`` but for ``free`` bytes; the
    test is skipped where this process may not mount one."""
    import subprocess
    d = tmp_path / "small"
    d.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=700k", "tmpfs", str(d)],
                       capture_output=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    def fill(free: int):
        st = os.statvfs(d)
        (d / "filler").write_bytes(b"\0" * (st.f_bavail * st.f_frsize - free))
        return d
    try:
        yield fill
    finally:
        subprocess.run(["umount", str(d)], capture_output=True)


@pytest.mark.parametrize("free, args", [
    (65536, ["run", "--set", "topology.q=7", "--set", "measure.measure_cycles=3000", "-o",
             "out.h5", "--checkpoint-every", "1000", "--quiet"]),      # a checkpoint of ~1 MB
    (8192, ["analyze", "slimfly", "--set", "topology.q=13", "--only", "paths,cables", "-o",
            "out.h5"]),
])
def test_a_full_disk_ends_with_one_line(small_disk, free, args):
    """A write that fills the disk ends the command with one line and status 3: no h5py
    tracebacks of the objects it could not release, no crash at exit (status 139), no file."""
    d = small_disk(free)
    r = pdes(*args, cwd=d)
    assert r.returncode == 3, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("pdes: error"), r.stderr
    assert "No space left on device" in r.stderr and os.listdir(d) == ["filler"]


# --------------------------------------------------------------------------- 4: never an input
def test_an_output_never_replaces_an_input(tmp_path):
    """-o naming the config file, the network file or the checkpoint being continued, and
    --checkpoint naming the network file, are refused (exit 2); each input is unchanged."""
    net, ck = stop_ring(tmp_path)
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(f'[topology]\nname = "file"\npath = "{net}"\n')
    before = {p: open(p, "rb").read() for p in (net, cfg, ck)}
    for args, key in ((["run", str(cfg), *RUN, "-o", str(cfg)], "output.file"),
                      (["run", str(cfg), *RUN, "-o", net], "output.file"),
                      (["run", "--restart", str(ck), "-o", str(ck)], "output.file"),
                      (["run", str(cfg), *RUN, "-o", "b.h5", "--checkpoint", net], "checkpoint"),
                      (["sweep", str(cfg), *STUDY, "--loads", "0.2", "-o", net, "--force"], "-o")):
        r = pdes(*args, "--quiet", cwd=tmp_path)
        one_error(r, f"{key}: ")
        assert "is an input of this command" in r.stderr
    for p, data in before.items():
        assert open(p, "rb").read() == data, p
    assert not (tmp_path / "b.h5").exists()


# --------------------------------------------------------------------------- 5: topo --export
def test_topo_export_follows_the_output_rules(tmp_path):
    """`topo --export` refuses a symbolic link (its target untouched), an existing file or
    groups side file without --force, and an input file; --force replaces the file."""
    target = tmp_path / "t.txt"
    target.write_text("keep")
    (tmp_path / "link.txt").symlink_to(target)
    topo = ["topo", "slimfly", "--set", "topology.q=5", "--json", "--export"]
    one_error(pdes(*topo, "edgelist", "link.txt", cwd=tmp_path), "symbolic link")
    assert target.read_text() == "keep" and (tmp_path / "link.txt").is_symlink()
    old = tmp_path / "sf.txt"
    old.write_text("old")
    one_error(pdes(*topo, "edgelist", "sf.txt", cwd=tmp_path), "--export: sf.txt exists (use --force")
    assert old.read_text() == "old"
    r = pdes(*topo, "edgelist", "sf.txt", "--force", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert old.read_text().startswith("# pdes router graph")
    (tmp_path / "sf.anynet.groups").write_text("old")
    one_error(pdes(*topo, "anynet", "sf.anynet", cwd=tmp_path), "sf.anynet.groups exists")
    assert not (tmp_path / "sf.anynet").exists()
    r = pdes("topo", "file", "--set", "topology.path=sf.txt", "--export", "edgelist", "sf.txt",
             "--force", cwd=tmp_path)
    one_error(r, "is an input of this command (topology.path")
    assert sorted(os.listdir(tmp_path)) == ["link.txt", "sf.anynet.groups", "sf.txt", "t.txt"]


# --------------------------------------------------------------------------- 6: name limits
def test_an_existing_file_is_replaced_only_if_it_is_what_the_command_writes(tmp_path, capsys,
                                                                         monkeypatch):
    """`run`, `analyze`, `design` and `plot` replace an existing output only if it is what
    they write there (a pdes HDF5 file, a design table, a figure of the name's format) or
    empty; any other file is refused (exit 2, one line) and left as it was."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("keep")
    (tmp_path / "other.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + b"x" * 64)  # not pdes's
    (tmp_path / "t.png").write_text("keep")
    (tmp_path / "t.csv").write_text("a,b\n1,2\n")
    (tmp_path / "empty.h5").write_bytes(b"")
    foreign = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    pdes_h5 = "an HDF5 file written by pdes"
    for argv, text in ((["run", "--quiet", *RUN, "-o", "notes.txt"], pdes_h5),
                       (["run", "--quiet", *RUN, "-o", "other.h5"], pdes_h5),
                       (["analyze", "slimfly", "--only", "moore", "-o", "notes.txt"], pdes_h5),
                       (["design", "--radix", "12", "-o", "t.csv"], "a design table written by pdes design"),
                       (["design", "--radix", "12", "-o", "other.h5"], pdes_h5)):
        one_error(in_process(capsys, *argv), f"exists and is not {text}; pdes replaces only")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == foreign
    assert in_process(capsys, "run", "--quiet", *RUN, "-o", "empty.h5").returncode == 0
    assert in_process(capsys, "run", "--quiet", *RUN, "-o", "empty.h5").returncode == 0
    assert in_process(capsys, "design", "--radix", "12", "-o", "d.csv").returncode == 0
    assert in_process(capsys, "design", "--radix", "12", "-o", "d.csv").returncode == 0
    one_error(in_process(capsys, "plot", "empty.h5", "-o", "t.png"), "is not a PNG image")
    assert (tmp_path / "t.png").read_text() == "keep"
    for out in ("f.png", "f.svg", "f.pdf"):
        assert in_process(capsys, "plot", "empty.h5", "-o", out).returncode == 0
        assert in_process(capsys, "plot", "empty.h5", "-o", out).returncode == 0
    one_error(in_process(capsys, "run", "--quiet", *RUN, "-o", "f.png"), pdes_h5)


def test_a_name_too_long_for_its_temporary_file_is_refused_at_start(tmp_path):
    """A 250-byte output name (its `.tmp-<pid>` twin would pass 255 bytes) is refused before
    anything is built, for run -o, --checkpoint, sweep -o and topo --export: exit 2, no start
    report, no file written."""
    long = "x" * 246 + ".h5"
    assert len(long) == 249 and O.SUFFIX_BYTES + len(long) > 255
    for args, key in ((["run", *RUN, "-o", long], "output.file"),
                      (["run", *RUN, "-o", "o.h5", "--checkpoint", long], "checkpoint"),
                      (["sweep", *STUDY, "--loads", "0.2", "-o", long], "-o"),
                      (["topo", "slimfly", "--export", "edgelist", long], "--export")):
        r = pdes(*args, cwd=tmp_path)
        one_error(r, f"{key}: the file name of {long} is 249 bytes")
        assert "[pdes]" not in r.stderr          # nothing built: no start report
        assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------- 7: plot, analyze
LONG = "z" * 246 + ".png"
"""A 250-byte name: with `.tmp-<pid>` (up to 12 bytes) it passes 255 bytes."""
ANALYZE = ["analyze", "slimfly", "--set", "topology.q=5", "--only", "moore"]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A study file of one point (Slim Fly q=5, load 0.2)."""
    from pdes.cli import main
    path = tmp_path_factory.mktemp("plot") / "study.h5"
    assert main(["sweep", "--quiet", *STUDY, "--loads", "0.2", "-o", str(path)]) == 0
    return path


def test_plot_to_a_symbolic_link_is_refused(study, tmp_path, capsys):
    """`plot -o` naming a symbolic link is refused (exit 2): the link and its target are
    untouched and nothing else is written."""
    target = tmp_path / "t.png"
    target.write_text("keep")
    (tmp_path / "link.png").symlink_to(target)
    r = in_process(capsys, "plot", str(study), "-o", str(tmp_path / "link.png"))
    one_error(r, "link.png is a symbolic link")
    assert target.read_text() == "keep" and (tmp_path / "link.png").is_symlink()
    assert sorted(os.listdir(tmp_path)) == ["link.png", "t.png"]


def test_plot_never_replaces_the_file_it_plots(study, tmp_path, capsys):
    """`plot -o` naming the study file it reads, by the same path or through a hard link, is
    refused (exit 2, naming it) and the study is unchanged."""
    shutil.copy(study, tmp_path / "s.png")
    os.link(tmp_path / "s.png", tmp_path / "hard.png")
    before = (tmp_path / "s.png").read_bytes()
    for out in ("s.png", "hard.png"):
        r = in_process(capsys, "plot", str(tmp_path / "s.png"), "-o", str(tmp_path / out))
        one_error(r, f"-o: {tmp_path / out} is an input of this command (plotted file: ")
    assert (tmp_path / "s.png").read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["hard.png", "s.png"]


def test_plot_name_too_long_is_refused_before_reading(tmp_path, capsys):
    """`plot -o` with a 250-byte name is refused before the file to plot is read: the error is
    the name's, although that file is not HDF5; nothing is written."""
    bad = tmp_path / "s.h5"
    bad.write_text("not a study")
    r = in_process(capsys, "plot", str(bad), "-o", str(tmp_path / LONG))
    one_error(r, f"-o: the file name of {tmp_path / LONG} is 250 bytes")
    assert os.listdir(tmp_path) == ["s.h5"]


def test_plot_output_being_written_is_refused(study, tmp_path, capsys):
    """A lock held by a live process refuses `plot -o` on that figure (exit 2, lock untouched,
    no figure); once the lock is gone the figure is written and no lock or temporary is left."""
    lock = tmp_path / "f.png.lock"
    lock.write_text(lock_of(os.getpid()))
    r = in_process(capsys, "plot", str(study), "-o", str(tmp_path / "f.png"))
    one_error(r, "f.png is being written by another pdes run (lock ")
    assert lock.read_text() == lock_of(os.getpid())
    assert os.listdir(tmp_path) == ["f.png.lock"]
    lock.unlink()
    assert in_process(capsys, "plot", str(study), "-o", str(tmp_path / "f.png")).returncode == 0
    assert os.listdir(tmp_path) == ["f.png"]
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_analyze_to_a_symbolic_link_is_refused(tmp_path, capsys):
    """`analyze -o` naming a symbolic link is refused (exit 2): the link and its target are
    untouched and nothing else is written."""
    target = tmp_path / "t.h5"
    target.write_text("keep")
    (tmp_path / "link.h5").symlink_to(target)
    one_error(in_process(capsys, *ANALYZE, "-o", str(tmp_path / "link.h5")),
              "link.h5 is a symbolic link")
    assert target.read_text() == "keep" and (tmp_path / "link.h5").is_symlink()
    assert sorted(os.listdir(tmp_path)) == ["link.h5", "t.h5"]


def test_analyze_never_replaces_an_input(tmp_path, capsys):
    """`analyze -o` naming its config TOML, or the network file the config names, is refused
    (exit 2, naming the input) and both are unchanged."""
    net = anynet_ring(tmp_path)
    cfg = tmp_path / "net.toml"
    cfg.write_text(f'[topology]\nname = "file"\npath = "{net}"\n')
    before = {p: open(p, "rb").read() for p in (net, cfg)}
    for out, what in ((str(cfg), f"config: {cfg}"), (net, f"topology.path: {net}")):
        r = in_process(capsys, "analyze", str(cfg), "--only", "moore", "-o", out)
        one_error(r, f"-o: {out} is an input of this command ({what})")
    for p, data in before.items():
        assert open(p, "rb").read() == data, p
    assert sorted(os.listdir(tmp_path)) == ["net.anynet", "net.toml"]


def test_analyze_name_too_long_is_refused_before_any_work(tmp_path, capsys):
    """`analyze -o` with a 250-byte name is refused before the network is looked at: on a Slim
    Fly of 20402 routers, which `--only paths` refuses without --sample, the error is the
    name's; nothing is written."""
    big = ["analyze", "slimfly", "--set", "topology.q=101", "--only", "paths"]
    one_error(in_process(capsys, *big), "20402 routers: exact all-pairs metrics")
    r = in_process(capsys, *big, "-o", str(tmp_path / LONG))
    one_error(r, f"-o: the file name of {tmp_path / LONG} is 250 bytes")
    assert os.listdir(tmp_path) == []


def test_analyze_output_being_written_is_refused(tmp_path, capsys):
    """A lock held by a live process refuses `analyze -o` on that file (exit 2, lock untouched,
    no file); once the lock is gone the report is written and no lock or temporary is left."""
    lock = tmp_path / "a.h5.lock"
    lock.write_text(lock_of(os.getpid()))
    r = in_process(capsys, *ANALYZE, "-o", str(tmp_path / "a.h5"))
    one_error(r, "a.h5 is being written by another pdes run (lock ")
    assert lock.read_text() == lock_of(os.getpid())
    assert os.listdir(tmp_path) == ["a.h5.lock"]
    lock.unlink()
    assert in_process(capsys, *ANALYZE, "-o", str(tmp_path / "a.h5")).returncode == 0
    assert os.listdir(tmp_path) == ["a.h5"]
    with h5py.File(tmp_path / "a.h5") as f:
        assert f.attrs["format"] == "pdes-analysis" and f.attrs["complete"]


# --------------------------------------------------------------------------- under MPI
@pytest.mark.mpi(min_size=2)
def test_refusals_under_mpi_on_every_rank(tmp_path, capfd):
    """Under MPI a held lock, an output that is an input, a long name, an existing file pdes
    did not write and a changed network file on --restart give status 2 on every rank and one error line (rank 0), and write
    nothing."""
    from mpi4py import MPI

    from pdes.cli import main
    comm = MPI.COMM_WORLD
    d = comm.bcast(str(tmp_path), root=0)
    here = os.getcwd()
    os.chdir(d)
    try:
        if comm.Get_rank() == 0:
            anynet_ring(tmp_path)
            with open("o.h5.lock", "w") as fh:
                fh.write(lock_of(os.getpid()))
        comm.Barrier()
        ring = ring_sets(os.path.join(d, "net.anynet"))
        assert main(["run", "--quiet", *RUN, *ring, "-o", "a.h5", "--stop-at", "300"]) == 75
        if comm.Get_rank() == 0:
            with open("net.anynet", "a") as fh:
                fh.write("# edited\n")
            with open("notes.txt", "w") as fh:
                fh.write("keep")
        comm.Barrier()
        before = sorted(os.listdir(d))
        for args, text in ((["-o", "o.h5"], "is being written by another pdes run"),
                           ([*ring, "-o", "net.anynet"], "is an input of this command"),
                           (["-o", "y" * 250], "is 250 bytes"),
                           (["-o", "notes.txt"], "is not an HDF5 file written by pdes"),
                           (["--restart", "a.ckpt.h5", "-o", "r.h5"],
                            "restart: topology.path: ")):
            capfd.readouterr()
            status = main(["run", "--quiet", *(RUN if args[0] != "--restart" else []), *args])
            err = capfd.readouterr().err
            assert_refused_on_every_rank(comm, status, err, lambda line: text in line, args)
            comm.Barrier()
            assert sorted(os.listdir(d)) == before
    finally:
        os.chdir(here)
        comm.Barrier()


@pytest.mark.mpi(min_size=2)
def test_analyze_refusals_under_mpi_on_every_rank(tmp_path, capfd):
    """Under MPI `analyze -o` naming a held lock, its config TOML, a symbolic link or a
    250-byte name gives status 2 on every rank and one error line (rank 0), with and without
    the resiliency samples the ranks share, and writes nothing."""
    from mpi4py import MPI

    from pdes.cli import main
    comm = MPI.COMM_WORLD
    d = comm.bcast(str(tmp_path), root=0)
    cfg = os.path.join(d, "n.toml")
    if comm.Get_rank() == 0:
        with open(cfg, "w") as fh:
            fh.write('[topology]\nname = "slimfly"\nq = 5\n')
        with open(os.path.join(d, "a.h5.lock"), "w") as fh:
            fh.write(lock_of(os.getpid()))
        os.symlink(cfg, os.path.join(d, "link.h5"))
    comm.Barrier()
    before = {p: open(os.path.join(d, p), "rb").read() for p in ("n.toml", "a.h5.lock")}
    for only in (["--only", "moore"], ["--only", "moore,resiliency", "--samples", "2"]):
        for out, text in (("a.h5", "is being written by another pdes run"),
                          ("n.toml", "is an input of this command (config: "),
                          ("link.h5", "is a symbolic link"),
                          ("y" * 250, "is 250 bytes")):
            capfd.readouterr()
            status = main(["analyze", cfg, *only, "-o", os.path.join(d, out)])
            err = capfd.readouterr().err
            assert comm.allgather(status) == [2] * comm.Get_size(), (only, out, err)
            lines = [ln for ln in err.strip().splitlines() if ln]
            if comm.Get_rank() == 0:
                assert len(lines) == 1 and lines[0].startswith("pdes: error: -o: ") \
                    and text in lines[0], (only, out, err)
            else:
                assert lines == [], (only, out, err)
            comm.Barrier()
            assert sorted(os.listdir(d)) == ["a.h5.lock", "link.h5", "n.toml"]
    for p, data in before.items():
        assert open(os.path.join(d, p), "rb").read() == data, p
    comm.Barrier()
