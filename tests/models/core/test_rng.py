"""The counter-based draws: ``hash4`` is the splitmix64 rounds it documents, and a keyed
stream of draws (one entity, one purpose) gives exactly the draws of ``hash4``."""
import numpy as np
import pytest

from models.core.rng import (P_INJECT, draw53, entity_key, hash4, keyed_draw53, keyed_hash)

MASK = (1 << 64) - 1


def _mix64(x: int) -> int:
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def _hash4(seed: int, entity: int, counter: int, purpose: int) -> int:
    """The documented rounds, in Python integers."""
    x = _mix64((seed * 0x9E3779B97F4A7C15 + purpose) & MASK)
    x = _mix64(x ^ ((entity * 0xBF58476D1CE4E5B9) & MASK))
    return _mix64(x ^ ((counter * 0x94D049BB133111EB + 0x9E3779B97F4A7C15) & MASK))


KEYS = [(0, 0, 0, 1), (1, 2, 3, 4), (12345, 99_059, 1_000_000, P_INJECT),
        ((1 << 63) - 1, (1 << 31) - 1, (1 << 31) - 1, (1 << 23) + 1)]


@pytest.mark.parametrize("seed,entity,counter,purpose", KEYS)
def test_hash4_is_the_documented_rounds(seed, entity, counter, purpose):
    assert int(hash4(seed, entity, counter, purpose)) == _hash4(seed, entity, counter, purpose)


def test_a_keyed_stream_gives_the_same_draws():
    """``keyed_draw53(entity_key(s, e, p), c)`` is ``draw53(s, e, c, p)``, also with the key
    kept as the bits of an int64 (the kernel's ``ep_key``)."""
    rng = np.random.default_rng(7)
    for seed, entity, purpose in [(0, 0, 1), (1 << 62, 3, P_INJECT), (5, (1 << 31) - 1, 77)]:
        key = np.uint64(entity_key(seed, entity, purpose))   # (a Python int would be typed int64)
        as_int64 = np.array([key], np.uint64).view(np.int64)[0]
        for c in [0, 1, 2, *rng.integers(0, 1 << 31, 20).tolist()]:
            want = draw53(seed, entity, c, purpose)
            assert keyed_draw53(key, c) == want
            assert keyed_draw53(as_int64, c) == want
            assert keyed_hash(key, c) == hash4(seed, entity, c, purpose)
