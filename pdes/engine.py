"""Simulation orchestration: build, partition, window loop, measurement.

:func:`prepare` builds everything that every rank builds identically
(topology, link latencies, routing distances, routing plan, traffic) and
checks the config against it (VCs, buffers) before any simulation work.
:class:`Engine` runs the conservative window loop over one or more
:class:`~pdes.state.PartState` objects and a group (``pdes.comm``) that
moves outboxes and reduces statistics.

Measurement follows BookSim's latency mode: warm-up, a measurement window
``[m0, m1)`` in which created packets are *measured*, then a drain in which
injection continues until every measured packet has been delivered (or the
drain limit passes: the run is saturated).  Every decision is taken at a
sample boundary (a multiple of ``measure.sample_period``), on globally
reduced integer counters, so it is identical for any number of ranks.

Sample boundaries are also where checkpoints are taken (:class:`CheckpointPlan`,
:mod:`pdes.checkpoint`): every partition's windows end there, so the state is
the same for any partition, and :meth:`Engine.run` continues from a
checkpoint's :class:`LoopState`.
"""
from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from models.core.errors import ParameterError
from pdes import config as C
from pdes.kernels import cycle
from models.core import params as prm_slots
from models.core.record import (HIST_OCTAVES, HIST_SUB, C_CREATED, C_DELIVERED, C_INJECTED,
    C_MOVES, ERR_CREDIT, ERR_OUTBOX, ERR_VC_ORDER, ERR_ROUTE, ERR_VC, NSAMPLE, S_CREATED_MEAS,
    S_CREATED_PKTS, S_CREATED_WIN_FLITS, S_DELIVERED_FLITS, S_DELIVERED_MEAS, S_DELIVERED_WIN,
    S_INFLIGHT, S_INJECTED_FLITS, S_INJECTED_WIN, S_LAST_DELIVERY, S_LAST_MOVE, S_MAX_NLAT,
    S_MAX_PLAT, S_SUM_HOPS, S_SUM_NLAT, S_SUM_PLAT, S_SUM_PLAT_SQ, STAT_MAX)
from models.core import routing as rk
from pdes.kernels.traffic import KINDS as TRAFFIC_KINDS
from models.core.rng import threshold53
from pdes.state import PartState, RouterParams
from pdes.timing import (channel_cycles, hop_cycles, kernel_timing, router_cycles,
                         slot_round_trip)

INT32_MAX = np.iinfo(np.int32).max


class SimulationError(RuntimeError):
    """The model reached a state it cannot continue from (deadlock, routing failure)."""


@dataclass
class Prepared:
    """Everything every rank builds identically before the run."""

    cfg: dict
    topo: object
    link_latency: np.ndarray
    cable_m: np.ndarray | None
    dist: np.ndarray
    plan: object
    traffic: object
    rp: RouterParams
    timings: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)      # what the start report should say
    share: object = None     # pdes.shared.NodeShare: the node-shared tables and their windows
    kglobals: dict = field(default_factory=dict)   # kernel_globals()
    next_hops: str = "auto"       # "off": the memory check left the next-hop tables out
    dist_symmetric: bool | None = None

    @property
    def keep(self) -> list:
        """The MPI objects behind the node-shared tables (they live as long as this)."""
        return [] if self.share is None else self.share.keep

    @property
    def active_endpoints(self) -> int:
        return int(self.traffic.active.sum())


# engine limits that follow from the narrow integer types of the per-VC kernel state
# (pdes.state.PartState: int16 occupancy and credit counters, int8 VC indices)
MAX_VCS = 127
MAX_VC_FLITS = 32767
MAX_VCS_PER_ROUTER = 32767

MIN_AUTO_VC_FLITS = 16
"""The queue the automatic buffers give every VC beyond its link's round trip, and their
smallest round-trip part (BookSim's default ``vc_buf_size`` is 8)."""


def _check_router(cfg) -> None:
    r = cfg["router"]
    for key in ("packet_size", "output_buffer_flits", "endpoint_latency"):
        if r[key] < 1:
            raise ParameterError(f"router.{key}: must be >= 1 (got {r[key]})")
    for key in ("buffer_flits", "vc_buffer_flits", "credit_delay", "routing_delay",
                "vc_alloc_delay", "sw_alloc_delay", "st_delay", "link_latency", "num_vcs"):
        if r[key] < 0:
            raise ParameterError(f"router.{key}: must be >= 0 (got {r[key]})")
    if r["internal_speedup"] < 1.0:
        raise ParameterError(f"router.internal_speedup: must be >= 1 (got {r['internal_speedup']})")
    if not cfg["run"]["max_imbalance"] >= 1.0:
        raise ParameterError(f"run.max_imbalance: must be >= 1 (got {cfg['run']['max_imbalance']})")
    load = cfg["traffic"]["load"]
    if not (0.0 < load <= 1.0):
        raise ParameterError(f"traffic.load: must be in (0, 1] flits/cycle/endpoint (got {load})")
    m = cfg["measure"]
    for key in ("measure_cycles", "sample_period", "watchdog_cycles", "latency_hist_max"):
        if m[key] < 1:
            raise ParameterError(f"measure.{key}: must be >= 1 (got {m[key]})")
    for key in ("warmup_cycles", "drain_cycles", "max_warmup_cycles"):
        if m[key] < 0:
            raise ParameterError(f"measure.{key}: must be >= 0 (got {m[key]})")
    if m["seed"] < 0:
        raise ParameterError(f"measure.seed: must be >= 0 (got {m['seed']})")
    if not (m["warmup_tolerance"] > 0):
        raise ParameterError("measure.warmup_tolerance: must be > 0")
    total = m["max_warmup_cycles"] + m["warmup_cycles"] + m["measure_cycles"] + m["drain_cycles"]
    if total > 2 ** 30:
        raise ParameterError("measure: warm-up + measurement + drain must stay below 2**30 cycles")


def link_latencies(cfg, topo):
    """(latency in cycles, cable metres) per link.

    ``router.link_latency`` when it is > 0; else the latencies a file
    topology carries (anynet weights, edge-list data), if any; else the layout's.
    """
    from models import layout as L
    from models.topologies.file import link_latency_of
    lay = L.build_layout(topo, **cfg["layout"])
    return link_latency_of(topo, lay, cfg["router"]["link_latency"])


def distances(topo, share=None) -> np.ndarray:
    """All-pairs router distances (uint8, R x R), built once per node and shared by its ranks.

    The routing reads the distance from any neighbour to any destination, so
    every rank needs the whole matrix (354 MB for 18,818 routers).  With a
    :class:`pdes.shared.NodeShare` of several ranks, the ranks of one node hold
    one copy in MPI-3 shared memory: each runs the searches from a contiguous
    slice of source routers and writes its rows in place.  Where shared memory
    cannot be had, the rows are split over all ranks and gathered into a copy
    per rank.
    """
    from models.metrics import distance_matrix, distance_rows
    if share is None or share.comm is None:
        return distance_matrix(topo)
    R = topo.n_routers
    return share.array((R, R), np.uint8,
                       rows=lambda lo, hi: distance_rows(topo, np.arange(lo, hi), threads=1))


CDG_AUTO_MAX_ROUTERS = 3000
"""Runs with a non-hop VC scheme check the channel dependency graph first up to this size."""


def _routing(cfg, topo, dist, link_latency):
    from models.core.registry import ROUTINGS
    import models.routing  # noqa: F401
    rsec = dict(cfg["routing"])
    alg = rsec.pop("algorithm")
    entry = ROUTINGS.get(alg)
    if entry.extra.get("seeded"):       # randomised table construction
        rsec["seed"] = cfg["measure"]["seed"]
    plan = entry.func(topo, dist, **rsec)
    if plan.finalize is not None:
        plan = plan.finalize(np.asarray(link_latency, dtype=np.int64) + hop_cycles(cfg["router"]))
    check_plan(alg, plan, cfg)
    nv = cfg["router"]["num_vcs"] or plan.vcs_needed
    if nv < plan.vcs_needed:
        raise ParameterError(
            f"router.num_vcs: routing '{alg}' needs {plan.vcs_needed} VCs on this topology "
            f"({plan.vc_scheme}; longest path {plan.max_hops} hops), but num_vcs = {nv}")
    return plan, nv


