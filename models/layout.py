"""Physical layout: racks on a machine-room floor, cable length and latency per link.

Model (000 Sec. VI-A/VI-B, 002 Sec. III-A, 004 Sec. 5.3):

* A **rack** is a topology group (``topo.group``): rack ``k`` holds every
  router with ``group == k`` together with its endpoints.  With ``cabinets``
  or ``cabinet_routers`` the racks are cabinets of a fixed size instead
  (:func:`cabinet_of`): the routers, taken in the order of their groups, fill
  the cabinets one after the other.
* Racks are placed **row-major** on a grid of ``n_rows`` rows of
  ``racks_per_row`` racks: rack ``k`` sits in row ``k // racks_per_row``,
  column ``k % racks_per_row``.  By default ``n_rows = ceil(sqrt(n_racks))``
  and ``racks_per_row = ceil(n_racks / n_rows)`` (002 Sec. III-A: ``x`` rows,
  ``y`` columns); the last row may be partial (000 Sec. VI-A places the
  remaining racks "at an arbitrary side").  Skywalk topologies number their
  cabinets with exactly this grid (construction notes 7), so the cable metres here
  are the ones its construction assumes.
* Rack centres are ``x = (col + 1/2) * rack_width_m`` along a row and
  ``y = (row + 1/2) * rack_depth_m`` between rows (the depth pitch includes
  any aisle).
* A link between two routers of the same rack is an **intra-rack** cable of
  constant length ``intra_rack_m`` (electric); any other link is an
  **inter-rack** cable (optical) of length
  ``|dx| + |dy| + overhead_m`` (Manhattan distance between the rack centres
  plus a fixed overhead).
* Link latency in cycles is
  ``max(1, ceil(cable_m * ns_per_m / cycle_ns) + fixed_cycles)``.  The ceiling
  is taken after rounding to 9 decimals, so 0.6 m * 5 ns/m is exactly 3 ns.
* Latency keys replace that value for whole sets of links (004 Sec. 5.3:
  electric links inside a cabinet about 50 cycles, optical links between
  cabinets 100): ``electric_cycles`` every intra-rack link,
  ``optical_cycles`` every inter-rack link, ``class_cycles`` every link of the
  named topology link classes (``"local:50,global:100"``).  A link named by
  ``class_cycles`` takes that value, else its medium's key if given, else the
  cable formula; ``Layout.latency_set`` marks the links a key set.  Cable
  lengths are not changed by these keys.

Presets (``preset=``; every geometry argument left at ``None`` takes the
preset's value):

``slimfly`` (000 Sec. VI-B)
    Racks are 1 x 1 x 2 m, "routers are placed on top of racks", intra-rack
    cables average 1 m, the distance between racks is Manhattan and every
    global cable gets 2 m of overhead.  The paper gives no aisle, so the rack
    pitch equals the footprint in both directions: ``rack_width_m = 1``,
    ``rack_depth_m = 1``; ``intra_rack_m = 1``, ``overhead_m = 2``.
``skywalk`` (002 Sec. III-A)
    Cabinets are 0.6 m wide and 2.1 m deep *including the aisle*; intra-cabinet
    cables are 2 m; inter-cabinet cables get 4 m (2 m at each end).

Cable kinds follow 000 Sec. VI-B: intra-rack links are electric, inter-rack
links optical.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from models.core.errors import ParameterError

MAX_LINK_CYCLES = 10 ** 6
"""Largest latency a latency key may give a link (``router.link_latency``'s bound)."""

PRESETS: dict[str, dict[str, float]] = {
    "slimfly": {"rack_width_m": 1.0, "rack_depth_m": 1.0, "intra_rack_m": 1.0, "overhead_m": 2.0},
    "skywalk": {"rack_width_m": 0.6, "rack_depth_m": 2.1, "intra_rack_m": 2.0, "overhead_m": 4.0},
}
"""Geometry of each preset in metres (see the module docstring for the sources)."""


@dataclass(eq=False)
class Layout:
    """Rack positions and per-link cable lengths and latencies (plain arrays).

    Per rack (``n_racks`` = number of topology groups, or of cabinets with
    ``cabinets`` / ``cabinet_routers``): ``rack_row``, ``rack_col`` (int32),
    ``rack_x``, ``rack_y`` (float64, centre in metres).  Per router:
    ``router_rack`` (int32).  Per link (indexed like ``topo.links``):
    ``intra_rack`` (bool), ``cable_m`` (float64), ``latency`` (int32 cycles,
    >= 1) and ``latency_set`` (bool: a latency key gave the value, not the
    cable).  ``totals`` holds the cable counts and metres (see
    :func:`cable_totals`).
    """

    preset: str
    rack_width_m: float
    rack_depth_m: float
    intra_rack_m: float
    overhead_m: float
    ns_per_m: float
    cycle_ns: float
    fixed_cycles: int
    n_racks: int
    n_rows: int
    racks_per_row: int
    rack_row: np.ndarray
    rack_col: np.ndarray
    rack_x: np.ndarray
    rack_y: np.ndarray
    router_rack: np.ndarray
    intra_rack: np.ndarray
    cable_m: np.ndarray
    latency: np.ndarray
    totals: dict = field(default_factory=dict)
    cabinets: int = 0
    cabinet_routers: int = 0
    electric_cycles: int = 0
    optical_cycles: int = 0
    class_cycles: dict = field(default_factory=dict)
    latency_set: np.ndarray | None = None
    rack_routers: tuple = (0, 0)
    rack_endpoints: tuple = (0, 0)

    @property
    def channel_latency(self) -> np.ndarray:
        """(2L,) latency of each directed channel (channel ``c`` rides link ``c // 2``)."""
        return np.repeat(self.latency, 2)

    def summary(self) -> dict:
        """Geometry and totals as a JSON-ready dict."""
        lat = self.latency
        return {
            "preset": self.preset,
            "rack_width_m": self.rack_width_m,
            "rack_depth_m": self.rack_depth_m,
            "intra_rack_m": self.intra_rack_m,
            "overhead_m": self.overhead_m,
            "ns_per_m": self.ns_per_m,
            "cycle_ns": self.cycle_ns,
            "fixed_cycles": self.fixed_cycles,
            "racks": self.n_racks,
            "racks_from": "cabinets" if (self.cabinets or self.cabinet_routers) else "groups",
            "cabinets": self.cabinets,
            "cabinet_routers": self.cabinet_routers,
            "rack_routers": {"min": int(self.rack_routers[0]), "max": int(self.rack_routers[1])},
            "rack_endpoints": {"min": int(self.rack_endpoints[0]),
                               "max": int(self.rack_endpoints[1])},
            "rows": self.n_rows,
            "racks_per_row": self.racks_per_row,
            "electric_cycles": self.electric_cycles,
            "optical_cycles": self.optical_cycles,
            "class_cycles": dict(self.class_cycles),
            "latency_set_links": int(np.count_nonzero(self.latency_set))
            if self.latency_set is not None else 0,
            "latency_cycles": {
                "min": int(lat.min()) if lat.size else 0,
                "max": int(lat.max()) if lat.size else 0,
                "mean": float(lat.mean()) if lat.size else 0.0,
            },
            **self.totals,
        }


def _number(key: str, value, *, positive: bool = False) -> float:
    """``value`` as a finite float >= 0 (> 0 with ``positive``), else ParameterError."""
    try:
        if isinstance(value, bool):
            raise TypeError
        out = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"layout.{key}: expected a number, got {value!r}") from None
    if not math.isfinite(out) or out < 0 or (positive and out == 0):
        rule = "> 0" if positive else ">= 0"
        raise ParameterError(f"layout.{key}: must be a finite number {rule}, got {value!r}")
    return out


