"""Maximum achievable throughput by linear programming (``pdes analyze --only throughput``).

The method of TopoBench (Jyothi et al., SC 2016; 003 Sec. 6.4, Fig. 9): the largest ``t``
such that every communicating pair ``(s, d)`` can send ``t * D[s, d]`` at the same time
(concurrent multicommodity flow), every directed router-to-router channel carrying at most 1
(flits per cycle).  Endpoint links are not constrained (the bottleneck is taken to be inside
the network) and traffic between two endpoints of one router crosses no channel.

Demand
    Every active endpoint of the traffic pattern offers 1 (its link rate) split as the
    pattern splits it: ``table`` patterns send everything to their one destination,
    ``two_choice`` half to each, ``uniform`` ``1 / (E - 1)`` to every other endpoint (only
    the pattern's active sources send).  ``t`` is thus the largest injection rate, in flits
    per cycle per endpoint, that the network can carry: 1.5 means 1.5 times the demand of
    every pair, as in 003.  A *fraction* ``f`` of communicating pairs keeps
    ``round(f * pairs)`` of the pattern's endpoint pairs, drawn uniformly without
    replacement (``default_rng(seed)``), each with its demand unchanged (003 Fig. 9's
    "fraction of communicating endpoint pairs"); the endpoint demands are then summed per
    (source router, destination router).

Unrestricted LP
    Edge-based multicommodity flow with the commodities aggregated by source router: one
    variable per (source router with demand, directed channel) plus ``t``; flow
    conservation at every router other than the source (inflow - outflow = ``t D[s, v]``),
    and the sum over sources on each channel at most 1.  Aggregating by source is exact
    for concurrent flow (any per-destination flow sums to a per-source flow and a
    per-source flow decomposes into paths to each destination) and cuts the variables
    from (pairs x channels) to (sources x channels).
Restricted LP
    One variable per (router pair with demand, path of the routing) plus ``t``; the paths
    of a pair carry ``t D[s, d]`` together and each channel at most 1.  Path sets:
    ``min`` every shortest path, enumerated depth first in port order and capped at
    :data:`MAX_PATHS_PER_PAIR` per pair (the report counts the capped pairs);
    ``layered`` the minimal paths (layer 0) and the path of every layer ``1..L-1`` of
    :func:`models.routing.layered.build_layers` (003 Sec. 4.3), duplicates merged;
    ``rues`` and ``fatpaths`` the same with the layers of those routings (their default
    parameters; a pair its layer does not reach has only layer 0's paths there).

Both LPs are sparse (``scipy.sparse``) and solved by HiGHS (``scipy.optimize.linprog``).
Above ``max_variables`` (default :data:`MAX_LP_VARIABLES`) variables an LP is refused
before it is built.
"""
from __future__ import annotations

import time

import numpy as np

from models.core.errors import ParameterError
from .routing_paths import buffers, csr, paths_of_pair

MAX_LP_VARIABLES = 2_000_000
"""Default largest LP (variables) :func:`throughput_report` builds (``--max-lp-variables``)."""

MAX_PATHS_PER_PAIR = 64
"""Shortest paths enumerated per router pair for the ``min`` path set."""

RESTRICTIONS = ("min", "layered", "rues", "fatpaths")
"""Path sets the restricted LP can use."""

DEFAULT_RESTRICT = ("min", "layered")
"""Path sets of the restricted LPs when ``--restrict`` is not given."""

LAYER_ROUTINGS = ("layered", "rues", "fatpaths")
"""Path sets built from a layered routing's tables, one per ``--layers`` count."""

DEFAULT_FRACTIONS = (0.2, 0.55, 1.0)
"""Fractions of communicating endpoint pairs (003 Fig. 9 plots three; its text gives no
values)."""

KINDS = ("uniform", "table", "two_choice")
"""Traffic plan kinds whose demand matrix is defined here."""


# ----------------------------------------------------------------------------- demand
def check_plan(plan) -> None:
    """Refuse a traffic plan whose kind has no demand matrix here (:data:`KINDS`)."""
    if plan.kind not in KINDS:
        raise ParameterError(f"--traffic: throughput needs a pattern of kind "
                             f"{', '.join(KINDS)}; {plan.description!r} is {plan.kind!r}")


