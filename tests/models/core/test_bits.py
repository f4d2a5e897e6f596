"""The bit-count intrinsics used by minimal routing agree with Python's integers."""
import numpy as np

from models.core.jit import njit
from models.core.bits import popcount, trailing_zeros


@njit
def _both(xs, pc, tz):
    for i in range(xs.shape[0]):
        pc[i] = popcount(xs[i])
        tz[i] = trailing_zeros(xs[i])


def test_popcount_and_trailing_zeros():
    rng = np.random.default_rng(5)
    xs = np.concatenate([rng.integers(-2**63, 2**63 - 1, 2000, dtype=np.int64),
                         np.array([0, 1, 2, 3, -1, -2**63, 2**63 - 1, 1 << 40], dtype=np.int64),
                         (np.int64(1) << np.arange(63, dtype=np.int64))])
    pc = np.zeros_like(xs)
    tz = np.zeros_like(xs)
    _both(xs, pc, tz)
    for x, p, t in zip(xs.tolist(), pc.tolist(), tz.tolist()):
        u = x & (2**64 - 1)
        assert p == bin(u).count("1")
        assert t == (64 if u == 0 else (u & -u).bit_length() - 1)


@njit
def _narrow(x):
    return popcount(x), trailing_zeros(x)


def test_narrow_and_unsigned_arguments():
    assert _narrow(np.uint32(0xF0)) == (4, 4)
    assert _narrow(np.int32(-1)) == (64, 0)    # sign-extended to 64 bits
    assert _narrow(np.uint64(2**63)) == (1, 63)
