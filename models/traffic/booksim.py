"""BookSim2's synthetic patterns that pdes had no equivalent for (Jiang et al. 2013,
``traffic.cpp``), on endpoint ids ``0..N-1`` (BookSim's node ids when the network
numbers its nodes router by router, as pdes numbers endpoints).

Every rule below is BookSim's, the source included among the destinations where
BookSim's draw includes it (such a packet only crosses its own router).  BookSim
draws from one global generator; pdes draws each packet's destination from
(seed, source, creation cycle) (:mod:`pdes.kernels.traffic`), so the
destinations have BookSim's distribution, not its sequence.

* ``diagonal``     -- ``(s + 1) mod N`` with probability 1/3, else ``s`` itself;
* ``asymmetric``   -- ``s mod (N/2)`` or ``s mod (N/2) + N/2`` (``N/2`` rounded
  down), probability 1/2 each;
* ``taper64``      -- N = 64 only: with probability 1/2 one of the 9 endpoints
  ``(s + 8a + b) mod 64`` (a, b in {-1, 0, 1}, uniform), else uniform over all
  64 (the source included);
* ``bad_dragon``   -- uniform over the next group's endpoints, groups being
  consecutive blocks of ``group_endpoints`` ids: ``((g + 1) G + r) mod N`` with
  ``g = s div G`` and ``r`` uniform in ``0..G-1`` (BookSim's dragonfly has
  ``G = 2k * k``);
* ``badperm_yarc`` -- ``r * k + (s div k)`` with ``r`` uniform in ``0..k-1``: the
  ids as a k x k matrix, row ``i`` sends anywhere in column ``i``;
* ``hotspot_rates``-- every packet to one of the listed ``nodes``, node ``i``
  with probability ``rates[i] / sum(rates)`` (the source included);
* ``background``   -- uniform over the endpoints not in ``exclude`` (the source
  included); every endpoint sends.

All but ``asymmetric`` (a two-way choice) are ``weighted`` plans: each source
draws among a row of candidates with integer weights.
"""
from __future__ import annotations

import math

import numpy as np

from models.core.errors import ParameterError
from models.core.registry import TRAFFIC, Param
from models.traffic import TrafficPlan


def weighted_plan(rows: list, row_of: np.ndarray, description: str) -> TrafficPlan:
    """A ``weighted`` plan: ``rows`` are ``(candidates, weights)`` pairs (weights positive
    integers, at most 2**31 - 1 in total); source ``e`` draws from row ``row_of[e]``
    (-1: idle).  Equal candidates of a row are merged (their weights added)."""
    cand, cum, start, end = [], [], [], []
    pos = 0
    for c, w in rows:
        c = np.asarray(c, dtype=np.int64)
        w = np.asarray(w, dtype=np.int64)
        uniq, inv = np.unique(c, return_inverse=True)
        merged = np.zeros(uniq.size, dtype=np.int64)
        np.add.at(merged, inv, w)
        if merged.size == 0 or np.any(merged <= 0) or merged.sum() >= 2 ** 31:
            raise ValueError("a weighted row needs positive weights below 2**31 in total")
        cand.append(uniq)
        cum.append(np.cumsum(merged))
        start.append(pos)
        pos += uniq.size
        end.append(pos)
    row_of = np.asarray(row_of, dtype=np.int64)
    start, end = np.asarray(start, np.int64), np.asarray(end, np.int64)
    idle = row_of < 0
    table = np.where(idle, -1, start[np.maximum(row_of, 0)]).astype(np.int32)
    table2 = np.where(idle, -1, end[np.maximum(row_of, 0)]).astype(np.int32)
    return TrafficPlan("weighted", table, description, table2=table2,
                       set_a=np.concatenate(cand).astype(np.int32),
                       set_b=np.concatenate(cum).astype(np.int32))


def _n(topo, least: int, name: str) -> int:
    E = topo.n_endpoints
    if E < least:
        raise ParameterError(f"traffic.pattern: {name} needs at least {least} endpoints, got {E}")
    return E


