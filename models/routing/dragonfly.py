"""Dragonfly routing with Kim et al.'s VC classes (Kim et al. ISCA 2008; 000 Sec. V, VI-B3).

VC classes (``vc_scheme = "dragonfly"``): a Dragonfly path follows at most
the canonical link sequence local-global-local (minimal) or
local-global-local-global-local (through an intermediate group).  A hop on a
local link takes the next even position of that sequence, a hop on a global
link the next odd one, and its VC class is position // 2: local links use
classes 0, 1, 2 and global links 0, 1.  Positions increase strictly along a
path, so the channel dependency graph is acyclic; three VCs per port suffice
for non-minimal routing and two for minimal routing (000 uses three).

* ``dragonfly_ugal``: UGAL-L at the source router between the minimal path
  and ``n_indirect`` (default 1, as Kim et al.) random intermediate *groups*
  (not the source's or destination's); a packet enters the intermediate
  group at the router that holds its global link from the source group and
  then goes minimally to the destination.  Cost = first-port occupancy times
  path length, as ``ugal_l``.
* ``dragonfly_valiant``: always through a random intermediate group.
* ``min`` with ``vc_scheme = "dragonfly"``: Dragonfly-minimal routing (over
  the direct global link between the groups, l-g-l) with these classes.

With this scheme every segment follows the group hierarchy: a local hop to
the router holding the global link towards the target's group, the global
hop, a local hop to the target.
"""
import numpy as np

from models.core.errors import ParameterError
from models.core.jit import njit_kernel
from models.core.registry import ROUTINGS, Param
from models.routing import RoutingPlan
from models.routing.nonminimal import (BIAS, KNOBS, UGAL, MidTables, PARAMS, _ugal_checks,
                                       V_NONE, V_UGAL_L, V_VALIANT, packing)
from models.routing.nonminimal import mid_source  # noqa: F401 (looked up by name)
from models.routing.paths import eject_port, group_port, target_of
from models.core.params import PR_EJCLS
from models.core.record import ERR_ROUTE, F_AUX2, NF_HOT, OK
from models.core.routing import RoutingKernel, register_kernel


def group_tables(topo):
    """(group of each router, entry[g_to, g_from] = router of g_to linked to g_from, -1 if none)."""
    if topo.name != "dragonfly" or tuple(topo.link_class_names) != ("local", "global"):
        raise ParameterError(f"routing.algorithm: Dragonfly routing needs a dragonfly topology "
                             f"(topology is '{topo.name}')")
    grp = topo.group.astype(np.int64)
    G = int(grp.max()) + 1
    entry = np.full((G, G), np.iinfo(np.int32).max, dtype=np.int64)
    glob = topo.link_class == 1
    u = topo.links[glob, 0].astype(np.int64)
    v = topo.links[glob, 1].astype(np.int64)
    np.minimum.at(entry, (grp[u], grp[v]), u)
    np.minimum.at(entry, (grp[v], grp[u]), v)
    entry[entry == np.iinfo(np.int32).max] = -1
    if topo.is_degraded:
        _check_hierarchy(topo, grp, entry)
    return grp.astype(np.int32), entry.astype(np.int32)


