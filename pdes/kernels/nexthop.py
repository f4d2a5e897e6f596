"""Minimal next-hop tables: the network ports of a router that lead one step closer to
a destination router, for routing kernels that would otherwise scan a distance row.

Two kinds, chosen per topology (:func:`table_kind`):

* ``masks`` (every router has at most 32 network ports): ``nh_min[k, d]``, a uint32
  whose bit ``j`` is set when network port ``j`` of local router ``k`` is minimal
  towards router ``d``;
* ``ports`` (any radix): ``nh_port[k, d]``, the index of the minimal network port
  when it is unique, else ``multi`` (the largest value of the entry's type, uint8 for
  up to 255 network ports, uint16 above).  The candidates of a ``multi`` entry are a
  CSR list in port order: its rank among the ``multi`` entries is
  ``nh_blk[k, d >> 6, 1] + popcount(nh_blk[k, d >> 6, 0] & ((1 << (d & 63)) - 1))``
  (per block of 64 destinations: the bit set of its ``multi`` entries and the rank of
  the first), and its ports are ``nh_cand[nh_off[i]:nh_off[i + 1]]`` (none when ``d``
  is unreachable or the router itself).

Either gives the same ports in the same order as the scan of the distance row, so a
random pick among them draws the same port.  The tables need a symmetric distance
table (undirected links): row ``rg`` of it is the distance from router ``rg``.
"""
import numpy as np

from models.core.jit import njit
from models.core.nexthop import NH_MASKS, NH_NONE, NH_PORTS


MASK_PORTS = 32
"""Most network ports per router of the ``masks`` kind (bits of a uint32)."""


def table_kind(max_degree: int) -> tuple[int, type | None]:
    """(kind, entry type) of the table for routers of at most ``max_degree`` network ports."""
    if max_degree <= MASK_PORTS:
        return NH_MASKS, np.uint32
    if max_degree <= 255:
        return NH_PORTS, np.uint8
    if max_degree <= 65535:
        return NH_PORTS, np.uint16
    return NH_NONE, None


def fixed_bytes(kind: int, entry, n_local: int, R: int) -> int:
    """Bytes of a table's part that does not depend on path multiplicity (entries and,
    for ``ports``, the per-block rank words) for ``n_local`` routers and ``R`` destinations."""
    if kind == NH_NONE:
        return 0
    b = n_local * R * np.dtype(entry).itemsize
    if kind == NH_PORTS:
        b += n_local * ((R + 63) // 64) * 16
    return int(b)


@njit
def min_next_hop_masks(router_gid, port_off, n_epp, out_nbr, dist, out):
    """``out[k, d]``: bit ``j`` set when network port ``j`` of local router ``k`` leads to a
    neighbour one step closer to router ``d`` (``dist`` must be symmetric)."""
    R = dist.shape[0]
    for k in range(router_gid.shape[0]):
        rg = router_gid[k]
        for d in range(R):
            out[k, d] = 0
        lo = port_off[k] + n_epp[k]
        for Q in range(lo, port_off[k + 1]):
            bit = np.uint32(1) << np.uint32(Q - lo)
            nb = out_nbr[Q]
            for d in range(R):
                dd = np.int64(dist[rg, d])
                if dd != 255 and dd != 0 and np.int64(dist[nb, d]) == dd - 1:
                    out[k, d] |= bit


@njit
def _row_counts(dist, rg, nbrs, want, cnt, first):
    """``cnt[d]``: network ports (neighbours ``nbrs``, in port order) of router ``rg`` one
    step closer to ``d``; ``first[d]``: the first of them (``len(nbrs)`` if none)."""
    R = dist.shape[0]
    row = dist[rg]
    n = nbrs.shape[0]
    for d in range(R):
        want[d] = row[d] - np.uint8(1)     # 255 - 1 = 254 or 0 - 1 = 255: cleared below
        cnt[d] = 0
        first[d] = n
    for j in range(n - 1, -1, -1):         # last port first: the first match wins
        nrow = dist[nbrs[j]]
        for d in range(R):
            hit = nrow[d] == want[d]
            cnt[d] += np.int32(hit)
            first[d] = j if hit else first[d]
    for d in range(R):
        if row[d] == 0 or row[d] == 255:
            cnt[d] = 0


@njit
def port_table_sizes(router_gid, port_off, n_epp, out_nbr, dist):
    """(entries with more than one minimal port, candidate ports they list) of the part."""
    R = dist.shape[0]
    want = np.empty(R, np.uint8)
    cnt = np.empty(R, np.int32)
    first = np.empty(R, np.int32)
    n_multi = 0
    n_cand = 0
    for k in range(router_gid.shape[0]):
        lo = port_off[k] + n_epp[k]
        _row_counts(dist, router_gid[k], out_nbr[lo:port_off[k + 1]], want, cnt, first)
        for d in range(R):
            if cnt[d] != 1:
                n_multi += 1
                n_cand += cnt[d]
    return n_multi, n_cand


@njit
def build_port_table(router_gid, port_off, n_epp, out_nbr, dist, multi, ent, blk, off, cand):
    """Fill the ``ports`` table of the part (sizes from :func:`port_table_sizes`)."""
    R = dist.shape[0]
    want = np.empty(R, np.uint8)
    cnt = np.empty(R, np.int32)
    first = np.empty(R, np.int32)
    mlist = np.empty(R, np.int64)
    pos = np.empty(R, np.int64)
    i = 0            # multi entries so far (all routers)
    c = 0            # candidates so far
    off[0] = 0
    for k in range(router_gid.shape[0]):
        rg = router_gid[k]
        lo = port_off[k] + n_epp[k]
        nbrs = out_nbr[lo:port_off[k + 1]]
        _row_counts(dist, rg, nbrs, want, cnt, first)
        m = 0
        for w in range(blk.shape[1]):
            blk[k, w, 0] = 0
            blk[k, w, 1] = i
            for d in range(w * 64, min(R, w * 64 + 64)):
                if cnt[d] == 1:
                    ent[k, d] = first[d]
                else:
                    ent[k, d] = multi
                    blk[k, w, 0] |= np.uint64(1) << np.uint64(d - w * 64)
                    mlist[m] = d
                    pos[m] = c
                    c += cnt[d]
                    i += 1
                    off[i] = c
                    m += 1
        # the candidates of the multi entries, in port order
        row = dist[rg]
        for j in range(nbrs.shape[0]):
            nrow = dist[nbrs[j]]
            for q in range(m):
                d = mlist[q]
                if row[d] != 0 and row[d] != 255 and nrow[d] == row[d] - np.uint8(1):
                    cand[pos[q]] = j
                    pos[q] += 1
