"""Progressive adaptive routing (PAR) on the Dragonfly (Jiang, Kim, Dally, ISCA 2009).

UGAL-L decides at the source router between the Dragonfly-minimal path and
paths through ``n_indirect`` random intermediate groups (as
``dragonfly_ugal``).  A source router sees only its own queues, so when the
congestion is on the global link of another router of the group, UGAL-L
keeps sending minimally.  PAR re-evaluates the decision once more: a packet
that left its source router minimally over a local link is, at the next
router of its source group (the one holding the global link it would take),
compared again with random intermediate groups, by that router's queues.
If the non-minimal path wins there, the packet is routed from this router
to the intermediate group and on to its destination.

VC classes: Kim et al.'s positions in the link sequence (``vc_scheme =
"dragonfly"``: a local hop takes the next even position, a global hop the
next odd one, class = position // 2).  A re-routed packet takes
l-l-g-l-g-l (positions 0, 2, 3, 4, 5, 6), so PAR needs four classes and at
most six hops; positions still increase along every path, so the channel
dependency graph stays acyclic.

The re-evaluation compares the queue of the output port the packet would
take minimally from this router (times the remaining minimal hops) with the
queue of the port towards each candidate group times that path's length
(times ``c``), with the same threshold rule as ``ugal_l``; its random
candidates use other generator keys than the source router's, and the
decision is made at most once per packet.
"""
import numpy as np

from models.core.errors import ParameterError
from models.core.jit import njit_kernel
from models.core.registry import ROUTINGS, Param
from models.routing import RoutingPlan
from models.routing.dragonfly import SCHEME, dragonfly_hop, group_tables
from models.routing.nonminimal import BIAS, KNOBS, PARAMS, UGAL, MidTables, _ugal_checks, pack
from models.routing.nonminimal import ugal_l_source  # noqa: F401  (the kernel's source, by name)
from models.routing.nonminimal import A_BIAS, A_CMICRO, A_LENW, A_MAXHOPS, A_NIND, A_THRESH
from models.routing.paths import buffer_share, draw_mid, group_hops, group_port, port_backlog
from models.core.rings import credit_rtt
from models.core.params import PR_SEED
from models.core.record import F_AUX2, F_DSTR, F_HOPS, F_MID, F_SEQ, F_SRC, NF_HOT
from models.core.routing import RoutingKernel, register_kernel


def dragonfly_par(topo, dist, n_indirect=1, c=1.0, length_weighted=True, threshold=0.0, bias=BIAS):
    """Plan for PAR: UGAL-L at the source router, re-evaluated at the next router of the
    source group; Kim et al.'s VC classes with one more local class (four)."""
    grp, entry = group_tables(topo)
    if entry.shape[0] < 3:
        raise ParameterError("topology.g: Dragonfly non-minimal routing needs at least 3 groups")
    _ugal_checks(n_indirect, c, threshold, bias)
    return RoutingPlan(kernel="dragonfly_par", max_hops=6, vcs_needed=4, scheme="dragonfly",
                       vc_scheme=SCHEME + "; PAR's re-routed packets take l-l-g-l-g-l (4 classes)",
                       tables={"r_group": grp, "g_entry": entry, "mid_cand": np.zeros(0, np.int32)},
                       kernel_params={"max_hops_cap": 0, "n_indirect": int(n_indirect),
                                      "c": float(c), "length_weighted": bool(length_weighted),
                                      "threshold": float(threshold), "bias": float(bias)})


@njit_kernel
def par_hop(site, eng, ctx, ap, fid):
    """A Dragonfly hop; after one minimal local hop in the source group, first the PAR
    re-evaluation (``F_MID`` = the intermediate group's entry router if it wins)."""
    t, rg, plo, nepk, phi = site.t, site.rg, site.plo, site.nepk, site.phi
    prm, ports, tab, crd, rec, rec_c = eng.prm, eng.ports, eng.tab, eng.crd, eng.rec, eng.rec_c
    r_group = ctx.r_group
    dstr = rec[fid, F_DSTR]
    if (rec_c[fid, F_MID - NF_HOT] < 0 and rec[fid, F_HOPS] == 1
            and rec_c[fid, F_AUX2 - NF_HOT] == 0 and r_group[rg] != r_group[dstr]):
        dist, out_nbr, g_entry = tab.dist, ports.out_nbr, ctx.g_entry
        seed, src, seq = prm[PR_SEED], rec[fid, F_SRC], rec[fid, F_SEQ]
        c_micro, length_w, n_ind, bias = ap[A_CMICRO], ap[A_LENW], ap[A_NIND], ap[A_BIAS]
        pm = group_port(rg, dstr, plo + nepk, phi, out_nbr, r_group, g_entry)
        qm = port_backlog(pm, prm, ports, crd, t,
                          credit_rtt(prm, ports.out_lat[pm])) if pm >= 0 else 0
        if pm >= 0 and not (ap[A_THRESH] > 0 and
                            qm * 1000000 < buffer_share(pm, prm, ports, ap[A_THRESH])):
            lm = group_hops(rg, dstr, r_group, g_entry)
            best = qm * lm * 1000000 if length_w != 0 else qm * 1000000
            mid = -1
            for j in range(n_ind):
                # keys n_ind.. : other draws than the source router's
                m = draw_mid(ctx.mid_cand, rg, dstr, dist, ap[A_MAXHOPS], seed, src, seq,
                             n_ind + j, r_group, g_entry)
                if m < 0:
                    continue
                pi = group_port(rg, m, plo + nepk, phi, out_nbr, r_group, g_entry)
                if pi < 0:
                    continue
                qi = port_backlog(pi, prm, ports, crd, t, credit_rtt(prm, ports.out_lat[pi]))
                li = group_hops(rg, m, r_group, g_entry) + group_hops(m, dstr, r_group, g_entry)
                cost = c_micro * qi * li + bias * lm if length_w != 0 else c_micro * qi + bias
                if cost < best:
                    best = cost
                    mid = m
            rec_c[fid, F_MID - NF_HOT] = mid
    return dragonfly_hop(site, eng, ctx, ap, fid)


register_kernel("dragonfly_par", RoutingKernel(
    module=__name__, hop="par_hop", source="ugal_l_source", tables=MidTables,
    schemes=("dragonfly",), params=PARAMS, knobs=KNOBS["ugal_l"], pack=pack))

ROUTINGS.register("dragonfly_par", dragonfly_par, params=[
    Param("n_indirect", int, 1, "random intermediate groups compared with the minimal path, at "
          "the source router and again at the next router of the source group"),
    Param("c", float, 1.0, "penalty factor of the non-minimal path"),
    Param("length_weighted", bool, True, "cost = occupancy x path length"),
    Param("threshold", float, 0.0, "route minimally while the minimal port holds less than this "
          "fraction of a port's buffer (0 = off)"),
    UGAL[-1],
], summary="Dragonfly progressive adaptive routing (PAR): UGAL-L re-evaluated at the next router "
           "of the source group",
    reference="Jiang, Kim, Dally ISCA 2009; 000 Sec. V")
