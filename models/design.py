"""Design spaces: every configuration of the topology families that fits a router radix.

:func:`design_table` lists, for a router radix ``k`` (or a range of radixes), every
parameter set of each family whose router radix (network ports + endpoint ports) fits,
with its counts, diameter, links and ports per endpoint, Moore-bound ratio, bisection,
router cost and power: the tables behind 000 Fig. 5, 001 Fig. 3, 003 Table 2 and 004
Figs. 2-4 and 004 Fig. 13 (Dragonfly against Dragonfly+).

What a row holds (:data:`COLUMNS`):

* the counts (routers, endpoints, links) come from the family's own ``size`` hook
  (:func:`models.topology.size_of`), so they are those :func:`models.topology.build`
  gives;
* ``radix`` is the router radix used, network ports plus endpoint ports: every
  configuration listed here uses the same number of ports on every router, so it is
  also the radix :func:`models.analysis.cost.router_radix` prices (``"max"``; a Delorme
  flag router has these ports too and leaves one network port unused);
  ``network_radix`` is ``k'``, the largest number of network ports;
* ``diameter`` is the router-graph diameter where a formula gives it (the source is in
  ``diameter_source``); ``diameter_bound`` a proven upper bound (the diameter itself
  when that is known).  Galaxyfly with ``q > 1`` has only the bound 5 (004 Table 2):
  its diameter is measured on the built instance up to :data:`MEASURE_MAX_ROUTERS`
  routers and left empty above;
* ``links_per_endpoint = (L + N) / N`` and ``ports_per_endpoint = (2L + N) / N``
  count the endpoint cables and the endpoint ports too, as 001 Sec. 2.2 does ("3
  router ports and 2 links per end-node" for MLFM and OFT);
* ``moore_bound`` and ``moore_ratio = routers / moore_bound`` for ``k'`` and the
  diameter, for direct networks only (every router has endpoints), as
  :func:`models.analysis.report.moore_report`;
* ``bisection_links`` is the closed form the family registered
  (``TOPOLOGIES.register(..., bisection=...)``, evaluated on the counts and
  parameters, which is all those formulas read); empty where no formula is registered
  (``bisection`` then says "not given": 000 and 004 estimate those with METIS, which
  ``pdes analyze`` runs on one instance);
* ``router_cost`` prices every router at ``radix`` with the router model of
  :func:`models.analysis.cost.cost` (:func:`models.analysis.cost.router_prices`);
  cables are left out, as their cost needs the physical layout of a built instance
  (``pdes analyze --only cost``); ``power_w`` is :func:`models.analysis.cost.power`
  computed from the counts (:func:`models.analysis.cost.power_of_ports`).  The router
  cost is empty where the linear price is negative (radix 2 with ``fdr10``).

Enumerators.  Each family's enumerator is one function registered here with
:func:`enumerator` under the family's registry name; it yields a :class:`Config` for
every parameter set of radix at most ``k`` and gives the family's balance rule for the
endpoints per router:

========= ================================================================================
slimfly   q a prime power, q = 4w + delta, w >= 1; p = ceil(k'/2) (000 Sec. II-B2)
bdf       u an odd prime power; p = (u+1)/2 = k'/3 (the family's default)
delorme   v a prime power; k' = (v+1)^2, p = ceil(k'/3) (the family's default); a flag
          router (its point on its line) leaves one of its k' network ports unused
dragonfly h >= 1; a = 2h, p = h, g = ah + 1 (balanced, Kim et al.)
dragonfly_plus
          h >= 1; leaves = spines = p = h, g = h^2 + 1 (balanced, maximal: Shpiner et
          al.); router-graph diameter min(h+2, 5) (leaf-to-leaf 3)
galaxyfly a = 2h, p = h, n = ah + 1 - (q-delta)/2 (the most clusters ah global ports
          reach): the balanced Dragonfly's a, h, p (004 Table 3); q = 1 or a prime power
hyperx    L >= 1 dimensions of equal size S >= 2; p = S (the family's default, FBF-3 of
          000 Sec. VI-B3 for L = 3)
fattree   k even; 2 levels (leaf-spine) and 3 levels, full bisection (oversub 1), k pods
hypercube n >= 1 dimensions, p = 1
lhhc      3 <= n <= 20 dimensions, m = the fewest long hops with 2^m >= n + m + 1 (a
          distance-3 code), p = 1; the diameter and bisection of the long hops the family
          chooses by default (its search, cached per process)
mlfm      h >= 1 (h = l = p, 001 Sec. 2.2.3); router-graph diameter min(h+1, 4)
oft       k >= 3, k - 1 a prime power (001 Sec. 2.2.4)
torus     n >= 2 dimensions of equal size D >= 3, p = 1; its size is not bounded by the
          radix, so it needs a largest endpoint count
========= ================================================================================

Slim Fly q that are not prime powers (003 Table 2 lists q = 21 and 28) have no MMS
graph and are not listed.  ``random_regular``, ``dln`` and ``skywalk`` fit any router
count into a radix (random constructions), and ``file`` is read, not generated: they
have no enumerator.  A configuration the family refuses to build (beyond the engine's
limits, :func:`models.topology.check_build`) is left out and counted in
:attr:`DesignTable.left_out`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, NamedTuple

from models.core.errors import ParameterError
from models.gf import delta_of, is_prime_power
from models.topology import MAX_ROUTERS

MEASURE_MAX_ROUTERS = 2000
"""Largest instance whose diameter is measured (built, all-pairs BFS) when no formula
gives it."""
MAX_RADIX = 256
"""Largest router radix a design table takes."""

COLUMNS = ("family", "params", "routers", "endpoints", "p", "radix", "network_radix",
           "diameter", "diameter_bound", "diameter_source", "links", "links_per_endpoint",
           "ports_per_endpoint", "moore_bound", "moore_ratio", "bisection_links", "bisection",
           "bisection_exact", "router_cost", "router_cost_per_endpoint", "power_w",
           "power_per_endpoint_w")
"""The columns of a design table, in order (see the module docstring)."""


@dataclass(frozen=True)
class Config:
    """One parameter set of a family, as an enumerator yields it.

    ``params`` are the family's registry parameters (what :func:`models.topology.build`
    takes); ``hook_params`` the derived parameters the family's generator adds to
    ``topo.params`` and its bisection formula reads (e.g. Dragonfly's ``balanced``).
    ``diameter`` is None where no formula gives it; ``measure`` then asks for a
    measurement on the built instance (up to :data:`MEASURE_MAX_ROUTERS` routers).
    """

    params: dict
    radix: int
    network_radix: int
    p: int
    diameter: int | None
    diameter_bound: int | None
    diameter_source: str
    hook_params: dict = field(default_factory=dict)
    measure: bool = False


class Enumerator(NamedTuple):
    """A family's enumerator: ``func(k, max_endpoints)`` yields every :class:`Config` of
    router radix at most ``k``; ``needs_max_endpoints`` when the family's size is not
    bounded by the radix (then ``max_endpoints`` bounds it)."""

    func: Callable[[int, int | None], Iterator[Config]]
    rule: str
    needs_max_endpoints: bool = False


ENUMERATORS: dict[str, Enumerator] = {}
"""Family name -> its :class:`Enumerator` (see :func:`enumerator`)."""


def enumerator(name: str, rule: str, needs_max_endpoints: bool = False):
    """Register the decorated function as the enumerator of topology family ``name`` (a
    name of :data:`models.core.registry.TOPOLOGIES`); ``rule`` says in one line which
    configurations it lists."""
    def register(func):
        if name in ENUMERATORS:
            raise RuntimeError(f"design enumerator '{name}' registered twice")
        ENUMERATORS[name] = Enumerator(func, rule, needs_max_endpoints)
        return func
    return register


def _valid_q(q: int) -> bool:
    """A prime power q with q mod 4 != 2 (q = 4w + delta; the MMS and Galaxy graphs)."""
    return q >= 3 and q % 4 != 2 and is_prime_power(q) is not None


# --------------------------------------------------------------------------- enumerators
@enumerator("slimfly", "q a prime power, q = 4w+delta, w >= 1; p = ceil(k'/2) (000 Sec. II-B2)")
def _slimfly(k: int, max_endpoints: int | None) -> Iterator[Config]:
    for q in range(3, k + 1):        # the radix is above q
        if not _valid_q(q):
            continue
        kn = (3 * q - delta_of(q)) // 2
        p = (kn + 1) // 2
        if kn + p <= k:
            yield Config({"q": q, "p": p}, kn + p, kn, p, 2, 2, "000 Sec. II-B (MMS graph)")


@enumerator("bdf", "u an odd prime power; p = (u+1)/2 = k'/3")
def _bdf(k: int, max_endpoints: int | None) -> Iterator[Config]:
    for u in range(3, k // 2):
        if u % 2 and is_prime_power(u) is not None:
            d = (u + 1) // 2
            if 4 * d <= k:
                yield Config({"u": u, "p": d}, 4 * d, 3 * d, d, 3, 3, "000 Sec. II-C (BDF graph)")


@enumerator("delorme", "v a prime power; k' = (v+1)^2, p = ceil(k'/3)")
def _delorme(k: int, max_endpoints: int | None) -> Iterator[Config]:
    v = 2
    while (v + 1) ** 2 + -(-(v + 1) ** 2 // 3) <= k:
        if is_prime_power(v) is not None:
            kn = (v + 1) ** 2
            p = -(-kn // 3)
            yield Config({"v": v, "p": p}, kn + p, kn, p, 3, 3,
                         "000 Sec. II-C (DEL graph; 3 by construction, docs/topologies.md)")
        v += 1


@enumerator("dragonfly", "balanced: a = 2h, p = h, g = ah+1 (Kim et al. ISCA 2008)")
def _dragonfly(k: int, max_endpoints: int | None) -> Iterator[Config]:
    h = 1
    while 4 * h - 1 <= k:
        params = {"h": h, "a": 2 * h, "p": h, "g": 2 * h * h + 1}
        yield Config(params, 4 * h - 1, 3 * h - 1, h, 3, 3,
                     "Kim et al. ISCA 2008 (balanced Dragonfly)", hook_params={"balanced": True})
        h += 1


@enumerator("dragonfly_plus", "balanced: leaves = spines = p = h, g = h^2+1 (Shpiner et al. "
                              "HiPINEB 2017)")
def _dragonfly_plus(k: int, max_endpoints: int | None) -> Iterator[Config]:
    h = 1
    while 2 * h <= k:
        params = {"h": h, "leaves": h, "spines": h, "p": h, "g": h * h + 1}
        # spine - leaf - spine - spine - leaf - spine: 5 once spines have 3 global links
        yield Config(params, 2 * h, 2 * h, h, min(h + 2, 5), min(h + 2, 5),
                     "router graph, min(h+2, 5) (spine to spine; leaf to leaf 3)")
        h += 1


@enumerator("galaxyfly", "a = 2h, p = h, n = ah+1-(q-delta)/2 (004 Table 3); q = 1 or a "
                         "prime power")
def _galaxyfly(k: int, max_endpoints: int | None) -> Iterator[Config]:
    h = 1
    while 4 * h - 1 <= k:
        a = 2 * h
        q = 1
        while True:
            delta = 1 if q == 1 else delta_of(q)
            n = a * h + 1 - (q - delta) // 2
            if n < 1:
                break
            params = {"n": n, "q": q, "a": a, "p": h, "h": h}
            if q == 1:
                yield Config(params, 4 * h - 1, 3 * h - 1, h, 3, 3,
                             "004 Table 2 (q = 1, a > 1: a Dragonfly)")
            else:
                yield Config(params, 4 * h - 1, 3 * h - 1, h, None, 5,
                             "004 Table 2 (upper bound 5)", measure=True)
            q += 1
            while not _valid_q(q):
                q += 1
        h += 1


@enumerator("hyperx", "L dimensions of equal size S >= 2; p = S")
def _hyperx(k: int, max_endpoints: int | None) -> Iterator[Config]:
    for s in range(2, k + 1):
        dims = 1
        while dims * (s - 1) + s <= k and s ** dims <= MAX_ROUTERS:
            kn = dims * (s - 1)
            yield Config({"sizes": [s] * dims, "p": s}, kn + s, kn, s, dims, dims,
                         "number of dimensions (full mesh along each)")
            dims += 1


@enumerator("fattree", "k even; 2 and 3 levels, full bisection (oversub 1), k pods")
def _fattree(k: int, max_endpoints: int | None) -> Iterator[Config]:
    for kk in range(2, k + 1, 2):
        for levels, d, how in ((2, 2, "leaf-spine-leaf"), (3, 4, "edge-agg-core-agg-edge")):
            yield Config({"k": kk, "levels": levels, "oversub": 1, "pods": kk}, kk, kk, kk // 2,
                         d, d, f"router graph: {how}")


@enumerator("hypercube", "n >= 1 dimensions, p = 1")
def _hypercube(k: int, max_endpoints: int | None) -> Iterator[Config]:
    n = 1
    while n + 1 <= k and (1 << n) <= MAX_ROUTERS:
        yield Config({"n": n, "p": 1}, n + 1, n, 1, n, n, "n (000 Sec. III)")
        n += 1


@enumerator("lhhc", "3 <= n <= 20 dimensions, m fewest with 2^m >= n+m+1, p = 1")
def _lhhc(k: int, max_endpoints: int | None) -> Iterator[Config]:
    from models.topologies.lhhc import MAX_N, choose_long_hops, default_long_hops_count
    n = 3
    while n <= MAX_N and n + default_long_hops_count(n) + 1 <= k:
        m = default_long_hops_count(n)
        _, diameter, d = choose_long_hops(n, m)
        yield Config({"n": n, "m": m, "p": 1}, n + m + 1, n + m, 1, diameter, diameter,
                     "BFS of the Cayley graph with the default long hops",
                     hook_params={"min_distance": d})
        n += 1


@enumerator("mlfm", "h >= 1 (h = l = p, 001 Sec. 2.2.3)")
def _mlfm(k: int, max_endpoints: int | None) -> Iterator[Config]:
    h = 1
    while 2 * h <= k:
        d = min(h + 1, 4)       # two GRs of disjoint LR pairs are 4 apart (h >= 3)
        yield Config({"h": h}, 2 * h, 2 * h, h, d, d,
                     "router graph, min(h+1, 4) (LR-LR distance 2, 001 Sec. 2.2.3)")
        h += 1


@enumerator("oft", "k >= 3, k-1 a prime power (001 Sec. 2.2.4)")
def _oft(k: int, max_endpoints: int | None) -> Iterator[Config]:
    for kk in range(3, k // 2 + 1):
        if is_prime_power(kk - 1) is not None:
            yield Config({"k": kk}, 2 * kk, 2 * kk, kk, 3, 3,
                         "router graph (L0-L2 distance 2, 001 Sec. 2.2.4)")


@enumerator("torus", "n >= 2 dimensions of equal size D >= 3, p = 1", needs_max_endpoints=True)
def _torus(k: int, max_endpoints: int | None) -> Iterator[Config]:
    most = min(int(max_endpoints), MAX_ROUTERS)
    n = 2
    while 2 * n + 1 <= k and 3 ** n <= most:
        d = 3
        while d ** n <= most:
            yield Config({"dims": [d] * n, "p": 1}, 2 * n + 1, 2 * n, 1, n * (d // 2),
                         n * (d // 2), "sum of floor(D_i/2)")
            d += 1
        n += 1


# --------------------------------------------------------------------------- the table
class _Counts(NamedTuple):
    """What a family's registered bisection formula reads of a network: its name,
    parameters and counts (the formulas are written for a built ``Topology``)."""

    name: str
    params: dict
    n_routers: int
    n_endpoints: int
    n_links: int


@dataclass
class DesignTable:
    """The rows of a design table (dicts keyed by :data:`COLUMNS`), sorted by family, then
    endpoints, routers and parameters, and what was asked (``options``).
    ``left_out`` counts, per family, the configurations the family refused to build."""

    rows: list[dict]
    options: dict
    left_out: dict[str, int] = field(default_factory=dict)

    def column(self, name: str) -> list:
        return [r[name] for r in self.rows]


def params_text(params: dict) -> str:
    """``q=19 p=15``; a list as ``4x4x4``."""
    def one(v):
        return "x".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)
    return " ".join(f"{k}={one(v)}" for k, v in params.items())


def default_families() -> list[str]:
    """The families listed when none are named: those whose size the radix bounds."""
    return [n for n, e in ENUMERATORS.items() if not e.needs_max_endpoints]


def check_families(names, max_endpoints: int | None, key: str = "families") -> list[str]:
    """The family names, checked: each must have an enumerator; one whose size the radix
    does not bound needs ``max_endpoints``."""
    from models.core.registry import TOPOLOGIES
    import models.topologies  # noqa: F401  (registers every family)
    out = []
    for name in names:
        if name not in ENUMERATORS:
            why = ("is not a topology family" if name not in TOPOLOGIES else
                   "has no design enumerator (a random or file topology: its size is not set "
                   "by its radix)")
            raise ParameterError(f"{key}: '{name}' {why} (families: {', '.join(ENUMERATORS)})")
        if ENUMERATORS[name].needs_max_endpoints and max_endpoints is None:
            raise ParameterError(f"{key}: {name} needs a largest endpoint count (its size is not "
                                 "bounded by the radix)")
        if name not in out:
            out.append(name)
    return out


def _measured_diameter(name: str, params: dict) -> int:
    from models.metrics import UNREACHABLE, distance_matrix
    from models.topology import build
    d = distance_matrix(build(name, params))
    return int(d[d != UNREACHABLE].max())


def design_table(radix: int, radix_max: int | None = None, families=None,
                 endpoints: tuple[int | None, int | None] = (None, None),
                 diameter: int | None = None, power_model: str = "slimfly",
                 router_coeffs: tuple[float, float] | None = None) -> DesignTable:
    """Every configuration of ``families`` (default: :func:`default_families`) that fits.

    Parameters
    ----------
    radix : int
        Router radix ``k``: the configurations whose radix used is at most ``k``.
    radix_max : int, optional
        With it, the radixes from ``radix`` to ``radix_max``: the configurations whose
        radix used is in that range (a sweep over the router radix).
    families : list of str, optional
        Families with an enumerator (:data:`ENUMERATORS`).
    endpoints : (min, max)
        Keep the configurations with ``min <= endpoints <= max`` (None: no bound).
    diameter : int, optional
        Keep the configurations whose diameter, or proven bound, is at most this; one
        with neither is dropped.
    power_model : str
        :data:`models.analysis.cost.POWER_MODELS` entry.
    router_coeffs : (a, b), optional
        Router price ``a k + b`` (default: the ``fdr10`` preset of
        :data:`models.analysis.cost.ROUTER_PRESETS`).

    Raises
    ------
    ParameterError
        Out-of-range arguments, unknown families or power model.
    """
    from models.analysis.cost import POWER_MODELS, ROUTER_PRESETS, power_of_ports, router_prices
    from models.core.registry import TOPOLOGIES
    from models.metrics import moore_bound
    from models.topology import size_of
    import models.topologies  # noqa: F401

    lo_r, hi_r = (1, radix) if radix_max is None else (radix, radix_max)
    if isinstance(radix, bool) or not isinstance(radix, int) or not 1 <= radix <= MAX_RADIX:
        raise ParameterError(f"radix: must be an integer in [1, {MAX_RADIX}], got {radix!r}")
    if radix_max is not None and (isinstance(radix_max, bool) or not isinstance(radix_max, int)
                                  or not radix <= radix_max <= MAX_RADIX):
        raise ParameterError(f"radix_max: must be an integer in [radix = {radix}, {MAX_RADIX}], "
                             f"got {radix_max!r}")
    e_lo, e_hi = endpoints
    if e_lo is not None and e_hi is not None and e_lo > e_hi:
        raise ParameterError(f"endpoints: the minimum {e_lo} is above the maximum {e_hi}")
    if diameter is not None and diameter < 1:
        raise ParameterError(f"diameter: must be an integer >= 1, got {diameter!r}")
    if power_model not in POWER_MODELS:
        raise ParameterError(f"power: unknown model {power_model!r} "
                             f"(known: {', '.join(POWER_MODELS)})")
    coeffs = ROUTER_PRESETS["fdr10"] if router_coeffs is None else tuple(router_coeffs)
    names = check_families(default_families() if families is None else families, e_hi)

    rows, left_out = [], {}
    for name in names:
        entry = TOPOLOGIES.get(name)
        hook = entry.extra.get("bisection")
        for c in ENUMERATORS[name].func(hi_r, e_hi):
            if not lo_r <= c.radix <= hi_r:
                continue
            try:
                size = size_of(name, c.params)
            except ParameterError:
                left_out[name] = left_out.get(name, 0) + 1
                continue
            n_ep, n_r, n_l = size.endpoints, size.routers, size.links
            if (e_lo is not None and n_ep < e_lo) or (e_hi is not None and n_ep > e_hi):
                continue
            d, d_src = c.diameter, c.diameter_source
            if d is None and c.measure and n_r <= MEASURE_MAX_ROUTERS:
                d = _measured_diameter(name, c.params)
                d_src = f"measured on the built instance ({d_src})"
            bound = d if d is not None else c.diameter_bound
            if diameter is not None and (bound is None or bound > diameter):
                continue
            direct = n_ep == n_r * c.p
            mb = moore_bound(c.network_radix, d) if direct and d is not None else None
            bis = hook(_Counts(name, {**c.params, **c.hook_params}, n_r, n_ep, n_l)) \
                if hook is not None else None
            try:
                unit = float(router_prices(c.radix, coeffs))
            except ParameterError:      # the linear price is negative at this radix
                unit = None
            pw = power_of_ports(n_r * c.radix, n_ep, power_model)
            rows.append({
                "family": name, "params": params_text(c.params), "routers": n_r,
                "endpoints": n_ep, "p": c.p, "radix": c.radix, "network_radix": c.network_radix,
                "diameter": d, "diameter_bound": bound, "diameter_source": d_src, "links": n_l,
                "links_per_endpoint": (n_l + n_ep) / n_ep,
                "ports_per_endpoint": (2 * n_l + n_ep) / n_ep,
                "moore_bound": mb, "moore_ratio": n_r / mb if mb else None,
                "bisection_links": None if bis is None else int(bis["links"]),
                "bisection": "not given" if bis is None else bis["formula"],
                "bisection_exact": None if bis is None else bool(bis["exact"]),
                "router_cost": None if unit is None else unit * n_r,
                "router_cost_per_endpoint": None if unit is None else unit * n_r / n_ep,
                "power_w": pw["total"], "power_per_endpoint_w": pw["per_endpoint"],
            })
    rows.sort(key=lambda r: (r["family"], r["endpoints"], r["routers"], r["params"]))
    options = {"radix": radix, "radix_max": radix_max, "families": names,
               "endpoints": [e_lo, e_hi], "diameter": diameter, "power_model": power_model,
               "router_coeffs": list(coeffs), "measure_max_routers": MEASURE_MAX_ROUTERS}
    return DesignTable(rows, options, left_out)


__all__ = ["COLUMNS", "Config", "DesignTable", "ENUMERATORS", "MEASURE_MAX_ROUTERS", "MAX_RADIX",
           "check_families", "default_families", "design_table", "enumerator", "params_text"]
