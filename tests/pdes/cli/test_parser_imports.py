"""Building the command line loads neither Numba nor MPI: a command that does not simulate
(``pdes show``, ``design``, ``info``, ...) starts without them, and ``pdes run`` loads them
when it runs."""
from tests.helpers import run_python

SCRIPT = """
import sys
from pdes.cli import build_parser
build_parser().parse_args(["run", "--set", "traffic.load=0.3"])
heavy = sorted(m for m in ("numba", "mpi4py.MPI", "scipy", "h5py", "pandas", "matplotlib")
               if m in sys.modules)
print(",".join(heavy) or "none")
"""


def test_building_the_parser_imports_no_numba_nor_mpi(tmp_path):
    script = tmp_path / "parser.py"
    script.write_text(SCRIPT)
    r = run_python(script, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "none"


def test_run_still_stops_with_the_checkpoint_status():
    from pdes import loopstate
    from pdes.cli import run
    assert run.EXIT_STOPPED is loopstate.EXIT_STOPPED and run.EXIT_STOPPED == 75


REGISTRIES = """
import sys
import models.topologies, models.routing, models.traffic
web = sorted(m for m in ("urllib.request", "http.client", "email.parser") if m in sys.modules)
print(",".join(web) or "none")
"""


def test_the_model_registries_import_no_web_modules(tmp_path):
    """Loading every topology, routing and traffic model (what each simulating command does)
    imports no URL or HTTP module: those add 10-25 ms to the start of every pdes process
    (the GraphML writer imports its escaping where it writes)."""
    script = tmp_path / "registries.py"
    script.write_text(REGISTRIES)
    r = run_python(script, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "none"
