"""Sizing a run: the input buffers (flits per VC, private or shared), the engine's limits
that follow from the kernel's narrow integer types, the node's memory limit and the memory
estimate of a prepared run (:class:`pdes.build.Prepared`) and, before anything is built, of
a network from its parameters (:func:`check_network`), and whether its parts build a
next-hop table."""
from __future__ import annotations

import math
import os

import numpy as np

from models.core import routing as rk
from models.core.errors import ParameterError
from models.core.record import HIST_OCTAVES, HIST_SUB
from pdes.kernels import nexthop as NH
from pdes.kernels import state_table as ST
from pdes.kernels.cycle import scratch_size
from pdes.state import HOP_BINS
from pdes.timing import slot_round_trip

# engine limits that follow from the narrow integer types of the per-VC kernel state
# (pdes.kernels.state_table: int16 occupancy and credit counters, int8 VC indices)
MAX_VCS = ST.limit("iv_ovc", "rr_in")                  # VC indices: 127
MAX_VC_FLITS = ST.limit("ib_head", "ib_cnt", "cr_head", "cr_cnt", "cred", "cr_res")  # 32767
MAX_VCS_PER_ROUTER = ST.limit("rr_out", "rr_va")       # input VCs of a router: 32767

MIN_AUTO_VC_FLITS = 16
"""The queue the automatic buffers give every VC beyond its link's round trip, and their
smallest round-trip part (BookSim's default ``vc_buf_size`` is 8)."""


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
        if cap < pkt and r["allocation"] != "booksim":
            raise ParameterError(f"router.{key}: {what}, smaller than a packet ({pkt} flits; "
                                 "with router.allocation = \"vct\" a VC holds a whole packet)")
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
    if priv < pkt and r["allocation"] != "booksim":
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


def _max_memory_gb(cfg: dict) -> float:
    """``run.max_memory_gb`` (0 = not given; also for a command whose config has no [run])."""
    return cfg.get("run", {}).get("max_memory_gb", 0)


def memory_limit(cfg: dict) -> float:
    """Bytes a node may use: ``run.max_memory_gb``, or the memory available on this machine."""
    gb = _max_memory_gb(cfg)
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
        source = ("run.max_memory_gb" if _max_memory_gb(cfg) > 0
                  else "the memory available on this machine")
        raise ParameterError(f"{key}: {what} needs {nbytes / 1e9:.3g} GB, more than "
                             f"{limit / 1e9:.3g} GB ({source})")


LINK_BYTES = 200
"""Bytes per link of building a network: the edge arrays of the construction and of
:func:`models.topology.from_edges` (sorting, the link table), the port tables the engine
reads (:data:`pdes.build.TOPOLOGY_SHARED`) and the layout's latencies, cable lengths and
latency-key mask, at their peak together (measured: 165 to 185 for the families without a
random repair; a fat tree of 216 links, whose fixed costs weigh more, peaked at 46,600
bytes in all, 216 per link)."""
ROUTER_BYTES = 64
"""Bytes per router of a built network: endpoint counts, groups, port and endpoint offsets,
degrees, rack positions."""
ENDPOINT_BYTES = 16
"""Bytes per endpoint of a built network: the router of every endpoint (and its copy in the
kernel's type)."""


def network_bytes(size) -> int:
    """Estimated peak bytes of building a network of ``size`` (a
    :class:`models.topology.TopologySize`) with its layout, before its distance table."""
    return (LINK_BYTES * size.links + ROUTER_BYTES * size.routers
            + ENDPOINT_BYTES * size.endpoints + size.work_bytes)


def check_network(cfg: dict, distances: bool = True):
    """Refuse, before building anything, a network whose arrays (and with ``distances``, its
    all-pairs distance table of R² bytes) cannot fit in the node's memory limit
    (:func:`memory_limit`), from the counts its family gives for the config's parameters
    (the ``size`` hook, :func:`models.topology.size_of`).  Returns those counts, or None
    for a family known only once built (a file: checked right after reading it)."""
    from models.topology import size_of
    from pdes.config import topology_params
    size = size_of(*topology_params(cfg))
    if size is None:
        return None
    R = size.routers
    if distances:
        check_memory(cfg, "topology", R * R, distance_table_text(R))
    links = f"{size.links:,}" if size.exact else f"up to {size.links:,}"
    check_memory(cfg, "topology", network_bytes(size) + (R * R if distances else 0),
                 f"building it ({R:,} routers, {links} links, {size.endpoints:,} endpoints)"
                 + (" with its all-pairs distance table" if distances else ""))
    return size


