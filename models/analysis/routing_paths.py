"""The paths a table-driven routing gives a router pair: the one path extraction that the
``throughput`` (restricted LPs) and ``path-sets`` sections share.

A *path set* is described by next-hop tables ``tabs`` (``(K, R, R)`` neighbour indices into
the CSR port arrays, ``tabs[k][u, d]`` the next hop from router ``u`` towards router ``d``,
-1 = none) and a flag ``with_min``.  The paths of ``(s, d)`` are, in this order and each
distinct path once:

* with ``with_min``: every shortest path, enumerated depth first with the neighbours in port
  order and capped at ``cap`` paths (the routers' minimal routing, layer 0 of the layered
  routings, spreads its packets over all of them);
* the path of every table ``k`` whose walk from ``s`` by ``tabs[k][., d]`` reaches ``d``
  (a table with ``tabs[k][s, d] < 0``, or whose walk stops at a -1 or runs for more than
  ``R`` hops, gives none).

Paths are tuples of directed channel ids (``topo.port_out_channel``).
"""
from __future__ import annotations

import numpy as np

from models.core.jit import njit

UNREACHABLE = 255
"""Distance of unreachable router pairs in the uint8 distance matrix."""


def csr(topo):
    """``(port_offsets, port_neighbor, port_out_channel)`` of ``topo`` as int64 arrays."""
    return (np.asarray(topo.port_offsets, dtype=np.int64),
            np.asarray(topo.port_neighbor, dtype=np.int64),
            np.asarray(topo.port_out_channel, dtype=np.int64))


def buffers(n_routers: int, tables: int, cap: int):
    """``(buf, start)`` large enough for :func:`pair_paths` of any pair: ``cap`` shortest
    paths of at most 254 hops and ``tables`` table paths of at most ``n_routers + 1``."""
    n = cap * min(max(n_routers - 1, 1), UNREACHABLE - 1) + tables * (n_routers + 1) + 1
    return np.empty(n, dtype=np.int64), np.zeros(cap + tables + 1, dtype=np.int64)


@njit
def pair_paths(off, nbr, chan, dist, tabs, with_min, s, d, cap, buf, start):
    """The distinct paths of router ``s`` to router ``d`` (see the module docstring).

    Path ``k`` is ``buf[start[k]:start[k + 1]]`` (channel ids); ``buf`` and ``start`` come
    from :func:`buffers`.  Returns ``(paths, capped)``: the number of paths and whether the
    shortest-path enumeration stopped at ``cap`` with more paths left.
    """
    R = off.shape[0] - 1
    n = 0
    pos = 0
    capped = False
    start[0] = 0
    if with_min and s != d and dist[d, s] != UNREACHABLE:
        hops = np.int64(dist[d, s])
        node = np.empty(hops + 1, np.int64)
        nxt = np.empty(hops + 1, np.int64)
        ch = np.empty(hops + 1, np.int64)
        depth = 0
        node[0] = s
        nxt[0] = off[s]
        while depth >= 0:
            u = node[depth]
            if u == d:
                if n == cap:            # one more path exists beyond the cap
                    capped = True
                    break
                for i in range(depth):
                    buf[pos + i] = ch[i]
                pos += depth
                n += 1
                start[n] = pos
                depth -= 1
                continue
            du = np.int64(dist[d, u])
            down = False
            while nxt[depth] < off[u + 1]:
                j = nxt[depth]
                nxt[depth] += 1
                v = nbr[j]
                if np.int64(dist[d, v]) == du - 1:
                    ch[depth] = chan[j]
                    depth += 1
                    node[depth] = v
                    nxt[depth] = off[v]
                    down = True
                    break
            if not down:
                depth -= 1
    for k in range(tabs.shape[0]):
        if s == d or tabs[k, s, d] < 0:
            continue
        u = s
        m = 0
        while u != d and m <= R:
            i = np.int64(tabs[k, u, d])
            if i < 0:
                break
            j = off[u] + i
            buf[pos + m] = chan[j]
            m += 1
            u = nbr[j]
        if u != d:
            continue
        dup = False
        for q in range(n):
            if start[q + 1] - start[q] != m:
                continue
            same = True
            for i in range(m):
                if buf[start[q] + i] != buf[pos + i]:
                    same = False
                    break
            if same:
                dup = True
                break
        if not dup:
            pos += m
            n += 1
            start[n] = pos
    return n, capped


NO_TABLES = np.zeros((0, 1, 1), dtype=np.int16)
"""``tabs`` of a path set without tables (shortest paths only)."""


def paths_of_pair(topo, dist, tabs, s: int, d: int, with_min: bool = True, cap: int = 64,
                  arrays=None) -> tuple[list[tuple], bool]:
    """:func:`pair_paths` of router ``s`` to ``d`` as a list of tuples of channel ids and the
    ``capped`` flag.  ``tabs=None`` means no tables; ``arrays`` may hold ``(csr(topo),
    buffers(...))`` to reuse across calls."""
    tabs = NO_TABLES if tabs is None else tabs
    if arrays is None:
        arrays = (csr(topo), buffers(topo.n_routers, tabs.shape[0], cap))
    (off, nbr, chan), (buf, start) = arrays
    n, capped = pair_paths(off, nbr, chan, dist, tabs, bool(with_min), int(s), int(d), int(cap),
                           buf, start)
    return [tuple(int(c) for c in buf[start[k]:start[k + 1]]) for k in range(n)], bool(capped)
