"""A process no MPI launcher started runs as one rank without loading the MPI library
(``pdes.cli.common.world``); under a launcher or a batch system, or with ``PDES_MPI=1``,
it takes MPI's ``COMM_WORLD`` as before."""
import pytest

from pdes.cli import common
from tests.helpers import run_python

SCRIPT = """
import sys
from pdes.cli import main
rc = main(["run", "--quiet", "-o", "out.h5", "--set", "measure.warmup_cycles=100",
           "--set", "measure.measure_cycles=200", "--set", "measure.sample_period=100"])
print(rc, "mpi4py.MPI" in sys.modules)
"""


def _clean_env(monkeypatch):
    import os
    for k in list(os.environ):
        if k.startswith(common.LAUNCH_MARKERS) or k == "PDES_MPI":
            monkeypatch.delenv(k)


def test_a_run_not_launched_loads_no_mpi(tmp_path, monkeypatch):
    _clean_env(monkeypatch)
    (tmp_path / "run.py").write_text(SCRIPT)
    r = run_python(tmp_path / "run.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-2:] == ["0", "False"]     # the summary, then this line
    r = run_python(tmp_path / "run.py", cwd=tmp_path, env={"PDES_MPI": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-2:] == ["0", "True"]      # MPI's COMM_WORLD, a singleton


@pytest.mark.parametrize("var", ["PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
                                 "HYDI_CONTROL_FD", "MPI_LOCALNRANKS", "SLURM_JOB_ID",
                                 "PBS_JOBID", "LSB_JOBID", "FLUX_JOB_ID", "PALS_RANKID",
                                 "MV2_COMM_WORLD_RANK", "I_MPI_ROOT"])
def test_any_launcher_or_batch_variable_means_mpi(monkeypatch, var):
    _clean_env(monkeypatch)
    assert common.not_launched()
    monkeypatch.setenv(var, "0")
    assert not common.not_launched()


def test_pdes_mpi_forces_mpi(monkeypatch):
    _clean_env(monkeypatch)
    monkeypatch.setenv("PDES_MPI", "1")
    assert not common.not_launched()
    monkeypatch.setenv("PDES_MPI", "0")
    assert common.not_launched() and isinstance(common.world(), common.SingleRank)


def test_single_rank_answers_the_rest_through_mpi():
    """Rank 0 of 1 without MPI; any other call is MPI's COMM_WORLD's (here a singleton, or
    rank 0 of a pytest run under mpiexec)."""
    from mpi4py import MPI
    w = common.SingleRank()
    assert (w.Get_rank(), w.Get_size()) == (0, 1)
    assert w.allreduce(3) == 3 * MPI.COMM_WORLD.Get_size()
    assert w.Split_type is not None
