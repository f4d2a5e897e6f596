"""The on/off injection process: each endpoint is a two-state Markov source.

BookSim2's ``injection_process = on_off`` (Jiang et al. 2013): an endpoint
is on or off; in every cycle it first changes state (off -> on with
probability alpha, on -> off with probability beta), then, if on, creates a
packet with probability r1.  Over a long run it is on a fraction
alpha / (alpha + beta) of the cycles and its on-periods last 1 / beta cycles
on average, so it offers r1 * alpha / (alpha + beta) packets per cycle
(:func:`models.traffic.injection.on_off_rates` derives the third parameter
from the load).

Every draw is a pure function of (seed, endpoint, cycle) (:mod:`models.core.rng`):
the state change of cycle ``c`` uses ``P_ONOFF``, the packet draw the same
``P_INJECT`` draw as the Bernoulli process (threshold ``prm[PR_THR]`` = r1),
and the state before cycle 0 is drawn once (``P_ONOFF_INIT``, on or off with
probability 1/2 each, as BookSim starts).  The state is a per-endpoint array
(``srcs.ep_onoff``: the state in the last cycle drawn, -1 before the first), so
the results do not depend on the rank count, and a checkpoint saves it.

The source queue holds a count of packets and finds each packet's creation
cycle again when it starts it, by repeating the draws from ``ep_next_gen``
(:func:`pdes.kernels.cycle.start_packet`).  With on/off the draws of a cycle
depend on the state before it, so ``srcs.ep_onoff_gen`` keeps the state in
the cycle before ``ep_next_gen``: the state in the cycle before a packet
created by an idle endpoint, and "on" after a packet has started (a packet is
created only while on).
"""
import numpy as np

from models.core.jit import njit_borrow, njit_inline
from models.core.params import PR_ALPHA_THR, PR_BETA_THR, PR_KEYED, PR_KEYSEED, PR_SEED
from models.core.rng import P_INJECT, P_ONOFF, P_ONOFF_INIT, draw53, entity_key

_HALF = np.int64(1) << np.int64(52)


@njit_borrow
def build_keys(prm, ep_gid, ep_key):
    """Each endpoint's key of its ``P_INJECT`` draws (``keyed_draw53(ep_key[e], c)`` is
    ``draw53(seed, ep_gid[e], c, P_INJECT)``), unless they are current for ``prm[PR_SEED]``."""
    seed = prm[PR_SEED]
    if prm[PR_KEYED] != 0 and prm[PR_KEYSEED] == seed:
        return
    for e in range(ep_gid.shape[0]):
        ep_key[e] = np.int64(entity_key(seed, ep_gid[e], P_INJECT))
    prm[PR_KEYSEED] = seed
    prm[PR_KEYED] = 1


@njit_inline
def on_off_cycle(state, seed, eg, c, alpha_thr, beta_thr, r1_thr):
    """``(state, created)`` of endpoint ``eg`` in cycle ``c`` from its state in cycle
    ``c - 1`` (-1: before cycle 0, not drawn yet)."""
    if state < 0:
        state = 1 if draw53(seed, eg, 0, P_ONOFF_INIT) < _HALF else 0
    u = draw53(seed, eg, c, P_ONOFF)
    if state != 0:
        state = 0 if u < beta_thr else 1
    else:
        state = 1 if u < alpha_thr else 0
    created = state != 0 and draw53(seed, eg, c, P_INJECT) < r1_thr
    return state, created


@njit_inline
def on_off_draw(t, e, eg, seed, thr, prm, srcs):
    """Endpoint ``e``'s draws of cycle ``t``: its new state, and whether it creates a packet.
    An idle endpoint that creates one (its creation cycle becomes ``ep_next_gen``) keeps
    its state before ``t`` for :func:`on_off_replay`."""
    before = srcs.ep_onoff[e]
    state, created = on_off_cycle(before, seed, eg, t, prm[PR_ALPHA_THR], prm[PR_BETA_THR], thr)
    srcs.ep_onoff[e] = state
    if created and srcs.ep_pending[e] == 0 and srcs.ep_cur_left[e] == 0:
        srcs.ep_onoff_gen[e] = before
    return created


@njit_inline
def on_off_replay(c, e, eg, seed, thr, prm, srcs):
    """The creation cycle of endpoint ``e``'s next queued packet: the first cycle from ``c``
    (= ``ep_next_gen``) whose draws create one, repeated from the state before ``c``."""
    state = srcs.ep_onoff_gen[e]
    while True:
        state, created = on_off_cycle(state, seed, eg, c, prm[PR_ALPHA_THR], prm[PR_BETA_THR],
                                      thr)
        if created:
            break
        c += 1
    srcs.ep_onoff_gen[e] = 1
    return c
