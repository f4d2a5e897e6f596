"""Router -> rank maps built from rack groups, cut links and lookahead.

:func:`assign` is a pure function (no MPI): the same topology, latencies,
rank count and strategy give the same owner array on every rank.
:func:`report` describes a partition: routers/endpoints per rank, cut
links, lookahead (minimum latency over cut links) and imbalance.

Strategies (``run.partition``):

* ``racks`` (default) -- whole racks (topology groups) packed onto ranks in
  rack order, contiguous, balancing the work weight ``routers + endpoints``.
  With more ranks than racks, or when whole racks cannot be balanced within
  ``max_imbalance`` (13 Slim Fly racks on 2 ranks give 7:6), the racks are
  split into router ranges of equal weight (rack order kept), and the report
  shows the (smaller) lookahead of the now intra-rack cut links: ranks wait
  for the slowest one every window, so balance matters more than lookahead
  once packing and unpacking cost per item rather than per window.
* ``block`` -- contiguous router id ranges of near-equal weight (baseline).
* ``metis`` -- METIS k-way partition of the router graph (pymetis), vertex
  weight ``1 + endpoints``, edge weight favouring cuts on long (high
  latency) links, which keeps the lookahead large.
"""
from __future__ import annotations

import numpy as np

from models.core.errors import ParameterError

STRATEGIES = ("racks", "block", "metis")


def _weights(topo) -> np.ndarray:
    return 1 + topo.endpoints.astype(np.int64)


def _split_sequence(weights: np.ndarray, nparts: int) -> np.ndarray:
    """Part of each item when a weighted sequence is cut into ``nparts`` contiguous runs.

    Cut points are where the cumulative weight crosses ``k * total / nparts``
    (pure integer arithmetic); every part gets at least one item.
    """
    n = weights.size
    if nparts >= n:
        return np.arange(n, dtype=np.int32)
    csum = np.cumsum(weights)
    total = int(csum[-1])
    # item i goes to part floor(nparts * (csum[i] - w[i]/2) / total), computed in integers
    mid2 = 2 * csum - weights
    part = (nparts * mid2) // (2 * total)
    part = np.minimum(part, nparts - 1)
    # make parts non-empty and non-decreasing: force each part to own >= 1 item
    part = np.maximum.accumulate(part)
    idx = np.arange(n)
    part = np.maximum(part, idx - (n - nparts))   # leave room for the remaining parts
    part = np.minimum(part, idx)                  # part k starts no earlier than item k
    part = np.minimum.accumulate(part - idx) + idx  # no part skipped (steps of at most 1)
    return part.astype(np.int32)


def assign(topo, layout_latency=None, nranks: int = 1, strategy: str = "racks",
           seed: int = 0, max_imbalance: float = 1.05) -> np.ndarray:
    """Owner rank of each router (int32 array of length ``n_routers``)."""
    nranks = int(nranks)
    if nranks < 1:
        raise ParameterError(f"run.ranks: need at least one rank (got {nranks})")
    R = topo.n_routers
    if nranks > R:
        raise ParameterError(f"run.partition: {nranks} ranks but only {R} routers; "
                             f"use at most {R} ranks")
    if nranks == 1:
        return np.zeros(R, dtype=np.int32)
    w = _weights(topo)
    if strategy == "block":
        return _split_sequence(w, nranks)
    if strategy == "racks":
        groups = topo.group.astype(np.int64)
        order = np.argsort(groups, kind="stable")        # routers rack by rack, id order inside
        gid, start = np.unique(groups[order], return_index=True)
        G = gid.size
        if nranks <= G:
            gw = np.add.reduceat(w[order], start)
            gpart = _split_sequence(gw, nranks)
            work = np.bincount(gpart, weights=gw, minlength=nranks)
            if work.max() * nranks <= max_imbalance * work.sum():
                owner = np.empty(R, dtype=np.int32)
                owner[order] = np.repeat(gpart, np.diff(np.append(start, R)))
                return owner
        # more ranks than racks, or whole racks too unbalanced: split racks into
        # router ranges (rack order kept)
        owner = np.empty(R, dtype=np.int32)
        owner[order] = _split_sequence(w[order], nranks)
        return owner
    if strategy == "metis":
        return _metis(topo, layout_latency, nranks, seed)
    raise ParameterError(f"run.partition: unknown strategy '{strategy}' (known: {', '.join(STRATEGIES)})")


def _metis(topo, latency, nranks, seed):
    try:
        import pymetis
    except ImportError:  # pragma: no cover - dependency of the package
        raise ParameterError("run.partition: 'metis' needs the pymetis package") from None
    lat = np.ones(topo.n_links, np.int64) if latency is None else np.asarray(latency, np.int64)
    # cheap to cut: long links. METIS minimises the cut weight, so short links weigh more.
    wlink = (1 + lat.max() - lat).astype(np.int64)
    ew = wlink[topo.port_link]
    opts = pymetis.Options(seed=int(seed), contig=0)
    adj = pymetis.CSRAdjacency(adj_starts=topo.port_offsets.astype(np.int64),
                               adjacent=topo.port_neighbor.astype(np.int64))
    _, parts = pymetis.part_graph(nranks, adjacency=adj, vweights=_weights(topo), eweights=ew,
                                  options=opts)
    owner = np.asarray(parts, dtype=np.int32)
    used = np.unique(owner)
    if used.size != nranks:   # METIS may leave a part empty on tiny graphs
        raise ParameterError(f"run.partition: METIS produced {used.size} non-empty parts for "
                             f"{nranks} ranks; use 'racks' or fewer ranks")
    return owner


def report(topo, owner, latency) -> dict:
    """Routers/endpoints per rank, cut links, lookahead and imbalance of a partition."""
    owner = np.asarray(owner)
    n = int(owner.max()) + 1
    routers = np.bincount(owner, minlength=n)
    endpoints = np.bincount(owner, weights=topo.endpoints, minlength=n).astype(np.int64)
    u, v = topo.links[:, 0], topo.links[:, 1]
    cut = owner[u] != owner[v]
    lat = np.asarray(latency, dtype=np.int64)
    cut_per_rank = np.bincount(owner[u][cut], minlength=n) + np.bincount(owner[v][cut], minlength=n)
    work = routers + endpoints
    groups_split = 0
    if n > 1:
        g = topo.group
        key = np.unique(np.stack([g, owner], axis=1), axis=0)
        groups_split = int(np.count_nonzero(np.bincount(key[:, 0]) > 1))
    return {
        "ranks": n,
        "routers_per_rank": routers.astype(np.int64),
        "endpoints_per_rank": endpoints,
        "cut_links_per_rank": cut_per_rank.astype(np.int64),
        "cut_links": int(cut.sum()),
        "cut_fraction": float(cut.mean()) if cut.size else 0.0,
        "lookahead": int(lat[cut].min()) if cut.any() else 0,
        "min_link_latency": int(lat.min()) if lat.size else 0,
        "imbalance": float(work.max() / work.mean()) if n else 1.0,
        "groups_split": groups_split,
    }
