"""Long Hop hypercube (LH-HC): a hypercube with extra "long hop" links, a Cayley graph on Z_2^n.

Routers are the vectors ``x`` of Z_2^n (router id = the integer with those bits).  The
generator set ``S`` holds the ``n`` unit vectors (the hypercube's dimensions) and ``m``
long hops: distinct vectors that are neither zero nor a unit vector.  Routers ``x`` and
``x XOR g`` are linked for every ``g`` in ``S``, so every router has degree ``n + m``.

Two numbers of the graph come from the code whose generator matrix has the generators as
columns, ``G = [I_n | L]`` (``n x (n+m)``; column ``n + j`` of ``L`` is the ``j``-th long
hop):

* the **bisection**.  The character ``f`` of Z_2^n (a linear cut ``{x: f.x = 0}`` against
  ``{x: f.x = 1}``) cuts ``2^(n-1) w(f)`` links, where ``w(f) = #{g in S: f.g = 1}`` is the
  weight of the codeword ``f G``, and ``2 w(f)`` is the Laplacian eigenvalue of ``f``.  The
  smallest nonzero eigenvalue is thus ``2 d`` (``d`` the code's minimum distance), so
  every bisection cuts at least ``(2d) R / 4 = d R / 2`` links (the spectral bound), and
  the linear cut of a minimum-weight codeword cuts exactly that many: the bisection width
  is ``d R / 2``, ``3N/2`` for ``d = 3`` and ``p = 1`` (000 Sec. III-C).
* the **diameter**: the graph is vertex-transitive, so it is the eccentricity of router 0,
  the largest number of generators any vector needs (the covering radius of the code
  with parity-check matrix ``G``), found by one breadth-first search from 0.

``d >= 3`` iff the rows of ``L`` (as ``m``-bit vectors) are distinct and of weight >= 2
(the columns of the parity-check matrix ``[L^T | I_m]`` are then nonzero and distinct),
possible iff ``2^m - m - 1 >= n``: the shortened-Hamming bound ``2^m >= n + m + 1``.
"""
from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from models.core.bits import popcount, trailing_zeros
from models.core.errors import ParameterError
from models.core.jit import njit
from models.core.registry import Param, TOPOLOGIES
from ..topology import Topology, TopologySize, check_build, from_edges

MAX_N = 20
"""Most dimensions built (2^20 routers; n = 20 with the default long hops builds in seconds)."""
MAX_M = 48
"""Most long hops."""
RACK_BITS = 4
"""Routers sharing all id bits above the lowest ``RACK_BITS`` share a rack (16 routers), as
the hypercube's."""
DEFAULT_TRIES = 32
"""Candidate long-hop sets the default search evaluates (``topology.tries``)."""
DRAWS_PER_TRY = 50
"""Random draws the search makes per candidate it is allowed, at most (duplicates and draws
whose long hops are not distinct non-unit vectors are drawn again)."""
POOL_BITS = 16
"""Up to this many long hops the search lists the allowed rows of ``L``; above, it draws
them as random integers."""
SEED_TAG = 0x4C48  # "LH": keeps the search's random stream apart from other families' seeds


def default_long_hops_count(n: int) -> int:
    """The fewest long hops ``m`` with a distance-3 code: ``2^m >= n + m + 1``."""
    m = 0
    while (1 << m) < n + m + 1:
        m += 1
    return m


