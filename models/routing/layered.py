"""Layered multipath routing (003 Sec. 4.3, Algorithm 1, App. B.1) and its RUES baseline.

A *layer* is a destination-based forwarding table ``port[l][s][d]`` (the
next hop from router s towards router d in layer l).  The source router of a
packet picks its layer (``layer_select``); every router then forwards by that
layer's table.

* ``layered`` (003): layer 0 holds all links and minimal paths (here: the
  ``min`` kernel, a random minimal next hop per hop).  Each layer ``l >= 1``
  starts empty; the ordered router pairs are visited in priority order (the
  number of almost-minimal paths the pair already has in earlier layers,
  random within a level, seeded by ``measure.seed``) and each gets at most
  one *almost-minimal* path (minimal length + 1): a modified depth-first
  search enumerates the paths of exactly that length that are valid in the
  layer -- a router that already forwards towards d in this layer must be
  followed, so inserting the path never changes an inserted one -- and the
  one with the least sum of link weights W is inserted (ties: seeded random
  draw).  Inserting sets ``port[l][u][d]`` for every router u of the new
  prefix, so the sub-paths (u, d) are routed too; a pair whose sub-path is
  almost minimal counts as having an almost-minimal path (App. B.1.2).  W
  (per directed channel, zero at the start) grows on every link of the path
  by the number of new endpoint-level routes over it: new source routers
  upstream x their endpoints x the destination router's endpoints (App.
  B.1.3, Fig. 15).  Pairs without a path (App. B.1.4) fall back to a minimal
  next hop, preferring one whose onward path in the layer is itself minimal,
  then the lighter link; so every path of a layer is minimal or almost
  minimal.
* ``rues`` (003 Sec. 6, Random Uniform Edge Selection): layer ``l >= 1``
  keeps ``round(preserve x links)`` links drawn uniformly without
  replacement; inside a layer packets follow shortest paths of the layer's
  subgraph (one next hop per (router, destination), a seeded random choice
  among the shortest ones).  A packet whose destination router is not
  reachable from its source router in the chosen layer uses layer 0.

VC classes: hop index (000 Sec. IV-D; the layers share the links, so no
per-layer deadlock argument applies); the classes needed are the longest
path over all layers between routers with endpoints.
"""
from __future__ import annotations

import time
from collections import namedtuple

import numpy as np

from models.core.errors import ParameterError
from models.core.jit import njit, njit_kernel
from models.metrics import order_by_distance
from models.core.registry import ROUTINGS, Param
from models.core.rng import hash4
from models.routing import RoutingPlan
from models.routing.minimal import endpoint_diameter
from models.routing.paths import minimal_hop
from models.core.params import PR_SEED
from models.core.record import F_AUX2, F_DSTR, F_SEQ, F_SRC, NF_HOT, OK
from models.core.routing import RoutingKernel, register_kernel
from models.core.rng import P_LAYER, below

MEMORY_LIMIT = 2 * 1024 ** 3      # bytes of next-hop tables (int16, layers x R x R)
SELECT = {"random": 0, "round_robin": 1}
UNREACHABLE = 255

def _check_common(topo, layers, layer_select):
    if layers < 1:
        raise ParameterError(f"routing.layers: must be >= 1, got {layers}")
    R = topo.n_routers
    need = layers * R * R * 2
    if need > MEMORY_LIMIT:
        raise ParameterError(f"routing.layers: {layers} layers x {R}^2 router pairs x 2 bytes = "
                             f"{need / 2 ** 30:.1f} GiB of next-hop tables, above the "
                             f"{MEMORY_LIMIT / 2 ** 30:.0f} GiB limit")
    if layer_select not in SELECT:
        raise ParameterError(f"routing.layer_select: '{layer_select}' is not one of "
                             f"{', '.join(SELECT)}")
    if topo.degree.max() >= 32767:
        raise ParameterError("routing.algorithm: a router degree above 32766 does not fit the "
                             "int16 next-hop tables")