def distance_table_text(n_routers: int) -> str:
    """What :func:`check_memory` names for the all-pairs distance table of ``n_routers``."""
    return f"its all-pairs distance table ({n_routers:,} x {n_routers:,} bytes)"


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


def estimated_sizes(prep, share: float) -> dict:
    """The named sizes of the kernel state (:data:`pdes.kernels.state_table.SIZES`) of a
    rank that holds ``share`` of the network's routers, ports and endpoints, with every
    buffer full (the rings at their ports' capacities, a record for every flit they hold)."""
    rp, topo = prep.rp, prep.topo
    nP = (2 * topo.n_links + topo.n_endpoints) * share
    nE = topo.n_endpoints * share
    nv, oq = rp.num_vcs, rp.output_flits
    ecap = rp.endpoint_capacity()
    link_cap = rp.link_capacity(topo.n_links)
    # input VC slots (every port at its capacity); credit FIFOs: one per sender and VC, as
    # deep as the input VC they count for (the endpoints' as the ports they inject into)
    n_ib = nv * (2 * float(link_cap.sum()) + topo.n_endpoints * ecap) * share
    # records: every port full (a shared buffer holds fewer flits than its VCs' rings)
    held = (2 * float(rp.port_flits(link_cap).sum()) + topo.n_endpoints * rp.port_flits(ecap)) * share
    radix = int((topo.degree + topo.endpoints).max()) if topo.n_routers else 1
    return {"nR": topo.n_routers * share, "nP": nP, "nE": nE, "nS": nP + nE,
            "nC": 0, "focap": 0, "cocap": 0,      # the outboxes are not counted (SIZES)
            "nv": nv, "oq": oq, "n_ib": n_ib, "n_cr": n_ib + nv * nE * ecap,
            "n_rec": held + nP * oq,
            "n_hist": prep.cfg["measure"]["latency_hist_max"] + HIST_SUB * HIST_OCTAVES,
            "n_hops": HOP_BINS, "n_scr": scratch_size(radix, nv, rp.speedup)}


def memory_estimate(prep, nranks: int = 1, ranks_per_node: int = 1) -> dict:
    """Estimated bytes of a run: per rank (kernel state, private tables, histograms) and per
    node (the node-shared tables, :mod:`pdes.shared`), at start and with every buffer full.

    The kernel state (every array of :mod:`pdes.kernels.state_table` with a ``memory``
    part) is sized for the rank's share of the ports, with the partition's allowed
    imbalance.  The buffers (every input VC, output queue and credit FIFO at its port's
    capacity, and the flit records behind them) become resident only as flits pass: the
    rings are allocated for every slot but their pages are mapped on first use, and the
    record pool grows with the records in use.  They are counted apart (``buffers``,
    ``per_node_full``: every buffer full at once).
    """
    topo = prep.topo
    sizes = estimated_sizes(prep, min(1.0, prep.cfg["run"]["max_imbalance"] / nranks))
    part = {m: sum(ST.nbytes(r, sizes) for r in ST.ROWS if r.memory == m)
            for m in (ST.STATE, ST.BUFFERS, ST.HISTOGRAMS)}
    state, buffers, hist = part[ST.STATE], part[ST.BUFFERS], int(part[ST.HISTOGRAMS])
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


def check_run_memory(prep, nranks: int = 1, ranks_per_node: int = 1) -> dict:
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


def next_hop_table_of(prep) -> bool:
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


def next_hop_estimate(prep, nranks: int = 1) -> tuple[str, int]:
    """(kind, bytes per rank) of the next-hop table a run would build, before it is built:
    its entries (and rank words) for the rank's share of the routers; the CSR lists of
    destinations with several minimal ports come on top (path multiplicity: measured when
    the table is built and reported in ``/run``)."""
    if not next_hop_table_of(prep):
        return "none", 0
    topo = prep.topo
    kind, entry = NH.table_kind(int(topo.degree.max()) if topo.n_routers else 0)
    share = min(1.0, prep.cfg["run"]["max_imbalance"] / nranks)
    n_local = int(math.ceil(topo.n_routers * share))
    name = {NH.NH_NONE: "none", NH.NH_MASKS: "masks"}.get(kind) or f"ports ({np.dtype(entry).name})"
    return name, NH.fixed_bytes(kind, entry, n_local, topo.n_routers)
