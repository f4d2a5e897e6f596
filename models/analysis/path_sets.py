"""Path sets of multipath routings (``pdes analyze --only path-sets``; 003 Sec. 6, Figs. 6-8).

For every ordered pair ``(s, d)`` of distinct routers with endpoints (``s`` among the
``sample`` sources when given) the *path set* of a routing is the set of distinct paths
:func:`.routing_paths.pair_paths` gives the pair:

``min``
    every shortest path (capped at :data:`MAX_PATHS_PER_PAIR`, as the ``throughput``
    section), what pdes's ``min`` kernel spreads its packets over.  (On a topology that
    registers its own minimal routes, e.g. Dragonfly, ``min`` under ``vc_scheme = auto``
    runs those; this section takes every shortest path all the same.)
a routing whose plan has per-layer next-hop tables (``tables["lay_port"]``, ``(L-1, R, R)``)
    layer 0 is the minimal routing: every shortest path, as for ``min``; then the path of
    each layer ``1..L-1`` that reaches ``d`` (a layer without a route for the pair, which
    RUES's kernel sends on layer 0, adds nothing).  ``layered``, ``rues`` and any routing
    registered later with the same plan shape.
a routing whose plan has one next-hop table (``tables["next_port"]``, ``(R, R)``)
    its one path per pair (``table_min``, ``dfsssp``).

A path used by several layers counts once, in every statistic.  Per routing (and per
``layers`` and ``preserve`` value of the routings that take them):

* path lengths (router hops): per pair the average and the longest of its paths, as
  histograms (003 Fig. 6), and the *stretch* = longest - shortest distance;
* paths crossing each directed channel and each link (both directions summed): their
  distribution over the channels and links (003 Fig. 7); the counts sum to the total
  number of hops of all paths (per channel) and to the same total (per link);
* link-disjoint paths per pair: the largest number of the pair's paths no two of which
  share a link (in either direction; 003 Sec. 6.3: "Two paths are disjoint if they do not
  share common links"), computed exactly as a maximum independent set of the pair's
  conflict graph (paths joined when they share a link) by branch and bound, with the
  distinct first links and the distinct last links of the candidates as bounds.  This is a
  set packing among the paths the routing uses, not a max flow over their union (which
  could combine pieces of different paths into paths no layer has).

Sampling: above :data:`models.metrics.MAX_EXACT_ROUTERS` routers ``sample`` is required;
with ``sample = N`` the sources are N routers with endpoints drawn with
``default_rng(seed)`` (every destination is kept).  The routing's tables are built whole
(their own limits apply, e.g. 2 GiB of layer tables).
"""
from __future__ import annotations

import time

import numpy as np

from models.core.bits import popcount, trailing_zeros
from models.core.errors import ParameterError
from models.core.jit import njit
from models.metrics import sample_sources
from .routing_paths import NO_TABLES, UNREACHABLE, csr, pair_paths

MAX_PATHS_PER_PAIR = 64
"""Shortest paths enumerated per router pair (layer 0 and ``min``), as in ``throughput``."""

AVG_BINS_PER_HOP = 8
"""Bins per hop of the histogram of per-pair average path lengths (width 1/8 hop)."""

DEFAULT_ROUTINGS = ("min", "layered", "rues")
"""``--routing`` when not given: 003 Sec. 6's routings that pdes builds, and the baseline."""

NOTICE_PAIRS = 10_000_000
"""Above this many (router pair, path set) combinations the command line says, on standard
error, what the section will do before it starts."""

TABLE_KEYS = ("lay_port", "next_port")
"""The plan tables that give a path set (see the module docstring)."""


# ----------------------------------------------------------------------------- options
def parse_routings(text) -> tuple[str, ...]:
    """``--routing``: comma-separated routing names (``min`` or registered routings; whether
    a registered one has a path set is known once its plan is built)."""
    from models.core.registry import ROUTINGS
    import models.routing  # noqa: F401  (registers the routings)
    if text is None:
        return DEFAULT_ROUTINGS
    names = [p.strip() for p in str(text).split(",") if p.strip()]
    if not names:
        raise ParameterError("--routing: give one or more routing names, e.g. min,layered,rues")
    for n in names:
        if n not in ROUTINGS:
            raise ParameterError(f"--routing: unknown routing {n!r} (registered: "
                                 f"{', '.join(ROUTINGS.names())})")
    return tuple(dict.fromkeys(names))