# ------------------------------------------------------------------ layered (003 Algorithm 1)
@njit
def _pair_keys(prio, ep, seed, layer):
    """Sort keys of the ordered endpoint-router pairs: priority, then a seeded random order."""
    R = prio.shape[0]
    n = 0
    for s in range(R):
        if ep[s] > 0:
            for d in range(R):
                if ep[d] > 0 and d != s:
                    n += 1
    idx = np.empty(n, np.int64)
    key = np.empty(n, np.int64)
    k = 0
    for s in range(R):
        if ep[s] > 0:
            for d in range(R):
                if ep[d] > 0 and d != s:
                    idx[k] = s * R + d
                    key[k] = (np.int64(prio[s, d]) << 40) | np.int64(
                        hash4(seed, layer, s * R + d, 1) >> np.uint64(24))
                    k += 1
    return idx, key


@njit
def _suffix_weight(v, d, off, nbr, T, W):
    w = 0
    x = v
    while x != d:
        c = off[x] + T[x, d]
        w += W[c]
        x = nbr[c]
    return w


@njit
def _fill_layer(off, nbr, dist, ep, W, prio, order, T, rem, seed, layer):
    """Insert one almost-minimal path per pair (in ``order``) into layer table ``T``.

    ``T[u, d]``: neighbour index of u's next hop towards d (-1 = none yet),
    ``rem[u, d]``: hops from u to d along the layer (-1 = none).  Returns the
    number of pairs (s, d) of endpoint routers that received a new
    almost-minimal route (their own path or as a sub-path).
    """
    R = off.shape[0] - 1
    DEP = 32
    pn = np.zeros(DEP, np.int64)       # prefix routers
    pj = np.zeros(DEP, np.int64)       # CSR index of the hop into pn[i]
    it = np.zeros(DEP, np.int64)
    pw = np.zeros(DEP, np.int64)
    bn = np.zeros(DEP, np.int64)       # best path: routers ...
    bj = np.zeros(DEP, np.int64)       # ... and CSR indices of its hops
    mark = np.full(R, -1, np.int64)
    found = 0
    for oi in range(order.shape[0]):
        s = order[oi] // R
        d = order[oi] % R
        if T[s, d] >= 0:
            continue                    # already routed by an earlier path's sub-path
        B = np.int64(dist[d, s]) + 1
        if B > DEP - 2 or B >= 127:
            continue
        best = -1
        n_tie = 0
        blen = 0
        depth = 0
        pn[0] = s
        it[0] = off[s]
        pw[0] = 0
        mark[s] = oi
        while depth >= 0:
            u = pn[depth]
            b = B - depth
            j = it[depth]
            down = False
            while j < off[u + 1]:
                v = nbr[j]
                c = j
                j += 1
                if mark[v] == oi:
                    continue
                nb = b - 1
                w = -1
                if v == d:
                    if nb == 0:
                        w = pw[depth] + W[c]
                elif T[v, d] >= 0:
                    if rem[v, d] == nb:
                        w = pw[depth] + W[c] + _suffix_weight(v, d, off, nbr, T, W)
                elif nb > 0 and np.int64(dist[d, v]) <= nb:
                    it[depth] = j
                    depth += 1
                    pn[depth] = v
                    pj[depth] = c
                    pw[depth] = pw[depth - 1] + W[c]
                    it[depth] = off[v]
                    mark[v] = oi
                    down = True
                    break
                if w < 0:
                    continue
                take = False
                if best < 0 or w < best:
                    take = True
                    n_tie = 1
                elif w == best:
                    n_tie += 1
                    take = (hash4(seed, layer, order[oi], 2 + n_tie) % np.uint64(n_tie)) == 0
                if take:
                    best = w
                    blen = depth + 1            # prefix hops, ending at v
                    for i in range(depth + 1):
                        bn[i] = pn[i]
                        bj[i + 1] = pj[i + 1] if i + 1 <= depth else c
                    bj[depth + 1] = c
                    bn[depth + 1] = v
            if not down:
                mark[u] = -1
                depth -= 1
        if best < 0:
            continue
        # insert: prefix routers bn[0 .. blen-1] get their next hop and remaining length
        up = np.int64(0)
        for i in range(blen):
            u = bn[i]
            T[u, d] = bj[i + 1] - off[u]
            rem[u, d] = B - i
            if ep[u] > 0 and rem[u, d] == np.int64(dist[d, u]) + 1:
                prio[u, d] += 1
                found += 1
            up += ep[u]
            W[bj[i + 1]] += up * ep[d]
        x = bn[blen]
        while x != d:                   # the existing suffix carries the new routes too
            c = off[x] + T[x, d]
            W[c] += up * ep[d]
            x = nbr[c]
    return found


