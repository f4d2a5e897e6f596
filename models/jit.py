"""The one jit wrapper used by every kernel in the project.

Kernels take numpy arrays with explicit dtypes and scalars, and are compiled
with ``cache=True`` so a second run does not pay the compile time again.

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
import numba

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
