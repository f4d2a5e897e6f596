"""Ranks that read their inputs differently (a file or directory only one node has, a per-node
copy of the config that differs): the whole job ends with one refusal's line and status 2,
instead of leaving the other ranks waiting or mixing two configs. Rank 0 runs in one
directory and rank 1 in another (MPMD), standing in for two nodes."""
import subprocess
import sys

from tests.helpers import mpiexec, subprocess_env

CFG = ("[topology]\nname = \"hypercube\"\nn = 2\n"
       "[measure]\nwarmup_cycles = 100\nmeasure_cycles = 200\nsample_period = 100\n")


def _two_dirs(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    return a, b


def _mpmd(a, b, *argv):
    """Rank 0 runs ``pdes ARGV`` in directory ``a``, rank 1 in ``b``."""
    one = [sys.executable, "-m", "pdes", *argv]
    cmd = [mpiexec(), "-n", "1", "-wdir", str(a), *one, ":", "-n", "1", "-wdir", str(b), *one]
    # the timeout only guards the test run against the hang this test is about
    return subprocess.run(cmd, capture_output=True, text=True, env=subprocess_env(), timeout=600)


def test_a_config_only_one_rank_finds_ends_the_job_with_status_2(tmp_path):
    a, b = _two_dirs(tmp_path)
    (a / "c.toml").write_text(CFG)                  # rank 1's directory has no c.toml
    r = _mpmd(a, b, "run", "--quiet", "c.toml")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "pdes: error: config: file not found: c.toml" in r.stderr
    assert "Traceback" not in r.stderr


def test_an_output_directory_only_one_rank_has_ends_the_job_with_status_2(tmp_path):
    a, b = _two_dirs(tmp_path)
    for d in (a, b):
        (d / "c.toml").write_text(CFG)
    (a / "sub").mkdir()                             # rank 1's directory has no sub/
    r = _mpmd(a, b, "run", "--quiet", "c.toml", "-o", "sub/o.h5")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "pdes: error: output.file: directory does not exist" in r.stderr
    assert not (a / "sub" / "o.h5").exists()


def test_a_refusal_on_every_rank_is_still_a_plain_exit_2(tmp_path):
    a, b = _two_dirs(tmp_path)
    r = _mpmd(a, b, "run", "--quiet", "missing.toml")   # no rank finds it: no MPI_Abort
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.count("pdes: error: config: file not found: missing.toml") == 1
    assert "MPI_Abort" not in r.stderr


def test_a_config_that_differs_between_ranks_is_refused(tmp_path):
    a, b = _two_dirs(tmp_path)
    (a / "c.toml").write_text(CFG)
    (b / "c.toml").write_text(CFG + "[traffic]\nload = 0.2\n")
    r = _mpmd(a, b, "run", "--quiet", "--json", "c.toml")
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.count("pdes: error: config: rank 1 read a different config than rank 0") == 1
    assert r.stdout == ""


def test_the_same_config_on_every_rank_runs(tmp_path):
    a, b = _two_dirs(tmp_path)
    for d in (a, b):
        (d / "c.toml").write_text(CFG)
    r = _mpmd(a, b, "run", "--quiet", "--json", "c.toml")
    assert r.returncode == 0, r.stderr
    assert '"accepted_load"' in r.stdout
