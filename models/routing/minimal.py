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
from collections import namedtuple

import numpy as np

from models.core.errors import ParameterError
from models.core.jit import njit_inline, njit_kernel
from models.metrics import UNREACHABLE, submatrix_max
from models.core.registry import ROUTINGS, TOPOLOGIES, Param
from models.routing import RoutingPlan
from models.routing.paths import eject_port, hop_class, min_port_adaptive, target_of
from models.core.bits import popcount, trailing_zeros
from models.core.params import PR_NHMIN, PR_NHMULTI, PR_SEED
from models.core.nexthop import NH_MASKS, NH_PORTS, table_port
from models.core.record import F_DST, F_DSTR, F_HOPS, F_SEQ, F_SRC, OK
from models.core.routing import RoutingKernel, register_kernel
from models.core.rng import P_ROUTE, below

SCHEME_DOC = ("VC classes: hop = one class per hop (000 Sec. IV-D); phase = one class before and "
              "one after the intermediate router (001 Sec. 3.4); auto = the algorithm's default")


def endpoint_diameter(topo, dist) -> int:
    """Longest shortest path between two routers that carry endpoints."""
    ep = np.nonzero(topo.serving)[0]
    if ep.size <= 1:
        return 0
    return submatrix_max(dist, ep)


def check_scheme(vc_scheme: str) -> None:
    """``hop`` or ``phase``; ``auto`` (every algorithm's own default, here ``hop``) also passes."""
    if vc_scheme not in ("auto", "hop", "phase"):
        raise ParameterError(f"routing.vc_scheme: '{vc_scheme}' is not one of auto, hop, phase")


def own_routes(topo, dist):
    """The plan of the family's own minimal routes (the ``min_routes`` hook its topology
    registered in :data:`models.core.registry.TOPOLOGIES`), or None."""
    if topo.name not in TOPOLOGIES:
        return None
    hook = TOPOLOGIES.get(topo.name).extra.get("min_routes")
    return hook.func(topo, dist) if hook is not None else None


def minimal(topo, dist, vc_scheme="auto"):
    """Plan for minimal routing: ``max_hops`` = endpoint diameter.  ``auto``: the family's
    own minimal routes where its topology registers them (on a Dragonfly the
    local-global-local routes with Kim et al.'s classes, what BookSim's ``min`` is there),
    graph-minimal routes with hop-index classes elsewhere and on a degraded network
    (:mod:`models.faults`); the VC scheme of the family's own routes (``dragonfly``) asks
    for them explicitly."""
    if vc_scheme not in ("auto", "hop", "phase"):
        plan = own_routes(topo, dist)
        if plan is None or plan.scheme != vc_scheme:
            raise ParameterError(f"routing.vc_scheme: '{vc_scheme}' names minimal routes that "
                                 f"topology '{topo.name}' does not register (use auto, hop or "
                                 "phase)")
        return plan
    if vc_scheme == "auto":
        # a degraded network has lost the structure of the family's own routes
        plan = None if topo.is_degraded else own_routes(topo, dist)
        if plan is not None:
            return plan
        vc_scheme = "hop"
    check_scheme(vc_scheme)
    d = endpoint_diameter(topo, dist)
    if vc_scheme == "phase":
        return RoutingPlan(kernel="min", max_hops=d, vcs_needed=1, scheme="phase",
                           vc_scheme="phase: one VC class for every hop (minimal routes must be "
                                     "acyclic by themselves)")
    return RoutingPlan(kernel="min", max_hops=d, vcs_needed=max(d, 1), scheme="hop",
                       vc_scheme="hop-index: VC class = number of router-to-router hops taken")


def min_adaptive(topo, dist, vc_scheme="hop"):
    """Plan for adaptive minimal routing: same paths and VC classes as ``min`` (graph-minimal;
    ``auto`` = ``hop``)."""
    plan = minimal(topo, dist, "hop" if vc_scheme == "auto" else vc_scheme)
    return RoutingPlan(kernel="min_adaptive", max_hops=plan.max_hops, vcs_needed=plan.vcs_needed,
                       scheme=plan.scheme, vc_scheme=plan.vc_scheme)


ROUTINGS.register("min_adaptive", min_adaptive,
                  params=[Param("vc_scheme", str, "hop", SCHEME_DOC, choices=("auto", "hop", "phase"))],
                  summary="adaptive minimal: the minimal next hop with the least occupied output",
                  reference="000 Sec. V (ANCA on fat trees); Kim et al. minimal adaptive")
