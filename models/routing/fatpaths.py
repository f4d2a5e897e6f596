"""FatPaths layers (Besta et al., SC 2020; 003 Sec. 4.1 and Sec. 6) on the layered kernel.

FatPaths routes over *layers*: subsets of the router-to-router links, shortest-path routing
inside each.  What 003 states about its layers, and what is built here:

* "selecting links (when constructing layers) is done with simple random uniform
  sampling; a more elaborate scheme minimizing load imbalance is also provided" (003 Sec.
  4.1): ``variant = "random"`` keeps ``round(rho x links)`` links drawn uniformly without
  replacement; ``variant = "min_overlap"`` keeps the ``round(rho x links)`` links whose
  channel (in the layer's direction, below) carries the fewest paths of the earlier layers
  (ties: a seeded random order), so a new layer avoids the links earlier layers loaded
  ("the FatPaths layer construction based on minimizing path overlap", 003 Sec. 6.3).
  ``rho`` is FatPaths's name for the fraction of links a layer keeps.
* "each layer is acyclic, to ensure no deadlocks within each layer" (003 Sec. 5.2): every
  layer ``l >= 1`` draws a random order of the routers (seeded by ``measure.seed``) and
  uses each kept link only in the direction from the earlier router to the later one, so
  the directed channels of a layer form a DAG and no route of the layer can close a cycle.
* Inside a layer packets take shortest paths of the layer's directed subgraph (one next
  hop per (router, destination router): ``random``: a seeded draw among the shortest
  ones; ``min_overlap``: the one whose channel carries the fewest earlier paths, then the
  seeded draw).  A destination router the source cannot reach in the chosen layer --
  with an acyclic layer about half of the pairs, those whose destination comes first in
  the order -- is routed in layer 0 (the ``min`` kernel's minimal paths), as ``rues``
  does.  Layer 0 holds all links and minimal paths, as in ``layered`` and ``rues``.

Path counts for ``min_overlap`` are per directed channel: every pair of routers with
endpoints that a layer routes adds 1 on each channel of its path in that layer; layer 0 is
not counted (it is the same for every construction).  003 gives neither FatPaths's
default ``rho`` nor its overlap measure; these are our choices (docs/routing.md).

VC classes: hop index, as ``layered`` and ``rues`` (each layer alone is deadlock-free, but
a packet's layer-0 and layer-l routes share channels); the classes needed are the longest
path over all layers between routers with endpoints.
"""
from __future__ import annotations

import time

import numpy as np

from models.core.errors import ParameterError
from models.core.jit import njit
from models.core.registry import ROUTINGS, Param
from models.core.rng import hash4
from models.routing.layered import _SELECT_DOC, SELECT, _check_common, _layered_plan
from models.routing.minimal import endpoint_diameter

VARIANTS = ("random", "min_overlap")
_STREAM = 0x46415450                     # "FATP": the generator stream of the layers


@njit
def _dag_layer(off, nbr, keep_out, keep_in, chan, ep, W, lightest, seed, layer, T):
    """Shortest-path next hops of one layer (``T[s, d]``, -1 = d unreachable from s).

    ``keep_out[c]`` / ``keep_in[c]``: the layer uses the channel leaving router x through
    its port c / the channel entering x through port c.  Among the shortest next hops
    ``lightest`` prefers the least loaded channel (``W``), then a seeded draw.  Returns the
    longest path between routers with endpoints."""
    R = off.shape[0] - 1
    dl = np.empty(R, np.int64)
    queue = np.empty(R, np.int64)
    longest = 0
    for d in range(R):
        if ep[d] == 0:
            continue
        for x in range(R):
            dl[x] = -1
        dl[d] = 0
        head = 0
        tail = 1
        queue[0] = d
        while head < tail:                      # backwards search over the entering channels
            x = queue[head]
            head += 1
            for c in range(off[x], off[x + 1]):
                u = nbr[c]
                if keep_in[c] and dl[u] < 0:
                    dl[u] = dl[x] + 1
                    queue[tail] = u
                    tail += 1
        for s in range(R):
            if s == d or dl[s] < 0:
                continue
            if ep[s] > 0 and dl[s] > longest:
                longest = dl[s]
            best = -1
            bw = np.int64(0)
            bh = np.uint64(0)
            for c in range(off[s], off[s + 1]):
                if not keep_out[c] or dl[nbr[c]] != dl[s] - 1:
                    continue
                w = W[chan[c]] if lightest else np.int64(0)
                h = hash4(seed, layer, s * R + d, 16 + c - off[s])
                if best < 0 or w < bw or (w == bw and h < bh):
                    best = c
                    bw = w
                    bh = h
            T[s, d] = best - off[s]
    return longest


