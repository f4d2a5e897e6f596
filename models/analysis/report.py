"""One report with every structural analysis of a network (``python -m pdes analyze``).

Sections (select with ``only``; :data:`ANALYSES` lists them in report order):

``paths``
    Hop distances on the router graph and between endpoints: diameter,
    average distance and the distance distribution, plus the number of
    minimal paths per router pair (000 Sec. III-A/B, Fig. 1; 001 Sec. 2.3.3;
    004 Table 4).
``moore``
    Moore bound for the network radix and the diameter, and the ratio
    routers / bound (000 Sec. II-A, Fig. 5a/b; direct networks only).
``shortest-paths``
    Number of shortest paths per router pair, exact (saturating) counts, split
    into intra- and inter-group (and -cluster) pairs, with a histogram
    (004 Table 4; :mod:`.shortest_paths`).
``latency``
    End-to-end latency of nearest and fastest paths from switch delay and
    cable latencies: max, mean and distribution per switch delay
    (002 Sec. II-E, III; :mod:`.latency`).
``bisection``
    METIS minimum balanced bisection and ``beta`` (:mod:`.bisection`).
``resiliency``
    Random link failures (:mod:`.resiliency`).
``cables``
    Cable counts and metres by class from the layout (002 Sec. III-E).
``cost`` and ``power``
    :mod:`.cost`.
``load``
    Exact channel loads of uniform traffic under minimal routing and the
    saturation bound they imply (:mod:`.load`).
``throughput``
    Maximum achievable throughput of a traffic pattern by linear programming,
    unrestricted and restricted to the routings' paths, at several fractions of
    communicating pairs (003 Sec. 6.4, Fig. 9; :mod:`.throughput`).  Only when
    asked for (``only``): it is not part of the default sections.
``path-sets``
    The paths multipath routings give each router pair: their lengths, the paths
    crossing each link and the link-disjoint paths per pair (003 Sec. 6, Figs. 6-8;
    :mod:`.path_sets`).  Only when asked for, like ``throughput``.

Path metrics (definitions)
--------------------------
* ``router``: over ordered pairs of distinct routers; ``histogram[d]`` is the
  number of such pairs at distance ``d``.
* ``endpoint``: over ordered pairs of distinct endpoints (the routers'
  distance; two endpoints of one router are at distance 0);
  ``histogram[d]`` is the share of such pairs at distance ``d``, ``diameter``
  the largest distance between two endpoints (for indirect networks the
  largest distance between routers that have endpoints).
* ``min_paths``: minimal paths between two routers over ordered pairs of
  distinct connected routers: ``min``, ``mean``, ``max``, ``frac_multi``
  (share of pairs with more than one minimal path, 004 Table 4's SP) and
  ``mean_nonadjacent`` (mean over pairs that are not neighbours, the figure
  001 Sec. 2.3.3 quotes: about 1.1 for SF q=23).

With ``sample=S`` every distance statistic uses ``S`` random source routers
(``default_rng(seed)``) to all destinations; the diameters are then lower
bounds.  Above :data:`models.metrics.MAX_EXACT_ROUTERS` routers ``sample`` is
required.  ``sample`` applies to ``shortest-paths`` (the same draw) and
``latency`` (drawn among the routers with endpoints) too.
"""
from __future__ import annotations

import time

import numpy as np

from models.core.errors import ParameterError
from ..metrics import (MAX_EXACT_ROUTERS, UNREACHABLE, degree_histogram,
                       distance_rows, moore_bound, path_statistics, sample_sources)
from .bisection import bisection
from .cost import cost, power
from .latency import check_latency, latency_report
from .resiliency import resiliency
from .shortest_paths import shortest_paths_report
from .throughput import MAX_LP_VARIABLES

__all__ = ["ANALYSES", "analyze", "path_metrics", "moore_report", "parse_only"]

ANALYSES = ("paths", "moore", "shortest-paths", "latency", "bisection", "resiliency", "cables",
            "cost", "power", "load", "throughput", "path-sets")
