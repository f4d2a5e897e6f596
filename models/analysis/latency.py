"""End-to-end latency of nearest and fastest paths over router pairs (002 Sec. II-E, III).

Latency model (002 Sec. III-A)
------------------------------
A path of ``h`` router-to-router hops from router ``s`` to router ``t`` takes

    endpoint_delay + (h + 1) * switch_delay + sum of the link latencies on the path

nanoseconds: the injection and reception delay of the two endpoints
(``endpoint_delay``, 002: 300 ns, 150 ns at each end), the delay of every
switch the packet crosses (``h + 1`` of them, the first and the last
included; 002 studies 10..1000 ns and uses 60 ns from Sec. III-C on) and the
delay of every cable.  A link's latency is the one a simulation gives it
(:func:`models.topologies.file.link_latency_of`, the weights of the
``fastest`` routing): from the layout,
``max(1, ceil(cable_m * ns_per_m / cycle_ns) + fixed_cycles)`` cycles of
``cycle_ns`` each, or the latencies the topology carries (file topologies,
Dragonfly ``local_latency``/``global_latency``, HyperX ``grid_latency``), or the cycles the
layout's latency keys (``electric_cycles``, ``optical_cycles``, ``class_cycles``) give
whole sets of links, which take precedence over both.
With the layout's default 5 ns/m that is 002's cable delay, rounded up to
whole cycles; ``model.link_rounding_ns_max`` reports the largest rounding
(0 when every cable delay is a whole number of cycles, e.g. the ``skywalk``
preset with ``layout.cycle_ns=0.5``).  Endpoint links are not counted apart
from ``endpoint_delay`` (002: "links between switches and compute nodes are
not considered").  Latencies are summed in whole picoseconds, so equal path
latencies compare equal.

Paths (per ordered pair of distinct routers ``s != t``)
------------------------------------------------------
``nearest``
    002's Nearest Routing (NR): among the paths with the fewest hops, the one
    of least latency.  ``hops`` = the hop distance.
``nearest_worst``
    Among the paths with the fewest hops, the one of *most* latency: what a
    minimal routing that ignores cable lengths can end up with.  Every
    minimal routing's latency for the pair lies between ``nearest`` and
    ``nearest_worst``.
``fastest``
    002's Fastest Routing (FR): the least latency of any path (Dijkstra on
    ``switch_delay`` + link latency per hop, as pdes's ``fastest`` routing
    with the router pipeline as switch delay); ``hops`` = the fewest hops
    among the least-latency paths.

Pairs are the ordered pairs of distinct routers that both have endpoints
(every pair on a direct network; on indirect networks the pairs of leaf
routers); when no router has endpoints, every router.  ``max`` and ``mean``
are over those pairs (each pair weighs 1); ``endpoint_mean`` weighs a pair
by ``p[s] * p[t]`` (its endpoint pairs; endpoints of one router are not
paired): it differs from ``mean`` only when routers have different endpoint
counts.  ``histogram`` counts the pairs in bins of ``bin_ns``: bin ``i``
holds latencies in ``[first_ns + i * bin_ns, first_ns + (i + 1) * bin_ns)``.
Unreachable pairs are left out of every statistic and counted in
``unreachable_pairs``.

Cost
----
Per source router one breadth-first search and one Dijkstra search (binary
heap) per switch delay: ``O(S * D * L log R)`` for ``S`` sources, ``D``
switch delays, ``L`` links and ``R`` routers, in compiled kernels, with the
sources split over threads.  Memory: a block of at most
:data:`BLOCK_ENTRIES` (source, router) entries per array, never ``R x R``.
With ``sample`` the sources are a seeded random sample of the routers with
endpoints (``default_rng(seed)``; the same draw for every switch delay); the
maxima are then lower bounds over all pairs.
"""
from __future__ import annotations

import math

import numpy as np

from models.core.errors import ParameterError
from models.core.jit import njit
from ..metrics import _csr, _run_chunks, sample_sources

__all__ = ["DEFAULT_ENDPOINT_DELAY_NS", "DEFAULT_SWITCH_DELAY_NS", "DEFAULT_BIN_NS",
           "check_latency", "latency_options", "latency_report", "latency_work", "link_latency_ns",
           "latency_rows"]

DEFAULT_SWITCH_DELAY_NS = 60.0
"""002 Sec. III-C..F and IV: 60 ns switches."""
DEFAULT_ENDPOINT_DELAY_NS = 300.0
"""002 Sec. III-A: packet injection and reception, 150 ns at each end."""
DEFAULT_BIN_NS = 10.0
"""Width of the latency histogram bins."""
MAX_DELAY_NS = 1e9
"""Largest delay accepted for any option (one second): keeps picosecond sums in int64."""
BLOCK_ENTRIES = 1 << 20
"""(source, router) entries of one block of rows per array."""
UNREACHED = -1


