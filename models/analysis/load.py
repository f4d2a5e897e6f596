"""Channel load of uniform traffic under minimal routing, exactly (``pdes analyze --only load``).

Every endpoint sends to every other endpoint with the same probability (the
``uniform`` pattern); the flow of each (source router, destination router)
pair is split over the minimal paths, and the load of a directed channel is
the flits per cycle it carries per unit of offered load (flits per cycle per
endpoint).  Its maximum bounds the saturation throughput of minimal routing
from above: no load above ``1 / max`` can be carried by the most loaded
channel.  Two splits:

``hop``
    at every router the flow towards a destination is split evenly over the
    minimal next hops: pdes's ``min`` routing (a uniform draw among minimal
    ports at each hop) with graph-minimal routes (``vc_scheme = "hop"``; on a
    Dragonfly its default local-global-local routes are not all graph-minimal).
``path``
    the flow of each pair is split evenly over its minimal *paths* (a next hop
    gets the share of the minimal paths through it), as a routing that draws
    a whole minimal path at the source would.

Computed per destination router: routers in decreasing distance pass their
flow on, so the work is O(routers x ports) per destination.
"""
from __future__ import annotations

import numpy as np

from models.core.errors import ParameterError
from models.core.jit import njit
from ..metrics import MAX_EXACT_ROUTERS, UNREACHABLE

SPLITS = ("hop", "path")


@njit
def _loads(off, nbr, chan, dist, p, n_ep, by_paths, out):
    R = off.shape[0] - 1
    flow = np.zeros(R)
    paths = np.zeros(R)
    order = np.empty(R, np.int64)
    cnt = np.zeros(257, np.int64)
    for d in range(R):
        if p[d] == 0:
            continue
        # routers by distance to d (counting sort), the unreachable ones last
        cnt[:] = 0
        for x in range(R):
            cnt[np.int64(dist[d, x])] += 1
        for k in range(1, 257):
            cnt[k] += cnt[k - 1]
        for x in range(R - 1, -1, -1):
            k = np.int64(dist[d, x])
            cnt[k] -= 1
            order[cnt[k]] = x
        if by_paths:
            paths[:] = 0.0
            paths[d] = 1.0
            for i in range(R):
                x = order[i]
                dx = np.int64(dist[d, x])
                if x == d or dx == UNREACHABLE:
                    continue
                for j in range(off[x], off[x + 1]):
                    if np.int64(dist[d, nbr[j]]) == dx - 1:
                        paths[x] += paths[nbr[j]]
        for x in range(R):
            flow[x] = p[x] * p[d] / (n_ep - 1.0) if x != d else 0.0
        for i in range(R - 1, -1, -1):
            x = order[i]
            dx = np.int64(dist[d, x])
            if x == d or dx == UNREACHABLE or flow[x] == 0.0:
                continue
            c = 0
            for j in range(off[x], off[x + 1]):
                if np.int64(dist[d, nbr[j]]) == dx - 1:
                    c += 1
            for j in range(off[x], off[x + 1]):
                y = nbr[j]
                if np.int64(dist[d, y]) == dx - 1:
                    share = flow[x] * paths[y] / paths[x] if by_paths else flow[x] / c
                    out[chan[j]] += share
                    flow[y] += share


def channel_load(topo, dist=None, split: str = "hop") -> np.ndarray:
    """Load of every directed channel (``(2 L,)``, indexed like ``port_out_channel``) in
    flits per cycle per unit of uniform offered load, under minimal routing with the
    given ``split`` (:data:`SPLITS`)."""
    if split not in SPLITS:
        raise ParameterError(f"load split: unknown {split!r} (known: {', '.join(SPLITS)})")
    if topo.n_routers > MAX_EXACT_ROUTERS:
        raise ParameterError(f"--only load: exact channel loads are computed up to "
                             f"{MAX_EXACT_ROUTERS:,} routers ({topo.n_routers:,} here)")
    if dist is None:
        from ..metrics import distance_matrix
        dist = distance_matrix(topo)
    out = np.zeros(2 * topo.n_links)
    p = np.asarray(topo.endpoints, dtype=np.float64)
    if topo.n_endpoints < 2:
        return out
    _loads(topo.port_offsets.astype(np.int64), topo.port_neighbor.astype(np.int64),
           topo.port_out_channel.astype(np.int64), dist, p, float(topo.n_endpoints),
           split == "path", out)
    return out


def load_report(topo, dist=None) -> dict:
    """Per split: the largest, mean and 99th-percentile channel load, the saturation bound
    ``1 / max`` of minimal routing under uniform traffic, the largest load per link class
    and the number of channels within 1% of the largest."""
    out = {}
    cls = np.repeat(np.asarray(topo.link_class, dtype=np.int64), 2)
    for split in SPLITS:
        L = channel_load(topo, dist, split)
        top = float(L.max(initial=0.0))
        out[split] = {
            "max": top, "mean": float(L.mean()) if L.size else 0.0,
            "p99": float(np.percentile(L, 99)) if L.size else 0.0,
            "saturation_bound": 1.0 / top if top > 0 else None,
            "channels_near_max": int((L >= 0.99 * top).sum()) if top > 0 else 0,
            "max_by_class": {name: float(L[cls == i].max(initial=0.0))
                             for i, name in enumerate(topo.link_class_names) if (cls == i).any()},
        }
    return out
