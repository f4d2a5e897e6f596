"""Packing and unpacking the blocks that neighbour ranks exchange at window boundaries.

A block for one neighbour is a flat ``int32`` array::

    [n_flits, n_credits,
     n_flits  x (channel, arrival, record[NF_USED]),
     n_credits x (channel, arrival, vc)]

``channel`` is the global id of the direction the *flit* travels (a credit
goes back on the reverse direction of the same channel).  Items of one
channel keep their send order, which is all that ordering has to preserve:
the flits of a channel enter one input port, the credits of a channel feed
one (sender, VC) FIFO each.
"""
import numpy as np

from models.core.jit import njit
from models.core.params import PR_HOT, PR_NV, PR_SX
from models.core.record import F_FLIT, F_VC, NF_USED
from pdes.kernels.buffers import enqueue_flit, new_record, queue_credit

HEADER = 2
FLIT_WORDS = NF_USED + 2    # the padding of the in-memory records is not sent
CREDIT_WORDS = 3


@njit
def pack_block(buf, cuts, cut_out_channel, cut_in_channel, fo_rec, fo_t, fo_cnt, focap,
               co_t, co_vc, co_cnt, cocap):
    """Write the outboxes of local cut channels ``cuts`` into ``buf``, clear them,
    and return the number of words used."""
    nf = 0
    nc = 0
    o = HEADER
    for i in range(cuts.shape[0]):
        c = cuts[i]
        ch = cut_out_channel[c]
        for j in range(fo_cnt[c]):
            row = c * focap + j
            buf[o] = ch
            buf[o + 1] = fo_t[row]
            for f in range(NF_USED):
                buf[o + 2 + f] = fo_rec[row, f]
            o += FLIT_WORDS
        nf += fo_cnt[c]
        fo_cnt[c] = 0
    for i in range(cuts.shape[0]):
        c = cuts[i]
        ch = cut_in_channel[c]
        for j in range(co_cnt[c]):
            row = c * cocap + j
            buf[o] = ch
            buf[o + 1] = co_t[row]
            buf[o + 2] = co_vc[row]
            o += CREDIT_WORDS
        nc += co_cnt[c]
        co_cnt[c] = 0
    buf[0] = nf
    buf[1] = nc
    return o


@njit
def unpack_block(buf, in_port_of_channel, out_port_of_channel, rdel, prm, ports, pool, inb, crd):
    """Insert the flits and credits of a received block; False on a credit FIFO overflow.

    Flits take a pool record each (the pool has room: every window reserves records
    for the flits the exchange after it brings, :meth:`pdes.state.PartState.advance`) and enter
    their input VC through :func:`~pdes.kernels.buffers.enqueue_flit`, credits their
    sender's FIFO through :func:`~pdes.kernels.buffers.queue_credit`: the routines the
    cycle kernel uses for local links.  ``rdel``: a head's ready stamp after its arrival
    (``PR_HRDY``); stamps count ``prm[PR_SX]`` steps per cycle.
    """
    nv, hot, sx = prm[PR_NV], prm[PR_HOT], prm[PR_SX]
    in_cap, cr_cap, iv_deep, cr_deep = ports.in_cap, ports.cr_cap, ports.iv_deep, ports.cr_deep
    nf = buf[0]
    nc = buf[1]
    nIV = inb.ib_cnt.shape[0]
    top = pool.rec_top[0]           # freed records: rec_free[0:top]
    nxt = pool.rec_next[0]          # records from nxt on were never used
    o = HEADER
    for i in range(nf):
        a = np.int64(buf[o + 1])
        rdy = a * sx + rdel if buf[o + 2 + F_FLIT] == 0 else a * sx
        fid, top, nxt = new_record(pool, top, nxt, buf[o + 2:o + 2 + NF_USED])
        D = in_port_of_channel[buf[o]]
        enqueue_flit(inb, iv_deep, nIV, hot, in_cap[D], D, D * nv + buf[o + 2 + F_VC], fid,
                     rdy)
        o += FLIT_WORDS
    pool.rec_top[0] = top
    pool.rec_next[0] = nxt
    for i in range(nc):
        s = out_port_of_channel[buf[o]]
        if not queue_credit(crd, cr_deep, hot, cr_cap[s], s * nv + buf[o + 2], buf[o + 1]):
            return False
        o += CREDIT_WORDS
    return True
