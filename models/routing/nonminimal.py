"""Valiant and UGAL routing (000 Sec. IV-B, IV-C; 001 Sec. 3.2-3.4).

* ``valiant``: a packet first goes minimally to a random intermediate
  router (not its source or destination router), then minimally to its
  destination.  On indirect topologies (routers without endpoints exist:
  MLFM, OFT, fat trees) the intermediate is drawn from the routers that have
  endpoints, as 001 Sec. 3.2 requires; ``max_hops`` caps the path length
  (000 Sec. IV-B mentions at most 3 hops for SF), redrawing up to 32 times
  and going minimally if no intermediate qualifies.
* ``ugal_l``: at the source router the minimal path is compared with
  ``n_indirect`` random Valiant paths.  Cost of a path = occupancy of its
  first output port (flits sent or queued there whose credits have not
  returned) times its length in hops (000 Sec. IV-C2; with
  ``length_weighted = false`` the generic 001 form C_M = q_M,
  C_I = c * q_I); indirect costs are multiplied by ``c``, so 001's SF form
  C_I = c_SF * (L_I / L_M) * q_I is ``c = c_SF`` with length weighting.
  ``threshold`` (001's ATh variant): route minimally while the minimal port
  holds less than this fraction of one port's buffer.
* ``ugal_g``: like ``ugal_l`` but the cost is the sum of the output-port
  occupancies along the whole path (one minimal path per segment, lowest-id
  next hops), read from a network-wide snapshot taken every ``epoch``
  cycles.  This is the idealised global variant of 000 Sec. IV-C1: real
  routers cannot see remote queues.  On SF q=13 p=9 at full uniform load it
  accepts 0.77 with a 10-cycle epoch but only 0.56 with 100 cycles (every
  source acts on the same stale snapshot and whole flows switch together).  The snapshot is exchanged between
  ranks, and on any number of ranks it is taken at the same cycles.

VC classes: ``hop`` (default; 000 Sec. IV-D: class = hops taken, so
``num_vcs`` >= the longest possible path, 4 on a Slim Fly) or ``phase``
(001 Sec. 3.4: class 0 towards the intermediate, class 1 after it; two VCs,
valid on MLFM/OFT/fat trees whose minimal routes are acyclic).
"""
import numpy as np

from models.errors import ParameterError
from models.registry import ROUTINGS, Param
from models.routing import RoutingPlan
from models.routing.minimal import SCHEME_DOC, check_scheme


def candidates(topo, intermediates: str) -> np.ndarray:
    if intermediates == "auto":
        intermediates = "all" if topo.is_direct else "endpoint_routers"
    if intermediates == "all":
        return np.arange(topo.n_routers, dtype=np.int32)
    if intermediates == "endpoint_routers":
        return np.nonzero(topo.endpoints > 0)[0].astype(np.int32)
    raise ParameterError(f"routing.intermediates: '{intermediates}' is not one of auto, all, "
                         "endpoint_routers")


def longest_indirect(topo, dist, cand, cap) -> int:
    """Longest Valiant path over all (source, intermediate, destination) endpoint routers."""
    ep = np.nonzero(topo.endpoints > 0)[0]
    d_in = dist[np.ix_(ep, cand)].astype(np.int64).max(axis=0)     # farthest source per mid
    d_out = dist[np.ix_(cand, ep)].astype(np.int64).max(axis=1)    # farthest destination per mid
    longest = int((d_in + d_out).max()) if cand.size else 0
    direct = int(dist[np.ix_(ep, ep)].max()) if ep.size else 0
    longest = max(longest, direct)
    return min(longest, max(cap, direct)) if cap > 0 else longest