# =========================================================================== kernels
@njit
def _latency_kernel(off, nbr, plink, sources, sw, ep, dist, nbest, nworst, fast, fhops):
    """Per source ``sources[i]``, into row ``i`` of the outputs (``-1`` = unreachable):
    hop distance ``dist``, least and most latency over the fewest-hop paths ``nbest``,
    ``nworst``, least latency ``fast`` and the fewest hops of a least-latency path ``fhops``.
    Latencies in ps: ``ep + sw`` at the source, ``+ plink[k] + sw`` per hop over port ``k``."""
    n = off.shape[0] - 1
    m = nbr.shape[0]
    queue = np.empty(max(n, 1), dtype=np.int32)
    done = np.zeros(max(n, 1), dtype=np.uint8)
    hk = np.empty(m + 1, dtype=np.int64)       # heap: latency, hops, router
    hh = np.empty(m + 1, dtype=np.int64)
    hv = np.empty(m + 1, dtype=np.int32)
    for i in range(sources.shape[0]):
        s = sources[i]
        d = dist[i]
        nb = nbest[i]
        nw = nworst[i]
        fl = fast[i]
        fh = fhops[i]
        for v in range(n):
            d[v] = -1
            nb[v] = -1
            nw[v] = -1
            fl[v] = -1
            fh[v] = -1
            done[v] = 0
        # ---- breadth-first: hop distance, then least / most latency over minimal paths
        d[s] = 0
        nb[s] = ep + sw
        nw[s] = ep + sw
        queue[0] = s
        head = 0
        tail = 1
        while head < tail:
            u = queue[head]
            head += 1
            du = d[u]
            for k in range(off[u], off[u + 1]):
                v = nbr[k]
                if d[v] < 0:
                    d[v] = du + 1
                    queue[tail] = v
                    tail += 1
        for j in range(1, tail):        # BFS order: every predecessor is final
            v = queue[j]
            dv = d[v]
            lo = np.int64(-1)
            hi = np.int64(-1)
            for k in range(off[v], off[v + 1]):
                u = nbr[k]
                if d[u] == dv - 1:      # links are symmetric: port k of v = the link u-v
                    a = nb[u] + plink[k] + sw
                    b = nw[u] + plink[k] + sw
                    if lo < 0 or a < lo:
                        lo = a
                    if b > hi:
                        hi = b
            nb[v] = lo
            nw[v] = hi
        # ---- Dijkstra on (latency, hops), binary heap with lazy deletion
        fl[s] = ep + sw
        fh[s] = 0
        hk[0] = ep + sw
        hh[0] = 0
        hv[0] = s
        size = 1
        while size > 0:
            key = hk[0]
            hop = hh[0]
            u = hv[0]
            size -= 1                   # pop: move the last entry to the root, sift down
            if size > 0:
                lk = hk[size]
                lh = hh[size]
                lv = hv[size]
                p = 0
                while True:
                    c = 2 * p + 1
                    if c >= size:
                        break
                    if c + 1 < size and (hk[c + 1] < hk[c] or
                                         (hk[c + 1] == hk[c] and hh[c + 1] < hh[c])):
                        c += 1
                    if hk[c] < lk or (hk[c] == lk and hh[c] < lh):
                        hk[p] = hk[c]
                        hh[p] = hh[c]
                        hv[p] = hv[c]
                        p = c
                    else:
                        break
                hk[p] = lk
                hh[p] = lh
                hv[p] = lv
            if done[u] != 0 or key != fl[u] or hop != fh[u]:
                continue
            done[u] = 1
            for k in range(off[u], off[u + 1]):
                v = nbr[k]
                if done[v] != 0:
                    continue
                nk = key + plink[k] + sw
                nh = hop + 1
                if fl[v] < 0 or nk < fl[v] or (nk == fl[v] and nh < fh[v]):
                    fl[v] = nk
                    fh[v] = nh
                    c = size            # push: sift up
                    size += 1
                    while c > 0:
                        p = (c - 1) // 2
                        if nk < hk[p] or (nk == hk[p] and nh < hh[p]):
                            hk[c] = hk[p]
                            hh[c] = hh[p]
                            hv[c] = hv[p]
                            c = p
                        else:
                            break
                    hk[c] = nk
                    hh[c] = nh
                    hv[c] = v