@njit
def _fallback(off, nbr, dist, ep, W, T, rem, seed, layer):
    """Give every router without a route towards an endpoint router d a minimal next hop,
    preferring one whose onward layer path is minimal, then the lighter link."""
    R = off.shape[0] - 1
    order = np.empty(R, np.int64)
    cnt = np.zeros(258, np.int64)
    for d in range(R):
        if ep[d] == 0:
            continue
        rem[d, d] = 0
        order_by_distance(dist[d], order, cnt)
        for i in range(R):
            u = order[i]
            du = np.int64(dist[d, u])
            if du == 0 or du == UNREACHABLE or T[u, d] >= 0:
                continue
            bk = -1
            br = 1 << 30
            bw = np.int64(1) << 62
            bh = np.uint64(0)
            for c in range(off[u], off[u + 1]):
                v = nbr[c]
                if np.int64(dist[d, v]) != du - 1:
                    continue
                r = rem[v, d]
                h = hash4(seed, layer, u * R + d, 1000 + c - off[u])
                if r < br or (r == br and (W[c] < bw or (W[c] == bw and h < bh))):
                    bk = c
                    br = r
                    bw = W[c]
                    bh = h
            T[u, d] = bk - off[u]
            rem[u, d] = br + 1


@njit
def _layer_stats(dist, ep, rem):
    """(pairs of endpoint routers, of which almost-minimal in this layer, longest path)."""
    R = dist.shape[0]
    n = 0
    almost = 0
    longest = 0
    for s in range(R):
        if ep[s] == 0:
            continue
        for d in range(R):
            if ep[d] == 0 or d == s:
                continue
            n += 1
            r = np.int64(rem[s, d])
            if r == np.int64(dist[d, s]) + 1:
                almost += 1
            if r > longest:
                longest = r
    return n, almost, longest


def build_layers(topo, dist, layers: int, seed: int):
    """Next-hop tables of layers 1..layers-1 (int16, (layers-1, R, R)) and statistics."""
    R = topo.n_routers
    off = topo.port_offsets.astype(np.int64)
    nbr = topo.port_neighbor.astype(np.int64)
    ep = topo.endpoints.astype(np.int64)
    W = np.zeros(off[-1], dtype=np.int64)
    prio = np.zeros((R, R), dtype=np.int32)
    tab = np.full((max(layers - 1, 1), R, R), -1, dtype=np.int16)
    rem = np.empty((R, R), dtype=np.int8)
    stats = []
    for lay in range(1, layers):
        T = tab[lay - 1]
        rem.fill(-1)
        idx, key = _pair_keys(prio, ep, seed, lay)
        order = idx[np.argsort(key, kind="stable")]
        found = _fill_layer(off, nbr, dist, ep, W, prio, order, T, rem, seed, lay)
        _fallback(off, nbr, dist, ep, W, T, rem, seed, lay)
        n, almost, longest = _layer_stats(dist, ep, rem)
        stats.append({"layer": lay, "pairs": int(n), "inserted": int(found),
                      "almost_minimal": int(almost), "longest": int(longest)})
    return tab, stats


