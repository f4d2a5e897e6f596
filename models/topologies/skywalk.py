"""Skywalk: cabinet-aware random topology with straight-first inter-cabinet links (construction notes 7)."""
from __future__ import annotations

import math

import numpy as np

from models.core.errors import ParameterError
from models.core.registry import Param, TOPOLOGIES
from ..topology import Topology, TopologySize, check_build, from_edges

CABINET_WIDTH_M = 0.6
"""Cabinet pitch along a row (002 Sec. III-A)."""
CABINET_DEPTH_M = 2.1
"""Cabinet pitch between rows, aisle included (002 Sec. III-A)."""

LINK_CLASSES = ("intra_cabinet", "straight", "diagonal")

_REJECTION_TRIES = 16
"""Rejection draws for a diagonal partner before enumerating the remaining set."""


class _Uniform:
    """Uniform doubles in [0, 1) from a numpy Generator, drawn in blocks."""

    def __init__(self, rng: np.random.Generator, block: int = 4096):
        self._rng = rng
        self._block = block
        self._buf: list[float] = []
        self._i = 0

    def index(self, n: int) -> int:
        """A uniform index in ``[0, n)``."""
        if self._i == len(self._buf):
            self._buf = self._rng.random(self._block).tolist()
            self._i = 0
        u = self._buf[self._i]
        self._i += 1
        return int(u * n)


def _pairing(n: int, rounds: int, linked: list[set], rand: _Uniform, partners=None,
             ok=None) -> list[tuple[int, int]]:
    """Uniform-random pairing of 002 Sec. II-C over vertices ``0..n-1``, ``rounds`` times.

    Each round starts from ``W = V``; it draws ``v1`` uniformly from ``W``
    and removes it, then draws ``v2`` uniformly from
    ``C = {x in W : ok(v1, x), x not linked to v1}``; if ``C`` is not empty
    it links them and removes ``v2``.  ``C`` is enumerated from the explicit
    ``partners[v1]`` list when given; otherwise ``v2`` is found by rejection
    sampling from ``W`` with the predicate ``ok`` (uniform on ``C``), falling
    back to enumerating ``W`` after a few misses.  Returns the links in
    creation order as ``(v1, v2)``.
    """
    links = []
    for _ in range(rounds):
        w = list(range(n))
        pos = list(range(n))
        alive = [True] * n

        def remove(v):
            i = pos[v]
            last = w.pop()
            if last != v:
                w[i] = last
                pos[last] = i
            alive[v] = False

        while w:
            v1 = w[rand.index(len(w))]
            remove(v1)
            if not w:
                break
            mine = linked[v1]
            v2 = -1
            if partners is not None:
                cand = [x for x in partners[v1] if alive[x] and x not in mine]
                if cand:
                    v2 = cand[rand.index(len(cand))]
            else:
                for _ in range(_REJECTION_TRIES):
                    x = w[rand.index(len(w))]
                    if x not in mine and ok(v1, x):
                        v2 = x
                        break
                else:
                    cand = [x for x in w if x not in mine and ok(v1, x)]
                    if cand:
                        v2 = cand[rand.index(len(cand))]
            if v2 >= 0:
                remove(v2)
                mine.add(v2)
                linked[v2].add(v1)
                links.append((v1, v2))
    return links