def _check_hierarchy(topo, grp, entry) -> None:
    """Refuse a degraded Dragonfly on which a path of the group hierarchy lost a link: the
    working routers of a group must stay fully connected, and every two groups joined."""
    from models.faults import unroutable
    up = topo.up
    sizes = np.bincount(grp[up], minlength=entry.shape[0])
    u, v = topo.links[:, 0], topo.links[:, 1]
    local = (grp[u] == grp[v]) & up[u] & up[v]
    have = np.bincount(grp[u[local]], minlength=entry.shape[0])
    short = np.nonzero(have != sizes * (sizes - 1) // 2)[0]
    if short.size:
        raise unroutable("Dragonfly routing", f"group {int(short[0])} lost a local link, and "
                         "Dragonfly paths take one local hop to the router of the global link")
    live = np.nonzero(sizes > 0)[0]
    miss = (entry[np.ix_(live, live)] < 0) & ~np.eye(live.size, dtype=bool)
    if miss.any():
        a, b = np.argwhere(miss)[0]
        raise unroutable("Dragonfly routing", f"no global link is left between groups {int(live[a])} and "
                         f"{int(live[b])}, and Dragonfly paths take the direct one")


SCHEME = "dragonfly (Kim et al.): class = position in l-g-l-g-l // 2"


def _plan(kernel, topo, n_indirect=1, c=1.0, length_weighted=True, threshold=0.0, bias=BIAS):
    grp, entry = group_tables(topo)
    if entry.shape[0] < 3:
        raise ParameterError("topology.g: Dragonfly non-minimal routing needs at least 3 groups")
    kp = {"max_hops_cap": 0}
    if kernel == "ugal_l":
        _ugal_checks(n_indirect, c, threshold, bias)
        kp.update(n_indirect=n_indirect, c=float(c), length_weighted=bool(length_weighted),
                  threshold=float(threshold), bias=float(bias))
    return RoutingPlan(kernel="dragonfly_" + kernel, max_hops=5, vcs_needed=3, scheme="dragonfly",
                       vc_scheme=SCHEME, tables={"r_group": grp, "g_entry": entry,
                                                 "mid_cand": np.zeros(0, np.int32)},
                       kernel_params=kp)


def dragonfly_ugal(topo, dist, n_indirect=1, c=1.0, length_weighted=True, threshold=0.0,
                   bias=BIAS):
    """Plan for Dragonfly UGAL-L with Kim et al.'s VC classes."""
    return _plan("ugal_l", topo, n_indirect, c, length_weighted, threshold, bias)


def dragonfly_valiant(topo, dist):
    """Plan for Valiant through a random intermediate group."""
    return _plan("valiant", topo)


# ------------------------------------------------------------------------------ kernels
@njit_kernel
def dragonfly_hop(site, eng, ctx, ap, fid):
    """A hop along the group hierarchy towards the current target (the intermediate group's
    entry router, then the destination); class = position in l-g-l-g-l // 2 (a local hop
    takes the next even position, a global hop the next odd one; ``F_AUX2`` = last one)."""
    rg, plo, nepk, phi = site.rg, site.plo, site.nepk, site.phi
    ports, rec, rec_c = eng.ports, eng.rec, eng.rec_c
    target, phase = target_of(rg, rec, rec_c, fid)
    if target == rg:
        # the ejection hop's class, read only with routing.eject_vcs = "class": BookSim's phase
        # (dragonfly.cpp: 0 until the global hop, 1 from it on) = (last position + 1) // 2
        ecls = (rec_c[fid, F_AUX2 - NF_HOT] + 1) // 2 if eng.prm[PR_EJCLS] != 0 else 0
        return OK, eject_port(rg, plo, ports.ep_first, rec, fid), ecls
    op = group_port(rg, target, plo + nepk, phi, ports.out_nbr, ctx.r_group, ctx.g_entry)
    if op < 0:
        return ERR_ROUTE, op, 0
    seqpos = rec_c[fid, F_AUX2 - NF_HOT] + 1
    if (seqpos & 1) != ports.out_ltype[op]:
        seqpos += 1
    rec_c[fid, F_AUX2 - NF_HOT] = seqpos
    return OK, op, seqpos // 2


_OPTIONAL = {"mid_cand": np.zeros(0, np.int32)}
register_kernel("dragonfly_min", RoutingKernel(
    module=__name__, hop="dragonfly_hop", source="mid_source", tables=MidTables,
    optional=_OPTIONAL, schemes=("dragonfly",), params=PARAMS, knobs=KNOBS["valiant"],
    pack=packing(V_NONE)))
register_kernel("dragonfly_valiant", RoutingKernel(
    module=__name__, hop="dragonfly_hop", source="mid_source", tables=MidTables,
    schemes=("dragonfly",), params=PARAMS, knobs=KNOBS["valiant"], pack=packing(V_VALIANT)))
register_kernel("dragonfly_ugal_l", RoutingKernel(
    module=__name__, hop="dragonfly_hop", source="mid_source", tables=MidTables,
    schemes=("dragonfly",), params=PARAMS, knobs=KNOBS["ugal_l"], pack=packing(V_UGAL_L)))


def dragonfly_min_plan(topo, dist):
    """Plan for Dragonfly-minimal routing with Kim et al.'s VC classes (l-g-l: two classes).

    Dragonfly-minimal paths go to the destination group over the direct
    global link between the two groups (at most 3 hops); graph-minimal paths
    can be shorter (two global hops through a third group) but do not follow
    the l-g-l pattern the VC classes rely on.
    """
    grp, entry = group_tables(topo)
    return RoutingPlan(kernel="dragonfly_min", max_hops=3, vcs_needed=2, scheme="dragonfly",
                       vc_scheme=SCHEME, tables={"r_group": grp, "g_entry": entry},
                       kernel_params={"max_hops_cap": 0})


ROUTINGS.register("dragonfly_ugal", dragonfly_ugal, params=[
    Param("n_indirect", int, 1, "random intermediate groups compared with the minimal path"),
    Param("c", float, 1.0, "penalty factor of the non-minimal path"),
    Param("length_weighted", bool, True, "cost = occupancy x path length"),
    Param("threshold", float, 0.0, "route minimally while the minimal port holds less than this "
          "fraction of a port's buffer (0 = off)"),
    UGAL[-1],
], summary="Dragonfly UGAL-L through random intermediate groups, Kim et al.'s VC classes",
    reference="Kim et al. ISCA 2008; 000 Sec. V")
ROUTINGS.register("dragonfly_valiant", dragonfly_valiant, params=[],
                  summary="Dragonfly Valiant through a random intermediate group, Kim's VC classes",
                  reference="Kim et al. ISCA 2008")
