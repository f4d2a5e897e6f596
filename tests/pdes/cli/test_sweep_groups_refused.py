"""A sweep in groups of ranks (--concurrent) whose larger group cannot run a point (more ranks
than routers) is refused on every rank before the first point, instead of one group refusing
while the others wait for it."""
import subprocess

from tests.helpers import python_argv, subprocess_env

SETS = ["--set", "topology.name=hypercube", "--set", "topology.n=1",
        "--set", "measure.warmup_cycles=100", "--set", "measure.measure_cycles=200",
        "--set", "measure.sample_period=100"]


def test_a_group_with_more_ranks_than_routers_is_refused_on_every_rank(tmp_path):
    out = tmp_path / "s.h5"
    # 5 ranks in 2 groups: 3 and 2 ranks, on a network of 2 routers
    cmd = python_argv("-m", "pdes", "sweep", "--quiet", *SETS, "--loads", "0.1,0.2",
                      "--concurrent", "2", "-o", str(out), nranks=5)
    # the timeout only guards the test run against the hang this test is about
    r = subprocess.run(cmd, capture_output=True, text=True, env=subprocess_env(), timeout=600)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.count("pdes: error: --concurrent 2: in a group of 3 ranks: run.partition: "
                          "3 ranks but only 2 routers") == 1, r.stderr
    assert "MPI_Abort" not in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()
