"""The examples of README.md and docs/*.md run, and their links resolve.

Conventions (also described in docs/testing.md):

* a ```toml block whose first line is ``# NAME.toml`` is written to that file
  before the page's commands run;
* every command of a ```bash block runs in the page's own directory, in page
  order: ``python -m pdes ...`` (``run`` and ``sweep`` get short measurement phases
  appended; run in the test's process through ``pdes.cli.main``, which saves a
  Python start-up per command), ``mpiexec -n N python -m pdes ...`` (a child job on
  at most 2 ranks); it must exit 0, or with the status its comment states
  (``# ... exit 1``);
* ``python run_scripts/X.py ...`` is not run (minutes to hours): the script
  must exist and accept every option the example gives;
* ``python -m pytest ...`` is the suite itself and is not run;
* any other command fails the test;
* every ```python block runs and must exit 0.

The README's first block (install and test commands) is checked by
tests/test_readme.py.
"""
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

from tests.helpers import ROOT, cli_sets, mpiexec, run_python, subprocess_env

PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
SHORT = cli_sets(preset="docs")
MAX_RANKS = 2
TIMEOUT = 600  # seconds per command: a first run compiles the kernels


def blocks(text: str):
    """(language, body) of every fenced code block, in order."""
    return re.findall(r"^```(\w*)[^\n]*\n(.*?)^```", text, flags=re.M | re.S)


def examples(page: pathlib.Path):
    """The page's examples in order: ("toml", name, text), ("cmd", argv, status, line), ("python", code)."""
    out = []
    first_bash = page.name == "README.md"
    for lang, body in blocks(page.read_text()):
        if lang == "toml":
            m = re.match(r"#\s*(\S+\.toml)\s*\n", body)
            if m:
                out.append(("toml", m.group(1), body))
        elif lang == "bash":
            if first_bash:          # install + test commands: tests/test_readme.py
                first_bash = False
                continue
            for line in body.splitlines():
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                comment = line.split(" #", 1)[1] if " #" in line else ""
                m = re.search(r"\bexit (\d+)\b", comment)
                out.append(("cmd", shlex.split(line, comments=True), int(m.group(1)) if m else 0, line))
        elif lang == "python":
            out.append(("python", body))
    return out


def command(argv):
    """The argv to run for a documented command, or None when it is only checked."""
    if argv[:3] == ["python", "-m", "pdes"]:
        cmd = [sys.executable, "-m", "pdes"] + argv[3:]
        if argv[3:4] in (["run"], ["sweep"]):
            cmd += SHORT
        return cmd
    if argv and argv[0] in ("mpiexec", "mpirun"):
        assert argv[1] == "-n", argv
        inner = command(argv[3:])
        assert inner is not None and argv[3:6] == ["python", "-m", "pdes"], argv
        return [mpiexec(), "-n", str(min(int(argv[2]), MAX_RANKS))] + inner
    raise AssertionError(f"not a recognised example command: {' '.join(argv)}")


def check_script(argv, where):
    """``python run_scripts/X.py --opt ...``: the script exists and knows every option."""
    script = ROOT / argv[1]
    assert script.is_file(), f"{where}: no such script {argv[1]}"
    helptext = run_python(script, "--help", cwd=ROOT, timeout=120).stdout
    for opt in (a.split("=", 1)[0] for a in argv[2:] if a.startswith("--")):
        assert re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", helptext), \
            f"{where}: {argv[1]} has no option {opt}"


