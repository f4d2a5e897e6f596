"""The import layers of docs/architecture.md, checked on every import of the code.

Every ``import`` and ``from ... import`` statement of the packages (function-level
ones too, found by walking the syntax tree) is resolved to a project module and
checked against the layers, lowest first:

    models.core  <-  models  <-  partition  <-  pdes (library)  <-  pdes.cli, pdes.__main__

A module may import its own layer and the layers below it; ``run_scripts`` and
``tests`` are imported by nobody.  Within the packages no two modules import each
other, directly or through a circle.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = next(d for d in Path(__file__).resolve().parents if (d / "pyproject.toml").exists())
PACKAGES = ("models", "partition", "pdes")


def layer(module: str) -> int:
    """Layer number of a project module (higher may import lower)."""
    if module == "models.core" or module.startswith("models.core."):
        return 0
    if module == "models" or module.startswith("models."):
        return 1
    if module == "partition" or module.startswith("partition."):
        return 2
    if module in ("pdes.cli", "pdes.__main__") or module.startswith("pdes.cli."):
        return 4
    if module == "pdes" or module.startswith("pdes."):
        return 3
    return 5   # run_scripts, tests: nothing may import them


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def project_modules(root: Path = ROOT) -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES + ("run_scripts", "tests"):
        for f in sorted((root / pkg).rglob("*.py")):
            out[module_name(f, root)] = f
    return out


def imports_of(name: str, path: Path, known) -> list[tuple[int, str]]:
    """(line, project module) of every import in the file, at any depth of the tree."""
    is_pkg = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            targets = [f"{mod}.{a.name}" for a in node.names]
            targets = [t if t in known else mod for t in targets]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.append((node.lineno, t))
    return found


def violations(root: Path = ROOT) -> list[str]:
    """Every import that runs against the layers, as ``file:line: a -> b (rule)``."""
    mods = project_modules(root)
    out = []
    for name, path in mods.items():
        if layer(name) == 5:
            continue
        for line, target in imports_of(name, path, mods):
            if layer(target) > layer(name):
                out.append(f"{path.relative_to(root)}:{line}: {name} imports {target} "
                           f"(layer {layer(target)} above its own layer {layer(name)})")
    return out


def circles(root: Path = ROOT) -> list[list[str]]:
    """Groups of package modules that import each other (strongly connected, size > 1)."""
    mods = {n: p for n, p in project_modules(root).items() if layer(n) < 5}
    graph = {n: sorted({t for _, t in imports_of(n, p, mods)}) for n, p in mods.items()}
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_every_import_follows_the_layers():
    """No module imports a layer above its own (function-level imports included)."""
    bad = violations()
    assert not bad, "imports against the layers:\n" + "\n".join(bad)


def test_no_import_circles():
    """No two modules of the packages import each other, directly or through others."""
    found = circles()
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize("source, target, bad", [
    ("models/core/x.py", "from models.metrics import submatrix_max", True),
    ("models/routing/x.py", "def f():\n    from pdes.kernels import cycle\n", True),
    ("partition/x.py", "import pdes.engine", True),
    ("pdes/x.py", "from pdes.cli import common", True),
    ("pdes/x.py", "from run_scripts import bench_engine", True),
    ("pdes/cli/x.py", "from pdes import engine\nfrom models.core import jit", False),
    ("models/routing/x.py", "from models.core.record import F_DST\nfrom ..metrics import UNREACHABLE",
     False),
])
def test_the_check_catches_a_forbidden_import(tmp_path, source, target, bad):
    """The walk finds a forbidden import, also inside a function or relative, and passes
    an allowed one."""
    for pkg in PACKAGES + ("run_scripts", "tests"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    for sub in ("models/core", "models/routing", "pdes/cli", "pdes/kernels"):
        (tmp_path / sub).mkdir(exist_ok=True)
        (tmp_path / sub / "__init__.py").write_text("")
    for mod in ("models/metrics.py", "models/core/jit.py", "models/core/record.py",
                "pdes/engine.py", "pdes/kernels/cycle.py", "run_scripts/bench_engine.py"):
        (tmp_path / mod).write_text("")
    (tmp_path / source).write_text(target + "\n")
    assert bool(violations(tmp_path)) == bad


def test_the_check_catches_a_circle(tmp_path):
    """Two modules importing each other (one of them inside a function) are a circle."""
    for pkg in PACKAGES + ("run_scripts", "tests"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "pdes" / "a.py").write_text("from pdes import b\n")
    (tmp_path / "pdes" / "b.py").write_text("def f():\n    from pdes.a import g\n")
    assert circles(tmp_path) == [["pdes.a", "pdes.b"]]