"""Names of the report sections, in report order."""

DEFAULT_ANALYSES = tuple(a for a in ANALYSES if a not in ("throughput", "path-sets"))
"""The sections computed when ``only`` is not given (``throughput`` and ``path-sets`` only
when asked for)."""


def parse_only(only) -> tuple[str, ...]:
    """Sections named by ``only`` (None = all; a comma-separated string or a sequence).

    Raises
    ------
    ParameterError
        An unknown name (the message names ``--only``).
    """
    if only is None:
        return DEFAULT_ANALYSES
    names = [s.strip() for s in only.split(",")] if isinstance(only, str) else list(only)
    names = [n for n in names if n]
    if not names:
        raise ParameterError(f"--only: give at least one of {', '.join(ANALYSES)}")
    for n in names:
        if n not in ANALYSES:
            raise ParameterError(f"--only: unknown analysis {n!r} (known: {', '.join(ANALYSES)})")
    return tuple(a for a in ANALYSES if a in names)


def _sources(topo, sample, seed) -> tuple[np.ndarray, int | None]:
    return sample_sources(np.arange(topo.n_routers), topo.n_routers, sample, seed)


def path_metrics(topo, sample: int | None = None, seed: int = 0, threads: int | None = None) -> dict:
    """Router and endpoint distance statistics and minimal-path counts (see the module docstring)."""
    src, sampled = _sources(topo, sample, seed)
    st = path_statistics(topo, src, threads=threads)
    R = topo.n_routers
    p = np.asarray(topo.endpoints, dtype=np.float64)
    hist_r = np.zeros(256, dtype=np.int64)
    hist_e = np.zeros(256, dtype=np.float64)
    chunk = max(1, min(src.size, 2**22 // max(R, 1)))
    for i0 in range(0, src.size, chunk):
        s = src[i0:i0 + chunk]
        rows = distance_rows(topo, s, threads=threads)
        hist_r += np.bincount(rows.ravel(), minlength=256)
        w = p[s][:, None] * p[None, :]
        hist_e += np.bincount(rows.ravel(), weights=w.ravel(), minlength=256)
        hist_e[0] -= p[s].sum()  # an endpoint is not paired with itself
    hist_r[0] -= src.size  # a router is not paired with itself
    unreachable_r = int(hist_r[UNREACHABLE])
    unreachable_e = float(hist_e[UNREACHABLE])
    hist_r[UNREACHABLE] = 0
    hist_e[UNREACHABLE] = 0.0
    d_r = int(np.nonzero(hist_r)[0].max()) if hist_r.any() else 0
    d_e = int(np.nonzero(hist_e > 0)[0].max()) if np.any(hist_e > 0) else 0
    e_pairs = hist_e.sum() + unreachable_e
    mp = dict(st["min_paths"])
    pairs = st["pairs"]
    # adjacent ordered pairs among the sources: each has exactly one minimal path
    adj = int(hist_r[1]) if hist_r.size > 1 else 0
    mp["mean_nonadjacent"] = float((mp["mean"] * pairs - adj) / (pairs - adj)) \
        if pairs > adj else None
    return {
        "sampled": sampled,
        "connected": st["connected"] and unreachable_r == 0,
        "router": {
            "diameter": d_r if unreachable_r == 0 else None,
            "eccentricity_max": d_r,
            "avg_distance": st["avg_distance"],
            "histogram": [int(v) for v in hist_r[:d_r + 1]],
            "unreachable_pairs": unreachable_r,
        },
        "endpoint": {
            "diameter": d_e if unreachable_e == 0 else None,
            "avg_distance": st["endpoint_avg_distance"],
            "histogram": [float(v / e_pairs) for v in hist_e[:d_e + 1]] if e_pairs else [],
        },
        "min_paths": mp,
        "degree_histogram": {str(k): v for k, v in degree_histogram(topo).items()},
    }


def moore_report(topo, diameter: int | None) -> dict:
    """Moore bound for the largest network radix ``k'`` and ``diameter`` (000 Sec. II-A)."""
    k = int(topo.degree.max()) if topo.n_routers else 0
    if not topo.is_direct:
        return {"applicable": False, "reason": "indirect network (routers without endpoints)",
                "k": k, "diameter": diameter, "bound": None, "ratio": None}
    if diameter is None:
        return {"applicable": False, "reason": "disconnected or sampled (diameter unknown)",
                "k": k, "diameter": None, "bound": None, "ratio": None}
    mb = moore_bound(k, diameter)
    return {"applicable": True, "k": k, "diameter": int(diameter), "bound": int(mb),
            "ratio": topo.n_routers / mb, "routers": topo.n_routers}


def analyze(topo, layout=None, only=None, seed: int = 0, samples: int | None = None,
            comm=None, *, sample: int | None = None, threads: int | None = None,
            bisection_seeds: int = 16, resiliency_opts: dict | None = None,
            cost_opts: dict | None = None, power_model: str = "slimfly",
            latency_opts: dict | None = None, throughput_opts: dict | None = None,
            path_sets_opts: dict | None = None) -> dict:
    """Run the selected analyses of ``topo`` and return one JSON-ready dict.

    Parameters
    ----------
    topo : Topology
    layout : Layout, optional
        Needed by ``cables`` and ``cost`` (default: ``build_layout(topo)``).
    only : str or sequence of str, optional
        Sections to compute (default: all of :data:`ANALYSES`).
    seed : int
        Seed of the resiliency samples, the first METIS seed and the
        ``sample`` draw.
    samples : int, optional
        Resiliency samples (default: adaptive, see :mod:`.resiliency`).
    comm : mpi4py communicator, optional
        Splits the resiliency samples over its ranks (same answer for any size).
    sample : int, optional
        Source routers for the path metrics (default: all).
    threads : int, optional
        Threads of the distance searches.
    bisection_seeds : int
        METIS runs.
    resiliency_opts, cost_opts : dict, optional
        Extra keyword arguments of :func:`.resiliency.resiliency` and
        :func:`.cost.cost` (``radix`` is also used by ``power``).
    power_model : str
        :data:`.cost.POWER_MODELS` entry.
    latency_opts : dict, optional
        ``switch_delays``, ``endpoint_delay``, ``bin_ns`` of
        :func:`.latency.latency_report` (default: 60 ns switches, 300 ns endpoints, 10 ns bins).
    throughput_opts : dict, optional
        ``plan`` (the :class:`~models.traffic.TrafficPlan`, required by ``throughput``) and the
        keyword arguments of :func:`.throughput.throughput_report` (``seed`` defaults to
        ``seed``).
    path_sets_opts : dict, optional
        Keyword arguments of :func:`.path_sets.path_sets_report` (``routings``, ``layers``,
        ``preserve``, prebuilt ``sets``); its ``seed`` and ``sample`` are ``seed`` and
        ``sample``.

    Returns
    -------
    dict
        ``summary`` (:meth:`Topology.summary`), one key per computed section,
        ``analyses`` (the sections computed) and ``seconds`` per section.
    """
    names = parse_only(only)
    if only is None and topo.n_routers > MAX_EXACT_ROUTERS:
        names = tuple(n for n in names if n != "load")   # exact only: when asked for
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ParameterError(f"--seed: must be an integer >= 0, got {seed!r}")
    cost_opts = dict(cost_opts or {})
    resiliency_opts = dict(resiliency_opts or {})
    latency_opts = dict(latency_opts or {})
    if layout is None and ("cables" in names or "cost" in names or "latency" in names):
        from ..layout import build_layout
        layout = build_layout(topo)
    if "latency" in names:      # every option checked before the first (collective) step
        latency_opts = check_latency(topo, layout, **latency_opts)
    throughput_opts = dict(throughput_opts or {})
    if "throughput" in names:
        from .throughput import check_throughput
        if throughput_opts.get("plan") is None:
            raise ParameterError("--only: throughput needs a traffic pattern (--traffic)")
        check_throughput(topo, throughput_opts.get("max_variables", MAX_LP_VARIABLES))
    path_sets_opts = dict(path_sets_opts or {})
    if "path-sets" in names and path_sets_opts.get("sets") is None:
        # the routings' tables first: a routing without a path set is refused before the
        # (collective) resiliency step
        from ..metrics import distance_matrix
        from .path_sets import build_sets
        path_sets_opts["dist"] = distance_matrix(topo, threads=threads)
        path_sets_opts["sets"] = build_sets(
            topo, path_sets_opts["dist"], **{k: path_sets_opts[k] for k in
                                             ("routings", "layers", "preserve")
                                             if k in path_sets_opts}, seed=seed)
    sec = {}
    secs = {}
    omitted = {}
    if only is None and "resiliency" in names:
        from .resiliency import intact_connected
        if not intact_connected(topo):     # its thresholds are undefined; the rest is not
            names = tuple(n for n in names if n != "resiliency")
            omitted["resiliency"] = "the network is disconnected before any link fails"
    if "resiliency" in names:
        # first: the only collective step, so an error in another section on one rank
        # cannot leave the other ranks waiting in it
        t = time.perf_counter()
        sec["resiliency"] = resiliency(topo, seed=seed, samples=samples, comm=comm,
                                       threads=threads, **resiliency_opts)
        secs["resiliency"] = time.perf_counter() - t
    if "paths" in names or "moore" in names:
        t = time.perf_counter()
        paths = path_metrics(topo, sample=sample, seed=seed, threads=threads)
        secs["paths"] = time.perf_counter() - t
        if "paths" in names:
            sec["paths"] = paths
        if "moore" in names:
            d = paths["router"]["diameter"] if paths["sampled"] is None else None
            sec["moore"] = moore_report(topo, d)
    if "shortest-paths" in names:
        t = time.perf_counter()
        sec["shortest-paths"] = shortest_paths_report(topo, sample=sample, seed=seed,
                                                      threads=threads)
        secs["shortest-paths"] = time.perf_counter() - t
    if "latency" in names:
        t = time.perf_counter()
        sec["latency"] = latency_report(topo, layout, sample=sample, seed=seed, threads=threads,
                                        **latency_opts)
        secs["latency"] = time.perf_counter() - t
    if "bisection" in names:
        t = time.perf_counter()
        sec["bisection"] = bisection(topo, seeds=bisection_seeds, seed=seed)
        secs["bisection"] = time.perf_counter() - t
    if "cables" in names:
        sec["cables"] = layout.summary()
    if "cost" in names:
        sec["cost"] = cost(topo, layout, **cost_opts)
    if "power" in names:
        sec["power"] = power(topo, model=power_model, radix=cost_opts.get("radix", "max"))
    if "load" in names:
        from ..metrics import distance_matrix
        from .load import load_report
        t = time.perf_counter()
        sec["load"] = load_report(topo, distance_matrix(topo, threads=threads))
        secs["load"] = time.perf_counter() - t
    if "throughput" in names:
        from .throughput import throughput_report
        t = time.perf_counter()
        kw = dict(throughput_opts)
        kw.setdefault("seed", seed)
        sec["throughput"] = throughput_report(topo, kw.pop("plan"), **kw)
        secs["throughput"] = time.perf_counter() - t
    if "path-sets" in names:
        from .path_sets import path_sets_report
        t = time.perf_counter()
        sec["path-sets"] = path_sets_report(topo, seed=seed, sample=sample, **path_sets_opts)
        secs["path-sets"] = time.perf_counter() - t
    out = {"summary": topo.summary(), "analyses": list(names)}
    if omitted:
        out["omitted"] = omitted
    out.update((k, sec[k]) for k in ANALYSES if k in sec)
    out["seconds"] = {k: round(v, 4) for k, v in secs.items()}
    return out
