"""Routing algorithms, registered by name in :data:`models.core.registry.ROUTINGS`.

An entry's function takes ``(topo, dist, **params)`` and returns a
:class:`RoutingPlan`: which routing kernel runs it, the longest path it can
produce and how many VCs its deadlock-avoidance scheme needs.  A module
registers its kernels (:func:`models.core.routing.register_kernel`: jitted
``source``/``hop`` functions, tables, parameters) beside its plans; the
engine compiles its router stage once per kernel.  Modules in this package
are discovered in sorted order, like the topologies; adding an algorithm is
one module (see ``docs/extending.md``).
"""
import importlib
import pkgutil
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RoutingPlan:
    """What the engine needs to run a routing algorithm.

    ``kernel`` names a registered routing kernel (``models.core.routing``);
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
    """Knobs of the kernel, packed into its integer parameters by the kernel's ``pack``."""
    snapshot_every: int = 0
    """Cycles between the engine's network-wide snapshots of output-port occupancy
    (``tab.snap``, per channel), 0 = the routing reads none."""
    info: dict = field(default_factory=dict)
    """Statistics of the table construction (reported by ``pdes check``, not used by the engine)."""
    turns: object = None
    """Optional ``turns() -> (n, 2)`` array of the channel dependencies (channel in, channel
    out) of every path the routing can produce, for routings with fixed paths: the static
    check with one VC class (``routing.vcs = "any"``) uses it (:mod:`models.routing.cdg`)."""
    class_turns: object = None
    """For the ``lane`` scheme (the VC class of a packet is fixed at its source router, the
    same on every hop): ``class_turns() -> (n, 2)`` array of the dependencies between
    (channel, class) nodes, numbered ``channel * vcs_needed + class``, of every path; the
    static check searches it for a cycle (:mod:`models.routing.cdg`)."""
    note: str = ""
    """One line for the start report and ``pdes check`` (e.g. the virtual lanes the
    routing found it needs), or ""."""


for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")
