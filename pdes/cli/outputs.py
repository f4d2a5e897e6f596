"""Output files of the commands that write them (``run``, ``sweep``, ``topo --export``,
``plot``, ``analyze -o``).

Every output path is checked before any work (docs/output.md, "Output files"):

* :func:`check_name`: the name and its temporary twin (``<name>.tmp-<pid>``, the lock
  ``<name>.lock``) fit the file system's limits on a name and a path;
* :func:`check_not_input`: the output is none of the files the command reads (same
  file by device and inode, or same resolved path);
* :func:`check_replaceable`: an existing file is replaced only if it is what the command
  writes there (a pdes HDF5 file, a figure of the file's format, a design table), or empty;
* :class:`Claim`: one writer at a time.  The writing process (rank 0) creates
  ``<name>.lock`` exclusively and holds it until the file has its final name.  The lock
  records host, process id and the process's start time; a lock whose process is gone
  (same host, no such process, or another process under that id) is stale and taken
  over.  A lock from another host cannot be checked and is respected.
"""
from __future__ import annotations

import json
import os
import socket

from models.core.errors import ParameterError

from pdes.files import TMP_SUFFIX  # ``<name>.tmp-<pid>``: every output is written so
PID_DIGITS = 7
"""Digits of the largest process id (Linux: ``pid_max`` <= 2**22 = 4194304)."""
LOCK_SUFFIX = ".lock"
SUFFIX_BYTES = len(TMP_SUFFIX) + PID_DIGITS
"""Bytes the longest name derived from an output's name adds to it (``.tmp-<pid>``; the
lock's ``.lock`` and the take-over names ``.l-<pid>``, ``.s-<pid>`` are shorter)."""
NAME_MAX_FALLBACK = 255
PATH_MAX_FALLBACK = 4096


def fs_limits(directory: str) -> tuple[int, int]:
    """(bytes per name, bytes per path including the final NUL) of the file system holding
    ``directory`` (``pathconf``; 255 and 4096 where it does not say)."""
    def conf(name, fallback):
        try:
            value = os.pathconf(directory, name)
        except (OSError, ValueError):
            return fallback
        return value if value is not None and value > 0 else fallback
    return conf("PC_NAME_MAX", NAME_MAX_FALLBACK), conf("PC_PATH_MAX", PATH_MAX_FALLBACK)


def check_name(path: str, key: str) -> None:
    """Refuse an output path whose name, or path, is too long for its file system once the
    temporary suffix ``.tmp-<pid>`` is added (the final rename would come after the work)."""
    directory = os.path.dirname(os.path.abspath(path))
    name_max, path_max = fs_limits(directory)
    name = len(os.fsencode(os.path.basename(path)))
    if name + SUFFIX_BYTES > name_max:
        raise ParameterError(
            f"{key}: the file name of {path} is {name} bytes; with the suffix of its temporary "
            f"file ({TMP_SUFFIX}<pid>, up to {SUFFIX_BYTES} bytes) it exceeds the file system's "
            f"limit of {name_max} bytes per name: give a name of at most "
            f"{name_max - SUFFIX_BYTES} bytes")
    full = max(len(os.fsencode(path)), len(os.fsencode(os.path.abspath(path))))
    if full + SUFFIX_BYTES >= path_max:
        raise ParameterError(
            f"{key}: the path {path} is {full} bytes; with the suffix of its temporary file "
            f"it reaches the file system's limit of {path_max} bytes per path: give a shorter path")


def same_file(a: str, b: str) -> bool:
    """Whether paths ``a`` and ``b`` name the same file: same device and inode when both
    exist, else the same resolved path."""
    try:
        if os.path.samefile(a, b):
            return True
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


def check_not_input(path: str, key: str, inputs: dict[str, str]) -> None:
    """Refuse an output path that is one of ``inputs`` (``{what: path}``, the files the
    command reads)."""
    for what, inp in inputs.items():
        if inp and same_file(path, inp):
            raise ParameterError(f"{key}: {path} is an input of this command ({what}: {inp}); "
                                 "an output never replaces an input: give another file name")


# what the head of a file of each kind starts with (the figures: the formats plot writes)
MAGIC = {"png": (b"\x89PNG\r\n\x1a\n",), "pdf": (b"%PDF-",), "svg": (b"<?xml", b"<svg")}
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
KIND_TEXT = {"hdf5": "an HDF5 file written by pdes", "png": "a PNG image", "pdf": "a PDF file",
             "svg": "an SVG image", "csv": "a design table written by pdes design"}


def _is_kind(path: str, kind: str, head: bytes) -> bool:
    if kind == "hdf5":
        if not head.startswith(HDF5_MAGIC):
            return False
        import h5py
        try:
            with h5py.File(path, "r", locking=False) as f:
                return "pdes_version" in f.attrs
        except (OSError, ValueError, KeyError, RuntimeError):
            return False
    if kind == "csv":
        from models.design import COLUMNS
        return head.split(b"\n", 1)[0].rstrip(b"\r") == ",".join(COLUMNS).encode()
    return head.lstrip().startswith(MAGIC[kind])


