"""h-MLFM: multi-layer full mesh (construction notes 5)."""
from __future__ import annotations

import numpy as np

from models.core.registry import Hook, Param, TOPOLOGIES
from ..topology import Topology, TopologySize, check_build, from_edges


def mlfm(h: int = 4) -> Topology:
    """h-MLFM: ``h`` layers of ``h+1`` local routers sharing ``h(h+1)/2`` global routers.

    Local router ``LR(l, i)`` (layer ``l`` in ``[0, h)``, position ``i`` in
    ``[0, h]``) has id ``l*(h+1) + i``.  Global router ``GR{i, j}``
    (``i < j``) has id ``h(h+1) + pairIndex(i, j)``, pairs enumerated
    lexicographically ``(0,1), (0,2), ..., (0,h), (1,2), ...``.  Every layer
    is a full mesh whose link ``i--j`` is replaced by ``LR(l,i)--GR{i,j}``
    and ``LR(l,j)--GR{i,j}``; all layers share the same global routers.

    Parameters
    ----------
    h : int
        ``h >= 1``; layers = LRs per layer - 1 = endpoints per LR
        (``h = l = p``, all routers of radix ``2h``).

    Returns
    -------
    Topology
        ``R = 3h(h+1)/2`` routers, ``N = h^3 + h^2`` endpoints (``h`` per LR,
        0 per GR), ``h^2(h+1)`` links.  LR degree ``h``, GR degree ``2h``.
        Any two LRs are at distance 2 (``h`` shortest paths in the same
        column, otherwise one); router-graph diameter 4 for ``h >= 3``.
        ``group`` = layer ``l`` for LRs and ``h`` for all GRs
        (``group_kind="layer"``); single link class ``lr_gr``.
        ``meta["role"]`` is 0 for LRs and 1 for GRs, ``meta["layer"]`` the
        layer (``-1`` for GRs), ``meta["column"]`` the position ``i`` of an
        LR (``-1`` for GRs).

    Raises
    ------
    ParameterError
        If ``h < 1``.

    Notes
    -----
    001 defines no racks; grouping by layer with the GRs apart is the
    proposal of construction notes 5.  h = 15 gives N = 3600, R = 360 (001 Sec. 4).

    References
    ----------
    001 Sec. 2.2.3 (Multi-Layer Full-Mesh), Sec. 2.2.2 (stacked single-path
    trees).
    """
    mlfm_size(h)
    n_lr = h * (h + 1)
    i, j = np.triu_indices(h + 1, 1)
    n_gr = i.size
    gr = n_lr + np.arange(n_gr, dtype=np.int64)
    layer = (np.arange(h, dtype=np.int64) * (h + 1))[:, None]
    u = np.concatenate([(layer + i[None, :]).ravel(), (layer + j[None, :]).ravel()])
    v = np.concatenate([np.tile(gr, h), np.tile(gr, h)])
    n_r = n_lr + n_gr
    endpoints = np.zeros(n_r, np.int32)
    endpoints[:n_lr] = h
    lr_layer = np.arange(n_lr) // (h + 1)
    group = np.concatenate([lr_layer, np.full(n_gr, h)])
    meta = {
        "role": np.concatenate([np.zeros(n_lr, np.int8), np.ones(n_gr, np.int8)]),
        "layer": np.concatenate([lr_layer, np.full(n_gr, -1)]).astype(np.int32),
        "column": np.concatenate([np.arange(n_lr) % (h + 1), np.full(n_gr, -1)]).astype(np.int32),
    }
    params = {"h": h, "p": h, "radix": 2 * h}
    return from_edges("mlfm", params, n_r, u, v, endpoints, group,
                      link_class=np.zeros(u.size, np.int8), link_class_names=("lr_gr",),
                      group_kind="layer", meta=meta, what="topology: MLFM")


def mlfm_size(h: int = 4) -> TopologySize:
    """``3h(h+1)/2`` routers, ``h^2(h+1)`` links, ``h^2(h+1)`` endpoints."""
    size = TopologySize(3 * h * (h + 1) // 2, h * h * (h + 1), h * h * (h + 1))
    check_build(size.routers, size.links, "topology.h")
    return size


def worst_case(topo, seed):
    """MLFM worst case: shift by ``h`` endpoints, LR to the next LR over one path (001 Sec. 4.2)."""
    from ..traffic import TrafficPlan
    from ..traffic.basic import shift
    plan = shift(topo, seed, s=int(topo.params["h"]))
    return TrafficPlan("table", plan.table, f"MLFM worst case: {plan.description}")


mlfm = TOPOLOGIES.register(
    "mlfm", mlfm,
    params=[Param("h", int, 4, "layers = local routers per layer - 1 = endpoints per local router",
                  lo=1)],
    summary="h-MLFM multi-layer full mesh (indirect), LR-LR distance 2",
    reference="001 Sec. 2.2.3",
    size=mlfm_size,
    worst_case=Hook(worst_case, "shift by h endpoints", "001 Sec. 4.2"),
)