# =========================================================================== inputs
def _delay(key: str, value, *, positive: bool = False) -> float:
    try:
        if isinstance(value, bool):
            raise TypeError
        out = float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{key}: expected a number of nanoseconds, got {value!r}") from None
    if not math.isfinite(out) or out < 0 or (positive and out == 0) or out > MAX_DELAY_NS:
        rule = "> 0" if positive else ">= 0"
        raise ParameterError(f"{key}: must be a number of nanoseconds {rule} and <= "
                             f"{MAX_DELAY_NS:.0e}, got {value!r}")
    return out


def latency_options(switch_delay=None, endpoint_delay=None, bin_ns=None) -> dict:
    """Checked options of :func:`latency_report` (the messages name the CLI options).

    ``switch_delay`` is one number or several (a sequence or a comma-separated string,
    e.g. ``"20,60,100"``); every one is >= 0.  Defaults: :data:`DEFAULT_SWITCH_DELAY_NS`,
    :data:`DEFAULT_ENDPOINT_DELAY_NS`, :data:`DEFAULT_BIN_NS`.
    """
    if switch_delay is None:
        delays = [DEFAULT_SWITCH_DELAY_NS]
    else:
        if isinstance(switch_delay, str):
            parts = [s for s in switch_delay.replace(" ", ",").split(",") if s]
        elif isinstance(switch_delay, (list, tuple, np.ndarray)):
            parts = list(switch_delay)
        else:
            parts = [switch_delay]
        if not parts:
            raise ParameterError(f"--switch-delay: give at least one number of nanoseconds, "
                                 f"got {switch_delay!r}")
        delays = [_delay("--switch-delay", v) for v in parts]
        if len(set(delays)) != len(delays):
            raise ParameterError(f"--switch-delay: a delay is given twice in {switch_delay!r}")
    width = _delay("--latency-bin", DEFAULT_BIN_NS if bin_ns is None else bin_ns, positive=True)
    if width < 0.001:
        raise ParameterError(f"--latency-bin: must be at least 0.001 ns (latencies are summed "
                             f"in whole picoseconds), got {bin_ns!r}")
    return {"switch_delays": delays,
            "endpoint_delay": _delay("--endpoint-delay", DEFAULT_ENDPOINT_DELAY_NS
                                     if endpoint_delay is None else endpoint_delay),
            "bin_ns": width}


def _ps(ns) -> np.ndarray:
    return np.rint(np.asarray(ns, dtype=np.float64) * 1000.0).astype(np.int64)


def link_latency_ns(topo, layout) -> tuple[np.ndarray, dict]:
    """(latency of each link in ns, description): the cycles a simulation gives the link
    (:func:`models.topologies.file.link_latency_of` without ``router.link_latency``, the
    layout's latency keys included) times ``layout.cycle_ns``.  ``latency_keys_links``
    counts the links a layout latency key set; ``link_rounding_ns_max`` is over the
    links whose latency comes from the cable formula (None when there are none)."""
    from ..topologies.file import file_link_latency, link_latency_of
    cycles, cable_m = link_latency_of(topo, layout, 0)
    ns = np.asarray(cycles, dtype=np.float64) * layout.cycle_ns
    carried = file_link_latency(topo) is not None
    keyed = layout.latency_set if layout.latency_set is not None else np.zeros(ns.shape, bool)
    info = {"source": "topology" if carried else "layout",
            "ns_per_m": layout.ns_per_m, "cycle_ns": layout.cycle_ns,
            "fixed_cycles": layout.fixed_cycles,
            "latency_keys_links": int(np.count_nonzero(keyed)),
            "link_ns_min": float(ns.min()) if ns.size else 0.0,
            "link_ns_max": float(ns.max()) if ns.size else 0.0,
            "link_ns_mean": float(ns.mean()) if ns.size else 0.0}
    cabled = ~keyed
    if not carried and cabled.any():      # rounding of the cable formula, where it is used
        exact = np.asarray(cable_m, np.float64)[cabled] * layout.ns_per_m \
            + layout.fixed_cycles * layout.cycle_ns
        info["link_rounding_ns_max"] = float(np.round((ns[cabled] - exact).max(), 9))
    else:
        info["link_rounding_ns_max"] = None
    return ns, info


def _pairs_routers(topo) -> np.ndarray:
    serving = np.asarray(topo.serving, dtype=bool)
    return np.nonzero(serving)[0] if serving.any() else np.arange(topo.n_routers)


