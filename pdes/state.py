"""Flat-array state of one partition (the routers one rank owns).

:class:`PartState` builds, from the global topology and an owner array,
everything the cycle kernel (``advance``) needs: local port numbering,
delay lines for incoming channels, credit lines for senders, VC buffers,
output queues, endpoint source queues, outboxes for cut channels and
integer statistics.  Nothing here depends on how many partitions exist
except which channels are cut.

Local numbering: routers in increasing global id; on each router its
endpoint ports, then its network ports in neighbour order (the topology's
CSR order).  Senders (owners of credit counters) are local ports
``0..nP-1`` followed by local endpoints ``nP..nP+nE-1``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.core.jit import njit
from pdes.kernels import cycle, generate
from pdes.kernels import nexthop as NH
from models.core import nexthop as NHK
from models.core import params as prm_slots
from models.core.record import HIST_OCTAVES, HIST_SUB, NF, NF_HOT, NSAMPLE, NSTAT
from pdes.timing import KernelTiming


def next_pow2(x: np.ndarray) -> np.ndarray:
    x = np.maximum(np.asarray(x, dtype=np.int64), 1)
    return (1 << np.ceil(np.log2(x)).astype(np.int64)).astype(np.int64)


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


def _line_aligned_zeros(shape):
    """An int32 array of zeros whose data starts on a 64-byte (cache line) boundary."""
    n = int(np.prod(shape))
    raw = np.zeros(n + 16, dtype=np.int32)
    off = (-raw.ctypes.data % 64) // 4
    return raw[off:off + n].reshape(shape)


@njit
def _occupancy(ports, nv, hot, cr_cap, cr_deep, t, cred, cr_t, cr_head, cr_cnt, rtt):
    out = np.zeros(ports.shape[0], dtype=np.int32)
    nK = cr_cnt.shape[0]
    for i in range(ports.shape[0]):
        q = 0
        cap = cr_cap[ports[i]]
        for v in range(nv):
            kk = ports[i] * nv + v
            c = cred[kk]
            h = cr_head[kk]
            for j in range(cr_cnt[kk]):
                if cr_t[h * nK + kk if h < hot else cr_deep[kk] + h] > t:
                    break
                c += 1
                h = h + 1 if h + 1 < cap else 0
            q += cap - c
        q -= rtt[i]
        out[i] = q if q > 0 else 0
    return out


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


_KEEP_INT64 = frozenset({"st", "smp", "hist_plat", "hist_nlat", "hist_hops", "hist_msg", "link_flits",
                         "ep_inj", "ep_del", "ep_seq", "ep_pending", "iv_deep", "cr_deep",
                         "rec_top", "rec_next"})

# per-VC and per-port state touched at random by the cycle loop, in the narrowest type its
# range allows, so that more of it stays in the core's caches (the limits are checked in
# pdes.engine: MAX_VC_FLITS, MAX_VCS, MAX_VCS_PER_ROUTER)
_NARROW = {
    "ib_head": np.int16, "ib_cnt": np.int16,                       # < flits per VC
    "cr_head": np.int16, "cr_cnt": np.int16, "cred": np.int16, "cr_res": np.int16,  # <= flits per VC
    "iv_ovc": np.int8, "rr_in": np.int8,                           # VC indices
    "rr_out": np.int16, "rr_va": np.int16,                         # < input (port, VC)s of a router
}



class PartState:
    """State of the routers with ``owner == part``."""

    def __init__(self, topo, link_latency, owner, part, rp: RouterParams, *, ep_active,
                 window: int, hist_max: int, n_hop_bins: int = 64):
        R = topo.n_routers
        owner = np.asarray(owner, dtype=np.int32)
        self.part = int(part)
        self.nv = nv = rp.num_vcs
        self.rp = rp
        loc = np.nonzero(owner == part)[0].astype(np.int64)
        nR = loc.size
        self.router_gid = loc.astype(np.int32)
        p = topo.endpoints[loc].astype(np.int64)
        deg = topo.degree[loc].astype(np.int64)
        nports = p + deg
        port_off = np.zeros(nR + 1, dtype=np.int64)
        np.cumsum(nports, out=port_off[1:])
        nP = int(port_off[-1])
        port_router = np.repeat(np.arange(nR, dtype=np.int64), nports)
        idx = np.arange(nP, dtype=np.int64) - port_off[port_router]
        is_ep = idx < p[port_router]
        is_net = ~is_ep

        # --- endpoints (local order: by router, then endpoint index)
        ep_first_r = topo.endpoint_offsets[loc]
        ep_gid = (np.repeat(ep_first_r, p) + (np.arange(int(p.sum())) -
                                              np.repeat(np.cumsum(p) - p, p))).astype(np.int64)
        nE = ep_gid.size
        ep_port = np.nonzero(is_ep)[0].astype(np.int64)  # endpoint ports are in the same order
        self.ep_gid = ep_gid

        # --- network ports: CSR index in the global topology
        csr = np.full(nP, -1, dtype=np.int64)
        csr[is_net] = topo.port_offsets[loc][port_router[is_net]] + (idx[is_net] - p[port_router[is_net]])
        csr2local = np.full(2 * topo.n_links, -1, dtype=np.int64)
        csr2local[csr[is_net]] = np.nonzero(is_net)[0]
        out_nbr = np.full(nP, -1, dtype=np.int32)
        out_nbr[is_net] = topo.port_neighbor[csr[is_net]]
        out_ch = np.full(nP, -1, dtype=np.int64)
        out_ch[is_net] = topo.port_out_channel[csr[is_net]]
        lat = np.asarray(link_latency, dtype=np.int64)
        elat = rp.endpoint_latency
        out_ltype = np.zeros(nP, dtype=np.int8)
        out_ltype[is_net] = topo.link_class[out_ch[is_net] // 2]
        out_lat = np.zeros(nP, dtype=np.int64)
        out_lat[is_net] = lat[out_ch[is_net] // 2]
        in_lat = np.full(nP, elat, dtype=np.int64)
        in_lat[is_net] = out_lat[is_net]
        peer = np.full(nP, -1, dtype=np.int64)
        peer[is_net] = topo.port_peer[csr[is_net]]
        peer_local = np.full(nP, -1, dtype=np.int64)
        peer_local[is_net] = csr2local[peer[is_net]]
        remote = is_net & (peer_local < 0)

        out_dest = np.where(is_net, peer_local, -1).astype(np.int64)
        in_sender = np.where(is_net, peer_local, -1).astype(np.int64)
        in_sender[ep_port] = nP + np.arange(nE)
        out_ep = np.full(nP, -1, dtype=np.int64)
        out_ep[ep_port] = np.arange(nE)

        # cut channels: outgoing (this part sends) and incoming (credits go back)
        cut_ports = np.nonzero(remote)[0]
        nC = cut_ports.size
        out_cut = np.full(nP, -1, dtype=np.int64)
        out_cut[cut_ports] = np.arange(nC)
        in_cut = np.full(nP, -1, dtype=np.int64)
        in_cut[cut_ports] = np.arange(nC)
        self.cut_ports = cut_ports
        self.cut_out_channel = out_ch[cut_ports]            # flits leave on these channels
        self.cut_in_channel = out_ch[cut_ports] ^ 1         # flits arrive on these (credits go back)
        self.cut_peer_part = owner[out_nbr[cut_ports]] if nC else np.zeros(0, np.int32)
        self.cut_latency = out_lat[cut_ports]
        # global channel -> local receiving port / local sending port (for received data)
        self.chan_in_port = {}   # filled lazily as arrays below
        n_ch = 2 * topo.n_links
        # (int32: two of these global-sized maps per rank)
        self.in_port_of_channel = np.full(n_ch, -1, dtype=np.int32)
        self.in_port_of_channel[out_ch[is_net] ^ 1] = np.nonzero(is_net)[0]
        self.out_port_of_channel = np.full(n_ch, -1, dtype=np.int32)
        self.out_port_of_channel[out_ch[is_net]] = np.nonzero(is_net)[0]
        self.out_channel = out_ch

        # --- buffer capacities (flits per VC): an input port's from its link (both ends of a
        # link are alike) or the endpoints'; a sender's credits count the input VCs at the
        # other end of its link, an endpoint's those of the port it injects into
        ecap = rp.endpoint_capacity()
        in_cap = np.full(nP, ecap, dtype=np.int64)
        in_cap[is_net] = rp.link_capacity(topo.n_links)[out_ch[is_net] // 2]
        cr_cap = np.concatenate([in_cap, np.full(nE, ecap, dtype=np.int64)])
        hot = rp.hot_slots(topo.n_links)
        iv_deep, n_ib = ring_layout(np.repeat(in_cap, nv), hot)
        cr_deep, n_cr = ring_layout(np.repeat(cr_cap, nv), hot)
        self.in_cap, self.cr_cap = in_cap, cr_cap

        # --- credits: a counter and a FIFO of arrival cycles per (sender, VC)
        nS = nP + nE
        cred = np.zeros(nS * nv, dtype=np.int32)
        cred.reshape(-1, nv)[:nP][is_net] = in_cap[is_net, None]
        cred.reshape(-1, nv)[nP:, :] = ecap            # endpoints inject into any VC

        S = rp.speedup
        maxp = int(nports.max()) if nR else 1
        self.window = int(window)
        focap = max(self.window, 1)
        cocap = max(self.window * S, 1)
        prm = np.zeros(prm_slots.NPRM, dtype=np.int64)
        prm[prm_slots.PR_NV] = nv
        prm[prm_slots.PR_VCCAP] = rp.vc_flits
        prm[prm_slots.PR_OQCAP] = rp.output_flits
        prm[prm_slots.PR_PKT] = rp.packet_size
        prm[prm_slots.PR_CD] = rp.credit_delay
        prm[prm_slots.PR_RD] = rp.timing.head
        prm[prm_slots.PR_VAD] = rp.timing.va_to_sa
        prm[prm_slots.PR_SAD] = rp.timing.sa_to_send
        prm[prm_slots.PR_STD] = 0
        prm[prm_slots.PR_CHX] = rp.timing.channel
        prm[prm_slots.PR_ECD] = rp.timing.endpoint_credit
        prm[prm_slots.PR_SPEEDUP] = S
        prm[prm_slots.PR_ELAT] = elat
        prm[prm_slots.PR_HMAX] = hist_max
        prm[prm_slots.PR_FOCAP] = focap
        prm[prm_slots.PR_COCAP] = cocap
        prm[prm_slots.PR_INJECT] = 1
        prm[prm_slots.PR_M0] = np.iinfo(np.int32).max
        prm[prm_slots.PR_M1] = np.iinfo(np.int32).max
        prm[prm_slots.PR_HOT] = hot
        prm[prm_slots.PR_PRIV] = rp.private_flits
        # the stages' prefetch pipelines, for a part whose VC state outgrows the caches (on a
        # smaller one they cost more than they save); they never change a result
        prm[prm_slots.PR_PF] = 1 if nP * nv >= cycle.PF_MIN_VCS else 0
        self.prm = prm

        i32 = np.int32
        # every input VC and output queue slot full: the most records the part can hold
        self.max_records = int(rp.port_flits(in_cap).sum() + nP * rp.output_flits)
        self.records_per_cycle = nE + nC      # at most one new flit per endpoint and cut channel
        n_rec = min(self.max_records, 1024)   # grown by reserve_records
        a = self.arrays = {}
        a.update(
            port_off=port_off, n_epp=p.astype(np.int64), router_gid=self.router_gid,
            port_router=port_router,
            in_lat=in_lat, in_sender=in_sender, in_cut=in_cut,
            out_lat=out_lat, out_ltype=out_ltype, out_dest=out_dest, out_cut=out_cut, out_nbr=out_nbr, out_ep=out_ep,
            ep_gid=ep_gid, ep_port=ep_port,
            ep_active=np.asarray(ep_active, dtype=np.int8)[ep_gid] if nE else np.zeros(0, np.int8),
            in_cap=in_cap, cr_cap=cr_cap, iv_deep=iv_deep, cr_deep=cr_deep,
            # the rings are allocated for every slot, but only the pages a flit or credit
            # has used become resident (np.zeros maps zero pages lazily; nothing here
            # writes them)
            cr_t=np.zeros(n_cr, dtype=i32), cr_head=np.zeros(nS * nv, dtype=i32),
            cr_cnt=np.zeros(nS * nv, dtype=i32), cred=cred,
            # shared buffers: flits of the packet that holds the output VC not yet sent
            # (reserved at VC allocation, taken from the credits by switch allocation)
            cr_res=np.zeros(nS * nv, dtype=i32),
            # flit records live in one pool and stay put while the flit crosses a router:
            # buffers and queues hold record indices, so a hop moves one int32, not a
            # record.  rec_free[0:rec_top[0]] are the freed records, records from
            # rec_next[0] on were never used; reserve_records grows the pool (up to
            # max_records: every buffer and queue slot full) before it can run out.
            # Fields 0..NF_HOT-1 (read at every hop) and the others are in two arrays of
            # 32-byte rows, so the records of the flits in the network take half the cache
            rec=_line_aligned_zeros((n_rec, NF_HOT)), rec_c=_line_aligned_zeros((n_rec, NF_HOT)),
            rec_free=np.zeros(n_rec, dtype=i32),
            rec_top=np.zeros(1, dtype=np.int64), rec_next=np.zeros(1, dtype=np.int64),
            ib_id=np.zeros(n_ib, dtype=i32),
            # ready cycle of each buffered flit, beside the records: a dense array the
            # pops read without touching the (much larger) record of the next flit
            ib_rdy=np.zeros(n_ib, dtype=i32),
            ib_head=np.zeros(nP * nv, dtype=i32), ib_cnt=np.zeros(nP * nv, dtype=i32),
            iv_ready=np.zeros(nP * nv, dtype=np.int64),
            iv_out=np.full(nP * nv, -1, dtype=np.int64), iv_ovc=np.zeros(nP * nv, dtype=np.int64),
            iv_alloc=np.zeros(nP * nv, dtype=np.int8), iv_sa_ready=np.zeros(nP * nv, dtype=np.int64),
            # the cycle from which a VC may request the switch (allocated, front flit ready)
            # or VC allocation (head not yet allocated), NEVER when it has nothing to do:
            # one load and compare per VC in the sweeps instead of four
            iv_sa_at=np.full(nP * nv, prm_slots.NEVER, dtype=np.int64),
            iv_va_at=np.full(nP * nv, prm_slots.NEVER, dtype=np.int64),
            ov_owner=np.full(nP * nv, -1, dtype=np.int64),
            oq_id=np.zeros(nP * rp.output_flits, dtype=i32),
            oq_rdy=np.zeros(nP * rp.output_flits, dtype=i32),
            oq_head=np.zeros(nP, dtype=i32), oq_cnt=np.zeros(nP, dtype=i32),
            oq_ready=np.full(nP, prm_slots.NEVER, dtype=np.int64),   # front's ready cycle, NEVER if empty
            rr_in=np.zeros(nP, dtype=np.int64), rr_out=np.zeros(nP, dtype=np.int64),
            rr_va=np.zeros(nP * nv, dtype=np.int64),
            ep_pending=np.zeros(nE, dtype=np.int64), ep_next_gen=np.zeros(nE, dtype=np.int64),
            ep_cur_left=np.zeros(nE, dtype=np.int64), ep_cur_vc=np.zeros(nE, dtype=np.int64),
            ep_cur_rec=np.zeros((nE, NF), dtype=i32),
            ep_seq=np.zeros(nE, dtype=np.int64),
            fo_rec=np.zeros((nC * focap, NF), dtype=i32), fo_t=np.zeros(nC * focap, dtype=np.int64),
            fo_cnt=np.zeros(nC, dtype=np.int64),
            co_t=np.zeros(nC * cocap, dtype=np.int64), co_vc=np.zeros(nC * cocap, dtype=np.int64),
            co_cnt=np.zeros(nC, dtype=np.int64),
            st=np.zeros(NSTAT, dtype=np.int64), smp=np.zeros(NSAMPLE, dtype=np.int64),
            hist_plat=np.zeros(hist_max + HIST_SUB * HIST_OCTAVES, dtype=np.int64),
            hist_nlat=np.zeros(hist_max + HIST_SUB * HIST_OCTAVES, dtype=np.int64),
            hist_hops=np.zeros(n_hop_bins, dtype=np.int64),
            hist_msg=np.zeros(hist_max + HIST_SUB * HIST_OCTAVES, dtype=np.int64),
            ep_cur_msg=np.zeros(nE, dtype=np.int64),
            link_flits=np.zeros(nP, dtype=np.int64),
            ep_inj=np.zeros(nE, dtype=np.int64), ep_del=np.zeros(nE, dtype=np.int64),
            scr=np.zeros(maxp * int(cycle.scratch_per_port(nv, S)), dtype=np.int64),
        )
        # kernel state that is swept every cycle is kept in int32 (half the cache
        # footprint of int64); counters that can grow large stay int64
        # (an array of zeros is made again rather than converted: its pages, e.g. the outboxes',
        # then stay unmapped until used)
        for name, arr in a.items():
            to = _NARROW.get(name, np.int32 if arr.dtype == np.int64 and name not in _KEEP_INT64
                             else None)
            if to is not None:
                a[name] = np.zeros(arr.shape, dtype=to) if not arr.any() else arr.astype(to)
        a["st"][cycle_last_move_index()] = -1
        self.nP, self.nE, self.nR, self.nC = nP, nE, nR, nC
        self.is_net = is_net

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
        self._no_next_hops()

    def _no_next_hops(self) -> None:
        """Stand-ins for the next-hop table (the routing scans the distance rows)."""
        self.arrays.update(nh_min=np.zeros((1, 1), np.uint32), nh_port=np.zeros((1, 1), np.uint8),
                           nh_blk=np.zeros((1, 1, 2), np.uint64), nh_off=np.zeros(2, np.uint32),
                           nh_cand=np.zeros(1, np.uint8))
        self.prm[prm_slots.PR_NHMIN] = NHK.NH_NONE
        self.prm[prm_slots.PR_NHMULTI] = 0
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
            self.prm[prm_slots.PR_NHMULTI] = multi
            self.next_hops = {"kind": f"ports ({np.dtype(entry).name})",
                              "bytes": int(ent.nbytes + blk.nbytes + off.nbytes + cand.nbytes),
                              "multi": int(n_multi), "candidates": int(n_cand)}
        else:
            self._no_next_hops()
            return "none"
        self.prm[prm_slots.PR_NHMIN] = mk
        self._args = None
        return self.next_hops["kind"]

    def reserve_records(self, n: int) -> None:
        """Grow the record pool, if needed, so that ``n`` more records can be taken (never
        beyond :attr:`max_records`, which the credits keep the part from exceeding).

        :meth:`advance` calls it with what its cycles may bring in (one flit per endpoint
        and per incoming cut channel per cycle, the latter unpacked after the window), a
        restore with the records it places; a pool that grows doubles, and only its
        records in use are copied.
        """
        a = self.arrays
        have = a["rec"].shape[0]
        used = int(a["rec_next"][0])
        if int(a["rec_top"][0]) + have - used >= n or have >= self.max_records:
            return
        size = min(self.max_records, max(2 * have, used + n))
        for name in ("rec", "rec_c"):
            new = _line_aligned_zeros((size, NF_HOT))
            new[:used] = a[name][:used]
            a[name] = new
        free = np.zeros(size, dtype=np.int32)
        top = int(a["rec_top"][0])
        free[:top] = a["rec_free"][:top]
        a["rec_free"] = free
        self._args = None

    def advance(self, t0: int, t1: int) -> int:
        """Run cycles ``t0 .. t1-1`` (a status code): first make room in the record pool for
        every flit these cycles and the exchange after them may bring into the part."""
        self.reserve_records(self.records_per_cycle * (t1 - t0))
        if self._args is None:   # the kernel's grouped state (views of self.arrays)
            a = self.arrays
            self._args = (tuple(G(**{f: a[f] for f in G._fields}) for G in cycle.GROUPS),
                          a["scr"])
        return int(self.kernel.advance(np.int64(t0), np.int64(t1), self.prm, *self._args, self.ctx,
                                       self.ap))

    # ---------------------------------------------------------------- outboxes
    def outbox_caps(self) -> tuple[int, int]:
        """Flit and credit outbox slots per cut channel."""
        return int(self.prm[prm_slots.PR_FOCAP]), int(self.prm[prm_slots.PR_COCAP])

    def port_occupancy(self, t: int, out: np.ndarray) -> None:
        """Write into ``out[channel]`` the backlog of every local network output port.

        Backlog = flits sent or queued on the port whose credits have not
        arrived by cycle ``t``, minus the port's credit round trip (that many
        are outstanding at full rate without any queue), at least 0.  No state
        is changed.
        """
        a = self.arrays
        prm = self.prm
        ports = np.nonzero(self.is_net)[0]
        rtt = (2 * (a["out_lat"][ports].astype(np.int64) + prm[prm_slots.PR_CHX]) + prm[prm_slots.PR_SAD]
               + prm[prm_slots.PR_STD] + prm[prm_slots.PR_CD])       # as credit_rtt of the routing kernels
        occ = _occupancy(ports, self.nv, prm[prm_slots.PR_HOT], a["cr_cap"], a["cr_deep"], np.int64(t),
                         a["cred"], a["cr_t"], a["cr_head"], a["cr_cnt"], rtt)
        out[self.out_channel[ports]] = occ

    # -------------------------------------------------------------- accounting
    def flits_held(self) -> int:
        """Flits inside this part: input buffers (including flits on their way in),
        output queues and outboxes."""
        a = self.arrays
        return int(a["ib_cnt"].sum() + a["oq_cnt"].sum() + a["fo_cnt"].sum())

    def source_queue_flits(self) -> int:
        a = self.arrays
        return int(a["ep_pending"].sum() * self.rp.packet_size + a["ep_cur_left"].sum())


def cycle_last_move_index():
    from models.core.record import S_LAST_MOVE
    return S_LAST_MOVE

