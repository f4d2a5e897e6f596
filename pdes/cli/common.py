"""What the simulating commands (``run``, ``sweep``) share: the MPI wrapper, the stop
request, output paths (the compile notice is :mod:`pdes.compiling`'s)."""
from __future__ import annotations

import os
import signal
import stat
import sys
import time

from models.core.errors import ParameterError


LAUNCH_MARKERS = ("PMI_", "PMIX_", "OMPI_", "HYDI_", "HYDRA_", "MPI_LOCAL", "MPIEXEC_",
                  "MV2_", "I_MPI_", "CRAY_", "PALS_", "ALPS_", "SLURM_", "PBS_", "LSB_", "FLUX_")
"""Prefixes of the environment variables an MPI launcher (MPICH's and Intel MPI's Hydra,
Open MPI, PMIx, MVAPICH, Cray PALS/ALPS) or a batch system (Slurm, PBS, LSF, Flux) sets:
a process that has one may be a rank of several."""


def not_launched() -> bool:
    """Whether this process is certainly a single rank: no launcher or batch system started
    it (none of :data:`LAUNCH_MARKERS`) and ``PDES_MPI`` is not ``1``."""
    if os.environ.get("PDES_MPI") == "1":
        return False
    return not any(k.startswith(LAUNCH_MARKERS) for k in os.environ)


class SingleRank:
    """``COMM_WORLD`` of a process no launcher started (:func:`not_launched`): rank 0 of 1,
    without loading the MPI library (its load and ``MPI_Init`` take 0.06-0.09 s, a tenth of
    a short run).  Anything but the rank and the size loads MPI and is answered by its
    ``COMM_WORLD`` (then a singleton of one rank, as before)."""

    def Get_rank(self) -> int:
        return 0

    def Get_size(self) -> int:
        return 1

    def __getattr__(self, name):
        from mpi4py import MPI
        return getattr(MPI.COMM_WORLD, name)


def world():
    """MPI's ``COMM_WORLD``, or :class:`SingleRank` in a process no launcher started."""
    if not_launched():
        return SingleRank()
    from mpi4py import MPI
    return MPI.COMM_WORLD


def world_if_parallel():
    """COMM_WORLD when running on more than one rank, else None."""
    comm = world()
    return comm if comm.Get_size() > 1 else None


def mpi_library() -> str:
    """The version text of the MPI library this process loaded (``MPI_Get_library_version``)."""
    from mpi4py import MPI
    return MPI.Get_library_version().strip()


def mpi_text(comm, node_rank: int, node_size: int) -> str:
    """One line: the MPI library (its version text's first line), the ranks, and the nodes
    they are on (``COMM_TYPE_SHARED`` groups: this rank's place in its node is ``node_rank``
    of ``node_size``).  Collective over ``comm``."""
    nodes = comm.allreduce(1 if node_rank == 0 else 0)
    lib = " ".join(mpi_library().splitlines()[0].split())
    return (f"MPI: {lib}; {comm.Get_size()} ranks on {nodes} node{'s' if nodes > 1 else ''}"
            f", {node_size} of them on rank 0's node")


ABORT_GRACE_S = 0.3
"""Seconds a rank waits between printing why the job ends and aborting it: under load the
launcher could kill the job before forwarding the message."""

REFUSAL_WAIT_S = 10.0
"""Seconds a rank that refused its input waits for every other rank to refuse it too (a
config error is found on every rank); past it, the refusal was this rank's alone (a file only
its node can read, a directory only its node lacks) and it ends the whole job."""


def _refused_everywhere(agree) -> bool:
    """Whether every rank of ``agree`` (a communicator only refusals use) reaches this call
    within :data:`REFUSAL_WAIT_S`: all ranks refused, so each may return 2."""
    req = agree.Ibarrier()
    deadline = time.monotonic() + REFUSAL_WAIT_S
    while not req.Test():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def mpi_main(body, args) -> int:
    """Run ``body(args, comm)`` on every rank with the project's error rules.

    Config errors are found identically on every rank before any work: rank 0
    prints one ``pdes: error:`` line and every rank returns 2.  One found on some ranks
    only (a file only their node lacks) is printed by such a rank, which ends the whole job
    (``Abort``) with status 2 once the others have not refused within
    :data:`REFUSAL_WAIT_S`.  Any other
    failure ends the whole job (``Abort``) with status 3.
    """
    from pdes import interrupt
    comm = world()
    rank, size = comm.Get_rank(), comm.Get_size()
    # refusals agree on a communicator of their own, so that a rank that refused alone never
    # waits in a collective the others are not in (nor they in one it left)
    agree = comm.Dup() if size > 1 else None
    # after MPI's start: SIGUSR1 (a batch system's warning) ends a command that takes no
    # checkpoint as SIGTERM does, instead of killing it silently or being ignored
    previous = {s: signal.signal(s, _terminated) for s in TERMINATING}
    previous_int = interrupt.install()
    try:
        return body(args, comm)
    except (KeyboardInterrupt, Terminated) as exc:
        # a signal to any one rank ends the whole job (the others may wait on this one)
        signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
        what = "terminated" if isinstance(exc, Terminated) else "interrupted"
        print(f"pdes: {what} ({signal.Signals(signum).name}) on rank {rank}", file=sys.stderr,
              flush=True)
        if size > 1:
            time.sleep(ABORT_GRACE_S)     # let mpiexec forward the message before it kills us
            comm.Abort(128 + signum)
        return 128 + signum
    except ParameterError as exc:
        if size > 1 and not _refused_everywhere(agree):
            # refused on this rank only: the others would wait for it forever
            print(f"pdes: error: {exc}", file=sys.stderr, flush=True)
            time.sleep(ABORT_GRACE_S)
            comm.Abort(2)
        if rank == 0:
            print(f"pdes: error: {exc}", file=sys.stderr, flush=True)
        return 2
    except BrokenPipeError:        # stdout closed by the reader (e.g. piped into head)
        return stdout_closed()
    except Exception as exc:  # noqa: BLE001 - any failure must end the whole job
        print(f"pdes: error (rank {rank}): {type(exc).__name__}: {one_line(exc)}", file=sys.stderr,
              flush=True)
        if size > 1:
            time.sleep(ABORT_GRACE_S)
            comm.Abort(3)
        return 3
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        interrupt.uninstall(previous_int)
        if agree is not None:      # every rank gets here (a rank that refused alone aborted)
            agree.Free()