def _plan(kernel, topo, dist, vc_scheme, intermediates, max_hops, **kp):
    check_scheme(vc_scheme)
    if max_hops < 0:
        raise ParameterError(f"routing.max_hops: must be >= 0 (0 = no cap), got {max_hops}")
    cand = candidates(topo, intermediates)
    if cand.size < 3:
        raise ParameterError("routing.intermediates: fewer than 3 routers are eligible as "
                             "intermediates")
    longest = longest_indirect(topo, dist, cand, max_hops)
    kp["max_hops_cap"] = int(max_hops)
    if vc_scheme == "phase":
        return RoutingPlan(kernel=kernel, max_hops=longest, vcs_needed=2, scheme="phase",
                           vc_scheme="phase: class 0 towards the intermediate, class 1 after it",
                           tables={"mid_cand": cand}, kernel_params=kp)
    return RoutingPlan(kernel=kernel, max_hops=longest, vcs_needed=max(longest, 1), scheme="hop",
                       vc_scheme="hop-index: VC class = number of router-to-router hops taken",
                       tables={"mid_cand": cand}, kernel_params=kp)


def valiant(topo, dist, vc_scheme="hop", intermediates="auto", max_hops=0):
    """Plan for Valiant routing."""
    return _plan("valiant", topo, dist, vc_scheme, intermediates, max_hops)


def _ugal_checks(n_indirect, c, threshold=0.0):
    if n_indirect < 1:
        raise ParameterError(f"routing.n_indirect: must be >= 1, got {n_indirect}")
    if c <= 0:
        raise ParameterError(f"routing.c: must be > 0, got {c}")
    if not 0.0 <= threshold <= 1.0:
        raise ParameterError(f"routing.threshold: must be in [0, 1] (fraction of a port's "
                             f"buffer), got {threshold}")


def ugal_l(topo, dist, vc_scheme="hop", intermediates="auto", max_hops=0, n_indirect=4, c=1.0,
           length_weighted=True, threshold=0.0):
    """Plan for UGAL with local information."""
    _ugal_checks(n_indirect, c, threshold)
    return _plan("ugal_l", topo, dist, vc_scheme, intermediates, max_hops, n_indirect=n_indirect,
                 c=float(c), length_weighted=bool(length_weighted), threshold=float(threshold))


def ugal_g(topo, dist, vc_scheme="hop", intermediates="auto", max_hops=0, n_indirect=4, c=1.0,
           epoch=10):
    """Plan for UGAL with a global (snapshot) view of the output queues."""
    _ugal_checks(n_indirect, c)
    if epoch < 1:
        raise ParameterError(f"routing.epoch: must be >= 1 cycle, got {epoch}")
    return _plan("ugal_g", topo, dist, vc_scheme, intermediates, max_hops, n_indirect=n_indirect,
                 c=float(c), epoch=int(epoch))


COMMON = [
    Param("vc_scheme", str, "hop", SCHEME_DOC, choices=("hop", "phase")),
    Param("intermediates", str, "auto", "routers eligible as intermediates: auto (all on direct "
          "topologies, endpoint routers on indirect ones, 001 Sec. 3.2), all, endpoint_routers",
          choices=("auto", "all", "endpoint_routers")),
    Param("max_hops", int, 0, "cap on the path length (0 = none; 000 Sec. IV-B: 3 on SF)"),
]
UGAL = [
    Param("n_indirect", int, 4, "random Valiant paths compared with the minimal one (000: 4)"),
    Param("c", float, 1.0, "penalty factor of indirect paths (001 Sec. 3.3 c, c_SF)"),
]

ROUTINGS.register("valiant", valiant, params=list(COMMON),
                  summary="Valiant: minimal to a random intermediate router, then minimal",
                  reference="000 Sec. IV-B; 001 Sec. 3.2")
ROUTINGS.register("ugal_l", ugal_l, params=COMMON + UGAL + [
    Param("length_weighted", bool, True, "cost = occupancy x path length (000 Sec. IV-C2); "
          "false = occupancy only (001 generic UGAL)"),
    Param("threshold", float, 0.0, "route minimally while the minimal port holds less than this "
          "fraction of a port's buffer (001 ATh variant; 0 = off)"),
], summary="UGAL with local queue information", reference="000 Sec. IV-C2; 001 Sec. 3.3")
ROUTINGS.register("ugal_g", ugal_g, params=COMMON + UGAL + [
    Param("epoch", int, 10, "cycles between network-wide queue snapshots (the MPI window "
          "divides it; a long epoch makes all sources act on the same stale view)"),
], summary="UGAL with global queue information (idealised: snapshot every epoch)",
    reference="000 Sec. IV-C1")