def diagonal(topo, seed):
    """BookSim's diagonal: ``(s + 1) mod N`` with probability 1/3, else ``s`` itself."""
    E = _n(topo, 2, "diagonal")
    s = np.arange(E)
    return weighted_plan([([(e + 1) % E, e], [1, 2]) for e in s], s,
                         "diagonal: s+1 with probability 1/3, else s")


def asymmetric(topo, seed):
    """BookSim's asymmetric: ``s mod (N/2)`` or ``s mod (N/2) + N/2``, probability 1/2 each."""
    E = _n(topo, 2, "asymmetric")
    half = E // 2
    low = (np.arange(E) % half).astype(np.int32)
    return TrafficPlan("two_choice", low, f"asymmetric: s mod {half} (+ {half})",
                       table2=(low + half).astype(np.int32))


def taper64(topo, seed):
    """BookSim's taper64 (64 endpoints): half of the packets to one of the 9 ids
    ``s + 8a + b`` (mod 64, a and b in {-1, 0, 1}), the other half uniform over all 64."""
    E = topo.n_endpoints
    if E != 64:
        raise ParameterError(f"traffic.pattern: taper64 is defined on exactly 64 endpoints "
                             f"(an 8 x 8 array), got {E}")
    # probabilities 1/18 per neighbour and 1/128 per endpoint: weights 64 and 9 out of 1152
    near = np.array([8 * a + b for a in (-1, 0, 1) for b in (-1, 0, 1)])
    rows = [(np.concatenate([(e + near) % 64, np.arange(64)]),
             np.concatenate([np.full(9, 64), np.full(64, 9)])) for e in range(64)]
    return weighted_plan(rows, np.arange(64), "taper64: 1/2 to the 3 x 3 block around s, "
                         "1/2 uniform")


def _groups_of(topo) -> int | None:
    """Endpoints per group of a topology whose routers have groups (``topo.group``) holding
    equal, consecutive blocks of endpoint ids; else ``None``."""
    group = getattr(topo, "group", None)
    if group is None:
        return None
    g_ep = np.asarray(group, dtype=np.int64)[topo.endpoint_router]
    sizes = np.bincount(g_ep)
    if sizes.size == 0 or np.any(sizes != sizes[0]) or np.any(np.diff(g_ep) < 0):
        return None
    return int(sizes[0])


def bad_dragon(topo, seed, group_endpoints=None):
    """BookSim's dragonfly bad permutation: uniform over the endpoints of the next group
    (groups: consecutive blocks of ``group_endpoints`` ids; default the topology's groups)."""
    E = topo.n_endpoints
    G = group_endpoints if group_endpoints is not None else _groups_of(topo)
    if G is None:
        raise ParameterError(f"traffic.group_endpoints: required on {topo.name} (its routers "
                             "have no groups of consecutive endpoints)")
    if E % G or E // G < 2:
        got = (f"got {G}" if group_endpoints is not None else
               f"the topology's groups hold {G} each: give it")
        raise ParameterError(f"traffic.group_endpoints: must divide the {E} endpoints into at "
                             f"least 2 groups ({got})")
    ng = E // G
    rows = [(((g + 1) % ng) * G + np.arange(G), np.ones(G)) for g in range(ng)]
    return weighted_plan(rows, np.arange(E) // G,
                         f"bad_dragon: uniform over the next group ({ng} groups of {G})")


