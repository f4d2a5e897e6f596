"""Shortest-path multiplicity per router pair, split into intra- and inter-group pairs.

For every ordered pair of distinct routers ``(s, t)`` connected by a path,
``count(s, t)`` is the number of shortest (fewest-hop) paths from ``s`` to
``t``, counted exactly in 64-bit integers by one breadth-first search per
source (``sigma[v] = sum of sigma[u]`` over the neighbours ``u`` one hop
closer to ``s``).  The count saturates at :data:`CAP` (``2**62``): a larger
count is reported as ``CAP`` and the pair is counted in ``saturated_pairs``
(large hypercubes and tori get there: a hypercube pair at distance ``d`` has
``d!`` shortest paths).

Reported over all pairs (``all``) and split by the topology's groups
(``topo.group``: Slim Fly racks, Dragonfly groups, Galaxyfly supernodes,
Skywalk cabinets; ``group_kind`` says which): ``intra_group`` are the pairs
whose routers share a group, ``inter_group`` the others.  Topologies with
clusters (Galaxyfly: ``meta["cluster"]``) are also split by cluster
(``intra_cluster``, ``inter_cluster``), the split of 004 Table 4.  For each
part: ``pairs``, ``multi`` (pairs with more than one shortest path),
``frac_multi`` = multi / pairs of the part, ``share_of_all`` = multi / all
pairs (004 Table 4's columns: the intra- and inter-cluster SP add up to SP),
``mean`` and ``max`` of the count (``mean`` over capped counts).
``histogram``: ``counts[i]`` pairs have a count in ``[edges[i], edges[i+1])``
(``edges`` 1, 2, ..., 16, then powers of two up to ``CAP``, then ``CAP + 1``).

With ``sample`` the sources are ``sample`` random routers drawn with
``default_rng(seed)`` as in the ``paths`` section (the same draw), to every
router.  Cost: one BFS per source, ``O(S * L)``, rows of
:data:`BLOCK_ENTRIES` (source, router) entries at a time.
"""
from __future__ import annotations

import numpy as np

from models.core.jit import njit
from ..metrics import _csr, _run_chunks, sample_sources

__all__ = ["CAP", "HIST_EDGES", "path_count_rows", "shortest_paths_report",
           "shortest_paths_work"]

CAP = np.int64(1) << np.int64(62)
"""Counts saturate here."""
HIST_EDGES = np.array([*range(1, 17), *[1 << b for b in range(5, 63)], (1 << 62) + 1], np.int64)
"""Bin edges of the count histogram."""
BLOCK_ENTRIES = 1 << 21
"""(source, router) entries of one block of rows."""


@njit
def _count_kernel(off, nbr, sources, cap, dist, sigma):
    """Per source ``sources[i]``: hop distance (``-1`` unreachable) and number of shortest
    paths (0 unreachable, saturating at ``cap``) into row ``i`` of ``dist`` and ``sigma``."""
    n = off.shape[0] - 1
    queue = np.empty(max(n, 1), dtype=np.int32)
    for i in range(sources.shape[0]):
        d = dist[i]
        g = sigma[i]
        for v in range(n):
            d[v] = -1
            g[v] = 0
        s = sources[i]
        d[s] = 0
        g[s] = 1
        queue[0] = s
        head = 0
        tail = 1
        while head < tail:
            u = queue[head]
            head += 1
            du = d[u]
            gu = g[u]
            for k in range(off[u], off[u + 1]):
                v = nbr[k]
                dv = d[v]
                if dv < 0:
                    d[v] = du + 1
                    g[v] = gu
                    queue[tail] = v
                    tail += 1
                elif dv == du + 1:
                    g[v] = cap if g[v] >= cap - gu else g[v] + gu   # never above cap


