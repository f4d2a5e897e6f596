"""Compiling the simulation kernels, or loading them from Numba's on-disk cache: whether
they are cached already, the notice that a run will compile them first, one compiler per
node, the line that says which it did, and the check of ``$PDES_CACHE_DIR``.

One compiler per node: with several ranks on a node and an empty cache, every rank would
compile the same kernels at once (each a minute or more of CPU).  :func:`compile_parts`
lets the node's rank 0 compile (or load) first while the node's other ranks wait, polling
without spinning; then they load what it wrote to the cache.  An exception on the
compiling rank is raised on every rank of its node, so none waits forever.  Numba loads a
compiled function only when its cache index matches the source file and the CPU, so a
rank that cannot use the entry (another CPU, a cache that is not shared) compiles it
itself; the report says how many ranks compiled.
"""
from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import stat
import sys
import time
from collections import namedtuple

from models.core.errors import ParameterError

COMPILE_SECONDS = "30-90"
"""What a first compile of the simulation kernels takes on a current core (cold cache): on a
shared 2-core AMD EPYC (Zen 4) 23-27 s for one routing (the default run, ``ugal_l``,
BookSim's allocation; the compile alone), and 34 s for a whole sweep of ``min``, ``valiant``,
``ugal_l`` and ``ugal_g`` at one short load, on a fast day; the same machine has run two to
three times slower."""

POLL_S = 0.05
"""The most seconds between two looks of a waiting rank at whether its node's compiler is
done."""

POLL_FIRST_S = 0.001
"""Seconds before a waiting rank's first look; each wait then doubles up to :data:`POLL_S`.
A sweep calls :func:`compile_parts` for every point, with its kernels loaded already, when
rank 0's work takes a millisecond or two: a first look after 50 ms cost every point of a
2-rank sweep of SF q=5 about 100 ms against 91 ms in the kernel."""


def kernels_cached(kernels=None, booksim: bool = False) -> bool:
    """Whether the compiled cycle kernels of this source version for the given routing
    kernels (``models.core.routing.RoutingKernel``; None: any) are in the on-disk cache
    (``booksim``: their window loop with BookSim's allocation)."""
    from models.core.jit import cache_dir      # (here: the command line starts without Numba)
    from pdes.kernels import generate
    if kernels is not None:
        return all(generate.compiled(k, booksim) for k in kernels)
    return bool(glob.glob(os.path.join(cache_dir(), "**", "*.advance*-*.nbi"), recursive=True))


def compile_notice(say, kernels=None, ranks: int = 1, booksim: bool = False) -> None:
    """Say that the kernels will be compiled first, when they are not cached (and how much
    the kernels of other pdes versions take in the cache, if any)."""
    if say is not None and not kernels_cached(kernels, booksim):
        say(f"compiling simulation kernels once for this version, about {COMPILE_SECONDS} s"
            + (" (one rank per node compiles, the node's other ranks then load them)"
               if ranks > 1 else ""))
        others = [v for v in cache_versions() if not v.current]
        if others:
            say(f"the kernels of {len(others)} other pdes version(s) take "
                f"{size_text(sum(v.bytes for v in others))} in "
                f"{os.path.dirname(others[0].path)}; "
                "'python -m pdes cache --prune' deletes them")


VERSION_DIR = re.compile(r"numba-[0-9a-f]{16}")
"""The name of one source version's directory in the cache base (``models.core.jit``)."""


CacheVersion = namedtuple("CacheVersion", ["path", "bytes", "current"])
CacheVersion.__doc__ = ("One source version's directory in the cache: its path, its bytes, "
                        "whether it is this version's")


def tree_bytes(path: str) -> int:
    """Bytes of the regular files under ``path`` (symbolic links neither followed nor counted;
    files that vanish meanwhile are skipped)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                st = os.lstat(os.path.join(root, f))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total


def size_text(n: int) -> str:
    """``n`` bytes for a person: kB below a megabyte, else MB or GB (decimal)."""
    if n < 1_000_000:
        return f"{n / 1e3:.0f} kB"
    return f"{n / 1e6:.0f} MB" if n < 1_000_000_000 else f"{n / 1e9:.1f} GB"


def cache_versions() -> list[CacheVersion]:
    """The source versions' directories in the cache base (``numba-<digest>``, real
    directories only, not links), sorted by name, this version's marked ``current``."""
    from models.core.jit import cache_base, cache_dir
    base = cache_base()[0]
    current = os.path.basename(cache_dir())
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    out = []
    for name in names:
        path = os.path.join(base, name)
        if VERSION_DIR.fullmatch(name) and os.path.isdir(path) and not os.path.islink(path):
            out.append(CacheVersion(path, tree_bytes(path), name == current))
    return out


