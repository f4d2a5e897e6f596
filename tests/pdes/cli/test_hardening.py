"""Hostile input and signals: one error line and exit 2 before any work, on 1 and 2 ranks; no
output written through links or onto devices; a signal to one rank ends the whole job."""
import os
import signal
import stat
import subprocess

import pytest

from models.core.errors import ParameterError
from models.core.registry import Param
from tests.helpers import (ROOT, assert_refused_on_every_rank, cli_sets, descendants, python_argv,
                           run_pdes, subprocess_env)

FAST = cli_sets(preset="cli")


def _files(tmp_path):
    (tmp_path / "big.edges").write_text("routers 2000000000\n0 1\n")
    (tmp_path / "ep.edges").write_text("router 0 endpoints 4294967297\n0 1\n")
    (tmp_path / "gml.graphml").write_text(
        '<?xml version="1.0"?><graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
        '<graph edgedefault="undirected"><node id="0"/><node id="1999999999"/>'
        '<edge source="0" target="1999999999"/></graph></graphml>')
    (tmp_path / "latin1.toml").write_bytes(b"[topology]\nname = \"sl\xefmfly\"\n")
    (tmp_path / "huge.place").write_text("0\n1\n99999999999999999999999\n3\n")
    (tmp_path / "binary.place").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "nan.cfg").write_text("topology = mesh;\nk = 4;\nn = 2;\n"
                                      "routing_function = dim_order;\ninternal_speedup = nan;\n")


def _old_output(path) -> bytes:
    """Write an earlier result file at ``path`` (an HDF5 file with pdes's version attribute,
    which a run may replace) and return its bytes."""
    import h5py
    with h5py.File(path, "w") as f:
        f.attrs["pdes_version"] = "earlier"
        f["summary/previous"] = 1
    return path.read_bytes()


BAD = [   # (arguments, the key the error line must name)
    (["--set", "router.internal_speedup=nan"], "router.internal_speedup"),
    (["--set", "router.internal_speedup=inf"], "router.internal_speedup"),
    (["--set", "routing.algorithm=ugal_l", "--set", "routing.c=nan"], "routing.c"),
    (["--set", "measure.saturation_tolerance=nan"], "measure.saturation_tolerance"),
    (["--set", "measure.saturation_tolerance=1.5"], "measure.saturation_tolerance"),
    (["--set", "measure.warmup_tolerance=-inf"], "measure.warmup_tolerance"),
    (["--set", "layout.ns_per_m=inf"], "layout.ns_per_m"),
    (["--set", "layout.cycle_ns=0"], "layout.cycle_ns"),
    (["--set", "measure.seed=36893488147419103232"], "measure.seed"),
    (["--set", "measure.seed=-1"], "measure.seed"),
    (["--set", "measure.sample_period=100000000"], "measure.sample_period"),
    (["--set", "measure.sample_period=500", "--set", "measure.measure_cycles=300"],
     "measure.sample_period"),
    (["--set", "run.max_cycles=300"], "run.max_cycles"),
    (["--set", "measure.latency_hist_max=1000000000"], "measure.latency_hist_max"),
    (["--set", "router.link_latency=1000000000"], "router.link_latency"),
    (["--set", "router.link_latency=100000"], "measure.watchdog_cycles"),
    (["--set", "router.buffer_flits=-1"], "router.buffer_flits"),
    (["--set", "router.vc_buffer_flits=40000"], "router.vc_buffer_flits"),
    (["--set", "router.packet_size=100000"], "router.packet_size"),
    (["--set", "traffic.load=nan"], "traffic.load"),
    (["--set", "topology.name=file", "--set", "topology.path=big.edges"], "topology.path"),
    (["--set", "topology.name=file", "--set", "topology.path=ep.edges"], "topology.path"),
    (["--set", "topology.name=file", "--set", "topology.path=gml.graphml"], "topology.path"),
    (["latin1.toml"], "config"),
    (["/dev/null"], "config"),
    (["--set", "traffic.pattern=hotspot", "--set", "traffic.hotspots=0"], "traffic.hotspots"),
    (["--set", "faults.link_count=2", "--set", "faults.at_cycle=100000000"], "faults.at_cycle"),
    (["nan.cfg"], "booksim.internal_speedup"),
    *[(["--set", "traffic.pattern=bitcomp", "--set", "traffic.procs=4", "--set",
        "traffic.placement=file", "--set", f"traffic.placement_file={name}"],
       "traffic.placement_file") for name in ("huge.place", "binary.place")],
    (["--set", "topology.q=10007"], "topology.q"),
    (["--set", "topology.name=hyperx", "--set", "topology.sizes=[1000,1000,1000]"], "topology.sizes"),
    (["--set", "topology.name=dragonfly", "--set", "topology.h=200"], "topology.h"),
    (["--set", "topology.q=29", "--set", "run.max_memory_gb=0.001"], "topology"),
    (["--set", "run.max_memory_gb=nan"], "run.max_memory_gb"),
    (["--set", "run.max_memory_gb=0.0001"], "run.max_memory_gb"),     # distances fit, the run not
]