def check_plan(alg: str, plan, cfg: dict | None = None) -> None:
    """A routing plan names a registered kernel and one of its VC schemes and gives exactly
    the tables and kernel parameters it reads; anything else raises, naming the key."""
    rk.pack(alg, plan, cfg if cfg is not None else C.resolve({}, []))


def traffic_kind(kind: str) -> int:
    """Kernel id of a traffic plan's kind (finite exchanges read their message tables)."""
    if kind == "messages":
        return TRAFFIC_KINDS["uniform"]     # not read: destinations come from the message tables
    try:
        return TRAFFIC_KINDS[kind]
    except KeyError:
        raise ParameterError(f"traffic.pattern: plan kind '{kind}' has no engine kernel "
                             f"(known: {', '.join(sorted(TRAFFIC_KINDS))}, messages)") from None


def plan_routing(cfg: dict):
    """(topology, distances, routing plan, num_vcs) of a config, for the static check."""
    from models.topology import build
    name, params = C.topology_params(cfg)
    topo = build(name, params)
    check_memory(cfg, "topology", topo.n_routers ** 2,
                 f"its all-pairs distance table ({topo.n_routers:,} x {topo.n_routers:,} bytes)")
    dist = distances(topo)
    check_connected(topo, dist)
    return (topo, dist) + _routing(cfg, topo, dist, link_latencies(cfg, topo)[0])


def check_connected(topo, dist) -> None:
    """Refuse a network in which some endpoints cannot reach others."""
    from models.metrics import submatrix_max
    ep = np.nonzero(topo.endpoints > 0)[0]
    if ep.size and submatrix_max(dist, ep) == 255:
        raise ParameterError("topology: the network is disconnected (some endpoints cannot reach others)")


def same_network(a: dict, b: dict) -> bool:
    """Whether two resolved configs describe the same network: topology, layout, link latency."""
    return (a["topology"] == b["topology"] and a["layout"] == b["layout"]
            and a["router"]["link_latency"] == b["router"]["link_latency"])


def prepare(cfg: dict, comm=None, reuse: Prepared | None = None) -> Prepared:
    """Build topology, latencies, routing tables and traffic; validate against them.

    Every rank of ``comm`` builds the same objects; only the distance table is
    computed cooperatively.  ``reuse``, a :class:`Prepared` of a config with the
    same network (:func:`same_network`), lends its topology, latencies and
    distances instead of building them again (a sweep over routings or loads).
    """
    from models.core.registry import TRAFFIC
    import models.routing  # noqa: F401
    import models.traffic  # noqa: F401

    from pdes.shared import NodeShare
    _check_router(cfg)
    if reuse is not None and same_network(reuse.cfg, cfg):
        topo, link_latency, cable_m, dist = reuse.topo, reuse.link_latency, reuse.cable_m, reuse.dist
        share = reuse.share if reuse.share is not None else NodeShare(comm)
        timings = {k: 0.0 for k in ("build_s", "layout_s", "distances_s")}
    else:
        share = NodeShare(comm)
        topo, link_latency, cable_m, dist, timings = _network(cfg, share)
    check_connected(topo, dist)
    r = cfg["router"]
    if link_latency.size:
        rtt = 2 * int(link_latency.max()) + r["credit_delay"] + 2 * r["endpoint_latency"] + \
            3 * channel_cycles(r) + router_cycles(r)
        if rtt >= cfg["measure"]["watchdog_cycles"]:
            raise ParameterError(
                f"measure.watchdog_cycles: must exceed the longest credit round trip of the network "
                f"({rtt} cycles over links of {int(link_latency.max())} cycles), got "
                f"{cfg['measure']['watchdog_cycles']}: a flit on such a link would be taken for a deadlock")
    t = time.perf_counter()
    plan, nv = _routing(cfg, topo, dist, link_latency)
    share.adopt_attrs(plan.tables)         # one copy per node of the routing tables
    alg = cfg["routing"]["algorithm"]
    notes = []
    if plan.scheme != "hop" and topo.n_routers > CDG_AUTO_MAX_ROUTERS:
        notes.append(f"note: the static deadlock check of the '{plan.scheme}' VC scheme is skipped "
                     f"above {CDG_AUTO_MAX_ROUTERS} routers ({topo.n_routers} here); "
                     "'pdes check' runs it on demand")
    if plan.scheme != "hop" and topo.n_routers <= CDG_AUTO_MAX_ROUTERS:
        from models.routing.cdg import check
        res = check(topo, dist, plan, nv)
        if not res["ok"]:
            raise ParameterError(f"routing.vc_scheme: routing '{alg}' with the '{plan.scheme}' "
                                 f"VC scheme can deadlock on this topology: {res['reason']}")
    timings["tables_s"] = time.perf_counter() - t
    # VC classes (000 Sec. IV-D hop index, or an algorithm's own classes): with more VCs than
    # classes each class owns nv // classes VCs and VC allocation picks a free one
    if nv > MAX_VCS:   # given, or the minimum the routing needs (num_vcs = 0)
        raise ParameterError(f"router.num_vcs: at most {MAX_VCS} (got {nv})")
    link_caps, ep_cap = vc_capacities(r, link_latency, nv)
    radix = int((topo.degree + topo.endpoints).max())
    if radix * nv > MAX_VCS_PER_ROUTER:
        raise ParameterError(
            f"router.num_vcs: {radix} ports x {nv} VCs per router exceeds the engine's "
            f"{MAX_VCS_PER_ROUTER} input VCs per router")

    t = time.perf_counter()
    tsec = dict(cfg["traffic"])
    pattern = tsec.pop("pattern")
    tsec.pop("load")
    traffic = TRAFFIC.get(pattern).func(topo, cfg["measure"]["seed"], **tsec)
    share.adopt_attrs(traffic)             # one copy per node of the traffic tables
    timings["traffic_s"] = time.perf_counter() - t
    traffic_kind(traffic.kind)
    if traffic.active.sum() == 0:
        raise ParameterError(f"traffic.pattern: '{pattern}' leaves no endpoint active")

    rp = RouterParams(
        num_vcs=nv, vc_flits=int(max(link_caps.max(initial=0), ep_cap)),
        output_flits=r["output_buffer_flits"],
        packet_size=r["packet_size"], credit_delay=r["credit_delay"], timing=kernel_timing(r),
        speedup=max(1, int(math.floor(r["internal_speedup"]))),
        endpoint_latency=r["endpoint_latency"], link_vc_flits=link_caps, endpoint_vc_flits=ep_cap,
        private_flits=private_vc_flits(r))
    prep = Prepared(cfg=cfg, topo=topo, link_latency=link_latency, cable_m=cable_m, dist=dist,
                    plan=plan, traffic=traffic, rp=rp, timings=timings, notes=notes, share=share)
    share.adopt_attrs(kernel_globals(prep))    # the kernel's copies in its dtypes, once per node
    return prep


def buffers_fixed(r: dict) -> bool:
    """Whether the ``[router]`` section ``r`` fixes the buffers (else they are automatic)."""
    return bool(r["buffer_flits"] or r["vc_buffer_flits"])


