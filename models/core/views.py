"""The two views a routing kernel receives besides its own tables and parameters.

``hop(site, eng, ctx, ap, fid)`` and ``source(site, eng, ctx, ap, fid)``
(:mod:`models.core.routing`) read the router they run at from ``site`` and
the engine's state from ``eng``:

:class:`Site` -- where the decision is taken, built per head flit:
    ``t`` the cycle; ``k`` the router's index in the part and ``rg`` its
    global id; its ports ``plo .. phi - 1`` of the part, the first ``nepk``
    of them endpoint ports (endpoint ``e`` of the router on port
    ``plo + e - ports.ep_first[rg]``); ``P`` the input port the flit waits at
    and ``in_cls`` the VC class it arrived in (``source``: the same values;
    it runs before the first ``hop``).

:class:`EngineView` -- the engine's state, built once per router stage:
    ``prm`` the int64 parameter vector (slots in :mod:`models.core.params`);
    ``ports`` the part's routers and ports (``pdes.kernels.cycle.Ports``:
    CSR offsets, neighbours, latencies, endpoints, buffer capacities);
    ``tab`` the global tables (``Tables``: distances, next-hop tables
    (:mod:`models.core.nexthop`), the router graph and its channel snapshot);
    ``crd`` the credits (``Credits``: per sender port and VC, the count and
    the FIFO of credits on their way back, read for queue estimates); and
    the flit pool's halves ``rec`` (fields below ``NF_HOT``) and ``rec_c``
    (the others) of :mod:`models.core.record`.

Both are named tuples: Numba passes them as plain values, so reading a field
costs what reading the argument cost.
"""
from collections import namedtuple

Site = namedtuple("Site", ["t", "k", "rg", "plo", "nepk", "phi", "P", "in_cls"])
Site.__doc__ = "where a routing decision is taken: cycle, router, its port range, input port and class"

EngineView = namedtuple("EngineView", ["prm", "ports", "tab", "crd", "rec", "rec_c"])
EngineView.__doc__ = "the engine's parameters, ports, tables, credits and flit records, for routing"