def _integer(key: str, value, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        raise ParameterError(f"layout.{key}: must be an integer >= {lo}, got {value!r}")
    return int(value)


def _cycles(key: str, value) -> int:
    """``value`` as a latency key's cycles: an integer in [0, MAX_LINK_CYCLES] (0 = not set)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
            or not 0 <= value <= MAX_LINK_CYCLES:
        raise ParameterError(f"layout.{key}: must be an integer in [0, {MAX_LINK_CYCLES:,}] "
                             f"(cycles; 0 = from the cable), got {value!r}")
    return int(value)


def parse_class_cycles(text) -> dict[str, int]:
    """``"local:50,global:100"`` -> ``{"local": 50, "global": 100}`` (``layout.class_cycles``).

    Pairs ``class:cycles`` separated by commas or white space; ``cycles`` an integer in
    [1, :data:`MAX_LINK_CYCLES`]; no class twice.  An empty text is no pair.  A dict is
    checked the same way.  Whether the classes exist is checked against the topology by
    :func:`build_layout`.
    """
    if isinstance(text, dict):
        items = [(str(k), v) for k, v in text.items()]
    elif isinstance(text, str):
        items = []
        for tok in (t for t in re.split(r"[,\s]+", text.strip()) if t):
            name, sep, num = tok.partition(":")
            if not sep or not name or not re.fullmatch(r"[+-]?\d+", num.strip()):
                raise ParameterError(f"layout.class_cycles: expected class:cycles pairs separated "
                                     f"by commas (e.g. \"local:50,global:100\"), got {tok!r}")
            items.append((name, int(num)))
    else:
        raise ParameterError(f"layout.class_cycles: expected a string of class:cycles pairs, "
                             f"got {text!r}")
    out: dict[str, int] = {}
    for name, v in items:
        if name in out:
            raise ParameterError(f"layout.class_cycles: class {name!r} is given twice")
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) \
                or not 1 <= v <= MAX_LINK_CYCLES:
            raise ParameterError(f"layout.class_cycles: {name}: cycles must be an integer in "
                                 f"[1, {MAX_LINK_CYCLES:,}], got {v!r}")
        out[name] = int(v)
    return out


def cabinet_of(group, cabinets: int = 0, cabinet_routers: int = 0) -> tuple[np.ndarray, int]:
    """(cabinet of every router as int64, number of cabinets) of a fixed cabinet layout.

    The routers are taken in the order of their groups (``group``, then router id): the
    order keeps every group's routers together, and the groups in their id order.

    ``cabinets = C`` (``C`` <= routers)
        The sequence is cut into ``C`` consecutive runs that differ by at most one router:
        the ``i``-th router of the sequence goes to cabinet ``floor(i * C / R)``.  Groups
        stay whole exactly where the cuts fall between groups (groups of ``s`` routers: when
        ``R / C`` is a multiple of ``s``); otherwise a group straddles two cabinets.
    ``cabinet_routers = K``
        Cabinets of at most ``K`` routers filled group by group: a group goes into the
        current cabinet when it fits in the room left there, else it opens a new cabinet;
        a group of more than ``K`` routers opens a new cabinet and fills cabinets of ``K``
        in turn, and the room left in its last one takes the next groups.  No group of at
        most ``K`` routers is split; the number of cabinets follows.

    Neither (both 0): one cabinet per group, numbered as the groups (the default layout).
    """
    group = np.asarray(group, dtype=np.int64)
    R = int(group.size)
    if cabinets and cabinet_routers:
        raise ParameterError(f"layout.cabinet_routers: give layout.cabinets or "
                             f"layout.cabinet_routers, not both (got {cabinets} and "
                             f"{cabinet_routers})")
    if not cabinets and not cabinet_routers:
        return group, (int(group.max()) + 1 if R else 0)
    order = np.lexsort((np.arange(R), group))
    cab = np.empty(R, dtype=np.int64)
    if cabinets:
        if cabinets > R:
            raise ParameterError(f"layout.cabinets: {cabinets:,} cabinets for {R:,} routers; "
                                 "at most one cabinet per router")
        cab[order] = (np.arange(R, dtype=np.int64) * cabinets) // R
        return cab, int(cabinets)
    K = int(cabinet_routers)
    sizes = np.bincount(group, minlength=int(group.max()) + 1 if R else 0)
    first = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=first[1:])
    current, room = -1, 0
    for g in np.nonzero(sizes)[0].tolist():
        s = int(sizes[g])
        run = order[first[g]:first[g + 1]]
        if s <= K:
            if s > room:
                current, room = current + 1, K
            cab[run] = current
            room -= s
        else:
            cab[run] = current + 1 + np.arange(s, dtype=np.int64) // K
            current += -(-s // K)
            room = (K - s % K) % K
    return cab, current + 1


def grid_shape(n_racks: int, racks_per_row: int | None = None) -> tuple[int, int]:
    """``(n_rows, racks_per_row)`` of the floor grid for ``n_racks`` racks.

    Default: ``n_rows = ceil(sqrt(n_racks))`` and
    ``racks_per_row = ceil(n_racks / n_rows)`` (002 Sec. III-A).
    """
    n_racks = int(n_racks)
    if n_racks <= 0:
        return 0, 0
    if racks_per_row:
        y = int(racks_per_row)
        return -(-n_racks // y), y
    x = math.isqrt(n_racks - 1) + 1  # ceil(sqrt(n)) for n >= 1
    return x, -(-n_racks // x)


def latency_cycles(cable_m, ns_per_m: float, cycle_ns: float, fixed_cycles: int) -> np.ndarray:
    """``max(1, ceil(cable_m * ns_per_m / cycle_ns) + fixed_cycles)`` as int32 (vectorised)."""
    t = np.round(np.asarray(cable_m, dtype=np.float64) * (ns_per_m / cycle_ns), 9)
    return np.maximum(1, np.ceil(t).astype(np.int64) + int(fixed_cycles)).astype(np.int32)


def cable_totals(topo, intra_rack: np.ndarray, cable_m: np.ndarray) -> dict:
    """Cable counts and metres: total, intra/inter rack, electric/optical, per link class.

    Returns ``{"cable_m_total": m, "cables": {"count", "m_max", "m_mean",
    "intra_rack", "inter_rack", "electric", "optical", "by_class"}}`` where
    each part is ``{"count": n, "m": metres}``.  Electric = intra-rack,
    optical = inter-rack (000 Sec. VI-B).
    """
    def part(mask):
        return {"count": int(np.count_nonzero(mask)), "m": float(cable_m[mask].sum())}

    intra = part(intra_rack)
    inter = part(~intra_rack)
    names = tuple(topo.link_class_names)
    counts = np.bincount(topo.link_class.astype(np.int64), minlength=len(names))
    metres = np.bincount(topo.link_class.astype(np.int64), weights=cable_m, minlength=len(names))
    by_class = {str(n): {"count": int(counts[i]), "m": float(metres[i])} for i, n in enumerate(names)}
    return {
        "cable_m_total": float(cable_m.sum()),
        "cables": {
            "count": int(cable_m.size),
            "m_max": float(cable_m.max()) if cable_m.size else 0.0,
            "m_mean": float(cable_m.mean()) if cable_m.size else 0.0,
            "intra_rack": intra,
            "inter_rack": inter,
            "electric": dict(intra),
            "optical": dict(inter),
            "by_class": by_class,
        },
    }


def build_layout(topo, preset: str | None = "slimfly", rack_width_m: float | None = None,
                 rack_depth_m: float | None = None, intra_rack_m: float | None = None,
                 overhead_m: float | None = None, racks_per_row: int | None = None,
                 ns_per_m: float = 5.0, cycle_ns: float = 1.0, fixed_cycles: int = 0,
                 cabinets: int = 0, cabinet_routers: int = 0, electric_cycles: int = 0,
                 optical_cycles: int = 0, class_cycles: str | dict = "") -> Layout:
    """Place the racks of ``topo`` on the floor and size every cable.

    Parameters
    ----------
    topo : Topology
        Racks are its groups (``topo.group``).
    preset : {"slimfly", "skywalk"}, optional
        Source of the geometry left at ``None``.  ``None`` takes
        ``topo.meta["layout_preset"]`` if the topology names one, else
        ``"slimfly"``.
    rack_width_m, rack_depth_m : float, optional
        Rack pitch along a row and between rows (aisle included), metres.
    intra_rack_m : float, optional
        Length of every intra-rack cable, metres.
    overhead_m : float, optional
        Added to the Manhattan distance of every inter-rack cable, metres.
    racks_per_row : int, optional
        Racks per row; ``None`` or 0 = ``ceil(n / ceil(sqrt(n)))``.
    ns_per_m, cycle_ns : float
        Propagation delay per metre and clock period, ns.
    fixed_cycles : int
        SerDes/pipeline cycles added to every link latency.
    cabinets, cabinet_routers : int
        A fixed cabinet layout instead of one rack per group (:func:`cabinet_of`): ``C``
        cabinets, or cabinets of at most ``K`` routers; 0 = not used.  At most one of
        them.
    electric_cycles, optical_cycles : int
        Latency of every intra-rack (electric) / inter-rack (optical) link in cycles,
        instead of the cable formula; 0 = from the cable.
    class_cycles : str or dict
        Latency of every link of the named topology link classes,
        ``"class:cycles,..."`` (:func:`parse_class_cycles`); before the medium keys.

    Returns
    -------
    Layout

    Raises
    ------
    ParameterError
        Unknown preset, negative lengths, ``cycle_ns <= 0``, negative
        ``racks_per_row`` or ``fixed_cycles``, more cabinets than routers, both cabinet
        keys, latency keys outside their range, a ``class_cycles`` class the topology does
        not have; the message names ``layout.<key>``.

    References
    ----------
    000 Sec. VI-A (rack arrangement), VI-B (cable model); 002 Sec. III-A; 004 Sec. 5.3
    (fixed cabinet layout, electric and optical link latencies).
    """
    if preset is None:
        preset = topo.meta.get("layout_preset", "slimfly")
    if preset not in PRESETS:
        raise ParameterError(f"layout.preset: unknown preset {preset!r} (known: {', '.join(PRESETS)})")
    geo = dict(PRESETS[preset])
    given = {"rack_width_m": rack_width_m, "rack_depth_m": rack_depth_m,
             "intra_rack_m": intra_rack_m, "overhead_m": overhead_m}
    for key, value in given.items():
        if value is not None:
            geo[key] = value
    geo = {k: _number(k, v) for k, v in geo.items()}
    ns_per_m = _number("ns_per_m", ns_per_m)
    cycle_ns = _number("cycle_ns", cycle_ns, positive=True)
    fixed_cycles = _integer("fixed_cycles", fixed_cycles, 0)
    rpr = _integer("racks_per_row", racks_per_row, 0) if racks_per_row is not None else 0
    cabinets = _integer("cabinets", cabinets, 0)
    cabinet_routers = _integer("cabinet_routers", cabinet_routers, 0)
    electric_cycles = _cycles("electric_cycles", electric_cycles)
    optical_cycles = _cycles("optical_cycles", optical_cycles)
    by_class = parse_class_cycles(class_cycles)
    names = tuple(str(n) for n in topo.link_class_names)
    unknown = [n for n in by_class if n not in names]
    if unknown:
        raise ParameterError(f"layout.class_cycles: {unknown[0]!r} is not a link class of the "
                             f"{topo.name} network (its classes: {', '.join(names)})")

    group, n_racks = cabinet_of(topo.group, cabinets, cabinet_routers)
    n_rows, per_row = grid_shape(n_racks, rpr)
    rack = np.arange(n_racks, dtype=np.int64)
    rack_row = (rack // per_row).astype(np.int32) if n_racks else np.zeros(0, np.int32)
    rack_col = (rack % per_row).astype(np.int32) if n_racks else np.zeros(0, np.int32)
    rack_x = (rack_col + 0.5) * geo["rack_width_m"]
    rack_y = (rack_row + 0.5) * geo["rack_depth_m"]

    links = topo.links
    ga = group[links[:, 0]]
    gb = group[links[:, 1]]
    intra = ga == gb
    dcol = np.abs(rack_col[ga].astype(np.int64) - rack_col[gb])
    drow = np.abs(rack_row[ga].astype(np.int64) - rack_row[gb])
    inter_m = dcol * geo["rack_width_m"] + drow * geo["rack_depth_m"] + geo["overhead_m"]
    cable_m = np.where(intra, geo["intra_rack_m"], inter_m).astype(np.float64)
    latency = latency_cycles(cable_m, ns_per_m, cycle_ns, fixed_cycles)
    latency_set = np.zeros(latency.shape, dtype=bool)
    # lowest precedence first: medium keys, then class keys
    for mask, cycles in ((intra, electric_cycles), (~intra, optical_cycles)):
        if cycles:
            latency[mask] = cycles
            latency_set |= mask
    for name, cycles in by_class.items():
        mask = topo.link_class == names.index(name)
        latency[mask] = cycles
        latency_set |= mask

    routers = np.bincount(group, minlength=n_racks)
    eps = np.bincount(group, weights=np.asarray(topo.endpoints, dtype=np.float64),
                      minlength=n_racks)
    return Layout(
        preset=preset, ns_per_m=ns_per_m, cycle_ns=cycle_ns, fixed_cycles=fixed_cycles,
        n_racks=n_racks, n_rows=n_rows, racks_per_row=per_row,
        rack_row=rack_row, rack_col=rack_col, rack_x=rack_x, rack_y=rack_y,
        router_rack=group.astype(np.int32), intra_rack=intra, cable_m=cable_m, latency=latency,
        totals=cable_totals(topo, intra, cable_m), cabinets=cabinets,
        cabinet_routers=cabinet_routers, electric_cycles=electric_cycles,
        optical_cycles=optical_cycles, class_cycles=by_class, latency_set=latency_set,
        rack_routers=(int(routers.min()), int(routers.max())) if n_racks else (0, 0),
        rack_endpoints=(int(eps.min()), int(eps.max())) if n_racks else (0, 0), **geo)
