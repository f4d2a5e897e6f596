"""Adversarial (worst-case) traffic for minimal routing, one builder per topology family.

``worst_case`` picks the builder for the configured topology by its
registered name; each builder is also registered on its own
(``worst_slimfly``, ``worst_dragonfly``, ...) and refuses other topologies.
All of them return permutation tables (``kind = "table"``): every active
endpoint sends to one endpoint and receives from one, so no endpoint link is
overloaded and the bottleneck is inside the network (001 Sec. 4.2).

=========== ==================================================================
topology    pattern
=========== ==================================================================
slimfly     routers paired at distance 2 so that two pairs share one link
            (000 Sec. V-C Fig. 9, 001 Sec. 4.2 Fig. 5); max link load 2p flows
dragonfly   every endpoint of group i sends to group i+1 (Kim et al. ISCA08
            Sec. 4.2, as used by 000 Sec. V-C and 004 Sec. 5)
fattree     every endpoint of pod (2 levels: leaf) i sends to pod i+1, so
            every minimal route crosses the top level (000 Sec. V-C)
galaxyfly   every endpoint of cluster i sends to cluster i+1 (004 Sec. 5)
hyperx      tornado per dimension on the router coordinates (004 Sec. 5:
            "similar to the tornado pattern of the k-ary n-cube")
mlfm        shift by h endpoints (001 Sec. 4.2)
oft         shift by k endpoints (001 Sec. 4.2)
=========== ==================================================================
"""
from __future__ import annotations

import numpy as np

from models.errors import ParameterError
from models.registry import TRAFFIC
from models.traffic import TrafficPlan
from models.traffic.basic import shift
from models.traffic.patterns import _router_map_to_endpoints, shift_coords, tornado_offset


def _require(topo, name: str, pattern: str):
    if topo.name != name:
        raise ParameterError(f"traffic.pattern: {pattern} is defined for topology '{name}', "
                             f"not '{topo.name}' (use worst_case to pick by topology)")


def group_shift(topo, router_group: np.ndarray, what: str) -> np.ndarray:
    """Endpoint with local index ``j`` in group ``g`` -> local index ``j`` of group ``g+1``.

    ``router_group`` gives the group of each router; only groups that
    contain endpoints count, in increasing id order and cyclically.  When
    group sizes differ the index is taken modulo the target group's size.
    """
    g_ep = np.asarray(router_group, dtype=np.int64)[topo.endpoint_router]
    ids, inv, sizes = np.unique(g_ep, return_inverse=True, return_counts=True)
    if ids.size < 2:
        raise ParameterError(f"traffic.pattern: the worst case needs at least 2 {what}s with "
                             f"endpoints, this {topo.name} has {ids.size}")
    order = np.argsort(inv, kind="stable")        # endpoints grouped, id order inside
    start = np.zeros(ids.size, dtype=np.int64)
    np.cumsum(sizes[:-1], out=start[1:])
    local = np.empty(topo.n_endpoints, dtype=np.int64)
    local[order] = np.arange(topo.n_endpoints) - np.repeat(start, sizes)
    tgt = (inv + 1) % ids.size
    return order[start[tgt] + local % sizes[tgt]].astype(np.int32)


