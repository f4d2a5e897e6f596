"""Failures during a run (``faults.at_cycle``): the network loses its failed elements at a
fixed cycle while flits are in flight.

The fault set is the one :mod:`models.faults` selects on the intact network (the same on
any rank count).  Until ``at_cycle`` the run is that of the intact network.  At the start of
cycle ``at_cycle`` (a window boundary: every window ends there, after its exchange, so
every flit sent before it sits in its receiving buffer), every part, in the same order of
steps:

1. marks the ports of the failed links and of the failed routers as down
   (``port_down``), stops the endpoints of failed routers generating packets
   (``ep_active``) and turns on the kernel's drop rule (``PR_FAULT``);
2. finds the packets the failure destroys (:func:`doomed`): every packet with a flit in a
   failed router, on a failed link (a flit that has not arrived by ``at_cycle``), or in
   the output queue of a failed port; every packet whose route holds a VC of a failed
   port; every packet cut in two by a failed link (its head has crossed, its tail has
   not).  A packet is identified by (source endpoint, sequence number), and the parts
   agree on the union of these sets, so that a packet that spans several parts or ranks
   is removed from all of them;
3. removes every flit of those packets (:func:`remove`): from the input VCs (returning
   each slot's credit to its sender), the output queues (the credit the flit took comes
   back), and the source that was still injecting it; frees the VCs and switch paths
   they held.  Each removed flit counts in ``dropped_flits``, each packet once in
   ``dropped_packets``; a head that has been routed but not allocated a VC towards a
   failed port is routed again.

From then on the kernel's drop rule applies (``pdes.kernels.cycle.discard_front``): a head
whose route leads to a failed port, or that finds no route, is dropped at that router with
the rest of its packet.  The routing tables stay those of the intact network until the
reroute, ``reroute_cycles`` later (:func:`carry_over`, called by the loop): the packets in
the failed ports' input buffers are dropped, and the run goes on as a run of the degraded
network (the ``Prepared`` of the same ``[faults]`` from the start), its state carried over
in the checkpoint's global numbering (:func:`remap`).  Everything is a function of the
global state at a fixed cycle, so the result is the same on any rank count.
"""
from __future__ import annotations

import numpy as np

from models.core import params as P
from models.core.params import IV_DISCARD, NEVER
from models.core.record import (F_CTIME, F_FLIT, F_HOPS, F_SEQ, F_SRC, NF_HOT, S_DROPPED_FLITS,
                                S_DROPPED_MEAS, S_DROPPED_PKTS, S_INFLIGHT)


# --------------------------------------------------------------------------- the plan
def mid_run(cfg: dict) -> bool:
    """Whether the config fails its elements during the run rather than before it."""
    from models.faults import configured
    return configured(cfg["faults"]) and cfg["faults"]["at_cycle"] > 0


class Failure:
    """The failure of a run: its cycle and fault set (ids of the intact network)."""

    def __init__(self, at_cycle: int, reroute_cycles: int, fault_set, topo):
        self.at_cycle = int(at_cycle)
        self.reroute_at = int(at_cycle) + int(reroute_cycles)
        self.degraded = None        # the Prepared of the degraded network (pdes.build.prepare)
        self.fs = fault_set
        self.failed_link = np.zeros(topo.n_links, dtype=bool)
        self.failed_link[fault_set.links] = True
        self.failed_router = np.zeros(topo.n_routers, dtype=bool)
        self.failed_router[fault_set.routers] = True

    active = (0, 0, 0)
    """Active endpoints (sources) of the run's three parts: the intact network's before
    ``at_cycle``, without the failed routers' (silent from the failure) until the reroute, the
    degraded network's after it (:func:`pdes.build.prepare` sets them)."""

    def attrs(self) -> dict:
        """The counts of ``/faults`` (and the cycle)."""
        out = {**self.fs.summary(), "at_cycle": self.at_cycle, "reroute_cycle": self.reroute_at,
               "active_before_failure": self.active[0], "active_until_reroute": self.active[1],
               "active_after_reroute": self.active[2]}
        if self.degraded is not None:
            out["dropped_by_traffic"] = self.degraded.topo.meta["faults"]["dropped_by_traffic"]
        return out

    def window_endpoints(self, m0: int, m1: int) -> float:
        """The active endpoints averaged over the cycles ``[m0, m1)``: the divisor of the
        window's loads (:func:`pdes.reduce.results`)."""
        return active_over(self.active, self.at_cycle, self.reroute_at, m0, m1)