ROUTINGS.register("min", minimal,
                  params=[Param("vc_scheme", str, "auto", SCHEME_DOC + "; dragonfly = the Dragonfly's "
                                "local-global-local routes with Kim et al.'s classes (BookSim's min "
                                "there); auto = dragonfly on a Dragonfly, hop elsewhere (hop on a "
                                "Dragonfly: graph-minimal routes, some through a third group)",
                                choices=("auto", "hop", "phase", "dragonfly"))],
                  summary="minimal routing, uniform random choice among minimal next hops",
                  reference="000 Sec. IV-A, IV-D; 001 Sec. 3.1")


# ------------------------------------------------------------------------------ kernels
NoTables = namedtuple("NoTables", [])
"""Minimal routing reads only the engine's tables (distances, next-hop masks)."""


@njit_inline
def min_hop(site, eng, ctx, ap, fid):
    """Minimal routing: a random minimal next hop, from the part's next-hop table where the
    engine built one (``prm[PR_NHMIN]``: one load of the masks or of the port entry, a
    CSR list where several ports are minimal), else a scan of the distance row; class =
    hops taken (``ap[0] = 0``) or 0 (``ap[0] = 1``, phase classes without an intermediate)."""
    k, rg, plo, nepk, phi = site.k, site.rg, site.plo, site.nepk, site.phi
    prm, ports, tab, rec = eng.prm, eng.ports, eng.tab, eng.rec
    dr = rec[fid, F_DSTR]
    hp = rec[fid, F_HOPS]
    ovc = hp if ap[0] == 0 else 0
    op = -1
    if dr == rg:
        op = plo + (rec[fid, F_DST] - ports.ep_first[rg])
        ovc = 0
    elif prm[PR_NHMIN] == NH_MASKS:
        # bit j of nh_min[k, dr]: network port j is on a minimal path
        m = np.int64(tab.nh_min[k, dr])
        cnt = popcount(m)
        if cnt > 0:
            if cnt > 1:
                # the j-th minimal port (in port order)
                j = below(cnt, prm[PR_SEED], rec[fid, F_SRC], rec[fid, F_SEQ], P_ROUTE + 64 * hp)
                while j > 0:
                    m &= m - 1
                    j -= 1
            op = plo + nepk + trailing_zeros(m)
    elif prm[PR_NHMIN] == NH_PORTS:
        j = table_port(tab, k, dr, prm[PR_NHMULTI], prm[PR_SEED], rec[fid, F_SRC], rec[fid, F_SEQ],
                       P_ROUTE + 64 * hp)
        if j >= 0:
            op = plo + nepk + j
    else:
        dist = tab.dist
        out_nbr = ports.out_nbr
        dd = np.int64(dist[dr, rg])
        if dd != UNREACHABLE and dd != 0:
            cnt = 0
            for Q in range(plo + nepk, phi):
                if np.int64(dist[dr, out_nbr[Q]]) == dd - 1:
                    cnt += 1
            if cnt > 0:
                j = 0
                if cnt > 1:
                    j = below(cnt, prm[PR_SEED], rec[fid, F_SRC], rec[fid, F_SEQ],
                              P_ROUTE + 64 * hp)
                for Q in range(plo + nepk, phi):
                    if np.int64(dist[dr, out_nbr[Q]]) == dd - 1:
                        if j == 0:
                            op = Q
                            break
                        j -= 1
    return OK, op, ovc


@njit_kernel
def adaptive_hop(site, eng, ctx, ap, fid):
    """Adaptive minimal routing: the minimal next hop whose output port is least occupied
    (random among ties; on a fat tree: adaptive up, the unique path down -- ANCA)."""
    rg, plo = site.rg, site.plo
    ports, rec, rec_c = eng.ports, eng.rec, eng.rec_c
    target, phase = target_of(rg, rec, rec_c, fid)
    if target == rg:
        return OK, eject_port(rg, plo, ports.ep_first, rec, fid), 0
    op = min_port_adaptive(site, eng, target, rec[fid, F_SRC], rec[fid, F_SEQ], rec[fid, F_HOPS])
    return OK, op, hop_class(ap[0], phase, rec, rec_c, fid)


def phase_classes(plan, cfg):
    """Kernel parameter 0: 1 with the ``phase`` VC scheme, 0 with hop-index classes."""
    return {"phase_classes": int(plan.scheme == "phase")}


register_kernel("min", RoutingKernel(module=__name__, hop="min_hop", tables=NoTables,
                                     schemes=("hop", "phase"), params=("phase_classes",),
                                     knobs=(), pack=phase_classes, next_hop_masks=True))
register_kernel("min_adaptive", RoutingKernel(module=__name__, hop="adaptive_hop", tables=NoTables,
                                              schemes=("hop", "phase"), params=("phase_classes",),
                                              knobs=(), pack=phase_classes))