def vc_capacities(r: dict, link_latency, nv: int) -> tuple[np.ndarray, int]:
    """(flits per VC of the input ports of every link, of the endpoint ports).

    ``router.vc_buffer_flits`` gives every VC that depth, ``router.buffer_flits`` every
    port that buffer split over its ``nv`` VCs (both given: they must agree); with
    neither (both 0) every port's VCs cover the port's own credit round trip and hold a
    queue of ``m = max(packet_size, MIN_AUTO_VC_FLITS)`` flits beyond it:
    ``max(m, 2 * latency + slot_round_trip) + m`` with the link's latency, or the endpoint
    channel's for the ports endpoints inject into.
    """
    lat = np.asarray(link_latency, dtype=np.int64)
    bf, vbf, pkt = r["buffer_flits"], r["vc_buffer_flits"], r["packet_size"]
    if bf and vbf and bf // nv != vbf:
        raise ParameterError(
            f"router.vc_buffer_flits: {vbf} flits per VC, but router.buffer_flits = {bf} over {nv} "
            f"VCs gives {bf // nv} per VC; give one of them (or make buffer_flits = {vbf * nv})")
    if r["buffer_policy"] == "shared":
        return _shared_capacities(r, lat, nv)
    if r["private_vc_flits"]:
        raise ParameterError(
            f"router.private_vc_flits: only with router.buffer_policy = \"shared\" (every VC "
            f"of a private buffer owns all its flits), got {r['private_vc_flits']}")
    if vbf or bf:
        key, cap = ("vc_buffer_flits", vbf) if vbf else ("buffer_flits", bf // nv)
        what = (f"{vbf} flits per VC" if vbf else
                f"{bf} flits over {nv} VCs gives {cap} per VC")
        if cap < pkt:
            raise ParameterError(f"router.{key}: {what}, smaller than a packet ({pkt} flits)")
        if cap > MAX_VC_FLITS:
            raise ParameterError(f"router.{key}: {what}, more than the engine's {MAX_VC_FLITS}")
        return np.full(lat.size, cap, dtype=np.int64), int(cap)
    fixed = slot_round_trip(r)
    floor = max(pkt, MIN_AUTO_VC_FLITS)
    # the round trip, and room for a queue beyond it: adaptive routing reads congestion as
    # the credits in use beyond the round trip (models.routing.paths.port_backlog), which a
    # VC of exactly one round trip could never show
    caps = np.maximum(2 * lat + fixed, floor) + floor
    ep = max(2 * r["endpoint_latency"] + fixed, floor) + floor
    top = int(max(caps.max(initial=0), ep))
    if top > MAX_VC_FLITS:
        raise ParameterError(
            f"router.buffer_flits: the automatic buffers would give {top} flits per VC to cover "
            f"the longest credit round trip ({int(lat.max(initial=0))}-cycle links), more than the "
            f"engine's {MAX_VC_FLITS}; set router.vc_buffer_flits or router.buffer_flits")
    return caps, int(ep)


def private_vc_flits(r: dict) -> int:
    """Flits each VC of a shared buffer keeps for itself (``router.private_vc_flits``, 0 =
    the packet size); 0 with the private policy."""
    if r["buffer_policy"] != "shared":
        return 0
    return int(r["private_vc_flits"] or r["packet_size"])


def _shared_capacities(r: dict, lat: np.ndarray, nv: int) -> tuple[np.ndarray, int]:
    """:func:`vc_capacities` with ``router.buffer_policy = "shared"``: each port holds
    ``T`` flits (``buffer_flits``; ``num_vcs x vc_buffer_flits``; automatic: ``num_vcs`` x
    the automatic depth of a private VC of that port), each VC owns ``private_vc_flits``
    of them and may take the ``T - num_vcs x private_vc_flits`` shared ones, so one VC
    holds at most ``T - (num_vcs - 1) x private_vc_flits`` (its ring's capacity)."""
    bf, vbf, pkt = r["buffer_flits"], r["vc_buffer_flits"], r["packet_size"]
    priv = private_vc_flits(r)
    if priv < pkt:
        raise ParameterError(
            f"router.private_vc_flits: {priv} flits, smaller than a packet ({pkt} flits): a VC "
            "is allocated only with room for a whole packet (virtual cut-through), which it "
            "must always get from its private flits while the shared ones are taken")
    if bf or vbf:
        key = "buffer_flits" if bf else "vc_buffer_flits"
        total = bf if bf else nv * vbf
        totals = np.full(lat.size, total, dtype=np.int64)
        ep_total = total
    else:
        key = "buffer_flits"
        auto = dict(r, buffer_policy="private", private_vc_flits=0)
        caps, ep = vc_capacities(auto, lat, nv)
        totals, ep_total = nv * caps, nv * ep
    least = int(min(totals.min(initial=ep_total), ep_total))
    if nv * priv > least:
        raise ParameterError(
            f"router.private_vc_flits: {nv} VCs x {priv} private flits = {nv * priv}, more than "
            f"the {least} flits of a port (router.{key})")
    caps = totals - (nv - 1) * priv
    ep_cap = int(ep_total - (nv - 1) * priv)
    top = int(max(caps.max(initial=0), ep_cap))
    if top > MAX_VC_FLITS:
        raise ParameterError(
            f"router.{key}: a VC of a shared buffer may hold {top} flits (the port's less the "
            f"other VCs' private ones), more than the engine's {MAX_VC_FLITS}")
    return caps, ep_cap


def buffer_depths(prep) -> tuple[int, int]:
    """(smallest, largest) flits per VC of any input port of the run."""
    rp = prep.rp
    cap = rp.link_capacity(prep.topo.n_links)
    e = rp.endpoint_capacity()
    return int(min(cap.min(initial=e), e)), int(max(cap.max(initial=e), e))


def buffer_text(prep) -> str:
    """The input buffers in words: flits per VC (private), or per port and how they are
    shared (``router.buffer_policy = "shared"``)."""
    lo, hi = buffer_depths(prep)
    rp = prep.rp
    span = f"{lo}" + (f" to {hi}" if hi > lo else "")
    if not rp.private_flits:
        return f"{span} flits per VC"
    tlo, thi = rp.port_flits(lo), rp.port_flits(hi)
    ports = f"{tlo}" + (f" to {thi}" if thi > tlo else "")
    return (f"shared, {ports} flits per port: {rp.private_flits} private per VC, up to {span} "
            "per VC")


TOPOLOGY_SHARED = ("degree", "port_offsets", "port_neighbor", "port_link", "port_out_channel",
                   "channel_port", "port_peer", "endpoint_offsets", "endpoint_router")
"""The topology's derived arrays (cached properties) built once per node with it."""


def _network(cfg: dict, share):
    """Topology, link latencies, cable lengths, distances and their build times.

    Each is built once per node (the node's rank 0 builds the topology and the
    layout, the node's ranks split the distances) and shared by the ranks of
    the node (:class:`pdes.shared.NodeShare`).
    """
    from models.topology import build
    timings = {}
    t = time.perf_counter()
    name, params = C.topology_params(cfg)
    topo = share.object(lambda: build(name, params), touch=TOPOLOGY_SHARED)
    timings["build_s"] = time.perf_counter() - t
    if topo.n_endpoints < 2:
        raise ParameterError("topology: the network needs at least 2 endpoints to simulate")

    t = time.perf_counter()
    link_latency, cable_m = share.build(lambda: link_latencies(cfg, topo))
    timings["layout_s"] = time.perf_counter() - t

    t = time.perf_counter()
    check_memory(cfg, "topology", topo.n_routers ** 2,
                 f"its all-pairs distance table ({topo.n_routers:,} x {topo.n_routers:,} bytes)")
    dist = distances(topo, share)
    timings["distances_s"] = time.perf_counter() - t
    return topo, link_latency, cable_m, dist, timings


def memory_limit(cfg: dict) -> float:
    """Bytes a node may use: ``run.max_memory_gb``, or the memory available on this machine."""
    gb = cfg["run"]["max_memory_gb"]
    if gb > 0:
        return gb * 1e9
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024.0
    except OSError:                         # pragma: no cover - not Linux
        pass
    try:                                    # pragma: no cover
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))
    except (ValueError, OSError, AttributeError):   # pragma: no cover
        return math.inf


