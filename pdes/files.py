"""Files pdes reads and writes.  Writing an output file whole (:mod:`models.core.files`,
where the compiled-code cache writes its files the same way): every file pdes writes goes to a
temporary name beside it and is renamed to its own name when complete, and an HDF5 file
through :func:`new_hdf5` (both at once: :func:`hdf5_written`).  Reading an input: :func:`check_regular`."""
import os
import stat
import sys
from contextlib import contextmanager

from models.core.errors import ParameterError
from models.core.files import TMP_SUFFIX, replaced_when_whole  # noqa: F401


def check_regular(path: str, key: str) -> None:
    """Refuse an input path that exists but is neither a regular file nor a directory (a
    pipe such as ``<(...)`` or ``/dev/stdin``, a FIFO, a device): every rank reads it, and
    pdes may read it more than once (a config to tell TOML from BookSim, any input for its
    digest).  A missing or unreadable path is left to the reader, which names it."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise ParameterError(f"{key}: {path} is not a regular file (a pipe or a device); give "
                             "the path of a file, which every rank reads")


_unclosed = False


@contextmanager
def new_hdf5(path: str):
    """``h5py.File(path, "w")``, for writing a file under its temporary name.  When a write
    fails (a full disk, the directory removed), HDF5 cannot close the file: h5py prints each
    object it fails to release ("Exception ignored ... Can't decrement id ref count") and the
    library, closing it again after the interpreter's end, crashed the process (status 139)
    after its error line.  Here the failed block's release errors are not printed, and
    :func:`hdf5_unclosed` tells the entry point to end the process without that last close."""
    import h5py
    global _unclosed
    previous, previous_except = sys.unraisablehook, sys.excepthook
    quiet = []
    # the objects released as a failure unwinds: h5py reports each through both hooks
    sys.unraisablehook = quiet.append
    sys.excepthook = lambda *exc: quiet.append(exc)
    f = None
    try:
        f = h5py.File(path, "w")
        yield f
        f.close()
    except BaseException:
        if f is not None:
            try:
                f.close()
            except Exception:  # noqa: BLE001 - the write's own error is the one to report
                pass
            _unclosed = _unclosed or bool(f.id.valid) or bool(quiet)
        raise
    finally:
        sys.unraisablehook, sys.excepthook = previous, previous_except
    for u in quiet:                       # a successful write: whatever else was raised
        previous_except(*u) if isinstance(u, tuple) else previous(u)


@contextmanager
def hdf5_written(path: str):
    """An HDF5 output written whole: :func:`new_hdf5` under the temporary name of
    :func:`replaced_when_whole`, renamed to ``path`` when the block ends."""
    with replaced_when_whole(path) as tmp, new_hdf5(tmp) as f:
        yield f


def hdf5_unclosed() -> bool:
    """Whether a failed write left HDF5 holding a file it could not close."""
    return _unclosed