def _intra_cabinet(rng: np.random.Generator, z: int, c: int, rounds: int):
    """The pairing of :func:`_pairing` run in every cabinet at once (``V`` = its ``z`` switches).

    Cabinets are independent, so running them side by side gives each
    cabinet exactly the distribution of a run of its own.  A uniform choice
    among the allowed switches is the argmax of uniform keys over them.
    """
    linked = np.zeros((c, z, z), dtype=bool)
    linked[:, np.arange(z), np.arange(z)] = True
    us, vs = [], []
    for _ in range(rounds):
        alive = np.ones((c, z), dtype=bool)
        while True:
            rows = np.nonzero(alive.any(axis=1))[0]
            if rows.size == 0:
                break
            keys = np.where(alive[rows], rng.random((rows.size, z)), -1.0)
            v1 = keys.argmax(axis=1)
            alive[rows, v1] = False
            cand = alive[rows] & ~linked[rows, v1]
            keys = np.where(cand, rng.random(cand.shape), -1.0)
            v2 = keys.argmax(axis=1)
            has = cand.any(axis=1)
            r, a, b = rows[has], v1[has], v2[has]
            alive[r, b] = False
            linked[r, a, b] = True
            linked[r, b, a] = True
            us.append(r * z + a)
            vs.append(r * z + b)
    return us, vs


def _instance(rng, z, c, d_i, rounds_s, rounds_d, straight, diagonal_ok):
    """One Skywalk instance: switch edge arrays and link classes."""
    iu, iv = _intra_cabinet(rng, z, c, d_i)
    n_intra = sum(a.size for a in iu)
    rand = _Uniform(rng)
    us, vs, cls = [], [], []
    nxt = [0] * c
    linked = [set() for _ in range(c)]
    for klass, rounds, kw in ((1, rounds_s, {"partners": straight}),
                              (2, rounds_d, {"ok": diagonal_ok})):
        for a, b in _pairing(c, rounds, linked, rand, **kw):
            us.append(a * z + nxt[a] % z)
            vs.append(b * z + nxt[b] % z)
            nxt[a] += 1
            nxt[b] += 1
            cls.append(klass)
    return (np.concatenate(iu + [np.array(us, dtype=np.int64)]),
            np.concatenate(iv + [np.array(vs, dtype=np.int64)]),
            np.concatenate([np.zeros(n_intra, np.int8), np.array(cls, dtype=np.int8)]))


def _cabinet_pairs(c, x, y, r_limit):
    """Cabinet rows and columns on the ``x x y`` grid, each cabinet's straight partners within
    the cable-length bound (sorted), and the test of a diagonal pair against it."""
    cab = np.arange(c)
    row, col = cab // y, cab % y
    bound = r_limit * (CABINET_WIDTH_M * (y - 1) + CABINET_DEPTH_M * (x - 1)) + 1e-9

    def dist(a, b):
        return CABINET_WIDTH_M * np.abs(col[a] - col[b]) + CABINET_DEPTH_M * np.abs(row[a] - row[b])

    straight = []
    for a in range(c):
        line = np.concatenate([np.nonzero(row == row[a])[0], np.nonzero(col == col[a])[0]])
        line = line[(line != a) & (dist(a, line) <= bound)]
        straight.append(np.sort(line).tolist())
    row_l, col_l = row.tolist(), col.tolist()
    dist_l = [[CABINET_DEPTH_M * i, CABINET_WIDTH_M * i] for i in range(max(x, y))]

    def diagonal_ok(a, b):
        ra, rb, ca, cb = row_l[a], row_l[b], col_l[a], col_l[b]
        return (ra != rb and ca != cb
                and dist_l[abs(ra - rb)][0] + dist_l[abs(ca - cb)][1] <= bound)

    return row, col, straight, diagonal_ok


def _best_instance(z, c, d_i, r_straight, r_diagonal, seed, tries, straight, diagonal_ok):
    """The connected instance with the most links over seeds ``seed .. seed+tries-1`` (ties:
    the smaller seed), as ``(seed, u, v, link class)``, and every try's link count (0 for
    a disconnected one); refused when no seed gives a connected instance."""
    from scipy.sparse import coo_matrix   # scipy loaded only when used
    from scipy.sparse.csgraph import connected_components
    n_sw = z * c
    best = None
    counts = []
    for s in range(seed, seed + tries):
        u, v, cls = _instance(np.random.default_rng(s), z, c, d_i, r_straight, r_diagonal,
                              straight, diagonal_ok)
        g = coo_matrix((np.ones(u.size, np.int8), (u, v)), shape=(n_sw, n_sw))
        if connected_components(g, directed=False)[0] != 1:
            counts.append(0)
            continue
        counts.append(int(u.size))
        if best is None or u.size > best[1].size:
            best = (s, u, v, cls)
    if best is None:
        raise ParameterError(f"topology.tries: Skywalk found no connected instance for seeds "
                             f"{seed}..{seed + tries - 1} (raise d_i, d_o or tries)")
    return best, counts


