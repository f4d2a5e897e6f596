"""What the pipeline keys of ``[router]`` mean in cycles (``router.pipeline``).

Two pipelines give the same keys (``routing_delay``, ``vc_alloc_delay``,
``sw_alloc_delay``, ``st_delay``, ``credit_delay``, ``internal_speedup``,
``endpoint_latency`` and the link latencies) their cycles:

``booksim`` (the default)
    The keys mean what they mean in BookSim2's input-queued router
    (Jiang et al., ISPASS 2013; ``routers/iq_router.cpp``, ``routers/router.cpp``,
    ``channel.hpp``, ``trafficmanager.cpp``):

    * a channel of latency ``L`` written in cycle ``t`` is read by its receiver
      in cycle ``t + L + 1`` (``Channel::ReadInputs`` queues the flit for
      ``t + 1 + L - 1``, ``Channel::WriteOutputs`` exposes it at the end of that
      cycle, the receiver reads it at the start of the next).  This holds for
      the injection and ejection channels too: a packet's network latency, from
      the cycle its head enters the injection channel to the cycle its tail is
      read at the destination, counts ``L + 1`` for each of them;
    * a router runs its whole pipeline (``IQRouter::_InternalStep``) ``s`` times
      per cycle, ``s`` = ``internal_speedup`` (``Router::Evaluate``); a stage
      that starts in some step of cycle ``c`` with delay ``d`` completes in that
      step if ``d = 1``, else in the first step of cycle ``c + d - 1``
      (``*Evaluate`` sets ``time = now + d - 1``, ``*Update`` completes at
      ``time``), and the next stage starts in the following step.  Route
      computation starts in the step that stores the flit (with
      ``routing_delay = 0``, lookahead routing, VC allocation starts there);
      then VC allocation, switch allocation and the crossbar
      (``st_prepare_delay + st_final_delay``, pdes's ``st_delay``) follow; the
      flit leaves the output buffer onto its channel at the end of the cycle in
      which it crossed (``IQRouter::_SendFlits``);
    * a credit sent back in cycle ``t`` over a channel of latency ``L`` is used
      by the upstream router from cycle ``t + L + 1 + credit_delay``
      (``IQRouter::_ReceiveCredits``) and by a source endpoint from
      ``t + L + 1`` (``TrafficManager::_Step`` processes it at once).

``staged``
    Each stage takes its delay in whole cycles, one after the other: a head
    that arrives in cycle ``a`` may win VC allocation from ``a +
    routing_delay``, switch allocation ``vc_alloc_delay`` later, and leaves
    ``sw_alloc_delay + st_delay`` cycles after that; a channel of latency ``L``
    delivers after ``L``; credits come back after ``L + credit_delay``.  This was
    pdes's only timing before ``router.pipeline`` existed.

Either way the kernel sees a few cycle offsets (:func:`kernel_timing`), and the
zero-load network latency of a packet of ``P`` flits over ``H``
router-to-router links of latencies ``L_i`` is (:func:`zero_load_latency`)::

    2 (endpoint_latency + x) + sum_i (L_i + x) + (H + 1) D + P - 1

with ``x = 1``, ``D`` = :func:`router_cycles` (booksim) or ``x = 0``,
``D = routing_delay + vc_alloc_delay + sw_alloc_delay + st_delay`` (staged).
"""
from __future__ import annotations

from collections import namedtuple

PIPELINES = ("booksim", "staged")

KernelTiming = namedtuple("KernelTiming", ["head", "va_to_sa", "sa_to_send", "channel",
                                           "endpoint_credit"])
KernelTiming.__doc__ = """Cycle offsets the cycle kernel uses (``prm`` entries of :mod:`pdes.kernels.cycle`).

head: from a head's arrival to its first VC allocation (``PR_RD``; -1 only when
VC allocation, switch allocation and the crossbar all fall in the cycle of arrival);
va_to_sa: from VC allocation to switch allocation, >= 1 (``PR_VAD``);
sa_to_send: from switch allocation to the cycle the flit leaves, switch traversal included (``PR_SAD``);
channel: cycles a channel adds to its latency (``PR_CHX``: booksim 1, staged 0);
endpoint_credit: credit delay of credits returned to a source endpoint (``PR_ECD``).
"""


def _speedup(internal_speedup) -> int:
    """Internal steps per cycle: pdes runs whole steps (1.5 acts as 1)."""
    return max(1, int(internal_speedup))


