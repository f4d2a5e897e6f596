"""Finite exchanges: all-to-all, 3D nearest neighbour, bisection pairs (001 Sec. 4.4, 003 Sec. 7).

A finite workload gives every process a list of messages (destination,
packets).  All messages are posted at cycle 0; each endpoint injects at link
rate while it has data, either interleaving the packets of all its messages
round-robin (``schedule = all_at_once``, posting every send at once as 003
App. C.1 found best) or sending them one after the other (``staggered``).
The run ends when the last packet has arrived; the result reports the
completion time and the effective throughput = total data / completion time
/ processes, as a fraction of the injection bandwidth (one flit per cycle),
as 001 Sec. 4.4 defines it, plus per-message completion statistics.

Processes are placed on endpoints with ``placement`` (``linear``:
contiguous in endpoint order, i.e. router by router, as 001 Sec. 4.4;
``random``: seeded, 003 Sec. 7; ``file``).  ``traffic.load`` is not used.
"""
from __future__ import annotations

import numpy as np

from models.core.errors import ParameterError
from models.placement import place, placement_files
from models.core.registry import TRAFFIC, Param
from models.traffic import TrafficPlan

SCHEDULES = ("all_at_once", "staggered")


def _plan(topo, procs_ep, dst_ep, pkts, schedule, description):
    """CSR message tables sorted by source endpoint (stable in message order)."""
    if schedule not in SCHEDULES:
        raise ParameterError(f"traffic.schedule: '{schedule}' is not one of {', '.join(SCHEDULES)}")
    src = np.asarray(procs_ep, dtype=np.int64)
    dst = np.asarray(dst_ep, dtype=np.int64)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    order = np.argsort(src, kind="stable")
    E = topo.n_endpoints
    counts = np.bincount(src, minlength=E)
    off = np.zeros(E + 1, dtype=np.int64)
    np.cumsum(counts, out=off[1:])
    n = dst.size
    return TrafficPlan("messages", np.full(E, -1, np.int32), description, msg_off=off,
                       msg_dst=dst[order].astype(np.int32),
                       msg_pkts=np.full(n, pkts, dtype=np.int32), schedule=schedule)


def _procs(topo, seed, procs, placement, placement_file):
    n = procs or None
    return place(topo, n, placement, seed, placement_file or None).astype(np.int64)


def _check_pkts(pkts):
    if pkts < 1:
        raise ParameterError(f"traffic.message_packets: must be >= 1, got {pkts}")


def alltoall(topo, seed, procs=0, placement="linear", placement_file="", message_packets=30,
             schedule="all_at_once", order="random"):
    """Every process sends one message to every other process (001 Sec. 4.4).

    ``order`` is the order in which a process lists its destinations:
    ``random`` (default: a seeded random permutation per process) or
    ``shift`` (process i sends to i+1, i+2, ..., i-1).  With contiguous
    placement the shifted order makes all processes send to ``i + k`` at the
    same time, i.e. a sequence of shift permutations -- the adversarial
    pattern of minimal routing on MLFM/OFT (001 Sec. 4.2) -- which is why the
    random order is the default.
    """
    _check_pkts(message_packets)
    if order not in ("random", "shift"):
        raise ParameterError(f"traffic.order: '{order}' is not one of random, shift")
    ep = _procs(topo, seed, procs, placement, placement_file)
    n = ep.size
    if n < 2:
        raise ParameterError("traffic.procs: all-to-all needs at least 2 processes")
    if n * (n - 1) > 200_000_000:
        raise ParameterError(f"traffic.procs: all-to-all of {n} processes is {n * (n - 1)} messages;"
                             " use fewer processes (at most about 14,000)")
    k = np.tile(np.arange(1, n), (n, 1))                   # offsets 1..n-1 per process
    if order == "random":
        keys = np.random.default_rng([int(seed), 0xA2A]).random((n, n - 1))
        k = np.take_along_axis(k, np.argsort(keys, axis=1), axis=1)
    i = np.repeat(np.arange(n), n - 1)
    return _plan(topo, ep[i], ep[(i + k.ravel()) % n], message_packets, schedule,
                 f"all-to-all of {n} processes, {message_packets} packets per message, {order} "
                 f"order, {schedule}")


def torus_dims(n: int) -> tuple[int, int, int]:
    """Sides (x <= y <= z) of the largest 3D torus with at most n processes, most cubic first."""
    best = None
    for x in range(1, int(round(n ** (1 / 3))) + 2):
        for y in range(x, int(np.sqrt(n / x)) + 2):
            z = n // (x * y)
            if z < y:
                continue
            key = (x * y * z, -(z - x))
            if best is None or key > best[0]:
                best = (key, (x, y, z))
    return best[1]


