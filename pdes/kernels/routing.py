"""Route computation kernels.

``compute_route`` is called once per packet per router, when the head flit
reaches the front of its input VC.  It returns the local output port; the
output VC is the hop index (000 Sec. IV-D) unless an algorithm says
otherwise.  Algorithms are selected by the integer ids below, which the
routing registry (``models.routing``) maps names to.

Every random choice is drawn from the counter-based generator keyed by the
packet id (source endpoint, sequence number) and the hop, so it is the same
whichever rank routes the packet.
"""
import numpy as np

from models.jit import njit, njit_inline
from pdes.kernels.rng import P_ROUTE, below

ALG_MIN = 0

KERNELS = {"min": ALG_MIN}
"""Routing kernel names (used by models.routing plans) -> kernel ids."""

UNREACHABLE = 255


@njit_inline
def min_port(rg, target, net_lo, net_hi, out_nbr, dist, seed, src, seq, hop):
    """A minimal next-hop port from router ``rg`` towards router ``target``.

    Candidates are the network ports whose neighbour is one step closer;
    one is drawn uniformly (key: packet id, hop).  Returns -1 if ``target``
    is unreachable.
    """
    d = np.int64(dist[target, rg])
    if d == UNREACHABLE or d == 0:
        return -1
    cnt = 0
    for P in range(net_lo, net_hi):
        if np.int64(dist[target, out_nbr[P]]) == d - 1:
            cnt += 1
    if cnt == 0:
        return -1
    j = below(cnt, seed, src, seq, P_ROUTE + 64 * hop) if cnt > 1 else 0
    for P in range(net_lo, net_hi):
        if np.int64(dist[target, out_nbr[P]]) == d - 1:
            if j == 0:
                return P
            j -= 1
    return -1


@njit_inline
def compute_route(alg, rg, dstr, dst, src, seq, hops, port_lo, n_ep_ports, net_hi, ep_first,
                  out_nbr, dist, seed):
    """Output port (local index) and output VC for a head flit at router ``rg``.

    ``port_lo`` is the router's first local port, its endpoint ports are
    ``port_lo .. port_lo + n_ep_ports - 1`` and network ports follow up to
    ``net_hi``.  The packet is ``(src, seq)``, heading to endpoint ``dst`` on
    router ``dstr`` after ``hops`` router-to-router hops.  Returns
    ``(port, vc)``; ``port = -1`` means no route.
    """
    if dstr == rg:
        return port_lo + (dst - ep_first[rg]), 0
    # ALG_MIN (only algorithm so far): hop-index VC
    P = min_port(rg, dstr, port_lo + n_ep_ports, net_hi, out_nbr, dist, seed, src, seq, hops)
    return P, hops
