"""Process -> endpoint placement for patterns defined over application ranks.

A pattern such as bit reversal is written for processes ``0..n-1``; the
placement decides which endpoint runs each process.  ``place`` returns an
``(n,) int32`` array ``ep`` with ``ep[i]`` = endpoint of process ``i``; the
endpoints not listed stay idle (a partial-machine job).

* ``linear`` -- process ``i`` on endpoint ``i`` (contiguous in endpoint
  order, i.e. router by router; the default of 001 Sec. 4 and 003).
* ``random`` -- the first ``n`` entries of a seeded random permutation of
  all endpoints (003 Sec. 7.3 compares linear and random placement).
* ``file``   -- the endpoint of process ``i`` is the ``i``-th integer of a
  text file (one per line; blank lines and ``#`` comments are skipped).
  The file must list distinct endpoint ids ``0..E-1``; only its first ``n``
  entries are used.

Everything is a pure function of (topology, n, how, seed, file contents).
"""
from __future__ import annotations

import numpy as np

from models.core.errors import ParameterError

PLACEMENTS = ("linear", "random", "file")

_RANDOM_TAG = 0x9A1C
"""Second word of the placement RNG key, so placement draws never coincide
with other seeded draws of the same run."""


def placement_files(value: str, section: dict) -> dict:
    """The files a traffic section with ``placement_file = value`` reads (``Param.files``): the
    placement file when ``placement = "file"``, else none."""
    return {"": value} if value and section.get("placement") == "file" else {}


def read_placement_file(path: str, n_endpoints: int, key: str = "traffic.placement_file") -> np.ndarray:
    """Endpoint ids listed in ``path`` (int64), checked against ``0..n_endpoints-1``."""
    if not path:
        raise ParameterError(f"{key}: placement 'file' needs a file name")
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        raise ParameterError(f"{key}: cannot read '{path}' ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ParameterError(f"{key}: {path} is not UTF-8 text (one endpoint id per line)") from None
    ids = []
    for lineno, raw in enumerate(lines, 1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        try:
            v = int(text)
        except ValueError:
            raise ParameterError(f"{key}: {path}:{lineno}: expected one endpoint id, got {text!r}") from None
        if not 0 <= v < n_endpoints:
            raise ParameterError(f"{key}: {path}: endpoint {v} (entry {len(ids)}) is outside "
                                 f"0..{n_endpoints - 1}")
        ids.append(v)
    if not ids:
        raise ParameterError(f"{key}: {path} lists no endpoint")
    arr = np.asarray(ids, dtype=np.int64)
    uniq, first, counts = np.unique(arr, return_index=True, return_counts=True)
    if np.any(counts > 1):
        j = int(np.argmax(counts > 1))
        raise ParameterError(f"{key}: {path}: endpoint {int(uniq[j])} is listed more than once")
    return arr


def place(topo, n_procs: int | None = None, how: str = "linear", seed: int = 0,
          path: str | None = None, key: str = "traffic.placement",
          active_only: bool = False) -> np.ndarray:
    """Endpoint of each of ``n_procs`` processes, as an ``(n_procs,) int32`` array.

    Parameters
    ----------
    topo : Topology
        The network; its endpoints are ``0..E-1``.
    n_procs : int, optional
        Number of processes, ``1 <= n_procs <= E`` (or the file length for
        ``file``).  Default: every endpoint (every file entry).
    how : str
        ``linear``, ``random`` or ``file``.
    seed : int
        Seed of the ``random`` placement.
    path : str, optional
        Placement file for ``file``.
    key : str
        Config key named in error messages.
    active_only : bool
        On a network with failed routers (:mod:`models.faults`), place ``linear`` and
        ``random`` processes on the active endpoints only (a schedule's processes cannot run
        on a failed or cut-off router): the first ``n`` active endpoints, or the active ones
        in the order of the same permutation; by default, every active endpoint.  The same
        endpoints as without it whenever those are all active; a ``file`` placement is kept
        as listed.

    Raises
    ------
    ParameterError
        Unknown ``how``, ``n_procs`` outside ``1..E``, and for ``file`` an
        unreadable file, a non-integer line, an id outside ``0..E-1``, a
        duplicate id, or fewer entries than ``n_procs``.
    """
    E = topo.n_endpoints
    if how not in PLACEMENTS:
        raise ParameterError(f"{key}: unknown placement '{how}' (known: {', '.join(PLACEMENTS)})")
    listed = read_placement_file(path, E, key=f"{key}_file") if how == "file" else None
    ok = None
    if active_only and listed is None and topo.is_degraded:
        ok = topo.endpoint_up
    avail = (E if ok is None else int(ok.sum())) if listed is None else listed.size
    n = avail if n_procs is None else int(n_procs)
    if n < 1:
        raise ParameterError(f"{key}: needs at least one process, got {n}")
    if n > avail:
        where = f"the network has {E} endpoints" if listed is None else \
            f"the placement file lists {avail} endpoints"
        if ok is not None:
            where += f", {avail} of them active (faults)"
        raise ParameterError(f"{key}: {n} processes do not fit: {where}")
    if how == "linear":
        order = np.arange(E)
    elif how == "random":
        rng = np.random.default_rng([int(seed) & 0xFFFFFFFFFFFFFFFF, _RANDOM_TAG])
        order = rng.permutation(E)
    else:
        return listed[:n].astype(np.int32)
    if ok is not None:
        order = order[ok[order]]
    return order[:n].astype(np.int32)
