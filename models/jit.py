"""The one jit wrapper used by every kernel in the project.

Kernels take numpy arrays with explicit dtypes and scalars, and are compiled
with ``cache=True`` so a second run does not pay the compile time again.
"""
import numba

njit = numba.njit(cache=True, nogil=True)
"""Decorator: ``@njit`` compiles a function with the project's options."""

njit_inline = numba.njit(cache=True, nogil=True, inline="always")
"""Decorator for small helpers that are always inlined into their callers."""
