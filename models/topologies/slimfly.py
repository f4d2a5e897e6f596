"""Slim Fly: the McKay-Miller-Siran (MMS) graphs of diameter 2 (construction notes 1)."""
from __future__ import annotations

import numpy as np

from models.core.errors import ParameterError
from ..gf import GF, delta_of, generator_sets, is_prime_power
from models.core.registry import Hook, Param, TOPOLOGIES
from ..topology import Topology, TopologySize, check_build, from_edges

_Q_RULE = "q must be a prime power with q = 4w + delta, delta in {-1,0,1}, w >= 1"


def slim_fly(q: int = 5, p: int | None = None, p_rounding: str = "ceil") -> Topology:
    """Slim Fly router graph: the MMS graph of a prime power q.

    Routers are triples ``(s, x, y)``, ``s`` in {0, 1}, ``x, y`` in GF(q), with
    id ``s*q^2 + x*q + y``.  Links:

    1. ``(0,x,y) -- (0,x,y')`` iff ``y - y'`` in X;
    2. ``(1,m,c) -- (1,m,c')`` iff ``c - c'`` in X';
    3. ``(0,x,y) -- (1,m,c)`` iff ``y = m*x + c``.

    Parameters
    ----------
    q : int
        Prime power with ``q = 4w + delta``, ``delta`` in {-1, 0, 1}, ``w >= 1``
        (3, 4, 5, 7, 8, 9, 11, 13, 16, ...).
    p : int, optional
        Endpoints per router.  Default ``ceil(k'/2)`` (or ``floor`` with
        ``p_rounding="floor"``), where ``k' = (3q - delta)/2`` is the network
        radix.  Any ``p >= 0`` is accepted (oversubscription, 000 Sec. V-E).
    p_rounding : {"ceil", "floor"}
        Rounding of ``k'/2`` for the default ``p``.

    Returns
    -------
    Topology
        ``2 q^2`` routers, regular of degree ``k'``, diameter 2, ``q^2 k'``
        links.  ``group`` is the rack ``i`` = routers ``(0,i,.)`` and
        ``(1,i,.)`` (``group_kind="rack"``); links inside a rack are
        ``local``, the rest ``global``.

    Raises
    ------
    ParameterError
        If q is not a prime power, q = 2 (mod 4), or p < 0.

    Notes
    -----
    Field labels follow the canonical GF(q) of :mod:`models.gf`; the
    generator sets X, X' are those of :func:`models.gf.generator_sets`.
    001 prints the second rule as "(1,m,c) connects to (1,c,c')", a typo; 000
    eq. (2) is used.  Every pair of racks is joined by exactly 2q links.
    q = 5 gives the Hoffman-Singleton graph; q = 19 with p = 15 gives the
    10,830-endpoint network of 000 Sec. V.

    References
    ----------
    000 Sec. II-B (eqs. (1)-(3)), II-B2 (p = ceil(k'/2)), V-E (oversubscription),
    VI-A (racks); 001 Sec. 2.1.2 (generator sets, floor(k'/2)).
    """
    slim_fly_size(q, p, p_rounding)
    F = GF(q)
    X, Xp, delta = generator_sets(q)
    w = (q - delta) // 4
    k_net, p = _radix_and_p(q, p, p_rounding)

    q2 = q * q
    e = np.arange(q, dtype=np.int64)
    # rules 1 and 2: Cayley graphs on every row (s, x, .); keep each edge once (y < y2)
    us, vs = [], []
    for s, S in ((0, X), (1, Xp)):
        x = e[:, None, None]
        y = e[None, :, None]
        y2 = F.sub[e[:, None], np.asarray(S)[None, :]][None, :, :]   # (1, q, |S|)
        x, y, y2 = np.broadcast_arrays(x, y, y2)
        keep = y < y2
        base = s * q2 + x[keep] * q
        us.append(base + y[keep])
        vs.append(base + y2[keep])
    # rule 3: (0, x, m*x + c) -- (1, m, c)
    x = e[:, None, None]
    m = e[None, :, None]
    c = e[None, None, :]
    y = F.add[F.mul[m, x], c]                                          # (q, q, q)
    x, m, c, y = np.broadcast_arrays(x, m, c, y)
    us.append((x * q + y).ravel())
    vs.append((q2 + m * q + c).ravel())

    ids = np.arange(2 * q2, dtype=np.int64)
    group = (ids % q2) // q
    params = {"q": q, "p": p, "p_rounding": p_rounding, "delta": delta, "w": w,
              "k_net": k_net, "radix": k_net + p, "xi": F.xi}
    return from_edges("slimfly", params, 2 * q2, np.concatenate(us), np.concatenate(vs),
                      p, group, group_kind="rack", what="topology.q: Slim Fly")