def _popcount(a) -> np.ndarray:
    """Set bits of each (non-negative) integer (numpy 1.26 has no ``bitwise_count``)."""
    x = np.asarray(a, dtype=np.uint64)
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return ((x * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(np.int64)


def rows_of(long_hops, n: int) -> np.ndarray:
    """The rows of ``L``: for each dimension ``i`` the ``m``-bit vector whose bit ``j`` is
    bit ``i`` of long hop ``j``."""
    g = np.asarray(long_hops, dtype=np.int64)
    bits = (g[None, :] >> np.arange(n, dtype=np.int64)[:, None]) & 1          # (n, m)
    return (bits << np.arange(g.size, dtype=np.int64)[None, :]).sum(axis=1)


def columns_of(rows, m: int) -> np.ndarray:
    """The long hops (columns of ``L``) from its rows: the inverse of :func:`rows_of`."""
    r = np.asarray(rows, dtype=np.int64)
    bits = (r[None, :] >> np.arange(m, dtype=np.int64)[:, None]) & 1          # (m, n)
    return (bits << np.arange(r.size, dtype=np.int64)[None, :]).sum(axis=1)


def distance_class(long_hops, n: int) -> int:
    """``min(d, 3)`` of the code ``[I_n | L]`` from the rows of ``L`` alone: 3 when the rows
    are distinct and of weight >= 2, 2 when they are all nonzero, else 1."""
    rows = rows_of(long_hops, n)
    if not np.all(rows):
        return 1
    if np.all(_popcount(rows) >= 2) and np.unique(rows).size == n:
        return 3
    return 2


@njit
def _eccentricity(gens, cap, dist, queue):
    """Eccentricity of vector 0 in the Cayley graph of Z_2^n with generators ``gens``
    (``dist`` and ``queue`` hold ``2^n`` entries; ``dist`` is overwritten).

    Returns ``cap + 1`` as soon as some vector is found farther than ``cap``, and -1 if
    some vector is not reached (the generators do not span Z_2^n)."""
    size = dist.shape[0]
    for i in range(size):
        dist[i] = -1
    dist[0] = 0
    queue[0] = 0
    head = 0
    tail = 1
    ecc = 0
    while head < tail:
        x = queue[head]
        head += 1
        dn = dist[x] + 1
        for k in range(gens.shape[0]):
            y = x ^ gens[k]
            if dist[y] < 0:
                if dn > cap:
                    return cap + 1
                dist[y] = dn
                ecc = dn
                queue[tail] = y
                tail += 1
    if tail < size:
        return -1
    return ecc


@njit
def _min_distance(n, m, rows):
    """Minimum distance of the code ``[I_n | L]``: the least ``w(f) = popcount(f) +
    #{j: f.g_j odd}`` over nonzero ``f`` of Z_2^n, given the rows of ``L`` (``rows[i]``:
    bit ``j`` is bit ``i`` of long hop ``j``).

    The ``f`` are visited in Gray-code order, one bit ``i`` flipping per step, so the
    parities of ``f.g_j`` (bit ``j`` of ``par``) flip by ``rows[i]``: two popcounts per
    ``f`` instead of a parity per long hop."""
    best = n + m
    f = 0
    par = 0
    for k in range(1, 1 << n):
        i = trailing_zeros(k)
        f ^= 1 << i
        par ^= rows[i]
        w = popcount(f) + popcount(par)
        if w < best:
            best = w
    return best


def _work(n: int):
    return np.empty(1 << n, dtype=np.int8), np.empty(1 << n, dtype=np.int32)


def generators(n: int, long_hops) -> np.ndarray:
    """The generator set: the ``n`` unit vectors, then the long hops (int64)."""
    return np.concatenate([np.int64(1) << np.arange(n, dtype=np.int64),
                           np.asarray(long_hops, dtype=np.int64)])


def cayley_diameter(n: int, long_hops) -> int:
    """Diameter of the LH-HC graph: the eccentricity of router 0 (one BFS on Z_2^n)."""
    dist, queue = _work(n)
    return int(_eccentricity(generators(n, long_hops), np.int64(n + len(long_hops)), dist, queue))


def min_distance(n: int, long_hops) -> int:
    """Minimum distance ``d`` of the code ``[I_n | L]`` (the bisection is ``d 2^(n-1)``)."""
    g = np.asarray(long_hops, dtype=np.int64)
    return int(_min_distance(np.int64(n), np.int64(g.size), rows_of(g, n)))


def _valid_columns(cols: np.ndarray, n: int) -> bool:
    """Long hops that are distinct, nonzero, below ``2^n`` and not unit vectors."""
    return bool(np.all((cols > 0) & (cols < (1 << n)) & (_popcount(cols) >= 2))
                and np.unique(cols).size == cols.size)


def _candidates(n: int, m: int, seed: int, tries: int):
    """Up to ``tries`` distinct candidate long-hop sets (sorted int64 arrays), see
    :func:`choose_long_hops`."""
    non_unit = (1 << n) - n - 1
    if math.comb(non_unit, m) <= tries:        # every set of m long hops
        pool = np.arange(3, 1 << n, dtype=np.int64)
        pool = pool[(pool & (pool - 1)) != 0]
        for c in itertools.combinations(range(pool.size), m):
            yield pool[list(c)]
        return
    distance3 = (1 << m) - m - 1 >= n          # distinct rows of weight >= 2 exist
    listed = m <= POOL_BITS                    # the allowed rows are listed, else drawn
    pool = None
    if listed:
        pool = np.arange(1 << m, dtype=np.int64)
        if distance3:
            pool = pool[(pool & (pool - 1)) != 0]
    replace = not distance3                    # no distance-3 code: rows of any weight
    count = None if not listed else \
        math.comb(pool.size + n - 1, n) if replace else math.comb(pool.size, n)
    seen = set()
    if count is not None and count <= tries:   # every multiset of rows, in order
        combos = (itertools.combinations_with_replacement(pool.tolist(), n) if replace else
                  itertools.combinations(pool.tolist(), n))
        for rows in combos:
            cols = np.sort(columns_of(rows, m))
            if cols.tobytes() not in seen and _valid_columns(cols, n):
                seen.add(cols.tobytes())
                yield cols
    else:
        rng = np.random.default_rng([SEED_TAG, n, m, seed])
        draws = 0
        while len(seen) < tries and draws < DRAWS_PER_TRY * tries:
            draws += 1
            if listed:
                rows = pool[rng.choice(pool.size, size=n, replace=replace)]
            else:
                rows = rng.integers(0, 1 << m, size=n, dtype=np.int64)
                if not replace and (np.unique(rows).size < n or np.any(_popcount(rows) < 2)):
                    continue
            cols = np.sort(columns_of(rows, m))
            key = cols.tobytes()
            if key in seen or not _valid_columns(cols, n):
                continue
            seen.add(key)
            yield cols
    if not seen:                               # rows never gave valid long hops: draw those
        rng = np.random.default_rng([SEED_TAG, n, m, seed, 1])
        draws = 0
        while len(seen) < tries and draws < DRAWS_PER_TRY * tries:
            draws += 1
            cols = np.sort(rng.integers(3, 1 << n, size=m, dtype=np.int64))
            key = cols.tobytes()
            if key in seen or not _valid_columns(cols, n):
                continue
            seen.add(key)
            yield cols


@functools.lru_cache(maxsize=64)
def _choose(n: int, m: int, seed: int, tries: int) -> tuple[tuple[int, ...], int, int]:
    best_key, best = None, None
    dist, queue = _work(n)
    for cols in _candidates(n, m, seed, tries):
        klass = distance_class(cols, n)
        if best_key is not None and -klass > best_key[0]:
            continue
        cap = n + m if best_key is None or -klass < best_key[0] else best_key[1]
        diam = int(_eccentricity(generators(n, cols), np.int64(cap), dist, queue))
        if diam < 0 or diam > cap:
            continue
        d = min_distance(n, cols)
        key = (-klass, diam, -d, tuple(int(g) for g in cols))
        if best_key is None or key < best_key:
            best_key, best = key, (tuple(int(g) for g in cols), diam, d)
    return best


def choose_long_hops(n: int, m: int, seed: int = 0,
                     tries: int = DEFAULT_TRIES) -> tuple[tuple[int, ...], int, int]:
    """The default long hops of an ``n``-dimensional LH-HC with ``m`` of them.

    Returns ``(long_hops, diameter, d)``: the long hops sorted ascending, the graph's
    diameter and the code's minimum distance.  The rule: among at most ``tries``
    candidate sets, the one with the largest ``min(d, 3)`` (distance 3 whenever the
    candidates reach it, which they all do when ``2^m >= n + m + 1``), then the least
    diameter, then the largest ``d``, then the lexicographically smallest sorted list.

    Candidates: every set of ``m`` long hops when there are at most ``tries`` of them;
    else sets given by the rows of ``L`` (a dimension's bits in the ``m`` long hops;
    permuting dimensions gives an isomorphic graph): every choice of ``n`` distinct rows
    of weight >= 2 (``n`` rows of any weight when no distance-3 code exists) when there
    are at most ``tries``, else ``tries`` distinct random ones drawn with
    ``default_rng([0x4C48, n, m, seed])`` (at most :data:`DRAWS_PER_TRY` draws per
    candidate).  A choice whose long hops are not distinct non-unit vectors is skipped;
    if no row choice gives one, ``tries`` random sets of long hops are drawn instead.
    """
    return _choose(int(n), int(m), int(seed), int(tries))


def _check(n, m, p, long_hops) -> int:
    """The number of long hops, after the rules between the parameters."""
    if long_hops:
        g = np.asarray(long_hops, dtype=np.int64)
        if m is not None and m != g.size:
            raise ParameterError(f"topology.m: m = {m} but long_hops lists {g.size} long hops "
                                 "(give one or the other, or both equal)")
        top = (1 << n) - 1
        if np.any(g > top):
            bad = int(g[g > top][0])
            raise ParameterError(f"topology.long_hops: {bad} is not a vector of Z_2^{n} "
                                 f"(must be in [3, {top}])")
        if np.any((g & (g - 1)) == 0):
            bad = int(g[(g & (g - 1)) == 0][0])
            raise ParameterError(f"topology.long_hops: {bad} is a unit vector (a hypercube "
                                 "dimension), not a long hop")
        if np.unique(g).size < g.size:
            vals, counts = np.unique(g, return_counts=True)
            raise ParameterError(f"topology.long_hops: {int(vals[counts > 1][0])} is listed "
                                 "twice")
        m = int(g.size)
    if m is None:
        m = default_long_hops_count(n)
    most = (1 << n) - n - 1
    if m > most:
        raise ParameterError(f"topology.m: {m} long hops, but Z_2^{n} has only {most} vectors "
                             "that are neither zero nor a unit vector")
    return m


def lhhc(n: int = 8, m: int | None = None, p: int = 1, long_hops: list | None = None,
         seed: int = 0, tries: int = DEFAULT_TRIES) -> Topology:
    """Long Hop hypercube: the ``n``-cube plus ``m`` long-hop links per router.

    Parameters
    ----------
    n : int
        Dimensions, ``3 <= n <= 20``; ``2^n`` routers.
    m : int, optional
        Long hops per router; default the fewest with a distance-3 code,
        ``2^m >= n + m + 1`` (3 for n = 3, 4; 4 for n = 5..11; 5 for n = 12..20).
    p : int
        Endpoints per router, ``p >= 1``; default 1 (000 Sec. III).
    long_hops : list of int, optional
        The long hops as bit masks (router ``x`` is linked to ``x XOR g``): distinct,
        below ``2^n``, neither 0 nor a power of two.  Default: :func:`choose_long_hops`.
    seed : int
        Seed of the default search's random candidates.
    tries : int
        Candidates the default search evaluates (default 32).

    Returns
    -------
    Topology
        ``2^n`` routers of degree ``n + m``, ``(n + m) 2^(n-1)`` links.  ``group = id >>
        min(n, 4)``: racks of 16 consecutive routers, as the hypercube's
        (``group_kind="rack"``).  Link class ``i < n`` (``dim<i>``) is a hypercube
        dimension, class ``n + j`` (``hop<j>``) the ``j``-th long hop (ascending).
        ``params`` also hold the long hops used, the diameter and the code's minimum
        distance ``d`` (the bisection is ``d 2^(n-1)`` links).

    Raises
    ------
    ParameterError
        If ``n`` is outside [3, 20], ``m`` negative or more than the ``2^n - n - 1``
        non-unit vectors, ``p < 1``, a long hop zero, a unit vector, out of range or
        listed twice, or ``m`` and ``long_hops`` disagree.

    Notes
    -----
    000 gives LH-HC's radix (19 at 2^13 routers: ``m = 5``), bisection (``3N/2``) and
    diameters (4-6 for 2^8..2^13), not its long hops; Tomic's table of them (Sec. E-S-3
    of [56]) could not be read, so the default long hops are this implementation's
    search (:func:`choose_long_hops`, docs/topologies.md).

    References
    ----------
    000 Sec. III, III-C, VI-B3 (LH-HC); Tomic 2013, Sec. E-S-3 (Long Hop hypercubes).
    """
    m = _check(n, m, p, long_hops)
    size = lhhc_size(n, m, p, long_hops, seed, tries)
    if long_hops:
        hops = tuple(sorted(int(g) for g in long_hops))
        diameter = cayley_diameter(n, hops)
        d = min_distance(n, hops)
    else:
        hops, diameter, d = choose_long_hops(n, m, seed, tries)
    n_r = size.routers
    gens = generators(n, hops)
    ids = np.arange(n_r, dtype=np.int64)
    # each link once: from the end whose bit of the generator's lowest set bit is 0
    low = gens & -gens
    keep = (ids[None, :] & low[:, None]) == 0                          # (n+m, R)
    cls, src = np.nonzero(keep)
    u = src
    v = src ^ gens[cls]
    rack_bits = min(n, RACK_BITS)
    params = {"n": n, "m": m, "p": p, "long_hops": list(hops), "seed": seed, "tries": tries,
              "diameter": diameter, "min_distance": d}
    return from_edges("lhhc", params, n_r, u, v, p, ids >> rack_bits,
                      link_class=cls.astype(np.int8),
                      link_class_names=tuple(f"dim{i}" for i in range(n))
                      + tuple(f"hop{j}" for j in range(m)),
                      group_kind="rack", meta={"rack_bits": rack_bits}, what="topology: lhhc")


def lhhc_size(n: int = 8, m: int | None = None, p: int = 1, long_hops: list | None = None,
              seed: int = 0, tries: int = DEFAULT_TRIES) -> TopologySize:
    """``2^n`` routers, ``(n+m) 2^(n-1)`` links, ``p 2^n`` endpoints; the search's
    distance and queue arrays (5 bytes a router) are its working memory."""
    m = _check(n, m, p, long_hops)
    size = TopologySize(1 << n, (n + m) << (n - 1), p << n, work_bytes=5 << n)
    check_build(size.routers, size.links, "topology.n")
    return size


def analytic_bisection(topo) -> dict:
    """``d R / 2`` links, ``d`` the minimum distance of the code ``[I_n | L]`` (``3N/2`` for
    ``d = 3``, ``p = 1``: 000 Sec. III-C); exact (spectral bound = a linear cut)."""
    prm = topo.params
    d = int(prm["min_distance"])
    return {"links": d * topo.n_routers // 2,
            "formula": f"d R/2 with d = {d} (000 Sec. III-C: 3N/2 for d = 3, p = 1)",
            "exact": True}


lhhc = TOPOLOGIES.register(
    "lhhc", lhhc,
    params=[
        Param("n", int, 8, "dimensions (2^n routers)", lo=3, hi=MAX_N),
        Param("m", int, None, "long hops per router (default: fewest with 2^m >= n+m+1)",
              lo=0, hi=MAX_M),
        Param("p", int, 1, "endpoints per router", lo=1),
        Param("long_hops", "int_list", [], "long hops as bit masks (default: searched)",
              lo=1, hi=(1 << MAX_N) - 1),
        Param("seed", int, 0, "seed of the long-hop search", lo=0),
        Param("tries", int, DEFAULT_TRIES, "candidate long-hop sets the search evaluates",
              lo=1, hi=4096),
    ],
    summary="Long Hop hypercube (direct, degree n+m; Cayley graph on Z_2^n)",
    reference="000 Sec. III, VI-B3; Tomic 2013 Sec. E-S-3",
    bisection=analytic_bisection,
    size=lhhc_size,
)
