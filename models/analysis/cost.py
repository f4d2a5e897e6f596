"""Cost and power of a network from its topology and physical layout.

Cost model (000 Sec. VI-B)
--------------------------
* **Cables** are priced per Gb/s of bandwidth as a linear function of their
  length ``x`` in metres; a cable costs ``f(x) * gbps``.  Intra-rack cables
  are electric and inter-rack cables optical (000 Sec. VI-B); with
  ``electric_max_m`` every cable up to that length is electric instead
  (000 Sec. VI-B3 prices the fat tree that way, with 20 m).  Lengths come
  from :func:`models.layout.build_layout` (racks 1 x 1 x 2 m in a near-square
  grid, 1 m intra-rack cables, Manhattan distance + 2 m overhead between
  racks for the ``slimfly`` layout preset).
* **Routers** cost ``a * k + b`` dollars for a router of radix ``k`` (ports
  for endpoints plus network ports; 000 Sec. VI-B2).  ``router_radix="max"``
  (default) prices every router as the largest one (one switch product
  for the whole machine), ``"used"`` prices each router by the ports it
  uses, an integer fixes the product radix (it must fit every router).
* **Endpoint cables** (router to NIC) are left out by default, as in
  000 Table IV for the direct networks; ``endpoint_cables=True`` prices
  one electric cable of ``endpoint_cable_m`` (default: the layout's
  intra-rack length) per endpoint.

Cable presets (``cables=``):

``fdr10`` (default; 000 Sec. VI-B1, Fig. 11)
    Mellanox InfiniBand FDR10 40 Gb/s QSFP: electric ``0.4079 x + 0.5771``,
    optical ``0.0919 x + 2.7452`` $/Gb/s, 40 Gb/s per cable.

000 Figs. 12 and 13 use other cables (Elpeus Ethernet 10 Gb/s SFP+, Mellanox
IB QDR 56 Gb/s QSFP, and the text names Mellanox Ethernet 40 and 10 Gb/s);
their fitted coefficients are only drawn in the figures, not printed, so
they are not built in: give them with ``cable_coeffs=(a_el, b_el, a_opt,
b_opt)`` and ``cable_gbps``.  The router preset is ``fdr10``
(``350.4 k - 892.3`` $, Mellanox IB FDR10 switches, 000 Sec. VI-B2); other
routers via ``router_coeffs=(a, b)``.

Power model
-----------
``slimfly`` (default; 000 Sec. VI-C)
    every router port has 4 lanes with one SerDes of 0.7 W each: a router of
    radix ``k`` draws ``2.8 k`` W.
``galaxyfly`` (004 Sec. 6.2)
    2.8 W per port (the same four 0.7 W lanes) plus 10 W per network
    interface (endpoint).

The radix used for power is the one used for cost (``router_radix``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from models.core.errors import ParameterError

__all__ = ["CABLE_PRESETS", "ROUTER_PRESETS", "POWER_MODELS", "cost", "power", "router_radix",
           "cable_cost_per_gbps", "router_prices", "power_of_ports", "cable_model", "router_model",
           "cheapest_priced_radix"]


@dataclass(frozen=True)
class CableModel:
    """Linear cable price ``a x + b`` $/Gb/s (``x`` in metres) for electric and optical cables."""

    name: str
    gbps: float
    electric: tuple[float, float]
    optical: tuple[float, float]
    reference: str


@dataclass(frozen=True)
class PowerModel:
    """Watts per router port (``lanes * w_per_lane``) and per endpoint NIC."""

    name: str
    lanes_per_port: int
    w_per_lane: float
    w_per_nic: float
    reference: str

    @property
    def w_per_port(self) -> float:
        return self.lanes_per_port * self.w_per_lane


CABLE_PRESETS: dict[str, CableModel] = {
    "fdr10": CableModel("fdr10", 40.0, (0.4079, 0.5771), (0.0919, 2.7452),
                        "000 Sec. VI-B1: Mellanox IB FDR10 40 Gb/s QSFP"),
}
"""Named cable price models."""

ROUTER_PRESETS: dict[str, tuple[float, float]] = {
    "fdr10": (350.4, -892.3),
}
"""Named router price models ``(a, b)``: a router of radix ``k`` costs ``a k + b`` dollars."""

POWER_MODELS: dict[str, PowerModel] = {
    "slimfly": PowerModel("slimfly", 4, 0.7, 0.0, "000 Sec. VI-C: 4 lanes/port, 0.7 W/SerDes"),
    "galaxyfly": PowerModel("galaxyfly", 4, 0.7, 10.0,
                            "004 Sec. 6.2: 2.8 W/port, 10 W/NIC"),
}
"""Named power models."""


def cable_cost_per_gbps(x, coeffs: tuple[float, float]) -> np.ndarray:
    """``a x + b`` in $/Gb/s for cable lengths ``x`` in metres (vectorised)."""
    a, b = coeffs
    return a * np.asarray(x, dtype=np.float64) + b


def router_radix(topo, radix="max") -> np.ndarray:
    """Radix each router is priced and powered at (see the module docstring).

    Raises
    ------
    ParameterError
        Unknown mode, or an integer radix smaller than some router needs.
    """
    used = (np.asarray(topo.degree, dtype=np.int64) + np.asarray(topo.endpoints, dtype=np.int64))
    if isinstance(radix, str):
        if radix == "used":
            return used
        if radix == "max":
            return np.full(topo.n_routers, int(used.max()) if used.size else 0, dtype=np.int64)
        try:
            radix = int(radix)
        except ValueError:
            raise ParameterError(f"cost.router_radix: expected 'max', 'used' or an integer, "
                                 f"got {radix!r}") from None
    if isinstance(radix, bool) or not isinstance(radix, (int, np.integer)) or radix < 1:
        raise ParameterError(f"cost.router_radix: expected 'max', 'used' or an integer >= 1, "
                             f"got {radix!r}")
    if used.size and int(radix) < int(used.max()):
        raise ParameterError(f"cost.router_radix: {radix} ports do not fit a router that uses "
                             f"{int(used.max())}")
    return np.full(topo.n_routers, int(radix), dtype=np.int64)


def router_prices(k, coeffs: tuple[float, float] = ROUTER_PRESETS["fdr10"]) -> np.ndarray:
    """Price in dollars of routers of radix ``k`` (an array or an integer): ``a k + b`` for
    ``coeffs = (a, b)``.  :func:`cost` prices a built network's routers with it; the
    design tables (:mod:`models.design`) price counts with it.

    Raises
    ------
    ParameterError
        The price is negative for some ``k``.
    """
    ra, rb = coeffs
    k = np.asarray(k, dtype=np.int64)
    unit = ra * k + rb
    if np.any(unit < 0):
        raise ParameterError(f"cost.router_coeffs: the router price {ra:g} k "
                             f"{'-' if rb < 0 else '+'} {abs(rb):g} is negative for "
                             f"k = {int(k[unit < 0].min())}")
    return unit


def _coeffs(key, value, n):
    try:
        out = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        raise ParameterError(f"cost.{key}: expected {n} numbers, got {value!r}") from None
    if len(out) != n or not all(math.isfinite(v) for v in out):
        raise ParameterError(f"cost.{key}: expected {n} finite numbers, got {value!r}")
    return out


def _positive(key, value, allow_zero=False):
    try:
        if isinstance(value, bool):
            raise TypeError
        out = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"cost.{key}: expected a number, got {value!r}") from None
    if not math.isfinite(out) or out < 0 or (out == 0 and not allow_zero):
        raise ParameterError(f"cost.{key}: must be a finite number {'>=' if allow_zero else '>'} 0, "
                             f"got {value!r}")
    return out


def cable_model(cables: str = "fdr10", cable_coeffs=None, cable_gbps=None):
    """``(electric (a, b), optical (a, b), gbps)`` of the preset ``cables``, its coefficients
    replaced by ``cable_coeffs = (a_el, b_el, a_opt, b_opt)`` and its bandwidth by
    ``cable_gbps`` when given: the cable prices :func:`cost` uses (and ``pdes plot --kind
    cost-model`` draws) with :func:`cable_cost_per_gbps`.

    Raises
    ------
    ParameterError
        Unknown preset, coefficients that are not 4 finite numbers, a bandwidth <= 0.
    """
    if cables not in CABLE_PRESETS:
        raise ParameterError(f"cost.cables: unknown preset {cables!r} "
                             f"(known: {', '.join(CABLE_PRESETS)})")
    cm = CABLE_PRESETS[cables]
    el, op = cm.electric, cm.optical
    if cable_coeffs is not None:
        c = _coeffs("cable_coeffs", cable_coeffs, 4)
        el, op = (c[0], c[1]), (c[2], c[3])
    gbps = cm.gbps if cable_gbps is None else _positive("cable_gbps", cable_gbps)
    return el, op, gbps


def router_model(routers: str = "fdr10", router_coeffs=None) -> tuple[float, float]:
    """``(a, b)`` of the router price ``a k + b`` (:func:`router_prices`): the preset
    ``routers``, or ``router_coeffs`` when given.

    Raises
    ------
    ParameterError
        Unknown preset, coefficients that are not 2 finite numbers.
    """
    if routers not in ROUTER_PRESETS:
        raise ParameterError(f"cost.routers: unknown preset {routers!r} "
                             f"(known: {', '.join(ROUTER_PRESETS)})")
    if router_coeffs is None:
        return ROUTER_PRESETS[routers]
    return _coeffs("router_coeffs", router_coeffs, 2)


def cheapest_priced_radix(coeffs: tuple[float, float], k_max: int) -> int | None:
    """The smallest radix ``1 <= k <= k_max`` that :func:`router_prices` prices (its price
    is not negative), or None when there is none."""
    for k in range(1, int(k_max) + 1):
        try:
            router_prices(k, coeffs)
        except ParameterError:
            continue
        return k
    return None


def cost(topo, layout, cables: str = "fdr10", routers: str = "fdr10", radix="max", *,
         cable_coeffs=None, cable_gbps=None, router_coeffs=None, electric_max_m=None,
         endpoint_cables: bool = False, endpoint_cable_m=None) -> dict:
    """Network cost in dollars: routers plus cables, total and per endpoint.

    Parameters
    ----------
    topo : Topology
    layout : Layout
        Cable length and rack of every link (:func:`models.layout.build_layout`).
    cables : str
        Cable price preset (:data:`CABLE_PRESETS`).
    routers : str
        Router price preset (:data:`ROUTER_PRESETS`).
    radix : "max", "used" or int
        Router radix for pricing (:func:`router_radix`).
    cable_coeffs : 4 numbers, optional
        ``(a_electric, b_electric, a_optical, b_optical)`` in $/Gb/s, replacing the preset.
    cable_gbps : float, optional
        Bandwidth per cable, replacing the preset's.
    router_coeffs : 2 numbers, optional
        ``(a, b)``: a router costs ``a k + b`` dollars, replacing the preset.
    electric_max_m : float, optional
        Cables up to this length are electric, longer ones optical (default:
        intra-rack electric, inter-rack optical).
    endpoint_cables : bool
        Also price one electric cable per endpoint.
    endpoint_cable_m : float, optional
        Length of an endpoint cable (default: the layout's intra-rack length).

    Returns
    -------
    dict
        ``total``, ``per_endpoint``, ``routers`` (count, radix, unit price,
        total), ``cables`` with ``electric`` / ``optical`` / ``endpoint``
        parts (count, metres, dollars), and the model (``cable_model``,
        ``router_model``) in the form of the coefficients used.

    References
    ----------
    000 Sec. VI-B (Table IV); 004 Sec. 6.1.
    """
    el, op, gbps = cable_model(cables, cable_coeffs, cable_gbps)
    ra, rb = router_model(routers, router_coeffs)
    k = router_radix(topo, radix)
    unit = router_prices(k, (ra, rb))

    length = np.asarray(layout.cable_m, dtype=np.float64)
    if electric_max_m is None:
        electric = np.asarray(layout.intra_rack, dtype=bool)
    else:
        electric = length <= _positive("electric_max_m", electric_max_m, allow_zero=True)
    price = np.where(electric, cable_cost_per_gbps(length, el), cable_cost_per_gbps(length, op))
    price = price * gbps

    def part(mask):
        return {"count": int(np.count_nonzero(mask)), "m": float(length[mask].sum()),
                "dollars": float(price[mask].sum())}

    parts = {"electric": part(electric), "optical": part(~electric)}
    if endpoint_cables:
        m = layout.intra_rack_m if endpoint_cable_m is None else _positive(
            "endpoint_cable_m", endpoint_cable_m, allow_zero=True)
        n_ep = topo.n_endpoints
        parts["endpoint"] = {"count": n_ep, "m": float(m * n_ep),
                             "dollars": float(n_ep * gbps * cable_cost_per_gbps(m, el))}
    else:
        parts["endpoint"] = {"count": 0, "m": 0.0, "dollars": 0.0}
    cable_total = sum(p["dollars"] for p in parts.values())
    router_total = float(unit.sum())
    total = router_total + cable_total
    n_ep = topo.n_endpoints
    return {
        "total": total,
        "per_endpoint": total / n_ep if n_ep else None,
        "routers": {
            "count": topo.n_routers,
            "radix_min": int(k.min()) if k.size else 0,
            "radix_max": int(k.max()) if k.size else 0,
            "radix_mode": str(radix),
            "unit_min": float(unit.min()) if unit.size else 0.0,
            "unit_max": float(unit.max()) if unit.size else 0.0,
            "dollars": router_total,
            "per_endpoint": router_total / n_ep if n_ep else None,
        },
        "cables": {
            **parts,
            "dollars": cable_total,
            "per_endpoint": cable_total / n_ep if n_ep else None,
        },
        "cable_model": {"preset": cables if cable_coeffs is None else "custom", "gbps": gbps,
                        "electric": list(el), "optical": list(op),
                        "electric_rule": "intra-rack" if electric_max_m is None
                        else f"length <= {electric_max_m} m",
                        "endpoint_cables": bool(endpoint_cables)},
        "router_model": {"preset": routers if router_coeffs is None else "custom",
                         "a": ra, "b": rb},
    }


def power(topo, model: str = "slimfly", radix="max") -> dict:
    """Network power in watts: router SerDes (and NICs for ``galaxyfly``), total and per endpoint.

    Parameters
    ----------
    topo : Topology
    model : {"slimfly", "galaxyfly"}
        :data:`POWER_MODELS` entry.
    radix : "max", "used" or int
        Router radix (:func:`router_radix`): every port of it is powered.

    Returns
    -------
    dict
        ``total``, ``per_endpoint``, ``ports``, ``lanes``, ``w_per_port``,
        ``w_per_nic``, ``routers_w``, ``nics_w`` and ``model``.

    References
    ----------
    000 Sec. VI-C (Table IV); 004 Sec. 6.2 (Table 6).
    """
    if model not in POWER_MODELS:
        raise ParameterError(f"power.model: unknown model {model!r} "
                             f"(known: {', '.join(POWER_MODELS)})")
    k = router_radix(topo, radix)
    return power_of_ports(int(k.sum()), topo.n_endpoints, model)


def power_of_ports(ports: int, n_ep: int, model: str = "slimfly") -> dict:
    """Power of ``ports`` powered router ports and ``n_ep`` endpoints under the
    :data:`POWER_MODELS` entry ``model`` (the dict :func:`power` returns); the count-based
    core of :func:`power`, also used by the design tables (:mod:`models.design`)."""
    if model not in POWER_MODELS:
        raise ParameterError(f"power.model: unknown model {model!r} "
                             f"(known: {', '.join(POWER_MODELS)})")
    pm = POWER_MODELS[model]
    ports = int(ports)
    n_ep = int(n_ep)
    routers_w = ports * pm.w_per_port
    nics_w = n_ep * pm.w_per_nic
    total = routers_w + nics_w
    return {
        "total": total,
        "per_endpoint": total / n_ep if n_ep else None,
        "ports": ports,
        "lanes": ports * pm.lanes_per_port,
        "w_per_port": pm.w_per_port,
        "w_per_nic": pm.w_per_nic,
        "routers_w": routers_w,
        "nics_w": nics_w,
        "model": model,
    }