def active_over(active, at: int, reroute: int, m0: int, m1: int) -> float:
    """Active endpoints averaged over the cycles ``[m0, m1)`` of a run whose failure is at
    ``at`` and reroute at ``reroute`` (``active``: :attr:`Failure.active`)."""
    def span(a, b):
        return max(0, min(b, m1) - max(a, m0))
    n = m1 - m0
    if n <= 0:
        return float(active[2])
    lo = min(m0, at)
    return (active[0] * span(lo, at) + active[1] * span(at, reroute)
            + active[2] * span(reroute, max(m1, reroute))) / n


# --------------------------------------------------------------------------- marks
def _down_ports(part, topo, failure: Failure) -> np.ndarray:
    """(nP,) bool: the part's ports of failed links or failed routers."""
    a = part.arrays
    pr = a["port_router"].astype(np.int64)
    r = part.router_gid.astype(np.int64)[pr]
    down = failure.failed_router[r].copy()
    net = part.is_net
    link = part.out_channel[net] // 2
    down[net] |= failure.failed_link[link]
    return down


def resume(part, prep) -> None:
    """A part restored from a checkpoint after the failure (:func:`pdes.engine`): its ports
    down and drop rule as at the failure, or, after the reroute (``prep`` is the degraded
    network's), as the reroute left them."""
    failure = prep.failure
    if prep is failure.degraded:
        _degraded_marks(part, prep.topo)
    else:
        mark(part, prep.topo, failure)


def _degraded_marks(part, topo) -> None:
    """The degraded network's drop rule: every port of a failed or cut-off router is down."""
    part.prm[P.PR_FAULT] = 2
    r = part.router_gid.astype(np.int64)[part.arrays["port_router"].astype(np.int64)]
    part.arrays["port_down"][...] = ~topo.up[r]


def mark(part, topo, failure: Failure) -> None:
    """Step 1: the failed ports down, the failed routers' endpoints silent, the drop rule on
    (also what a restart after ``at_cycle`` sets again)."""
    a = part.arrays
    a["port_down"][...] = _down_ports(part, topo, failure)
    dead_ep = failure.failed_router[topo.endpoint_router[part.ep_gid]]
    a["ep_active"][dead_ep] = 0
    part.prm[P.PR_FAULT] = 2


# --------------------------------------------------------------------------- packets
def _key(src, seq) -> np.ndarray:
    return np.asarray(src, dtype=np.int64) * (1 << 31) + np.asarray(seq, dtype=np.int64)


def _rings(part):
    """(input VC rings, output queue rings): for each, (ring index, array index) of every
    buffered flit, front first."""
    from pdes.checkpoint import _layouts, _ring_slots
    a = part.arrays
    lay = _layouts(part)
    ivr, _, ivs = _ring_slots(a["ib_head"], a["ib_cnt"], lay["input_vcs"])
    oqr, _, oqs = _ring_slots(a["oq_head"], a["oq_cnt"], lay["ports"])
    return (ivr, ivs), (oqr, oqs)


