"""Dimension-order routing on the torus, mesh and HyperX, with dateline VC classes on the torus.

``dor``: a packet corrects its coordinates one dimension after the other,
dimension 0 first, taking the shorter way around each ring (a mesh has one
way).  Where both ways around a ring of even size are equally short, the
way is drawn once per packet and dimension (from the counter-based generator
keyed by the packet id), so every router of the segment agrees.  This is
dimension-order routing (Dally & Towles 2004); the two classes on a ring
are Dally & Seitz's (1987) dateline.

VC classes (``vc_scheme = "dateline"``, torus): a ring segment that crosses
the wraparound link (``D_i - 1 -> 0`` going up, ``0 -> D_i - 1`` going
down) takes class 1 on every hop of the segment, any other segment class 0.
The class of a segment depends only on its first and last coordinate, so it
is computed from the source router and the destination at every hop.  A
segment going up (down) that crosses the wraparound starts at or above
(below) the middle of the ring and is at most half a ring long, so no chain
of class-1 dependencies goes round a ring; class-0 segments never use the
wraparound link; and dimensions are taken in order, so dependencies go from a
dimension to a later one only: the channel dependency graph is acyclic with
two classes.  Classes decrease when a packet turns from a crossing segment
into one that does not cross, so the engine's class-order check is off for
this scheme.  A mesh needs one class (``vc_scheme = "dor"``: dimension order
alone is acyclic on a mesh).

On a HyperX (a flattened butterfly: every dimension fully connected) a
packet corrects each coordinate in one hop, dimension 0 first: BookSim2's
``ran_min`` on its ``flatfly`` (``min_flatfly``).  Dependencies go from a
dimension to a later one only, so one class is acyclic (``vc_scheme =
"dor"``) and every VC of the port is open to every hop, as in BookSim.
"""
from collections import namedtuple

import numpy as np

from models.core.errors import ParameterError
from models.core.jit import njit_kernel
from models.core.record import ERR_ROUTE, F_DSTR, F_SEQ, F_SRC, OK
from models.core.registry import ROUTINGS
from models.core.params import PR_SEED
from models.core.rng import P_ROUTE, below
from models.core.routing import RoutingKernel, register_kernel
from models.routing import RoutingPlan
from models.routing.paths import eject_port

DorTables = namedtuple("DorTables", ["dims"])
"""``dims``: routers per dimension (int64), dimension 0 first."""


def dim_order(topo, dist):
    """Plan for dimension-order routing on a ``torus`` topology (or its mesh, ``wrap=false``)
    or a ``hyperx``.

    Raises
    ------
    ParameterError
        On a topology other than ``torus`` and ``hyperx``.
    """
    if topo.name not in ("torus", "hyperx"):
        raise ParameterError(f"routing.algorithm: 'dor' is for the torus family (with wrap = false "
                             f"a mesh) and hyperx; topology is '{topo.name}'")
    if topo.is_degraded:
        from models.faults import unroutable
        raise unroutable("'dor'", "dimension order gives every pair one path, and the paths of "
                         "some pairs cross a failed link or router")
    if topo.name == "hyperx":
        sizes = [int(s) for s in topo.meta["sizes"]]
        return RoutingPlan(kernel="dor", max_hops=sum(1 for s in sizes if s > 1), vcs_needed=1,
                           scheme="dor", vc_scheme="dor: one class (dimension order is acyclic "
                                                   "on a HyperX)",
                           tables={"dims": np.asarray(sizes, dtype=np.int64)},
                           kernel_params={"wrap": 0, "jump": 1})
    dims = [int(s) for s in topo.meta["dims"]]
    wrap = bool(topo.params.get("wrap", True))
    longest = sum(s // 2 if wrap else s - 1 for s in dims)
    tables = {"dims": np.asarray(dims, dtype=np.int64)}
    if wrap:
        return RoutingPlan(kernel="dor", max_hops=longest, vcs_needed=2, scheme="dateline",
                           vc_scheme="dateline: class 1 on a ring segment that crosses the "
                                     "wraparound link, class 0 otherwise",
                           tables=tables, kernel_params={"wrap": 1, "jump": 0})
    return RoutingPlan(kernel="dor", max_hops=longest, vcs_needed=1, scheme="dor",
                       vc_scheme="dor: one class (dimension order is acyclic on a mesh)",
                       tables=tables, kernel_params={"wrap": 0, "jump": 0})


ROUTINGS.register("dor", dim_order, params=[],
                  summary="dimension-order routing on the torus (dateline VC classes), mesh "
                          "and HyperX (one hop per dimension)",
                  reference="Dally & Towles 2004; Dally & Seitz 1987 (dateline); BookSim2's "
                            "dim_order")


# ------------------------------------------------------------------------------ kernels
@njit_kernel
def dor_hop(site, eng, ctx, ap, fid):
    """The next hop of dimension order: the first dimension (from 0) in which the router's
    coordinate differs from the destination's, the shorter way round (the draw of the packet
    and dimension on a tie); class 1 on a torus segment that crosses the wraparound link.
    On a HyperX (``jump``) straight to the destination's coordinate."""
    rg, plo, nepk, phi = site.rg, site.plo, site.nepk, site.phi
    prm, ports, rec = eng.prm, eng.ports, eng.rec
    dr = np.int64(rec[fid, F_DSTR])
    if dr == rg:
        return OK, eject_port(rg, plo, ports.ep_first, rec, fid), 0
    dims = ctx.dims
    wrap = ap[0]
    jump = ap[1]
    cur = np.int64(rg)
    dst = dr
    src = np.int64(ports.ep_router[rec[fid, F_SRC]])
    stride = np.int64(1)
    for d in range(dims.shape[0]):
        s = dims[d]
        c = cur % s
        t = dst % s
        if c != t:
            sc = src % s        # the segment's first coordinate: dimensions are taken in order
            up = t > sc
            cls = 0
            if wrap != 0:
                ahead = (t - sc + s) % s
                twice = 2 * ahead
                if twice == s:
                    up = below(2, prm[PR_SEED], rec[fid, F_SRC], rec[fid, F_SEQ],
                               P_ROUTE + 64 * d) == 1
                else:
                    up = twice < s
                if (up and sc > t) or ((not up) and sc < t):
                    cls = 1
            nxt = (c + 1) % s if up else (c - 1 + s) % s
            if jump != 0:
                nxt = t
            target = np.int64(rg) + (nxt - c) * stride
            for Q in range(plo + nepk, phi):
                if np.int64(ports.out_nbr[Q]) == target:
                    return OK, Q, cls
            return ERR_ROUTE, -1, 0
        cur //= s
        dst //= s
        src //= s
        stride *= s
    return ERR_ROUTE, -1, 0


register_kernel("dor", RoutingKernel(module=__name__, hop="dor_hop", tables=DorTables,
                                     schemes=("dateline", "dor"), params=("wrap", "jump"),
                                     monotone=lambda plan: plan.scheme != "dateline"))