def booksim_stages(routing_delay: int, vc_alloc_delay: int, sw_alloc_delay: int, st_delay: int,
                   internal_speedup) -> tuple[int, int, int]:
    """(VC allocation, switch allocation, send) cycles of a head in BookSim's router at zero
    load, counted from the cycle the router reads it (see the module docstring)."""
    s = _speedup(internal_speedup)
    if min(vc_alloc_delay, sw_alloc_delay, st_delay) < 1:
        raise ValueError("BookSim's VC and switch allocation and crossbar take at least one cycle")

    def done(step, d):
        # the step in which a stage started at ``step`` with delay ``d`` completes
        return step if d == 1 else (step // s + d - 1) * s

    step = 0                     # the step that stores the flit and starts routing
    if routing_delay > 0:
        step = done(step, routing_delay) + 1
    va = step
    step = done(step, vc_alloc_delay) + 1
    sa = step
    step = done(step, sw_alloc_delay) + 1
    send = done(step, st_delay)
    return va // s, sa // s, send // s


def router_cycles(r: dict) -> int:
    """Cycles a head spends in a router at zero load, from the cycle it is read (booksim) or
    arrives (staged) to the cycle it leaves, for the ``[router]`` section ``r``."""
    if r["pipeline"] == "staged":
        return r["routing_delay"] + r["vc_alloc_delay"] + r["sw_alloc_delay"] + r["st_delay"]
    return booksim_stages(r["routing_delay"], r["vc_alloc_delay"], r["sw_alloc_delay"],
                          r["st_delay"], r["internal_speedup"])[2]


def channel_cycles(r: dict) -> int:
    """Cycles every channel (link, injection, ejection, credit) adds to its latency."""
    return 0 if r["pipeline"] == "staged" else 1


def hop_cycles(r: dict) -> int:
    """Zero-load cycles of one router-to-router hop apart from the link latency (the router
    and the channel's extra cycle): what lowest-latency routing adds per hop."""
    return router_cycles(r) + channel_cycles(r)


def slot_round_trip(r: dict) -> int:
    """Cycles, apart from twice the link latency, from a flit leaving a router until the
    buffer slot it takes downstream carries the next flit out of the same router (one
    VC keeps a link busy only with at least this many cycles' worth of flits per VC).

    staged: ``credit_delay + routing_delay + vc_alloc_delay + sw_alloc_delay``
    (the estimate pdes used before the pipelines existed); booksim: the flit and its
    credit each take a channel's extra cycle, the credit delay, and the cycles from
    switch allocation to sending.
    """
    if r["pipeline"] == "staged":
        return r["credit_delay"] + r["routing_delay"] + r["vc_alloc_delay"] + r["sw_alloc_delay"]
    return r["credit_delay"] + 2 * channel_cycles(r) + kernel_timing(r).sa_to_send


def kernel_timing(r: dict) -> KernelTiming:
    """The kernel's cycle offsets for the ``[router]`` section ``r``."""
    if r["pipeline"] == "staged":
        return KernelTiming(head=r["routing_delay"], va_to_sa=r["vc_alloc_delay"],
                            sa_to_send=r["sw_alloc_delay"] + r["st_delay"], channel=0,
                            endpoint_credit=r["credit_delay"])
    va, sa, send = booksim_stages(r["routing_delay"], r["vc_alloc_delay"], r["sw_alloc_delay"],
                                  r["st_delay"], r["internal_speedup"])
    # the kernel runs switch allocation before VC allocation in a cycle, so it needs
    # VC allocation at least one cycle before switch allocation (with speedup BookSim
    # can do both in one cycle): one cycle moves, the total stays
    if sa == va:
        if send > sa:
            sa += 1
        else:
            va -= 1
    return KernelTiming(head=va, va_to_sa=sa - va, sa_to_send=send - sa, channel=1,
                        endpoint_credit=0)


def zero_load_latency(r: dict, link_latencies) -> int:
    """Network latency of a packet alone in the network over links of ``link_latencies``
    (one per router-to-router hop, possibly none), for the ``[router]`` section ``r``."""
    x = channel_cycles(r)
    hops = len(link_latencies)
    return (2 * (r["endpoint_latency"] + x) + sum(int(v) + x for v in link_latencies)
            + (hops + 1) * router_cycles(r) + r["packet_size"] - 1)
