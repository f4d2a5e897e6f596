"""The one flit-insertion and the one credit-absorption routine of the engine.

Every path that puts a flit into an input VC (injection from an endpoint,
delivery over a local link, a flit received from another part in an exchange
block) calls :func:`enqueue_flit`; every path that queues a credit for its
sender (credit return inside a part, a credit received in an exchange block)
calls :func:`queue_credit`.  Both are compiled without reference counting
(:func:`models.core.jit.njit_borrow`): an ordinary call of a compiled function
taking arrays costs atomic reference counts per flit (3-4x slower for the
exchange unpacking), and inlining at Numba IR level was measured 25-45%
slower for the whole kernel; a borrowing call costs nothing measurable.

Buffers are rings with a capacity of their own (see :mod:`pdes.kernels.cycle`):
slot ``w`` of input VC ``ivc`` is ``ib_id[w * nIV + ivc]`` below ``hot`` and
``ib_id[iv_deep[ivc] + w]`` from there on; credit ``w`` of key ``k`` is
``cr_t[w * nK + k]``, or ``cr_t[cr_deep[k] + w]``.
"""
from models.core.jit import njit_borrow, njit_inline


@njit_borrow
def enqueue_flit(ib_id, ib_rdy, ib_head, ib_cnt, iv_ready, iv_alloc, iv_sa_ready, iv_sa_at,
                 iv_va_at, nIV, hot, iv_deep, cap, ivc, fid, rdy):
    """Append pool record ``fid`` to input VC ``ivc`` (``cap`` slots), processable from
    cycle ``rdy``.

    Room was reserved by a credit.  A flit arriving at an empty VC sets the
    VC's next decision cycle: switch allocation if the VC holds an output VC
    (a body flit), VC allocation otherwise (a head).
    """
    w = ib_head[ivc] + ib_cnt[ivc]
    if w >= cap:
        w -= cap
    pos = w * nIV + ivc if w < hot else iv_deep[ivc] + w
    ib_id[pos] = fid
    ib_rdy[pos] = rdy
    if ib_cnt[ivc] == 0:
        iv_ready[ivc] = rdy
        if iv_alloc[ivc] != 0:
            iv_sa_at[ivc] = rdy if rdy > iv_sa_ready[ivc] else iv_sa_ready[ivc]
        else:
            iv_va_at[ivc] = rdy
    ib_cnt[ivc] += 1


@njit_borrow
def queue_credit(cr_t, cr_head, cr_cnt, nK, hot, cr_deep, cap, k, arr):
    """Queue a credit for (sender port, VC) key ``k`` (a FIFO of ``cap`` slots: the
    capacity of the input VC it counts for) arriving in cycle ``arr``; False if the
    FIFO is full (more credits than buffer slots: an engine bug)."""
    n = cr_cnt[k]
    if n >= cap:
        return False
    w = cr_head[k] + n
    if w >= cap:
        w -= cap
    cr_t[w * nK + k if w < hot else cr_deep[k] + w] = arr
    cr_cnt[k] = n + 1
    return True


@njit_inline
def absorb_credits(cr_t, cr_head, cr_cnt, cred, nK, hot, cr_deep, cap, kk, t):
    """Add to ``cred[kk]`` the credits of key ``kk`` that have arrived by cycle ``t`` and drop
    them from its FIFO.  The stages on the default path write this loop out where they
    need it (an inline call there measured slower); the shared-buffer path calls it."""
    n = cr_cnt[kk]
    if n > 0:
        h = cr_head[kk]
        while n > 0 and cr_t[h * nK + kk if h < hot else cr_deep[kk] + h] <= t:
            cred[kk] += 1
            n -= 1
            h = h + 1 if h + 1 < cap else 0
        cr_cnt[kk] = n
        cr_head[kk] = h if n > 0 else 0


@njit_borrow
def shared_free(cr_t, cr_head, cr_cnt, cred, cr_res, nK, hot, cr_deep, nv, cap, priv, s, t):
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
        absorb_credits(cr_t, cr_head, cr_cnt, cred, nK, hot, cr_deep, cap, kk, t)
        c = cap - cred[kk] + cr_res[kk]
        if c > priv:
            used += c - priv
    return cap - priv - used


@njit_borrow
def shared_room(cred, cr_res, cap, priv, kk, free):
    """Flits VC key ``kk`` of a shared buffer may still take, with ``free`` shared flits
    free (:func:`shared_free`)."""
    c = cap - cred[kk] + cr_res[kk]
    return (priv - c if c < priv else 0) + free
