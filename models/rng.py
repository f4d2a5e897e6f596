"""The counter-based hash behind every random draw: splitmix64 rounds over a key.

``hash4(seed, entity, counter, purpose)`` is a pure function of its key;
the engine's draws (:mod:`pdes.kernels.rng`) and the randomised routing-table
constructions (``models.routing.layered``) both use it.
"""
import numpy as np

from models.jit import njit

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_G = np.uint64(0x9E3779B97F4A7C15)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)


@njit
def mix64(x):
    """splitmix64 finaliser (bijective on uint64)."""
    x = np.uint64(x)
    x = (x ^ (x >> _S30)) * _M1
    x = (x ^ (x >> _S27)) * _M2
    return x ^ (x >> _S31)


@njit
def hash4(seed, entity, counter, purpose):
    """64-bit hash of the four key parts (each an integer >= 0)."""
    x = mix64(np.uint64(seed) * _G + np.uint64(purpose))
    x = mix64(x ^ (np.uint64(entity) * _M1))
    x = mix64(x ^ (np.uint64(counter) * _M2 + _G))
    return x