def prune_cache() -> list[CacheVersion]:
    """Delete the directories of every other source version from the cache base (what
    :func:`cache_versions` lists, this version's kept); returns those deleted.  A
    directory another process deletes meanwhile is skipped."""
    def missing_ok(_func, _path, exc):
        if not isinstance(exc, FileNotFoundError):
            raise exc

    gone = []
    for v in cache_versions():
        if v.current:
            continue
        if sys.version_info >= (3, 12):
            shutil.rmtree(v.path, onexc=missing_ok)
        else:
            shutil.rmtree(v.path, onerror=lambda f, p, info: missing_ok(f, p, info[1]))
        gone.append(v)
    return gone


def check_cache_dir(comm=None) -> None:
    """Refuse an unwritable ``$PDES_CACHE_DIR`` on every rank of ``comm`` (collective).

    The directory is created if missing.  ``$PDES_CACHE_DIR`` is set to share the compiled
    kernels (a shared file system, one compile for the whole job), so it is an error when it
    cannot be used; the default location and ``$NUMBA_CACHE_DIR`` fall back to Numba's own
    places instead (:mod:`models.core.jit`).
    """
    from models.core.jit import CACHE_ENV
    d = os.environ.get(CACHE_ENV[0])
    problem = None
    if d:
        try:
            os.makedirs(d, exist_ok=True)
            if not os.access(d, os.W_OK | os.X_OK):
                problem = f"{d} is not writable"
        except OSError as exc:
            problem = f"cannot create {d} ({exc.strerror or exc})"
    if comm is not None and comm.Get_size() > 1:
        found = [p for p in comm.allgather(problem) if p]
        problem = problem or (found[0] if found else None)
    if problem:
        raise ParameterError(f"{CACHE_ENV[0]}: {problem}; set it to a writable directory "
                             "(or unset it for the default cache)")


def _advances(parts) -> list:
    """The distinct window-loop dispatchers the parts run (``advance`` or ``advance_iq``)."""
    seen = {}
    for p in parts:
        seen.setdefault(id(p.kernel_advance), p.kernel_advance)
    return list(seen.values())


def _counts(disps) -> tuple[int, int]:
    """(loads from the cache, compilations) of the dispatchers so far."""
    return (sum(sum(d.stats.cache_hits.values()) for d in disps),
            sum(sum(d.stats.cache_misses.values()) for d in disps))


def _first_on_node(node, work) -> None:
    """``work()`` on the node's rank 0, then on the node's other ranks (collective over
    ``node``; ``None`` or one rank: just ``work()``).  The others poll for the end without
    spinning on a core (after 1 ms, then at doubling intervals up to 50 ms); an exception of
    rank 0's ``work`` is raised on every rank of the node (on the others as a
    ``RuntimeError`` that quotes it)."""
    if node is None or node.Get_size() == 1:
        work()
        return
    import numpy as np
    failed = np.zeros(1, np.int32)
    err = None
    if node.Get_rank() == 0:
        try:
            work()
        except Exception as exc:       # noqa: BLE001 - re-raised below, after telling the node
            err = exc
            failed[0] = 1
        node.Ibcast(failed, root=0).Wait()
    else:
        req = node.Ibcast(failed, root=0)
        wait = POLL_FIRST_S
        while not req.Test():
            time.sleep(wait)
            wait = min(2 * wait, POLL_S)
    if failed[0]:
        text = node.bcast(None if err is None else f"{type(err).__name__}: {err}", root=0)
        if err is not None:
            raise err
        raise RuntimeError(f"compiling the kernels failed on this node's first rank: {text}")
    if node.Get_rank() != 0:
        work()


@contextlib.contextmanager
def compile_lock(disp):
    """While compiling a routing kernel's window loop ``disp`` (the dispatcher of its router
    stage module's ``advance`` or ``advance_iq``, and the stages it calls): hold an
    exclusive lock on its lock file in the cache
    directory, so that processes that start together with an empty cache (independent runs
    on one node, test workers) compile it once; the others wait, then load what the first
    wrote.  Yields the seconds this process waited.  Nothing is locked when the kernel is in
    this process already or in the on-disk cache, or where the cache directory or file
    locks cannot be used (then each process compiles for itself, as before)."""
    from models.core.jit import cache_dir
    from pdes.kernels.generate import cached
    module, function = disp.py_func.__module__, disp.py_func.__name__
    if getattr(disp, "overloads", None) or cached(module, function):
        yield 0.0
        return
    try:
        import fcntl
        d = os.path.join(cache_dir(), "locks")
        os.makedirs(d, exist_ok=True)
        fd = os.open(os.path.join(d, f"{module.rsplit('.', 1)[-1]}.{function}.lock"),
                     os.O_RDWR | os.O_CREAT, 0o644)
    except (ImportError, OSError):
        yield 0.0
        return
    t = time.perf_counter()
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:        # a file system without locks: compile unlocked
            pass
        yield time.perf_counter() - t
    finally:
        os.close(fd)           # releases the lock