def skywalk(z: int = 8, c: int = 64, d_i: int = 7, d_o: int = 4, p: int = 8, seed: int = 0,
            tries: int = 10, r_limit: float = 1.0, d_d: int | None = None) -> Topology:
    """Skywalk(z, c, d_i, d_o): random intra-cabinet links plus straight-first inter-cabinet links
    (or a given straight/diagonal mix, ``d_d``).

    ``c`` cabinets of ``z`` switches sit on an ``x x y`` grid,
    ``x = ceil(sqrt(c))`` rows and ``y = ceil(c/x)`` columns; cabinet ``k``
    is at row ``k // y``, column ``k % y`` (row-major; the last row may be
    partial).  Switch ``j`` of cabinet ``k`` has id ``k*z + j``.  Two
    cabinets are *straight* if they share exactly one of row/column and
    *diagonal* if they share neither.

    Construction, each step with the uniform-random pairing of 002
    Sec. II-C (draw ``v1`` from the remaining set ``W``, then ``v2``
    uniformly among the allowed partners still in ``W`` and not yet linked
    to ``v1``; repeat until ``W`` is empty; repeat the round ``R`` times):

    1. intra-cabinet: per cabinet, over its ``z`` switches, ``R = d_i``
       (all cabinets are drawn side by side, which leaves each cabinet's
       distribution unchanged);
    2. straight: over the cabinets, ``R = z*d_s`` with
       ``d_s = min(d_o, d_smax)``, ``d_smax = ceil((x+y-2)/z)``;
    3. diagonal: over the cabinets, ``R = z*d_d`` with
       ``d_d = min(d_o - d_s, d_dmax)``, ``d_dmax = ceil((x-1)(y-1)/z)``.

    That is 002's *straight-first* scheme (Sec. II-D).  Given ``d_d``, the
    mix is set instead: ``d_d`` diagonal and ``d_s = d_o - d_d`` straight
    rounds per switch (002 Sec. II-D, Fig. 3 varies ``(d_s, d_d)`` from
    ``(d_o, 0)`` to ``(0, d_o)``), drawn in the same order (straight, then
    diagonal).

    A cabinet link ``(A, B)`` joins switch ``(A, next_A mod z)`` to switch
    ``(B, next_B mod z)`` and increments both counters; one counter per
    cabinet is shared by straight and diagonal links, so a switch has at
    most ``d_i + d_o`` links.  Instances are built for seeds ``seed ..
    seed+tries-1`` (each with ``numpy.random.default_rng(seed)``, drawing
    steps 1-3 in that order) and the connected one with the most links is
    kept, ties going to the smaller seed.

    Parameters
    ----------
    z : int
        Switches per cabinet, ``>= 1``.
    c : int
        Cabinets, ``>= 1``.
    d_i : int
        Intra-cabinet links per switch, ``0 <= d_i <= z-1``.
    d_o : int
        Inter-cabinet links per switch, ``0 <= d_o <= d_smax + d_dmax``.
    p : int
        Hosts per switch (002's ``m``), ``>= 0``; default 8 as in 002's
        simulations.
    seed : int
        First seed, ``>= 0``.
    tries : int
        Number of seeds tried, ``>= 1``; default 10 (002 Sec. II-C).
    r_limit : float
        Cable-length bound ``r`` of 002 Sec. III-G, ``0 < r <= 1``: an
        inter-cabinet pair is allowed only if its Manhattan distance
        ``0.6|dcol| + 2.1|drow|`` m is at most ``r * l_max``, with
        ``l_max = 0.6(y-1) + 2.1(x-1)`` m the largest such distance on the
        grid.  1 (default) is no bound.
    d_d : int, optional
        Diagonal links per switch, ``0 <= d_d <= min(d_o, d_dmax)`` with
        ``d_o - d_d <= d_smax``; the other ``d_o - d_d`` are straight.
        ``None`` (default) is straight-first, as above.

    Returns
    -------
    Topology
        ``z*c`` switches with ``p`` endpoints each; degree at most
        ``d_i + d_o``; connected; no cabinet pair linked twice.  ``group`` =
        cabinet (``group_kind="cabinet"``); link classes ``intra_cabinet``,
        ``straight``, ``diagonal``.  ``meta["cabinet_rc"]`` is the ``(c, 2)``
        array of cabinet (row, col); ``meta["seed_used"]`` the seed of the
        kept instance; ``meta["links_per_seed"]`` the link count of every
        try (0 for a disconnected instance).

    Raises
    ------
    ParameterError
        If a parameter is out of range, in particular ``d_i > z-1`` or
        ``d_o > d_smax + d_dmax``, or a ``d_d`` whose mix does not fit
        ``d_smax`` and ``d_dmax``, or if no seed gives a connected instance.

    Notes
    -----
    The number of cabinet rounds (``z*d_s``, ``z*d_d``) and the shared
    cyclic counter resolve ambiguities of 002 as in construction notes 7.  With
    ``d_i = z-1`` and ``d_o = d_smax + d_dmax`` the result is (up to missed
    pairings) the fully connected Dragonfly of 002 Sec. II-B.  The switch
    radix check ``d_i + d_o + m <= ports`` of 002 Sec. II-B is left to the
    router model.  Skywalk(8, 256, 7, 4) has about 58 km of cable with the
    002 Sec. III-A model (002 Sec. III-B reports 59 km for its instance).

    References
    ----------
    002 Sec. II-B (parameters, bounds), II-C (uniform random construction,
    cyclic switch choice, 10 seeds), II-D (straight-first), III-A (cabinet
    grid), III-G (cable-length bound r).
    """
    skywalk_size(z, c, d_i, d_o, p, seed, tries, r_limit, d_d)
    x, y, d_smax, d_dmax = _grid(z, c)
    d_s, d_d = _mix(d_o, d_smax, d_dmax, d_d)

    row, col, straight, diagonal_ok = _cabinet_pairs(c, x, y, r_limit)
    best, counts = _best_instance(z, c, d_i, z * d_s, z * d_d, seed, tries, straight, diagonal_ok)
    n_sw = z * c
    s, u, v, cls = best
    params = {"z": z, "c": c, "d_i": d_i, "d_o": d_o, "p": p, "seed": seed, "tries": tries,
              "r_limit": r_limit, "d_s": d_s, "d_d": d_d, "rows": x, "cols": y}
    meta = {"cabinet_rc": np.stack([row, col], axis=1).astype(np.int32), "seed_used": s,
            "links_per_seed": counts, "d_smax": d_smax, "d_dmax": d_dmax}
    return from_edges("skywalk", params, n_sw, u, v, p, np.arange(n_sw) // z, link_class=cls,
                      link_class_names=LINK_CLASSES, group_kind="cabinet", meta=meta,
                      what="topology: Skywalk")