def latency_sources(topo, sample: int | None = None,
                    seed: int = 0) -> tuple[np.ndarray, int | None]:
    """(source routers, number sampled or None): every router of the pairs, or ``sample`` of
    them drawn with ``default_rng(seed)`` (sorted)."""
    return sample_sources(_pairs_routers(topo), topo.n_routers, sample, seed)


def latency_work(topo, sample: int | None = None, n_delays: int = 1) -> dict:
    """What :func:`latency_report` will do, known before it starts: ``sources`` (all routers
    of the pairs, or ``sample``), ``routers``, ``searches`` (a BFS and a Dijkstra search per
    source and switch delay) and ``source_link_steps`` = searches x links (the work grows
    with it; the Dijkstra part adds a log factor)."""
    n = int(_pairs_routers(topo).size)
    S = n if sample is None else min(int(sample), n)
    return {"sources": S, "routers": n, "searches": S * int(n_delays),
            "source_link_steps": S * int(n_delays) * int(topo.n_links)}


MAX_BINS = 10_000_000
"""Most histogram bins a network may need (an upper bound, checked before any search)."""


def check_latency(topo, layout, switch_delays=None, endpoint_delay=None, bin_ns=None) -> dict:
    """The checked options of :func:`latency_report` for this network, before any search
    (:func:`latency_options`, and a ``bin_ns`` that needs at most :data:`MAX_BINS` bins)."""
    opts = latency_options(switch_delays, endpoint_delay, bin_ns)
    _check_bins(topo, link_latency_ns(topo, layout)[0], opts)
    return opts


def _check_bins(topo, link_ns, opts) -> None:
    """Refuse a ``bin_ns`` that could need more than :data:`MAX_BINS` bins: no path of
    interest has more than ``R - 1`` hops, so no latency exceeds
    ``endpoint + R * switch + (R - 1) * longest link``."""
    R = topo.n_routers
    top = opts["endpoint_delay"] + max(opts["switch_delays"]) * R \
        + (float(np.max(link_ns)) if np.size(link_ns) else 0.0) * max(R - 1, 0)
    if top / opts["bin_ns"] > MAX_BINS:
        raise ParameterError(f"--latency-bin: {opts['bin_ns']:g} ns bins could need "
                             f"{top / opts['bin_ns']:.3g} bins on this network (latencies up to "
                             f"{top:.4g} ns; at most {MAX_BINS:,}); give wider bins")


# =========================================================================== rows
def latency_rows(topo, link_ns, sources, switch_delay: float, endpoint_delay: float,
                 threads: int | None = None) -> dict:
    """Rows of the latency kernel for ``sources`` (shape ``(len(sources), R)`` each):
    ``dist`` (hops), ``nearest``, ``nearest_worst``, ``fastest`` (ps, int64) and
    ``fastest_hops``; ``-1`` where unreachable.  The ``s -> s`` entry is
    ``endpoint_delay + switch_delay``."""
    offsets, nbr = _csr(topo)
    plink = np.ascontiguousarray(_ps(link_ns)[np.asarray(topo.port_link, dtype=np.int64)])
    src = np.ascontiguousarray(np.asarray(sources, dtype=np.int64).ravel())
    R = topo.n_routers
    out = {"dist": np.empty((src.size, R), np.int32),
           "nearest": np.empty((src.size, R), np.int64),
           "nearest_worst": np.empty((src.size, R), np.int64),
           "fastest": np.empty((src.size, R), np.int64),
           "fastest_hops": np.empty((src.size, R), np.int32)}
    sw, ep = int(_ps(switch_delay)), int(_ps(endpoint_delay))

    def work(i0, i1):
        _latency_kernel(offsets, nbr, plink, src[i0:i1], sw, ep, out["dist"][i0:i1],
                        out["nearest"][i0:i1], out["nearest_worst"][i0:i1],
                        out["fastest"][i0:i1], out["fastest_hops"][i0:i1])

    _run_chunks(work, src.size, threads)
    return out


