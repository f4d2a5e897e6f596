"""VC allocation's helpers that do not depend on the routing, shared by every routing's
router stage (:mod:`pdes.kernels.routed`, a template compiled once per routing): compiled
once per process (and cached), and inlined by LLVM where the router stage calls them
(:func:`models.core.jit.njit_llvm_inline`): a routing's compile no longer types and lowers
them again."""
from models.core.jit import njit_llvm_inline
from models.core.params import NEVER, PR_HOT, PR_NV, PR_PKT, PR_PRIV, PR_VAD
from models.core.record import OK
from models.core.rings import ring_slot
from pdes.kernels.buffers import shared_free, shared_room


@njit_llvm_inline
def unroutable(status, op, ovc, ncls, mono, P, plo, nepk, in_cls, port_down):
    """After a failure: whether a head's route is none, or leads to a failed port, or asks
    for a VC class there is none of (or lower than the one it came on)."""
    if status != OK or op < 0 or ovc >= ncls:
        return True
    if mono != 0 and P - plo >= nepk and op - plo >= nepk and ovc < in_cls:
        return True
    return port_down[op] != 0


@njit_llvm_inline
def free_output_vc(t, op, cls, kcls, prm, ports, crd, outq):
    """The free VC of class ``cls`` (VCs ``cls * kcls`` on) at network output ``op`` with room
    for a whole packet and the most of it (lowest index on ties), or -1.  With shared
    buffers the room is the VC's private flits left and the port's free shared flits (every
    credit of the port that has arrived is absorbed first)."""
    nv, pkt, hot, priv = prm[PR_NV], prm[PR_PKT], prm[PR_HOT], prm[PR_PRIV]
    cred, ov_owner, cr_deep = crd.cred, outq.ov_owner, ports.cr_deep
    cr_t, cr_head, cr_cnt = crd.cr_t, crd.cr_head, crd.cr_cnt
    nK = cr_cnt.shape[0]
    lo = cls * kcls
    ovc = -1
    bc = -1
    ccap = ports.cr_cap[op]
    if priv != 0:
        free = shared_free(crd, cr_deep, hot, nv, ccap, priv, op, t)
        for v in range(lo, lo + kcls):
            kk = op * nv + v
            if ov_owner[kk] >= 0:
                continue
            room = shared_room(cred, crd.cr_res, ccap, priv, kk, free)
            if room >= pkt and room > bc:
                bc = room
                ovc = v
        return ovc
    for v in range(lo, lo + kcls):
        kk = op * nv + v
        if ov_owner[kk] >= 0:
            continue
        if kcls == 1 and cred[kk] >= pkt:
            # the class's only VC has room without the credits on their way back: the
            # choice does not need them (they are absorbed later; the count at any cycle
            # is the same whenever that happens)
            return v
        # absorb the credits that have arrived: rings.absorb_credits written out (the inline
        # call measured 5-10% slower on a 100K-endpoint BDF)
        n = cr_cnt[kk]
        if n > 0:
            h = cr_head[kk]
            while n > 0 and cr_t[ring_slot(h, kk, nK, hot, cr_deep)] <= t:
                cred[kk] += 1
                n -= 1
                h = h + 1 if h + 1 < ccap else 0
            cr_cnt[kk] = n
            cr_head[kk] = h if n > 0 else 0
        if cred[kk] >= pkt and cred[kk] > bc:
            bc = cred[kk]
            ovc = v
    return ovc


@njit_llvm_inline
def grant_vcs(t, k, n_touched, prm, ports, crd, inb, outq, scr):
    """VC allocation, output side: each requested output VC (``scr.touched``) goes to its
    best requester; with shared buffers the packet's flits are reserved now, so that no
    other VC takes the shared flits it was granted for (a grant earlier in this loop may
    have taken them: then it waits)."""
    nv, pkt, vadel, priv = prm[PR_NV], prm[PR_PKT], prm[PR_VAD], prm[PR_PRIV]
    va_best, va_who, touched, va_ovc = scr.va_best, scr.va_who, scr.touched, scr.va_ovc
    plo = ports.port_off[k]
    n_ivc = (ports.port_off[k + 1] - plo) * nv
    nepk = ports.n_epp[k]
    for i in range(n_touched):
        loc = touched[i]
        w = va_who[loc]
        o = plo * nv + loc
        if priv != 0 and loc >= nepk * nv:
            opg = o // nv
            cap = ports.cr_cap[opg]
            free = shared_free(crd, ports.cr_deep, prm[PR_HOT], nv, cap, priv, opg, t)
            if shared_room(crd.cred, crd.cr_res, cap, priv, o, free) < pkt:
                va_best[loc] = -1
                continue
            crd.cr_res[o] += pkt
        outq.ov_owner[o] = w
        inb.iv_ovc[w] = va_ovc[loc]
        inb.iv_alloc[w] = 1
        inb.iv_sa_ready[w] = t + vadel
        r = inb.iv_ready[w]
        inb.iv_sa_at[w] = r if r > t + vadel else t + vadel
        inb.iv_va_at[w] = NEVER
        nxt = w - plo * nv + 1
        outq.rr_va[o] = nxt if nxt < n_ivc else 0
        va_best[loc] = -1