def one_line(exc) -> str:
    """An exception's text on one line (HDF5's messages span several)."""
    return " ".join(str(exc).split())


def stdout_closed() -> int:
    """Standard output was closed by its reader (``pdes ... | head``): the rest of the output
    goes nowhere, so that the interpreter's last flush at exit does not fail again with a
    traceback; the command ends with status 0, as other tools in a pipe do."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):      # no file descriptor behind sys.stdout
        pass
    return 0


class Terminated(Exception):
    """SIGTERM or SIGUSR1 arrived (a batch system's stop or warning, or a user's kill)."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)


TERMINATING = (signal.SIGTERM, signal.SIGUSR1)
"""The signals that end a command run by :func:`mpi_main` (:class:`Terminated`), unless a
run with a checkpoint file takes them as a request to checkpoint and stop
(:class:`StopRequest`)."""


def _terminated(signum, frame):
    raise Terminated(signum)


class StopRequest:
    """SIGTERM and SIGUSR1 (a batch system's warning before its time limit) as a request to
    checkpoint and stop: the handler only records the signal; the engine reduces it over
    the ranks at the next sample boundary.  Calling the object gives the signal (0 = none)."""

    SIGNALS = TERMINATING

    def __init__(self):
        self.signum = 0
        self._previous = {}

    def __call__(self) -> int:
        return self.signum

    def _handler(self, signum, frame):
        self.signum = signum

    def install(self) -> None:
        for s in self.SIGNALS:
            self._previous[s] = signal.signal(s, self._handler)

    def uninstall(self) -> None:
        for s, previous in self._previous.items():
            signal.signal(s, previous)
        self._previous = {}


def say_fn(comm, quiet: bool):
    """A progress printer on rank 0 (stderr), or None."""
    if quiet or comm.Get_rank() != 0:
        return None
    return lambda s: print(f"[pdes] {s}", file=sys.stderr, flush=True)


def resolve_used(raw: dict, overrides: list, sections: tuple) -> dict:
    """The resolved ``sections`` of a config for a command that uses only those (``topo``,
    ``analyze``), after every section given, and the files it names, were checked as ``pdes
    run`` checks them (a bad value elsewhere is refused, not ignored).  With ``traffic``
    among ``sections`` the ``[[jobs]]`` come too."""
    from pdes import config as C
    from pdes.provenance import input_files
    full = C.resolve(raw, overrides)
    input_files(full)
    return {k: v for k, v in full.items()
            if k in sections or (k == "jobs" and "traffic" in sections)}


def check_output(path: str, key: str, *, replace: bool = True,
                 exists: str = "use --force to replace it") -> None:
    """Refuse output paths that are not (or cannot become) a regular file in a writable directory,
    or whose name (with its temporary suffix) is too long for the file system.

    ``replace=False`` also refuses an existing file (``exists``: what the message suggests).
    """
    from pdes.cli.outputs import check_name
    if not path:
        raise ParameterError(f"{key}: empty path")
    if path.endswith(os.sep) or (os.altsep and path.endswith(os.altsep)):
        raise ParameterError(f"{key}: {path} ends in '{path[-1]}', the name of a directory; "
                             "give the name of a file")
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        if os.path.exists(d):
            raise ParameterError(f"{key}: {d} is not a directory")
        raise ParameterError(f"{key}: directory does not exist: {d}")
    if not os.access(d, os.W_OK | os.X_OK):
        raise ParameterError(f"{key}: directory is not writable: {d}")
    check_name(path, key)
    if os.path.islink(path):
        raise ParameterError(f"{key}: {path} is a symbolic link; give the path of a regular file")
    if os.path.exists(path):
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ParameterError(f"{key}: {path} exists and is not a regular file")
        if not replace:
            raise ParameterError(f"{key}: {path} exists ({exists})")


def same_on_every_rank(comm, key: str, text: str) -> None:
    """Refuse on every rank of ``comm`` (collective) a ``text`` that some rank read differently:
    every rank reads the config itself, and a file that differs between nodes, or that was
    changed while the job started, would give a run that mixes two configs."""
    if comm is None or comm.Get_size() == 1:
        return
    import hashlib
    digests = comm.allgather(hashlib.sha256(text.encode()).hexdigest())
    other = [r for r, d in enumerate(digests) if d != digests[0]]
    if other:
        ranks = ", ".join(map(str, other[:8])) + (", ..." if len(other) > 8 else "")
        raise ParameterError(f"{key}: rank {ranks} read a different config than rank 0; every "
                             "rank must read the same files (a copy per node must be identical)")
