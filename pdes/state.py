"""Flat-array state of one partition (the routers one rank owns).

:class:`PartState` builds, from the global topology and an owner array,
everything the cycle kernel (``advance``) needs: local port numbering,
delay lines for incoming channels, credit lines for senders, VC buffers,
output queues, endpoint source queues, outboxes for cut channels and
integer statistics.  Nothing here depends on how many partitions exist
except which channels are cut.

The kernel arrays are declared in :mod:`pdes.kernels.state_table` (length, type, initial
value); the part computes those built from the topology and the partition (numbering,
links, capacities) and allocates every other one from the table.

Local numbering: routers in increasing global id; on each router its
endpoint ports, then its network ports in neighbour order (the topology's
CSR order).  Senders (owners of credit counters) are local ports
``0..nP-1`` followed by local endpoints ``nP..nP+nE-1``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.core import nexthop as NHK
from models.core import params as P
from models.core.jit import njit_holding
from models.core.record import HIST_OCTAVES, HIST_SUB, S_LAST_MOVE
from pdes.kernels import cycle, generate, iq
from pdes.kernels import nexthop as NH
from models.core.rings import credit_rtt
from pdes.kernels.buffers import unreturned_flits
from pdes.kernels import state_table as ST
from pdes.timing import KernelTiming


@dataclass
class RouterParams:
    """Integer router/endpoint parameters (cycles, flits) used by the kernel.

    Buffers: every VC of an input port holds the same number of flits, the
    port's capacity: ``link_vc_flits[l]`` for the two input ports of link ``l``
    (a link's two ends are alike), ``endpoint_vc_flits`` for the ports that
    endpoints inject into; ``None`` / 0 mean ``vc_flits`` everywhere, which is
    also the largest capacity of any port.

    With a shared buffer (``private_flits > 0``, BookSim's shared buffer
    policy) a port holds ``capacity + (num_vcs - 1) * private_flits`` flits:
    each VC owns ``private_flits`` and may take the
    ``capacity - private_flits`` shared ones, so the capacity above is what one
    VC (its ring, its credit counter) may hold at most.
    """

    num_vcs: int
    vc_flits: int
    output_flits: int
    packet_size: int
    credit_delay: int
    timing: KernelTiming     # the pipeline's cycle offsets (pdes.timing)
    speedup: int
    endpoint_latency: int
    link_vc_flits: np.ndarray | None = None
    endpoint_vc_flits: int = 0
    private_flits: int = 0
    # router.allocation = "booksim" (pdes.kernels.iq): (VC allocator, switch allocator, their
    # iterations, routing/VC/switch/crossbar delays, steps per cycle, hold_switch_for_packet,
    # wait_for_tail_credit, input speedup); () = pdes's allocation
    booksim: tuple = ()

    @property
    def input_speedup(self) -> int:
        """Switch inputs per input port (BookSim's input_speedup, at most the VCs)."""
        return min(self.booksim[-1], self.num_vcs) if self.booksim else 1

    @property
    def credits_per_cycle(self) -> int:
        """The most credits an input port's flits may free in one cycle: one per switch
        input and step."""
        return self.speedup * self.input_speedup

    def port_flits(self, cap):
        """Flits a port holds, from its VCs' capacity ``cap`` (an array or a number)."""
        if self.private_flits:
            return cap + (self.num_vcs - 1) * self.private_flits
        return self.num_vcs * cap

    def link_capacity(self, n_links: int) -> np.ndarray:
        """Flits per VC of the input ports of every link."""
        if self.link_vc_flits is None:
            return np.full(n_links, self.vc_flits, dtype=np.int64)
        return np.asarray(self.link_vc_flits, dtype=np.int64)

    def endpoint_capacity(self) -> int:
        """Flits per VC of the ports endpoints inject into."""
        return int(self.endpoint_vc_flits or self.vc_flits)

    def hot_slots(self, n_links: int) -> int:
        """The smallest capacity of any port: the slots every ring keeps in planes."""
        cap = self.link_capacity(n_links)
        return int(min(cap.min(), self.endpoint_capacity())) if cap.size else self.endpoint_capacity()


@njit_holding
def _occupancy(ports, nv, hot, cr_cap, cr_deep, t, cred, cr_t, cr_head, cr_cnt, rtt, chan, out):
    for i in range(ports.shape[0]):
        q = unreturned_flits(ports[i], nv, hot, cr_cap[ports[i]], cr_deep, t, cred, cr_t,
                             cr_head, cr_cnt) - rtt[i]
        out[chan[i]] = q if q > 0 else 0


def ring_layout(cap_per_ring: np.ndarray, hot: int) -> tuple[np.ndarray, int]:
    """(``deep``, array size) of rings with these capacities (all >= ``hot``): slot ``w`` of
    ring ``i`` is at ``w * n + i`` for ``w < hot`` (``n`` rings), else at ``deep[i] + w``."""
    cap = np.asarray(cap_per_ring, dtype=np.int64)
    n = cap.size
    extra = cap - hot
    start = hot * n + np.cumsum(extra) - extra
    return start - hot, int(hot * n + extra.sum())


def ring_positions(w: np.ndarray, ring: np.ndarray, n: int, hot: int, deep: np.ndarray) -> np.ndarray:
    """Array positions of slots ``w`` of rings ``ring`` (see :func:`ring_layout`)."""
    w = np.asarray(w, dtype=np.int64)
    ring = np.asarray(ring, dtype=np.int64)
    return np.where(w < hot, w * n + ring, deep[ring] + w)


ENTRIES: dict = {}
"""(dispatcher, :func:`type_key` of its arguments) -> the compiled code Numba chose for
them (:class:`DirectCall`: the window loop, the exchange's pack and unpack)."""


def type_key(x):
    """What Numba's type of an argument made of arrays, tuples and numbers depends on, as a
    hashable key (``None`` for anything else): an array's dtype, dimensions, layout,
    writeability and alignment; a tuple's class and items; a number's kind (a NumPy scalar:
    its dtype)."""
    if isinstance(x, np.ndarray):
        if type(x) is not np.ndarray:      # a subclass: Numba's own rules
            return None
        f = x.flags
        return (x.dtype.str, x.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned)
    if isinstance(x, tuple):
        items = tuple(type_key(y) for y in x)
        return None if any(k is None for k in items) else (type(x), items)
    if isinstance(x, np.generic):
        return ("scalar", x.dtype.str)
    if isinstance(x, bool):
        return ("bool",)
    if isinstance(x, int):
        return ("int",) if -2 ** 63 <= x < 2 ** 63 else None
    if isinstance(x, float):
        return ("float",)
    return None


def compiled_entry(disp, args):
    """The compiled code ``disp`` (a Numba dispatcher) holds for the types of ``args``, found
    by their :func:`type_key` in :data:`ENTRIES` (filled by Numba's own typing of the
    arguments once per dispatcher and key), or None: not a type key, or no such overload yet
    (then the dispatcher's own call compiles or loads it)."""
    key = type_key(args)
    if key is None:
        return None
    entry = ENTRIES.get((disp, key))
    if entry is None:
        cres = disp.overloads.get(tuple(disp.typeof_pyval(x) for x in args))
        if cres is None:
            return None
        entry = ENTRIES[(disp, key)] = cres.entry_point
    return entry


class DirectCall:
    """A dispatcher called through the compiled code of its overload for the arguments'
    types (the window loop, :meth:`PartState._window_call`; the exchange's pack and unpack):
    Numba's own call types every argument each time (an exchange block's unpacking, 4
    groups of arrays: about 15 us of its 21).  The code is kept while the arguments are the
    same objects as the last call's or, at the positions ``fresh`` (made anew for each call:
    a scalar, a view), of the same :func:`type_key`; otherwise it is found by the arguments'
    key in :data:`ENTRIES`, or the dispatcher itself is called until it holds that
    overload."""

    __slots__ = ("disp", "fresh", "held")

    def __init__(self, disp, fresh=()):
        self.disp = disp
        self.fresh = tuple(fresh)
        self.held = None            # (arguments, the fresh ones' type keys, compiled entry)

    def __call__(self, *args):
        held = self.held
        if held is not None:
            old, keys, entry = held
            if len(old) == len(args) and self._holds(old, keys, args):
                return entry(*args)
            self.held = None
        disp = self.disp
        entry = compiled_entry(disp, args) if hasattr(disp, "overloads") else None
        if entry is None:       # not Numba's (a test's spy), or not compiled for these types
            return disp(*args)
        self.held = (args, tuple(type_key(args[i]) for i in self.fresh), entry)
        return entry(*args)

    def _holds(self, old, keys, args) -> bool:
        """Whether the held code fits ``args``: the same objects as ``old`` but at the fresh
        positions, which have the held type keys (a NumPy scalar of the held one's class
        has: the check most calls take, without computing the key)."""
        fresh = self.fresh
        for i in range(len(args)):
            if args[i] is not old[i] and i not in fresh:
                return False
        for j, i in enumerate(fresh):
            x, y = args[i], old[i]
            if not (type(x) is type(y) and isinstance(x, np.generic)) and type_key(x) != keys[j]:
                return False
        return True


HOP_BINS = 64
"""Bins of the hop histogram (hops 0 .. 63)."""


class PartState:
    """State of the routers with ``owner == part``.

    :attr:`arrays` holds every kernel array of :mod:`pdes.kernels.state_table` by name,
    :attr:`prm` the kernel's parameter vector (:mod:`models.core.params`).
    """

    def __init__(self, topo, link_latency, owner, part, rp: RouterParams, *, ep_active,
                 window: int, hist_max: int, n_hop_bins: int = HOP_BINS):
        owner = np.asarray(owner, dtype=np.int32)
        self.part = int(part)
        self.nv = nv = rp.num_vcs
        self.rp = rp
        self.window = int(window)
        num = _numbering(topo, np.nonzero(owner == part)[0].astype(np.int64))
        self.nR, self.nP, self.nE = nR, nP, nE = num["nR"], num["nP"], num["nE"]
        self.router_gid, self.ep_gid, self.is_net = num["router_gid"], num["ep_gid"], num["is_net"]
        ports = _ports(topo, link_latency, rp.endpoint_latency, num)
        self._cut_channels(topo, owner, ports)
        caps = _capacities(topo, rp, num, ports["out_channel"])
        self.in_cap, self.cr_cap = caps["in_cap"], caps["cr_cap"]
        # every input VC and output queue slot full: the most records the part can hold
        self.max_records = int(rp.port_flits(self.in_cap).sum() + nP * rp.output_flits)
        self.records_per_cycle = nE + self.nC  # at most one new flit per endpoint and cut channel
        S = rp.credits_per_cycle
        maxp = int(np.diff(num["port_off"]).max()) if nR else 1
        self.sizes = {
            "nR": nR, "nP": nP, "nE": nE, "nS": nP + nE, "nC": self.nC, "nv": nv,
            "oq": rp.output_flits, "n_ib": caps.pop("n_ib"), "n_cr": caps.pop("n_cr"),
            "n_rec": min(self.max_records, 1024),   # grown by reserve_records
            "focap": max(self.window, 1), "cocap": max(self.window * (S + 1), 1),
            "n_hist": hist_max + HIST_SUB * HIST_OCTAVES, "n_hops": n_hop_bins,
            "n_scr": cycle.scratch_size(maxp, nv, rp.speedup)}
        self.prm = _params(rp, self.sizes, hot=caps.pop("hot"), hist_max=hist_max)
        ep_act = np.asarray(ep_active, dtype=np.int8)[self.ep_gid] if nE else np.zeros(0, np.int8)
        built = {k: v for k, v in {**num, **ports, **caps}.items() if k in ST.BY_NAME}
        # (an array of zeros is allocated, not written: its pages, e.g. the rings' and the
        # outboxes', stay unmapped until a flit or credit uses them)
        self.arrays = ST.allocate_all(self.sizes, dict(built, ep_active=ep_act))
        self.arrays["st"][S_LAST_MOVE] = -1
        self._window = None           # _window_call: the window loop's DirectCall
        self._occ_ports = None        # port_occupancy: (network ports, round trips, channels,
        #                               its DirectCall of _occupancy)

    def _cut_channels(self, topo, owner, ports) -> None:
        """The cut channels (network ports whose link leaves the part): flits leave on
        ``cut_out_channel``, arrive on ``cut_in_channel`` (and their credits go back); the
        maps from a global channel to the local receiving and sending ports."""
        out_ch, is_net = ports["out_channel"], self.is_net
        cut_ports = np.nonzero(ports.pop("remote"))[0]
        self.nC = nC = cut_ports.size
        for name in ("out_cut", "in_cut"):
            ports[name] = np.full(self.nP, -1, dtype=np.int64)
            ports[name][cut_ports] = np.arange(nC)
        self.cut_ports = cut_ports
        self.cut_out_channel = out_ch[cut_ports]            # flits leave on these channels
        self.cut_in_channel = out_ch[cut_ports] ^ 1         # flits arrive on these (credits go back)
        self.cut_peer_part = owner[ports["out_nbr"][cut_ports]] if nC else np.zeros(0, np.int32)
        self.cut_latency = ports["out_lat"][cut_ports]
        n_ch = 2 * topo.n_links
        # (int32: two of these global-sized maps per rank)
        self.in_port_of_channel = np.full(n_ch, -1, dtype=np.int32)
        self.in_port_of_channel[out_ch[is_net] ^ 1] = np.nonzero(is_net)[0]
        self.out_port_of_channel = np.full(n_ch, -1, dtype=np.int32)
        self.out_port_of_channel[out_ch[is_net]] = np.nonzero(is_net)[0]
        self.out_channel = out_ch

    # ------------------------------------------------------------------ kernel
    def bind_globals(self, *, ep_first, ep_router, dist, traffic, g_off, g_nbr, g_chan, snap,
                     messages):
        """Global tables shared by every partition (``snap`` is updated in place)."""
        E = ep_router.shape[0]

        def arr(x, n):
            return np.zeros(n, np.int32) if x is None else np.ascontiguousarray(x, dtype=np.int32)
        self.arrays.update(ep_first=ep_first, ep_router=ep_router, dist=dist,
                           dest_table=arr(traffic.table, E), dest_table2=arr(traffic.table2, E),
                           dest_set_a=arr(traffic.set_a, 0), dest_set_b=arr(traffic.set_b, 0),
                           g_off=g_off, g_nbr=g_nbr, g_chan=g_chan, snap=snap, **messages)
        self.arrays["ep_msg_ptr"] = messages["msg_off"][self.ep_gid].astype(np.int64)
        if traffic.kind == "schedule":     # no send under way (also with no operation at all:
            self.arrays["ep_cur_msg"][:] = -1   # send 0 of an empty schedule does not exist)
        self._no_next_hops()

    def _no_next_hops(self) -> None:
        """Stand-ins for the next-hop table (the routing scans the distance rows)."""
        self.arrays.update(nh_min=np.zeros((1, 1), np.uint32), nh_port=np.zeros((1, 1), np.uint8),
                           nh_blk=np.zeros((1, 1, 2), np.uint64), nh_off=np.zeros(2, np.uint32),
                           nh_cand=np.zeros(1, np.uint8))
        self.prm[P.PR_NHMIN] = NHK.NH_NONE
        self.prm[P.PR_NHMULTI] = 0
        self.next_hops = {"kind": "none", "bytes": 0, "multi": 0, "candidates": 0}
        self._args = None

    def bind_routing(self, kernel, ctx, ap) -> None:
        """The routing kernel (``models.core.routing.RoutingKernel``), its tables and parameters:
        :meth:`advance` runs the router stage compiled for it."""
        self.kernel = generate.kernel_module(kernel)
        self.ctx = ctx
        self.ap = ap

    def use_next_hop_table(self, dist, kind: str = "auto", max_degree: int | None = None) -> str:
        """Give minimal routing a next-hop table of the part's routers (rows ``nR x R``)
        instead of the distance rows it would scan per head flit; returns its kind.

        ``auto``: bit masks (``nR x R`` uint32, one load) where every router has at most
        32 network ports, else the port table (``nR x R`` uint8 or uint16 entries, one
        load where the minimal port is unique, a CSR list of candidates where it is not;
        :mod:`pdes.kernels.nexthop`).  ``masks`` or ``ports`` ask for one kind (``masks``
        only where it fits).  ``max_degree``: the most network ports of any router of the
        network (the engine passes it so that every part builds the same kind; default:
        of the part's routers).  ``dist`` must be symmetric (undirected links).  Results are
        the same with any kind or none (same ports, same order, same draws).
        """
        self._no_next_hops()
        a = self.arrays
        deg = np.diff(a["port_off"]) - a["n_epp"]
        if max_degree is None:
            max_degree = int(deg.max()) if deg.size else 0
        mk, entry = NH.table_kind(max_degree)
        if kind == "ports" and mk == NHK.NH_MASKS:
            mk, entry = NHK.NH_PORTS, np.uint8
        if kind == "masks" and mk != NHK.NH_MASKS:
            raise ValueError("next-hop masks need at most 32 network ports per router")
        args = (a["router_gid"].astype(np.int64), a["port_off"].astype(np.int64),
                a["n_epp"].astype(np.int64), a["out_nbr"].astype(np.int64), dist)
        R = dist.shape[0]
        if mk == NHK.NH_MASKS:
            nh = np.empty((self.nR, R), dtype=np.uint32)
            NH.min_next_hop_masks(*args, nh)
            a["nh_min"] = nh
            self.next_hops = {"kind": "masks", "bytes": int(nh.nbytes), "multi": 0, "candidates": 0}
        elif mk == NHK.NH_PORTS:
            n_multi, n_cand = NH.port_table_sizes(*args)
            if n_cand >= 2 ** 32:          # uint32 offsets: keep scanning
                self._no_next_hops()
                return "none"
            multi = int(np.iinfo(entry).max)
            ent = np.empty((self.nR, R), dtype=entry)
            blk = np.empty((self.nR, (R + 63) // 64, 2), dtype=np.uint64)
            off = np.empty(n_multi + 1, dtype=np.uint32)
            cand = np.empty(max(n_cand, 1), dtype=entry)
            NH.build_port_table(*args, multi, ent, blk, off, cand)
            a.update(nh_port=ent, nh_blk=blk, nh_off=off, nh_cand=cand)
            self.prm[P.PR_NHMULTI] = multi
            self.next_hops = {"kind": f"ports ({np.dtype(entry).name})",
                              "bytes": int(ent.nbytes + blk.nbytes + off.nbytes + cand.nbytes),
                              "multi": int(n_multi), "candidates": int(n_cand)}
        else:
            self._no_next_hops()
            return "none"
        self.prm[P.PR_NHMIN] = mk
        self._args = None
        return self.next_hops["kind"]

    def reserve_records(self, n: int) -> None:
        """Grow the record pool, if needed, so that ``n`` more records can be taken (never
        beyond :attr:`max_records`, which the credits keep the part from exceeding).

        :meth:`advance` calls it with what its cycles may bring in (one flit per endpoint
        and per incoming cut channel per cycle, the latter unpacked after the window), a
        restore with the records it places; a pool that grows doubles, and only its
        records in use are copied (every array sized by the pool's ``n_rec`` is indexed by
        record but the stack of freed records, ``rec_free``, whose first ``rec_top`` count).
        """
        a = self.arrays
        have = self.sizes["n_rec"]
        used = int(a["rec_next"][0])
        top = int(a["rec_top"][0])
        if top + have - used >= n or have >= self.max_records:
            return
        self.sizes["n_rec"] = min(self.max_records, max(2 * have, used + n))
        for row in ST.sized_by("n_rec"):
            keep = top if row.name == "rec_free" else used
            new = ST.allocate(row, self.sizes)
            new[:keep] = a[row.name][:keep]
            a[row.name] = new
        self._args = None

    def group_of(self, name: str):
        """The kernel state group ``name`` (:data:`pdes.kernels.state_table.GROUPS`) as the
        stages receive it (views of :attr:`arrays`)."""
        G = next(g for g in ST.GROUPS if g.__name__ == name)
        return G(**{f: self.arrays[f] for f in G._fields})

    def advance(self, t0: int, t1: int) -> int:
        """Run cycles ``t0 .. t1-1`` (a status code): first make room in the record pool for
        every flit these cycles and the exchange after them may bring into the part."""
        self.reserve_records(self.records_per_cycle * (t1 - t0))
        self.groups()
        args = (np.int64(t0), np.int64(t1), self.prm, *self._args, self.ctx, self.ap)
        return int(self._window_call()(*args))

    def groups(self) -> tuple:
        """The kernel's grouped state (:data:`pdes.kernels.state_table.GROUPS`, views of
        :attr:`arrays`), the same objects until an array is replaced (a grown record pool)."""
        if self._args is None:
            a = self.arrays
            self._args = (tuple(G(**{f: a[f] for f in G._fields}) for G in ST.GROUPS),
                          cycle.scratch_views(a["scr"], self.nv, self.rp.speedup,
                                              int(self.prm[P.PR_NCLS])))
            if self.prm[P.PR_ALLOC] != 0:     # advance_iq: BookSim's allocators' scratch
                self._args += (iq.make_iq_scratch(self.prm, a["port_off"]),)
        return self._args[0]

    def _window_call(self) -> DirectCall:
        """The window loop's :class:`DirectCall` (``t0`` and ``t1`` made anew each window):
        its compiled code called directly, as the dispatcher's own call types its ~130 array
        arguments every window, 30-40 us, which a window of a few cycles on a small part, or
        a routing's snapshot epoch, pays each time.  A new one when the part's dispatcher
        changes (``PR_ALLOC``)."""
        disp = self.kernel_advance
        call = self._window
        if call is None or call.disp is not disp:
            call = self._window = DirectCall(disp, fresh=(0, 1))
        return call

    @property
    def kernel_advance(self):
        """The compiled window loop this part runs: its routing's ``advance``, or
        ``advance_iq`` with BookSim's allocation (``PR_ALLOC``)."""
        return self.kernel.advance_iq if self.prm[P.PR_ALLOC] != 0 else self.kernel.advance

    # ---------------------------------------------------------------- outboxes
    def outbox_caps(self) -> tuple[int, int]:
        """Flit and credit outbox slots per cut channel."""
        return int(self.prm[P.PR_FOCAP]), int(self.prm[P.PR_COCAP])

    def port_occupancy(self, t: int, out: np.ndarray) -> None:
        """Write into ``out[channel]`` the backlog of every local network output port.

        Backlog = flits sent or queued on the port whose credits have not
        arrived by cycle ``t``, minus the port's credit round trip (that many
        are outstanding at full rate without any queue), at least 0.  No state
        is changed.
        """
        a = self.arrays
        prm = self.prm
        if self._occ_ports is None:     # the ports, their round trips and channels: fixed
            ports = np.nonzero(self.is_net)[0]
            rtt = credit_rtt.py_func(prm, a["out_lat"][ports].astype(np.int64))   # every port's
            # a VC of at most a round trip: the allowance is its capacity less one flit
            rtt = np.minimum(rtt, a["cr_cap"][ports].astype(np.int64) - 1)
            # called directly: a routing's snapshot every few cycles would otherwise pay for
            # Numba's typing of the 13 arguments at each call (most of its time on a small part)
            self._occ_ports = (ports, rtt, np.asarray(self.out_channel[ports], np.int64),
                               DirectCall(_occupancy, fresh=(1, 2, 5)))
        ports, rtt, chan, call = self._occ_ports
        call(ports, self.nv, prm[P.PR_HOT], a["cr_cap"], a["cr_deep"], np.int64(t),
             a["cred"], a["cr_t"], a["cr_head"], a["cr_cnt"], rtt, chan, out)

    # -------------------------------------------------------------- accounting
    def flits_held(self) -> int:
        """Flits inside this part: input buffers (including flits on their way in),
        output queues and outboxes."""
        a = self.arrays
        return int(a["ib_cnt"].sum() + a["oq_cnt"].sum() + a["fo_cnt"].sum())

    def occupancy_ok(self) -> bool:
        """Whether the input-port occupancy bitmap (``ip_occ``, kept by the kernels) marks
        exactly the ports with a flit in a VC, or is due to be built (``PR_OCC`` = 0)."""
        if self.prm[P.PR_OCC] == 0:
            return True
        a = self.arrays
        busy = np.nonzero((a["ib_cnt"].reshape(self.nP, self.nv) != 0).any(axis=1))[0]
        want = np.zeros(a["ip_occ"].shape, np.uint64)
        np.bitwise_or.at(want, busy >> 6, np.uint64(1) << (busy & 63).astype(np.uint64))
        return bool(np.array_equal(a["ip_occ"].view(np.uint64), want))

    def source_queue_flits(self) -> int:
        """Flits waiting in the part's source queues (whole packets and the one being injected)."""
        a = self.arrays
        return int(a["ep_pending"].sum() * self.rp.packet_size + a["ep_cur_left"].sum())


def _numbering(topo, loc) -> dict:
    """Local numbering of the routers ``loc`` (increasing global ids): on each router its
    endpoint ports, then its network ports in neighbour order; endpoints by router."""
    nR = loc.size
    p = topo.endpoints[loc].astype(np.int64)
    nports = p + topo.degree[loc].astype(np.int64)
    port_off = np.zeros(nR + 1, dtype=np.int64)
    np.cumsum(nports, out=port_off[1:])
    nP = int(port_off[-1])
    port_router = np.repeat(np.arange(nR, dtype=np.int64), nports)
    idx = np.arange(nP, dtype=np.int64) - port_off[port_router]
    is_ep = idx < p[port_router]
    ep_gid = (np.repeat(topo.endpoint_offsets[loc], p) + (np.arange(int(p.sum())) -
                                                          np.repeat(np.cumsum(p) - p, p))).astype(np.int64)
    return {"nR": nR, "nP": nP, "nE": ep_gid.size, "loc": loc, "router_gid": loc.astype(np.int32),
            "port_off": port_off, "n_epp": p, "port_router": port_router, "idx": idx,
            "is_net": ~is_ep, "ep_gid": ep_gid,
            "ep_port": np.nonzero(is_ep)[0].astype(np.int64)}  # endpoint ports: in endpoint order


def _ports(topo, link_latency, elat: int, num: dict) -> dict:
    """Per local port: its link (CSR index in the topology, neighbour, channel, class,
    latency), the local port at the other end (``-1``: another part's, ``remote``) and
    its endpoint."""
    nP, nE, is_net, p = num["nP"], num["nE"], num["is_net"], num["n_epp"]
    pr = num["port_router"][is_net]
    csr = np.full(nP, -1, dtype=np.int64)
    csr[is_net] = topo.port_offsets[num["loc"]][pr] + (num["idx"][is_net] - p[pr])
    csr2local = np.full(2 * topo.n_links, -1, dtype=np.int64)
    csr2local[csr[is_net]] = np.nonzero(is_net)[0]
    out_nbr = np.full(nP, -1, dtype=np.int32)
    out_nbr[is_net] = topo.port_neighbor[csr[is_net]]
    out_ch = np.full(nP, -1, dtype=np.int64)
    out_ch[is_net] = topo.port_out_channel[csr[is_net]]
    out_ltype = np.zeros(nP, dtype=np.int8)
    out_ltype[is_net] = topo.link_class[out_ch[is_net] // 2]
    out_lat = np.zeros(nP, dtype=np.int64)
    out_lat[is_net] = np.asarray(link_latency, dtype=np.int64)[out_ch[is_net] // 2]
    in_lat = np.full(nP, elat, dtype=np.int64)
    in_lat[is_net] = out_lat[is_net]
    peer_local = np.full(nP, -1, dtype=np.int64)
    peer_local[is_net] = csr2local[topo.port_peer[csr[is_net]]]
    in_sender = np.where(is_net, peer_local, -1).astype(np.int64)
    in_sender[num["ep_port"]] = nP + np.arange(nE)
    out_ep = np.full(nP, -1, dtype=np.int64)
    out_ep[num["ep_port"]] = np.arange(nE)
    return {"out_nbr": out_nbr, "out_channel": out_ch, "out_ltype": out_ltype, "out_lat": out_lat,
            "in_lat": in_lat, "out_dest": np.where(is_net, peer_local, -1).astype(np.int64),
            "in_sender": in_sender, "out_ep": out_ep, "remote": is_net & (peer_local < 0)}


def _capacities(topo, rp: RouterParams, num: dict, out_ch) -> dict:
    """Buffer capacities (flits per VC): an input port's from its link (both ends of a link
    are alike) or the endpoints'; a sender's credits count the input VCs at the other end
    of its link, an endpoint's those of the port it injects into.  The rings' layout
    (:func:`ring_layout`) and the initial credits."""
    nP, nE, is_net, nv = num["nP"], num["nE"], num["is_net"], rp.num_vcs
    ecap = rp.endpoint_capacity()
    in_cap = np.full(nP, ecap, dtype=np.int64)
    in_cap[is_net] = rp.link_capacity(topo.n_links)[out_ch[is_net] // 2]
    cr_cap = np.concatenate([in_cap, np.full(nE, ecap, dtype=np.int64)])
    hot = rp.hot_slots(topo.n_links)
    iv_deep, n_ib = ring_layout(np.repeat(in_cap, nv), hot)
    cr_deep, n_cr = ring_layout(np.repeat(cr_cap, nv), hot)
    # credits: a counter per (sender, VC), full at the start
    cred = np.zeros(((nP + nE), nv), dtype=np.int64)
    cred[:nP][is_net] = in_cap[is_net, None]
    cred[nP:, :] = ecap            # endpoints inject into any VC
    return {"in_cap": in_cap, "cr_cap": cr_cap, "hot": hot, "iv_deep": iv_deep, "n_ib": n_ib,
            "cr_deep": cr_deep, "n_cr": n_cr, "cred": cred.ravel()}


def _params(rp: RouterParams, sizes: dict, *, hot: int, hist_max: int) -> np.ndarray:
    """The kernel's parameter vector (the slots the part knows; the engine fills the run's:
    seed, traffic, routing classes, next-hop table)."""
    prm = np.zeros(P.NPRM, dtype=np.int64)
    t = rp.timing
    for slot, value in ((P.PR_NV, rp.num_vcs), (P.PR_OQCAP, rp.output_flits),
                        (P.PR_PKT, rp.packet_size), (P.PR_CD, rp.credit_delay),
                        (P.PR_RD, t.head), (P.PR_VAD, t.va_to_sa), (P.PR_SAD, t.sa_to_send),
                        (P.PR_CHX, t.channel), (P.PR_ECD, t.endpoint_credit),
                        (P.PR_SPEEDUP, rp.speedup), (P.PR_ELAT, rp.endpoint_latency),
                        (P.PR_HMAX, hist_max), (P.PR_FOCAP, sizes["focap"]),
                        (P.PR_COCAP, sizes["cocap"]), (P.PR_INJECT, 1),
                        (P.PR_M0, np.iinfo(np.int32).max), (P.PR_M1, np.iinfo(np.int32).max),
                        (P.PR_HOT, hot), (P.PR_PRIV, rp.private_flits)):
        prm[slot] = value
    # the stages' prefetch pipelines, on while the part holds at least PF_MIN_FLITS flits (the
    # window loop sets PR_PF before each cycle: pdes.kernels.cycle.prefetch_gate)
    prm[P.PR_PF] = 0
    prm[P.PR_PFMIN] = cycle.PF_MIN_FLITS
    prm[P.PR_SX] = 1
    prm[P.PR_ISX] = 1
    prm[P.PR_HRDY] = t.head
    if rp.booksim:
        from pdes.kernels.iq import head_offset
        valg, salg, viters, siters, rdel, vdel, sdel, xdel, sx, hold, waittail, isx = rp.booksim
        for slot, value in ((P.PR_ALLOC, 1), (P.PR_VALG, valg), (P.PR_SALG, salg),
                            (P.PR_VITERS, viters), (P.PR_SITERS, siters), (P.PR_RDEL, rdel),
                            (P.PR_VDEL, vdel), (P.PR_SDEL, sdel), (P.PR_XDEL, xdel),
                            (P.PR_SX, sx), (P.PR_HRDY, head_offset(rdel, sx)),
                            (P.PR_PFMIN, np.iinfo(np.int64).max),
                            (P.PR_HOLD, hold), (P.PR_WAITTAIL, waittail),
                            (P.PR_ISX, rp.input_speedup)):
            prm[slot] = value
    return prm