def check_memory(cfg: dict, key: str, nbytes: float, what: str) -> None:
    """Refuse, before allocating it, a table that cannot fit in the node's memory limit."""
    limit = memory_limit(cfg)
    if nbytes > limit:
        source = ("run.max_memory_gb" if cfg["run"]["max_memory_gb"] > 0
                  else "the memory available on this machine")
        raise ParameterError(f"{key}: {what} needs {nbytes / 1e9:.3g} GB, more than "
                             f"{limit / 1e9:.3g} GB ({source})")


def buffer_note(prep) -> str:
    """A warning when buffers fixed by the user leave a VC smaller than its link's credit
    round trip.

    A flit's buffer slot comes back to the sender ``2 * latency`` plus
    :func:`pdes.timing.slot_round_trip` cycles after it was sent at the earliest,
    so one VC carries at most ``capacity / round trip`` flits per cycle on that
    link.  Empty string when every link's round trip is covered, as it always is
    with the automatic buffers.
    """
    r = prep.cfg["router"]
    lat = np.asarray(prep.link_latency, dtype=np.int64)
    if lat.size == 0 or not buffers_fixed(r):
        return ""
    rtt = 2 * lat + slot_round_trip(r)
    vc = prep.rp.link_capacity(lat.size)
    slow = rtt > vc
    if not slow.any():
        return ""
    nv = prep.rp.num_vcs
    share = (f"of {100 * float(slow.mean()):.0f}% of the links (longest {int(rtt.max())} cycles): "
             "one VC cannot carry a flit every cycle there")
    auto = "; router.buffer_flits = 0 and vc_buffer_flits = 0 size every port for its own link"
    if r["vc_buffer_flits"] and not prep.rp.private_flits:
        return (f"note: router.vc_buffer_flits = {r['vc_buffer_flits']} flits per VC ({nv} VCs) "
                f"is less than the credit round trip {share} (every link at full rate needs "
                f"vc_buffer_flits >= {int(rtt.max())}{auto})")
    if prep.rp.private_flits:
        return (f"note: the shared buffer of {int(prep.rp.port_flits(vc.max()))} flits per port "
                f"lets one VC hold at most {int(vc.max())} flits ({nv} VCs), less than the credit "
                f"round trip {share}{auto}")
    return (f"note: router.buffer_flits = {r['buffer_flits']} gives {int(vc.max())} flits per VC "
            f"({nv} VCs), less than the credit round trip {share} (every link at full rate needs "
            f"buffer_flits >= {nv * int(rtt.max())}{auto})")


def _arrays_nbytes(obj, share=None) -> int:
    """Bytes of the numpy arrays held by an object's attributes (or a dict's values), but for
    those in node-shared memory (``share``, a :class:`pdes.shared.NodeShare`)."""
    items = obj.values() if isinstance(obj, dict) else vars(obj).values()
    arrays = []
    for a in items:
        arrays.extend(a if isinstance(a, tuple) else (a,))
    seen = {}
    for a in arrays:
        if isinstance(a, np.ndarray) and not (share is not None and share.is_shared(a)):
            seen[id(a)] = a.nbytes
    return int(sum(seen.values()))


def memory_estimate(prep: Prepared, nranks: int = 1, ranks_per_node: int = 1) -> dict:
    """Estimated bytes of a run: per rank (kernel state, private tables, histograms) and per
    node (the node-shared tables, :mod:`pdes.shared`), at start and with every buffer full.

    The kernel state is sized for the rank's share of the ports, with the
    partition's allowed imbalance.  The buffers (every input VC, output queue and
    credit FIFO at its port's capacity, and the flit records behind them) become
    resident only as flits pass: the rings are allocated for every slot but their
    pages are mapped on first use, and the record pool grows with the records in use.
    They are counted apart (``buffers``, ``per_node_full``: every buffer full at once).
    """
    rp, topo = prep.rp, prep.topo
    share = min(1.0, prep.cfg["run"]["max_imbalance"] / nranks)
    ports = (2 * topo.n_links + topo.n_endpoints) * share
    eps = topo.n_endpoints * share
    nv, oq = rp.num_vcs, rp.output_flits
    ecap = rp.endpoint_capacity()
    # input VC slots (every port at its capacity); credit FIFOs: one per sender and VC, as
    # deep as the input VC they count for (ejection ports' and endpoints' included)
    slots = nv * (2 * float(rp.link_capacity(topo.n_links).sum()) + topo.n_endpoints * ecap) * share
    credit_slots = slots + 2 * nv * eps * ecap
    # records: every port full (a shared buffer holds fewer flits than its VCs' rings)
    held = (2 * float(rp.port_flits(rp.link_capacity(topo.n_links)).sum())
            + topo.n_endpoints * rp.port_flits(ecap)) * share
    records = held + ports * oq
    # resident at start: per-VC, per-port and per-endpoint state
    state = ports * nv * 64 + ports * 96 + eps * (160 + 24 * nv)
    # resident as buffers fill: records (two 32-byte halves and a free-stack entry), ring
    # slots (record index and ready cycle; credit arrival cycles), output queue slots
    buffers = records * 68 + slots * 8 + credit_slots * 4 + ports * oq * 8
    hist = 3 * (prep.cfg["measure"]["latency_hist_max"] + HIST_SUB * HIST_OCTAVES) * 8 + 64 * 8
    sh = prep.share
    tables = _arrays_nbytes(prep.plan.tables, sh) + _arrays_nbytes(prep.traffic, sh)
    lat = sum(_arrays_nbytes({"a": a}, sh) for a in (prep.link_latency, prep.cable_m) if a is not None)
    network = _arrays_nbytes(topo, sh) + lat + 2 * topo.n_links * (4 * 2)   # + per-channel maps
    nh_kind, nh_bytes = next_hop_estimate(prep, nranks)
    if prep.next_hops == "off":
        nh_kind, nh_bytes = "none", 0
    dist = int(prep.dist.nbytes)
    shared = sh is not None and sh.is_shared(prep.dist)
    node = sh.node_bytes if sh is not None else 0        # the node-shared tables, once per node
    per_rank = int(state + hist + tables + network + nh_bytes) + (0 if shared else dist)
    per_node = ranks_per_node * per_rank + node
    return {"per_rank": per_rank, "state": int(state), "buffers": int(buffers), "histograms": hist,
            "tables": tables, "next_hops": nh_bytes, "next_hops_kind": nh_kind,
            "topology": int(network), "distances": dist,
            "distances_shared": shared, "shared": int(node), "per_node": per_node,
            "per_node_full": per_node + ranks_per_node * int(buffers),
            "ranks_per_node": ranks_per_node}


def check_run_memory(prep: Prepared, nranks: int = 1, ranks_per_node: int = 1) -> dict:
    """The run's memory estimate; refuse the run when a node's share exceeds the limit."""
    est = memory_estimate(prep, nranks, ranks_per_node)
    limit = memory_limit(prep.cfg)
    if est["per_node"] > limit and est["next_hops"] and \
            est["per_node"] - ranks_per_node * est["next_hops"] <= limit:
        # the run fits without the next-hop table: minimal routing scans the distance rows
        prep.next_hops = "off"
        prep.notes.append(f"next hops: no table (its {size_text(est['next_hops'])} per rank "
                          f"would not fit in {size_text(limit)}); minimal routing scans the "
                          "distance rows")
        est = memory_estimate(prep, nranks, ranks_per_node)
    if est["per_node"] > limit:
        source = ("run.max_memory_gb" if prep.cfg["run"]["max_memory_gb"] > 0
                  else "the memory available on this machine")
        raise ParameterError(
            f"run.max_memory_gb: the run needs an estimated {size_text(est['per_node'])} per node at start "
            f"({describe_memory(est)}), more than {size_text(limit)} ({source})")
    return est