# ====================================================================== Slim Fly
def slimfly_router_pairs(topo, dist=None):
    """Greedy router pairing of the Slim Fly worst case (000 Sec. V-C, 001 Sec. 4.2).

    Returns ``(partner, quads)``: ``partner[r]`` is the router ``r`` sends
    to and receives from (-1 = idle), ``quads`` an ``(n, 4)`` array of the
    overlapping chains ``(A, B, C, D)``.

    Phase 1 visits the routers ``B`` in id order and, for each unmatched
    neighbour ``C`` in port order, looks for unmatched routers ``A`` in
    N(B) and ``D`` in N(C) such that ``B`` is the *only* common neighbour of
    ``A`` and ``C`` and ``C`` the only common neighbour of ``B`` and ``D``
    (both pairs at distance 2).  It pairs ``A <-> C`` and ``B <-> D``: the
    unique minimal routes A-B-C and B-C-D (and their reverses) share the
    link B-C, which then carries ``2p`` flows per direction.  One pass is
    exhaustive: a failed ``B`` cannot succeed later, as matching only
    removes candidates.  Phase 2 pairs the routers left over with one
    another (first at distance 2, then at distance 1); a router still
    alone stays idle.

    Load bound: a route of at most 2 hops between paired routers ``r, s``
    has ``r`` or ``s`` at an end of each of its links, and a router belongs
    to one pair, so a link carries at most two pairs' flows, ``2p`` per
    direction, under any minimal routing.  The chains reach the bound on
    their middle link, because their routes are the unique minimal paths.
    """
    from models.metrics import distance_matrix
    d = distance_matrix(topo) if dist is None else dist
    R = topo.n_routers
    off = topo.port_offsets
    nb = topo.port_neighbor.astype(np.int64)
    deg = np.diff(off).astype(np.int64)
    pad = np.full((R, max(int(deg.max(initial=0)), 1)), R, dtype=np.int64)  # R = no neighbour
    pad[np.repeat(np.arange(R), deg), np.arange(nb.size) - np.repeat(off[:-1], deg)] = nb
    adj1 = np.zeros((R, R + 1), dtype=bool)   # column R: the padding never counts
    adj1[:, :R] = d == 1

    def sole_common(cands, x):
        """The candidates that have exactly one common neighbour with router x."""
        return cands[adj1[x][pad[cands]].sum(axis=1) == 1]

    partner = np.full(R, -1, dtype=np.int64)
    quads = []
    for B in range(R):
        if partner[B] >= 0 or topo.endpoints[B] == 0:
            continue
        NB = nb[off[B]:off[B + 1]]
        NB = NB[(partner[NB] < 0) & (topo.endpoints[NB] > 0)]
        for C in NB:
            cA = NB[(NB != C) & (d[NB, C] == 2)]
            cA = sole_common(cA, C) if cA.size else cA
            if cA.size == 0:
                continue
            NC = nb[off[C]:off[C + 1]]
            cD = NC[(NC != B) & (partner[NC] < 0) & (topo.endpoints[NC] > 0) & (d[B, NC] == 2)]
            cD = sole_common(cD, B) if cD.size else cD
            if cD.size == 0:
                continue
            A, D = int(cA[0]), int(cD[0])    # A is in N(B), D is not: A != D
            partner[[A, B, C, D]] = [C, D, A, B]
            quads.append((A, int(B), int(C), D))
            break
    for want in (2, 1):                      # phase 2: leftovers among themselves
        for r in range(R):
            if partner[r] >= 0 or topo.endpoints[r] == 0:
                continue
            free = np.nonzero((partner < 0) & (topo.endpoints > 0) & (d[r] == want))[0]
            if free.size:
                s = int(free[0])
                partner[r], partner[s] = s, r
    return partner, np.asarray(quads, dtype=np.int64).reshape(-1, 4)


def worst_slimfly(topo, seed):
    """Slim Fly worst case for minimal routing: overlapping distance-2 pairs (000 Sec. V-C).

    Routers are paired by :func:`slimfly_router_pairs`; endpoint ``i`` of a
    router sends to endpoint ``i`` of its partner (and the partner's
    endpoint ``i`` sends back), as in 001 Sec. 4.2 Fig. 5 (R_A -> R_C,
    R_B -> R_D).  Minimal routing saturates at ``1/(2p)``.  The pairing is a
    fixed function of the topology (the seed is not used).
    """
    _require(topo, "slimfly", "worst_slimfly")
    partner, quads = slimfly_router_pairs(topo)
    new = partner.copy()
    idle = partner < 0
    new[idle] = np.nonzero(idle)[0]
    table = _router_map_to_endpoints(topo, new)
    table[idle[topo.endpoint_router]] = -1
    n_pairs = int((partner >= 0).sum()) // 2 - 2 * len(quads)
    return TrafficPlan("table", table,
                       f"Slim Fly worst case: {len(quads)} overlapping chains, {n_pairs} extra "
                       f"router pairs, {int(idle.sum())} routers idle")


# ===================================================================== the others
def worst_dragonfly(topo, seed):
    """Dragonfly worst case: every endpoint of group ``i`` sends to group ``i+1 mod g``.

    Endpoint ``j`` of group ``i`` (in endpoint order) sends to endpoint ``j``
    of group ``i+1``; with one global link between two groups all ``a p``
    flows of a group share it.  This is the adversarial pattern of Kim et
    al. (ISCA08 Sec. 4.2) that 000 Sec. V-C and 004 Sec. 5 use; Kim et al.
    draw the destination node in group ``i+1`` at random, here it is fixed
    so the pattern is a permutation.
    """
    _require(topo, "dragonfly", "worst_dragonfly")
    return TrafficPlan("table", group_shift(topo, topo.group, "group"),
                       "Dragonfly worst case: group i -> group i+1")


