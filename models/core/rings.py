"""The ring layout of the engine's buffers and credit FIFOs, which routing reads too.

Rings (input VCs, credit FIFOs) are stored slot-major: slot ``w`` of ring
``i`` lies in the hot plane ``w`` (``w * n + i`` for ``n`` rings) while
``w < hot``, and among the ring's own deep slots (``deep[i] + w``) from there
on (``pdes.kernels.cycle`` explains why).  A credit FIFO of (sender port, VC)
key ``kk`` holds the arrival cycles of the credits on their way back; the
credit count ``cred[kk]`` is exact once those that have arrived are absorbed.
Adaptive routing absorbs them to read an output's queue; the engine does
wherever it needs a count.
"""
from models.core.jit import njit_inline
from models.core.params import PR_CD, PR_CHX, PR_SAD


@njit_inline
def ring_slot(w, i, n, hot, deep):
    """Index of slot ``w`` of ring ``i`` in its slot-major array of ``n`` rings."""
    return w * n + i if w < hot else deep[i] + w


@njit_inline
def absorb_credits(crd, cr_deep, hot, cap, kk, t):
    """Add to ``crd.cred[kk]`` the credits of key ``kk`` (a FIFO of ``cap`` slots) that have
    arrived by cycle ``t``, and drop them from the FIFO (rewound when it empties)."""
    cr_cnt = crd.cr_cnt
    n = cr_cnt[kk]
    if n > 0:
        cr_t, cr_head, cred = crd.cr_t, crd.cr_head, crd.cred
        nK = cr_cnt.shape[0]
        h = cr_head[kk]
        while n > 0 and cr_t[ring_slot(h, kk, nK, hot, cr_deep)] <= t:
            cred[kk] += 1
            n -= 1
            h = h + 1 if h + 1 < cap else 0
        cr_cnt[kk] = n
        cr_head[kk] = h if n > 0 else 0


@njit_inline
def credit_rtt(prm, lat):
    """Fewest cycles from a flit taking a credit (switch allocation here) to the credit's
    return over a link of latency ``lat``: to the link, the link (and the channel's extra
    cycle), switch allocation at the next router on arrival (a body flit), the credit
    delay and the link back."""
    return 2 * (lat + prm[PR_CHX]) + prm[PR_SAD] + prm[PR_CD]
