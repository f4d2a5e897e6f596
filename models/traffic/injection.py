"""Injection processes: when an endpoint creates packets (``traffic.injection``).

* ``bernoulli`` -- in every cycle a packet with probability ``load / packet_size``;
* ``on_off``    -- BookSim2's on/off source (Jiang et al. 2013, ``injection.cpp``): a
  two-state Markov chain per endpoint that goes off -> on with probability
  ``burst_alpha`` and on -> off with probability ``burst_beta`` at the start of
  every cycle, and while on creates a packet with probability ``burst_r1``.

The chain is on a fraction alpha / (alpha + beta) of the cycles, so it offers
``r1 * alpha / (alpha + beta)`` packets per cycle; an on-period lasts 1 / beta
cycles on average.  As in BookSim exactly one of the three is given as negative
and is derived from the packet rate ``p = load / packet_size``:

    alpha = beta * p / (r1 - p),   beta = alpha * (r1 - p) / p,   r1 = p * (alpha + beta) / alpha

(BookSim's defaults: alpha = beta = 0.5, r1 = -1, so r1 = 2p: bursts at twice the
load, on half of the cycles).  The kernel side is :mod:`pdes.kernels.injection`.
"""
from __future__ import annotations

from models.core.errors import ParameterError

INJECTIONS = ("bernoulli", "on_off")
ON_OFF_KEYS = ("burst_alpha", "burst_beta", "burst_r1")
ON_OFF_DEFAULTS = {"burst_alpha": 0.5, "burst_beta": 0.5, "burst_r1": -1.0}
"""BookSim2's defaults (``booksim_config.cpp``)."""


def on_off_rates(rate: float, alpha: float, beta: float, r1: float) -> tuple[float, float, float]:
    """``(alpha, beta, r1)`` of an on/off source offering ``rate`` packets per cycle, the
    negative one of the three derived from the others (BookSim2's ``OnOffInjectionProcess``).

    Raises
    ------
    ParameterError
        ``traffic.burst_*: <rule>`` unless exactly one is negative, the others are in
        [0, 1] (alpha > 0 unless derived) and the derived one is a probability that
        gives the rate (alpha in (0, 1], beta in [0, 1], r1 in (0, 1]).
    """
    given = {"burst_alpha": alpha, "burst_beta": beta, "burst_r1": r1}
    for key, v in given.items():
        if v > 1.0:
            raise ParameterError(f"traffic.{key}: must be <= 1 (a probability per cycle), got {v:g}")
    negative = [k for k, v in given.items() if v < 0]
    if len(negative) != 1:
        key = negative[1] if len(negative) > 1 else "burst_r1"
        raise ParameterError(
            f"traffic.{key}: exactly one of burst_alpha, burst_beta, burst_r1 must be negative "
            f"(the one derived from traffic.load), got {alpha:g}, {beta:g}, {r1:g}")
    derived = negative[0]
    if derived != "burst_alpha" and alpha == 0.0:
        raise ParameterError("traffic.burst_alpha: must be > 0 (an off source never turns on)")
    if derived == "burst_alpha":
        if r1 <= rate:
            raise ParameterError(f"traffic.burst_r1: must exceed the packet rate {rate:g} "
                                 f"(traffic.load / router.packet_size) to derive burst_alpha, "
                                 f"got {r1:g}")
        alpha = beta * rate / (r1 - rate)
        if not 0.0 < alpha <= 1.0:
            raise ParameterError(f"traffic.burst_alpha: derived {alpha:g} = beta * p / (r1 - p) "
                                 f"is not in (0, 1] (p = {rate:g} packets per cycle)")
    elif derived == "burst_beta":
        if r1 < rate:
            raise ParameterError(f"traffic.burst_r1: must be >= the packet rate {rate:g} "
                                 f"(traffic.load / router.packet_size), got {r1:g}")
        beta = alpha * (r1 - rate) / rate
        if beta > 1.0:
            raise ParameterError(f"traffic.burst_beta: derived {beta:g} = alpha * (r1 - p) / p "
                                 f"is above 1 (p = {rate:g} packets per cycle)")
    else:
        r1 = rate * (alpha + beta) / alpha
        if r1 > 1.0:
            raise ParameterError(f"traffic.burst_r1: derived {r1:g} = p * (alpha + beta) / alpha "
                                 f"is above 1: the source cannot offer {rate:g} packets per cycle "
                                 f"while on a fraction {alpha / (alpha + beta):g} of the cycles")
    return alpha, beta, r1


def injection_of(traffic: dict, packet_size: int) -> tuple[float, float, float] | None:
    """``(alpha, beta, r1)`` of a resolved ``[traffic]`` section with ``injection = "on_off"``
    (unset burst keys take BookSim's defaults), ``None`` for ``bernoulli``.

    Raises
    ------
    ParameterError
        as :func:`on_off_rates`; or a burst key set with the Bernoulli process.
    """
    if traffic["injection"] != "on_off":
        for key in ON_OFF_KEYS:
            if traffic.get(key) is not None:
                raise ParameterError(f"traffic.{key}: only with traffic.injection = \"on_off\" "
                                     f"(the injection is \"{traffic['injection']}\")")
        return None
    v = {k: ON_OFF_DEFAULTS[k] if traffic.get(k) is None else float(traffic[k]) for k in ON_OFF_KEYS}
    return on_off_rates(traffic["load"] / packet_size, v["burst_alpha"], v["burst_beta"],
                        v["burst_r1"])