def _layered_plan(tab, longest, layers, layer_select, info, longest_is):
    """The kernel plan shared by ``layered`` and ``rues``: per-layer next-hop tables,
    hop-index VC classes up to the longest path any layer can produce."""
    return RoutingPlan(kernel="layered", max_hops=longest, vcs_needed=max(longest, 1), scheme="hop",
                       vc_scheme="hop-index: VC class = number of router-to-router hops taken "
                                 f"({longest_is})",
                       tables={"lay_port": tab},
                       kernel_params={"layers": int(layers), "layer_select": SELECT[layer_select]},
                       info=info)


def layered(topo, dist, layers=4, layer_select="random", seed=1):
    """Plan for layered multipath routing with almost-minimal layers (003 Sec. 4.3)."""
    _check_common(topo, layers, layer_select)
    t = time.perf_counter()
    tab, stats = build_layers(topo, dist, layers, seed)
    elapsed = time.perf_counter() - t
    longest = max([endpoint_diameter(topo, dist)] + [s["longest"] for s in stats])
    pairs = sum(s["pairs"] for s in stats)
    frac = sum(s["almost_minimal"] for s in stats) / pairs if pairs else 0.0
    info = {"layers": stats, "almost_minimal_fraction": frac, "construction_s": elapsed}
    return _layered_plan(tab, longest, layers, layer_select, info, "longest path over all layers")


# ------------------------------------------------------------------ RUES
@njit
def _rues_layer(off, nbr, keep_port, ep, seed, layer, T):
    """Shortest-path next hops inside the subgraph of the kept ports (-1 = unreachable).

    Returns the longest layer path between routers with endpoints."""
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
        while head < tail:
            x = queue[head]
            head += 1
            for c in range(off[x], off[x + 1]):
                if keep_port[c] and dl[nbr[c]] < 0:
                    dl[nbr[c]] = dl[x] + 1
                    queue[tail] = nbr[c]
                    tail += 1
        for s in range(R):
            if s == d or dl[s] < 0:
                continue
            if ep[s] > 0 and dl[s] > longest:
                longest = dl[s]
            n = 0
            for c in range(off[s], off[s + 1]):
                if keep_port[c] and dl[nbr[c]] == dl[s] - 1:
                    n += 1
            pick = np.int64(hash4(seed, layer, s * R + d, 7) % np.uint64(n))
            for c in range(off[s], off[s + 1]):
                if keep_port[c] and dl[nbr[c]] == dl[s] - 1:
                    if pick == 0:
                        T[s, d] = c - off[s]
                        break
                    pick -= 1
    return longest


def rues(topo, dist, layers=4, preserve=0.6, layer_select="random", seed=1):
    """Plan for RUES layers: random link subsets, shortest paths inside each (003 Sec. 6)."""
    _check_common(topo, layers, layer_select)
    if not 0.0 < preserve <= 1.0:
        raise ParameterError(f"routing.preserve: must be in (0, 1] (fraction of links kept per "
                             f"layer), got {preserve}")
    t = time.perf_counter()
    R, L = topo.n_routers, topo.n_links
    rng = np.random.default_rng([int(seed), 0x52554553])
    n_keep = max(1, int(round(preserve * L)))
    off = topo.port_offsets.astype(np.int64)
    nbr = topo.port_neighbor.astype(np.int64)
    ep = topo.endpoints.astype(np.int64)
    tab = np.full((max(layers - 1, 1), R, R), -1, dtype=np.int16)
    longest = endpoint_diameter(topo, dist)
    stats = []
    for lay in range(1, layers):
        kept = np.zeros(L, dtype=np.bool_)
        kept[rng.choice(L, size=n_keep, replace=False)] = True
        keep_port = kept[topo.port_link]
        ll = _rues_layer(off, nbr, keep_port, ep, seed, lay, tab[lay - 1])
        longest = max(longest, int(ll))
        epr = np.nonzero(ep > 0)[0]
        sub = tab[lay - 1][np.ix_(epr, epr)]
        unreach = int((sub < 0).sum()) - epr.size
        stats.append({"layer": lay, "links": n_keep, "longest": int(ll),
                      "unreachable_pairs": unreach})
    info = {"layers": stats, "construction_s": time.perf_counter() - t}
    return _layered_plan(tab, longest, layers, layer_select, info,
                         "longest shortest path over all layers")