def check_replaceable(path: str, key: str, kind: str) -> None:
    """Refuse to replace an existing file that is not what the command writes there:
    ``kind`` is ``hdf5`` (a file with pdes's ``pdes_version`` attribute: results,
    checkpoints, analyses, design tables, studies), ``png``/``pdf``/``svg`` (a figure of
    that format) or ``csv`` (a ``pdes design`` table).  An empty file may be replaced.
    A typo in ``-o`` then never overwrites a file pdes did not make."""
    try:
        if os.path.getsize(path) == 0:
            return
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except FileNotFoundError:
        return
    except OSError as e:
        raise ParameterError(f"{key}: {path} exists and cannot be read ({e.strerror})") from None
    if not _is_kind(path, kind, head):
        raise ParameterError(f"{key}: {path} exists and is not {KIND_TEXT[kind]}; pdes replaces "
                             "only such a file: remove it or give another name")


# --------------------------------------------------------------------------- the lock
def _start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot, Linux), None where unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            text = fh.read().decode(errors="replace")
        return text.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _alive(pid: int, started) -> bool:
    """Whether the process ``pid`` of this host that started at ``started`` still runs."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:         # another user's process: it exists
        pass
    now = _start_time(pid)
    return started is None or now is None or now == started


def _holder() -> dict:
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "started": _start_time(pid)}


def _read(lock: str) -> dict | None:
    """The holder recorded in ``lock``: a dict, ``{}`` when unreadable, None when gone."""
    try:
        with open(lock, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return None
    except OSError:
        return {}
    try:
        out = json.loads(text)
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


def _stale(holder: dict) -> bool:
    """A lock of this host whose process no longer runs."""
    return holder.get("host") == socket.gethostname() and \
        not _alive(holder.get("pid"), holder.get("started"))


def _who(holder: dict) -> str:
    if not holder:
        return "unreadable"
    return f"process {holder.get('pid')} on {holder.get('host')}"


class Claim:
    """Output paths claimed by this process through ``<path>.lock`` (see the module doc).

    :meth:`take` claims a path or raises :class:`ParameterError`; :meth:`release` removes
    this process's locks (also usable as a context manager).
    """

    def __init__(self):
        self.locks: list[str] = []
        self.me = _holder()

    def take(self, path: str, key: str) -> None:
        lock = path + LOCK_SUFFIX
        for _ in range(5):
            try:
                created = self._create(lock)
            except OSError as exc:
                raise ParameterError(f"{key}: cannot create the lock {lock} "
                                     f"({exc.strerror or exc})") from None
            if created:
                self.locks.append(lock)
                return
            holder = _read(lock)
            if holder is None:          # released meanwhile: try again
                continue
            if holder and _stale(holder):
                self._take_over(lock, holder)
                continue
            break
        else:
            holder = _read(lock) or {}
        raise ParameterError(
            f"{key}: {path} is being written by another pdes run (lock {lock}, "
            f"{_who(holder)}); if no pdes run writes it any more, remove the lock")

    def _create(self, lock: str) -> bool:
        """Create ``lock`` holding this process's record, atomically; False if it exists."""
        text = json.dumps(self.me, sort_keys=True) + "\n"
        tmp = f"{lock[:-len(LOCK_SUFFIX)]}.l-{os.getpid()}"
        try:
            os.remove(tmp)              # a leftover of an earlier process with this id
        except FileNotFoundError:
            pass
        try:
            with open(tmp, "x", encoding="utf-8") as fh:
                fh.write(text)
            try:
                os.link(tmp, lock)      # atomic, also on NFS: the lock appears with its record
                return True
            except FileExistsError:
                return False
            except OSError:             # a file system without hard links
                pass
        finally:
            try:
                os.remove(tmp)
            except FileNotFoundError:
                pass
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        return True

    @staticmethod
    def _take_over(lock: str, holder: dict) -> None:
        """Remove the stale ``lock`` of ``holder``: renamed aside first, and put back if what
        was renamed is not that lock (another process took it over meanwhile).  The dead
        holder's temporary file (``<path>.tmp-<pid>``, a write it did not finish) goes too:
        no one else writes under that name while the lock is held."""
        path = lock[:-len(LOCK_SUFFIX)]
        aside = f"{path}.s-{os.getpid()}"
        try:
            os.rename(lock, aside)
        except FileNotFoundError:
            return
        if _read(aside) != holder:
            try:
                os.link(aside, lock)
            except OSError:
                pass
        elif isinstance(holder.get("pid"), int):
            try:
                os.remove(f"{path}{TMP_SUFFIX}{holder['pid']}")
            except FileNotFoundError:
                pass
        os.remove(aside)

    def release(self) -> None:
        """Remove the locks this process holds.  A lock that cannot be removed (its file
        system turned read-only, say) stays, for the next writer to take over: the error that
        ended the command is the one to report, not this one."""
        for lock in self.locks:
            if _read(lock) == self.me:
                try:
                    os.remove(lock)
                except OSError:
                    pass
        self.locks = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
        return False


def claim(comm, paths: list[tuple[str, str]], then=None) -> Claim:
    """Claim ``paths`` (``[(path, key)]``) on rank 0 of ``comm`` (None: this process), then
    call ``then()`` there with the locks held (e.g. to refuse an existing file); a refusal
    raises the same :class:`ParameterError` on every rank and leaves no lock behind."""
    rank = 0 if comm is None else comm.Get_rank()
    c = Claim()
    err = None
    if rank == 0:
        try:
            for path, key in paths:
                if path:
                    c.take(path, key)
            if then is not None:
                then()
        except ParameterError as exc:
            c.release()
            err = str(exc)
        except BaseException:
            c.release()
            raise
    if comm is not None and comm.Get_size() > 1:
        err = comm.bcast(err, root=0)
    if err:
        raise ParameterError(err)
    return c
