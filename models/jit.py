"""The one jit wrapper used by every kernel in the project.

Kernels take numpy arrays with explicit dtypes and scalars, and are compiled
with ``cache=True`` so a second run does not pay the compile time again.

Compiled code is cached in a directory keyed on the digest of all project
sources (:func:`source_digest`), so an edit anywhere never runs stale code.

The cycle kernels (``pdes.kernels``) index arrays with non-negative integers
only.  Numba would give every access with a signed index Python's negative
index semantics (a compare and a conditional add per access, with the array
length kept live); across the thousands of accesses per simulated router
cycle that costs about a fifth of the run time.  :func:`_no_wraparound_in`
turns that fix-up off for functions of those modules alone; every other
compiled function keeps Numba's semantics.  Running with
``NUMBA_BOUNDSCHECK=1`` still catches a negative index there (as out of
bounds), which is how the test suite checks the premise.
"""
import hashlib
import os
from pathlib import Path

import numba

_ROOT = Path(__file__).resolve().parent.parent


def source_digest(root: Path = _ROOT) -> str:
    """Digest of every Python source of the ``models`` and ``pdes`` packages under ``root``
    (and of the Numba version).

    Numba's on-disk cache checks only the source file of the cached function:
    a kernel whose inlined helpers (routing, RNG, bit counts) or whose compile
    hooks (this module) changed would be loaded from the cache as it was.
    Keying the cache directory on all sources makes any change recompile.
    """
    h = hashlib.sha256(numba.__version__.encode())
    for pkg in ("models", "pdes"):
        for f in sorted((root / pkg).rglob("*.py")):
            h.update(f.relative_to(root).as_posix().encode() + b"\0")
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _cache_dir() -> str:
    """``$NUMBA_CACHE_DIR`` (or ``$XDG_CACHE_HOME``, else ``~/.cache``, + ``/pdes``) +
    ``/numba-<source digest>``."""
    base = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "pdes")
    return os.path.join(base, "numba-" + source_digest())


# set before the first decorated function: Numba picks a function's cache location when
# it is decorated (an unwritable directory makes it fall back to its default places)
numba.config.CACHE_DIR = _cache_dir()

njit = numba.njit(cache=True, nogil=True)
"""Decorator: ``@njit`` compiles a function with the project's options."""

njit_inline = numba.njit(cache=True, nogil=True, inline="always")
"""Decorator for small helpers that are always inlined into their callers."""

# mangled-name prefix of the functions compiled without negative-index wraparound
NO_WRAPAROUND_PREFIX = "_ZN4pdes7kernels"


def _no_wraparound_in(prefix: str) -> bool:
    """Compile signed array indices in functions whose mangled name starts with ``prefix``
    without negative-index wraparound.  Returns False (and changes nothing) if this
    Numba version does not have the hook, so the kernels stay correct, only slower."""
    try:
        from numba.core import types
        from numba.np import arrayobj
    except ImportError:   # pragma: no cover - depends on the Numba version
        return False
    orig = getattr(arrayobj, "fix_integer_index", None)
    if orig is None:      # pragma: no cover
        return False
    if getattr(orig, "_pdes_prefix", None) == prefix:
        return True

    def fix_integer_index(context, builder, idxty, idx, size):
        if idxty.signed and builder.function.name.startswith(prefix):
            return context.cast(builder, idx, idxty, types.intp)
        return orig(context, builder, idxty, idx, size)

    fix_integer_index._pdes_prefix = prefix
    arrayobj.fix_integer_index = fix_integer_index
    return True


NO_WRAPAROUND = _no_wraparound_in(NO_WRAPAROUND_PREFIX)
