"""Files pdes reads and writes.  Writing an output file whole (:mod:`models.core.files`,
where the compiled-code cache writes its files the same way): every file pdes writes goes to a
temporary name beside it and is renamed to its own name when complete.  Reading an input:
:func:`check_regular`."""
import os
import stat

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
