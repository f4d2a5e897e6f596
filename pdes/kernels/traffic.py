"""Destination of a new packet: a pure function of (seed, source, creation cycle).

Kinds (chosen by the traffic plans of ``models.traffic``):

* ``TR_UNIFORM``    -- uniform over all other endpoints;
* ``TR_TABLE``      -- a fixed destination per source (permutations, shifts,
  bit patterns, worst cases); sources whose entry is -1 do not inject;
* ``TR_TWO_CHOICE`` -- ``table[src]`` or ``table2[src]``, each with
  probability 1/2 (000 Sec. V-B shift traffic);
* ``TR_MIX``        -- with probability ``frac`` uniform over ``set_b``
  (e.g. I/O endpoints), otherwise uniform over ``set_a`` (e.g. compute
  endpoints); the source itself is never drawn when the set has another
  member (004 Sec. 5 blended/hotspot traffic, uniform on a subset);
* ``TR_WEIGHTED``   -- a weighted choice: source ``src`` draws among the
  candidates ``set_a[table[src]:table2[src]]``, whose cumulative integer
  weights are ``set_b[table[src]:table2[src]]`` (BookSim's random patterns,
  ``models.traffic.booksim``; rows may be shared by several sources).
"""
import numpy as np

from models.core.jit import njit_inline
from models.core.rng import P_DEST, P_TRAFFIC_AUX, below, draw53

TR_UNIFORM = 0
TR_TABLE = 1
TR_TWO_CHOICE = 2
TR_MIX = 3
TR_WEIGHTED = 4

KINDS = {"uniform": TR_UNIFORM, "table": TR_TABLE, "two_choice": TR_TWO_CHOICE, "mix": TR_MIX,
         "weighted": TR_WEIGHTED}


@njit_inline
def _uniform_in(members, seed, src, ctime):
    n = members.shape[0]
    if n == 1:
        return members[0]
    # at most one member equals src: draw among the others by skipping it
    k = below(n - 1, seed, src, ctime, P_DEST)
    d = members[k]
    lo = 0      # position of src in the sorted members (binary search)
    hi = n
    while lo < hi:
        mid = (lo + hi) // 2
        if members[mid] < src:
            lo = mid + 1
        else:
            hi = mid
    if lo < n and members[lo] == src:
        if k >= lo:
            d = members[k + 1]
    else:  # src is not a member: draw among all n
        d = members[below(n, seed, src, ctime, P_DEST)]
    return d


@njit_inline
def _weighted_in(lo, hi, cand, cum, seed, src, ctime):
    """Candidate ``i`` of ``cand[lo:hi]`` with probability proportional to its weight
    (``cum[lo:hi]``: the cumulative weights, the last one their total)."""
    k = below(cum[hi - 1], seed, src, ctime, P_DEST)
    while lo < hi - 1:       # the first i with cum[i] > k (binary search)
        mid = (lo + hi - 1) // 2
        if cum[mid] > k:
            hi = mid + 1
        else:
            lo = mid + 1
    return cand[lo]


@njit_inline
def uniform_destination(n_endpoints, seed, src, ctime):
    """``TR_UNIFORM``: uniform over the endpoints other than ``src`` (scalars only, so the
    cycle kernel can call it without the reference counts of the table arguments)."""
    d = below(n_endpoints - 1, seed, src, ctime, P_DEST)
    if d >= src:
        d += 1
    return d


@njit_inline
def destination(kind, table, table2, set_a, set_b, frac_thr, n_endpoints, seed, src, ctime):
    """Destination endpoint of the packet created at ``src`` in cycle ``ctime``."""
    if kind == TR_UNIFORM:
        return uniform_destination(n_endpoints, seed, src, ctime)
    if kind == TR_TABLE:
        return table[src]
    if kind == TR_TWO_CHOICE:
        if draw53(seed, src, ctime, P_TRAFFIC_AUX) < (np.int64(1) << np.int64(52)):
            return table[src]
        return table2[src]
    if kind == TR_WEIGHTED:
        if table[src] < 0:
            return -1        # not a source (of the network after a reroute)
        return _weighted_in(table[src], table2[src], set_a, set_b, seed, src, ctime)
    # TR_MIX
    if set_b.shape[0] > 0 and draw53(seed, src, ctime, P_TRAFFIC_AUX) < frac_thr:
        return _uniform_in(set_b, seed, src, ctime)
    return _uniform_in(set_a, seed, src, ctime)
