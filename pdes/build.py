"""Building a run: what every rank builds identically before any simulation work.

:func:`prepare` builds the topology, link latencies, routing distances, routing plan and
traffic and checks the config against them (VCs, buffers: :mod:`pdes.sizing`);
:func:`make_parts` builds the kernel state of the parts a process simulates
(:class:`pdes.state.PartState`) and binds the global tables and the routing kernel to it.
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from models.core import params as prm_slots
from models.core import routing as rk
from models.core.errors import ParameterError
from models.core.rng import threshold53
from models.traffic.injection import injection_of
from pdes import config as C
from pdes.config import INJECTION_KEYS
from pdes.kernels.traffic import KINDS as TRAFFIC_KINDS
from pdes.shared import NodeShare
from pdes.sizing import (MAX_VCS, MAX_VCS_PER_ROUTER, check_memory, check_network,
                         distance_table_text, next_hop_table_of, private_vc_flits,
                         vc_capacities)
from pdes.state import PartState, RouterParams
from pdes.workload import (STATIC, empty_tables, is_finite, kernel_arrays, no_schedule,
                           schedule_tables)
from pdes.failure import Failure, mid_run
from pdes.timing import channel_cycles, hop_cycles, kernel_timing, router_cycles

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
    deadlock_warning: str = ""   # routing.vcs = "any" on a routing that can deadlock (any_vc_warning)
    share: object = None     # pdes.shared.NodeShare: the node-shared tables and their windows
    kglobals: dict = field(default_factory=dict)   # kernel_globals()
    next_hops: str = "auto"       # "off": the memory check left the next-hop tables out
    dist_symmetric: bool | None = None
    workload: dict = field(default_factory=dict)   # a schedule's tables (pdes.workload)
    provenance: dict = field(default_factory=dict)   # root attributes recording the input files
    # (pdes.provenance), written into result files and checkpoints; set by the command line
    failure: object = None       # faults.at_cycle > 0: the pdes.failure.Failure of the run

    @property
    def keep(self) -> list:
        """The MPI objects behind the node-shared tables (they live as long as this)."""
        return [] if self.share is None else self.share.keep

    @property
    def active_endpoints(self) -> int:
        return int(self.traffic.active.sum())


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
    vcs = rsec.pop("vcs")
    rsec.pop("eject_vcs")
    plan = entry.func(topo, dist, **rsec)
    if plan.finalize is not None:
        plan = plan.finalize(np.asarray(link_latency, dtype=np.int64) + hop_cycles(cfg["router"]))
    check_plan(alg, plan, cfg)
    if vcs == "any":     # one class spanning every VC: the kernel takes class 0 at every hop
        plan = replace(plan, vcs_needed=1, vc_scheme="any VC: every hop may use every VC (one "
                       f"class; the routing's own scheme, {plan.scheme}, is not applied)")
    nv = cfg["router"]["num_vcs"] or plan.vcs_needed
    if nv < plan.vcs_needed:
        raise ParameterError(
            f"router.num_vcs: routing '{alg}' needs {plan.vcs_needed} VCs on this topology "
            f"({plan.vc_scheme}; longest path {plan.max_hops} hops), but num_vcs = {nv}")
    return plan, nv


def any_vc_warning(topo, dist, plan, num_vcs: int) -> str:
    """The one-line warning of a run with ``routing.vcs = "any"`` whose channel dependency
    graph (one class: every turn of the routing's paths) may have a cycle, or "" when the
    check shows it has none (:func:`models.routing.cdg.check`; skipped above
    :data:`CDG_AUTO_MAX_ROUTERS` routers, which warns)."""
    if topo.n_routers > CDG_AUTO_MAX_ROUTERS:
        why = f"the channel dependency graph is not checked above {CDG_AUTO_MAX_ROUTERS} routers"
    else:
        from models.routing.cdg import check
        res = check(topo, dist, plan, num_vcs, vcs="any")
        if res["ok"]:
            return ""
        why = res["reason"]
    return (f'warning: routing.vcs = "any" (every hop may use every VC) can deadlock: {why}; '
            "the watchdog stops the run if it does")


def jobs_plan(cfg: dict, topo):
    """The traffic plan of a config's ``[[jobs]]``: their schedules joined, each job's
    processes on endpoints of its own (:func:`models.jobs.combine`)."""
    from models.core.registry import TRAFFIC
    from models.jobs import combine
    from models.traffic import TrafficPlan
    seed = cfg["measure"]["seed"]

    def build(i, job):
        try:
            return TRAFFIC.get(job["pattern"]).func(topo, seed, **C.job_pattern_params(job))
        except ParameterError as exc:     # the pattern's keys are the job's
            text = str(exc)
            for old in ("traffic.", "traffic:"):
                if text.startswith(old):
                    text = f"jobs.{i}{old[7:]}" + text[len(old):]
            raise ParameterError(text) from None
    sched, names, off, _ = combine(topo, seed, cfg["jobs"], build)
    return TrafficPlan("schedule", np.full(topo.n_endpoints, -1, np.int32), sched.description,
                       ops=sched, job_names=tuple(names), job_proc_off=off)


def check_plan(alg: str, plan, cfg: dict | None = None) -> None:
    """A routing plan names a registered kernel and one of its VC schemes and gives exactly
    the tables and kernel parameters it reads; anything else raises, naming the key."""
    rk.pack(alg, plan, cfg if cfg is not None else C.resolve({}, []))


def traffic_kind(kind: str) -> int:
    """Kernel id of a traffic plan's kind (finite exchanges read their message tables)."""
    if kind in ("messages", "schedule"):
        return TRAFFIC_KINDS["uniform"]     # not read: destinations come from the message tables
    try:
        return TRAFFIC_KINDS[kind]
    except KeyError:
        raise ParameterError(f"traffic.pattern: plan kind '{kind}' has no engine kernel "
                             f"(known: {', '.join(sorted(TRAFFIC_KINDS))}, messages)") from None


def plan_routing(cfg: dict):
    """(topology, distances, routing plan, num_vcs) of a config, for the static check."""
    from models.topology import build
    check_network(cfg)              # from the parameters, before building
    name, params = C.topology_params(cfg)
    topo = build(name, params)
    check_memory(cfg, "topology", topo.n_routers ** 2, distance_table_text(topo.n_routers))
    lat, cable = link_latencies(cfg, topo)
    topo, lat, _ = degraded(cfg, topo, lat, cable)
    dist = distances(topo)
    check_connected(topo, dist)
    return (topo, dist) + _routing(cfg, topo, dist, lat)


def check_connected(topo, dist) -> None:
    """Refuse a network in which some endpoints cannot reach others."""
    from models.metrics import submatrix_max
    ep = np.nonzero(topo.serving)[0]
    if ep.size and submatrix_max(dist, ep) == 255:
        raise ParameterError("topology: the network is disconnected (some endpoints cannot reach others)")


def same_network(a: dict, b: dict) -> bool:
    """Whether two resolved configs describe the same network: topology, layout, link latency."""
    return (a["topology"] == b["topology"] and a["layout"] == b["layout"]
            and a["router"]["link_latency"] == b["router"]["link_latency"]
            and a["faults"] == b["faults"])


def prepare(cfg: dict, comm=None, reuse: Prepared | None = None) -> Prepared:
    """Build topology, latencies, routing tables and traffic; validate against them.

    Every rank of ``comm`` builds the same objects; only the distance table is
    computed cooperatively.  ``reuse``, a :class:`Prepared` of a config with the
    same network (:func:`same_network`), lends its topology, latencies and
    distances instead of building them again (a sweep over routings or loads).
    A failure during the run (``faults.at_cycle``) prepares the intact network, and the
    degraded one it continues as from the reroute (``failure.degraded``), with one VC count.
    """
    if not mid_run(cfg):
        return _prepare(cfg, comm, reuse)
    at0 = copy.deepcopy(cfg)
    at0["faults"]["at_cycle"] = 0
    deg = _prepare(at0, comm)
    prep = _prepare(cfg, comm, reuse)
    spent = {k: v + deg.timings.get(k, 0.0) for k, v in prep.timings.items()}
    nv, nv_deg = prep.rp.num_vcs, deg.rp.num_vcs
    if nv != nv_deg:         # num_vcs = 0: the larger need of the two networks for both
        n = max(nv, nv_deg)
        for c in (at0, cfg2 := copy.deepcopy(cfg)):
            c["router"]["num_vcs"] = n
        deg = _prepare(at0, comm, reuse=deg)
        prep = _prepare(cfg2, comm, reuse=prep)
        prep.notes.append(f"faults: {n} VCs, what the longer routes of the degraded network need")
    deg.cfg = prep.cfg = cfg
    prep.timings.update(spent)      # the start-up report counts both networks' builds
    prep.failure.degraded = deg
    deg.failure = prep.failure
    idle = deg.topo.meta["faults"]["dropped_by_traffic"]
    if idle:        # the degraded network's start report is not printed: say it here
        prep.notes.append(f"faults: from the reroute, {idle} "
                          f"{'messages' if deg.traffic.kind == 'messages' else 'sources'} of "
                          f"'{cfg['traffic']['pattern']}' dropped (inactive destination)")
    src = prep.traffic.active.astype(bool)
    silent = prep.failure.failed_router[prep.topo.endpoint_router]
    prep.failure.active = (int(src.sum()), int((src & ~silent).sum()), deg.active_endpoints)
    return prep


def with_config(prep: Prepared, cfg: dict) -> Prepared:
    """A copy of ``prep`` that runs ``cfg`` (the same network, routing and traffic; a sweep's
    load or measurement keys): with a failure during the run, the degraded network it
    continues as from the reroute runs ``cfg`` too."""
    out = replace(prep, cfg=cfg, timings=dict(prep.timings))
    if prep.failure is not None:
        failure = copy.copy(prep.failure)
        failure.degraded = replace(prep.failure.degraded, cfg=cfg, failure=failure)
        out.failure = failure
    return out


def _prepare(cfg: dict, comm=None, reuse: Prepared | None = None) -> Prepared:
    """Build topology, latencies, routing tables and traffic; validate against them.

    Every rank of ``comm`` builds the same objects; only the distance table is
    computed cooperatively.  ``reuse``, a :class:`Prepared` of a config with the
    same network (:func:`same_network`), lends its topology, latencies and
    distances instead of building them again (a sweep over routings or loads).
    """
    from models.core.registry import TRAFFIC
    import models.routing  # noqa: F401
    import models.traffic  # noqa: F401

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
    notes = [plan.note] if plan.note else []     # what the routing reports (e.g. lanes needed)
    vcs_any = cfg["routing"]["vcs"] == "any"
    if not vcs_any and plan.scheme != "hop" and topo.n_routers > CDG_AUTO_MAX_ROUTERS:
        notes.append(f"note: the static deadlock check of the '{plan.scheme}' VC scheme is skipped "
                     f"above {CDG_AUTO_MAX_ROUTERS} routers ({topo.n_routers} here); "
                     "'pdes check' runs it on demand")
    if not vcs_any and plan.scheme != "hop" and topo.n_routers <= CDG_AUTO_MAX_ROUTERS:
        from models.routing.cdg import check
        res = check(topo, dist, plan, nv)
        if not res["ok"]:
            raise ParameterError(f"routing.vc_scheme: routing '{alg}' with the '{plan.scheme}' "
                                 f"VC scheme can deadlock on this topology: {res['reason']}")
    warning = any_vc_warning(topo, dist, plan, nv) if vcs_any else ""
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
    for key in INJECTION_KEYS:      # the injection process, not the pattern's parameters
        tsec.pop(key, None)
    if cfg.get("jobs"):             # several jobs: their schedules joined (models.jobs)
        traffic = jobs_plan(cfg, topo)
    else:
        traffic = TRAFFIC.get(pattern).func(topo, cfg["measure"]["seed"], **tsec)
    if topo.is_degraded:        # no source or destination on a failed or cut-off router
        from models.faults import restrict_traffic
        traffic, idle = restrict_traffic(traffic, topo.endpoint_up)
        fs = topo.meta["fault_set"]
        notes.append(f"faults: {fs.description}" + (
            f"; {idle} {'messages' if traffic.kind == 'messages' else 'sources'} of "
            f"'{pattern}' dropped (inactive destination)" if idle else ""))
        topo.meta["faults"]["dropped_by_traffic"] = int(idle)
    failure = None
    if mid_run(cfg):                # the intact network until faults.at_cycle
        from models.faults import select
        if is_finite(traffic):
            what = "[[jobs]]" if cfg.get("jobs") else f"'{pattern}'"
            raise ParameterError(
                f"faults.at_cycle: {what} is a finite workload, whose messages would never "
                "complete once a failure drops their packets (pdes does not retransmit); "
                "failures during a run apply to load patterns")
        fs = select(topo, cfg["faults"])
        failure = Failure(cfg["faults"]["at_cycle"], cfg["faults"]["reroute_cycles"], fs, topo)
        notes.append(f"faults: at cycle {failure.at_cycle}, {fs.description}; the routing tables "
                     f"of the degraded network from cycle {failure.reroute_at}")
    if traffic.kind == "schedule":       # per-operation tables in the kernel's numbering
        sizes = ("jobs" if cfg.get("jobs") else
                 "traffic.file" if cfg["traffic"]["pattern"] == "goal" else "traffic.pattern")
        traffic, workload = schedule_tables(traffic, topo.n_endpoints, r["packet_size"],
                                            r["flit_bytes"], sizes)
        share.adopt_attrs(workload, STATIC)
        share.adopt_attrs(traffic.ops)     # the schedule's own arrays, once per node
    else:
        workload = empty_tables(topo.n_endpoints)
    share.adopt_attrs(traffic)             # one copy per node of the traffic tables
    timings["traffic_s"] = time.perf_counter() - t
    traffic_kind(traffic.kind)
    if is_finite(traffic) and cfg["traffic"]["injection"] != "bernoulli":
        raise ParameterError(f"traffic.injection: '{pattern}' is a finite exchange, whose endpoints "
                             "send at link rate; an injection process applies to load patterns")
    if traffic.active.sum() == 0:
        raise ParameterError(f"traffic.pattern: '{pattern}' leaves no endpoint active")

    rp = RouterParams(
        num_vcs=nv, vc_flits=int(max(link_caps.max(initial=0), ep_cap)),
        output_flits=r["output_buffer_flits"],
        packet_size=r["packet_size"], credit_delay=r["credit_delay"], timing=kernel_timing(r),
        speedup=max(1, int(math.floor(r["internal_speedup"]))),
        endpoint_latency=r["endpoint_latency"], link_vc_flits=link_caps, endpoint_vc_flits=ep_cap,
        private_flits=private_vc_flits(r), booksim=booksim_allocation(r))
    prep = Prepared(cfg=cfg, topo=topo, link_latency=link_latency, cable_m=cable_m, dist=dist,
                    plan=plan, traffic=traffic, rp=rp, timings=timings, notes=notes, share=share,
                    deadlock_warning=warning, workload=workload, failure=failure)
    share.adopt_attrs(kernel_globals(prep))    # the kernel's copies in its dtypes, once per node
    return prep


def booksim_allocation(r: dict) -> tuple:
    """The kernel's BookSim allocation parameters (:attr:`pdes.state.RouterParams.booksim`)
    of the ``[router]`` section ``r``; () with ``allocation = "vct"``."""
    if r["allocation"] != "booksim":
        return ()
    from pdes.kernels.iq import ALLOCATORS
    iters = r["alloc_iters"]
    valg, salg = ALLOCATORS[r["vc_allocator"]], ALLOCATORS[r["sw_allocator"]]
    # BookSim's separable output-first allocator is one iteration of iSLIP's rules
    viters = iters if r["vc_allocator"] == "islip" else 1
    siters = iters if r["sw_allocator"] == "islip" else 1
    return (valg, salg, viters, siters, r["routing_delay"], r["vc_alloc_delay"],
            r["sw_alloc_delay"], r["st_delay"], max(1, int(math.floor(r["internal_speedup"]))),
            int(r["hold_switch_for_packet"]), int(r["wait_for_tail_credit"]),
            int(r["input_speedup"]))


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
    check_network(cfg)              # from the parameters, before building
    name, params = C.topology_params(cfg)
    topo = share.object(lambda: build(name, params), touch=TOPOLOGY_SHARED)
    timings["build_s"] = time.perf_counter() - t
    if topo.n_endpoints < 2:
        raise ParameterError("topology: the network needs at least 2 endpoints to simulate")

    t = time.perf_counter()
    link_latency, cable_m = share.build(lambda: link_latencies(cfg, topo))
    timings["layout_s"] = time.perf_counter() - t
    topo, link_latency, cable_m = degraded(cfg, topo, link_latency, cable_m, share)

    t = time.perf_counter()
    check_memory(cfg, "topology", topo.n_routers ** 2, distance_table_text(topo.n_routers))
    dist = distances(topo, share)
    timings["distances_s"] = time.perf_counter() - t
    return topo, link_latency, cable_m, dist, timings


def degraded(cfg: dict, topo, link_latency, cable_m, share=None):
    """(topology, link latencies, cable lengths) with the ``[faults]`` applied: the failed
    links removed, the latencies and cables of the intact network's layout kept for the
    others (:mod:`models.faults`); the arguments themselves when nothing fails."""
    from models import faults as F
    if not F.configured(cfg["faults"]) or cfg["faults"]["at_cycle"] > 0:
        return topo, link_latency, cable_m      # nothing fails, or not before the run
    fs = F.select(topo, cfg["faults"])
    full = topo
    topo = share.object(lambda: F.degrade(full, fs), touch=TOPOLOGY_SHARED) if share is not None \
        else F.degrade(full, fs)
    topo.meta["fault_set"] = fs
    keep = fs.keep
    return (topo, np.ascontiguousarray(link_latency[keep]),
            None if cable_m is None else np.ascontiguousarray(cable_m[keep]))


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
    finite = is_finite(tr)
    if finite:   # message tables; each entry is only written by its source's / destination's part
        msgs = kernel_arrays(tr, prep.workload)
    else:
        z = np.zeros(0, np.int32)
        msgs = dict(msg_off=np.zeros(topo.n_endpoints + 1, np.int64), msg_dst=z, msg_pkts=z,
                    msg_left=z, msg_recv=z)
        msgs.update(no_schedule())
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
        on_off = None if finite else injection_of(cfg["traffic"], prep.rp.packet_size)
        if on_off is not None:      # on/off source: PR_THR is the packet draw while on (r1)
            alpha, beta, r1 = on_off
            prm[prm_slots.PR_ONOFF] = 1
            prm[prm_slots.PR_ALPHA_THR] = threshold53(alpha)
            prm[prm_slots.PR_BETA_THR] = threshold53(beta)
            prm[prm_slots.PR_THR] = threshold53(r1)
        prm[prm_slots.PR_FINITE] = 2 if tr.kind == "schedule" else int(finite)
        prm[prm_slots.PR_SCHED] = int(tr.kind == "messages" and tr.schedule == "staggered")
        prm[prm_slots.PR_TRAFFIC] = traffic_kind(prep.traffic.kind)
        prm[prm_slots.PR_FRAC_THR] = threshold53(prep.traffic.frac)
        prm[prm_slots.PR_NCLS] = plan.vcs_needed
        vcs_any = cfg["routing"]["vcs"] == "any"
        prm[prm_slots.PR_MONO] = int(bool(kernel.monotone(plan)) and not vcs_any)
        prm[prm_slots.PR_VCANY] = int(vcs_any)
        prm[prm_slots.PR_EJCLS] = int(cfg["routing"]["eject_vcs"] == "class" and not vcs_any)
        prm[prm_slots.PR_E] = topo.n_endpoints
        prm[prm_slots.PR_FAULT] = int(prep.failure is not None)   # pdes.failure sets 2
        if nh:
            ps.use_next_hop_table(prep.dist, max_degree=int(topo.degree.max()))
        out.append(ps)
    return out