def doomed(part, topo, failure: Failure) -> np.ndarray:
    """Step 2: the keys of the packets the failure destroys that this part sees."""
    a = part.arrays
    nv = part.nv
    T = failure.at_cycle
    down = _down_ports(part, topo, failure)
    pr = a["port_router"].astype(np.int64)
    in_failed = failure.failed_router[part.router_gid.astype(np.int64)[pr]]
    rec = a["rec"]
    keys = []
    (ivr, ivs), (oqr, oqs) = _rings(part)
    # flits in a failed router, or on a failed link (not arrived by T)
    fid = a["ib_id"][ivs].astype(np.int64)
    port = ivr // nv
    head = rec[fid, F_FLIT] == 0
    sx = int(part.prm[P.PR_SX])
    arr = (a["ib_rdy"][ivs].astype(np.int64) - np.where(head, int(part.prm[P.PR_HRDY]), 0)) // sx
    hit = in_failed[port] | (down[port] & part.is_net[port] & (arr >= T))
    keys.append(_key(rec[fid[hit], F_SRC], rec[fid[hit], F_SEQ]))
    # flits in the output queue of a failed port
    ofid = a["oq_id"][oqs].astype(np.int64)
    hit = down[oqr]
    keys.append(_key(rec[ofid[hit], F_SRC], rec[ofid[hit], F_SEQ]))
    # packets holding a VC of a failed router, or an output VC of a failed port
    iv_out = a["iv_out"].astype(np.int64)
    held = a["iv_alloc"] != 0
    ivc_port = np.arange(iv_out.size) // nv
    hit = held & (in_failed[ivc_port] | down[np.maximum(iv_out, 0)])
    keys.append(_key(a["iv_psrc"][hit], a["iv_pseq"][hit]))
    # packets cut by a failed link: the last packet into a failed link's input VC has no tail
    cnt = a["ib_cnt"].astype(np.int64)
    last = np.full(cnt.size, -1, dtype=np.int64)
    if fid.size:
        ends = np.cumsum(cnt) - 1
        nz = cnt > 0
        last[nz] = fid[ends[nz]]
    cut_vc = down[ivc_port] & part.is_net[ivc_port]
    pkt = int(part.prm[P.PR_PKT])
    open_tail = (last >= 0) & (rec[np.maximum(last, 0), F_FLIT] != pkt - 1)
    hit = cut_vc & open_tail
    keys.append(_key(rec[last[hit], F_SRC], rec[last[hit], F_SEQ]))
    hit = cut_vc & (cnt == 0) & held
    keys.append(_key(a["iv_psrc"][hit], a["iv_pseq"][hit]))
    return np.unique(np.concatenate(keys))


def _all(group, keys: np.ndarray) -> np.ndarray:
    """The union over every part of every rank of ``keys`` (the same array everywhere)."""
    got = group.gather(keys)
    if group.rank == 0:
        got = np.unique(np.concatenate([np.asarray(k, dtype=np.int64) for k in got]))
    return np.asarray(group.bcast(got), dtype=np.int64)


# --------------------------------------------------------------------------- removal
def _peer_ports(part, topo) -> np.ndarray:
    """(nP,) the global port (checkpoint numbering) at the other end of each network port's
    link (-1 on endpoint ports)."""
    from pdes.checkpoint import port_offsets
    po = port_offsets(topo)
    out = np.full(part.nP, -1, dtype=np.int64)
    net = part.is_net
    csr = topo.channel_port[part.out_channel[net] ^ 1]
    r = np.searchsorted(topo.port_offsets, csr, side="right") - 1
    out[net] = po[r] + topo.endpoints[r] + (csr - topo.port_offsets[r])
    return out


def _credit_back(part, t: int, Pt: int, vc: int, remote: list, peer) -> None:
    """The credit of a slot of input VC ``vc`` of port ``Pt`` freed in cycle ``t`` (outside
    the switch, as ``pdes.kernels.cycle.credit_back`` times it): into the sender's FIFO, or,
    for a sender in another part, onto ``remote`` as (global sender port, vc, arrival) for
    :func:`_deliver` (a failure may free more slots at once than an outbox holds)."""
    a = part.arrays
    prm = part.prm
    k = int(a["port_router"][Pt])
    cs = t
    if prm[P.PR_ALLOC] != 0:
        cs = max(cs, int(a["cr_next"][Pt]))
        a["cr_next"][Pt] = cs + 1
        a["cr_step"][Pt] = -1
    ep_port = Pt - int(a["port_off"][k]) < int(a["n_epp"][k])
    carr = cs + int(a["in_lat"][Pt]) + int(prm[P.PR_CHX]) + int(prm[P.PR_ECD] if ep_port
                                                                 else prm[P.PR_CD])
    s = int(a["in_sender"][Pt])
    if s >= 0:
        _queue_credit(part, s * part.nv + vc, carr)
    else:
        remote.append((int(peer[Pt]), vc, carr))


