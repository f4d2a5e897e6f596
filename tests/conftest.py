"""Fixtures shared by the whole suite (``python -m pytest --fixtures`` lists them).

The helpers behind them live in ``tests/helpers.py`` (and the golden configs in
``tests/golden.py``); module-level code -- parametrize lists, a module's ``cfg_of`` -- imports
them from there, test bodies may take these fixtures instead.
"""
from __future__ import annotations

import functools
import os

# As python -m pdes does: one BLAS thread per process (the test workers and every process
# they start share two cores), set before NumPy first loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest  # noqa: E402

from tests import helpers  # noqa: E402


@pytest.fixture(scope="session")
def make_cfg():
    """:func:`tests.helpers.make_cfg`: ``make_cfg(*sets, preset=NAME)`` resolves ``section.key=value``
    strings on top of a phase preset of :data:`tests.helpers.PHASES`."""
    return helpers.make_cfg


@pytest.fixture(scope="session")
def mpiexec():
    """The path of the ``mpiexec`` that belongs to this Python's MPI."""
    return helpers.mpiexec()


@pytest.fixture
def pdes_env():
    """The environment for a child Python: the repository first on PYTHONPATH."""
    return helpers.subprocess_env()


@pytest.fixture
def run_pdes(tmp_path):
    """``run_pdes(*args, nranks=1, timeout=300, env=None)``: ``python -m pdes ARGS`` in the
    test's ``tmp_path`` (on ``nranks`` ranks under ``mpiexec``); returns the completed process
    (``returncode``, ``stdout``, ``stderr``)."""
    return functools.partial(helpers.run_pdes, cwd=tmp_path)


@pytest.fixture
def assert_same_results():
    """:func:`tests.helpers.assert_same_results`: two result dicts or HDF5 result files are
    exactly equal; the message names the first differing key."""
    return helpers.assert_same_results


MPI_TEST_LIMIT = 600
"""Seconds one test may take under ``mpiexec`` before the job is ended (the slowest takes
well under a minute): a test waiting forever in a collective would otherwise hold every rank
until the CI's own limit, with nothing said about where."""


@pytest.fixture(autouse=True)
def _close_figures():
    """The figures a test made are closed after it: pyplot keeps every figure until closed, and
    warns past 20 in one test process."""
    yield
    import sys
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")


@pytest.fixture(autouse=True)
def _mpi_watchdog(request):
    """Under ``mpiexec`` (more than one rank), a test still running after
    :data:`MPI_TEST_LIMIT` seconds prints its name and every thread's traceback on each rank
    and ends the job (exit 3 on that rank; ``mpiexec`` ends the others)."""
    import sys
    if "mpi4py.MPI" not in sys.modules:
        yield
        return
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    if comm.Get_size() == 1:
        yield
        return
    import faulthandler
    import os
    import threading

    capman = request.config.pluginmanager.getplugin("capturemanager")

    def expire():
        if capman is not None:      # the test's output capture would swallow what follows
            try:
                capman.suspend(in_=False)
            except Exception:       # noqa: BLE001 - say it anyway, perhaps into the capture
                pass
        print(f"\n[watchdog] rank {comm.Get_rank()}: {request.node.nodeid} still running after "
              f"{MPI_TEST_LIMIT} s; tracebacks follow, then the job ends", file=sys.stderr,
              flush=True)
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        sys.stderr.flush()
        os._exit(3)

    timer = threading.Timer(MPI_TEST_LIMIT, expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