def size_text(nbytes: float) -> str:
    """Bytes as '12.3 MB' / '1.25 GB'."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{int(nbytes)} B"


def describe_memory(est: dict) -> str:
    return (f"{size_text(est['per_rank'])} per rank: kernel state {size_text(est['state'])} "
            f"(+ up to {size_text(est['buffers'])} as buffers fill), "
            f"tables {size_text(est['tables'])}, "
            + (f"next hops {size_text(est['next_hops'])} ({est['next_hops_kind']}), "
               if est["next_hops"] else "")
            + f"topology {size_text(est['topology'])}, histograms "
            f"{size_text(est['histograms'])}" + ("" if est["distances_shared"] else
                                                   f", distances {size_text(est['distances'])}")
            + (f"; node-shared tables {size_text(est['shared'])} per node"
               + (" (distances included)" if est["distances_shared"] else "") if est["shared"] else "")
            + f"; {est['ranks_per_node']} rank(s) per node")


def epoch_of(prep) -> int:
    """Cycles between the routing's occupancy snapshots, 0 if it reads none."""
    return int(prep.plan.snapshot_every)


def sync_period(prep) -> int:
    """Every window must divide this: the sample period and the routing epoch."""
    sp = prep.cfg["measure"]["sample_period"]
    ep = epoch_of(prep)
    return math.gcd(sp, ep) if ep else sp


def lookahead_of(topo, owner, link_latency) -> int:
    """Minimum latency over links whose ends are owned by different parts (0 if none)."""
    owner = np.asarray(owner)
    cut = owner[topo.links[:, 0]] != owner[topo.links[:, 1]]
    if not np.any(cut):
        return 0
    return int(np.asarray(link_latency)[cut].min())


def window_for(lookahead: int, sync: int) -> int:
    """Longest window: the lookahead, but no longer than the sync period.

    Windows also end at every multiple of ``sync`` (sample boundaries and
    routing epochs), so a window is ``min(lookahead, cycles to the next
    multiple of sync)``; with no cut link (one part) it is the sync period.
    """
    if lookahead <= 0 or lookahead >= sync:
        return sync
    return lookahead


def kernel_globals(prep: Prepared) -> dict:
    """The global tables every part's kernel reads (endpoint and port maps in the kernel's
    dtypes), made once per :class:`Prepared` (:func:`prepare` shares them on the node)."""
    if not prep.kglobals:
        topo = prep.topo
        prep.kglobals.update(
            ep_first=topo.endpoint_offsets.astype(np.int64, copy=False),
            ep_router=topo.endpoint_router.astype(np.int32, copy=False),
            g_off=topo.port_offsets.astype(np.int32, copy=False),
            g_nbr=topo.port_neighbor.astype(np.int32, copy=False),
            g_chan=topo.port_out_channel.astype(np.int32, copy=False))
    return prep.kglobals


def next_hop_table_of(prep: Prepared) -> bool:
    """Whether the parts build a minimal next-hop table (:meth:`PartState.use_next_hop_table`):
    for routing kernels that read one, with undirected links (a symmetric distance table),
    unless the memory check left it out (``prep.next_hops == "off"``)."""
    kernel = rk.kernel_of(prep.cfg["routing"]["algorithm"], prep.plan)
    if not kernel.next_hop_masks or prep.next_hops == "off":
        return False
    if prep.dist_symmetric is None:
        from models.metrics import is_symmetric
        prep.dist_symmetric = is_symmetric(prep.dist)    # in blocks: no R x R copy
    return prep.dist_symmetric


def next_hop_estimate(prep: Prepared, nranks: int = 1) -> tuple[str, int]:
    """(kind, bytes per rank) of the next-hop table a run would build, before it is built:
    its entries (and rank words) for the rank's share of the routers; the CSR lists of
    destinations with several minimal ports come on top (path multiplicity: measured when
    the table is built and reported in ``/run``)."""
    if not next_hop_table_of(prep):
        return "none", 0
    from pdes.kernels import nexthop as NH
    topo = prep.topo
    kind, entry = NH.table_kind(int(topo.degree.max()) if topo.n_routers else 0)
    share = min(1.0, prep.cfg["run"]["max_imbalance"] / nranks)
    n_local = int(math.ceil(topo.n_routers * share))
    name = {NH.NH_NONE: "none", NH.NH_MASKS: "masks"}.get(kind) or f"ports ({np.dtype(entry).name})"
    return name, NH.fixed_bytes(kind, entry, n_local, topo.n_routers)


def make_parts(prep: Prepared, owner, parts_here, window: int) -> list[PartState]:
    cfg = prep.cfg
    topo = prep.topo
    out = []
    hist_max = cfg["measure"]["latency_hist_max"]
    plan = prep.plan
    alg = cfg["routing"]["algorithm"]
    kernel = rk.kernel_of(alg, plan)
    ctx, ap = rk.pack(alg, plan, cfg)
    g = kernel_globals(prep)
    ep_first, ep_router, g_off, g_nbr, g_chan = (g[k] for k in ("ep_first", "ep_router", "g_off",
                                                                "g_nbr", "g_chan"))
    snap = np.zeros(2 * topo.n_links if plan.snapshot_every else 1, dtype=np.int32)  # shared here
    tr = prep.traffic
    finite = tr.kind == "messages"
    if finite:   # message tables; each entry is only written by its source's / destination's part
        msgs = dict(msg_off=tr.msg_off.astype(np.int64), msg_dst=tr.msg_dst.astype(np.int32),
                    msg_pkts=tr.msg_pkts.astype(np.int32), msg_left=tr.msg_pkts.astype(np.int32),
                    msg_recv=np.zeros(tr.msg_dst.size, np.int32))
    else:
        z = np.zeros(0, np.int32)
        msgs = dict(msg_off=np.zeros(topo.n_endpoints + 1, np.int64), msg_dst=z, msg_pkts=z,
                    msg_left=z, msg_recv=z)
    # next-hop tables, for kernels that read them, built from the distances (undirected links)
    nh = next_hop_table_of(prep)
    for q in parts_here:
        ps = PartState(topo, prep.link_latency, owner, q, prep.rp, ep_active=prep.traffic.active,
                       window=window, hist_max=hist_max)
        ps.bind_globals(ep_first=ep_first, ep_router=ep_router, dist=prep.dist, traffic=prep.traffic,
                        g_off=g_off, g_nbr=g_nbr, g_chan=g_chan, snap=snap, messages=msgs)
        ps.bind_routing(kernel, ctx, ap)
        prm = ps.prm
        prm[prm_slots.PR_SEED] = cfg["measure"]["seed"]
        prm[prm_slots.PR_THR] = 0 if finite else threshold53(cfg["traffic"]["load"] / prep.rp.packet_size)
        prm[prm_slots.PR_FINITE] = int(finite)
        prm[prm_slots.PR_SCHED] = int(finite and tr.schedule == "staggered")
        prm[prm_slots.PR_TRAFFIC] = traffic_kind(prep.traffic.kind)
        prm[prm_slots.PR_FRAC_THR] = threshold53(prep.traffic.frac)
        prm[prm_slots.PR_NCLS] = plan.vcs_needed
        prm[prm_slots.PR_MONO] = int(bool(kernel.monotone(plan)))
        prm[prm_slots.PR_E] = topo.n_endpoints
        if nh:
            ps.use_next_hop_table(prep.dist, max_degree=int(topo.degree.max()))
        out.append(ps)
    return out


@dataclass
class LoopState:
    """The window loop's own state at a sample boundary (saved in a checkpoint).

    ``prev_rate`` is the accepted rate of the last sample (warm-up convergence),
    ``series`` the rows of ``/series`` so far; the wall-clock parts only feed
    ``/run``.
    """

    cycle: int = 0
    phase: str = "warmup"
    m0: int = INT32_MAX
    m1: int = INT32_MAX
    prev_rate: float | None = None
    series: list = field(default_factory=list)
    saturated: bool = False
    reason: str = ""
    phase_wall: dict = field(default_factory=lambda: {"warmup": 0.0, "measure": 0.0, "drain": 0.0})
    kernel_s: float = 0.0
    exchange_s: float = 0.0