@pytest.mark.parametrize("args,key", BAD, ids=[f"{k}-{i}" for i, (_, k) in enumerate(BAD)])
def test_bad_input_is_one_line_exit_2(tmp_path, args, key):
    """Every bad input class: exit 2, one `pdes: error: <key>` line, no traceback, the existing
    output file untouched and no other file written, on 1 and 2 ranks."""
    _files(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    old = tmp_path / "old.h5"
    previous = _old_output(old)
    r = run_pdes("run", *FAST, *args, "-o", str(old), cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if not ln.startswith("[pdes]")]
    assert len(lines) == 1 and lines[0].startswith(f"pdes: error: {key}"), r.stderr
    assert "Traceback" not in r.stderr
    assert old.read_bytes() == previous
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(before + ["old.h5"])


@pytest.mark.mpi(min_size=2)
def test_bad_input_under_mpi_is_one_line_exit_2_on_every_rank(tmp_path, capfd):
    """Under MPI every bad input class gives status 2 on every rank, one error line (rank 0),
    the existing output file untouched and no other file written."""
    from mpi4py import MPI

    from pdes.cli import main
    comm = MPI.COMM_WORLD
    d = comm.bcast(str(tmp_path), root=0)
    here = os.getcwd()
    os.chdir(d)
    try:
        if comm.Get_rank() == 0:
            _files(tmp_path)
            _old_output(tmp_path / "old.h5")
        comm.Barrier()
        with open("old.h5", "rb") as fh:
            previous = fh.read()
        before = sorted(os.listdir(d))
        for args, key in BAD:
            capfd.readouterr()
            status = main(["run", *FAST, *args, "-o", "old.h5"])
            err = capfd.readouterr().err
            assert_refused_on_every_rank(
                comm, status, err, lambda line: line.startswith(f"pdes: error: {key}"), args)
            comm.Barrier()
            assert sorted(os.listdir(d)) == before
            with open("old.h5", "rb") as fh:
                assert fh.read() == previous
    finally:
        os.chdir(here)
        comm.Barrier()


def test_declared_ranges_hold_for_every_number():
    """Declared bounds are checked, floats must be finite and integers fit in 64 bits."""
    p = Param("x", float, 1.0, "", lo=0.0, lo_open=True, hi=1.0)
    assert p.coerce("0.5", "s.x") == 0.5
    for bad in ("0", "1.5", "nan", "inf", "-inf"):
        with pytest.raises(ParameterError, match=r"^s\.x: must be"):
            p.coerce(bad, "s.x")
    q = Param("n", int, 1, "")
    with pytest.raises(ParameterError, match="64-bit"):
        q.coerce(2 ** 64, "s.n")
    lst = Param("l", "float_list", None, "", lo=0.0)
    with pytest.raises(ParameterError, match=r"^s\.l:"):
        lst.coerce([1.0, float("nan")], "s.l")


def test_every_static_key_has_a_range_or_choices():
    """Every numeric key of the static sections declares its range next to its declaration."""
    from pdes import config as C
    missing = [f"{s}.{p.name}" for s, ps in C.STATIC.items() for p in ps
               if p.kind in (int, float) and p.lo is None and p.hi is None]
    assert not missing, missing


def test_output_through_symlink_or_onto_device_is_refused(tmp_path):
    """-o naming a symbolic link or a device is refused; neither is replaced."""
    target = tmp_path / "target.h5"
    target.write_bytes(b"keep")
    link = tmp_path / "link.h5"
    link.symlink_to(target)
    for out, what in ((str(link), "symbolic link"), ("/dev/null", "not a regular file")):
        r = run_pdes("run", *FAST, "-o", out)
        assert r.returncode == 2 and what in r.stderr, r.stderr
    assert link.is_symlink() and target.read_bytes() == b"keep"
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.parametrize("cmd", ["run", "sweep", "check", "topo"])
def test_a_config_from_a_pipe_is_refused_not_read_twice(tmp_path, cmd):
    """A config path that is a named pipe is refused at once (pdes would read it twice, and
    every rank reads it): one line, exit 2, no wait for a writer."""
    fifo = tmp_path / "cfg.fifo"
    os.mkfifo(fifo)
    args = {"sweep": ["-o", str(tmp_path / "s.h5")], "topo": ["slimfly"]}.get(cmd, [])
    r = run_pdes(cmd, *(["--config"] if cmd == "topo" else []), str(fifo), *args, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("pdes: error: config: ") and "is not a regular file" in r.stderr
    assert r.stderr.count("\n") == 1 and sorted(os.listdir(tmp_path)) == ["cfg.fifo"]


@pytest.mark.parametrize("cmd, sets, key", [
    ("run", ["traffic.pattern=bitcomp", "traffic.procs=4", "traffic.placement=file",
             "traffic.placement_file=in.fifo"], "traffic.placement_file"),
    ("topo", ["topology.path=in.fifo", "topology.format=edgelist"], "topology.path"),
    ("analyze", ["topology.path=in.fifo", "topology.format=edgelist"], "topology.path")])
def test_an_input_file_from_a_pipe_is_refused(tmp_path, cmd, sets, key):
    """A file the config names that is a named pipe is refused before it is read (no wait for
    a writer): one line naming the key, exit 2."""
    os.mkfifo(tmp_path / "in.fifo")
    name = [] if cmd == "run" else ["file"]
    args = [a for s in sets for a in ("--set", s)]
    r = run_pdes(cmd, *name, *args, *(["--only", "moore"] if cmd == "analyze" else []),
                 cwd=tmp_path, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"pdes: error: {key}: in.fifo is not a regular file"), r.stderr
    assert r.stderr.count("\n") == 1 and os.listdir(tmp_path) == ["in.fifo"]


def test_output_directory_is_checked_before_simulating(tmp_path):
    """A missing output directory is an error before any work; so is an output name that
    ends in '/' (the name of a directory), which names the output, not its checkpoint, and
    one whose directory is a file."""
    r = run_pdes("run", *FAST, "-o", str(tmp_path / "no" / "such" / "o.h5"))
    assert r.returncode == 2 and "output.file: directory does not exist" in r.stderr
    r = run_pdes("run", *FAST, "-o", "sub/", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("pdes: error: output.file: sub/ ends in '/'")
    assert os.listdir(tmp_path) == []
    (tmp_path / "f").write_text("")
    r = run_pdes("run", *FAST, "-o", "f/o.h5", cwd=tmp_path)
    assert r.returncode == 2 and f"output.file: {tmp_path / 'f'} is not a directory" in r.stderr


def test_check_exit_codes_and_disconnected_graph(tmp_path):
    """`pdes check`: 0 deadlock-free, 1 deadlock possible, 2 bad input and disconnected networks."""
    def check(*args):
        return run_pdes("check", *args, cwd=tmp_path)
    assert check().returncode == 0
    assert check("--set", "routing.vc_scheme=phase").returncode == 1
    (tmp_path / "two.edges").write_text("0 1\n2 3\n")
    r = check("--set", "topology.name=file", "--set", "topology.path=two.edges")
    assert r.returncode == 2 and "disconnected" in r.stderr
    _files(tmp_path)
    r = check("latin1.toml")
    assert r.returncode == 2 and r.stderr.startswith("pdes: error: config:") and "Traceback" not in r.stderr
    r = check("--set", "topology.name=hyperx", "--set", "topology.sizes=[3,3]",
              "--set", "routing.algorithm=dor")
    assert r.returncode == 0 and "VC scheme dor: 1 class, num_vcs 1, longest path 2 hops" \
        in r.stdout and "without wraparound links (a mesh or a HyperX" in r.stdout, r.stdout


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_to_one_rank_ends_the_job(tmp_path, sig):
    """SIGINT or SIGTERM to one rank of a 2-rank run ends the whole job with non-zero status."""
    cmd = python_argv("-m", "pdes", "run", "--set", "measure.measure_cycles=10000000",
                      "-o", str(tmp_path / "o.h5"), nranks=2)
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=subprocess_env(), start_new_session=True)
    try:
        seen = []
        for line in job.stderr:              # until the window loop runs (a progress line)
            seen.append(line)
            if "] cycle " in line:
                break
        ranks = descendants(job.pid, "pdes run")
        assert len(ranks) == 2, (ranks, seen)
        os.kill(max(ranks), sig)
        _, err = job.communicate(timeout=10)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
    assert job.returncode != 0
    assert ("interrupted" if sig == signal.SIGINT else "terminated") in err
    assert not (tmp_path / "o.h5").exists()


def _signal_when(job, ready, pattern: str, sig, which=max, timeout: float = 120):
    """Send ``sig`` to one of ``job``'s ranks (``which`` of their pids; the job itself when it
    is one process) once ``ready()``;
    returns the job's stderr.  The job is killed if it has not ended 20 s after."""
    import time
    try:
        deadline = time.monotonic() + timeout
        while not ready() and job.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        ranks = descendants(job.pid, pattern) or [job.pid]     # [job.pid]: one process
        assert job.poll() is None, job.poll()
        os.kill(which(ranks), sig)
        return job.communicate(timeout=20)[1]
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGUSR1])
@pytest.mark.parametrize("which", [min, max])
def test_signal_to_one_rank_ends_an_analysis(tmp_path, sig, which):
    """A signal to one rank of a 2-rank resiliency analysis (whose ranks share the samples)
    ends the whole job with 128 + the signal and one line naming it; SIGINT to one rank left
    the other waiting forever."""
    out = tmp_path / "a.h5"
    cmd = python_argv("-m", "pdes", "analyze", "slimfly", "--set", "topology.q=19", "--only",
                      "resiliency", "--samples", "1000000", "-o", str(out), nranks=2)
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=subprocess_env(), start_new_session=True)
    lock = tmp_path / "a.h5.lock"         # claimed when the analysis starts, after the checks
    err = _signal_when(job, lock.exists, "pdes analyze", sig, which)
    assert job.returncode == 128 + sig, err
    what = "interrupted" if sig == signal.SIGINT else "terminated"
    assert f"pdes: {what} ({signal.Signals(sig).name}) on rank " in err, err
    assert "Traceback" not in err and not out.exists()


