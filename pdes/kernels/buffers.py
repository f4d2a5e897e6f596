"""The one flit-insertion and the one credit-absorption routine of the engine.

Every path that puts a flit into an input VC (injection from an endpoint,
delivery over a local link, a flit received from another part in an exchange
block) calls :func:`enqueue_flit`; every path that queues a credit for its
sender (credit return inside a part, a credit received in an exchange block)
calls :func:`queue_credit`, and every freed buffer slot sends its credit through
:func:`send_credit` (to the FIFO, or the outbox of a cut channel).  They, and the shared
buffers' :func:`shared_free` and :func:`shared_room`, are compiled without reference counting
and inlined by LLVM into every caller (:func:`models.core.jit.njit_llvm_inline`): an
ordinary call of a compiled function taking arrays costs atomic reference counts per flit
(3-4x slower for the exchange unpacking), inlining at Numba IR level was measured 25-45%
slower for the whole kernel, and a call LLVM chose to keep passes every field of every
array of its arguments; whether it keeps one depends on the caller's size and the CPU the
kernels are compiled for, so these are never left to its choice.

Buffers are rings with a capacity of their own (see :mod:`pdes.kernels.cycle`):
slot ``w`` of input VC ``ivc`` is ``ib_id[w * nIV + ivc]`` below ``hot`` and
``ib_id[iv_deep[ivc] + w]`` from there on; credit ``w`` of key ``k`` is
``cr_t[w * nK + k]``, or ``cr_t[cr_deep[k] + w]``.
"""
import numpy as np

from models.core.jit import njit_borrow, njit_inline, njit_llvm_inline
from models.core.params import PR_OCC
from models.core.record import NF_HOT, NF_USED
from models.core.rings import absorb_credits, ring_slot


@njit_inline
def port_gained(occ, P):
    """Input port ``P`` holds a flit: its bit in the occupancy bitmap ``occ`` (``ip_occ``)."""
    occ[P >> 6] |= np.int64(1) << (P & 63)


@njit_inline
def port_emptied(occ, ib_cnt, P, nv):
    """A VC of input port ``P`` has just become empty: the port's bit is cleared if none of
    its ``nv`` VCs holds a flit."""
    for v in range(P * nv, P * nv + nv):
        if ib_cnt[v] != 0:
            return
    occ[P >> 6] &= ~(np.int64(1) << (P & 63))


@njit_inline
def occupied_word(occ, w, plo, phi):
    """Word ``w`` of the occupancy bitmap restricted to ports ``plo .. phi - 1`` (a router's):
    its set bits, lowest first, are the router's ports with a flit (``(w << 6) + bit``)."""
    m = occ[w]
    if w == plo >> 6:
        m &= ~((np.int64(1) << (plo & 63)) - 1)
    if w == (phi - 1) >> 6 and (phi & 63) != 0:
        m &= (np.int64(1) << (phi & 63)) - 1
    return m