def worst_fattree(topo, seed):
    """Fat tree worst case: every packet crosses the top level (000 Sec. V-C).

    3 levels: endpoint ``j`` of pod ``i`` sends to endpoint ``j`` of pod
    ``i+1``; 2 levels: of leaf ``i`` to leaf ``i+1``.  The nearest common
    ancestor of source and destination is then a core (spine) router.
    """
    _require(topo, "fattree", "worst_fattree")
    what = "pod" if topo.params.get("levels", 3) == 3 else "leaf"
    return TrafficPlan("table", group_shift(topo, topo.group, what),
                       f"fat tree worst case: {what} i -> {what} i+1 through the top level")


def worst_galaxyfly(topo, seed):
    """Galaxyfly worst case: every endpoint of cluster ``i`` sends to cluster ``i+1`` (004 Sec. 5)."""
    _require(topo, "galaxyfly", "worst_galaxyfly")
    return TrafficPlan("table", group_shift(topo, topo.meta["cluster"], "cluster"),
                       "Galaxyfly worst case: cluster i -> cluster i+1")


def worst_hyperx(topo, seed):
    """HyperX / flattened butterfly worst case: tornado in every dimension (004 Sec. 5).

    Router ``x`` sends to ``x_i + t(S_i) mod S_i`` in every dimension of
    size > 1 (``t(S) = max(1, ceil(S/2) - 1)``), so every route takes one
    hop per dimension and the ``p`` flows of a router share each link.
    """
    _require(topo, "hyperx", "worst_hyperx")
    sizes = list(topo.meta["sizes"])
    steps = [tornado_offset(s) for s in sizes]
    if not any(steps):
        raise ParameterError(f"traffic.pattern: HyperX {sizes} has a single router, no worst case")
    return TrafficPlan("table", _router_map_to_endpoints(topo, shift_coords(topo, steps)),
                       f"HyperX worst case: tornado per dimension, steps {steps}")


def worst_mlfm(topo, seed):
    """MLFM worst case: shift by ``h`` endpoints, LR to the next LR over one path (001 Sec. 4.2)."""
    _require(topo, "mlfm", "worst_mlfm")
    plan = shift(topo, seed, s=int(topo.params["h"]))
    return TrafficPlan("table", plan.table, f"MLFM worst case: {plan.description}")


def worst_oft(topo, seed):
    """OFT worst case: shift by ``k`` endpoints (001 Sec. 4.2)."""
    _require(topo, "oft", "worst_oft")
    k = int(topo.params["k"])
    plan = shift(topo, seed, s=k)
    return TrafficPlan("table", plan.table, f"OFT worst case: {plan.description}")


WORST = {
    "dragonfly": worst_dragonfly,
    "fattree": worst_fattree,
    "galaxyfly": worst_galaxyfly,
    "hyperx": worst_hyperx,
    "mlfm": worst_mlfm,
    "oft": worst_oft,
    "slimfly": worst_slimfly,
}


def worst_case(topo, seed):
    """The worst-case pattern of the configured topology (see the module table)."""
    func = WORST.get(topo.name)
    if func is None:
        raise ParameterError(f"traffic.pattern: no worst case is defined for topology "
                             f"'{topo.name}' (known: {', '.join(sorted(WORST))})")
    return func(topo, seed)


_REFS = {
    "slimfly": ("routers paired at distance 2, two pairs per link (max load 2p)",
                "000 Sec. V-C; 001 Sec. 4.2 Fig. 5"),
    "dragonfly": ("group i sends to group i+1", "000 Sec. V-C; 004 Sec. 5"),
    "fattree": ("pod (leaf) i sends to pod (leaf) i+1, through the top level", "000 Sec. V-C"),
    "galaxyfly": ("cluster i sends to cluster i+1", "004 Sec. 5"),
    "hyperx": ("tornado in every dimension", "004 Sec. 5"),
    "mlfm": ("shift by h endpoints", "001 Sec. 4.2"),
    "oft": ("shift by k endpoints", "001 Sec. 4.2"),
}
for _name, (_summary, _ref) in _REFS.items():
    TRAFFIC.register(f"worst_{_name}", WORST[_name], params=[],
                     summary=f"{_name} worst case: {_summary}", reference=_ref)
TRAFFIC.register("worst_case", worst_case, params=[],
                 summary="the worst case of the configured topology (" + ", ".join(sorted(WORST)) + ")",
                 reference="000 Sec. V-C; 001 Sec. 4.2; 004 Sec. 5")
