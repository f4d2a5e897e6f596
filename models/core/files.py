"""Writing a file whole: every file pdes writes (its outputs, and the compiled-code cache's
own files) goes to a temporary name beside it and is renamed to its own name when
complete, so a file with the final name is never a partial one (an error or a signal
leaves the previous file, or none)."""
from __future__ import annotations

import os
from contextlib import contextmanager

TMP_SUFFIX = ".tmp-"
"""The temporary file of an output is ``<name>.tmp-<pid>``."""


@contextmanager
def replaced_when_whole(path: str):
    """The temporary name (``<path>.tmp-<pid>``) to write ``path`` under: renamed to ``path``
    when the block ends, removed when it raises."""
    tmp = f"{path}{TMP_SUFFIX}{os.getpid()}"
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