@njit_borrow
def build_occupancy(prm, nv, ib_cnt, occ):
    """The occupancy bitmap from the VC counts, if ``prm[PR_OCC]`` says it is not current (a
    new part, or the buffers changed outside the kernels: :func:`pdes.failure.remove`)."""
    if prm[PR_OCC] != 0:
        return
    for w in range(occ.shape[0]):
        occ[w] = 0
    for ivc in range(ib_cnt.shape[0]):
        if ib_cnt[ivc] != 0:
            port_gained(occ, ivc // nv)
    prm[PR_OCC] = 1


@njit_llvm_inline
def enqueue_flit(inb, iv_deep, nIV, hot, cap, P, ivc, fid, rdy):
    """Append pool record ``fid`` to input VC ``ivc`` (of input port ``P``, ``cap`` slots) of
    the part's input VCs ``inb`` (``nIV`` of them), processable from cycle ``rdy``.

    Room was reserved by a credit.  A flit arriving at an empty VC sets the
    VC's next decision cycle: switch allocation if the VC holds an output VC
    (a body flit), VC allocation otherwise (a head), and marks the port occupied.
    """
    ib_cnt = inb.ib_cnt
    w = inb.ib_head[ivc] + ib_cnt[ivc]
    if w >= cap:
        w -= cap
    pos = ring_slot(w, ivc, nIV, hot, iv_deep)
    inb.ib_id[pos] = fid
    inb.ib_rdy[pos] = rdy
    if ib_cnt[ivc] == 0:
        inb.iv_ready[ivc] = rdy
        if inb.iv_alloc[ivc] != 0:
            sa_ready = inb.iv_sa_ready[ivc]
            inb.iv_sa_at[ivc] = rdy if rdy > sa_ready else sa_ready
        else:
            inb.iv_va_at[ivc] = rdy
        port_gained(inb.ip_occ, P)
    ib_cnt[ivc] += 1


@njit_llvm_inline
def queue_credit(crd, cr_deep, hot, cap, k, arr):
    """Queue a credit for (sender port, VC) key ``k`` (a FIFO of ``cap`` slots: the
    capacity of the input VC it counts for) arriving in cycle ``arr``; False if the
    FIFO is full (more credits than buffer slots: an engine bug)."""
    cr_cnt = crd.cr_cnt
    n = cr_cnt[k]
    if n >= cap:
        return False
    w = crd.cr_head[k] + n
    if w >= cap:
        w -= cap
    crd.cr_t[ring_slot(w, k, cr_cnt.shape[0], hot, cr_deep)] = arr
    cr_cnt[k] = n + 1
    return True


@njit_llvm_inline
def send_credit(crd, obox, ports, nv, hot, cocap, P, vc, carr):
    """The credit of a slot of VC ``vc`` of input port ``P`` that frees, arriving in cycle
    ``carr``: into its sender's FIFO (:func:`queue_credit`), or, for a sender in another
    part, into the outbox of the port's cut channel (``cocap`` slots).  False if either is
    full (an engine bug: more credits than slots, or a window longer than the lookahead)."""
    s = ports.in_sender[P]
    if s >= 0:
        return queue_credit(crd, ports.cr_deep, hot, ports.cr_cap[s], s * nv + vc, carr)
    cc = ports.in_cut[P]
    n = obox.co_cnt[cc]
    if n >= cocap:
        return False
    obox.co_t[cc * cocap + n] = carr
    obox.co_vc[cc * cocap + n] = vc
    obox.co_cnt[cc] = n + 1
    return True


@njit_inline
def new_record(pool, top, nxt, fields):
    """Take a pool record -- the last freed one (``pool.rec_free[0:top]``), else the first
    never used (``nxt``) -- and copy the flit's fields (a whole record, ``NF_USED`` of
    them) into its hot and cold halves; returns ``(fid, top, nxt)``."""
    if top > 0:
        top -= 1
        fid = pool.rec_free[top]
    else:
        fid = nxt
        nxt += 1
    rec, rec_c = pool.rec, pool.rec_c
    for f in range(NF_HOT):
        rec[fid, f] = fields[f]
    for f in range(NF_HOT, NF_USED):
        rec_c[fid, f - NF_HOT] = fields[f]
    return fid, top, nxt


@njit_llvm_inline
def shared_free(crd, cr_deep, hot, nv, cap, priv, s, t):
    """Free shared flits of the input port that sender ``s`` feeds (a shared buffer: each
    VC owns ``priv`` of the port's flits, ``cap - priv`` are shared), after absorbing
    every credit of its VCs that has arrived by cycle ``t``.

    A VC's committed flits are those sent whose credits have not come back plus
    those reserved for the rest of the packet that holds it (``cr_res``); the
    shared occupancy is the sum over the VCs of their committed flits beyond
    ``priv`` (BookSim's SharedBufferPolicy keeps that sum as a counter).  A VC
    ``v`` has room for ``max(priv - committed_v, 0) + shared_free`` flits.
    """
    used = 0
    for v in range(nv):
        kk = s * nv + v
        absorb_credits(crd, cr_deep, hot, cap, kk, t)
        c = cap - crd.cred[kk] + crd.cr_res[kk]
        if c > priv:
            used += c - priv
    return cap - priv - used


@njit_llvm_inline
def shared_room(cred, cr_res, cap, priv, kk, free):
    """Flits VC key ``kk`` of a shared buffer may still take, with ``free`` shared flits
    free (:func:`shared_free`)."""
    c = cap - cred[kk] + cr_res[kk]
    return (priv - c if c < priv else 0) + free


@njit_inline
def unreturned_flits(P, nv, hot, cap, cr_deep, t, cred, cr_t, cr_head, cr_cnt):
    """Flits sent or queued on output port ``P`` (every VC; ``cap`` credits each) whose
    credits have not arrived by cycle ``t``: the credits on their way back count as arrived
    when due, none is absorbed (a snapshot changes no state)."""
    nK = cr_cnt.shape[0]
    q = 0
    for v in range(nv):
        kk = P * nv + v
        c = cred[kk]
        h = cr_head[kk]
        for _ in range(cr_cnt[kk]):
            if cr_t[ring_slot(h, kk, nK, hot, cr_deep)] > t:
                break
            c += 1
            h = h + 1 if h + 1 < cap else 0
        q += cap - c
    return q
