"""Synthetic traffic patterns: bit permutations, shifts, tornado, neighbour, hot spots.

All tables are built with vectorised numpy over endpoint (or process) ids.

Processes and placement
-----------------------
The bit permutations, ``shift_half`` and ``subset_uniform`` are defined over
``n`` processes ``0..n-1``; :func:`models.placement.place` puts process
``i`` on an endpoint (``placement = "linear"``: endpoint ``i``;
``"random"``: seeded; ``"file"``: listed in ``placement_file``).  Endpoints
that run no process are idle (table entry ``-1``): they neither send nor
receive.  ``procs`` sets ``n``; by default the bit patterns and
``shift_half`` use the largest power of two that fits, as 000 Sec. V-B does
("as N has to be a power of two we artificially prevent some endpoints from
sending and receiving packets").

Bit patterns (000 Sec. V-B; ``b = log2 n``, ``s_i`` / ``d_i`` bit ``i`` of
the source / destination process):

* ``bitcomp``   -- ``d_i = not s_i``;
* ``bitrev``    -- ``d_i = s_{b-i-1}``;
* ``shuffle``   -- ``d_i = s_{(i-1) mod b}`` (rotate left by one bit);
* ``transpose`` -- ``d = (s mod 2^{b/2}) * 2^{b/2} + floor(s / 2^{b/2})``,
  the transpose of a ``2^{b/2} x 2^{b/2}`` matrix of processes.  It needs
  an even ``b``: by default ``n`` is the largest power of *four* that fits
  (with an odd number of bits the last bit is dropped, so the active set is
  ``2^{b-1}`` processes); an explicit odd-bit ``procs`` is refused.

Fixed points of these permutations (for instance process 0 under
``bitrev``) send to themselves, exactly as the formulas say: such packets
enter and leave their own router and cross no network link.
"""
from __future__ import annotations

import numpy as np

from models.core.errors import ParameterError
from models.placement import PLACEMENTS, place, placement_files
from models.core.registry import TRAFFIC, Param
from models.traffic import TrafficPlan

SET_PLACEMENTS = ("range", "spread", "random")
"""How the I/O (hot-spot) endpoints of ``blended`` / ``hotspot`` are chosen."""


# ============================================================= processes / tables
def _pow2_floor(n: int) -> int:
    return 1 << (int(n).bit_length() - 1) if n >= 1 else 0


def _procs(topo, seed, procs, placement, placement_file, *, rule: str, name: str):
    """Process count and process -> endpoint array for a process-level pattern.

    ``rule`` is ``"pow2"`` (power of two >= 2), ``"pow4"`` (power of four >= 4),
    ``"even"`` (even >= 2) or ``"any"`` (>= 2).  Default count: the largest
    power of two that fits (``pow2``, ``even``), power of four (``pow4``),
    or every placeable endpoint (``any``).
    """
    full = place(topo, None, placement, seed, placement_file)  # validates placement and file
    avail = int(full.size)
    if procs is None:
        if rule == "pow2":
            n = _pow2_floor(avail)
        elif rule == "pow4":
            n = _pow2_floor(avail)
            if n.bit_length() % 2 == 0:  # odd number of bits: drop one
                n >>= 1
        elif rule == "even":
            n = _pow2_floor(avail)
        else:
            n = avail
    else:
        n = int(procs)
    if n < 2 or (rule == "pow4" and n < 4):
        raise ParameterError(f"traffic.procs: {name} needs at least {4 if rule == 'pow4' else 2} "
                             f"processes, got {n}")
    if rule in ("pow2", "pow4") and n & (n - 1):
        raise ParameterError(f"traffic.procs: {name} needs a power of two, got {n}")
    if rule == "pow4" and (n.bit_length() - 1) % 2:
        raise ParameterError(f"traffic.procs: {name} needs a power of four (an even number of "
                             f"address bits), got {n} = 2^{n.bit_length() - 1}")
    if rule == "even" and n % 2:
        raise ParameterError(f"traffic.procs: {name} needs an even number of processes, got {n}")
    if n > avail:
        place(topo, n, placement, seed, placement_file)  # raises "n processes do not fit"
    return n, full[:n]


