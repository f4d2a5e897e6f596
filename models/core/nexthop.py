"""Reading the engine's minimal next-hop tables (built by :mod:`pdes.kernels.nexthop`,
which documents their two kinds): the table kinds of ``prm[PR_NHMIN]`` and the lookup
of a ``ports`` entry that routing kernels inline."""
import numpy as np

from models.core.bits import popcount
from models.core.jit import njit_inline
from models.core.rng import below

NH_NONE = 0     # prm[PR_NHMIN]: no table, the routing scans the distance rows
NH_MASKS = 1    # tab.nh_min holds the bit masks
NH_PORTS = 2    # tab.nh_port, nh_blk, nh_off, nh_cand hold the port table


@njit_inline
def table_port(tab, k, d, multi, seed, src, seq, purpose_draw):
    """Network port index (from 0) of a minimal next hop of local router ``k`` towards
    router ``d`` in the ``ports`` table, -1 if there is none; among several, the
    ``below(count, ...)`` draw of the scan picks one (``purpose_draw`` is its purpose)."""
    e = np.int64(tab.nh_port[k, d])
    if e != multi:
        return e
    w = d >> 6
    bits = tab.nh_blk[k, w, 0] & ((np.uint64(1) << np.uint64(d & 63)) - np.uint64(1))
    i = np.int64(tab.nh_blk[k, w, 1]) + popcount(bits)
    lo = np.int64(tab.nh_off[i])
    cnt = np.int64(tab.nh_off[i + 1]) - lo
    if cnt == 0:
        return -1
    return np.int64(tab.nh_cand[lo + below(cnt, seed, src, seq, purpose_draw)])

