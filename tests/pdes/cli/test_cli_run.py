"""`python -m pdes run`: default example, overrides, bad input and failure behaviour."""
import h5py
import pytest

from tests.helpers import cli_sets, run_pdes, run_python

FAST = cli_sets(preset="cli")


def test_default_example_runs(tmp_path):
    """With no config the built-in Slim Fly example runs and prints a summary."""
    r = run_pdes("run", "--quiet", *FAST, "-o", str(tmp_path / "out.h5"))
    assert r.returncode == 0, r.stderr
    assert "accepted load" in r.stdout and "packet latency" in r.stdout
    with h5py.File(tmp_path / "out.h5") as f:
        assert f.attrs["complete"]
        assert 0.35 < f["summary/accepted_load"][()] < 0.45


def test_start_up_breakdown_on_stderr_and_in_run(tmp_path):
    """The start report lists every start-up phase, and /run holds each phase's seconds."""
    from pdes.cli.run import STARTUP
    r = run_pdes("run", *FAST, "-o", str(tmp_path / "out.h5"))
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stderr.splitlines() if "start-up:" in x)
    for what, _ in STARTUP:
        assert f" {what} " in line, what
    with h5py.File(tmp_path / "out.h5") as f:
        for _, key in STARTUP:
            assert f["run"].attrs[key] >= 0.0, key
    assert {k for _, k in STARTUP} >= {"build_s", "layout_s", "distances_s", "tables_s",
                                        "traffic_s", "partition_s", "state_s", "compile_s"}
    q = run_pdes("run", "--quiet", *FAST)
    assert q.returncode == 0 and "start-up" not in q.stderr


def test_print_config_round_trips(tmp_path):
    """--print-config prints TOML that runs as a config file with the same result."""
    r = run_pdes("run", "--print-config", "--set", "traffic.load=0.25")
    assert r.returncode == 0 and 'load = 0.25' in r.stdout
    cfg = tmp_path / "c.toml"
    cfg.write_text(r.stdout)
    r2 = run_pdes("run", str(cfg), "--print-config")
    assert r2.returncode == 0 and r2.stdout == r.stdout


@pytest.mark.parametrize("args,key", [
    (["--set", "router.bogus=1"], "router.bogus"),
    (["--set", "topology.q=abc"], "topology.q"),
    (["--set", "traffic.load=-0.1"], "traffic.load"),
    (["--set", "traffic.load=1.5"], "traffic.load"),
    (["--set", "router.num_vcs=1"], "router.num_vcs"),
    (["--set", "router.packet_size=40", "--set", "router.buffer_flits=64"], "router.buffer_flits"),
    (["--set", "router.packet_size=40", "--set", "router.vc_buffer_flits=32"],
     "router.vc_buffer_flits"),
    (["--set", "router.buffer_flits=64", "--set", "router.vc_buffer_flits=16"],
     "router.vc_buffer_flits"),
    (["--set", "traffic.pattern=nosuch"], "traffic.pattern"),
    (["--set", "routing.algorithm=nosuch"], "routing.algorithm"),
    (["--set", "topology.name=nosuch"], "topology.name"),
    (["--set", "topology.q=6"], "topology.q"),
    (["--set", "measure.warmup_cycles=1.5"], "measure.warmup_cycles"),
    (["/nonexistent/cfg.toml"], "config"),
    (["--set", "nodot=1"], "--set"),
    (["--set", "run.max_imbalance=0.5"], "run.max_imbalance"),
    (["--set", "routing.algorithm=nar"], "routing.algorithm"),   # Slim Fly has no supernodes
    # engine limits of the narrow per-VC state types
    (["--set", "router.num_vcs=128"], "router.num_vcs"),
    (["--set", "router.buffer_flits=80000", "--set", "router.num_vcs=2"], "router.buffer_flits"),
    (["--set", "router.num_vcs=127", "--set", "router.buffer_flits=254",
      "--set", "topology.name=hyperx", "--set", "topology.sizes=4",
      "--set", "topology.p=300"], "router.num_vcs"),
])
def test_bad_input_one_line_exit_2_no_file(tmp_path, args, key):
    """Bad input: one line naming the key on stderr, exit status 2, no output file."""
    out = tmp_path / "o.h5"
    r = run_pdes("run", *args, "-o", str(out))
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pdes: error:") and key in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    assert not any(tmp_path.iterdir())