class _Acc:
    """Max, means and histogram of one latency kind over the blocks of rows."""

    def __init__(self, bin_ps: int, hops: bool, hist: bool):
        self.bin_ps, self.hops, self.hist = bin_ps, hops, hist
        self.max = -1
        self.sum = 0            # ps, exact
        self.wsum = 0.0
        self.hmax = 0
        self.hsum = 0
        self.counts = np.zeros(0, np.int64)

    def add(self, lat, wts, hop=None):
        if lat.size == 0:
            return
        self.max = max(self.max, int(lat.max()))
        self.sum += int(lat.sum())
        self.wsum += float(np.dot(lat.astype(np.float64), wts))
        if hop is not None:
            self.hmax = max(self.hmax, int(hop.max()))
            self.hsum += int(hop.sum())
        if self.hist:
            c = np.bincount(lat // self.bin_ps)
            if c.size > self.counts.size:
                c[:self.counts.size] += self.counts
                self.counts = c
            else:
                self.counts[:c.size] += c

    def result(self, pairs: int, wpairs: float) -> dict:
        out = {"max": self.max / 1000.0 if pairs else None,
               "mean": self.sum / pairs / 1000.0 if pairs else None,
               "endpoint_mean": self.wsum / wpairs / 1000.0 if wpairs > 0 else None}
        if self.hops:
            out["hops_max"] = self.hmax if pairs else None
            out["hops_mean"] = self.hsum / pairs if pairs else None
        if self.hist:
            nz = np.nonzero(self.counts)[0]
            first = int(nz[0]) if nz.size else 0
            last = int(nz[-1]) + 1 if nz.size else 0
            out["histogram"] = {"bin_ns": self.bin_ps / 1000.0,
                                "first_ns": first * self.bin_ps / 1000.0,
                                "counts": [int(v) for v in self.counts[first:last]]}
        return out


def latency_report(topo, layout, sample: int | None = None, seed: int = 0,
                   threads: int | None = None, switch_delays=None,
                   endpoint_delay: float | None = None, bin_ns: float | None = None) -> dict:
    """The ``latency`` section (see the module docstring for every definition).

    Returns ``sampled``, ``sources``, ``routers`` (routers of the pairs), ``pairs``,
    ``unreachable_pairs``, ``connected``, ``model`` (delays and link latencies) and
    ``switch_delay``: per switch delay (key: its value in ns as text, e.g. ``"60"``),
    ``nearest``, ``nearest_worst`` and ``fastest`` with ``max``, ``mean``,
    ``endpoint_mean`` in ns (``nearest`` and ``fastest`` also ``hops_max``,
    ``hops_mean`` and ``histogram``).
    """
    opts = latency_options(switch_delays, endpoint_delay, bin_ns)
    link_ns, info = link_latency_ns(topo, layout)
    src, sampled = latency_sources(topo, sample, seed)
    R = topo.n_routers
    dst = _pairs_routers(topo)
    p = np.asarray(topo.endpoints, dtype=np.float64)
    pd = p[dst]
    bin_ps = max(1, int(_ps(opts["bin_ns"])))
    _check_bins(topo, link_ns, opts)
    block = max(1, min(src.size, BLOCK_ENTRIES // max(R, 1)))
    by_delay = {}
    pairs = unreachable = 0
    wpairs = 0.0
    for sw in opts["switch_delays"]:
        acc = {"nearest": _Acc(bin_ps, True, True), "nearest_worst": _Acc(bin_ps, False, False),
               "fastest": _Acc(bin_ps, True, True)}
        pairs = unreachable = 0
        wpairs = 0.0
        for i0 in range(0, src.size, block):
            s = src[i0:i0 + block]
            rows = latency_rows(topo, link_ns, s, sw, opts["endpoint_delay"], threads)
            if dst.size < R:                              # only the routers of the pairs
                rows = {k: v[:, dst] for k, v in rows.items()}
            d = rows["dist"]
            keep = d > 0                                  # reachable, not the source itself
            unreachable += int((d < 0).sum())
            pairs += int(keep.sum())
            w = (p[s][:, None] * pd[None, :])[keep]
            wpairs += float(w.sum())
            acc["nearest"].add(rows["nearest"][keep], w, d[keep])
            acc["nearest_worst"].add(rows["nearest_worst"][keep], w)
            acc["fastest"].add(rows["fastest"][keep], w, rows["fastest_hops"][keep])
        by_delay[_key(sw)] = {k: a.result(pairs, wpairs) for k, a in acc.items()}
    return {
        "sampled": sampled,
        "sources": int(src.size),
        "routers": int(dst.size),
        "pairs": pairs,
        "unreachable_pairs": unreachable,
        "connected": unreachable == 0,
        "work": latency_work(topo, sampled, len(opts["switch_delays"])),
        "model": {"endpoint_delay_ns": opts["endpoint_delay"],
                  "switch_delays_ns": opts["switch_delays"], "bin_ns": opts["bin_ns"],
                  "resolution_ns": 0.001, **info},
        "switch_delay": by_delay,
    }


def _key(ns: float) -> str:
    """``60.0 -> "60"``, ``12.5 -> "12.5"``: the key of a switch delay."""
    return f"{ns:g}" if float(f"{ns:g}") == ns else repr(ns)