def _table(E: int, ep: np.ndarray, dest_proc: np.ndarray) -> np.ndarray:
    """(E,) int32 endpoint table: ``table[ep[i]] = ep[dest_proc[i]]``, -1 elsewhere."""
    table = np.full(E, -1, dtype=np.int32)
    table[ep] = ep[np.asarray(dest_proc, dtype=np.int64)]
    return table


def _where(n: int, E: int, placement: str) -> str:
    return f"{n} of {E} endpoints, {placement} placement"


def _bits(n: int) -> int:
    return n.bit_length() - 1


# =================================================================== bit patterns
def bit_destinations(kind: str, b: int) -> np.ndarray:
    """Destination process of every source ``0..2^b-1`` under a bit pattern (int64)."""
    s = np.arange(1 << b, dtype=np.int64)
    mask = (1 << b) - 1
    if kind == "bitcomp":
        return s ^ mask
    if kind == "bitrev":
        d = np.zeros_like(s)
        for i in range(b):
            d |= ((s >> i) & 1) << (b - 1 - i)
        return d
    if kind == "shuffle":
        return ((s << 1) | (s >> (b - 1))) & mask if b > 0 else s
    if kind == "transpose":
        if b % 2:
            raise ValueError("transpose needs an even number of bits")
        h = b // 2
        low = (1 << h) - 1
        return ((s & low) << h) | (s >> h)
    raise ValueError(f"unknown bit pattern {kind!r}")


def _bit_pattern(kind: str, label: str, rule: str):
    def pattern(topo, seed, procs=None, placement="linear", placement_file=""):
        n, ep = _procs(topo, seed, procs, placement, placement_file, rule=rule, name=kind)
        table = _table(topo.n_endpoints, ep, bit_destinations(kind, _bits(n)))
        return TrafficPlan("table", table, f"{label} ({_where(n, topo.n_endpoints, placement)})")
    pattern.__name__ = kind
    return pattern


bitcomp = _bit_pattern("bitcomp", "bit complement", "pow2")
bitcomp.__doc__ = "Bit complement: process ``s`` sends to ``~s`` on ``b`` bits (000 Sec. V-B)."
bitrev = _bit_pattern("bitrev", "bit reversal", "pow2")
bitrev.__doc__ = "Bit reversal: ``d_i = s_{b-i-1}`` (000 Sec. V-B)."
shuffle = _bit_pattern("shuffle", "perfect shuffle", "pow2")
shuffle.__doc__ = "Perfect shuffle: ``d_i = s_{(i-1) mod b}`` (000 Sec. V-B)."
transpose = _bit_pattern("transpose", "matrix transpose", "pow4")
transpose.__doc__ = ("Matrix transpose: swap the high and low halves of the ``b`` address bits "
                     "(``b`` even; Dally and Towles Sec. 3.2).")


# ===================================================================== shift_half
def shift_half(topo, seed, procs=None, placement="linear", placement_file=""):
    """000 Sec. V-B shift: ``d = s mod n/2`` or ``d = (s mod n/2) + n/2``, probability 1/2 each.

    Notes
    -----
    Taken literally, one of the two choices is always the source itself
    (for ``s < n/2`` the choices are ``s`` and ``s + n/2``, for ``s >= n/2``
    they are ``s - n/2`` and ``s``), so half of the packets stay on their
    own router.  That is what is implemented (``kind = "two_choice"``).
    The variant that always crosses to the other half is the
    ``shift`` pattern with ``s = n/2``.  ``n`` defaults to the largest power
    of two that fits, as for the bit patterns of the same section; any even
    ``procs`` is accepted.
    """
    n, ep = _procs(topo, seed, procs, placement, placement_file, rule="even", name="shift_half")
    half = n // 2
    low = np.arange(n, dtype=np.int64) % half
    E = topo.n_endpoints
    return TrafficPlan("two_choice", _table(E, ep, low), f"half shift ({_where(n, E, placement)})",
                       table2=_table(E, ep, low + half))