def _radix_and_p(q: int, p: int | None, p_rounding: str) -> tuple[int, int]:
    """(network radix k' = (3q - delta)/2, endpoints per router) of a valid q."""
    k_net = (3 * q - delta_of(q)) // 2
    if p is None:
        p = (k_net + 1) // 2 if p_rounding == "ceil" else k_net // 2
    return k_net, p


def slim_fly_size(q: int = 5, p: int | None = None, p_rounding: str = "ceil") -> TopologySize:
    """``2q^2`` routers, ``q^2 k'`` links, ``2q^2 p`` endpoints; refuses what
    :func:`slim_fly` refuses before building."""
    if is_prime_power(q) is None:
        raise ParameterError(f"topology.q: Slim Fly q={q} is not a prime power ({_Q_RULE})")
    if q % 4 == 2:
        raise ParameterError(f"topology.q: Slim Fly q={q} is congruent to 2 mod 4 ({_Q_RULE})")
    k_net, p = _radix_and_p(q, p, p_rounding)
    size = TopologySize(2 * q * q, q * q * k_net, 2 * q * q * p)
    check_build(size.routers, size.links, "topology.q")
    return size


# ------------------------------------------------------------- worst case
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


def worst_case(topo, seed):
    """Slim Fly worst case for minimal routing: overlapping distance-2 pairs (000 Sec. V-C).

    Routers are paired by :func:`slimfly_router_pairs`; endpoint ``i`` of a
    router sends to endpoint ``i`` of its partner (and the partner's
    endpoint ``i`` sends back), as in 001 Sec. 4.2 Fig. 5 (R_A -> R_C,
    R_B -> R_D).  Minimal routing saturates at ``1/(2p)``.  The pairing is a
    fixed function of the topology (the seed is not used).
    """
    from ..traffic import TrafficPlan
    from ..traffic.patterns import router_map_to_endpoints
    partner, quads = slimfly_router_pairs(topo)
    new = partner.copy()
    idle = partner < 0
    new[idle] = np.nonzero(idle)[0]
    table = router_map_to_endpoints(topo, new)
    table[idle[topo.endpoint_router]] = -1
    n_pairs = int((partner >= 0).sum()) // 2 - 2 * len(quads)
    return TrafficPlan("table", table,
                       f"Slim Fly worst case: {len(quads)} overlapping chains, {n_pairs} extra "
                       f"router pairs, {int(idle.sum())} routers idle")


slim_fly = TOPOLOGIES.register(
    "slimfly", slim_fly,
    params=[
        Param("q", int, 5, "prime power, q mod 4 != 2 (q = 4w + delta)", lo=1),
        Param("p", int, None, "endpoints per router (default ceil(k'/2), k' = (3q-delta)/2)",
              lo=0),
        Param("p_rounding", str, "ceil", "rounding of k'/2 for the default p",
              choices=("ceil", "floor")),
    ],
    summary="Slim Fly (MMS graph), diameter 2",
    reference="000 Sec. II-B; 001 Sec. 2.1.2",
    size=slim_fly_size,
    worst_case=Hook(worst_case, "routers paired at distance 2, two pairs per link (max load 2p)",
                    "000 Sec. V-C; 001 Sec. 4.2 Fig. 5"),
)
