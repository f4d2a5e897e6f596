"""Minimal routing (000 Sec. IV-A, IV-D; 001 Sec. 3.1, 3.4).

At every router the packet takes a next hop that is one step closer to the
destination router; where several exist, one is drawn uniformly from the
counter-based generator keyed by (packet id, hop).

VC classes (``vc_scheme``):

* ``hop`` (default): the h-th router-to-router hop uses class h (000 Sec.
  IV-D), so ``num_vcs`` must be at least the longest minimal path between
  routers that have endpoints;
* ``phase``: a single class -- only deadlock-free where minimal routes are
  acyclic by themselves (MLFM, OFT, fat trees: "towards" then "away" links,
  001 Sec. 3.4); ``python -m pdes check`` verifies it.
"""
import numpy as np

from models.errors import ParameterError
from models.registry import ROUTINGS, Param
from models.routing import RoutingPlan

SCHEME_DOC = ("VC classes: hop = one class per hop (000 Sec. IV-D); phase = one class before and "
              "one after the intermediate router (001 Sec. 3.4)")


def endpoint_diameter(topo, dist) -> int:
    """Longest shortest path between two routers that carry endpoints."""
    ep = np.nonzero(topo.endpoints > 0)[0]
    if ep.size <= 1:
        return 0
    return int(dist[np.ix_(ep, ep)].max())


def check_scheme(vc_scheme: str) -> None:
    if vc_scheme not in ("hop", "phase"):
        raise ParameterError(f"routing.vc_scheme: '{vc_scheme}' is not one of hop, phase")


def minimal(topo, dist, vc_scheme="hop"):
    """Plan for minimal routing: ``max_hops`` = endpoint diameter."""
    if vc_scheme == "dragonfly":
        from models.routing.dragonfly import dragonfly_min_plan
        return dragonfly_min_plan(topo, dist)
    check_scheme(vc_scheme)
    d = endpoint_diameter(topo, dist)
    if vc_scheme == "phase":
        return RoutingPlan(kernel="min", max_hops=d, vcs_needed=1, scheme="phase",
                           vc_scheme="phase: one VC class for every hop (minimal routes must be "
                                     "acyclic by themselves)")
    return RoutingPlan(kernel="min", max_hops=d, vcs_needed=max(d, 1), scheme="hop",
                       vc_scheme="hop-index: VC class = number of router-to-router hops taken")


def min_adaptive(topo, dist, vc_scheme="hop"):
    """Plan for adaptive minimal routing: same paths and VC classes as ``min``."""
    plan = minimal(topo, dist, vc_scheme)
    return RoutingPlan(kernel="min_adaptive", max_hops=plan.max_hops, vcs_needed=plan.vcs_needed,
                       scheme=plan.scheme, vc_scheme=plan.vc_scheme)


def anca(topo, dist, vc_scheme="phase"):
    """ANCA on fat trees: adaptive up to a nearest common ancestor, deterministic down.

    On a fat tree every up port is minimal towards the nearest common
    ancestor and the down path is unique, so adaptive minimal routing is
    exactly ANCA (000 Sec. V uses it for FT-3).  Up*/down* paths are acyclic,
    so one VC class suffices (``phase``; checked by ``pdes check``).
    """
    if topo.name != "fattree":
        raise ParameterError(f"routing.algorithm: 'anca' is for fat trees (topology is "
                             f"'{topo.name}'); use 'min_adaptive' elsewhere")
    return min_adaptive(topo, dist, vc_scheme)


ROUTINGS.register("min_adaptive", min_adaptive,
                  params=[Param("vc_scheme", str, "hop", SCHEME_DOC, choices=("hop", "phase"))],
                  summary="adaptive minimal: the minimal next hop with the least occupied output",
                  reference="000 Sec. V (ANCA on fat trees); Kim et al. minimal adaptive")
ROUTINGS.register("anca", anca,
                  params=[Param("vc_scheme", str, "phase", SCHEME_DOC, choices=("hop", "phase"))],
                  summary="fat tree ANCA: adaptive up, deterministic down",
                  reference="000 Sec. V; Gomez et al. (ANCA)")
ROUTINGS.register("min", minimal,
                  params=[Param("vc_scheme", str, "hop", SCHEME_DOC + "; dragonfly = Kim et al.'s "
                                "local/global classes (dragonfly topologies)",
                                choices=("hop", "phase", "dragonfly"))],
                  summary="minimal routing, uniform random choice among minimal next hops",
                  reference="000 Sec. IV-A, IV-D; 001 Sec. 3.1")
