"""Routing algorithms, registered by name in :data:`models.registry.ROUTINGS`.

An entry's function takes ``(topo, dist, **params)`` and returns a
:class:`RoutingPlan`: which engine kernel runs it, the longest path it can
produce and how many VCs its deadlock-avoidance scheme needs.  Modules in
this package are discovered in sorted order, like the topologies.
"""
import importlib
import pkgutil
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RoutingPlan:
    """What the engine needs to run a routing algorithm.

    ``kernel`` names the kernel branch (see ``pdes.kernels.routing``);
    ``max_hops`` is the longest router-to-router path it can produce;
    ``vcs_needed`` the VC classes its scheme uses (the minimum ``num_vcs``);
    ``vc_scheme`` a one-line description stored in the output; ``tables``
    integer arrays for the kernel (``mid_cand``: routers eligible as
    intermediates, sorted; ``r_group``/``g_entry``: Dragonfly groups;
    ``grp_rtr``/``grp_nb``/``grp_cl``: routers, neighbour groups and cluster
    of every group, Galaxyfly NAR/NAL/NAG; ``lay_port``: int16 next-hop
    neighbour index per (layer - 1, router, destination router), layered
    routing).
    """

    kernel: str
    max_hops: int
    vcs_needed: int
    vc_scheme: str
    tables: dict = field(default_factory=dict)
    scheme: str = "hop"
    """VC class rule: ``hop`` (class = hops taken) or ``phase`` (0 before, 1 after the intermediate)."""
    finalize: object = None
    """Optional ``finalize(link_weight) -> RoutingPlan``: for algorithms that need the
    per-link weight in cycles (router pipeline + link latency), which only the engine knows."""
    kernel_params: dict = field(default_factory=dict)
    """Integer/float knobs of the kernel: max_hops_cap, n_indirect, c, length_weighted,
    threshold (fraction of a port's buffer), epoch; th_min, th_nonmin, lseq (Galaxyfly);
    layers, layer_select (layered routing)."""
    info: dict = field(default_factory=dict)
    """Statistics of the table construction (reported by ``pdes check``, not used by the engine)."""


for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")