def badperm_yarc(topo, seed, k=None):
    """BookSim's badperm_yarc: ``r k + (s div k)``, ``r`` uniform in ``0..k-1`` (default
    ``k = sqrt(N)``)."""
    E = _n(topo, 4, "badperm_yarc")
    if k is None:
        k = math.isqrt(E)
        if k * k != E:
            raise ParameterError(f"traffic.k: required here (its default is the square root "
                                 f"of the endpoint count, and {E} is not a square)")
    if k < 2 or (k - 1) * k + (E - 1) // k >= E:
        raise ParameterError(f"traffic.k: must be >= 2 with (k-1) k + (N-1) div k < N = {E} "
                             f"(every destination an endpoint), got {k}")
    rows = [(r + k * np.arange(k), np.ones(k)) for r in range((E - 1) // k + 1)]
    return weighted_plan(rows, np.arange(E) // k, f"badperm_yarc: row s div {k} to column")


def hotspot_rates(topo, seed, nodes=(-1,), rates=(1,)):
    """BookSim's hotspot: every packet to one of ``nodes``, node ``i`` with weight
    ``rates[i]`` (missing rates repeat the last).  A negative node is drawn uniformly
    (seeded) once, as BookSim draws it at the start."""
    E = topo.n_endpoints
    nodes = [int(x) for x in nodes]
    rates = [int(x) for x in rates]
    if any(x >= E for x in nodes):
        raise ParameterError(f"traffic.nodes: endpoint ids must be < {E}, got {nodes}")
    if len(rates) > len(nodes):
        raise ParameterError(f"traffic.rates: {len(rates)} rates for {len(nodes)} nodes")
    rates = rates + [rates[-1]] * (len(nodes) - len(rates))
    if any(r <= 0 for r in rates) or sum(rates) >= 2 ** 31:
        raise ParameterError(f"traffic.rates: must be positive integers (below 2**31 in total), "
                             f"got {rates}")
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFFFFFFFFFF, 0xB005])
    nodes = [int(rng.integers(E)) if x < 0 else x for x in nodes]
    return weighted_plan([(nodes, rates)], np.zeros(E, dtype=np.int64),
                         f"hotspot_rates: nodes {nodes}, rates {rates}")


def background(topo, seed, exclude=None):
    """BookSim's background: uniform over the endpoints not in ``exclude`` (every endpoint
    sends, excluded ones too)."""
    E = topo.n_endpoints
    ex = sorted(set(int(x) for x in exclude or ()))
    if any(not 0 <= x < E for x in ex):
        raise ParameterError(f"traffic.exclude: endpoint ids must be in 0..{E - 1}, got {ex}")
    keep = np.setdiff1d(np.arange(E), ex)
    if keep.size == 0:
        raise ParameterError("traffic.exclude: excludes every endpoint")
    return weighted_plan([(keep, np.ones(keep.size))], np.zeros(E, dtype=np.int64),
                         f"background: uniform over {keep.size} endpoints ({len(ex)} excluded)")


_REF = "Jiang et al. 2013 (BookSim2 traffic.cpp)"
TRAFFIC.register("diagonal", diagonal, params=[],
                 summary="s+1 with probability 1/3, else s itself (BookSim)", reference=_REF)
TRAFFIC.register("asymmetric", asymmetric, params=[],
                 summary="s mod N/2 or s mod N/2 + N/2, probability 1/2 each (BookSim)",
                 reference=_REF)
TRAFFIC.register("taper64", taper64, params=[],
                 summary="64 endpoints: 1/2 to the 3x3 block around s (mod 64), 1/2 uniform "
                 "(BookSim)", reference=_REF)
TRAFFIC.register("bad_dragon", bad_dragon, params=[
    Param("group_endpoints", int, None, "endpoints per group (consecutive ids); default the "
          "topology's groups", lo=1)],
    summary="uniform over the next group's endpoints (BookSim's dragonfly bad permutation)",
    reference=_REF)
TRAFFIC.register("badperm_yarc", badperm_yarc, params=[
    Param("k", int, None, "matrix side; default sqrt(N)", lo=2)],
    summary="r k + s div k, r uniform: row s div k sends anywhere in that column (BookSim)",
    reference=_REF)
TRAFFIC.register("hotspot_rates", hotspot_rates, params=[
    Param("nodes", "int_list", [-1], "hot-spot endpoint ids (negative: drawn, seeded)", lo=-1),
    Param("rates", "int_list", [1], "integer weight of each hot spot (the last repeats)", lo=1)],
    summary="every packet to a listed hot spot, with integer weights (BookSim's hotspot)",
    reference=_REF)
TRAFFIC.register("background", background, params=[
    Param("exclude", "int_list", None, "endpoint ids that receive nothing", lo=0)],
    summary="uniform over the endpoints not excluded, source included (BookSim)",
    reference=_REF)