@dataclass
class CheckpointPlan:
    """When and where the engine writes checkpoints (see docs/parallel.md).

    At a sample boundary a checkpoint is written to ``path`` when the cycle is
    a multiple of ``every`` (> 0, a multiple of the sample period), and
    written followed by :class:`CheckpointStop` when ``requested()`` returns a
    signal number on any rank or the cycle reached ``stop_at`` (> 0).
    ``on_write(cycle)`` is called after each checkpoint.
    """

    path: str
    every: int = 0
    stop_at: int = 0
    requested: object = lambda: 0
    on_write: object = None


class CheckpointStop(Exception):
    """The run stopped after writing a checkpoint (a signal, or ``stop_at``)."""

    def __init__(self, cycle: int, path: str, signum: int):
        super().__init__(f"stopped at cycle {cycle} after writing the checkpoint {path}")
        self.cycle, self.path, self.signum = cycle, path, signum


class Engine:
    """The conservative window loop over the parts of this process."""

    def __init__(self, prep: Prepared, group, window: int, lookahead: int, progress=None,
                 checkpoint: CheckpointPlan | None = None):
        self.prep = prep
        self.group = group
        self.parts = group.parts
        self.window = window
        self.lookahead = lookahead
        self.progress = progress  # callable(str) or None
        self.checkpoint = checkpoint

    # ---------------------------------------------------------------- helpers
    def _set_window(self, m0, m1):
        for p in self.parts:
            p.prm[prm_slots.PR_M0] = m0
            p.prm[prm_slots.PR_M1] = m1

    def _stats(self):
        st = sum(p.arrays["st"] for p in self.parts)
        mx = np.max(np.stack([p.arrays["st"] for p in self.parts]), axis=0)
        total = self.group.sum(st.copy())
        maxed = self.group.max(mx.copy())
        for i in STAT_MAX:
            total[i] = maxed[i]
        return total

    def _sample(self):
        smp = sum(p.arrays["smp"] for p in self.parts).copy()
        for p in self.parts:
            p.arrays["smp"][:] = 0
        return self.group.sum(smp)

    def _raise_status(self, status, T):
        algo = self.prep.cfg["routing"]["algorithm"]
        if status == ERR_VC:
            raise SimulationError(f"routing '{algo}' asked for a VC >= num_vcs near cycle {T}")
        if status == ERR_ROUTE:
            raise SimulationError(f"routing '{algo}' found no output port near cycle {T}")
        if status == ERR_OUTBOX:
            raise SimulationError("outbox overflow: window longer than the lookahead (engine bug)")
        if status == ERR_VC_ORDER:
            raise SimulationError(f"routing '{algo}' lowered the VC class along a path near cycle "
                                  f"{T} (its VC scheme would not be deadlock-free)")
        if status == ERR_CREDIT:
            raise SimulationError("credit FIFO overflow: more credits than buffer slots (engine bug)")
        raise SimulationError(f"kernel status {status}")

    # ------------------------------------------------------------------- run
    def initial_state(self) -> LoopState:
        """The loop state at cycle 0: warm-up (a finite exchange: measured from cycle 0)."""
        if self.prep.traffic.kind == "messages":
            return LoopState(phase="exchange", m0=0,
                             phase_wall={"warmup": 0.0, "measure": 0.0, "drain": 0.0, "exchange": 0.0})
        return LoopState()

    def run(self, resume: LoopState | None = None) -> dict:
        """Run the window loop to the end of the measurement; from ``resume`` (the loop state
        of a checkpoint, its parts restored by :func:`pdes.checkpoint.restore`) if given."""
        cfg = self.prep.cfg
        m = cfg["measure"]
        SP = m["sample_period"]
        W = self.window
        sync = sync_period(self.prep)
        assert SP % sync == 0 and W <= sync
        s = resume if resume is not None else self.initial_state()
        assert s.cycle % SP == 0
        T, phase, m0, m1 = s.cycle, s.phase, s.m0, s.m1
        prev_rate, series, saturated, reason = s.prev_rate, list(s.series), s.saturated, s.reason
        phase_wall = dict(s.phase_wall)
        kernel_s, exchange_s = s.kernel_s, s.exchange_s
        self._set_window(m0, m1)
        wall0 = time.perf_counter()
        last_print = wall0
        t_phase = wall0
        n_active = self.prep.active_endpoints
        max_cycles = cfg["run"]["max_cycles"]
        epoch = epoch_of(self.prep)
        assert not epoch or epoch % sync == 0
        finite = self.prep.traffic.kind == "messages"
        if finite:   # a finite exchange: every packet is measured, the run ends when all arrived
            total_flits = int(self.prep.traffic.msg_pkts.sum()) * self.prep.rp.packet_size
        while True:
            t0 = time.perf_counter()
            step = min(W, sync - T % sync)      # windows end at every multiple of sync
            for p in self.parts:
                status = p.advance(T, T + step)
                if status != 0:
                    self._raise_status(status, T)
            t1 = time.perf_counter()
            self.group.exchange()
            t2 = time.perf_counter()
            kernel_s += t1 - t0
            exchange_s += t2 - t1
            T += step
            if epoch and T % epoch == 0:
                self._snapshot(T)
            if T % SP:
                continue
            # ----------------------------------------------- sample boundary
            smp = self._sample()
            st = self._stats()
            series.append((T, int(smp[C_DELIVERED]), int(smp[C_INJECTED]), int(smp[C_CREATED]),
                           int(smp[C_MOVES]), int(st[S_INFLIGHT])))
            rate = smp[C_DELIVERED] / (SP * n_active)
            now = time.perf_counter()
            if phase == "warmup" and T >= m["warmup_cycles"]:
                done = m["warmup"] == "fixed"
                if not done and prev_rate is not None:
                    done = abs(rate - prev_rate) <= m["warmup_tolerance"] * max(prev_rate, 1e-12)
                if not done and T >= m["warmup_cycles"] + m["max_warmup_cycles"]:
                    done = True
                if done:
                    phase_wall["warmup"] += now - t_phase
                    t_phase = now
                    phase = "measure"
                    m0, m1 = T, T + m["measure_cycles"]
                    self._set_window(m0, m1)
            elif phase == "measure" and T >= m1:
                phase_wall["measure"] += now - t_phase
                t_phase = now
                phase = "drain"
            prev_rate = rate
            finished = False
            if finite and int(st[S_DELIVERED_FLITS]) == total_flits:
                finished = True
            if phase == "drain":
                outstanding = int(st[S_CREATED_MEAS] - st[S_DELIVERED_MEAS])
                if outstanding == 0:
                    finished = True
                elif T - m1 >= m["drain_cycles"]:
                    saturated = True
                    reason = (f"{outstanding} measured packets not delivered within "
                              f"drain_cycles = {m['drain_cycles']} after the window")
                    finished = True
            if st[S_INFLIGHT] > 0 and T - 1 - st[S_LAST_MOVE] >= m["watchdog_cycles"]:
                self._deadlock(T, st)
            if max_cycles and T >= max_cycles and not finished:
                saturated = True
                reason = reason or f"run.max_cycles = {max_cycles} reached in phase {phase}"
                finished = True
            if self.progress and (now - last_print > 1.0 or finished):
                last_print = now
                self.progress(f"cycle {T:>8d}  {phase:<7s}  accepted {rate:.4f} flits/cycle/endpoint"
                              f"  in flight {int(st[S_INFLIGHT])}  {now - wall0:6.1f}s")
            if finished:
                break
            if self.checkpoint is not None:
                wall = {**phase_wall, phase: phase_wall[phase] + now - t_phase}
                self._checkpoint(T, lambda: LoopState(T, phase, m0, m1, prev_rate, series, saturated,
                                                      reason, wall, kernel_s, exchange_s))
        now = time.perf_counter()
        phase_wall[phase] += now - t_phase
        res = self._results(T, m0, m1, series, saturated, reason, phase_wall,
                            kernel_s, exchange_s)
        if resume is not None:
            res["restarted_from_cycle"] = resume.cycle
        return res

    def _checkpoint(self, T: int, state) -> None:
        """At sample boundary ``T``: write a checkpoint of ``state()`` when one is due or asked
        for (a signal on any rank, ``stop_at`` reached), and stop after it when asked
        (:class:`CheckpointStop`)."""
        plan = self.checkpoint
        signum = int(self.group.max(np.array([plan.requested()], np.int64))[0])
        stop = signum > 0 or (plan.stop_at > 0 and T >= plan.stop_at)
        if not stop and not (plan.every and T % plan.every == 0):
            return
        from pdes.checkpoint import save
        save(self, state(), plan.path)
        if plan.on_write is not None:
            plan.on_write(T)
        if stop:
            raise CheckpointStop(T, plan.path, signum)

    def _snapshot(self, T):
        """Network-wide output-port occupancy at the start of cycle ``T`` (``RoutingPlan.snapshot_every``)."""
        snap = self.parts[0].arrays["snap"]
        local = np.zeros_like(snap)
        for p in self.parts:
            p.port_occupancy(T - 1, local)
        snap[:] = self.group.sum(local)

    def _deadlock(self, T, st):
        a_cnt = [p.arrays["ib_cnt"] for p in self.parts]
        blocked = []
        for p, cnt in zip(self.parts, a_cnt):
            nz = np.nonzero(cnt)[0][:8]
            for ivc in nz:
                P = ivc // p.nv
                r = int(p.router_gid[p.arrays["port_router"][P]])
                blocked.append(f"router {r} port {int(P - p.arrays['port_off'][p.arrays['port_router'][P]])}"
                               f" vc {int(ivc % p.nv)}")
        algo = self.prep.cfg["routing"]["algorithm"]
        raise SimulationError(
            f"deadlock: no flit moved for {self.prep.cfg['measure']['watchdog_cycles']} cycles "
            f"before cycle {T} with {int(st[S_INFLIGHT])} flits in flight (routing '{algo}', "
            f"num_vcs {self.prep.rp.num_vcs}); blocked: {', '.join(blocked[:8])}")

    # --------------------------------------------------------------- results
    def _gather(self, name, size, index_of):
        out = np.zeros(size, dtype=np.int64)
        for p in self.parts:
            idx, vals = index_of(p)
            out[idx] += vals
        return self.group.sum(out)

    def _results(self, T, m0, m1, series, saturated, reason, phase_wall, kernel_s, exchange_s):
        prep = self.prep
        topo = prep.topo
        P = prep.rp.packet_size
        st = self._stats()
        hist_p = self.group.sum(sum(p.arrays["hist_plat"] for p in self.parts).copy())
        hist_n = self.group.sum(sum(p.arrays["hist_nlat"] for p in self.parts).copy())
        hist_h = self.group.sum(sum(p.arrays["hist_hops"] for p in self.parts).copy())
        link = self._gather("link", 2 * topo.n_links,
                            lambda p: (p.out_channel[p.is_net], p.arrays["link_flits"][p.is_net]))
        ep_inj = self._gather("inj", topo.n_endpoints, lambda p: (p.ep_gid, p.arrays["ep_inj"]))
        ep_del = self._gather("del", topo.n_endpoints, lambda p: (p.ep_gid, p.arrays["ep_del"]))
        held = int(self.group.sum(np.array([sum(p.flits_held() for p in self.parts)], np.int64))[0])
        queued = int(self.group.sum(np.array([sum(p.source_queue_flits() for p in self.parts)],
                                             np.int64))[0])
        created_flits = int(st[S_CREATED_PKTS]) * P
        delivered = int(st[S_DELIVERED_FLITS])
        audit_ok = (created_flits == delivered + queued + held) and (held == int(st[S_INFLIGHT]))
        if not audit_ok:
            raise SimulationError(
                f"conservation audit failed: created {created_flits} flits != delivered {delivered}"
                f" + source queues {queued} + in flight {held} (kernel count {int(st[S_INFLIGHT])})")
        finite = prep.traffic.kind == "messages"
        n_act = prep.active_endpoints
        n_meas = int(st[S_DELIVERED_MEAS])
        if finite:
            # completion time: from cycle 0 (every message posted) to the last delivery
            M = int(st[S_LAST_DELIVERY]) + 1 if delivered else 1
            m0, m1 = 0, M
        else:
            M = (m1 - m0) if m1 < INT32_MAX else 0
        if M == 0:
            raise SimulationError("the run ended before the measurement window started")

        edges = hist_edges(prep.cfg["measure"]["latency_hist_max"])

        def pct(hist, q):
            tot = hist.sum()
            if tot == 0:
                return -1
            return int(edges[np.searchsorted(np.cumsum(hist), math.ceil(q * tot))])

        offered = int(st[S_CREATED_WIN_FLITS]) / (M * n_act)
        accepted = int(st[S_DELIVERED_WIN]) / (M * n_act)
        tol = prep.cfg["measure"]["saturation_tolerance"]
        if not saturated and accepted < offered * (1.0 - tol):
            saturated = True
            reason = (f"accepted load {accepted:.4f} is more than {100 * tol:g}% below the offered "
                      f"load {offered:.4f}")
        if not saturated and not finite:
            grew = backlog_growth(series, m0, m1, P)
            limit = prep.cfg["measure"]["backlog_tolerance"] * int(st[S_CREATED_WIN_FLITS])
            if grew is not None and grew > limit and grew > n_act:
                saturated = True
                reason = (f"source queues grew by {grew:.0f} flits over the window (least-squares "
                          f"trend), more than {100 * prep.cfg['measure']['backlog_tolerance']:g}% "
                          f"of the {int(st[S_CREATED_WIN_FLITS])} flits offered")
        summary = {}
        if finite:
            hist_m = self.group.sum(sum(p.arrays["hist_msg"] for p in self.parts).copy())
            n_msg = int(prep.traffic.msg_pkts.size)
            summary.update({
                "workload": prep.traffic.description,
                "completion_cycles": M,
                "messages": n_msg,
                "messages_completed": int(hist_m.sum()),
                "total_flits": created_flits,
                "processes": n_act,
                "effective_throughput": created_flits / (M * n_act),
                "message_latency_mean": float((hist_m * edges).sum() / hist_m.sum())
                if hist_m.sum() else float("nan"),
                "message_latency_p50": pct(hist_m, 0.5),
                "message_latency_p99": pct(hist_m, 0.99),
                "message_latency_max": int(edges[np.nonzero(hist_m)[0].max()]) if hist_m.sum() else -1,
            })
        summary.update({
            "offered_load_config": float(prep.cfg["traffic"]["load"]),
            "offered_load": offered,
            "injected_load": int(st[S_INJECTED_WIN]) / (M * n_act),
            "accepted_load": accepted,
            "measured_packets": n_meas,
            "measured_packets_created": int(st[S_CREATED_MEAS]),
            "packet_latency_mean": st[S_SUM_PLAT] / n_meas if n_meas else float("nan"),
            "packet_latency_p50": pct(hist_p, 0.5),
            "packet_latency_p99": pct(hist_p, 0.99),
            "packet_latency_max": int(st[S_MAX_PLAT]) if n_meas else -1,
            "network_latency_mean": st[S_SUM_NLAT] / n_meas if n_meas else float("nan"),
            "network_latency_p50": pct(hist_n, 0.5),
            "network_latency_p99": pct(hist_n, 0.99),
            "network_latency_max": int(st[S_MAX_NLAT]) if n_meas else -1,
            "hops_mean": st[S_SUM_HOPS] / n_meas if n_meas else float("nan"),
            "saturated": bool(saturated),
            "saturated_reason": reason,
            "cycles": int(T),
            "measure_start": int(m0),
            "measure_end": int(m1),
            "active_endpoints": n_act,
        })
        sums = {k: int(st[i]) for k, i in (
            ("created_packets", S_CREATED_PKTS), ("created_measured", S_CREATED_MEAS),
            ("injected_flits", S_INJECTED_FLITS), ("delivered_flits", S_DELIVERED_FLITS),
            ("delivered_measured", S_DELIVERED_MEAS), ("sum_packet_latency", S_SUM_PLAT),
            ("sum_packet_latency_sq", S_SUM_PLAT_SQ), ("sum_network_latency", S_SUM_NLAT),
            ("sum_hops", S_SUM_HOPS))}
        sums.update(source_queue_flits=queued, in_flight_flits=held)
        return {
            "summary": summary,
            "counters": sums,
            "hist_packet_latency": hist_p,
            "hist_latency_edges": edges,
            "hist_network_latency": hist_n,
            "hist_hops": hist_h,
            "hist_message_latency": hist_m if finite else None,
            "link_flits": link,
            "endpoint_injected": ep_inj,
            "endpoint_delivered": ep_del,
            "series": np.array(series, dtype=np.int64).reshape(-1, 6),
            "timing": {"wall_warmup_s": phase_wall["warmup"], "wall_measure_s": phase_wall["measure"],
                       "wall_drain_s": phase_wall["drain"], "kernel_s": kernel_s,
                       "exchange_s": exchange_s, **prep.timings},
            "window": self.window,
            "lookahead": self.lookahead,
            "peak_rss_mb": self._peak_rss_mb(),
            "next_hops": self._next_hops(),
        }

    def _next_hops(self) -> dict:
        """The kind of the parts' next-hop tables, their bytes (all ranks) and the largest
        rank's (``none``, 0: the routing scans the distance rows)."""
        parts = self.group.parts
        kind = parts[0].next_hops["kind"] if parts else "none"
        mine = sum(p.next_hops["bytes"] for p in parts)
        total = int(self.group.sum(np.array([mine], np.int64))[0])
        most = int(self.group.max(np.array([mine], np.int64))[0])
        return {"kind": kind, "bytes": total, "bytes_max_rank": most}

    def _peak_rss_mb(self) -> float:
        """The largest peak resident memory of any rank's process so far, in MB (10^6 bytes)."""
        import resource
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        peak *= 1 if sys.platform == "darwin" else 1024          # bytes on macOS, KiB on Linux
        return int(self.group.max(np.array([peak], np.int64))[0]) / 1e6


