"""``pdes cache``: the compiled-code cache's base, this version's and the other versions'
sizes; ``--prune`` deletes the other versions' directories and nothing else."""
import json
import os

from models.core.jit import source_digest
from pdes import compiling
from tests.helpers import ROOT, run_pdes

OTHER = "numba-0123456789abcdef"


def _fill(base):
    """A cache base with this version's directory, another version's, and look-alikes that
    are not version directories: (this version's bytes, the other's bytes)."""
    mine = base / ("numba-" + source_digest(ROOT))
    (mine / "kernels").mkdir(parents=True)
    (mine / "kernels" / "a.nbc").write_bytes(b"x" * 1000)
    other = base / OTHER
    (other / "kernels").mkdir(parents=True)
    (other / "kernels" / "b.nbc").write_bytes(b"y" * 3000)
    (other / "c.nbi").write_bytes(b"z" * 500)
    (base / "numba-notaversion").mkdir()                   # not 16 hex digits
    (base / "numba-fedcba9876543210").write_text("a file")   # not a directory
    outside = base.parent / "outside"
    (outside / "keep").mkdir(parents=True)
    (outside / "keep" / "data").write_text("keep me")
    os.symlink(outside, base / "numba-00000000000000ff")   # a link, never followed
    os.symlink(outside / "keep" / "data", other / "link")  # a link inside: not counted
    return 1000, 3500


def _cache(tmp_path, *args):
    r = run_pdes("cache", *args, cwd=tmp_path,
                 env={"PDES_CACHE_DIR": str(tmp_path / "base"), "NUMBA_CACHE_DIR": ""})
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_cache_lists_this_and_other_versions(tmp_path):
    mine, other = _fill(tmp_path / "base")
    data = json.loads(_cache(tmp_path, "--json"))
    assert data["base"] == str(tmp_path / "base") and data["set_by"] == "PDES_CACHE_DIR"
    assert os.path.basename(data["current"]) == "numba-" + source_digest(ROOT)
    assert data["current_bytes"] == mine
    assert data["others"] == [{"path": str(tmp_path / "base" / OTHER), "bytes": other}]
    assert data["deleted"] == []
    text = _cache(tmp_path)
    assert f"compiled-code cache: {tmp_path / 'base'} ($PDES_CACHE_DIR)" in text
    assert "other versions: 1, 4 kB ('python -m pdes cache --prune' deletes them)" in text


def test_prune_deletes_only_other_versions(tmp_path):
    base = tmp_path / "base"
    mine, other = _fill(base)
    text = _cache(tmp_path, "--prune")
    assert "deleted the kernels of 1 other version(s): 4 kB" in text
    assert "other versions: none" not in text
    left = sorted(os.listdir(base))
    assert left == sorted(["numba-" + source_digest(ROOT), "numba-notaversion",
                           "numba-fedcba9876543210", "numba-00000000000000ff"])
    assert (tmp_path / "outside" / "keep" / "data").read_text() == "keep me"
    data = json.loads(_cache(tmp_path, "--prune", "--json"))
    assert data["current_bytes"] == mine and data["others"] == [] and data["deleted"] == []
    assert "other versions: none" in _cache(tmp_path)


def test_empty_or_missing_base(tmp_path):
    text = _cache(tmp_path)      # the base does not exist: nothing created, nothing listed
    assert "empty (nothing compiled yet)" in text and "other versions: none" in text
    assert not (tmp_path / "base").exists()


def test_prune_refusal_is_one_line(tmp_path, monkeypatch, capsys):
    """A directory that cannot be deleted (permissions; here a stand-in that refuses, as the
    tests may run as root) is one error line and status 2."""
    from pdes.cli import main
    base = tmp_path / "base"
    _fill(base)
    monkeypatch.setenv("PDES_CACHE_DIR", str(base))

    def refuse(path, **kw):
        raise PermissionError(13, "Permission denied", os.path.join(path, "kernels"))
    monkeypatch.setattr(compiling.shutil, "rmtree", refuse)
    assert main(["cache", "--prune"]) == 2
    out, err = capsys.readouterr()
    assert err == (f"pdes: error: --prune: cannot delete {base / OTHER / 'kernels'} "
                   "(Permission denied)\n") and out == ""
    assert (base / OTHER / "c.nbi").exists()


def test_compile_notice_names_other_versions(tmp_path, monkeypatch):
    """A run about to compile says how much the other versions' kernels take, and how to
    delete them; without other versions it says only that it compiles."""
    monkeypatch.setenv("PDES_CACHE_DIR", str(tmp_path / "base"))
    monkeypatch.setattr(compiling, "kernels_cached", lambda kernels=None, booksim=False: False)
    said = []
    compiling.compile_notice(said.append)
    assert len(said) == 1 and said[0].startswith("compiling simulation kernels once")
    _fill(tmp_path / "base")
    said.clear()
    compiling.compile_notice(said.append)
    assert said[1] == (f"the kernels of 1 other pdes version(s) take 4 kB in {tmp_path / 'base'}; "
                       "'python -m pdes cache --prune' deletes them")
