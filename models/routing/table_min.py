"""One least-weight path per (router, destination router): BookSim2's anynet routing table
(Jiang et al. 2013).

BookSim's anynet network routes every packet by a next-hop table that it
builds from the network file: from every router a shortest-path search over
the link weights (latencies in cycles, 1 when the file gives none), and the
next hop towards a destination router is the first router on the path that
search found. Where several paths weigh the same, its order decides:

* the router settled next is the unsettled one with the least distance, the
  lowest router id among equals;
* a settled router relaxes its neighbours in increasing id, and a neighbour's
  predecessor changes only for a strictly shorter distance, so among equal
  paths the one through the router settled first is kept.

``table_min`` builds the same table (:func:`booksim_table`: a binary heap keyed
by (distance, router id) settles the routers in exactly that order) and
routes every packet on it: one path per (router, destination router), the
same for every packet, whereas ``min`` draws among all fewest-hop next hops.
With equal weights the table's paths are fewest-hop paths; with weights they
are least-weight paths, which may take more hops. Weights are the link
latencies a file carries (``topo.meta["link_latency"]``), one per link both
ways; BookSim gives a weight written on one side only to that direction
alone (the other direction keeps 1), which pdes does not represent. Other
topologies have weight 1 on every link: the table BookSim builds from their
``pdes topo --export anynet`` file without latencies.

VC classes: hop-index (the table's longest path between routers with
endpoints); a BookSim config sets ``routing.vcs = "any"``, BookSim's
discipline. The table is int16, routers x routers, on every rank; more than
2 GiB is refused.
"""
from collections import namedtuple

import numpy as np

from models.core.errors import ParameterError
from models.core.jit import njit, njit_kernel
from models.core.record import F_DSTR, F_HOPS, OK
from models.core.registry import ROUTINGS
from models.core.routing import RoutingKernel, register_kernel
from models.routing import RoutingPlan
from models.routing.paths import eject_port

MEMORY_LIMIT = 2 * 1024 ** 3      # bytes of the next-hop table (int16, R x R)


@njit
def _heap_push(heap, n, key):
    """Push ``key`` on the binary min-heap ``heap[:n]``; returns the new size."""
    i = n
    heap[i] = key
    while i > 0:
        parent = (i - 1) // 2
        if heap[parent] <= heap[i]:
            break
        heap[parent], heap[i] = heap[i], heap[parent]
        i = parent
    return n + 1


@njit
def _heap_pop(heap, n):
    """(smallest key, new size) of the binary min-heap ``heap[:n]`` (``n >= 1``)."""
    top = heap[0]
    n -= 1
    heap[0] = heap[n]
    i = 0
    while True:
        a = 2 * i + 1
        if a >= n:
            break
        b = a + 1
        c = b if b < n and heap[b] < heap[a] else a
        if heap[i] <= heap[c]:
            break
        heap[i], heap[c] = heap[c], heap[i]
        i = c
    return top, n


@njit
def _tables(off, nbr_sorted, port_sorted, w_sorted, T, H):
    """Fill ``T[s, d]`` (network port index of ``s`` towards ``d``, -1 on the diagonal and
    where ``d`` is unreachable) and ``H[s, d]`` (hops of that path) for every source ``s``.
    ``nbr_sorted`` etc.: each router's neighbours in increasing id (first port of a
    neighbour only), their port index and the weight of the link."""
    R = off.shape[0] - 1
    big = np.int64(1) << np.int64(62)
    dist = np.empty(R, np.int64)
    prev = np.empty(R, np.int64)
    done = np.empty(R, np.bool_)
    order = np.empty(R, np.int64)
    heap = np.empty(off[R] + R + 1, np.int64)
    for s in range(R):
        dist[:] = big
        prev[:] = -1
        done[:] = False
        dist[s] = 0
        n = _heap_push(heap, 0, s)              # key = distance * R + router id
        m = 0
        while n > 0:
            key, n = _heap_pop(heap, n)
            u = key % R
            if done[u] or key // R != dist[u]:
                continue
            done[u] = True
            order[m] = u
            m += 1
            for i in range(off[u], off[u + 1]):
                v = nbr_sorted[i]
                if v < 0:
                    continue
                nd = dist[u] + w_sorted[i]
                if nd < dist[v]:
                    dist[v] = nd
                    prev[v] = u
                    n = _heap_push(heap, n, nd * R + v)
        T[s, :] = -1
        H[s, :] = -1
        H[s, s] = 0
        for i in range(1, m):          # settled after their predecessors
            v = order[i]
            p = prev[v]
            H[s, v] = H[s, p] + 1
            if p == s:
                for j in range(off[s], off[s + 1]):
                    if nbr_sorted[j] == v:
                        T[s, v] = port_sorted[j]
                        break
            else:
                T[s, v] = T[s, p]