# ========================================================================= tornado
def tornado_offset(size: int) -> int:
    """Tornado step on a ring of ``size``: ``ceil(size/2) - 1``, at least 1 (0 for size 1)."""
    if size <= 1:
        return 0
    return max(1, (size + 1) // 2 - 1)


def _coords_dims(topo):
    """Dimension sizes when the router ids are mixed-radix coordinates (dim 0 fastest): what
    the topology registered (``coordinates=``), else ``None``."""
    from models.core.registry import TOPOLOGIES
    import models.topologies  # noqa: F401
    if topo.name not in TOPOLOGIES:     # built outside the registry: no hooks
        return None
    entry = TOPOLOGIES.get(topo.name)
    return entry.extra["coordinates"](topo) if "coordinates" in entry.extra else None


def router_map_to_endpoints(topo, new_router: np.ndarray) -> np.ndarray:
    """Endpoint ``i`` of router ``r`` -> endpoint ``i mod p`` of ``new_router[r]``."""
    er = topo.endpoint_router.astype(np.int64)
    off = topo.endpoint_offsets
    local = np.arange(topo.n_endpoints, dtype=np.int64) - off[er]
    tgt = new_router[er]
    p_t = topo.endpoints[tgt].astype(np.int64)
    if np.any(p_t == 0):
        raise ParameterError("traffic.pattern: a destination router has no endpoints")
    return (off[tgt] + local % p_t).astype(np.int32)


def shift_coords(topo, steps) -> np.ndarray:
    """Router ``x`` -> router ``x + steps`` (per dimension, mod the size) on hyperx/torus ids."""
    dims = _coords_dims(topo)
    rid = np.arange(topo.n_routers, dtype=np.int64)
    new = np.zeros_like(rid)
    stride = 1
    for size, step in zip(dims, steps):
        x = (rid // stride) % size
        new += ((x + step) % size) * stride
        stride *= size
    return new


def tornado(topo, seed):
    """Tornado: every source moves just under half way around (Dally and Towles Sec. 3.2).

    On ``hyperx`` and ``torus`` it is applied per dimension to the router
    coordinates, ``x_i -> (x_i + t(S_i)) mod S_i`` with
    ``t(S) = ceil(S/2) - 1``, and endpoint ``i`` of a router sends to
    endpoint ``i`` of the image router.  On every other topology it is
    applied to endpoint ids, ``e -> (e + t(E)) mod E``.  ``t`` is raised to 1
    for a ring of 2 (the textbook formula would leave the dimension idle).
    """
    E = topo.n_endpoints
    dims = _coords_dims(topo)
    if dims is not None:
        steps = [tornado_offset(s) for s in dims]
        if not any(steps):
            raise ParameterError(f"traffic.pattern: tornado on {topo.name} {dims} moves no router")
        table = router_map_to_endpoints(topo, shift_coords(topo, steps))
        return TrafficPlan("table", table, f"tornado per dimension, steps {steps}")
    if E < 2:
        raise ParameterError("traffic.pattern: tornado needs at least 2 endpoints")
    t = tornado_offset(E)
    return TrafficPlan("table", ((np.arange(E) + t) % E).astype(np.int32), f"tornado, shift by {t}")


# ======================================================================== neighbor
def neighbor(topo, seed):
    """Neighbour: every endpoint sends to the same-index endpoint of the next router.

    On ``hyperx`` and ``torus`` this is the digit permutation of Dally and
    Towles (Sec. 3.2, as in BookSim): ``x_i -> (x_i + 1) mod S_i`` in every
    dimension of size > 1.  On other topologies the next router is the next
    one *that has endpoints* in id order (wrapping from the last to the
    first), which in the group-major numbering of the direct topologies is
    a router of the same group or rack.  Endpoint ``i`` goes to endpoint
    ``i mod p'`` of that router (``p'`` its endpoint count), so with equal
    endpoint counts the table is a permutation.
    """
    R = topo.n_routers
    dims = _coords_dims(topo)
    if dims is not None:
        steps = [1 if s > 1 else 0 for s in dims]
        if not any(steps):
            raise ParameterError(f"traffic.pattern: neighbor on {topo.name} {dims} has a single router")
        table = router_map_to_endpoints(topo, shift_coords(topo, steps))
        return TrafficPlan("table", table, "neighbor, +1 in every dimension")
    with_ep = np.nonzero(topo.endpoints > 0)[0].astype(np.int64)
    if with_ep.size < 2:
        raise ParameterError("traffic.pattern: neighbor needs at least 2 routers with endpoints")
    nxt = np.full(R, -1, dtype=np.int64)
    nxt[with_ep] = np.roll(with_ep, -1)
    return TrafficPlan("table", router_map_to_endpoints(topo, nxt), "neighbor, next router")


# ==================================================================== hot spots
def choose_set(topo, seed, count, fraction, how, key: str, tag: int,
               count_key: str | None = None) -> np.ndarray:
    """Sorted endpoint ids of a special set (I/O nodes, hot spots).

    ``count`` endpoints if given, else ``max(1, round(fraction * E))``; the keys a refusal
    names are ``traffic.<key>_fraction``, ``traffic.<key>_placement`` and ``count_key``
    (default ``traffic.<key>_endpoints``).
    ``how``: ``range`` = the last ``count`` endpoints (a contiguous block),
    ``spread`` = the centres of ``count`` equal slices of ``0..E-1``,
    ``random`` = a seeded random choice.
    """
    E = topo.n_endpoints
    if count is None:
        if fraction is None or not 0.0 < fraction < 1.0:
            raise ParameterError(f"traffic.{key}_fraction: must be in (0, 1), got {fraction!r}")
        count = max(1, int(round(fraction * E)))
    count = int(count)
    if not 1 <= count < E:
        raise ParameterError(f"{count_key or f'traffic.{key}_endpoints'}: must be in 1..{E - 1} (the network has "
                             f"{E} endpoints), got {count}")
    if how == "range":
        return np.arange(E - count, E, dtype=np.int32)
    if how == "spread":
        i = np.arange(count, dtype=np.int64)
        return ((2 * i + 1) * E // (2 * count)).astype(np.int32)
    if how == "random":
        rng = np.random.default_rng([int(seed) & 0xFFFFFFFFFFFFFFFF, tag])
        return np.sort(rng.choice(E, size=count, replace=False)).astype(np.int32)
    raise ParameterError(f"traffic.{key}_placement: unknown '{how}' (known: {', '.join(SET_PLACEMENTS)})")


def _check_frac(frac):
    if not 0.0 <= frac <= 1.0:
        raise ParameterError(f"traffic.frac: must be in [0, 1], got {frac}")


def blended(topo, seed, frac=0.10, io_endpoints=None, io_fraction=0.05, io_placement="range"):
    """004 Sec. 5 blended traffic: compute endpoints send ``frac`` of packets to I/O endpoints.

    The endpoints split into I/O endpoints (``io_endpoints`` of them, or
    ``io_fraction`` of all; a contiguous block at the end of the endpoint
    order by default, 004's "fixed range of I/O nodes") and compute
    endpoints.  Only compute endpoints inject: each packet goes with
    probability ``frac`` (default 0.10) to a uniformly chosen I/O endpoint,
    otherwise to a uniformly chosen other compute endpoint (``kind="mix"``).
    I/O endpoints only receive.  004 gives no I/O node count; the default
    of 5 % is ours.
    """
    _check_frac(frac)
    E = topo.n_endpoints
    io = choose_set(topo, seed, io_endpoints, io_fraction, io_placement, "io", 0xB1E0)
    compute = np.setdiff1d(np.arange(E, dtype=np.int32), io).astype(np.int32)
    if compute.size < 2:
        raise ParameterError(f"traffic.io_endpoints: {io.size} I/O endpoints leave fewer than 2 "
                             f"compute endpoints (E = {E})")
    return TrafficPlan("mix", np.zeros(E, dtype=np.int32),
                       f"blended: {frac:g} to {io.size} I/O endpoints ({io_placement}), "
                       f"rest uniform over {compute.size} compute endpoints",
                       set_a=compute, set_b=io, frac=float(frac))


def hotspot(topo, seed, frac=0.10, hotspots=1, hot_placement="spread"):
    """Hot-spot traffic: every endpoint sends ``frac`` of its packets to a few hot spots.

    Every endpoint injects (hot spots too).  A packet goes with probability
    ``frac`` to a uniformly chosen hot spot (never the source itself when
    another hot spot exists; a single hot spot sends that share to itself),
    otherwise uniformly to any other endpoint.  ``hotspots`` endpoints are
    chosen by ``hot_placement`` (default evenly spread).  Compare
    ``blended``, where the special endpoints only receive.
    """
    _check_frac(frac)
    E = topo.n_endpoints
    hot = choose_set(topo, seed, hotspots, None, hot_placement, "hot", 0x4075, "traffic.hotspots")
    return TrafficPlan("mix", np.zeros(E, dtype=np.int32),
                       f"hotspot: {frac:g} to {hot.size} hot spots ({hot_placement}), rest uniform",
                       set_a=np.arange(E, dtype=np.int32), set_b=hot, frac=float(frac),
                       sources=np.ones(E, dtype=np.int8))


# ================================================================ subset_uniform
def subset_uniform(topo, seed, procs=None, placement="linear", placement_file=""):
    """Uniform random traffic among ``procs`` placed processes; the other endpoints idle.

    A partial-machine job: only the ``procs`` endpoints chosen by the
    placement send, each packet to a uniformly chosen other member.
    """
    n, ep = _procs(topo, seed, procs, placement, placement_file, rule="any", name="subset_uniform")
    E = topo.n_endpoints
    return TrafficPlan("mix", np.zeros(E, dtype=np.int32),
                       f"uniform among {_where(n, E, placement)}",
                       set_a=np.sort(ep).astype(np.int32), set_b=np.zeros(0, dtype=np.int32),
                       frac=0.0)


# =================================================================== registration
def _proc_params(what: str):
    return [
        Param("procs", int, None, f"number of processes ({what})"),
        Param("placement", str, "linear", "process -> endpoint mapping", choices=PLACEMENTS),
        Param("placement_file", str, "", "placement 'file': one endpoint id per line, process order",
              files=placement_files),
    ]


_POW2 = "a power of two; default the largest that fits, the other endpoints idle"
for _name, _func, _summary in (
        ("bitcomp", bitcomp, "bit complement d_i = not s_i on the power-of-two active set"),
        ("bitrev", bitrev, "bit reversal d_i = s_(b-i-1) on the power-of-two active set"),
        ("shuffle", shuffle, "perfect shuffle d_i = s_(i-1 mod b) on the power-of-two active set")):
    TRAFFIC.register(_name, _func, params=_proc_params(_POW2), summary=_summary,
                     reference="000 Sec. V-B")
TRAFFIC.register("transpose", transpose,
                 params=_proc_params("a power of four; default the largest that fits"),
                 summary="swap high and low halves of the address bits (2^(b/2) square transpose)",
                 reference="000 Sec. V-B; Dally & Towles Sec. 3.2")
TRAFFIC.register("shift_half", shift_half,
                 params=_proc_params("even; default the largest power of two that fits"),
                 summary="d = s mod N/2 or (s mod N/2) + N/2 with probability 1/2 each",
                 reference="000 Sec. V-B")
TRAFFIC.register("tornado", tornado, params=[],
                 summary="shift by ceil(N/2)-1 (per dimension on hyperx/torus)",
                 reference="Dally & Towles Sec. 3.2; 004 Sec. 5")
TRAFFIC.register("neighbor", neighbor, params=[],
                 summary="same-index endpoint of the next router (+1 in every dimension on hyperx/torus)",
                 reference="Dally & Towles Sec. 3.2")
TRAFFIC.register("blended", blended, params=[
    Param("frac", float, 0.10, "fraction of packets sent to the I/O endpoints"),
    Param("io_endpoints", int, None, "number of I/O endpoints (overrides io_fraction)"),
    Param("io_fraction", float, 0.05, "I/O endpoints as a fraction of all endpoints"),
    Param("io_placement", str, "range", "which endpoints are I/O: range (last block), spread, random",
          choices=SET_PLACEMENTS),
], summary="compute endpoints: frac to I/O endpoints, rest uniform among compute; I/O only receive",
    reference="004 Sec. 5")
TRAFFIC.register("hotspot", hotspot, params=[
    Param("frac", float, 0.10, "fraction of packets sent to the hot spots"),
    Param("hotspots", int, 1, "number of hot-spot endpoints"),
    Param("hot_placement", str, "spread", "which endpoints are hot spots: range, spread, random",
          choices=SET_PLACEMENTS),
], summary="every endpoint: frac to the hot spots, rest uniform", reference="004 Sec. 5")
TRAFFIC.register("subset_uniform", subset_uniform,
                 params=_proc_params("default every endpoint (every file entry)"),
                 summary="uniform random among the placed processes only (partial-machine job)",
                 reference="003 Sec. 7.3 (linear vs random placement)")