def _mix(d_o: int, d_smax: int, d_dmax: int, d_d: int | None) -> tuple[int, int]:
    """(d_s, d_d): straight-first (002 Sec. II-D) when ``d_d`` is None, else
    ``(d_o - d_d, d_d)``; a mix that does not fit the bounds is refused."""
    if d_d is None:
        d_s = min(d_o, d_smax)
        return d_s, min(d_o - d_s, d_dmax)
    if isinstance(d_d, bool) or not isinstance(d_d, (int, np.integer)) or d_d < 0:
        raise ParameterError(f"topology.d_d: must be an integer >= 0, got {d_d!r}")
    if d_d > d_o:
        raise ParameterError(f"topology.d_d: Skywalk d_d = {d_d} > d_o = {d_o}")
    if d_d > d_dmax:
        raise ParameterError(f"topology.d_d: Skywalk d_d = {d_d} > d_dmax = {d_dmax}")
    if d_o - d_d > d_smax:
        raise ParameterError(f"topology.d_d: Skywalk d_s = d_o - d_d = {d_o - d_d} > "
                             f"d_smax = {d_smax}")
    return d_o - d_d, int(d_d)


def _grid(z: int, c: int) -> tuple[int, int, int, int]:
    """(rows, columns, d_smax, d_dmax) of ``c`` cabinets of ``z`` switches."""
    x = math.isqrt(c - 1) + 1 if c > 1 else 1          # ceil(sqrt(c))
    y = -(-c // x)
    return x, y, -(-(x + y - 2) // z), -(-((x - 1) * (y - 1)) // z)


PAIRING_BYTES = 200
"""Bytes per cabinet link of the cabinet pairing beyond its numpy arrays: the links as
Python tuples and lists, the linked sets and partner lists (an estimate from measurement)."""


def skywalk_size(z: int = 8, c: int = 64, d_i: int = 7, d_o: int = 4, p: int = 8, seed: int = 0,
                 tries: int = 10, r_limit: float = 1.0, d_d: int | None = None) -> TopologySize:
    """``z c`` switches with ``p`` endpoints each, at most ``z c (d_i + d_o) / 2`` links (a
    random pairing may miss some: an upper bound); refuses what :func:`skywalk` refuses
    before building."""
    if d_i > z - 1:
        raise ParameterError(f"topology.d_i: Skywalk d_i = {d_i} > d_imax = z-1 = {z - 1}")
    n_sw = z * c
    check_build(n_sw, n_sw * (d_i + d_o) // 2, "topology.c")
    x, y, d_smax, d_dmax = _grid(z, c)
    if d_o > d_smax + d_dmax:
        raise ParameterError(f"topology.d_o: Skywalk d_o = {d_o} > d_smax + d_dmax = "
                             f"{d_smax} + {d_dmax} on a {x}x{y} cabinet grid")
    _mix(d_o, d_smax, d_dmax, d_d)
    # the intra-cabinet pairing's c x z x z masks, and the Python lists of the cabinet links
    work = 2 * c * z * z + PAIRING_BYTES * (n_sw * d_o // 2)
    return TopologySize(n_sw, n_sw * (d_i + d_o) // 2, n_sw * p, exact=False, work_bytes=work)


skywalk = TOPOLOGIES.register(
    "skywalk", skywalk,
    params=[
        Param("z", int, 8, "switches per cabinet", lo=1),
        Param("c", int, 64, "cabinets (grid ceil(sqrt(c)) rows x ceil(c/rows) columns)", lo=1),
        Param("d_i", int, 7, "intra-cabinet links per switch (<= z-1)", lo=0),
        Param("d_o", int, 4, "inter-cabinet links per switch, straight first (<= d_smax + d_dmax)",
              lo=0),
        Param("p", int, 8, "hosts per switch (002's m)", lo=0),
        Param("seed", int, 0, "first random seed (numpy default_rng)", lo=0),
        Param("tries", int, 10, "seeds tried; the connected instance with most links is kept",
              lo=1),
        Param("r_limit", float, 1.0, "cable bound r: Manhattan distance <= r * l_max (0 < r <= 1)",
              lo=0.0, lo_open=True, hi=1.0),
        Param("d_d", int, None, "diagonal links per switch, the other d_o - d_d straight "
              "(default: straight-first, d_d = min(d_o - d_s, d_dmax))", lo=0),
    ],
    summary="Skywalk: cabinet-aware random topology, straight-first (low-delay switches)",
    reference="002 Sec. II-B..D, III-A",
    size=skywalk_size,
)