@njit
def _count_paths(off, nbr, chan, ep, T, W):
    """Add 1 on every channel of the layer path of every routed pair of endpoint routers;
    returns the number of routed pairs."""
    R = off.shape[0] - 1
    n = 0
    for s in range(R):
        if ep[s] == 0:
            continue
        for d in range(R):
            if d == s or ep[d] == 0 or T[s, d] < 0:
                continue
            n += 1
            x = s
            while x != d:
                c = off[x] + T[x, d]
                W[chan[c]] += 1
                x = nbr[c]
    return n


def build_fatpaths_layers(topo, layers: int, rho: float, variant: str, seed: int):
    """Next-hop tables of layers 1..layers-1 (int16, (layers-1, R, R), -1 = unreachable in
    the layer), the longest layer path between endpoint routers, and per-layer statistics."""
    R, L = topo.n_routers, topo.n_links
    rng = np.random.default_rng([int(seed), _STREAM])
    n_keep = max(1, int(round(rho * L)))
    off = topo.port_offsets.astype(np.int64)
    nbr = topo.port_neighbor.astype(np.int64)
    chan = topo.port_out_channel.astype(np.int64)
    ep = topo.endpoints.astype(np.int64)
    links = topo.links.astype(np.int64)
    W = np.zeros(2 * L, dtype=np.int64)
    tab = np.full((max(layers - 1, 1), R, R), -1, dtype=np.int16)
    longest = 0
    stats = []
    epr = np.nonzero(ep > 0)[0]
    pairs = epr.size * (epr.size - 1)
    for lay in range(1, layers):
        rank = rng.permutation(R)                            # position of each router
        forward = 2 * np.arange(L) + (rank[links[:, 0]] > rank[links[:, 1]])
        tie = rng.random(L)
        if variant == "random":
            kept = rng.choice(L, size=n_keep, replace=False)
        else:
            kept = np.lexsort((tie, W[forward]))[:n_keep]
        keep_chan = np.zeros(2 * L, dtype=np.bool_)
        keep_chan[forward[kept]] = True
        keep_out = keep_chan[chan]
        keep_in = keep_chan[chan ^ 1]
        ll = int(_dag_layer(off, nbr, keep_out, keep_in, chan, ep, W, variant == "min_overlap",
                            int(seed), lay, tab[lay - 1]))
        routed = int(_count_paths(off, nbr, chan, ep, tab[lay - 1], W))
        longest = max(longest, ll)
        stats.append({"layer": lay, "links": n_keep, "longest": ll,
                      "routed_pairs": routed, "unreachable_pairs": pairs - routed})
    return tab, longest, stats, W


def fatpaths(topo, dist, layers=4, rho=0.8, variant="min_overlap", layer_select="random",
             seed=1):
    """Plan for FatPaths layers: acyclic random link subsets, shortest paths inside each."""
    _check_common(topo, layers, layer_select)
    if isinstance(rho, bool) or not 0.0 < rho <= 1.0:
        raise ParameterError(f"routing.rho: must be in (0, 1] (fraction of links each layer "
                             f"keeps), got {rho}")
    if variant not in VARIANTS:
        raise ParameterError(f"routing.variant: '{variant}' is not one of {', '.join(VARIANTS)}")
    t = time.perf_counter()
    tab, ll, stats, W = build_fatpaths_layers(topo, layers, rho, variant, seed)
    longest = max(endpoint_diameter(topo, dist), ll)
    pairs = sum(s["routed_pairs"] + s["unreachable_pairs"] for s in stats)
    info = {"layers": stats, "variant": variant,
            "routed_fraction": (sum(s["routed_pairs"] for s in stats) / pairs if pairs else 0.0),
            "max_channel_paths": int(W.max()) if W.size else 0,
            "construction_s": time.perf_counter() - t}
    return _layered_plan(tab, longest, layers, layer_select, info,
                         "longest shortest path over all layers")


ROUTINGS.register("fatpaths", fatpaths, params=[
    Param("layers", int, 4, "layers, layer 0 = minimal paths"),
    Param("rho", float, 0.8, "fraction rho of the links each layer >= 1 keeps (FatPaths's rho; "
          "the default is our choice)"),
    Param("variant", str, "min_overlap", "how a layer picks its links: random (uniform sample) "
          "or min_overlap (the links whose channels carry the fewest paths of earlier layers)",
          choices=VARIANTS),
    Param("layer_select", str, "random", _SELECT_DOC, choices=tuple(SELECT)),
], summary="FatPaths layers: acyclic link subsets (random order of the routers), shortest paths "
           "inside each layer",
    reference="Besta et al. 2020 (FatPaths); 003 Sec. 4.1, Sec. 6", seeded=True)
