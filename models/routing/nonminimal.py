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
import dataclasses
import functools
from collections import namedtuple

import numpy as np

from models.core.errors import ParameterError
from models.core.jit import njit_inline, njit_kernel
from models.core.registry import ROUTINGS, Param
from models.routing import RoutingPlan
from models.routing.minimal import SCHEME_DOC, check_scheme
from models.routing.paths import (draw_mid, group_hops, group_port, min_port, minimal_hop,
                                  path_cost, port_backlog, buffer_share)
from models.core.rings import credit_rtt
from models.core.params import PR_SEED
from models.core.record import F_DSTR, F_MID, F_SEQ, F_SRC, NF_HOT, OK
from models.core.routing import RoutingKernel, register_kernel


def candidates(topo, intermediates: str) -> np.ndarray:
    if intermediates == "auto":
        intermediates = "all" if topo.is_direct else "endpoint_routers"
    if intermediates == "all":       # every router that works (all of them unless some failed)
        return np.nonzero(topo.up)[0].astype(np.int32)
    if intermediates == "endpoint_routers":
        return np.nonzero(topo.serving)[0].astype(np.int32)
    raise ParameterError(f"routing.intermediates: '{intermediates}' is not one of auto, all, "
                         "endpoint_routers")


def longest_indirect(topo, dist, cand, cap) -> int:
    """Longest Valiant path over all (source, intermediate, destination) endpoint routers."""
    ep = np.nonzero(topo.serving)[0]
    d_in = dist[np.ix_(ep, cand)].astype(np.int64).max(axis=0)     # farthest source per mid
    d_out = dist[np.ix_(cand, ep)].astype(np.int64).max(axis=1)    # farthest destination per mid
    longest = int((d_in + d_out).max()) if cand.size else 0
    direct = int(dist[np.ix_(ep, ep)].max()) if ep.size else 0
    longest = max(longest, direct)
    return min(longest, max(cap, direct)) if cap > 0 else longest


def _plan(kernel, topo, dist, vc_scheme, intermediates, max_hops, **kp):
    check_scheme(vc_scheme)
    if max_hops < 0 or max_hops == 1:
        raise ParameterError(f"routing.max_hops: must be 0 (no cap) or at least 2 (a path "
                             f"through an intermediate router has 2 hops or more), got {max_hops}")
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


BIAS = 0.0
"""Default of ``bias`` (flits added to every indirect path's cost)."""


def _ugal_checks(n_indirect, c, threshold=0.0, bias=0.0):
    if n_indirect < 1:
        raise ParameterError(f"routing.n_indirect: must be >= 1, got {n_indirect}")
    if c <= 0:
        raise ParameterError(f"routing.c: must be > 0, got {c}")
    if not 0.0 <= threshold <= 1.0:
        raise ParameterError(f"routing.threshold: must be in [0, 1] (fraction of a port's "
                             f"buffer), got {threshold}")
    if not 0.0 <= bias <= 1e6:
        raise ParameterError(f"routing.bias: must be in [0, 1e6] flits, got {bias}")


def ugal_l(topo, dist, vc_scheme="hop", intermediates="auto", max_hops=0, n_indirect=4, c=1.0,
           length_weighted=True, threshold=0.0, bias=BIAS):
    """Plan for UGAL with local information."""
    _ugal_checks(n_indirect, c, threshold, bias)
    return _plan("ugal_l", topo, dist, vc_scheme, intermediates, max_hops, n_indirect=n_indirect,
                 c=float(c), length_weighted=bool(length_weighted), threshold=float(threshold),
                 bias=float(bias))


def ugal_g(topo, dist, vc_scheme="hop", intermediates="auto", max_hops=0, n_indirect=4, c=1.0,
           epoch=10, bias=BIAS):
    """Plan for UGAL with a global (snapshot) view of the output queues."""
    _ugal_checks(n_indirect, c, 0.0, bias)
    if epoch < 1:
        raise ParameterError(f"routing.epoch: must be >= 1 cycle, got {epoch}")
    plan = _plan("ugal_g", topo, dist, vc_scheme, intermediates, max_hops, n_indirect=n_indirect,
                 c=float(c), bias=float(bias))
    return dataclasses.replace(plan, snapshot_every=int(epoch))