def path_count_rows(topo, sources, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(hop distances int32, shortest-path counts int64) from each of ``sources`` to every
    router, shape ``(len(sources), R)``; unreachable: distance ``-1``, count 0."""
    offsets, nbr = _csr(topo)
    src = np.ascontiguousarray(np.asarray(sources, dtype=np.int64).ravel())
    R = topo.n_routers
    dist = np.empty((src.size, R), np.int32)
    sigma = np.empty((src.size, R), np.int64)

    def work(i0, i1):
        _count_kernel(offsets, nbr, src[i0:i1], CAP, dist[i0:i1], sigma[i0:i1])

    _run_chunks(work, src.size, threads)
    return dist, sigma


def shortest_paths_work(topo, sample: int | None = None) -> dict:
    """What :func:`shortest_paths_report` will do: ``sources`` (every router, or ``sample``),
    ``searches`` (one BFS per source) and ``source_link_steps`` = searches x links."""
    S = topo.n_routers if sample is None else min(int(sample), topo.n_routers)
    return {"sources": S, "routers": topo.n_routers, "searches": S,
            "source_link_steps": S * int(topo.n_links)}


class _Part:
    def __init__(self):
        self.pairs = self.multi = self.max = 0
        self.sum = 0.0

    def add(self, c):
        if c.size:
            self.pairs += int(c.size)
            self.multi += int((c > 1).sum())
            self.max = max(self.max, int(c.max()))
            self.sum += float(c.astype(np.float64).sum())

    def result(self, total: int) -> dict:
        return {"pairs": self.pairs, "multi": self.multi,
                "frac_multi": self.multi / self.pairs if self.pairs else None,
                "share_of_all": self.multi / total if total else None,
                "mean": self.sum / self.pairs if self.pairs else None,
                "max": self.max if self.pairs else None}


def shortest_paths_report(topo, sample: int | None = None, seed: int = 0,
                          threads: int | None = None) -> dict:
    """The ``shortest-paths`` section (see the module docstring)."""
    src, sampled = sample_sources(np.arange(topo.n_routers), topo.n_routers, sample, seed)
    R = topo.n_routers
    group = np.asarray(topo.group, dtype=np.int64)
    cluster = topo.meta.get("cluster")
    cluster = np.asarray(cluster, dtype=np.int64) if cluster is not None else None
    parts = {k: _Part() for k in ("all", "intra_group", "inter_group")}
    if cluster is not None:
        parts.update(intra_cluster=_Part(), inter_cluster=_Part())
    hist = np.zeros(HIST_EDGES.size - 1, np.int64)
    unreachable = saturated = 0
    block = max(1, min(max(src.size, 1), BLOCK_ENTRIES // max(R, 1)))
    for i0 in range(0, src.size, block):
        s = src[i0:i0 + block]
        dist, sigma = path_count_rows(topo, s, threads)
        keep = dist > 0
        unreachable += int((dist < 0).sum())
        c = sigma[keep]
        saturated += int((c >= CAP).sum())
        parts["all"].add(c)
        same = (group[s][:, None] == group[None, :])[keep]
        parts["intra_group"].add(c[same])
        parts["inter_group"].add(c[~same])
        if cluster is not None:
            same = (cluster[s][:, None] == cluster[None, :])[keep]
            parts["intra_cluster"].add(c[same])
            parts["inter_cluster"].add(c[~same])
        hist += np.bincount(np.searchsorted(HIST_EDGES, c, side="right") - 1,
                            minlength=hist.size)[:hist.size]
    total = parts["all"].pairs
    last = int(np.nonzero(hist)[0][-1]) + 1 if hist.any() else 0
    return {
        "sampled": sampled,
        "sources": int(src.size),
        "work": shortest_paths_work(topo, sampled),
        "group_kind": topo.group_kind,
        "pairs": total,
        "unreachable_pairs": unreachable,
        "saturated_pairs": saturated,
        "cap": int(CAP),
        **{k: p.result(total) for k, p in parts.items()},
        "histogram": {"edges": [int(v) for v in HIST_EDGES[:last + 1]],
                      "counts": [int(v) for v in hist[:last]]},
    }