def test_malformed_toml(tmp_path):
    """A malformed TOML file is reported with its name, exit status 2."""
    bad = tmp_path / "bad.toml"
    bad.write_text("[router\nnum_vcs = ")
    r = run_pdes("run", str(bad))
    assert r.returncode == 2 and "not valid TOML" in r.stderr and "Traceback" not in r.stderr


def test_bad_input_under_mpi_exits_2_everywhere(tmp_path):
    """Under mpiexec a config error is printed once and every rank exits with status 2."""
    r = run_pdes("run", "--set", "traffic.load=2", "-o", str(tmp_path / "o.h5"), nranks=2,
                 timeout=120)
    assert r.returncode == 2
    assert r.stderr.count("pdes: error:") == 1 and "traffic.load" in r.stderr
    assert not any(tmp_path.iterdir())


FAULT = """
import sys
from mpi4py import MPI
import pdes.state
orig = pdes.state.PartState.advance
def faulty(self, t0, t1):
    if MPI.COMM_WORLD.Get_rank() == 1 and t0 >= 300:
        raise RuntimeError("injected fault")
    return orig(self, t0, t1)
pdes.state.PartState.advance = faulty
from pdes.cli import main
sys.exit(main(["run", "--quiet", "--set", "measure.measure_cycles=100000", "-o", sys.argv[1]]))
"""


def test_fault_on_one_rank_ends_the_job(tmp_path):
    """An exception on one rank mid-run ends the whole job quickly, non-zero, with its message."""
    script = tmp_path / "fault.py"
    script.write_text(FAULT)
    r = run_python(script, tmp_path / "o.h5", nranks=2, timeout=120)
    assert r.returncode != 0
    assert "rank 1" in r.stderr and "injected fault" in r.stderr
    assert not (tmp_path / "o.h5").exists()


def test_buffer_note_compares_a_vcs_share_with_the_round_trip(tmp_path):
    """A VC's share of the port buffer below a link's credit round trip is reported at start,
    also under --quiet, and stored in the result file; none when every link is covered."""
    from pdes import config as C
    from pdes.build import prepare
    from pdes.sizing import buffer_note
    cfg = C.resolve({}, ["topology.q=13", "topology.p=9", "router.buffer_flits=64"])
    prep = prepare(cfg)
    # credit delay, a channel's extra cycle for the flit and for its credit, and switch
    # allocation to sending (0 with BookSim's timing at speedup 2; defaults)
    fixed = 2 + 1 + 1 + 0
    rtt = 2 * int(max(prep.link_latency)) + fixed
    note = buffer_note(prep)
    assert "router.buffer_flits = 64 gives 32 flits per VC (2 VCs)" in note
    assert f"(longest {rtt} cycles)" in note and f"buffer_flits >= {2 * rtt}" in note
    cfg["router"]["buffer_flits"] = 2 * rtt
    assert buffer_note(prepare(cfg)) == ""
    out = tmp_path / "o.h5"
    r = run_pdes("run", "--quiet", *FAST, "--set", "router.link_latency=40",
                 "--set", "router.buffer_flits=64", "-o", str(out))
    assert r.returncode == 0 and r.stderr.count("note: router.buffer_flits") == 1
    with h5py.File(out) as f:
        assert f.attrs["buffer_note"].startswith("note: router.buffer_flits = 64 gives 32")
    r = run_pdes("run", "--quiet", *FAST, "--set", "router.link_latency=1", "-o", str(out))
    assert "note:" not in r.stderr
    with h5py.File(out) as f:
        assert f.attrs["buffer_note"] == ""