_DONE_ON_NODE: set = set()
"""The window loops (dispatcher identities, with the exchange kernels or not) that every
rank of this process's node has compiled or loaded already, in a :func:`compile_parts` call
that ended: a sweep's later points with the same routing."""


def _indexed(disps) -> bool:
    """Whether each dispatcher's function has an index in the on-disk cache: the ranks of a
    node then load at once instead of one after another (a signature the index lacks, as on
    another CPU, is compiled by each rank that needs it)."""
    try:
        return all(os.path.exists(d._cache._cache_file._index_path) for d in disps)
    except AttributeError:     # pragma: no cover - depends on the Numba version
        return False


def compile_parts(parts, comm=None, node=None, exchange: bool = False) -> dict:
    """Compile the cycle kernels of ``parts`` (their router stage's ``advance`` and the stages
    it calls), or load them from the cache, without running a cycle: what the first window
    would do.  ``exchange``: also the kernels that pack and unpack the blocks neighbour
    ranks exchange (:func:`pdes.comm.compile_exchange`).

    Collective over ``comm`` (the run's ranks; ``None``: this process only); ``node`` (the
    ranks of ``comm`` on this node, ``COMM_TYPE_SHARED``): its rank 0 goes first, the
    others load after it, unless every rank of the node holds the kernels in memory or
    finds them in the on-disk cache (then all load at once).  Returns this rank's and the
    job's counts (:func:`describe`).
    """
    from models.core.jit import cache_dir
    disps = _advances(parts)
    before = _counts(disps)
    t = time.perf_counter()

    waited = [0.0]

    def work():
        for p in parts:
            with compile_lock(p.kernel_advance) as w:
                waited[0] += w
                p.advance(0, 0)
            if exchange:
                from pdes.comm import compile_exchange
                compile_exchange(p)
    key = (tuple(sorted(id(d) for d in disps)), exchange)
    ready = False
    if node is not None and node.Get_size() > 1:      # collective: every rank of the node asks
        from mpi4py import MPI
        if key in _DONE_ON_NODE:
            mine = 1
        else:
            from pdes.kernels import exchange as X
            mine = int(_indexed(disps + ([X.pack_block, X.unpack_block] if exchange else [])))
        ready = node.allreduce(mine, op=MPI.MIN) == 1
    if ready:
        work()         # in memory or in the cache on every rank of the node: all load at once
    else:
        _first_on_node(node, work)
    _DONE_ON_NODE.add(key)
    seconds = time.perf_counter() - t
    hits, misses = (a - b for a, b in zip(_counts(disps), before))
    mine = [1 if misses else 0, 1 if hits and not misses else 0,
            0 if hits or misses else 1, 1 if node is None or node.Get_rank() == 0 else 0]
    ranks = 1
    most = seconds
    if comm is not None and comm.Get_size() > 1:
        import numpy as np
        from mpi4py import MPI
        total = np.array(mine, np.int64)
        comm.Allreduce(MPI.IN_PLACE, total, op=MPI.SUM)
        mine = [int(x) for x in total]
        most = comm.allreduce(seconds, op=MPI.MAX)
        ranks = comm.Get_size()
    paths = sorted({d.stats.cache_path for d in disps})
    base = cache_dir()
    where = [p for p in paths if not p.startswith(base)]
    return {"compiled": mine[0], "loaded": mine[1], "in_memory": mine[2], "nodes": mine[3],
            "ranks": ranks, "seconds": most, "compiled_here": bool(misses),
            "waited_s": waited[0],
            "cache": where[0] if where else base, "fallback": bool(where),
            "kernels": sorted({d.py_func.__module__ for d in disps})}


def describe(info: dict) -> str:
    """One line: whether the kernels were compiled or loaded from the cache, where, and by how
    many ranks (``info`` of :func:`compile_parts`)."""
    n, c, ld, nodes = info["ranks"], info["compiled"], info["loaded"], info["nodes"]
    cache = info["cache"] + (" (Numba's fallback: the configured cache is not writable)"
                             if info["fallback"] else "")
    if c == 0 and ld == 0:
        return "kernels: already loaded in this process"
    if c == 0:
        waited = info.get("waited_s", 0.0)
        return f"kernels: loaded from the cache {cache}" + (
            f" on every rank ({n})" if n > 1 and ld == n else
            f" on {ld} of {n} ranks (the others had them loaded)" if n > 1 else "") + (
            f", after waiting {waited:.1f} s for another process that compiled them"
            if waited >= 1.0 else "")
    text = f"kernels: compiled in {info['seconds']:.1f} s"
    if n == 1:
        return f"{text}, cached in {cache}"
    if c == nodes:
        who = (f"on one rank per node ({nodes} node{'s' if nodes > 1 else ''}), loaded from the "
               f"cache by the other {ld} rank{'s' if ld != 1 else ''}")
    else:
        who = f"on {c} of {n} ranks ({nodes} node{'s' if nodes > 1 else ''}), loaded by {ld}"
    return f"{text} {who}; cache {cache}"
