"""Two-level k-OFT (orthogonal fat tree) built from the k-ML3B table (construction notes 6)."""
from __future__ import annotations

import numpy as np

from models.core.errors import ParameterError
from models.core.registry import Hook, Param, TOPOLOGIES
from ..topology import Topology, TopologySize, check_build, from_edges


def _prime_power(q: int) -> tuple[int, int] | None:
    """``(p, m)`` with ``q = p**m`` for a prime ``p``, or ``None``."""
    if q < 2:
        return None
    p = next(d for d in range(2, q + 1) if q % d == 0)
    m = 0
    while q % p == 0:
        q //= p
        m += 1
    return (p, m) if q == 1 else None


def _field_tables(q: int, p: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Addition and multiplication tables of GF(q), elements encoded as in construction notes 0.1.

    Base-p digit ``i`` of an element is the coefficient of ``x^i``; for
    ``m > 1`` products are reduced modulo the first monic polynomial (by its
    integer code) for which ``x`` has order ``q - 1``.
    """
    elems = np.arange(q)
    if m == 1:
        return (elems[:, None] + elems[None, :]) % q, (elems[:, None] * elems[None, :]) % q
    weights = p ** np.arange(m)
    digits = (elems[:, None] // weights[None, :]) % p                 # (q, m)
    add = ((digits[:, None, :] + digits[None, :, :]) % p) @ weights   # (q, q)
    for code in range(q):
        low = [(code // p ** i) % p for i in range(m)]                # x^m = -sum low_i x^i
        e = [1] + [0] * (m - 1)
        powers = []
        for _ in range(q - 1):
            powers.append(sum(d * p ** i for i, d in enumerate(e)))
            top = e[-1]
            e = [(-top * low[0]) % p] + [(e[i - 1] - top * low[i]) % p for i in range(1, m)]
            if e == [1] + [0] * (m - 1):
                break
        if len(powers) == q - 1 and e == [1] + [0] * (m - 1):
            break
    exp = np.array(powers)
    log = np.zeros(q, dtype=np.int64)
    log[exp] = np.arange(q - 1)
    mul = np.zeros((q, q), dtype=np.int64)
    nz = elems[1:]
    mul[1:, 1:] = exp[(log[nz][:, None] + log[nz][None, :]) % (q - 1)]
    return add, mul


def ml3b_table(k: int) -> np.ndarray:
    """The ``R_L x k`` k-ML3B table: row ``i`` lists the L1 routers of L0 router ``i``.

    Follows the three steps of 001 Sec. 2.2.4 with the MOLS
    ``L_alpha[r][c] = r + alpha*c`` (``alpha = 1..k-2`` in that order,
    arithmetic in GF(k-1)), column ``c`` shifted by ``c*(k-1)``.  For
    ``k = 4`` this is 001 Table 2.
    """
    n = k - 1
    pm = _prime_power(n)
    if pm is None:
        raise ParameterError(f"topology.k: OFT k-1 = {n} must be a prime power")
    add, mul = _field_tables(n, *pm)
    r_l = k * n + 1
    table = np.empty((r_l, k), dtype=np.int64)
    table[0] = np.arange(r_l - k, r_l)
    table[1:, 0] = r_l - k + np.arange(r_l - 1) // n
    r, c = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    squares = [r * n + c, c * n + r]
    squares += [add[r, mul[alpha, c]] + c * n for alpha in range(1, n)]
    table[1:, 1:] = np.concatenate(squares, axis=0)
    return table


def oft(k: int = 4) -> Topology:
    """Two-level k-OFT: two single-path trees (levels 0 and 2) sharing level 1.

    Routers ``(level, i)`` for ``level`` in ``{0, 1, 2}`` and ``i`` in
    ``[0, R_L)``, ``R_L = k(k-1) + 1``; id ``level*R_L + i``.  L0 router
    ``i`` and L2 router ``i`` both connect to the L1 routers listed in row
    ``i`` of the k-ML3B table (:func:`ml3b_table`).  Rows are the points and
    columns the lines of a projective plane of order ``k-1``.

    Parameters
    ----------
    k : int
        Radix parameter, ``k >= 3`` with ``k - 1`` prime (001), or a prime
        power (extension: MOLS over GF(k-1)).

    Returns
    -------
    Topology
        ``R = 3k^2 - 3k + 3`` routers, ``N = 2k^3 - 2k^2 + 2k`` endpoints
        (``k`` per L0/L2 router, 0 on L1), ``2k*R_L`` links; every router has
        radix ``2k``.  Endpoint routers (L0 and L2) are at distance exactly
        2; router-graph diameter 3.  ``group`` (``group_kind="pod"``): pod
        ``b < k`` holds the L0 and L2 routers of block ``b`` (table rows
        ``1+b(k-1) .. (b+1)(k-1)``; row 0 joins pod 0) and L1 router
        ``R_L-k+b``; the other ``(k-1)^2`` L1 routers form spine groups
        ``k + floor(j/(k-1))``.  Link classes ``l0_l1`` and ``l2_l1``.
        ``meta["level"]`` is the level of each router and
        ``meta["ml3b"]`` the table.

    Raises
    ------
    ParameterError
        If ``k < 3`` or ``k - 1`` is not a prime power.

    Notes
    -----
    001 gives the procedure for ``k - 1`` prime only; for a prime power the
    same steps run with GF(k-1) arithmetic (checked: diameter and
    endpoint-router distance 2 hold).  k = 12 gives N = 3192 and R = 399
    (001 Sec. 4).  The pods are the proposal of construction notes 6; 001 gives
    no racks.

    References
    ----------
    001 Sec. 2.2.4 and Table 2 (4-ML3B); 001 Sec. 2.2.2 (stacked single-path
    trees).
    """
    oft_size(k)
    n = k - 1
    table = ml3b_table(k)
    r_l = table.shape[0]
    rows = np.repeat(np.arange(r_l, dtype=np.int64), k)
    up = r_l + table.ravel()
    u = np.concatenate([rows, 2 * r_l + rows])
    v = np.concatenate([up, up])
    cls = np.concatenate([np.zeros(rows.size, np.int8), np.ones(rows.size, np.int8)])
    n_r = 3 * r_l
    endpoints = np.full(n_r, k, np.int32)
    endpoints[r_l:2 * r_l] = 0
    pod = np.concatenate([[0], np.arange(r_l - 1) // n])
    l1 = np.arange(r_l)
    l1_group = np.where(l1 >= r_l - k, l1 - (r_l - k), k + l1 // n)
    group = np.concatenate([pod, l1_group, pod])
    level = np.repeat(np.arange(3, dtype=np.int8), r_l)
    params = {"k": k, "p": k, "radix": 2 * k, "routers_per_level": r_l}
    return from_edges("oft", params, n_r, u, v, endpoints, group, link_class=cls,
                      link_class_names=("l0_l1", "l2_l1"), group_kind="pod",
                      meta={"level": level, "ml3b": table}, what="topology: OFT")


def oft_size(k: int = 4) -> TopologySize:
    """``3 R_L`` routers (``R_L = k(k-1) + 1``), ``2k R_L`` links, ``2k R_L`` endpoints;
    refuses what :func:`oft` refuses before building."""
    r_l = k * (k - 1) + 1
    size = TopologySize(3 * r_l, 2 * k * r_l, 2 * k * r_l)
    check_build(size.routers, size.links, "topology.k")
    if _prime_power(k - 1) is None:
        raise ParameterError(
            f"topology.k: OFT k-1 = {k - 1} must be prime (001 Sec. 2.2.4: ML3B/MOLS procedure "
            "for k = prime + 1; prime powers accepted via GF(k-1))")
    return size


def worst_case(topo, seed):
    """OFT worst case: shift by ``k`` endpoints (001 Sec. 4.2)."""
    from ..traffic import TrafficPlan
    from ..traffic.basic import shift
    k = int(topo.params["k"])
    plan = shift(topo, seed, s=k)
    return TrafficPlan("table", plan.table, f"OFT worst case: {plan.description}")


oft = TOPOLOGIES.register(
    "oft", oft,
    params=[Param("k", int, 4, "router radix / 2; k-1 prime (prime power via GF(k-1))", lo=3)],
    summary="two-level orthogonal fat tree k-OFT (indirect), endpoint-router distance 2",
    reference="001 Sec. 2.2.4, Table 2",
    size=oft_size,
    worst_case=Hook(worst_case, "shift by k endpoints", "001 Sec. 4.2"),
)