def parse_preserve(text) -> tuple[float, ...] | None:
    """``--preserve``: comma-separated fractions in (0, 1] of the routings that take a
    ``preserve`` parameter (None: their default)."""
    if text is None:
        return None
    out = []
    for part in [p.strip() for p in str(text).split(",")]:
        try:
            p = float(part)
        except ValueError:
            raise ParameterError(f"--preserve: expected numbers in (0, 1], got {text!r}") \
                from None
        if not 0 < p <= 1:
            raise ParameterError(f"--preserve: each fraction of kept links must be in (0, 1], "
                                 f"got {part}")
        out.append(p)
    return tuple(dict.fromkeys(out))


def _combos(entry, layers, preserve):
    """The parameter dicts of one registered routing: every --layers and --preserve value
    it takes (one empty dict when it takes neither)."""
    lay = layers if entry.param("layers") is not None else (None,)
    pre = preserve if preserve is not None and entry.param("preserve") is not None else (None,)
    out = []
    for L in lay:
        for p in pre:
            given = {}
            if L is not None:
                given["layers"] = int(L)
            if p is not None:
                given["preserve"] = float(p)
            out.append(given)
    return out


def _label(name: str, given: dict) -> str:
    return name + (f"-{given['layers']}" if "layers" in given else "") + \
        (f"-p{given['preserve']:g}" if "preserve" in given else "")


def build_sets(topo, dist, routings=DEFAULT_ROUTINGS, layers=(4,), preserve=None,
               seed: int = 0) -> list[dict]:
    """The path sets to analyse: one per routing and ``layers`` / ``preserve`` value it takes
    (``label``, ``routing``, ``params``, ``tabs``, ``with_min``).  Seeded routings get
    ``seed``.  Refuses a routing whose plan has no next-hop tables (:data:`TABLE_KEYS`) and
    ``preserve`` when no routing takes it."""
    from models.core.registry import ROUTINGS
    import models.routing  # noqa: F401
    R = topo.n_routers
    if preserve is not None and not any(
            n != "min" and ROUTINGS.get(n).param("preserve") is not None for n in routings):
        raise ParameterError(f"--preserve: none of the routings {', '.join(routings)} takes a "
                             "preserve parameter (rues does)")
    out = []
    for name in routings:
        if name == "min":
            out.append({"label": "min", "routing": "min", "params": {}, "tabs": NO_TABLES,
                        "with_min": True, "tables": "shortest paths"})
            continue
        entry = ROUTINGS.get(name)
        for given in _combos(entry, layers, preserve):
            params = entry.resolve(given, "routing")
            if entry.extra.get("seeded"):
                params["seed"] = int(seed)
            plan = entry.func(topo, dist, **params)
            tabs = plan.tables
            lay = tabs.get("lay_port")
            one = tabs.get("next_port")
            if lay is not None and lay.ndim == 3 and lay.shape[1:] == (R, R):
                rec = {"tabs": np.ascontiguousarray(lay, dtype=np.int16), "with_min": True,
                       "tables": "shortest paths (layer 0) + lay_port"}
            elif one is not None and one.ndim == 2 and one.shape == (R, R):
                rec = {"tabs": np.ascontiguousarray(one, dtype=np.int16)[None], "with_min": False,
                       "tables": "next_port"}
            else:
                raise ParameterError(
                    f"--routing: {name!r} has no path set: its plan has no per-layer next-hop "
                    "tables (lay_port) and no next-hop table (next_port); path sets: min and "
                    "routings with such tables, e.g. layered, rues, table_min, dfsssp")
            out.append({"label": _label(name, given), "routing": name,
                        "params": {k: v for k, v in params.items()}, **rec})
    return out


