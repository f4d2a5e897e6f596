"""Provenance of a run's inputs: the files its config names, by content digest.

A config names input files through the parameters declared with ``files``
(:class:`models.core.registry.Param`): ``topology.path`` of topology ``file``
(with the ``.groups`` side file of an anynet file) and ``traffic.placement_file``
under ``placement = "file"``; a BookSim config's ``network_file`` becomes
``topology.path``.  :func:`input_files` lists them for a resolved config,
:func:`record` digests their contents (SHA-256).  The command line stores the
record in result files, checkpoints and study files (root attribute
:data:`ATTR`) and compares it on ``run --restart`` and ``sweep --resume``
(:func:`changes`, :func:`refuse`): the config's keys are compared elsewhere, and
equal keys can name a file whose content changed.
"""
from __future__ import annotations

import hashlib
import json
import os

from models.core.errors import ParameterError

ATTR = "input_files"
"""Root attribute: JSON list of ``{"key", "path", "sha256"}``, one per input file."""
CHANGED_ATTR = "changed_inputs"
"""Root attribute, written when ``--allow-changed-inputs`` was given or an earlier restart
accepted a change: JSON list of ``{"key", "path", "was", "now", "at"}``, every change accepted."""
ALLOW_HINT = "give --allow-changed-inputs to continue anyway"


def input_files(cfg: dict) -> dict[str, str]:
    """``{label: path}`` of every file a run of the resolved ``cfg`` reads, in config order.

    The label is the config key (``topology.path``), followed by the file's role for a
    file the key implies (``topology.path (groups file)``).  Paths are as given (relative
    ones are relative to the working directory).
    """
    from pdes import config as C
    out = {}
    for section in C.SECTION_ORDER:
        if section not in cfg:
            continue
        for p in C.section_params(cfg, section):
            value = cfg[section].get(p.name)
            if not p.files or value is None or value == "":
                continue
            found = {"": value} if p.files is True else p.files(value, cfg[section])
            key = f"{section}.{p.name}"
            for role, path in found.items():
                out[f"{key} ({role})" if role else key] = str(path)
    for i, job in enumerate(cfg.get("jobs") or []):
        params = C.JOB_PARAMS + C._registry("traffic").get(job["pattern"]).params
        for p in params:
            value = job.get(p.name)
            if not p.files or value is None or value == "":
                continue
            found = {"": value} if p.files is True else p.files(value, job)
            for role, path in found.items():
                key = f"jobs.{i}.{p.name}"
                out[f"{key} ({role})" if role else key] = str(path)
    from pdes.files import check_regular
    for key, path in out.items():     # every rank reads them: no pipe or device
        check_regular(path, key.split(" ")[0])
    return out


def digest(path: str) -> str | None:
    """SHA-256 (hex) of the content of the regular file ``path``; None when there is no such
    file or it cannot be read."""
    if not os.path.isfile(path):
        return None
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def record(files: dict[str, str], cache: dict | None = None) -> list[dict]:
    """``[{"key", "path", "sha256"}]`` of ``{label: path}`` (paths made absolute; ``sha256``
    None for a file that cannot be read).  ``cache`` (absolute path -> digest) is shared by
    the calls of a study, so that each file is read once."""
    cache = {} if cache is None else cache
    out = []
    for key, path in files.items():
        full = os.path.abspath(path)
        if full not in cache:
            cache[full] = digest(full)
        out.append({"key": key, "path": full, "sha256": cache[full]})
    return out


def shared_record(files: dict[str, str], comm=None) -> list[dict]:
    """:func:`record` read by rank 0 of ``comm`` and given to every rank."""
    rec = record(files) if comm is None or comm.Get_rank() == 0 else None
    return rec if comm is None or comm.Get_size() == 1 else comm.bcast(rec, root=0)


def stored(attrs, what: str) -> list | None:
    """The record in an HDF5 object's attributes (None when it holds none)."""
    text = attrs.get(ATTR)
    if text is None:
        return None
    try:
        rec = json.loads(text)
        if not isinstance(rec, list):
            raise ValueError("not a list")
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"{what}: attribute {ATTR} is damaged ({exc})") from None
    return rec


def accepted(attrs) -> list:
    """The changes an earlier restart accepted (attribute :data:`CHANGED_ATTR`), or []."""
    try:
        out = json.loads(attrs.get(CHANGED_ATTR, "[]"))
    except (TypeError, ValueError):
        return []
    return out if isinstance(out, list) else []


def changes(old: list | None, new: list[dict], at: str = "") -> list[dict]:
    """The input files of ``new`` whose content differs from ``old``'s (matched by key; a key
    ``old`` lacks counts as changed, ``was`` None), as ``{"key", "path", "was", "now", "at"}``."""
    before = {e["key"]: e for e in (old or [])}
    now = {e["key"]: e for e in new}
    out = []
    for key in list(now) + [k for k in before if k not in now]:
        was, cur = before.get(key), now.get(key)
        a = None if was is None else was.get("sha256")
        b = None if cur is None else cur.get("sha256")
        if was is None or cur is None or a != b:
            out.append({"key": key, "path": (cur or was)["path"], "was": a, "now": b, "at": at})
    return out


def _short(d) -> str:
    return d[:16] if d else "no file"


def describe(change: dict, since: str) -> str:
    """``<key>: <path> changed since <since> (sha256 <was> != <now>)``."""
    return (f"{change['key']}: {change['path']} changed since {since} "
            f"(sha256 {_short(change['was'])} != {_short(change['now'])})")


def refuse(found: list[dict], where: str, since: str) -> None:
    """Raise ``<where>: <first change>`` (naming how many more) when ``found`` is not empty."""
    if found:
        more = f"; {len(found) - 1} more input file(s) changed" if len(found) > 1 else ""
        raise ParameterError(f"{where}: {describe(found[0], since)}{more}; {ALLOW_HINT}")


def attrs(rec: list[dict], changed: list | None = None) -> dict:
    """The attributes that store a record (and, when not None, the accepted changes)."""
    out = {ATTR: json.dumps(rec, sort_keys=True)}
    if changed is not None:
        out[CHANGED_ATTR] = json.dumps(changed, sort_keys=True)
    return out