def endpoint_pairs(topo, plan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(src, dst, demand)`` of every communicating endpoint pair of a traffic plan
    (endpoint ids, demand in flits per cycle per unit of injection rate; each active source
    offers 1 in total)."""
    check_plan(plan)
    E = topo.n_endpoints
    act = np.asarray(plan.active, dtype=bool)
    if plan.kind == "uniform":
        src = np.nonzero(act)[0]
        if E < 2 or src.size == 0:
            z = np.zeros(0, np.int64)
            return z, z, np.zeros(0)
        s = np.repeat(src, E - 1)
        k = np.tile(np.arange(E - 1), src.size)
        d = k + (k >= s)                        # every endpoint but the source
        return s, d, np.full(s.size, 1.0 / (E - 1))
    tabs = [np.asarray(plan.table)] if plan.kind == "table" else \
        [np.asarray(plan.table), np.asarray(plan.table2)]
    ss, dd = [], []
    for tab in tabs:
        s = np.nonzero(act & (tab >= 0))[0]
        ss.append(s)
        dd.append(tab[s].astype(np.int64))
    w = 1.0 / len(tabs)
    s, d = np.concatenate(ss), np.concatenate(dd)
    return s, d, np.full(s.size, w)


def router_demand(topo, src, dst, demand, fraction: float = 1.0, seed: int = 0):
    """Router demand matrix (dense ``(R, R)``, zero diagonal) of a ``fraction`` of the
    endpoint pairs, drawn as the module docstring says, and the number of pairs kept."""
    n = src.size
    if fraction < 1.0:
        k = int(round(fraction * n))
        keep = np.sort(np.random.default_rng(seed).choice(n, size=k, replace=False))
        src, dst, demand = src[keep], dst[keep], demand[keep]
    R = topo.n_routers
    er = np.asarray(topo.endpoint_router, dtype=np.int64)
    rs, rd = er[src], er[dst]
    D = np.zeros((R, R))
    np.add.at(D, (rs, rd), demand)
    np.fill_diagonal(D, 0.0)
    return D, int(src.size)


# ----------------------------------------------------------------------------- paths
def _arcs(topo):
    """(tail, head) router of every directed channel (indexed like ``port_out_channel``)."""
    off = np.asarray(topo.port_offsets, dtype=np.int64)
    nbr = np.asarray(topo.port_neighbor, dtype=np.int64)
    chan = np.asarray(topo.port_out_channel, dtype=np.int64)
    tail = np.empty(chan.size, np.int64)
    head = np.empty(chan.size, np.int64)
    tail[chan] = np.repeat(np.arange(topo.n_routers), np.diff(off))
    head[chan] = nbr
    return tail, head


def minimal_paths(topo, dist, s: int, d: int, cap: int = MAX_PATHS_PER_PAIR):
    """Up to ``cap`` shortest paths from router ``s`` to ``d`` as tuples of channel ids
    (depth first, neighbours in port order) and whether the cap cut the enumeration
    (:func:`.routing_paths.paths_of_pair` without tables)."""
    return paths_of_pair(topo, dist, None, s, d, True, cap)


# ----------------------------------------------------------------------------- the LPs
def _limit(what: str, n: int, max_variables: int) -> None:
    if n > max_variables:
        raise ParameterError(f"--only: throughput: the {what} LP would have {n:,} variables, "
                             f"above the limit of {max_variables:,} (--max-lp-variables)")


def unrestricted_variables(topo) -> int:
    """Variables of the unrestricted LP when every router sends: routers x channels + 1."""
    return topo.n_routers * 2 * topo.n_links + 1


def check_variables(routers: int, links: int, max_variables: int = MAX_LP_VARIABLES) -> None:
    """Refuse a network of ``routers`` and ``links`` whose unrestricted LP may exceed the
    limit (every router a source: routers x 2 links + 1 variables), before any work."""
    _limit("unrestricted", routers * 2 * links + 1, max_variables)


def _solve(c, A_ub, b_ub, A_eq, b_eq):
    from scipy.optimize import linprog
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=(0, None),
                  method="highs-ipm")
    if res.status != 0:
        raise RuntimeError(f"throughput LP: HiGHS did not solve it: {res.message}")
    return float(res.x[-1])


def unrestricted(topo, D, max_variables: int = MAX_LP_VARIABLES) -> dict:
    """Concurrent-flow throughput of demand ``D`` over any paths (see the module docstring)."""
    import scipy.sparse as sp
    t0 = time.perf_counter()
    srcs = np.nonzero(D.sum(axis=1) > 0)[0]
    R, A = topo.n_routers, 2 * topo.n_links
    nvar = srcs.size * A + 1
    _limit("unrestricted", nvar, max_variables)
    if srcs.size == 0:
        return {"throughput": None, "variables": 0, "constraints": 0, "seconds": 0.0}
    tail, head = _arcs(topo)
    S = srcs.size
    # conservation rows (source i, router v), v != s_i: in - out - D[s_i, v] t = 0
    B = sp.csr_matrix((np.r_[np.ones(A), -np.ones(A)], (np.r_[head, tail], np.r_[
        np.arange(A), np.arange(A)])), shape=(R, A))
    flows = sp.kron(sp.identity(S, format="csr"), B, format="csr")
    keep = np.ones(S * R, dtype=bool)
    keep[np.arange(S) * R + srcs] = False
    tcol = sp.csr_matrix(-D[srcs].reshape(-1, 1))
    A_eq = sp.hstack([flows, tcol], format="csr")[keep]
    b_eq = np.zeros(A_eq.shape[0])
    cap = sp.hstack([sp.kron(np.ones((1, S)), sp.identity(A), format="csr"),
                     sp.csr_matrix((A, 1))], format="csr")
    c = np.zeros(nvar)
    c[-1] = -1.0
    t = _solve(c, cap, np.ones(A), A_eq, b_eq)
    return {"throughput": t, "variables": int(nvar), "constraints": int(A_eq.shape[0] + A),
            "seconds": time.perf_counter() - t0}


def restricted(topo, D, paths: dict, max_variables: int = MAX_LP_VARIABLES) -> dict:
    """Concurrent-flow throughput of demand ``D`` when pair ``(s, d)`` may only use
    ``paths[(s, d)]`` (tuples of channel ids).  A pair with demand and no path gives 0."""
    import scipy.sparse as sp
    t0 = time.perf_counter()
    pairs = [(int(s), int(d)) for s, d in zip(*np.nonzero(D))]
    npaths = sum(len(paths.get(p, ())) for p in pairs)
    nvar = npaths + 1
    _limit("restricted", nvar, max_variables)
    if not pairs:
        return {"throughput": None, "variables": 0, "constraints": 0, "paths": 0,
                "seconds": 0.0}
    if any(not paths.get(p) for p in pairs):
        return {"throughput": 0.0, "variables": int(nvar), "constraints": 0,
                "paths": int(npaths), "seconds": time.perf_counter() - t0}
    A = 2 * topo.n_links
    rows, cols, prow, pcol = [], [], [], []
    j = 0
    for k, p in enumerate(pairs):
        for path in paths[p]:
            rows.extend(path)
            cols.extend([j] * len(path))
            prow.append(k)
            pcol.append(j)
            j += 1
    cap = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(A, nvar))
    dem = np.array([D[p] for p in pairs])
    A_eq = sp.csr_matrix((np.r_[np.ones(j), -dem], (np.r_[prow, np.arange(len(pairs))],
                                                   np.r_[pcol, np.full(len(pairs), j)])),
                         shape=(len(pairs), nvar))
    c = np.zeros(nvar)
    c[-1] = -1.0
    t = _solve(c, cap, np.ones(A), A_eq, np.zeros(len(pairs)))
    return {"throughput": t, "variables": int(nvar), "constraints": int(A + len(pairs)),
            "paths": int(npaths), "seconds": time.perf_counter() - t0}


def path_sets(topo, dist, D, restrict, layers=(4,), seed: int = 0,
              cap: int = MAX_PATHS_PER_PAIR) -> dict:
    """Path set per restriction name (``min``; ``layered-L``, ``rues-L``, ``fatpaths-L`` per
    layer count) for the router pairs with demand, and the number of pairs the ``cap`` cut:
    the paths of :func:`.routing_paths.paths_of_pair` (a layered routing: the minimal paths
    and the path of each layer ``1..L-1``, duplicates once)."""
    pairs = [(int(s), int(d)) for s, d in zip(*np.nonzero(D))]
    tables = {}
    if "min" in restrict:
        tables["min"] = None
    for name in (n for n in LAYER_ROUTINGS if n in restrict):
        for L in layers:
            tables[f"{name}-{L}"] = _layer_tables(name, topo, dist, int(L), seed)
    out = {}
    for name, tab in tables.items():
        arrays = (csr(topo), buffers(topo.n_routers, 0 if tab is None else tab.shape[0], cap))
        sets, capped = {}, 0
        for s, d in pairs:
            sets[(s, d)], cut = paths_of_pair(topo, dist, tab, s, d, True, cap, arrays)
            capped += cut
        out[name] = (sets, capped)
    return out


def _layer_tables(name: str, topo, dist, layers: int, seed: int) -> np.ndarray:
    """Next-hop tables ``(L-1, R, R)`` of layers 1..L-1 of a layered routing (its default
    parameters, ``seed`` as ``measure.seed``)."""
    if name == "layered":
        from models.routing.layered import build_layers
        return build_layers(topo, dist, layers, seed)[0]
    if name == "rues":
        from models.routing.layered import rues
        return rues(topo, dist, layers=layers, seed=seed).tables["lay_port"]
    from models.routing.fatpaths import fatpaths
    return fatpaths(topo, dist, layers=layers, seed=seed).tables["lay_port"]


# ----------------------------------------------------------------------------- options
def parse_fractions(text) -> tuple[float, ...]:
    """``--pair-fractions``: comma-separated numbers in (0, 1]."""
    if text is None:
        return DEFAULT_FRACTIONS
    out = []
    for part in [p.strip() for p in str(text).split(",")]:
        try:
            f = float(part)
        except ValueError:
            raise ParameterError(f"--pair-fractions: expected numbers in (0, 1], got {text!r}") \
                from None
        if not 0 < f <= 1:
            raise ParameterError(f"--pair-fractions: each fraction must be in (0, 1], got {part}")
        out.append(f)
    return tuple(out)


def parse_restrict(text) -> tuple[str, ...]:
    """``--restrict``: comma-separated path sets of :data:`RESTRICTIONS` (``none``: only the
    unrestricted LP)."""
    if text is None:
        return DEFAULT_RESTRICT
    names = [p.strip() for p in str(text).split(",") if p.strip()]
    if names == ["none"]:
        return ()
    for n in names:
        if n not in RESTRICTIONS:
            raise ParameterError(f"--restrict: unknown path set {n!r} (known: "
                                 f"{', '.join(RESTRICTIONS)}, or none)")
    if not names:
        raise ParameterError(f"--restrict: give {', '.join(RESTRICTIONS)} or none")
    return tuple(n for n in RESTRICTIONS if n in names)


LAYERS_MAX = 256
"""The most layers of a layered path set (FatPaths uses a handful; each layer is a copy of
the network's links)."""


def parse_layers(text) -> tuple[int, ...]:
    """``--layers``: comma-separated layer counts >= 1 of the layered path set."""
    if text is None:
        return (4,)
    out = []
    for part in [p.strip() for p in str(text).split(",")]:
        try:
            n = int(part, 10)
        except ValueError:
            raise ParameterError(f"--layers: expected integers >= 1, got {text!r}") from None
        if not 1 <= n <= LAYERS_MAX:
            raise ParameterError(f"--layers: each layer count must be in [1, {LAYERS_MAX}], "
                                 f"got {part}")
        out.append(n)
    return tuple(dict.fromkeys(out))


def check_throughput(topo, max_variables: int = MAX_LP_VARIABLES) -> None:
    """Refuse, before any work, a network whose unrestricted LP may exceed the limit
    (every router a source: routers x directed channels + 1 variables)."""
    check_variables(topo.n_routers, topo.n_links, max_variables)


# ----------------------------------------------------------------------------- report
def throughput_report(topo, plan, fractions=DEFAULT_FRACTIONS, restrict=DEFAULT_RESTRICT,
                      layers=(4,), seed: int = 0, max_variables: int = MAX_LP_VARIABLES,
                      dist=None) -> dict:
    """Maximum achievable throughput of ``plan`` (a :class:`TrafficPlan`) at each fraction of
    communicating pairs: unrestricted and restricted to each path set."""
    check_throughput(topo, max_variables)
    if isinstance(max_variables, bool) or int(max_variables) < 1:
        raise ParameterError(f"--max-lp-variables: must be an integer >= 1, got {max_variables}")
    src, dst, dem = endpoint_pairs(topo, plan)
    if dist is None and restrict:
        from ..metrics import distance_matrix
        dist = distance_matrix(topo)
    rows = []
    for f in fractions:
        D, kept = router_demand(topo, src, dst, dem, f, seed)
        row = {"fraction": float(f), "endpoint_pairs": kept,
               "router_pairs": int(np.count_nonzero(D)),
               "unrestricted": unrestricted(topo, D, max_variables)}
        for name, (sets, capped) in path_sets(topo, dist, D, restrict, layers, seed).items():
            row[name] = restricted(topo, D, sets, max_variables)
            row[name]["capped_pairs"] = int(capped)
        rows.append(row)
    return {"pattern": plan.description, "kind": plan.kind, "seed": int(seed),
            "endpoint_pairs": int(src.size), "restrict": list(restrict),
            "layers": [int(x) for x in layers], "max_paths_per_pair": MAX_PATHS_PER_PAIR,
            "max_lp_variables": int(max_variables), "fractions": rows}