def hist_edges(hmax: int) -> np.ndarray:
    """Lower edge (cycles) of every latency histogram bin (:func:`pdes.kernels.cycle.hist_bin`):
    ``0 .. hmax - 1``, then ``HIST_SUB`` bins per octave ``[hmax 2^k, hmax 2^(k+1))``."""
    k = np.repeat(np.arange(HIST_OCTAVES, dtype=np.int64), HIST_SUB)
    j = np.tile(np.arange(HIST_SUB, dtype=np.int64), HIST_OCTAVES)
    base = np.int64(hmax) << k
    return np.concatenate([np.arange(hmax, dtype=np.int64), base + (base * j) // HIST_SUB])


def backlog_growth(series, m0: int, m1: int, packet_size: int) -> float | None:
    """Growth of the source-queue backlog over the window ``[m0, m1)``, in flits.

    The backlog after each sample of the window is the running sum of the flits
    created minus the flits injected; the growth is the least-squares slope of
    that curve times the window length.  ``None`` with fewer than 3 samples.
    """
    rows = [r for r in series if m0 < r[0] <= m1]
    if len(rows) < 3:
        return None
    t = np.array([r[0] for r in rows], dtype=np.float64)
    backlog = np.cumsum(np.array([r[3] * packet_size - r[2] for r in rows], dtype=np.float64))
    slope = np.polyfit(t - t.mean(), backlog, 1)[0]
    return float(slope * (m1 - m0))


def run_local(cfg: dict, owner=None, progress=None, prep: Prepared | None = None,
              checkpoint: CheckpointPlan | None = None, restart=None) -> dict:
    """Run a resolved config in this process, optionally split into parts by ``owner``.

    With ``owner`` (router -> part), every part is simulated here and the
    outboxes are moved by hand at window boundaries: the same contract the
    MPI run uses, without MPI.  ``checkpoint`` and ``restart`` (an opened
    :class:`pdes.checkpoint.Checkpoint` to continue from) as for :func:`simulate`.
    """
    from pdes.comm import LocalGroup
    prep = prep or prepare(cfg)
    owner = np.zeros(prep.topo.n_routers, np.int32) if owner is None else np.asarray(owner, np.int32)
    la = lookahead_of(prep.topo, owner, prep.link_latency)
    W = window_for(la, sync_period(prep))
    parts = make_parts(prep, owner, sorted(set(owner.tolist())), W)
    group = LocalGroup(parts)
    resume = _restore(restart, prep, group)
    res = Engine(prep, group, W, la, progress=progress, checkpoint=checkpoint).run(resume)
    res["prepared"] = prep
    return res


def _restore(restart, prep: Prepared, group) -> LoopState | None:
    """The parts of ``group`` set to the state of checkpoint ``restart``; its loop state."""
    if restart is None:
        return None
    from pdes.checkpoint import restore
    return restore(restart, prep, group.parts)


def simulate(cfg: dict, comm=None, progress=None, prep: Prepared | None = None,
             on_partition=None, checkpoint: CheckpointPlan | None = None, restart=None,
             on_ready=None) -> dict:
    """Run a resolved config on the ranks of ``comm`` (``None`` = this process only).

    Every rank builds the same topology and tables, takes the routers that
    :func:`partition.assign` gives it, and runs the window loop; results
    (identical on every rank) are returned everywhere.  The partition report
    is in ``res["partition"]``.  ``checkpoint`` says when to write checkpoints
    (:class:`CheckpointPlan`; :class:`CheckpointStop` is raised on every rank
    when the run stops after one); ``restart``, an opened
    :class:`pdes.checkpoint.Checkpoint` of this config, is the state to
    continue from, on any number of ranks.  ``on_ready(timings)`` is called before the first
    cycle with the start-up times so far (``prepare``'s, ``partition_s``, ``state_s``,
    ``compile_s``).
    """
    import partition as PT
    from pdes.comm import LocalGroup, MpiGroup

    size = 1 if comm is None else comm.Get_size()
    rank = 0 if comm is None else comm.Get_rank()
    t0 = time.perf_counter()
    prep = prep or prepare(cfg, comm if size > 1 else None)
    t = time.perf_counter()
    owner = PT.assign(prep.topo, prep.link_latency, size, cfg["run"]["partition"],
                      seed=cfg["measure"]["seed"], max_imbalance=cfg["run"]["max_imbalance"])
    rep = PT.report(prep.topo, owner, prep.link_latency)
    la = lookahead_of(prep.topo, owner, prep.link_latency)
    W = window_for(la, sync_period(prep))
    t_partition = time.perf_counter() - t
    if on_partition is not None:
        on_partition(rep, W)
    t = time.perf_counter()
    if size == 1:
        group = LocalGroup(make_parts(prep, owner, [0], W))
    else:
        group = MpiGroup(comm, make_parts(prep, owner, [rank], W)[0], W, prep.rp.speedup)
    t_state = time.perf_counter() - t
    t = time.perf_counter()
    for p in group.parts:        # compile the kernels, or load them from the cache (no cycle runs)
        p.advance(0, 0)
    t_compile = time.perf_counter() - t
    t = time.perf_counter()
    resume = _restore(restart, prep, group)
    t_state += time.perf_counter() - t
    startup = {**prep.timings, "partition_s": t_partition, "state_s": t_state, "compile_s": t_compile}
    if on_ready is not None:
        on_ready(startup)
    res = Engine(prep, group, W, la, progress=progress, checkpoint=checkpoint).run(resume)
    res["timing"].update(startup)
    res["timing"].update(getattr(group, "timing", {}))   # rank-local exchange breakdown
    res["prepared"] = prep
    res["partition"] = rep
    res["timing"]["total_s"] = time.perf_counter() - t0
    return res