_SELECT_DOC = ("layer of a packet, chosen at its source router: random (counter-based draw keyed "
               "by the packet id) or round_robin (the k-th packet of a source endpoint uses layer "
               "k mod layers)")
ROUTINGS.register("layered", layered, params=[
    Param("layers", int, 4, "layers, layer 0 = minimal paths (003: 4 fit InfiniBand's LID space, "
          "8 are plenty)"),
    Param("layer_select", str, "random", _SELECT_DOC, choices=tuple(SELECT)),
], summary="layered multipath routing: per-layer almost-minimal paths minimising link weights",
    reference="003 Sec. 4.3 (Algorithm 1), App. B.1", seeded=True)
ROUTINGS.register("rues", rues, params=[
    Param("layers", int, 4, "layers, layer 0 = minimal paths"),
    Param("preserve", float, 0.6, "fraction p of the links each layer >= 1 keeps (uniform sample; "
          "003 tries 0.4, 0.6, 0.8)"),
    Param("layer_select", str, "random", _SELECT_DOC, choices=tuple(SELECT)),
], summary="RUES layers: random link subsets, shortest paths inside each layer",
    reference="003 Sec. 6 (RUES baseline)", seeded=True)


# ------------------------------------------------------------------------------ kernel
LayerTables = namedtuple("LayerTables", ["lay_port"])
"""int16 next-hop neighbour index per (layer - 1, router, destination router), -1 = none."""


@njit_kernel
def layer_source(site, eng, ctx, ap, fid):
    """The packet's layer (``F_AUX2``), chosen at its source router.

    ``ap[1] = 0``: uniform, from the counter-based generator keyed by the packet id;
    ``1``: round robin, the k-th packet of a source endpoint uses layer ``k mod layers``.
    A layer in which the destination router cannot be reached from here (RUES) falls
    back to layer 0 (minimal routing)."""
    rg = site.rg
    prm, rec, rec_c = eng.prm, eng.rec, eng.rec_c
    n_layers = ap[0]
    lay = 0
    if n_layers > 1:
        seq = rec[fid, F_SEQ]
        if ap[1] == 0:
            lay = below(n_layers, prm[PR_SEED], rec[fid, F_SRC], seq, P_LAYER)
        else:
            lay = seq % n_layers
        if lay > 0 and ctx.lay_port[lay - 1, rg, rec[fid, F_DSTR]] < 0:
            lay = 0
    rec_c[fid, F_AUX2 - NF_HOT] = lay


@njit_kernel
def layer_hop(site, eng, ctx, ap, fid):
    """Layer 0: a random minimal next hop; layer ``l >= 1``: the layer's table."""
    rg, plo, nepk, phi = site.rg, site.plo, site.nepk, site.phi
    prm, ports, tab, rec, rec_c = eng.prm, eng.ports, eng.tab, eng.rec, eng.rec_c
    op, ovc = minimal_hop(rg, plo, nepk, phi, 0, prm[PR_SEED], ports, tab.dist, rec, rec_c, fid)
    lay = rec_c[fid, F_AUX2 - NF_HOT]
    if op - plo >= nepk and lay > 0:
        nb = ctx.lay_port[lay - 1, rg, rec[fid, F_DSTR]]
        op = plo + nepk + nb if nb >= 0 else -1
    return OK, op, ovc


register_kernel("layered", RoutingKernel(module=__name__, hop="layer_hop", source="layer_source",
                                         tables=LayerTables, params=("layers", "layer_select")))
