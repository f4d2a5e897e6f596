"""Finite fields GF(q), q = p^m, as small lookup tables (construction notes 0.1, 0.2).

Elements are the integers ``0..q-1``.  Base-p digit ``i`` of an element
(least significant first) is the coefficient of ``x^i``; for m = 1 this is
plain arithmetic mod p.  For m > 1 products are taken modulo the *canonical*
primitive polynomial: the first monic degree-m polynomial
``f(x) = x^m + sum_{i<m} c_i x^i``, in increasing order of the integer
``sum c_i p^i``, for which ``x`` has multiplicative order exactly ``q-1``.
The primitive element is ``xi = x`` (the integer ``p``); for m = 1 it is the
smallest primitive root mod p.  Fixing these choices fixes every label of
the algebraic topologies built on top (Slim Fly, Galaxy graph, BDF).

Fields are built once per q and cached; their tables are read-only.

References
----------
000 Sec. II-B1 (Slim Fly over GF(q)); 001 Sec. 2.1.2 (generator sets for
delta = -1, 0, 1); 004 Sec. 2.1, eqs. (1)-(2) (Galaxy graph generator sets).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["is_prime_power", "FiniteField", "GF", "delta_of", "generator_sets"]


def is_prime_power(q) -> tuple[int, int] | None:
    """Return ``(p, m)`` with ``q = p**m`` and p prime, or ``None``.

    ``q`` below 2 (and any non-integer) is not a prime power.
    """
    try:
        q = int(q)
    except (TypeError, ValueError):
        return None
    if q < 2:
        return None
    p = 2
    while p * p <= q:
        if q % p == 0:
            break
        p += 1
    else:
        return (q, 1)  # q itself is prime
    m = 0
    r = q
    while r % p == 0:
        r //= p
        m += 1
    return (p, m) if r == 1 else None


def _smallest_primitive_root(p: int) -> int:
    """Smallest g with multiplicative order p-1 modulo the prime p."""
    if p == 2:
        return 1
    n = p - 1
    factors = [f for f in range(2, n + 1) if n % f == 0 and is_prime_power(f) == (f, 1)]
    for g in range(2, p):
        if all(pow(g, n // f, p) != 1 for f in factors):
            return g
    raise AssertionError("no primitive root")  # pragma: no cover


def _times_x(digits: list[int], coeffs: list[int], p: int) -> list[int]:
    """Multiply the polynomial ``digits`` by x modulo ``x^m + sum coeffs[i] x^i``."""
    top = digits[-1]
    shifted = [0] + digits[:-1]
    return [(shifted[i] - top * coeffs[i]) % p for i in range(len(digits))]


def _canonical_modulus(p: int, m: int) -> list[int]:
    """Coefficients ``c_0..c_{m-1}`` of the canonical primitive polynomial."""
    q = p ** m
    one = [1] + [0] * (m - 1)
    for code in range(q):
        coeffs = [(code // p ** i) % p for i in range(m)]
        if coeffs[0] == 0:
            continue  # x | f: x is not invertible
        e = one
        for k in range(1, q):
            e = _times_x(e, coeffs, p)
            if e == one:
                break
        if k == q - 1 and e == one:
            return coeffs
    raise AssertionError(f"no primitive polynomial for GF({p}^{m})")  # pragma: no cover


class FiniteField:
    """The field GF(q) as read-only ``numpy`` tables.

    Attributes
    ----------
    q, p, m : int
        Order, characteristic and degree, ``q = p**m``.
    modulus : tuple of int
        Coefficients ``(c_0, ..., c_{m-1}, 1)`` of the defining polynomial
        (lowest degree first); ``(-xi mod p, 1)`` for m = 1.
    xi : int
        The primitive element (``p`` for m > 1, the smallest primitive root for m = 1).
    exp : (q-1,) int64
        ``exp[i] = xi**i``.
    log : (q,) int64
        Inverse of ``exp``; ``log[0] = -1``.
    add, sub, mul : (q, q) int64
        ``add[a, b] = a + b`` and so on, vectorised by fancy indexing.
    neg, inv : (q,) int64
        Additive and multiplicative inverse (``inv[0] = -1``).
    """

    def __init__(self, q: int):
        pm = is_prime_power(q)
        if pm is None:
            raise ValueError(f"GF({q}): q is not a prime power")
        p, m = pm
        self.q, self.p, self.m = int(q), p, m
        if m == 1:
            xi = _smallest_primitive_root(p)
            self.modulus = ((-xi) % p, 1)
            exp = [1]
            for _ in range(q - 2):
                exp.append(exp[-1] * xi % p)
        else:
            coeffs = _canonical_modulus(p, m)
            xi = p
            self.modulus = tuple(coeffs) + (1,)
            weights = [p ** i for i in range(m)]
            e = [1] + [0] * (m - 1)
            exp = []
            for _ in range(q - 1):
                exp.append(sum(d * w for d, w in zip(e, weights)))
                e = _times_x(e, coeffs, p)
        self.xi = int(xi)
        self.exp = np.asarray(exp, dtype=np.int64)
        log = np.full(q, -1, dtype=np.int64)
        log[self.exp] = np.arange(q - 1)
        self.log = log

        elems = np.arange(q, dtype=np.int64)
        if m == 1:
            self.add = (elems[:, None] + elems[None, :]) % p
            self.sub = (elems[:, None] - elems[None, :]) % p
        else:
            w = p ** np.arange(m, dtype=np.int64)
            dig = (elems[:, None] // w[None, :]) % p                      # (q, m)
            self.add = (((dig[:, None, :] + dig[None, :, :]) % p) * w).sum(axis=2)
            self.sub = (((dig[:, None, :] - dig[None, :, :]) % p) * w).sum(axis=2)
        self.neg = self.sub[0].copy()
        mul = np.zeros((q, q), dtype=np.int64)
        la = self.log[1:]
        mul[1:, 1:] = self.exp[(la[:, None] + la[None, :]) % (q - 1)]
        self.mul = mul
        inv = np.full(q, -1, dtype=np.int64)
        inv[1:] = self.exp[(-la) % (q - 1)]
        self.inv = inv
        for arr in (self.exp, self.log, self.add, self.sub, self.mul, self.neg, self.inv):
            arr.setflags(write=False)

    def power(self, k) -> np.ndarray:
        """``xi**k`` for integer exponent(s) ``k`` (taken mod q-1)."""
        return self.exp[np.asarray(k, dtype=np.int64) % (self.q - 1)]

    def __repr__(self) -> str:
        return f"GF({self.q})"


@lru_cache(maxsize=None)
def GF(q: int) -> FiniteField:
    """The (cached) field of order ``q``; raises ``ValueError`` if q is not a prime power."""
    return FiniteField(int(q))


def delta_of(q: int) -> int:
    """delta in {-1, 0, 1} with ``q = 4w + delta``; ``ValueError`` when q = 2 mod 4."""
    r = int(q) % 4
    if r == 2:
        raise ValueError(f"q={q} is congruent to 2 mod 4")
    return {0: 0, 1: 1, 3: -1}[r]


@lru_cache(maxsize=None)
def generator_sets(q: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Generator sets ``(X, X', delta)`` of construction notes 0.2, as sorted element arrays.

    With ``q = 4w + delta`` (exponents of xi, mod q-1):

    * delta = +1: X = xi^{0,2,...,q-3}, X' = xi^{1,3,...,q-2};
    * delta = -1: X = xi^{0,2,...,2w-2} and xi^{2w-1,2w+1,...,4w-3},
      X' = xi^{1,3,...,2w-1} and xi^{2w,2w+2,...,4w-2};
    * delta = 0: X = xi^{0,2,...,q-2}, X' = xi^{1,3,...,q-1}.

    X = -X, X' = -X', X' = xi X and X u X' = GF(q) minus {0} (checked by the tests).
    Raises ``ValueError`` if q is not a prime power or q = 2 (mod 4).

    References
    ----------
    001 Sec. 2.1.2; 004 eqs. (1)-(2); 000 Sec. II-B1 (delta = 1).
    """
    F = GF(q)
    delta = delta_of(q)
    w = (q - delta) // 4
    if w < 1:
        raise ValueError(f"q={q} gives w < 1")
    if delta == 1:
        ex, exp_ = np.arange(0, q - 2, 2), np.arange(1, q - 1, 2)
    elif delta == -1:
        ex = np.concatenate([np.arange(0, 2 * w - 1, 2), np.arange(2 * w - 1, 4 * w - 2, 2)])
        exp_ = np.concatenate([np.arange(1, 2 * w, 2), np.arange(2 * w, 4 * w - 1, 2)])
    else:
        ex, exp_ = np.arange(0, q - 1, 2), np.arange(1, q, 2)
    X = np.unique(F.power(ex))
    Xp = np.unique(F.power(exp_))
    X.setflags(write=False)
    Xp.setflags(write=False)
    return X, Xp, delta
