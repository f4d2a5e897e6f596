"""Adversarial (worst-case) traffic for minimal routing, registered by each topology.

A topology family registers its worst case with itself
(``TOPOLOGIES.register(..., worst_case=Hook(func, summary, reference))``,
beside its generator).  ``worst_case`` picks the pattern of the configured
topology; each family's pattern is also registered on its own
(``worst_slimfly``, ``worst_dragonfly``, ...) and refuses other topologies.
All of them return permutation tables (``kind = "table"``): every active
endpoint sends to one endpoint and receives from one, so no endpoint link is
overloaded and the bottleneck is inside the network (001 Sec. 4.2).
``python -m pdes info`` lists them with their summaries and references.
"""
from __future__ import annotations

import numpy as np

import models.topologies  # noqa: F401  (registers every family and its hooks)
from models.core.errors import ParameterError
from models.core.registry import TOPOLOGIES, TRAFFIC


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


WORST = {e.name: e.extra["worst_case"].func for e in TOPOLOGIES if "worst_case" in e.extra}
"""Topology name -> its registered worst-case builder (a view of the registry)."""


def worst_case(topo, seed):
    """The worst-case pattern the configured topology registered."""
    entry = TOPOLOGIES.get(topo.name)
    if "worst_case" not in entry.extra:
        raise ParameterError(f"traffic.pattern: no worst case is defined for topology "
                             f"'{topo.name}' (known: {', '.join(sorted(WORST))})")
    return entry.extra["worst_case"].func(topo, seed)


def _family_pattern(name, func):
    def pattern(topo, seed):
        _require(topo, name, f"worst_{name}")
        return func(topo, seed)
    pattern.__doc__ = func.__doc__
    return pattern


for _entry in TOPOLOGIES:
    if "worst_case" in _entry.extra:
        _hook = _entry.extra["worst_case"]
        TRAFFIC.register(f"worst_{_entry.name}", _family_pattern(_entry.name, _hook.func), params=[],
                         summary=f"{_entry.name} worst case: {_hook.summary}",
                         reference=_hook.reference)
TRAFFIC.register("worst_case", worst_case, params=[],
                 summary="the worst case of the configured topology (" + ", ".join(sorted(WORST)) + ")",
                 reference="000 Sec. V-C; 001 Sec. 4.2; 004 Sec. 5")