def in_process(args, cwd, capsys):
    """``python -m pdes ARGS`` in ``cwd`` through :func:`pdes.cli.main` in this process:
    (exit status, stdout, stderr)."""
    import os

    from pdes.cli import main
    here = os.getcwd()
    capsys.readouterr()
    os.chdir(cwd)
    try:
        rc = main(list(args))
    except SystemExit as exc:         # argparse's refusals
        rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(here)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_examples_run(page, tmp_path, capsys):
    """Every example of the page runs, in order, in one directory."""
    where = page.relative_to(ROOT)
    for ex in examples(page):           # the page's config files first
        if ex[0] == "toml":
            (tmp_path / ex[1]).write_text(ex[2])
    for ex in examples(page):
        if ex[0] == "toml":
            continue
        if ex[0] == "python":
            script = tmp_path / "_example.py"
            script.write_text(ex[1])
            r = run_python(script, cwd=tmp_path, timeout=TIMEOUT)
            assert r.returncode == 0, f"{where}: python block failed:\n{ex[1]}\n{r.stderr[-3000:]}"
        else:
            _, argv, status, line = ex
            if "pytest" in argv[:6]:     # the suite itself (python -m pytest, mpiexec -n N python -m pytest)
                continue
            if argv[:1] == ["python"] and argv[1:2] and argv[1].startswith("run_scripts/"):
                check_script(argv, where)
                continue
            cmd = command(argv)
            if cmd[:3] == [sys.executable, "-m", "pdes"]:
                rc, out, err = in_process(cmd[3:], tmp_path, capsys)
            else:
                r = subprocess.run(cmd, cwd=tmp_path, env=subprocess_env(), capture_output=True,
                                   text=True, timeout=TIMEOUT)
                rc, out, err = r.returncode, r.stdout, r.stderr
            assert rc == status, (f"{where}: `{line.strip()}` exited {rc}, "
                                  f"expected {status}\n{out[-2000:]}\n{err[-3000:]}")


# --------------------------------------------------------------------------- links
def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(page: pathlib.Path) -> set:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
    return {slug(h) for h in re.findall(r"^#+ (.*)$", text, flags=re.M)}


def prose(page: pathlib.Path) -> str:
    """The page without code blocks and inline code."""
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
    return re.sub(r"`[^`]*`", "", text, flags=re.S)


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_links_resolve(page):
    """Every relative link names an existing file and, with a #fragment, one of its headings."""
    bad = []
    for target in re.findall(r"\]\(([^)\s]+)\)", prose(page)):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, frag = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(target)
        elif frag and dest.suffix == ".md" and frag not in anchors(dest):
            bad.append(target)
    assert not bad, bad


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_paper_citations_link_to_references(page):
    """Every mention of a paper key 000-004 outside code links to its entry in references.md."""
    if page.name == "references.md":
        return
    text = prose(page)
    text = re.sub(r"\[(00[0-4])\]\((?:docs/)?references\.md#\1\)", "", text)
    bare = re.findall(r"(?<![\d,.\w])00[0-4](?![\d\w])", text)
    assert not bare, f"{page.name}: unlinked citations of {sorted(set(bare))}"


def test_readme_links_every_docs_page():
    """'Where to read more' reaches every page under docs/."""
    readme = (ROOT / "README.md").read_text()
    missing = [p.name for p in (ROOT / "docs").glob("*.md") if f"(docs/{p.name})" not in readme]
    assert not missing, missing


def test_references_cover_the_paper_keys():
    """references.md has an entry for each of 000-004."""
    have = anchors(ROOT / "docs" / "references.md")
    assert {f"00{i}" for i in range(5)} <= have


def test_the_default_runs_summary_is_the_one_shown(tmp_path):
    """The summary the README and docs/output.md show for the default run (``pdes run``) is
    the one it prints, but for the peak memory, which depends on the machine."""
    shown = {}
    for page in (ROOT / "README.md", ROOT / "docs" / "output.md"):
        for lang, body in blocks(page.read_text()):
            if not lang and body.startswith("offered load "):
                shown[page.name] = [x for x in body.splitlines() if not x.startswith("peak memory")]
    assert set(shown) == {"README.md", "output.md"}
    r = run_python("-m", "pdes", "run", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    printed = [x for x in r.stdout.splitlines() if not x.startswith("peak memory")]
    for name, lines in shown.items():
        assert lines == printed, name
