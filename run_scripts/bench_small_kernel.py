"""A small kernel for comparison: the engine benchmark's router written from scratch for its
one case, to measure what the engine's generality costs and what another way of
allocating gains (docs/performance.md, "The same model written small").

It is not the engine and shares none of its kernels: 1-flit packets, 2 VCs of 32 flits,
virtual cut-through, speedup 2 with input-first round-robin switch allocation, VC
allocation round-robin per output VC, 8-flit output queues, one flit per link and
cycle, credits in FIFOs of arrival cycles absorbed when read, the first minimal port of a
next-hop table, uniform Bernoulli traffic, on the engine benchmark's Slim Fly (built by
pdes).  It carries the same traffic as the engine but is not the same model in every
detail (the route among several minimal ones, the pipeline's delays), so its results are
not the engine's.  Three versions of the router stage, each its own compiled function:

* ``lists``: the ports holding a flit from a bit mask per router, the switch's requests
  as a list built without branches (as the engine builds it), each output's winner
  searched in the list; VC allocation over every VC of those ports;
* ``sa-masks``: switch allocation from bit masks: one per router of the VCs due for the
  switch, one per output port of the VCs holding one of its VCs; an output's requests
  are their intersection, its round-robin winner the lowest bit of the mask rotated to
  the output's pointer;
* ``masks``: that, and VC allocation over the bits of a mask of the VCs holding a flit
  but no output VC.

The three make the same choices on this network (their counts are compared).  Runs
alternate the versions (and ``--engine``: the engine benchmark on the same network),
each in a fresh process pinned with ``taskset`` to one core when it is installed:

    python run_scripts/bench_small_kernel.py                      # SF q=5 p=4, load 0.5
    python run_scripts/bench_small_kernel.py --q 13 --p 9 --cycles 4000 --engine
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
from numba import njit

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from models.core.bits import trailing_zeros  # noqa: E402
from models.core.jit import njit_window  # noqa: E402

NEVER = 1 << 30
VERSIONS = ("lists", "sa-masks", "masks")
State = collections.namedtuple("State", [
    "nh", "peer", "ep_key", "ib_fid", "ib_rdy", "ib_head", "ib_cnt", "iv_out", "iv_ovc",
    "iv_sa_at", "ov_owner", "cred", "cr_t", "cr_head", "cr_cnt", "oq_fid", "oq_rdy",
    "oq_head", "oq_cnt", "oq_vc", "f_dst", "f_ct", "free", "occ", "rr_in", "rr_out", "rr_va",
    "pend", "req_ivc", "req_j", "req_o", "va_best", "va_who", "sa_rdy", "sa_next", "out_req",
    "va_cand", "stats"])
# stats: flit-hops, latency sum and ejected packets in the measured cycles, free records


@njit(inline="always")
def mix(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(inline="always")
def enqueue(s, ivc, k, bit, fid, rdy, cap, masks):
    """Append record ``fid`` to input VC ``ivc`` (router ``k``, its bit ``bit``)."""
    w = s.ib_head[ivc] + s.ib_cnt[ivc]
    if w >= cap:
        w -= cap
    s.ib_fid[ivc * cap + w] = fid
    s.ib_rdy[ivc * cap + w] = rdy
    if masks and s.ib_cnt[ivc] == 0:
        s.va_cand[k] |= bit            # an empty VC holds no output VC: it waits for one
    s.ib_cnt[ivc] += 1


@njit(inline="always")
def endpoints(t, s, R, NP, p, nv, cap, thr, masks):
    """Bernoulli draws, and one flit per endpoint into the VC of its port with most room."""
    E = R * p
    nfree = s.stats[3]
    for e in range(E):
        z = mix(s.ep_key[e] + np.uint64(t) * np.uint64(0x9E3779B97F4A7C15))
        s.pend[e] += (z >> np.uint64(11)) < thr
        if s.pend[e] == 0:
            continue
        k = e // p
        P = k * NP + (e - k * p)
        bv = -1
        bc = 0
        for v in range(nv):
            c = cap - s.ib_cnt[P * nv + v]
            if c > bc:
                bc = c
                bv = v
        if bv < 0:
            continue
        s.pend[e] -= 1
        nfree -= 1
        fid = s.free[nfree]
        z2 = mix(s.ep_key[e] ^ (np.uint64(t) * np.uint64(0xD1B54A32D192ED03)))
        s.f_dst[fid] = np.int64(z2 % np.uint64(E))
        s.f_ct[fid] = t
        ivc = P * nv + bv
        enqueue(s, ivc, k, np.uint64(1) << np.uint64(ivc - k * NP * nv), fid, t + 2, cap,
                masks)
        s.occ[k] |= np.uint64(1) << np.uint64(P - k * NP)
    s.stats[3] = nfree


@njit(inline="always")
def move(t, s, k, base, ivc, o, NP, p, nv, cap, oqcap, masks):
    """The front flit of input VC ``ivc`` through the switch into output queue ``o`` of
    router ``k``; its credit back to the sender; the output VC freed (a tail)."""
    OP = base + o
    Pi = ivc // nv
    h = s.ib_head[ivc]
    fid = s.ib_fid[ivc * cap + h]
    ovc = s.iv_ovc[ivc]
    w = s.oq_head[OP] + s.oq_cnt[OP]
    if w >= oqcap:
        w -= oqcap
    s.oq_fid[OP * oqcap + w] = fid
    s.oq_rdy[OP * oqcap + w] = t + 1
    s.oq_vc[OP * oqcap + w] = ovc
    s.oq_cnt[OP] += 1
    s.ib_cnt[ivc] -= 1
    s.iv_sa_at[ivc] = NEVER
    if s.ib_cnt[ivc] == 0:
        s.ib_head[ivc] = 0
        empty = True
        for v in range(nv):
            if s.ib_cnt[Pi * nv + v] != 0:
                empty = False
        if empty:
            s.occ[k] &= ~(np.uint64(1) << np.uint64(Pi - base))
    else:
        s.ib_head[ivc] = h + 1 if h + 1 < cap else 0
        if masks:
            s.va_cand[k] |= np.uint64(1) << np.uint64(ivc - base * nv)
    if o >= p:
        s.cred[OP * nv + ovc] -= 1
        s.ov_owner[OP * nv + ovc] = -1
    else:
        s.ov_owner[OP * nv] = -1
    ji = Pi - base
    if ji >= p:
        kk = s.peer[k * (NP - p) + ji - p] * nv + (ivc - Pi * nv)
        c = s.cr_head[kk] + s.cr_cnt[kk]
        if c >= cap:
            c -= cap
        s.cr_t[kk * cap + c] = t + 3
        s.cr_cnt[kk] += 1
    s.iv_out[ivc] = -1
    s.iv_ovc[ivc] = -1
    v = ivc - Pi * nv + 1
    s.rr_in[Pi] = v if v < nv else 0


@njit(inline="always")
def switch_lists(t, s, k, base, NP, p, nv, cap, oqcap, speed):
    """Switch allocation from a request list (the engine's way)."""
    nreq = 0
    mm = s.occ[k]
    while mm != 0:
        j = trailing_zeros(mm)
        mm &= mm - np.uint64(1)
        P = base + j
        g = 0
        st = s.rr_in[P]
        for i in range(nv):
            v = st + i
            if v >= nv:
                v -= nv
            ivc = P * nv + v
            ok = (s.iv_sa_at[ivc] <= t) & (g < speed)
            s.req_ivc[nreq] = ivc
            s.req_j[nreq] = j
            nreq += ok
            g += ok
    for r in range(nreq):
        s.req_o[r] = s.iv_out[s.req_ivc[r]]
    for r0 in range(nreq):
        o = s.req_o[r0]
        if o < 0:
            continue
        OP = base + o
        room = oqcap - s.oq_cnt[OP]
        grants = min(room, speed)
        last = -1
        while grants > 0:
            best = -1
            bp = NP + 1
            for r in range(r0, nreq):
                if s.req_o[r] != o:
                    continue
                pr = s.req_j[r] - s.rr_out[OP]
                if pr < 0:
                    pr += NP
                if pr < bp:
                    bp = pr
                    best = r
            if best < 0:
                break
            s.req_o[best] = -2
            grants -= 1
            move(t, s, k, base, s.req_ivc[best], o, NP, p, nv, cap, oqcap, False)
            last = s.req_j[best]
        if last >= 0:
            s.rr_out[OP] = last + 1 if last + 1 < NP else 0
        for r in range(r0, nreq):
            if s.req_o[r] == o:
                s.req_o[r] = -2


@njit(inline="always")
def switch_masks(t, s, k, base, NP, p, nv, cap, oqcap, speed, masks):
    """Switch allocation from bit masks: per output, its requesters' mask rotated to its
    pointer, the lowest bit the winner."""
    rdy = s.sa_rdy[k] | s.sa_next[k]
    s.sa_next[k] = np.uint64(0)
    cand = rdy
    W = NP * nv
    full = (np.uint64(1) << np.uint64(W)) - np.uint64(1)
    while cand != 0:
        o = s.iv_out[base * nv + trailing_zeros(cand)]
        OP = base + o
        mreq = s.out_req[OP] & rdy
        cand &= ~s.out_req[OP]
        room = oqcap - s.oq_cnt[OP]
        grants = min(room, speed)
        sh = s.rr_out[OP] * nv
        last = -1
        while grants > 0 and mreq != 0:
            rot = ((mreq >> np.uint64(sh)) | (mreq << np.uint64(W - sh))) & full
            pos = trailing_zeros(rot) + sh
            if pos >= W:
                pos -= W
            bit = np.uint64(1) << np.uint64(pos)
            mreq &= ~bit
            rdy &= ~bit
            s.out_req[OP] &= ~bit
            grants -= 1
            move(t, s, k, base, base * nv + pos, o, NP, p, nv, cap, oqcap, masks)
            last = pos // nv
        if last >= 0:
            s.rr_out[OP] = last + 1 if last + 1 < NP else 0
    s.sa_rdy[k] = rdy


@njit(inline="always")
def request_vc(t, s, k, base, R, NP, p, nv, cap, ivc, j, v, nt):
    """VC allocation, input side, for input VC ``ivc`` (port ``j``, VC ``v``): route its
    front flit if ready, keep it as the best requester of a free output VC; returns the
    count of output VCs requested."""
    h = s.ib_head[ivc]
    if s.ib_rdy[ivc * cap + h] > t:
        return nt
    fid = s.ib_fid[ivc * cap + h]
    o = s.iv_out[ivc]
    if o < 0:
        d = s.f_dst[fid]
        dr = d // p
        o = d - dr * p if dr == k else s.nh[k * R + dr]
        s.iv_out[ivc] = o
    OP = base + o
    if o < p:
        if s.ov_owner[OP * nv] >= 0:
            return nt
        ovc = 0
    else:
        ovc = -1
        bc = 0
        for w in range(nv):
            kk = OP * nv + w
            if s.ov_owner[kk] >= 0:
                continue
            n = s.cr_cnt[kk]
            if n > 0:
                hh = s.cr_head[kk]
                while n > 0 and s.cr_t[kk * cap + hh] <= t:
                    s.cred[kk] += 1
                    n -= 1
                    hh = hh + 1 if hh + 1 < cap else 0
                s.cr_cnt[kk] = n
                s.cr_head[kk] = hh if n > 0 else 0
            if s.cred[kk] >= 1 and s.cred[kk] > bc:
                bc = s.cred[kk]
                ovc = w
        if ovc < 0:
            return nt
    loc = o * nv + ovc
    pr = j * nv + v - s.rr_va[OP * nv + ovc]
    if pr < 0:
        pr += NP * nv
    if s.va_best[loc] < 0:
        s.req_ivc[nt] = loc
        nt += 1
        s.va_best[loc] = pr
        s.va_who[loc] = ivc
    elif pr < s.va_best[loc]:
        s.va_best[loc] = pr
        s.va_who[loc] = ivc
    return nt


@njit(inline="always")
def vc_allocation(t, s, k, base, R, NP, p, nv, cap, sa_masks, va_masks):
    """Route computation and VC allocation at router ``k``."""
    nt = 0
    if va_masks:
        mm = s.va_cand[k]
        while mm != 0:
            b = trailing_zeros(mm)
            mm &= mm - np.uint64(1)
            j = b // nv
            nt = request_vc(t, s, k, base, R, NP, p, nv, cap, base * nv + b, j, b - j * nv, nt)
    else:
        mm = s.occ[k]
        while mm != 0:
            j = trailing_zeros(mm)
            mm &= mm - np.uint64(1)
            for v in range(nv):
                ivc = (base + j) * nv + v
                if s.ib_cnt[ivc] == 0 or s.iv_ovc[ivc] >= 0:
                    continue
                nt = request_vc(t, s, k, base, R, NP, p, nv, cap, ivc, j, v, nt)
    for i in range(nt):
        loc = s.req_ivc[i]
        w = s.va_who[loc]
        o = base * nv + loc
        s.ov_owner[o] = w
        s.iv_ovc[w] = loc - (loc // nv) * nv
        if sa_masks:
            lb = np.uint64(1) << np.uint64(w - base * nv)
            s.sa_next[k] |= lb
            s.out_req[base + loc // nv] |= lb
            if va_masks:
                s.va_cand[k] &= ~lb
        else:
            s.iv_sa_at[w] = t + 1
        nx = w - base * nv + 1
        s.rr_va[o] = nx if nx < NP * nv else 0
        s.va_best[loc] = -1


@njit(inline="always")
def outputs(t, s, m0, m1, R, NP, p, nv, cap, oqcap, masks):
    """One flit per output port and cycle onto its link (into the next router's VC), or out
    to its endpoint."""
    for OP in range(R * NP):
        if s.oq_cnt[OP] == 0:
            continue
        h = s.oq_head[OP]
        if s.oq_rdy[OP * oqcap + h] > t:
            continue
        fid = s.oq_fid[OP * oqcap + h]
        ovc = s.oq_vc[OP * oqcap + h]
        s.oq_cnt[OP] -= 1
        s.oq_head[OP] = h + 1 if h + 1 < oqcap else 0
        k = OP // NP
        o = OP - k * NP
        inside = (t >= m0) & (t < m1)
        if o < p:
            if inside:
                s.stats[1] += t - s.f_ct[fid]
                s.stats[2] += 1
            s.free[s.stats[3]] = fid
            s.stats[3] += 1
            continue
        s.stats[0] += inside
        Pd = s.peer[k * (NP - p) + o - p]
        kd = Pd // NP
        ivc = Pd * nv + ovc
        enqueue(s, ivc, kd, np.uint64(1) << np.uint64(ivc - kd * NP * nv), fid, t + 2, cap,
                masks)
        s.occ[kd] |= np.uint64(1) << np.uint64(Pd - kd * NP)


@njit(inline="always")
def cycles(t0, t1, m0, m1, s, R, NP, p, nv, cap, oqcap, speed, thr, sa_masks, va_masks):
    """Cycles ``t0 .. t1 - 1``: endpoints, each router's switch then VC allocation, outputs;
    the flags choose the version (constants where the window loops below call it)."""
    for t in range(t0, t1):
        endpoints(t, s, R, NP, p, nv, cap, thr, va_masks)
        for k in range(R):
            if s.occ[k] != 0:
                if sa_masks:
                    switch_masks(t, s, k, k * NP, NP, p, nv, cap, oqcap, speed, va_masks)
                else:
                    switch_lists(t, s, k, k * NP, NP, p, nv, cap, oqcap, speed)
                vc_allocation(t, s, k, k * NP, R, NP, p, nv, cap, sa_masks, va_masks)
        outputs(t, s, m0, m1, R, NP, p, nv, cap, oqcap, va_masks)


# one window loop per version, each its own compiled function with the version's choices as
# constants (flags passed at run time would leave every version's code in each)
@njit_window
def run_lists(t0, t1, m0, m1, s, R, NP, p, nv, cap, oqcap, speed, thr):
    cycles(t0, t1, m0, m1, s, R, NP, p, nv, cap, oqcap, speed, thr, False, False)


@njit_window
def run_sa_masks(t0, t1, m0, m1, s, R, NP, p, nv, cap, oqcap, speed, thr):
    cycles(t0, t1, m0, m1, s, R, NP, p, nv, cap, oqcap, speed, thr, True, False)


@njit_window
def run_masks(t0, t1, m0, m1, s, R, NP, p, nv, cap, oqcap, speed, thr):
    cycles(t0, t1, m0, m1, s, R, NP, p, nv, cap, oqcap, speed, thr, True, True)


KERNELS = {"lists": run_lists, "sa-masks": run_sa_masks, "masks": run_masks}


def network(q: int, p: int) -> tuple:
    """``(R, NP, nh, peer)``: the Slim Fly pdes builds, with ``NP`` ports per router (its
    ``p`` endpoint ports first), the first minimal port to every router (``nh``) and each
    network port's peer port (``peer``), in this kernel's numbering."""
    from pdes import config as C
    from pdes.build import prepare
    topo = prepare(C.resolve({}, [f"topology.q={q}", f"topology.p={p}"])).topo
    R = topo.n_routers
    off = np.asarray(topo.port_offsets)
    deg = int(off[1] - off[0])
    if np.any(np.diff(off) != deg):
        raise SystemExit("bench_small_kernel: the routers' degrees differ")
    NP = p + deg
    if NP * 2 > 63:
        raise SystemExit(f"bench_small_kernel: {NP} ports of 2 VCs do not fit a 64-bit mask")
    g = np.asarray(topo.port_peer)
    kg = np.searchsorted(off, g, side="right") - 1
    peer = (kg * NP + p + (g - off[kg])).astype(np.int64)
    nbr = np.asarray(topo.port_neighbor).reshape(R, deg)
    import scipy.sparse as sp
    from scipy.sparse.csgraph import shortest_path
    adj = sp.csr_matrix((np.ones(R * deg), (np.repeat(np.arange(R), deg), nbr.ravel())),
                        shape=(R, R))
    dist = shortest_path(adj, unweighted=True).astype(np.int64)
    # the first port whose neighbour is one hop closer to the destination
    closer = dist[nbr, :] == dist[:, None, :] - 1          # (router, port, destination)
    nh = (p + np.argmax(closer, axis=1)).astype(np.int64)   # (router, destination)
    return R, NP, nh.ravel(), peer


def state(R: int, NP: int, p: int, nh, peer, seed: int) -> State:
    nv, cap, oqcap = 2, 32, 8
    E = R * p
    nIV = R * NP * nv
    nrec = E * 64 + R * NP * (cap * nv + oqcap)

    def i32(n, v=0):
        return np.full(n, v, np.int32)
    stats = np.zeros(4, np.int64)
    stats[3] = nrec
    return State(
        nh=nh, peer=peer,
        ep_key=np.random.default_rng(seed).integers(0, 2**63, E, dtype=np.uint64),
        ib_fid=i32(nIV * cap), ib_rdy=i32(nIV * cap), ib_head=i32(nIV), ib_cnt=i32(nIV),
        iv_out=i32(nIV, -1), iv_ovc=i32(nIV, -1), iv_sa_at=i32(nIV, NEVER),
        ov_owner=i32(nIV, -1), cred=i32(nIV, cap), cr_t=i32(nIV * cap), cr_head=i32(nIV),
        cr_cnt=i32(nIV), oq_fid=i32(R * NP * oqcap), oq_rdy=i32(R * NP * oqcap),
        oq_head=i32(R * NP), oq_cnt=i32(R * NP), oq_vc=i32(R * NP * oqcap),
        f_dst=i32(nrec), f_ct=i32(nrec), free=np.arange(nrec, dtype=np.int32)[::-1].copy(),
        occ=np.zeros(R, np.uint64), rr_in=i32(R * NP), rr_out=i32(R * NP), rr_va=i32(nIV),
        pend=i32(E), req_ivc=i32(NP * nv), req_j=i32(NP * nv), req_o=i32(NP * nv),
        va_best=i32(NP * nv, -1), va_who=i32(NP * nv), sa_rdy=np.zeros(R, np.uint64),
        sa_next=np.zeros(R, np.uint64), out_req=np.zeros(R * NP, np.uint64),
        va_cand=np.zeros(R, np.uint64), stats=stats)


def child(args) -> dict:
    """One version's run: ``--warmup`` cycles, then ``--cycles`` measured ones."""
    R, NP, nh, peer = network(args.q, args.p)
    thr = np.uint64(int(args.load * 2**53))
    kern = KERNELS[args.version]
    t1 = args.warmup + args.cycles
    kern(0, 2, 0, 0, state(R, NP, args.p, nh, peer, 1), R, NP, args.p, 2, 32, 8, 2, thr)
    s = state(R, NP, args.p, nh, peer, 1)
    kern(0, args.warmup, args.warmup, t1, s, R, NP, args.p, 2, 32, 8, 2, thr)
    c0, w0 = time.process_time(), time.perf_counter()
    kern(args.warmup, t1, args.warmup, t1, s, R, NP, args.p, 2, 32, 8, 2, thr)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    hops, lat, ej = (int(x) for x in s.stats[:3])
    return {"version": args.version, "routers": R, "cycles": args.cycles, "cpu_s": cpu,
            "wall_s": wall, "router_cycles_per_s": R * args.cycles / cpu,
            "flit_hops_per_s": hops / cpu, "flit_hops": hops, "latency_sum": lat,
            "ejected": ej, "accepted": ej / (R * args.p * args.cycles),
            "latency_mean": lat / max(ej, 1)}


def engine_cmd(args) -> list[str]:
    return [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                         "bench_engine.py"), "--child", "--q", str(args.q),
            "--p", str(args.p), "--loads", str(args.load), "--warmup", str(args.warmup),
            "--measure", str(args.cycles)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--q", type=int, default=5)
    ap.add_argument("--p", type=int, default=4)
    ap.add_argument("--load", type=float, default=0.5)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--cycles", type=int, default=20000, help="measured cycles")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each version, alternating")
    ap.add_argument("--versions", default=",".join(VERSIONS))
    ap.add_argument("--engine", action="store_true",
                    help="also the engine benchmark on the same network, alternating")
    ap.add_argument("--cpu", type=int, default=1, help="the core taskset pins the runs to")
    ap.add_argument("--version", help=argparse.SUPPRESS)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not 0 < args.load <= 1:
        ap.error("--load must be in (0, 1]")
    if args.cycles < 1 or args.warmup < 0 or args.repeats < 1:
        ap.error("--cycles and --repeats must be positive, --warmup not negative")
    if args.child:
        print(json.dumps(child(args)))
        return 0
    versions = args.versions.split(",")
    for v in versions:
        if v not in VERSIONS:
            ap.error(f"--versions: unknown version {v!r} (one of {', '.join(VERSIONS)})")
    pin = ["taskset", "-c", str(args.cpu)] if shutil.which("taskset") else []
    me = [sys.executable, os.path.abspath(__file__), "--child", "--q", str(args.q), "--p",
          str(args.p), "--load", str(args.load), "--warmup", str(args.warmup), "--cycles",
          str(args.cycles)]
    rows: dict = {}
    counts = {}
    for _ in range(args.repeats):
        for v in versions + (["engine"] if args.engine else []):
            cmd = engine_cmd(args) if v == "engine" else me + ["--version", v]
            r = subprocess.run(pin + cmd, capture_output=True, text=True, check=False)
            if r.returncode != 0:
                raise SystemExit(f"bench_small_kernel: {v} failed:\n{r.stderr[-2000:]}")
            res = json.loads(r.stdout.strip().splitlines()[-1])
            if v != "engine":
                counts.setdefault(v, (res["flit_hops"], res["latency_sum"], res["ejected"]))
            rows.setdefault(v, []).append(res["router_cycles_per_s"])
    if len(set(counts.values())) > 1:
        raise SystemExit(f"bench_small_kernel: the versions' counts differ: {counts}")
    v0 = versions[0]
    print(f"Slim Fly q={args.q} p={args.p}, load {args.load}, {args.cycles} measured cycles; "
          f"the small kernel's versions made the same choices: {counts[v0][0]} flit-hops, "
          f"{counts[v0][2]} packets ejected")
    print(f"{'version':<10} router-cycles per CPU-second (runs, alternating)")
    for v, rates in rows.items():
        print(f"{v:<10} " + "  ".join(f"{x:,.0f}" for x in rates))
    print(f"load average: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