def test_sigusr1_ends_a_sweep_keeping_its_points(tmp_path):
    """SIGUSR1 (a batch system's warning) to a one-process sweep writes the points finished so
    far and ends it with status 138 (it killed the process, losing them)."""
    import h5py
    out = tmp_path / "s.h5"
    cmd = python_argv("-m", "pdes", "sweep", "--set", "measure.warmup_cycles=200", "--set",
                      "measure.measure_cycles=3000", "--loads", "0.05:0.95:0.05", "-o", str(out),
                      "--quiet")
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=subprocess_env(), start_new_session=True)
    err = _signal_when(job, out.exists, "pdes sweep", signal.SIGUSR1)
    assert job.returncode == 138, err
    assert err.strip().splitlines() == ["pdes: terminated (SIGUSR1) on rank 0"], err
    with h5py.File(out) as f:
        assert not f.attrs["finished"] and len(f["points"]) >= 1


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["info"], ["topo", "slimfly", "--json"], ["run"], ["show", "o.h5"]])
def test_a_full_standard_output_is_one_line(tmp_path, args):
    """Standard output on a full device: one error line and status 3, no traceback (show and
    topo printed one)."""
    if args[0] == "show":
        assert run_pdes("run", *FAST, "-o", "o.h5", cwd=tmp_path).returncode == 0
    with open("/dev/full", "w") as full:
        r = subprocess.run(python_argv("-m", "pdes", *args, *(FAST if args == ["run"] else [])),
                           stdout=full, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                           env=subprocess_env(), timeout=300)
    assert r.returncode == 3, r.stderr
    lines = [x for x in r.stderr.splitlines() if not x.startswith("[pdes]")]
    assert len(lines) == 1 and "No space left on device" in lines[0], r.stderr


