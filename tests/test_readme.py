"""The README is a short front door; the docs document every config key and every registered model."""
import pathlib

from models.core.registry import ROUTINGS, TOPOLOGIES, TRAFFIC
from pdes import config as C
import models.routing  # noqa: F401
import models.topologies  # noqa: F401
import models.traffic  # noqa: F401

ROOT = pathlib.Path(__file__).parent.parent
README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"


def test_every_static_config_key_is_documented():
    """Each key of [layout], [router], [measure], [output], [run] appears in docs/config.md."""
    text = (DOCS / "config.md").read_text()
    missing = [f"{s}.{p.name}" for s, ps in C.STATIC.items() for p in ps if f"`{p.name}`" not in text
               and f"`{s}.{p.name}`" not in text]
    assert not missing, missing


def test_every_registered_model_is_documented():
    """Each registered topology, routing algorithm and traffic pattern appears on its docs page."""
    pages = {"topologies.md": TOPOLOGIES, "routing.md": ROUTINGS, "traffic.md": TRAFFIC}
    missing = [f"{page}: {e.name}" for page, reg in pages.items() for e in reg
               if f"`{e.name}`" not in (DOCS / page).read_text()]
    assert not missing, missing


def test_readme_is_short():
    """Reference material lives in docs/; the README stays a front door."""
    assert len(README.splitlines()) <= 400


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
    ci = (ROOT / ".ci" / "run").read_text()
    assert cmd in ci.splitlines()
