"""Minimal routing with hop-index VCs (000 Sec. IV-A, IV-D).

At every router the packet takes a next hop that is one step closer to the
destination router; where several exist, one is drawn uniformly from the
counter-based generator keyed by (packet id, hop).  The VC on the ``h``-th
router-to-router link is ``h`` (0-based), so the channel dependency graph is
acyclic and ``num_vcs`` must be at least the longest minimal path between
routers that have endpoints.
"""
import numpy as np

from models.registry import ROUTINGS
from models.routing import RoutingPlan


def endpoint_diameter(topo, dist) -> int:
    """Longest shortest path between two routers that carry endpoints."""
    ep = np.nonzero(topo.endpoints > 0)[0]
    if ep.size <= 1:
        return 0
    return int(dist[np.ix_(ep, ep)].max())


def minimal(topo, dist):
    """Plan for minimal routing: ``max_hops`` = VCs needed = endpoint diameter."""
    d = endpoint_diameter(topo, dist)
    return RoutingPlan(kernel="min", max_hops=d, vcs_needed=max(d, 1),
                       vc_scheme="hop-index: VC = number of router-to-router hops taken")


ROUTINGS.register("min", minimal, params=[],
                  summary="minimal routing, uniform random choice among minimal next hops",
                  reference="000 Sec. IV-A, IV-D; 001 Sec. 3.1")