def test_a_run_without_measured_packets_says_so(tmp_path):
    """The summary of a run that measured no packet says so instead of printing NaN and the
    file's -1 percentiles, and so does its hops figure (it was an empty plot)."""
    from pdes.plot import hops_figure
    from pdes.results import open_results
    r = run_pdes("run", "--set", "traffic.load=0.0000001", "--set", "measure.warmup_cycles=100",
                 "--set", "measure.measure_cycles=200", "--quiet", "-o", "o.h5", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "packet latency    none (no measured packet)" in r.stdout and "nan" not in r.stdout
    with open_results(str(tmp_path / "o.h5")) as res:
        texts = [t.get_text() for t in hops_figure(res).axes[0].texts]
    assert texts == ["run: no measured packet"]


def test_declared_ranges_are_documented():
    """docs/config.md lists every static key's declared range as it is in the code."""
    from pdes import config as C
    text = (ROOT / "docs" / "config.md").read_text()
    for s, ps in list(C.STATIC.items()) + list(C.COMMON.items()):
        for p in ps:
            if p.range_text():
                assert f"| `{s}.{p.name}` | {p.range_text()} |" in text, f"{s}.{p.name}"


def test_memory_estimate_is_printed_and_scales_with_buffers():
    """The start report gives the run's memory estimate; its buffer part grows with the buffers
    and its per-rank part shrinks with more ranks."""
    from pdes import config as C
    from pdes.build import prepare
    from pdes.sizing import memory_estimate
    small = prepare(C.resolve({}, ["router.buffer_flits=64"]))
    big = prepare(C.resolve({}, ["router.buffer_flits=640"]))
    a, b = memory_estimate(small), memory_estimate(big)
    assert b["buffers"] > 9 * a["buffers"] and b["per_node_full"] > b["per_node"]
    assert memory_estimate(small, nranks=4)["state"] < a["state"]
    assert a["distances"] == small.topo.n_routers ** 2
    r = run_pdes("run", *FAST)
    assert r.returncode == 0 and "[pdes] memory estimate: " in r.stderr and "per node at start" in r.stderr


@pytest.mark.parametrize("name,params,key", [
    ("fattree", {"k": 20000}, "topology.k"),
    ("mlfm", {"h": 5000}, "topology.h"),
    ("oft", {"k": 10008}, "topology.k"),
    ("skywalk", {"z": 64, "c": 10 ** 7, "d_i": 7, "d_o": 4}, "topology.c"),
    ("dln", {"routers": 10 ** 8, "shortcuts": 4}, "topology.routers"),
    ("random_regular", {"routers": 10 ** 8, "degree": 8}, "topology.routers"),
    ("hypercube", {"n": 28}, "topology.n"),
    ("slimfly", {"q": 10007}, "topology.q"),
    ("bdf", {"u": 4099}, "topology.u"),
    ("delorme", {"v": 101}, "topology.v"),
    ("galaxyfly", {"n": 41, "q": 10007, "a": 4, "p": 10}, "topology.q"),
])
def test_every_family_refuses_a_size_that_cannot_fit_before_building(name, params, key):
    """Each family checks the router and link counts its parameters imply before it builds
    anything: a ParameterError naming the size parameter, not a MemoryError."""
    from models.topology import build
    with pytest.raises(ParameterError, match=key):
        build(name, params)


@pytest.mark.parametrize("cmd", [["info"], ["cache", "--json"],
                                 ["run", "--set", "measure.warmup_cycles=100",
                                  "--set", "measure.measure_cycles=200",
                                  "--set", "measure.sample_period=100"]],
                         ids=["info", "cache", "run"])
def test_output_closed_by_its_reader_is_no_traceback(tmp_path, cmd):
    """``pdes ... | head``: a reader that closes the pipe early ends the command with status 0
    and nothing on stderr but its own progress lines (no BrokenPipeError traceback, neither
    from the command nor from the interpreter's last flush)."""
    p = subprocess.Popen(python_argv("-m", "pdes", *cmd), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=tmp_path, env=subprocess_env())
    p.stdout.close()                 # before the command writes its first line
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 0, err
    assert [ln for ln in err.splitlines() if not ln.startswith("[pdes]")] == [], err


def test_a_workload_cut_short_says_so(tmp_path):
    """A schedule stopped by run.max_cycles before its operations completed says so in the
    summary instead of printing only a completion time."""
    (tmp_path / "t.goal").write_text(
        "num_ranks 2\nrank 0 {\nl1: send 64b to 1\nl2: recv 64b from 1\n}\n"
        "rank 1 {\nl1: recv 64b from 0\nl2: calc 5000\nl3: send 64b to 0\n"
        "l2 requires l1\nl3 requires l2\n}\n")
    r = run_pdes("run", "--set", "traffic.pattern=goal", "--set", "traffic.file=t.goal",
                 "--set", "measure.warmup_cycles=0", "--set", "measure.measure_cycles=200",
                 "--set", "run.max_cycles=200", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "incomplete            3 of 5 operations completed; saturated: run.max_cycles" \
        in r.stdout, r.stdout
    r = run_pdes("run", "--set", "traffic.pattern=alltoall", "--set", "measure.warmup_cycles=0",
                 "--set", "measure.measure_cycles=40", "--set", "measure.sample_period=10",
                 "--set", "run.max_cycles=50", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr      # an exchange counts its messages
    assert "incomplete            0 of 39800 messages completed; saturated: run.max_cycles" \
        in r.stdout, r.stdout