def link_weights(topo) -> np.ndarray:
    """Weight of every link (order of ``topo.links``): the file's latencies, else 1."""
    lat = topo.meta.get("link_latency")
    if lat is None:
        return np.ones(topo.n_links, dtype=np.int64)
    return np.asarray(lat, dtype=np.int64)


def booksim_table(topo) -> tuple[np.ndarray, np.ndarray]:
    """``(T, H)``: BookSim's anynet next hop of every (router, destination router) as the
    network port index of the router (int16, -1 = none), and the path's hops (int16)."""
    R = topo.n_routers
    if 2 * R * R > MEMORY_LIMIT:
        raise ParameterError(f"routing.algorithm: 'table_min' needs a {R} x {R} next-hop table of "
                             f"{2 * R * R / 1e9:.3g} GB on every rank, more than "
                             f"{MEMORY_LIMIT / 1e9:.3g} GB")
    off = topo.port_offsets.astype(np.int64)
    nbr = topo.port_neighbor.astype(np.int64)
    w = link_weights(topo)[np.asarray(topo.port_link)]
    nbr_sorted = np.empty_like(nbr)
    port_sorted = np.empty_like(nbr)
    w_sorted = np.empty_like(nbr)
    for r in range(R):
        lo, hi = off[r], off[r + 1]
        j = np.argsort(nbr[lo:hi], kind="stable")
        nb = nbr[lo:hi][j]
        first = np.ones(nb.size, dtype=bool)     # one entry per neighbour (BookSim's map)
        first[1:] = nb[1:] != nb[:-1]
        nbr_sorted[lo:hi] = np.where(first, nb, -1)
        port_sorted[lo:hi] = j
        w_sorted[lo:hi] = w[lo:hi][j]
    T = np.empty((R, R), dtype=np.int16)
    H = np.empty((R, R), dtype=np.int16)
    _tables(off, nbr_sorted, port_sorted, w_sorted, T, H)
    return T, H


def table_turns(topo, T) -> np.ndarray:
    """Channel dependencies (channel in, channel out) of the table's paths between routers
    with endpoints: the graph of ``routing.vcs = "any"``'s static check."""
    off = topo.port_offsets.astype(np.int64)
    nbr = topo.port_neighbor.astype(np.int64)
    chan = topo.port_out_channel.astype(np.int64)
    ep = np.nonzero(topo.serving)[0]
    pairs = []
    for d in ep:
        cur = ep[ep != d]
        last = np.full(cur.size, -1, dtype=np.int64)
        while cur.size:
            j = T[cur, d].astype(np.int64)
            ok = j >= 0
            cur, last, j = cur[ok], last[ok], j[ok]
            c = chan[off[cur] + j]
            had = last >= 0
            pairs.append(np.stack([last[had], c[had]], axis=1))
            cur = nbr[off[cur] + j]
            last = c
            go = cur != d
            cur, last = cur[go], last[go]
    if not pairs:
        return np.zeros((0, 2), dtype=np.int64)
    return np.unique(np.concatenate(pairs), axis=0)


def table_min(topo, dist):
    """Plan: BookSim2's anynet next-hop table (:func:`booksim_table`), hop-index classes up to
    its longest path between routers with endpoints."""
    T, H = booksim_table(topo)
    ep = np.nonzero(topo.serving)[0]
    sub = H[np.ix_(ep, ep)]
    if (sub < 0).any():
        raise ParameterError("topology: the network is disconnected (some endpoints cannot reach "
                             "others)")
    longest = int(sub.max()) if ep.size else 0
    return RoutingPlan(kernel="table_min", max_hops=longest, vcs_needed=max(longest, 1), scheme="hop",
                       vc_scheme="hop-index: VC class = number of router-to-router hops taken "
                                 "(longest path of the table)",
                       tables={"next_port": T}, turns=lambda: table_turns(topo, T))


ROUTINGS.register("table_min", table_min, params=[],
                  summary="one least-weight path per (router, destination router): BookSim2 "
                          "anynet's next-hop table, its tie-breaking (lowest router id first)",
                  reference="Jiang et al. 2013 (BookSim2 anynet min)")


# ------------------------------------------------------------------------------ kernel
TableTables = namedtuple("TableTables", ["next_port"])
"""int16 network port index per (router, destination router), -1 = none."""


@njit_kernel
def table_hop(site, eng, ctx, ap, fid):
    """The table's port towards the destination router; class = hops taken."""
    rg, plo, nepk = site.rg, site.plo, site.nepk
    ports, rec = eng.ports, eng.rec
    dr = rec[fid, F_DSTR]
    if dr == rg:
        return OK, eject_port(rg, plo, ports.ep_first, rec, fid), 0
    j = np.int64(ctx.next_port[rg, dr])
    if j < 0:
        return OK, -1, 0
    return OK, plo + nepk + j, rec[fid, F_HOPS]


register_kernel("table_min", RoutingKernel(module=__name__, hop="table_hop", tables=TableTables))
