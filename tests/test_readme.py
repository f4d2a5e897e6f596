"""The README documents every config key and every registered model."""
import pathlib

from models.registry import ROUTINGS, TOPOLOGIES, TRAFFIC
from pdes import config as C
import models.routing  # noqa: F401
import models.topologies  # noqa: F401
import models.traffic  # noqa: F401

README = (pathlib.Path(__file__).parent.parent / "README.md").read_text()


def test_every_static_config_key_is_documented():
    """Each key of [layout], [router], [measure], [output], [run] appears in the README."""
    missing = [f"{s}.{p.name}" for s, ps in C.STATIC.items() for p in ps if f"`{p.name}`" not in README
               and f"`{s}.{p.name}`" not in README]
    assert not missing, missing


def test_every_registered_model_is_documented():
    """Each registered topology, routing algorithm and traffic pattern appears in the README."""
    missing = [e.name for reg in (TOPOLOGIES, ROUTINGS, TRAFFIC) for e in reg if f"`{e.name}`" not in README]
    assert not missing, missing


def test_readme_starts_with_the_two_commands():
    """The first code block holds the install+run and install+test commands."""
    block = README.split("```bash", 1)[1].split("```", 1)[0]
    assert "pip install -e . && mpiexec -n 2 python -m pdes run" in block
    lines = [ln.split("  #")[0].strip() for ln in block.strip().splitlines()]
    assert lines[1].startswith('pip install -e ".[test]" && python -m pytest -q')
    assert "--with-mpi" in lines[1]


def test_ci_runs_the_readme_test_command():
    """.ci/run runs the README's test command verbatim."""
    block = README.split("```bash", 1)[1].split("```", 1)[0]
    cmd = block.strip().splitlines()[1].split("  #")[0].strip()
    ci = (pathlib.Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
    assert cmd in ci.splitlines()