COMMON = [
    Param("vc_scheme", str, "hop", SCHEME_DOC, choices=("auto", "hop", "phase")),
    Param("intermediates", str, "auto", "routers eligible as intermediates: auto (all on direct "
          "topologies, endpoint routers on indirect ones, 001 Sec. 3.2), all, endpoint_routers",
          choices=("auto", "all", "endpoint_routers")),
    Param("max_hops", int, 0, "cap on the path length (0 = none; 000 Sec. IV-B: 3 on SF)"),
]
UGAL = [
    Param("n_indirect", int, 4, "random Valiant paths compared with the minimal one (000: 4)"),
    Param("c", float, 1.0, "penalty factor of indirect paths (001 Sec. 3.3 c, c_SF)"),
    Param("bias", float, BIAS, "flits added to an indirect path's queue before the comparison: "
          "non-minimal only when the minimal queue exceeds the (weighted) indirect one by more "
          "(BookSim's adaptive threshold)"),
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


# ------------------------------------------------------------------------------ kernels
MidTables = namedtuple("MidTables", ["mid_cand", "r_group", "g_entry"])
"""Routers eligible as intermediates (sorted); with a group table (``g_entry`` with more than
one row, ``r_group``): intermediate groups instead (see :func:`models.routing.paths.draw_mid`)."""
OPTIONAL = {"r_group": np.zeros(1, np.int32), "g_entry": np.zeros((1, 1), np.int32)}

# kernel parameters (``ap``) of valiant / ugal_l / ugal_g
A_PHASE, A_MAXHOPS, A_NIND, A_CMICRO, A_LENW, A_THRESH, A_BIAS, A_VARIANT = range(8)
PARAMS = ("phase_classes", "max_hops_cap", "n_indirect", "c_micro", "length_weighted",
          "threshold_micro", "bias_micro", "variant")

V_NONE, V_VALIANT, V_UGAL_L, V_UGAL_G = range(4)
"""Values of ``ap[A_VARIANT]``: which decision :func:`mid_source` makes at a packet's first
router (``V_NONE``: none, the packet goes minimally)."""


def pack(plan, cfg, variant=V_NONE):
    """Integer kernel parameters: ``c``, ``threshold`` (a fraction of the buffer behind the
    port, :func:`models.routing.paths.buffer_share`) and ``bias`` in millionths; ``variant``
    the decision of :func:`mid_source` (a kernel registered with :func:`packing`)."""
    kp = plan.kernel_params
    return {"phase_classes": int(plan.scheme == "phase"), "max_hops_cap": kp["max_hops_cap"],
            "n_indirect": kp.get("n_indirect", 0), "c_micro": int(round(kp.get("c", 1.0) * 1_000_000)),
            "length_weighted": int(kp.get("length_weighted", True)),
            "threshold_micro": int(round(kp.get("threshold", 0.0) * 1_000_000)),
            "bias_micro": int(round(kp.get("bias", 0.0) * 1_000_000)),
            "variant": variant}


_PACKS = {v: functools.partial(pack, variant=v) for v in (V_NONE, V_VALIANT, V_UGAL_L, V_UGAL_G)}


def packing(variant: int):
    """The ``pack`` of a kernel whose :func:`mid_source` makes ``variant``'s decision (one
    object per variant, so a registration repeated with the same one is the same)."""
    return _PACKS[variant]


@njit_kernel
def valiant_source(site, eng, ctx, ap, fid):
    """Valiant: a random intermediate router (000 Sec. IV-B, 001 Sec. 3.2)."""
    rg = site.rg
    prm, tab, rec, rec_c = eng.prm, eng.tab, eng.rec, eng.rec_c
    dstr = rec[fid, F_DSTR]
    if dstr == rg:
        return
    rec_c[fid, F_MID - NF_HOT] = draw_mid(ctx.mid_cand, rg, dstr, tab.dist, ap[A_MAXHOPS],
                                          prm[PR_SEED], rec[fid, F_SRC], rec[fid, F_SEQ], 0,
                                          ctx.r_group, ctx.g_entry)


@njit_kernel
def ugal_l_source(site, eng, ctx, ap, fid):
    """UGAL-L: the minimal path against ``n_indirect`` random Valiant paths, by the backlog of
    their first output port (:func:`models.routing.paths.port_backlog`) times path length,
    indirect costs times ``c`` plus ``bias`` (000 Sec. IV-C2, 001 Sec. 3.3); with a
    threshold, minimal while the minimal port's backlog is below it.  With a group table
    (hierarchical topologies) ports and lengths are those of the group hierarchy's paths
    (:func:`models.routing.paths.group_port`)."""
    t, rg, plo, nepk, phi = site.t, site.rg, site.plo, site.nepk, site.phi
    prm, ports, tab, crd, rec, rec_c = eng.prm, eng.ports, eng.tab, eng.crd, eng.rec, eng.rec_c
    dstr = rec[fid, F_DSTR]
    if dstr == rg:
        return
    dist, out_nbr, out_lat = tab.dist, ports.out_nbr, ports.out_lat
    r_group, g_entry = ctx.r_group, ctx.g_entry
    hier = g_entry.shape[0] > 1
    seed, src, seq = prm[PR_SEED], rec[fid, F_SRC], rec[fid, F_SEQ]
    c_micro, length_w, thresh, bias = ap[A_CMICRO], ap[A_LENW], ap[A_THRESH], ap[A_BIAS]
    if hier:
        lm = group_hops(rg, dstr, r_group, g_entry)
        pm = group_port(rg, dstr, plo + nepk, phi, out_nbr, r_group, g_entry)
    else:
        lm = np.int64(dist[dstr, rg])
        pm = min_port(rg, dstr, plo + nepk, phi, out_nbr, dist, seed, src, seq, 0)
    if pm < 0:
        return
    qm = port_backlog(pm, prm, ports, crd, t, credit_rtt(prm, out_lat[pm]))
    if thresh > 0 and qm * 1000000 < buffer_share(pm, prm, ports, thresh):
        return
    best = qm * lm * 1000000 if length_w != 0 else qm * 1000000
    mid = -1
    for j in range(ap[A_NIND]):
        m = draw_mid(ctx.mid_cand, rg, dstr, dist, ap[A_MAXHOPS], seed, src, seq, j, r_group,
                     g_entry)
        if m < 0:
            continue
        if hier:
            pi = group_port(rg, m, plo + nepk, phi, out_nbr, r_group, g_entry)
            li = group_hops(rg, m, r_group, g_entry) + group_hops(m, dstr, r_group, g_entry)
        else:
            pi = min_port(rg, m, plo + nepk, phi, out_nbr, dist, seed, src, seq, 0)
            li = np.int64(dist[m, rg]) + np.int64(dist[dstr, m])
        if pi < 0:
            continue
        qi = port_backlog(pi, prm, ports, crd, t, credit_rtt(prm, out_lat[pi]))
        cost = c_micro * qi * li + bias * lm if length_w != 0 else c_micro * qi + bias
        if cost < best:
            best = cost
            mid = m
    rec_c[fid, F_MID - NF_HOT] = mid


@njit_kernel
def ugal_g_source(site, eng, ctx, ap, fid):
    """UGAL-G: costs are whole-path occupancies in the engine's channel snapshot (000 Sec.
    IV-C1, idealised)."""
    rg = site.rg
    prm, tab, rec, rec_c = eng.prm, eng.tab, eng.rec, eng.rec_c
    dstr = rec[fid, F_DSTR]
    if dstr == rg:
        return
    dist, g_off, g_nbr, g_chan, snap = tab.dist, tab.g_off, tab.g_nbr, tab.g_chan, tab.snap
    seed, src, seq = prm[PR_SEED], rec[fid, F_SRC], rec[fid, F_SEQ]
    c_micro = ap[A_CMICRO]
    best = path_cost(rg, dstr, g_off, g_nbr, g_chan, dist, snap) * 1000000
    mid = -1
    for j in range(ap[A_NIND]):
        m = draw_mid(ctx.mid_cand, rg, dstr, dist, ap[A_MAXHOPS], seed, src, seq, j, ctx.r_group,
                     ctx.g_entry)
        if m < 0:
            continue
        cost = c_micro * (path_cost(rg, m, g_off, g_nbr, g_chan, dist, snap)
                          + path_cost(m, dstr, g_off, g_nbr, g_chan, dist, snap)) + ap[A_BIAS]
        if cost < best:
            best = cost
            mid = m
    rec_c[fid, F_MID - NF_HOT] = mid


_valiant = njit_inline(valiant_source.py_func)
_ugal_l = njit_inline(ugal_l_source.py_func)
_ugal_g = njit_inline(ugal_g_source.py_func)


@njit_kernel
def mid_source(site, eng, ctx, ap, fid):
    """The source decision of the kernel's variant (``ap[A_VARIANT]``): Valiant's, UGAL-L's,
    UGAL-G's or none.  Valiant, UGAL-L and UGAL-G (and Dragonfly's minimal, Valiant and UGAL-L
    routings) each share one router stage this way, compiled once for all of them, instead
    of one each (each about 20 s of CPU); the variant is a branch at a packet's first
    router."""
    v = ap[A_VARIANT]
    if v == V_UGAL_L:
        _ugal_l(site, eng, ctx, ap, fid)
    elif v == V_UGAL_G:
        _ugal_g(site, eng, ctx, ap, fid)
    elif v == V_VALIANT:
        _valiant(site, eng, ctx, ap, fid)


@njit_kernel
def mid_hop(site, eng, ctx, ap, fid):
    """Minimal towards the intermediate router, then minimal towards the destination."""
    rg, plo, nepk, phi = site.rg, site.plo, site.nepk, site.phi
    prm, ports, tab, rec, rec_c = eng.prm, eng.ports, eng.tab, eng.rec, eng.rec_c
    op, ovc = minimal_hop(rg, plo, nepk, phi, ap[A_PHASE], prm[PR_SEED], ports, tab.dist, rec,
                          rec_c, fid)
    return OK, op, ovc


KNOBS = {"valiant": ("max_hops_cap",),
         "ugal_l": ("max_hops_cap", "n_indirect", "c", "length_weighted", "threshold", "bias"),
         "ugal_g": ("max_hops_cap", "n_indirect", "c", "bias")}
"""Kernel parameters of the plans (``RoutingPlan.kernel_params``), per kernel."""
for _name, _variant in (("valiant", V_VALIANT), ("ugal_l", V_UGAL_L), ("ugal_g", V_UGAL_G)):
    register_kernel(_name, RoutingKernel(module=__name__, hop="mid_hop", source="mid_source",
                                         tables=MidTables, optional=OPTIONAL,
                                         schemes=("hop", "phase"), params=PARAMS,
                                         knobs=KNOBS[_name], pack=packing(_variant)))