def nn3d(topo, seed, procs=0, placement="linear", placement_file="", message_packets=2048,
         dims=None, schedule="all_at_once"):
    """Processes on a 3D torus, each sends one message to each of its 6 neighbours (001 Sec. 4.4).

    Default torus: the largest that fits the processes, most cubic (SF q=13
    p=9: 13 x 13 x 18, as 001 uses); process i sits at (x, y, z) with x
    fastest.  ``message_packets`` 2048 = 512 KB in 256-byte packets (001).
    """
    _check_pkts(message_packets)
    ep = _procs(topo, seed, procs, placement, placement_file)
    if dims:
        if len(dims) != 3 or min(dims) < 1:
            raise ParameterError(f"traffic.dims: three positive sizes needed, got {dims}")
        X, Y, Z = dims
        if X * Y * Z > ep.size:
            raise ParameterError(f"traffic.dims: {X}x{Y}x{Z} = {X * Y * Z} processes do not fit "
                                 f"{ep.size} placed processes")
    else:
        X, Y, Z = torus_dims(ep.size)
    n = X * Y * Z
    ep = ep[:n]
    i = np.arange(n)
    x, y, z = i % X, (i // X) % Y, i // (X * Y)
    src, dst = [], []
    for dx, dy, dz in ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)):
        j = ((x + dx) % X) + X * (((y + dy) % Y) + Y * ((z + dz) % Z))
        src.append(i)
        dst.append(j)
    src = np.stack(src, axis=1).ravel()     # per process its 6 messages, in the order above
    dst = np.stack(dst, axis=1).ravel()
    return _plan(topo, ep[src], ep[dst], message_packets, schedule,
                 f"3D nearest neighbour on a {X}x{Y}x{Z} torus, {message_packets} packets per "
                 f"message, {schedule}")


def bisection(topo, seed, procs=0, placement="linear", placement_file="", message_packets=256,
              schedule="all_at_once"):
    """Random bisection pairs: each process exchanges one message with a partner in the other half.

    The processes are shuffled (seeded) and the first half is paired with the
    second; this measures the effective bisection bandwidth (003 Sec. 7).
    """
    _check_pkts(message_packets)
    ep = _procs(topo, seed, procs, placement, placement_file)
    n = ep.size - ep.size % 2
    if n < 2:
        raise ParameterError("traffic.procs: bisection pairs need at least 2 processes")
    perm = np.random.default_rng([int(seed), 0xB15E]).permutation(ep.size)[:n]
    a, b = perm[: n // 2], perm[n // 2:]
    return _plan(topo, np.concatenate([ep[a], ep[b]]), np.concatenate([ep[b], ep[a]]),
                 message_packets, schedule,
                 f"random bisection pairs of {n} processes, {message_packets} packets per message")


COMMON = [
    Param("procs", int, 0, "processes (0 = one per endpoint)"),
    Param("placement", str, "linear", "process placement: linear, random or file",
          choices=("linear", "random", "file")),
    Param("placement_file", str, "", "placement file (one endpoint id per line)",
          files=placement_files),
    Param("schedule", str, "all_at_once", "all_at_once: packets of all messages interleaved; "
          "staggered: one message after the other", choices=SCHEDULES),
]
TRAFFIC.register("alltoall", alltoall, params=COMMON + [
    Param("message_packets", int, 30, "packets per message (001: 30 packets of 256 B)"),
    Param("order", str, "random", "destination order per process: random (seeded) or shift "
          "(i+1, i+2, ...)", choices=("random", "shift"))],
    summary="finite all-to-all exchange: completion time and effective throughput",
    reference="001 Sec. 4.4; 003 App. C.1", finite=True)
TRAFFIC.register("nn3d", nn3d, params=COMMON + [
    Param("message_packets", int, 2048, "packets per message (001: 512 KB = 2048 x 256 B)"),
    Param("dims", "int_list", None, "torus sides X,Y,Z (default: largest most-cubic torus)")],
    summary="finite 3D nearest-neighbour exchange on a process torus", reference="001 Sec. 4.4",
    finite=True)
TRAFFIC.register("bisection", bisection, params=COMMON + [
    Param("message_packets", int, 256, "packets per message")],
    summary="finite exchange between random bisection pairs (effective bisection bandwidth)",
    reference="003 Sec. 7", finite=True)