def _queue_credit(part, key: int, carr: int) -> None:
    from models.core.rings import ring_slot
    a = part.arrays
    cap = int(a["cr_cap"][key // part.nv])
    n = int(a["cr_cnt"][key])
    if n >= cap:
        from pdes.loopstate import SimulationError
        raise SimulationError("failure: a credit FIFO overflowed (engine bug)")
    w = (int(a["cr_head"][key]) + n) % cap
    a["cr_t"][ring_slot(w, key, a["cr_cnt"].shape[0], int(part.prm[P.PR_HOT]), a["cr_deep"])] = carr
    a["cr_cnt"][key] = n + 1


def _deliver(group, remote: list, topo) -> None:
    """The credits of :func:`_credit_back` for senders in other parts (collective)."""
    from pdes.checkpoint import global_index, port_offsets
    got = group.gather(remote)
    if group.rank == 0:
        got = [c for rank in got for c in rank]
    got = group.bcast(got)
    if not got:
        return
    po = port_offsets(topo)
    for p in group.parts:
        local = np.full(int(po[-1]), -1, dtype=np.int64)
        local[global_index(p, po)["port"]] = np.arange(p.nP)
        for g, vc, carr in got:
            if local[g] >= 0:
                _queue_credit(p, int(local[g]) * p.nv + vc, carr)


def _drop(part, fid: int, st) -> None:
    """The statistics of a removed flit ``fid`` (its packet's at the tail); frees its record."""
    a = part.arrays
    st[S_DROPPED_FLITS] += 1
    st[S_INFLIGHT] -= 1
    if a["rec"][fid, F_FLIT] == part.prm[P.PR_PKT] - 1:
        _count_packet(part, int(a["rec_c"][fid, F_CTIME - NF_HOT]), st)
    top = int(a["rec_top"][0])
    a["rec_free"][top] = fid
    a["rec_top"][0] = top + 1


def _count_packet(part, created: int, st) -> None:
    st[S_DROPPED_PKTS] += 1
    if part.prm[P.PR_M0] <= created < part.prm[P.PR_M1]:
        st[S_DROPPED_MEAS] += 1


def _release(part, ivc: int) -> None:
    """Input VC ``ivc`` no longer holds a route, an output VC or a switch path; its front
    (the next packet's head, if any) waits for routing."""
    a = part.arrays
    nv = part.nv
    if a["iv_alloc"][ivc] != 0:
        op, ovc = int(a["iv_out"][ivc]), int(a["iv_ovc"][ivc])
        o = op * nv + ovc
        if a["ov_owner"][o] == ivc:
            a["ov_owner"][o] = -1
        a["cr_res"][o] = 0
    Pt = ivc // nv
    vc = ivc - Pt * nv
    k = int(a["port_router"][Pt])
    plo = int(a["port_off"][k])
    isx = int(part.prm[P.PR_ISX])
    x = plo * nv + (Pt - plo) * isx + vc % isx      # its switch input (pdes.kernels.iq)
    if a["hold_vc"][x] == vc:
        a["held_by"][plo + int(a["hold_out"][x])] = -1
        a["hold_vc"][x] = -1
        a["hold_out"][x] = -1
    a["iv_alloc"][ivc] = 0
    a["iv_out"][ivc] = -1
    a["iv_sa_at"][ivc] = NEVER
    _front_waits(part, ivc)


def _front_waits(part, ivc: int) -> None:
    from models.core.rings import ring_slot
    a = part.arrays
    if a["ib_cnt"][ivc] == 0:
        a["iv_va_at"][ivc] = NEVER
        return
    nIV = part.nP * part.nv
    pos = ring_slot(int(a["ib_head"][ivc]), ivc, nIV, int(part.prm[P.PR_HOT]), a["iv_deep"])
    r = int(a["ib_rdy"][pos])
    a["iv_ready"][ivc] = r
    a["iv_va_at"][ivc] = r


def remove(part, topo, kill: np.ndarray, t: int, remote: list) -> None:
    """Step 3: every flit of the packets ``kill`` (keys) out of the part, with their credits
    (those for another part's senders onto ``remote``), VCs and switch paths."""
    from models.core.rings import ring_slot
    a = part.arrays
    nv, hot = part.nv, int(part.prm[P.PR_HOT])
    nIV = part.nP * nv
    st = a["st"]
    rec = a["rec"]
    (ivr, ivs), (oqr, oqs) = _rings(part)
    peer = _peer_ports(part, topo)
    dead = np.isin(_key(rec[a["ib_id"][ivs], F_SRC], rec[a["ib_id"][ivs], F_SEQ]), kill)
    for ivc in np.unique(ivr[dead]):
        ivc = int(ivc)
        sel = ivr == ivc
        slots, gone = ivs[sel], dead[sel]
        ids, rdy = a["ib_id"][slots].copy(), a["ib_rdy"][slots].copy()
        front_gone = bool(gone[0])
        for f in ids[gone]:
            _drop(part, int(f), st)
            _credit_back(part, t, ivc // nv, ivc % nv, remote, peer)
        keep = ~gone
        n = int(keep.sum())
        pos = np.array([ring_slot(w, ivc, nIV, hot, a["iv_deep"]) for w in range(n)], dtype=np.int64)
        a["ib_id"][pos] = ids[keep]
        a["ib_rdy"][pos] = rdy[keep]
        a["ib_head"][ivc] = 0
        a["ib_cnt"][ivc] = n
        part.prm[P.PR_OCC] = 0           # the kernel builds the port occupancy again
        if front_gone:
            _release(part, ivc)
        elif n == 0:
            a["iv_va_at"][ivc] = NEVER
    # VCs that hold a dying packet none of whose flits is here
    hold = (a["iv_alloc"] != 0) | (a["iv_out"] == IV_DISCARD)
    hold &= np.isin(_key(a["iv_psrc"], a["iv_pseq"]), kill)
    for ivc in np.nonzero(hold)[0]:
        _release(part, int(ivc))
    ofid = a["oq_id"][oqs]
    dead = np.isin(_key(rec[ofid, F_SRC], rec[ofid, F_SEQ]), kill)
    nPt = part.nP
    for op in np.unique(oqr[dead]):
        op = int(op)
        sel = oqr == op
        slots, gone = oqs[sel], dead[sel]
        ids, rdy = a["oq_id"][slots].copy(), a["oq_rdy"][slots].copy()
        ovs = a["oq_vc"][slots].copy()
        k = int(a["port_router"][op])
        net = op - int(a["port_off"][k]) >= int(a["n_epp"][k])
        for f, ov in zip(ids[gone], ovs[gone]):
            if net:
                a["cred"][op * nv + (int(ov) >> 1)] += 1    # its downstream slot is free
            _drop(part, int(f), st)
        keep = ~gone
        n = int(keep.sum())
        w = np.arange(n, dtype=np.int64)
        a["oq_id"][w * nPt + op] = ids[keep]
        a["oq_rdy"][w * nPt + op] = rdy[keep]
        a["oq_vc"][w * nPt + op] = ovs[keep]
        a["oq_head"][op] = 0
        a["oq_cnt"][op] = n
        a["oq_ready"][op] = rdy[keep][0] if n else NEVER
    # a packet still being injected: the rest of it never leaves its source
    cur = a["ep_cur_rec"]
    src_dead = (a["ep_cur_left"] > 0) & np.isin(_key(cur[:, F_SRC], cur[:, F_SEQ]), kill)
    for e in np.nonzero(src_dead)[0]:
        st[S_DROPPED_FLITS] += int(a["ep_cur_left"][e])
        _count_packet(part, int(cur[e, F_CTIME]), st)
        a["ep_cur_left"][e] = 0


def unroute(part, w: np.ndarray) -> None:
    """The heads at the front of the input VCs ``w`` (a mask), routed but not allocated a
    VC, will be routed again: their route is cleared, and the link a head arrived on,
    counted in its hops when it was routed (:func:`pdes.kernels.cycle.output_stage`), is
    uncounted until then."""
    from models.core.rings import ring_slot
    a = part.arrays
    nv, hot = part.nv, int(part.prm[P.PR_HOT])
    nIV = part.nP * nv
    for ivc in np.nonzero(w & (a["ib_cnt"] > 0))[0]:
        ivc = int(ivc)
        if part.is_net[ivc // nv]:
            pos = ring_slot(int(a["ib_head"][ivc]), ivc, nIV, hot, a["iv_deep"])
            a["rec"][int(a["ib_id"][pos]), F_HOPS] -= 1
    a["iv_out"][w] = -1


def reroute_waiting(part) -> None:
    """A head routed towards a failed port but not yet allocated a VC there is routed again."""
    a = part.arrays
    iv_out = a["iv_out"].astype(np.int64)
    w = (a["iv_alloc"] == 0) & (iv_out >= 0)
    w &= a["port_down"][np.maximum(iv_out, 0)] != 0
    unroute(part, w)


def fail(group, topo, failure: Failure, t: int) -> None:
    """The failure at the start of cycle ``t`` (= ``at_cycle``) on every part of ``group``
    (collective)."""
    kill = _all(group, np.unique(np.concatenate(
        [doomed(p, topo, failure) for p in group.parts] + [np.zeros(0, np.int64)])))
    remote = []
    for p in group.parts:
        mark(p, topo, failure)
        remove(p, topo, kill, t, remote)
        reroute_waiting(p)
    _deliver(group, remote, topo)


# --------------------------------------------------------------------------- the reroute
# At ``at_cycle + reroute_cycles`` the subnet manager's new tables take effect: the run goes
# on as a run of the degraded network (models.faults.degrade: the failed links' ports are
# gone, routing tables and traffic are those of the degraded network), from the state of the
# intact one carried over port by port.

LOCAL_PORT = ("rr_sw_in", "hold_out")
"""Arrays whose values are a port of the same router (local index; -1 = none)."""
LOCAL_INPUT = ("rr_out", "held_by")
"""Per-port arrays whose values are a switch input of the same router (local index l * s + r
for its l-th port and input speedup s, :mod:`pdes.kernels.iq`; pdes's own allocation: the
port, s = 1; -1 = none)."""
SWITCH_INPUT = ("rr_sw_in", "hold_vc", "hold_out", "sw_rr")
"""Per-switch-input arrays: router r's switch input x at entry ``po[r] * nv + x`` of the
input-VC space (:mod:`pdes.kernels.state_table`)."""
LOCAL_VC = ("rr_va", "rr_va_in")
"""Per-VC arrays whose values are a VC of the same router (local index port * nv + vc)."""


def port_map(intact, degraded, keep: np.ndarray) -> np.ndarray:
    """Global port of the intact network -> global port of the degraded one (-1: the port of
    a failed link), in the checkpoint's numbering (:mod:`pdes.checkpoint`)."""
    from pdes.checkpoint import port_offsets
    po1, po2 = port_offsets(intact), port_offsets(degraded)
    R = intact.n_routers
    ep = intact.endpoints.astype(np.int64)
    out = np.full(int(po1[-1]), -1, dtype=np.int64)
    r = np.repeat(np.arange(R), ep)
    i = np.arange(r.size) - np.repeat(intact.endpoint_offsets[:-1], ep)
    out[po1[r] + i] = po2[r] + i
    deg = intact.degree.astype(np.int64)
    rc = np.repeat(np.arange(R), deg)
    ic = np.arange(rc.size) - intact.port_offsets[rc]
    alive = keep[intact.port_link]
    cs = np.cumsum(alive)
    before = cs - alive
    start = np.concatenate([[0], cs])[intact.port_offsets[:-1]]
    new_i = before - start[rc]
    src = (po1[rc] + ep[rc] + ic)[alive]
    out[src] = (po2[rc] + ep[rc] + new_i)[alive]
    return out


def remap(G: dict, intact, degraded, keep: np.ndarray, nv: int, isx: int = 1) -> dict:
    """The global state ``G`` of the intact network (:func:`pdes.checkpoint.combine`) in the
    numbering of the degraded one.  Every entry of a failed link's port must be empty or
    idle (:func:`reroute` removed what it held) but its credits, which are dropped."""
    from pdes.checkpoint import RINGS, TABLES, port_offsets
    from pdes.kernels.state_table import BY_NAME
    pmap = port_map(intact, degraded, keep)
    po1, po2 = port_offsets(intact), port_offsets(degraded)
    n1, n2 = int(po1[-1]), int(po2[-1])
    E = intact.n_endpoints
    vcs = np.arange(nv, dtype=np.int64)

    def vc_of(g):
        return np.where(g[:, None] >= 0, g[:, None] * nv + vcs, -1).ravel()
    sender = np.concatenate([pmap, np.arange(E, dtype=np.int64) + n2])
    maps = {"vc": vc_of(pmap), "port": pmap, "key": vc_of(sender),
            "ep": np.arange(E, dtype=np.int64)}
    sizes = {"vc": n2 * nv, "port": n2, "key": (n2 + E) * nv, "ep": E}
    router1 = np.searchsorted(po1, np.arange(n1), side="right") - 1

    def local(values, owner_port, stride):
        """Router-local indices (port * stride + j: ports, switch inputs or VCs) in the
        degraded numbering; a failed port's pointer restarts at the router's first port."""
        v = values.astype(np.int64)
        r = router1[owner_port]
        p = v // stride
        g = pmap[po1[r] + np.maximum(p, 0)]
        new = np.where(g >= 0, g - po2[r], 0) * stride + v % stride
        return np.where(v >= 0, new, v)
    # switch inputs: router r's input x = l * isx + j (its l-th port) at po[r] * nv + x
    slot = np.arange(n1 * nv, dtype=np.int64)
    r_s = router1[slot // nv]
    x_s = slot - po1[r_s] * nv
    l_s = x_s // isx
    used = l_s < po1[r_s + 1] - po1[r_s]
    g_s = np.where(used, pmap[np.minimum(po1[r_s] + l_s, n1 - 1)], -1)
    sw_alive = used & (g_s >= 0)
    sw_dest = (po2[r_s] * nv + (g_s - po2[r_s]) * isx + x_s % isx)[sw_alive]
    out = {}
    for group, (space, names) in TABLES.items():
        m = maps[space]
        alive = m >= 0
        for name in names:
            old = np.asarray(G[f"{group}/{name}"])
            new = np.zeros((sizes[space],) + old.shape[1:], dtype=old.dtype)
            if name in SWITCH_INPUT:
                new[:] = BY_NAME[name].fill
                vals = old[sw_alive]
                if name in LOCAL_PORT:
                    vals = local(vals, slot[sw_alive] // nv, 1)
                new[sw_dest] = vals
                out[f"{group}/{name}"] = new
                continue
            vals = old[alive]
            owner = np.nonzero(alive)[0] // (nv if space == "vc" else 1)
            if name == "iv_out":
                vals = np.where(vals >= 0, pmap[np.maximum(vals, 0)], vals)
            elif name == "ov_owner":
                vals = np.where(vals >= 0, vc_of(pmap)[np.maximum(vals, 0)], vals)
            elif name in LOCAL_INPUT:
                vals = local(vals, owner, isx)
            elif name in LOCAL_VC:
                vals = local(vals, owner, nv)
            new[m[alive]] = vals
            out[f"{group}/{name}"] = new
    for group, (space, ids, _, _, cnt) in RINGS.items():
        c = np.asarray(G[f"{group}/{cnt}"]).astype(np.int64)
        key = np.repeat(np.arange(c.size), c)
        nk = maps[space][key]
        if group != "credits" and np.any(nk < 0):
            from pdes.loopstate import SimulationError
            raise SimulationError(f"reroute: a failed link's {group} still holds flits (engine bug)")
        order = np.argsort(np.where(nk >= 0, nk, np.iinfo(np.int64).max), kind="stable")
        order = order[nk[order] >= 0]
        out[f"{group}/ready"] = np.asarray(G[f"{group}/ready"])[order]
        if ids is not None:
            out[f"{group}/record"] = np.asarray(G[f"{group}/record"])[order]
        out[f"{group}/{cnt}"] = np.bincount(nk[order], minlength=sizes[space]).astype(
            out[f"{group}/{cnt}"].dtype)
    for k, v in G.items():
        if k.startswith(("stats/", "messages/", "schedule/")):
            out[k] = v
    return out


def doomed_at_reroute(part, topo, failure: Failure) -> np.ndarray:
    """The keys of the packets a reroute destroys that this part sees: those with a flit in,
    or holding, an input VC of a failed port (they arrived before the failure and had not
    left: the port is taken down)."""
    a = part.arrays
    nv = part.nv
    down = _down_ports(part, topo, failure)
    rec = a["rec"]
    (ivr, ivs), _ = _rings(part)
    fid = a["ib_id"][ivs].astype(np.int64)
    hit = down[ivr // nv]
    keys = [_key(rec[fid[hit], F_SRC], rec[fid[hit], F_SEQ])]
    vc_down = down[np.arange(a["iv_out"].size) // nv]
    hold = vc_down & ((a["iv_alloc"] != 0) | (a["iv_out"] == IV_DISCARD))
    keys.append(_key(a["iv_psrc"][hold], a["iv_pseq"][hold]))
    return np.unique(np.concatenate(keys))


def carry_over(prep, group, t: int):
    """At the reroute, cycle ``t`` (collective): the packets in the failed ports' buffers
    are dropped, heads that have a route but no VC yet will be routed again, and the state
    of every part is gathered in the numbering of the degraded network.  Returns ``(G,
    smp)``: the global state (:func:`pdes.checkpoint.combine`, remapped) and the sample's
    counters so far, the same on every rank."""
    from pdes import reduce
    from pdes.checkpoint import REDUCED, capture, combine, port_offsets, sizes_of
    failure = prep.failure
    deg = failure.degraded
    kill = _all(group, np.unique(np.concatenate(
        [doomed_at_reroute(p, prep.topo, failure) for p in group.parts] + [np.zeros(0, np.int64)])))
    remote = []
    for p in group.parts:
        remove(p, prep.topo, kill, t, remote)
        a = p.arrays
        unroute(p, (a["iv_alloc"] == 0) & (a["iv_out"] >= 0))
    _deliver(group, remote, prep.topo)
    smp = reduce.sample(group)
    st = reduce.stats(group)
    hists = {n: reduce.summed(group, n) for n in REDUCED}
    caps = group.gather([capture(p, port_offsets(prep.topo), prep.topo.n_endpoints)
                         for p in group.parts])
    G2 = None
    if group.rank == 0:
        G = combine([c for rank_caps in caps for c in rank_caps], sizes_of(prep))
        G["stats/st"] = st
        for n, h in hists.items():
            G[f"stats/{n}"] = h
        isx = min(prep.rp.booksim[-1], prep.rp.num_vcs) if prep.rp.booksim else 1
        G2 = remap(G, prep.topo, deg.topo, failure.fs.keep, prep.rp.num_vcs, isx)
    G2 = group.bcast(G2)
    G2["routing/snap"] = np.zeros(2 * deg.topo.n_links if deg.plan.snapshot_every else 1, np.int32)
    return G2, smp


def restore_degraded(parts, deg, G2: dict, smp, m0: int, m1: int) -> None:
    """Freshly built ``parts`` of the degraded network ``deg`` set to ``G2`` (from
    :func:`carry_over`), with the sample so far, the measurement window and the drop rule."""
    from pdes.checkpoint import RINGS, _restore_part, port_offsets
    starts = {}
    for grp, (_, _, _, _, cnt) in RINGS.items():
        c = G2[f"{grp}/{cnt}"].astype(np.int64)
        starts[grp] = np.cumsum(c) - c
    port_off = port_offsets(deg.topo)
    for p in parts:
        _restore_part(p, G2, port_off, deg.rp.num_vcs, starts)
        if np.any(p.router_gid == 0):
            p.arrays["smp"][...] = smp            # the sample so far
        _degraded_marks(p, deg.topo)          # failed and cut-off routers drop all
        p.prm[P.PR_M0], p.prm[P.PR_M1] = m0, m1
