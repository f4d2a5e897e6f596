"""Structural metrics of a router graph: hop distances, path counts, Moore bound.

Everything is computed with breadth-first searches in compiled kernels (one
BFS per source router over the CSR arrays ``topo.port_offsets`` /
``topo.port_neighbor``).  Sources are split into chunks that run on a pool of
threads (the kernels release the GIL); every result is written to a slot
indexed by the source, so the answer never depends on the thread count.

Definitions (ordered pairs; a "pair" never pairs a router with itself):

* ``distance_rows`` / ``distance_matrix``: hop distance between routers as
  ``uint8``, ``255`` = unreachable.  They are the engine's routing tables.
* ``diameter``: largest distance over connected pairs (``None`` when the
  graph is disconnected).
* ``avg_distance``: mean distance over connected pairs of distinct routers.
* ``endpoint_avg_distance``: mean router distance over ordered pairs of
  *distinct endpoints* (pair ``(a, b)`` weighs as 1; two endpoints of the same
  router are at distance 0 and are included).  This is the mean hop count of
  uniform random traffic that never sends to itself:
  ``sum_{s,v} p[s] p[v] d(s,v) / (E (E - 1))``.
* ``min_paths``: number of shortest (minimal) paths between two routers;
  ``min``, ``mean``, ``max`` over connected pairs and ``frac_multi``, the
  fraction of pairs with more than one minimal path.
* ``moore_bound``: ``1 + k' sum_{i<D} (k'-1)^i`` for the largest network
  radix ``k'`` and the diameter ``D``; ``moore_ratio = routers / moore_bound``
  (direct topologies only, i.e. every router has endpoints; 000 Sec. II-A).

With ``sample=N`` the statistics are taken over ``N`` random source routers
(to all destinations); the diameter is then a lower bound.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from models.core.errors import ParameterError
from models.core.jit import njit

UNREACHABLE = 255
"""Value of :func:`distance_rows` for a router that cannot be reached."""

MAX_EXACT_ROUTERS = 20000
"""Above this many routers :func:`structure_report` needs ``sample``."""


def check_exact(n_routers: int, sample: int | None) -> None:
    """Refuse all-pairs metrics (no ``sample``, or one of at least every router) of more than
    :data:`MAX_EXACT_ROUTERS` routers; callers that know the count from the parameters call
    it before building."""
    if (sample is None or sample >= n_routers) and n_routers > MAX_EXACT_ROUTERS:
        raise ParameterError(
            f"{n_routers} routers: exact all-pairs metrics are limited to {MAX_EXACT_ROUTERS} "
            "routers; give a number of sample source routers (--sample N)")


def sample_sources(candidates, n_routers: int, sample: int | None, seed: int):
    """(source routers, number sampled or None) of an analysis over pairs of ``candidates``
    (sorted router ids): all of them, or with ``sample`` below their number that many drawn
    with ``default_rng(seed)`` (sorted).  Refuses a bad ``sample`` (naming ``--sample``) and
    all pairs of more than :data:`MAX_EXACT_ROUTERS` routers (:func:`check_exact`)."""
    cand = np.asarray(candidates, dtype=np.int64)
    if sample is not None:
        if isinstance(sample, bool) or int(sample) != sample or sample < 1:
            raise ParameterError(f"--sample: must be an integer >= 1, got {sample!r}")
        sample = int(sample)
    if sample is not None and sample < cand.size:
        rng = np.random.default_rng(seed)
        return np.sort(rng.choice(cand, size=sample, replace=False)), sample
    check_exact(n_routers, sample)
    return cand, None


# =========================================================================== kernels
@njit
def _bfs_rows_kernel(offsets, nbr, sources, out):
    """Hop distances from each ``sources[i]`` into ``out[i]`` (uint8, 255 = unreachable).

    Stops a search as soon as every router is reached.  Returns 1 if some
    distance would be >= 255 (the row is then incomplete), else 0.
    """
    n = offsets.shape[0] - 1
    queue = np.empty(max(n, 1), dtype=np.int32)
    overflow = 0
    for i in range(sources.shape[0]):
        row = out[i]
        for v in range(n):
            row[v] = 255
        s = sources[i]
        row[s] = 0
        queue[0] = s
        head = 0
        tail = 1
        while head < tail and tail < n:
            u = queue[head]
            head += 1
            dn = np.int64(row[u]) + 1
            for k in range(offsets[u], offsets[u + 1]):
                v = nbr[k]
                if row[v] == 255:
                    if dn >= 255:
                        overflow = 1
                        break
                    row[v] = dn
                    queue[tail] = v
                    tail += 1
    return overflow


# columns of the per-source statistics of _bfs_stats_kernel: int64 ``ist`` and float64 ``fst``
ST_ECC, ST_NREACH, ST_WREACH, ST_SUMD, ST_SUMWD, ST_NMULTI = range(6)
SG_MIN, SG_MAX, SG_SUM = range(3)


@njit
def _bfs_stats_kernel(offsets, nbr, weight, sources, ist, fst):
    """Per-source distance and minimal-path statistics (one BFS per source).

    For source ``s = sources[i]`` writes into row ``i`` of ``ist``:
    eccentricity ``ST_ECC``, routers reached ``ST_NREACH`` (incl. s),
    ``ST_WREACH = sum weight[v]`` over reached v (incl. s),
    ``ST_SUMD = sum d(s,v)``, ``ST_SUMWD = sum weight[v] d(s,v)`` and the
    count of reached ``v != s`` with more than one minimal path
    ``ST_NMULTI``; into row ``i`` of ``fst``, over reached ``v != s``, the
    min/max/sum of the number of minimal paths (``SG_MIN``, ``SG_MAX``,
    ``SG_SUM``).  The search skips expanding the last BFS level once every
    router is reached (it cannot change any count).
    """
    n = offsets.shape[0] - 1
    dist = np.empty(max(n, 1), dtype=np.int32)
    sigma = np.empty(max(n, 1), dtype=np.float64)
    queue = np.empty(max(n, 1), dtype=np.int32)
    for i in range(sources.shape[0]):
        for v in range(n):
            dist[v] = -1
            sigma[v] = 0.0
        s = sources[i]
        dist[s] = 0
        sigma[s] = 1.0
        queue[0] = s
        head = 0
        tail = 1
        while head < tail:
            u = queue[head]
            du = dist[u]
            if tail == n and du == dist[queue[tail - 1]]:
                break
            head += 1
            su = sigma[u]
            for k in range(offsets[u], offsets[u + 1]):
                v = nbr[k]
                dv = dist[v]
                if dv < 0:
                    dist[v] = du + 1
                    sigma[v] = su
                    queue[tail] = v
                    tail += 1
                elif dv == du + 1:
                    sigma[v] += su
        sd = np.int64(0)
        swd = np.int64(0)
        wr = np.int64(weight[s])
        mn = np.inf
        mx = 0.0
        ss = 0.0
        nm = np.int64(0)
        for j in range(1, tail):
            v = queue[j]
            d = np.int64(dist[v])
            sd += d
            swd += np.int64(weight[v]) * d
            wr += weight[v]
            g = sigma[v]
            ss += g
            if g < mn:
                mn = g
            if g > mx:
                mx = g
            if g > 1.0:
                nm += 1
        ist[i, ST_ECC] = dist[queue[tail - 1]]
        ist[i, ST_NREACH] = tail
        ist[i, ST_WREACH] = wr
        ist[i, ST_SUMD] = sd
        ist[i, ST_SUMWD] = swd
        ist[i, ST_NMULTI] = nm
        fst[i, SG_MIN] = mn if tail > 1 else 0.0
        fst[i, SG_MAX] = mx
        fst[i, SG_SUM] = ss


# =========================================================================== helpers
def _csr(topo):
    offsets = np.ascontiguousarray(topo.port_offsets, dtype=np.int64)
    nbr = np.ascontiguousarray(topo.port_neighbor, dtype=np.int32)
    return offsets, nbr


def _threads(threads) -> int:
    if threads is None:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # pragma: no cover - not Linux
            return max(1, os.cpu_count() or 1)
    return max(1, int(threads))


def _run_chunks(fn, n_items: int, threads) -> list:
    """Call ``fn(i0, i1)`` on chunks covering ``range(n_items)``; results in chunk order."""
    nt = _threads(threads)
    if n_items == 0:
        return []
    if nt == 1 or n_items < 4:
        return [fn(0, n_items)]
    size = max(1, -(-n_items // (nt * 8)))
    bounds = [(i, min(i + size, n_items)) for i in range(0, n_items, size)]
    # compile (or load from cache) on the calling thread before fanning out
    first = fn(*bounds[0])
    with ThreadPoolExecutor(max_workers=nt) as pool:
        rest = list(pool.map(lambda b: fn(*b), bounds[1:]))
    return [first, *rest]


def _sources(topo, sources) -> np.ndarray:
    src = np.ascontiguousarray(np.asarray(sources, dtype=np.int64).ravel())
    if src.size and (src.min() < 0 or src.max() >= topo.n_routers):
        raise ParameterError(f"sources: router ids must be in 0..{topo.n_routers - 1}")
    return src


# =========================================================================== distances
def distance_rows(topo, sources, threads: int | None = None) -> np.ndarray:
    """Hop distances from each router in ``sources`` to every router.

    Parameters
    ----------
    topo : Topology
    sources : array_like of int
        Source router ids.
    threads : int, optional
        Worker threads (default: the CPUs available to the process).

    Returns
    -------
    numpy.ndarray
        ``uint8`` array of shape ``(len(sources), n_routers)``; row ``i`` holds
        the distances from ``sources[i]``; :data:`UNREACHABLE` (255) where no
        path exists.

    Raises
    ------
    ParameterError
        If a distance does not fit (a shortest path of 255 hops or more).
    """
    offsets, nbr = _csr(topo)
    src = _sources(topo, sources)
    out = np.empty((src.size, topo.n_routers), dtype=np.uint8)

    def work(i0, i1):
        return _bfs_rows_kernel(offsets, nbr, src[i0:i1], out[i0:i1])

    if any(_run_chunks(work, src.size, threads)):
        raise ParameterError(f"topology '{topo.name}': a shortest path has 255 hops or more, "
                             "which does not fit the uint8 distance table")
    return out


def distance_matrix(topo, threads: int | None = None) -> np.ndarray:
    """All-pairs hop distances, ``uint8`` ``(n_routers, n_routers)`` (see :func:`distance_rows`)."""
    return distance_rows(topo, np.arange(topo.n_routers, dtype=np.int64), threads=threads)


# =========================================================================== statistics
BLOCK_BYTES = 1 << 24
"""Temporary bytes of one block of rows in :func:`submatrix_max` and :func:`is_symmetric`."""


def submatrix_max(mat: np.ndarray, idx) -> int:
    """``mat[np.ix_(idx, idx)].max()`` (0 when ``idx`` is empty), taken in blocks of rows so that
    no copy of the submatrix is made (a distance table can be hundreds of MB)."""
    idx = np.asarray(idx, dtype=np.int64)
    if idx.size == 0:
        return 0
    full = idx.size == mat.shape[1] and bool(np.array_equal(idx, np.arange(mat.shape[1])))
    step = max(1, BLOCK_BYTES // max(1, idx.size * mat.itemsize))
    best = 0
    for lo in range(0, idx.size, step):
        rows = mat[idx[lo:lo + step]]
        best = max(best, int((rows if full else rows[:, idx]).max()))
    return best


def is_symmetric(mat: np.ndarray) -> bool:
    """``np.array_equal(mat, mat.T)`` for a square matrix, in blocks of rows (no full temporary)."""
    n = mat.shape[0]
    if mat.ndim != 2 or mat.shape[1] != n:
        return False
    step = max(1, BLOCK_BYTES // max(1, n * mat.itemsize))
    return all(np.array_equal(mat[lo:lo + step], mat[:, lo:lo + step].T) for lo in range(0, n, step))


def degree_histogram(topo) -> dict[int, int]:
    """``{network degree: number of routers}`` for the degrees that occur."""
    counts = np.bincount(topo.degree.astype(np.int64)) if topo.n_routers else np.zeros(0, np.int64)
    return {int(d): int(c) for d, c in enumerate(counts) if c}


def moore_bound(k: int, diameter: int) -> int:
    """Moore bound ``1 + k sum_{i<D} (k-1)^i``: most routers of degree ``k`` within diameter ``D``."""
    k, d = int(k), int(diameter)
    if d <= 0:
        return 1
    if k == 2:                    # the geometric sum's ratio k - 1 is 1
        return 1 + 2 * d
    return 1 + k * (((k - 1) ** d - 1) // (k - 2))


def path_statistics(topo, sources=None, threads: int | None = None) -> dict:
    """Distance and minimal-path statistics from ``sources`` (default: every router).

    Returns a dict with ``connected``, ``diameter``, ``avg_distance``,
    ``endpoint_avg_distance`` and ``min_paths`` (see the module docstring).
    ``connected`` and ``diameter`` only see the given sources.
    """
    offsets, nbr = _csr(topo)
    src = _sources(topo, np.arange(topo.n_routers) if sources is None else sources)
    S = src.size
    weight = np.ascontiguousarray(topo.endpoints, dtype=np.int64)
    ist = np.zeros((S, 6), np.int64)
    fst = np.zeros((S, 3), np.float64)

    def work(i0, i1):
        _bfs_stats_kernel(offsets, nbr, weight, src[i0:i1], ist[i0:i1], fst[i0:i1])

    _run_chunks(work, S, threads)
    ic, fc = np.ascontiguousarray(ist.T), np.ascontiguousarray(fst.T)   # contiguous columns
    ecc, nreach, wreach = ic[ST_ECC], ic[ST_NREACH], ic[ST_WREACH]
    sumd, sumwd, nmulti = ic[ST_SUMD], ic[ST_SUMWD], ic[ST_NMULTI]
    sig_min, sig_max, sig_sum = fc[SG_MIN], fc[SG_MAX], fc[SG_SUM]
    pairs = int((nreach - 1).sum())
    connected = bool(np.all(nreach == topo.n_routers))
    ws = weight[src]
    # ordered pairs of distinct endpoints whose routers are connected
    epairs = int((ws * wreach).sum() - ws.sum())
    has = nreach > 1
    return {
        "connected": connected,
        "diameter": int(ecc.max()) if connected and S else None,
        "eccentricity_max": int(ecc.max()) if S else 0,
        "avg_distance": float(sumd.sum() / pairs) if pairs else 0.0,
        "endpoint_avg_distance": float((ws * sumwd).sum() / epairs) if epairs > 0 else None,
        "min_paths": {
            "min": float(sig_min[has].min()) if has.any() else 0.0,
            "mean": float(sig_sum.sum() / pairs) if pairs else 0.0,
            "max": float(sig_max.max()) if S else 0.0,
            "frac_multi": float(nmulti.sum() / pairs) if pairs else 0.0,
        },
        "pairs": pairs,
    }


def structure_report(topo, layout=None, sample: int | None = None, seed: int = 0,
                     threads: int | None = None) -> dict:
    """Sizes, degrees, distances, minimal paths, Moore ratio and cable totals of ``topo``.

    Parameters
    ----------
    topo : Topology
    layout : Layout, optional
        Adds ``cable_m_total``, ``cables`` and ``layout`` (see
        :func:`models.layout.cable_totals`).
    sample : int, optional
        Use ``sample`` random source routers (drawn with ``seed``) instead of
        all of them; the report then has ``"sampled": sample``.  Required above
        :data:`MAX_EXACT_ROUTERS` routers.
    seed : int
        Seed of the source sample.
    threads : int, optional
        Worker threads for the searches.

    Raises
    ------
    ParameterError
        ``sample`` < 1, or more than :data:`MAX_EXACT_ROUTERS` routers without ``sample``.
    """
    R = topo.n_routers
    sampled = None
    if sample is not None:
        if isinstance(sample, bool) or int(sample) != sample or sample < 1:
            raise ParameterError(f"sample: must be an integer >= 1, got {sample!r}")
        sample = int(sample)
    if sample is not None and sample < R:
        rng = np.random.default_rng(seed)
        sources = np.sort(rng.choice(R, size=sample, replace=False))
        sampled = sample
    else:
        check_exact(R, sample)
        sources = np.arange(R)
    out = topo.summary()
    stats = path_statistics(topo, sources, threads=threads)
    out["sampled"] = sampled
    out["connected"] = stats["connected"]
    out["diameter"] = stats["diameter"]
    out["avg_distance"] = stats["avg_distance"]
    out["endpoint_avg_distance"] = stats["endpoint_avg_distance"]
    out["degree_histogram"] = {str(k): v for k, v in degree_histogram(topo).items()}
    if topo.is_direct and stats["diameter"] is not None and R:
        k = int(topo.degree.max())
        mb = moore_bound(k, stats["diameter"])
        out["moore_bound"] = mb
        out["moore_ratio"] = R / mb
    else:
        out["moore_bound"] = None
        out["moore_ratio"] = None
    out["min_paths"] = stats["min_paths"]
    if layout is not None:
        out["cable_m_total"] = layout.totals["cable_m_total"]
        out["cables"] = layout.totals["cables"]
        geo = layout.summary()
        out["layout"] = {k: v for k, v in geo.items() if k not in layout.totals}
    return out


@njit
def order_by_distance(row, order, cnt):
    """Write into ``order`` the routers sorted by ``row[x]`` (a distance row, uint8 with
    255 = unreachable), stable, nearest first; ``cnt`` is int64 scratch of >= 257 entries."""
    n = row.shape[0]
    for i in range(257):
        cnt[i] = 0
    for x in range(n):
        cnt[np.int64(row[x]) + 1] += 1
    for i in range(1, 257):
        cnt[i] += cnt[i - 1]
    for x in range(n):
        k = np.int64(row[x])
        order[cnt[k]] = x
        cnt[k] += 1