# ----------------------------------------------------------------------------- the search
@njit
def _bound(P, W, group, n, seen):
    """Distinct values of ``group`` among the members of the bit set ``P``."""
    for k in range(n):
        seen[group[k]] = False
    g = 0
    for w in range(W):
        x = P[w]
        while x != 0:
            k = w * 64 + trailing_zeros(x)
            x &= x - np.uint64(1)
            if not seen[group[k]]:
                seen[group[k]] = True
                g += 1
    return g


@njit
def max_disjoint(conf, n, gfirst, glast, P, cnt, vtx, stage, seen):
    """Largest set of pairwise non-conflicting paths among ``n`` (exact branch and bound).

    ``conf[i]``: bit set (``W`` words) of the paths sharing a link with path ``i``, ``i``
    included; ``gfirst``/``glast``: a group id per path, equal for paths with the same first
    (last) link; ``P``, ``cnt``, ``vtx``, ``stage``, ``seen``: work arrays of at least
    ``n + 2`` rows / entries."""
    if n == 0:
        return 0
    W = conf.shape[1]
    for w in range(W):
        P[0, w] = np.uint64(0)
    for k in range(n):
        P[0, k // 64] |= np.uint64(1) << np.uint64(k % 64)
    upper = min(_bound(P[0], W, gfirst, n, seen), _bound(P[0], W, glast, n, seen))
    best = 0
    top = 0
    cnt[0] = 0
    stage[0] = 0
    while top >= 0:
        if stage[top] == 0:
            m = 0
            v = -1
            for w in range(W):
                x = P[top, w]
                m += popcount(x)
                if v < 0 and x != 0:
                    v = w * 64 + trailing_zeros(x)
            if m == 0:
                if cnt[top] > best:
                    best = cnt[top]
                    if best >= upper:
                        break
                top -= 1
                continue
            b = min(m, _bound(P[top], W, gfirst, n, seen), _bound(P[top], W, glast, n, seen))
            if cnt[top] + b <= best:
                top -= 1
                continue
            vtx[top] = v
            stage[top] = 1
            for w in range(W):                      # take v: drop it and its conflicts
                P[top + 1, w] = P[top, w] & ~conf[v, w]
            cnt[top + 1] = cnt[top] + 1
            stage[top + 1] = 0
            top += 1
        elif stage[top] == 1:
            stage[top] = 2
            v = vtx[top]
            alone = True
            for w in range(W):
                x = P[top, w] & conf[v, w]
                if w == v // 64:
                    x &= ~(np.uint64(1) << np.uint64(v % 64))
                if x != 0:
                    alone = False
            if alone:                               # some best set contains v: taken above
                top -= 1
                continue
            for w in range(W):                      # leave v out
                P[top + 1, w] = P[top, w]
            P[top + 1, v // 64] &= ~(np.uint64(1) << np.uint64(v % 64))
            cnt[top + 1] = cnt[top]
            stage[top + 1] = 0
            top += 1
        else:
            top -= 1
    return best


@njit
def _groups(key, n, out):
    """Compact group ids of ``key[:n]`` (equal keys, equal ids)."""
    g = 0
    for k in range(n):
        out[k] = -1
        for q in range(k):
            if key[q] == key[k]:
                out[k] = out[q]
                break
        if out[k] < 0:
            out[k] = g
            g += 1


@njit
def set_stats(off, nbr, chan, lchan, n_links, dist, tabs, with_min, cap, src, dst,
              chan_cnt, h_paths, h_max, h_avg, h_disj, h_stretch, acc):
    """Accumulate the statistics of the path sets of every pair (s in ``src``, d in ``dst``,
    s != d): ``chan_cnt[c]`` paths per channel, histograms of distinct paths per pair, the
    longest and the average (``h_avg``: :data:`AVG_BINS_PER_HOP` bins per hop) path length,
    disjoint paths and stretch; ``acc``: pairs, pairs without a path, capped pairs, paths,
    hops, sum of per-pair longest lengths (float), sum of per-pair averages (float)."""
    R = off.shape[0] - 1
    K = tabs.shape[0]
    nmax = (cap if with_min else 0) + K
    buf = np.empty(cap * min(max(R - 1, 1), UNREACHABLE - 1) + K * (R + 1) + 1, np.int64)
    start = np.zeros(nmax + 1, np.int64)
    W = max((nmax + 63) // 64, 1)
    conf = np.zeros((max(nmax, 1), W), np.uint64)
    fk = np.empty(max(nmax, 1), np.int64)
    lk = np.empty(max(nmax, 1), np.int64)
    gf = np.empty(max(nmax, 1), np.int64)
    gl = np.empty(max(nmax, 1), np.int64)
    P = np.zeros((nmax + 2, W), np.uint64)
    cnt = np.zeros(nmax + 2, np.int64)
    vtx = np.zeros(nmax + 2, np.int64)
    stage = np.zeros(nmax + 2, np.int64)
    seen = np.zeros(max(nmax, 1), np.bool_)
    mark = np.full(n_links, -1, np.int64)
    stamp = 0
    for s in src:
        for d in dst:
            if s == d:
                continue
            n, capped = pair_paths(off, nbr, chan, dist, tabs, with_min, s, d, cap, buf, start)
            acc[0] += 1
            if capped:
                acc[2] += 1
            if n == 0:
                acc[1] += 1
                continue
            h_paths[n] += 1
            tot = 0
            mx = 0
            for k in range(n):
                a, b = start[k], start[k + 1]
                tot += b - a
                mx = max(mx, b - a)
                for i in range(a, b):
                    chan_cnt[buf[i]] += 1
                fk[k] = lchan[buf[a]]
                lk[k] = lchan[buf[b - 1]]
                for w in range(W):
                    conf[k, w] = np.uint64(0)
                conf[k, k // 64] |= np.uint64(1) << np.uint64(k % 64)
            acc[3] += n
            acc[4] += tot
            acc[5] += mx
            avg = tot / n
            acc[6] += avg
            h_max[mx] += 1
            h_avg[np.int64(avg * AVG_BINS_PER_HOP + 1e-9)] += 1
            h_stretch[mx - np.int64(dist[d, s])] += 1
            for i in range(n):                      # conflicts: a shared link
                stamp += 1
                for q in range(start[i], start[i + 1]):
                    mark[lchan[buf[q]]] = stamp
                for j in range(i + 1, n):
                    for q in range(start[j], start[j + 1]):
                        if mark[lchan[buf[q]]] == stamp:
                            conf[i, j // 64] |= np.uint64(1) << np.uint64(j % 64)
                            conf[j, i // 64] |= np.uint64(1) << np.uint64(i % 64)
                            break
            _groups(fk, n, gf)
            _groups(lk, n, gl)
            h_disj[max_disjoint(conf, n, gf, gl, P, cnt, vtx, stage, seen)] += 1


# ----------------------------------------------------------------------------- report
def _trim(h) -> list[int]:
    nz = np.nonzero(h)[0]
    return [int(v) for v in h[:nz.max() + 1]] if nz.size else []


def _spread(counts) -> dict:
    """Distribution of paths per channel or link: count, mean, std, min, max, histogram
    (``histogram[c]`` = channels or links crossed by exactly ``c`` paths)."""
    c = np.asarray(counts, dtype=np.int64)
    if c.size == 0:
        return {"count": 0, "mean": None, "std": None, "min": None, "max": None,
                "histogram": []}
    return {"count": int(c.size), "mean": float(c.mean()), "std": float(c.std()),
            "min": int(c.min()), "max": int(c.max()),
            "histogram": [int(v) for v in np.bincount(c)]}


def endpoint_routers(topo) -> np.ndarray:
    """Routers with endpoints (all routers if none has)."""
    ep = np.nonzero(np.asarray(topo.endpoints) > 0)[0]
    return ep if ep.size else np.arange(topo.n_routers)


def path_sets_work(topo, sample, n_sets: int) -> dict:
    """Pairs and path sets of the section (for the notice before a large run)."""
    T = endpoint_routers(topo).size
    S = T if sample is None else min(int(sample), T)
    return {"sources": S, "routers": T, "pairs": S * (T - 1), "sets": n_sets}


def set_report(topo, dist, rec: dict, src, dst, cap: int = MAX_PATHS_PER_PAIR) -> dict:
    """The statistics of one path set (see the module docstring) over the pairs of ``src``
    x ``dst``."""
    t0 = time.perf_counter()
    off, nbr, chan = csr(topo)
    lchan = np.empty(chan.size, np.int64)
    lchan[chan] = np.asarray(topo.port_link, dtype=np.int64)
    L = topo.n_links
    tabs = rec["tabs"]
    K = tabs.shape[0]
    nmax = cap * int(rec["with_min"]) + K
    chan_cnt = np.zeros(chan.size, np.int64)
    h_paths = np.zeros(nmax + 1, np.int64)
    h_max = np.zeros(topo.n_routers + 2, np.int64)
    h_avg = np.zeros((topo.n_routers + 2) * AVG_BINS_PER_HOP, np.int64)
    h_disj = np.zeros(nmax + 1, np.int64)
    h_stretch = np.zeros(topo.n_routers + 2, np.int64)
    acc = np.zeros(7, np.float64)
    set_stats(off, nbr, chan, lchan, L, dist, tabs, bool(rec["with_min"]), int(cap),
              np.asarray(src, np.int64), np.asarray(dst, np.int64), chan_cnt, h_paths, h_max,
              h_avg, h_disj, h_stretch, acc)
    pairs, without, capped, paths, hops = (int(v) for v in acc[:5])
    routed = pairs - without
    link_cnt = np.zeros(L, np.int64)
    np.add.at(link_cnt, lchan, chan_cnt)
    dis = np.arange(h_disj.size)
    return {
        "routing": rec["routing"], "params": dict(rec["params"]), "paths_from": rec["tables"],
        "pairs": pairs, "pairs_without_path": without, "capped_pairs": capped,
        "paths": {"total": paths, "mean": paths / routed if routed else None,
                  "max": int(np.nonzero(h_paths)[0].max()) if routed else None,
                  "histogram": _trim(h_paths)},
        "length": {"mean": hops / paths if paths else None,
                   "avg_mean": float(acc[6]) / routed if routed else None,
                   "max_mean": float(acc[5]) / routed if routed else None,
                   "max": int(np.nonzero(h_max)[0].max()) if routed else None,
                   "max_histogram": _trim(h_max),
                   "avg_bin": 1.0 / AVG_BINS_PER_HOP, "avg_histogram": _trim(h_avg),
                   "stretch_histogram": _trim(h_stretch)},
        "disjoint": {"mean": float((dis * h_disj).sum()) / routed if routed else None,
                     "share_ge_3": float(h_disj[3:].sum()) / routed if routed else None,
                     "histogram": _trim(h_disj)},
        "channels": _spread(chan_cnt), "links": _spread(link_cnt),
        "hops": hops,
        "seconds": time.perf_counter() - t0,
    }


def path_sets_report(topo, dist=None, routings=DEFAULT_ROUTINGS, layers=(4,), preserve=None,
                     seed: int = 0, sample: int | None = None, sets=None,
                     cap: int = MAX_PATHS_PER_PAIR) -> dict:
    """Path-set statistics of every routing (:func:`build_sets`, or the prebuilt ``sets``)
    over the ordered pairs of routers with endpoints, sources sampled with ``sample``."""
    cand = endpoint_routers(topo)
    src, sampled = sample_sources(cand, topo.n_routers, sample, seed)
    if dist is None:
        from ..metrics import distance_matrix
        dist = distance_matrix(topo)
    if sets is None:
        sets = build_sets(topo, dist, routings, layers, preserve, seed)
    results = {rec["label"]: set_report(topo, dist, rec, src, cand, cap) for rec in sets}
    return {"routings": list(routings), "layers": [int(x) for x in layers],
            "preserve": None if preserve is None else [float(p) for p in preserve],
            "seed": int(seed), "sampled": sampled, "sources": int(src.size),
            "routers": int(cand.size), "max_min_paths": int(cap), "results": results}
