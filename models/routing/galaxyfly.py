"""Galaxyfly non-minimal adaptive routing NAR, NAL, NAG (004 Sec. 4.2, 4.3).

At the source router only, a packet leaves the minimal path iff the minimal
output port holds more than ``Th_min = th_min x buffer`` flits (0.8 of one
port's buffer) and the first output port towards one random non-minimal
candidate holds fewer than ``Th_nonmin = th_nonmin x Q_min`` (0.5); otherwise
it goes minimally.  Occupancy = flits sent or queued on the port whose
credits have not returned.  A candidate is an intermediate router (``F_MID``):
the packet goes minimally to it, then minimally to its destination.

* ``nar``: only when the source and destination supernodes are adjacent and
  in the same cluster: a random router of a random common neighbour
  supernode; path at most 5 hops;
* ``nal``: another random router of the source supernode (one local
  misroute); at most 6 hops;
* ``nag``: a random router of a random supernode other than the source's
  and destination's; at most 7 hops.

A candidate whose path would exceed the cap (``max_hops``) is redrawn, up
to 32 times, then the packet goes minimally.  The algorithms run on any
topology whose groups are fully connected sets of routers joined by global
links: Galaxyfly (groups = supernodes, clusters from the topology) and
Dragonfly (= GF(n, 1, a, p): every supernode is its own cluster, so ``nar``
is minimal routing there).

VC classes.  004 Sec. 4.3 separates local and global VCs and counts hops of
each type (3/4/4 local and 2/2/3 global VCs for NAR/NAL/NAG).  Taken
literally -- class = earlier hops of the same link type on the path
(``vc_scheme = "count"``) -- this is *not* deadlock-free: a packet that
starts with a global hop takes local class 0 after it, so the turns
l-g (classes L0 -> G0) and g-l (G0 -> L0) of two-hop paths close cycles
such as x1 -l-> y1 -g-> x2 -l-> y2 -g-> x3 -l-> y3 -g-> x1; ``pdes check``
finds them and a run refuses to start.  The default (``vc_scheme =
"sequence"``) generalises Kim et al.'s Dragonfly rule: the routing declares a
canonical sequence of link types (l-g-l-g-l for NAR, l-l-g-l-g-l for NAL,
l-g-l-g-l-g-l for NAG on Galaxyfly); each hop takes the next position of its
link type after the previous hop's position, and its class is the number of
earlier positions of that type.  Positions strictly increase along every
path and a (link type, class) pair is one position, so the channel
dependency graph is acyclic.  The sequence is computed, not assumed: the
shortest sequence (fewest VCs first) in which every link-type sequence the
routing can produce embeds, from the link types of all minimal paths
(a dynamic programme over the distance table) under the candidate rules and
the cap.  On diameter-5 Galaxyfly it gives the paper's counts.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from models.core.errors import ParameterError
from models.core.jit import njit, njit_inline, njit_kernel
from models.metrics import order_by_distance
from models.vcseq import seq_hop, seq_length
from models.core.registry import ROUTINGS, Param
from models.routing import RoutingPlan
from models.routing.paths import MAX_TRIES, buffer_share, min_port, minimal_hop, port_queue
from models.core.params import PR_SEED
from models.core.record import (ERR_VC, ERR_VC_ORDER, F_AUX2, F_DSTR, F_HOPS, F_MID, F_SEQ, F_SRC,
    NF_HOT, OK)
from models.core.routing import RoutingKernel, register_kernel
from models.core.rng import P_MID, P_MID_ROUTER, below

GRP_PAD = 2147483647          # padding of grp_nb rows
CAPS = {"nar": 5, "nal": 6, "nag": 7}
ALG_IDS = {"nar": 0, "nal": 1, "nag": 2}
MAX_CAP = 12
EXACT_MAX_ROUTERS = 200       # the count-scheme CDG enumerates non-minimal paths up to this size


def group_structure(topo, alg: str):
    """(r_group, grp_rtr, grp_nb, grp_cl, adjacency) of a topology of fully connected groups.

    ``grp_rtr[g]``: working routers of group g (ascending, padded with -1; a failed group's
    row is all -1); ``grp_nb[g]``: groups joined to g by a working global link (ascending,
    padded with ``GRP_PAD``); ``grp_cl[g]``: cluster of g (``topo.meta["cluster"]``, else g
    itself); ``adjacency``: dense G x G bool.  On a degraded network the working routers
    of every group must stay fully connected; failed routers and whole failed groups
    (racks) are allowed.
    """
    grp = np.asarray(topo.group, dtype=np.int64)
    G = int(grp.max()) + 1 if grp.size else 0
    up = np.asarray(topo.up, dtype=bool)
    u = topo.links[:, 0].astype(np.int64)
    v = topo.links[:, 1].astype(np.int64)
    live = up[u] & up[v]
    intra = (grp[u] == grp[v]) & live
    sizes = np.bincount(grp[up], minlength=G)
    have = np.bincount(grp[u[intra]], minlength=G)
    if (int(np.count_nonzero(sizes)) < 2 or np.any(have != sizes * (sizes - 1) // 2)
            or np.any(np.bincount(grp, minlength=G) == 0)):
        if topo.is_degraded:
            from models.faults import unroutable
            raise unroutable(f"'{alg}'", f"its link-type sequences need the working routers of "
                             f"every {topo.group_kind} fully connected, and the failures removed "
                             "a link between two working routers of one")
        raise ParameterError(
            f"routing.algorithm: '{alg}' needs a topology whose groups are fully connected sets of "
            f"routers joined by global links (Galaxyfly, Dragonfly); the {topo.group_kind}s of "
            f"'{topo.name}' are not")
    ids = np.nonzero(up)[0]
    order = ids[np.lexsort((ids, grp[ids]))]
    amax = max(int(sizes.max()), 1)
    grp_rtr = np.full((G, amax), -1, dtype=np.int32)
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    col = np.arange(order.size) - np.repeat(start, sizes)
    grp_rtr[grp[order], col] = order
    inter = (grp[u] != grp[v]) & live
    gu, gv = grp[u[inter]], grp[v[inter]]
    pairs = np.unique(np.concatenate([np.stack([gu, gv], 1), np.stack([gv, gu], 1)]), axis=0)
    adj = np.zeros((G, G), dtype=np.bool_)
    adj[pairs[:, 0], pairs[:, 1]] = True
    deg = np.bincount(pairs[:, 0], minlength=G)
    grp_nb = np.full((G, max(int(deg.max()), 1)), GRP_PAD, dtype=np.int32)
    pstart = np.concatenate([[0], np.cumsum(deg)[:-1]])
    grp_nb[pairs[:, 0], np.arange(len(pairs)) - np.repeat(pstart, deg)] = pairs[:, 1]
    if "cluster" in topo.meta:
        cl = np.asarray(topo.meta["cluster"], dtype=np.int64)
        grp_cl = np.zeros(G, dtype=np.int32)
        grp_cl[grp] = cl
        if np.any(grp_cl[grp] != cl):
            raise ParameterError(f"routing.algorithm: '{alg}': a supernode spans two clusters")
    else:
        grp_cl = np.arange(G, dtype=np.int32)
    return grp.astype(np.int32), grp_rtr, grp_nb, grp_cl, adj


# ------------------------------------------------------------------ link-type sequences
# A sequence of link types is coded as an integer: bit i = type of hop i (0 local, 1 global),
# with a sentinel bit 1 << length on top (the empty sequence is 1).

@njit
def _prepend(typ, c):
    n = seq_length(c)
    return (1 << (n + 1)) | ((c ^ (1 << n)) << 1) | typ


@njit
def _concat(a, b):
    la = seq_length(a)
    lb = seq_length(b)
    return (1 << (la + lb)) | (a ^ (1 << la)) | ((b ^ (1 << lb)) << la)


@njit
def _add_prepended(typ, mask, out):
    """``out |= {typ + c : c in mask}`` for a uint64 set of codes < 64."""
    r = np.uint64(0)
    for c in range(1, 64):
        if (mask >> np.uint64(c)) & np.uint64(1):
            r |= np.uint64(1) << np.uint64(_prepend(typ, c))
    return out | r


@njit
def _sequence_sets(off, nbr, grp, adj, ep, dist, alg, cap, n_ep_grp, S):
    """Mark in ``S`` every link-type sequence NAR (0) / NAL (1) / NAG (2) can produce.

    Per target t a dynamic programme over the routers in order of distance
    gives M[x] = the set of link-type sequences of the minimal paths x -> t
    (uint64 over codes < 64, so paths of at most 5 hops).  Minimal routing
    contributes M[s] for endpoint routers s != t; NAL "l" + M[m] for routers m
    whose supernode holds another endpoint router; NAG/NAR concatenate, per
    intermediate m, the sequences into m (from endpoint routers s of another
    / an adjacent supernode) with those out of m (to endpoint routers of
    another / an adjacent supernode) whose lengths sum to at most ``cap`` --
    a superset of the exact set (source and destination are not coupled).
    """
    R = off.shape[0] - 1
    M = np.zeros(R, dtype=np.uint64)
    A = np.zeros(R, dtype=np.uint64)
    B = np.zeros(R, dtype=np.uint64)
    umin = np.uint64(0)
    unal = np.uint64(0)
    order = np.empty(R, dtype=np.int64)
    cnt = np.zeros(257, dtype=np.int64)
    for t in range(R):
        order_by_distance(dist[t], order, cnt)
        for i in range(R):
            x = order[i]
            dx = np.int64(dist[t, x])
            if dx == 0:
                M[x] = np.uint64(2)          # code 1: the empty sequence
                continue
            M[x] = np.uint64(0)
            if dx == 255 or dx > 5:
                continue
            for j in range(off[x], off[x + 1]):
                n = nbr[j]
                if np.int64(dist[t, n]) == dx - 1:
                    M[x] = _add_prepended(1 if grp[n] != grp[x] else 0, M[n], M[x])
        gt = grp[t]
        for x in range(R):
            if x == t:
                continue
            gx = grp[x]
            if ep[t] != 0 and ep[x] != 0:
                umin |= M[x]
            if alg == 1:
                if ep[t] != 0 and 1 + np.int64(dist[t, x]) <= cap:
                    others = n_ep_grp[gx] - (1 if ep[x] != 0 else 0) - \
                        (1 if (grp[t] == gx and ep[t] != 0) else 0)
                    if others > 0:
                        unal |= M[x]
            else:
                # NAG: another supernode; NAR: adj = NAR-eligible (source, intermediate) groups
                if ep[x] != 0 and ((gx != gt) if alg == 2 else adj[gx, gt]):
                    A[t] |= M[x]              # x = source, t = intermediate
                if ep[t] != 0 and ((gx != gt) if alg == 2 else adj[gt, gx]):
                    B[x] |= M[x]              # x = intermediate, t = destination
    one = np.uint64(1)
    for c in range(1, 64):
        if (umin >> np.uint64(c)) & one:
            S[c] = True
        if (unal >> np.uint64(c)) & one:
            c2 = _prepend(0, c)
            if seq_length(c2) <= cap:
                S[c2] = True
    if alg != 1:
        for m in range(R):
            if A[m] == 0 or B[m] == 0:
                continue
            for a in range(1, 64):
                if not (A[m] >> np.uint64(a)) & one:
                    continue
                for b in range(1, 64):
                    if (B[m] >> np.uint64(b)) & one and seq_length(a) + seq_length(b) <= cap:
                        S[_concat(a, b)] = True


@njit
def _embeds(code, cand, n):
    """Does the link-type sequence ``code`` embed (as a subsequence) in ``cand`` of length n?"""
    L = seq_length(code)
    i = 0
    for k in range(L):
        typ = (code >> k) & 1
        while i < n and ((cand >> i) & 1) != typ:
            i += 1
        if i >= n:
            return False
        i += 1
    return True


@njit
def _canonical(codes, lo, hi):
    """Shortest sequence (fewest VCs = max(#local, #global) first, then length, then fewest
    global positions) in which every code embeds; returns (cand, n) or (-1, -1).

    Lengths ``lo..hi`` are searched; the search stops after the first length
    that reaches the lower bound max over the codes of max(#local, #global)."""
    bound = 0
    for i in range(codes.shape[0]):
        L = seq_length(codes[i])
        ng = 0
        for k in range(L):
            ng += (codes[i] >> k) & 1
        bound = max(bound, max(ng, L - ng))
    best = (1 << 30, 1 << 30, 1 << 30, -1, -1)
    for n in range(lo, hi + 1):
        if best[0] <= bound:
            break
        for cand in range(1 << n):
            ng = 0
            for k in range(n):
                ng += (cand >> k) & 1
            nl = n - ng
            key = (max(nl, ng), n, ng, cand, n)
            if key >= best:
                continue
            ok = True
            for i in range(codes.shape[0]):
                if not _embeds(codes[i], cand, n):
                    ok = False
                    break
            if ok:
                best = key
    return best[3], best[4]


def seq_text(code: int) -> str:
    """'l-g-l' for a sentinel-coded sequence."""
    code = int(code)
    n = code.bit_length() - 1
    return "-".join("g" if (code >> i) & 1 else "l" for i in range(n))


@njit
def _nar_eligible(grp_nb, adj, grp_cl):
    """e[gs, gm]: gm is a common neighbour of gs and some adjacent supernode of gs's cluster."""
    G = adj.shape[0]
    e = np.zeros((G, G), dtype=np.bool_)
    for gs in range(G):
        for i in range(grp_nb.shape[1]):
            gd = grp_nb[gs, i]
            if gd == GRP_PAD:
                break
            if grp_cl[gd] != grp_cl[gs]:
                continue
            for j in range(grp_nb.shape[1]):
                gm = grp_nb[gs, j]
                if gm == GRP_PAD:
                    break
                if adj[gm, gd]:
                    e[gs, gm] = True
    return e


def sequences(topo, dist, alg: str, cap: int, tables=None) -> np.ndarray:
    """Codes of every link-type sequence the routing can produce (minimal paths included)."""
    grp, grp_rtr, grp_nb, grp_cl, adj = tables or group_structure(topo, alg)
    if alg == "nar":
        adj = _nar_eligible(grp_nb, adj, grp_cl)
    ep = topo.serving.astype(np.int8)
    n_ep_grp = np.bincount(grp, weights=ep, minlength=grp_rtr.shape[0]).astype(np.int64)
    S = np.zeros(1 << (MAX_CAP + 1), dtype=np.bool_)
    _sequence_sets(topo.port_offsets.astype(np.int64), topo.port_neighbor.astype(np.int64),
                   grp.astype(np.int64), adj, ep, dist, ALG_IDS[alg], int(cap),
                   n_ep_grp, S)
    return np.nonzero(S)[0].astype(np.int64)


# ------------------------------------------------------------------ explicit dependency graph
WalkGraph = namedtuple("WalkGraph", ["off", "nbr", "chan", "dist", "grp"])
"""Router graph of the dependency walk: port offsets (CSR), neighbour and output channel of
each port, distance table and group of each router."""

WalkLabels = namedtuple("WalkLabels", ["scheme", "lseq", "K", "maxdeg"])
"""VC labelling of the walk: scheme (1 = sequence, 0 = count), sentinel-coded link-type
sequence, classes per channel and largest router degree."""

WalkOut = namedtuple("WalkOut", ["seen", "edges", "seqs"])
"""Outputs of the walk: dependencies already added (bool), the edge list (``n x 2``) and
the link-type sequences met (bool per code)."""


@njit
def _walk(s, m, d, g, lab, out, n_edges):
    """Add the dependencies of every path s -> (minimal) m -> (minimal) d (m = -1: minimal).

    ``g``: :data:`WalkGraph`, ``lab``: :data:`WalkLabels`, ``out``: :data:`WalkOut`;
    returns the new edge count, or -1 if a hop needs more classes than ``lab.K``.
    """
    off, nbr, chan, dist, grp = g.off, g.nbr, g.chan, g.dist, g.grp
    scheme, lseq, K, maxdeg = lab.scheme, lab.lseq, lab.K, lab.maxdeg
    seen, edges, seqs = out.seen, out.edges, out.seqs
    DEP = 16
    xs = np.zeros(DEP, np.int64)
    its = np.zeros(DEP, np.int64)
    auxs = np.zeros(DEP, np.int64)
    phs = np.zeros(DEP, np.int64)
    nodes = np.zeros(DEP, np.int64)
    codes = np.zeros(DEP, np.int64)
    top = 0
    xs[0] = s
    its[0] = off[s]
    auxs[0] = -1
    phs[0] = 0 if (m >= 0 and m != s) else 1
    nodes[0] = -1
    codes[0] = 1
    while top >= 0:
        x = xs[top]
        tgt = m if phs[top] == 0 else d
        if x == tgt and phs[top] == 1:
            seqs[codes[top]] = True
            top -= 1
            continue
        dx = np.int64(dist[tgt, x])
        j = its[top]
        while j < off[x + 1] and np.int64(dist[tgt, nbr[j]]) != dx - 1:
            j += 1
        if j >= off[x + 1] or top + 1 >= DEP:
            top -= 1
            continue
        its[top] = j + 1
        n = nbr[j]
        typ = 1 if grp[n] != grp[x] else 0
        cls, aux = seq_hop(scheme == 1, lseq, auxs[top], top, typ)
        if cls < 0 or cls >= K:
            return -1                        # the scheme has too few classes
        node = chan[j] * K + cls
        if nodes[top] >= 0:
            k = (nodes[top] * maxdeg + (j - off[x])) * K + cls
            if not seen[k]:
                seen[k] = True
                edges[n_edges, 0] = nodes[top]
                edges[n_edges, 1] = node
                n_edges += 1
        top += 1
        xs[top] = n
        its[top] = off[n]
        auxs[top] = aux
        phs[top] = 1 if (phs[top - 1] == 1 or n == m) else 0
        nodes[top] = node
        codes[top] = (1 << top) | (codes[top - 1] ^ (1 << (top - 1))) | (typ << (top - 1))
    return n_edges


@njit
def _all_paths(g, adj, grp_cl, ep, alg, cap, nonmin, lab, out):
    """Walk every minimal path between endpoint routers (``ep``) and, with ``nonmin``, every
    source -> candidate -> destination path of ``alg`` within ``cap`` hops (see :func:`_walk`);
    returns the edge count, or -1 if a hop needs more classes than ``lab.K``."""
    dist, grp = g.dist, g.grp
    R = g.off.shape[0] - 1
    ne = 0
    for s in range(R):
        if ep[s] == 0:
            continue
        gs = grp[s]
        for d in range(R):
            if ep[d] == 0 or d == s:
                continue
            ne = _walk(s, -1, d, g, lab, out, ne)
            if ne < 0 or nonmin == 0:
                if ne < 0:
                    return -1
                continue
            gd = grp[d]
            for m in range(R):
                gm = grp[m]
                if m == s or m == d:
                    continue
                if alg == 1:
                    ok = gm == gs
                elif alg == 2:
                    ok = gm != gs and gm != gd
                else:
                    ok = gs != gd and grp_cl[gs] == grp_cl[gd] and adj[gs, gd] and \
                        adj[gm, gs] and adj[gm, gd]
                if not ok or np.int64(dist[m, s]) + np.int64(dist[d, m]) > cap:
                    continue
                ne = _walk(s, m, d, g, lab, out, ne)
                if ne < 0:
                    return -1
    return ne


def dependency_graph(topo, dist, plan, scheme: str | None = None, nonmin: bool = True):
    """(edges, n_nodes, sequences) of the channel dependency graph of a NAR/NAL/NAG plan.

    Enumerates every path the routing can produce (minimal paths between
    endpoint routers and, with ``nonmin``, every source -> candidate ->
    destination path within the cap) and labels each hop with its VC class
    under ``scheme`` (default: the plan's): nodes are ``channel * K + class``.
    ``edges`` is None if a path needs more classes than the plan has.
    """
    kp = plan.kernel_params
    scheme = scheme or plan.scheme
    alg = plan.info["galaxy_alg"]
    grp, _, _, grp_cl, adj = group_structure(topo, alg)
    K = int(plan.vcs_needed) if scheme == plan.scheme else 16
    n_nodes = 2 * topo.n_links * K
    off = topo.port_offsets.astype(np.int64)
    maxdeg = int(np.diff(off).max())
    seen = np.zeros(n_nodes * maxdeg * K, dtype=np.bool_)
    edges = np.zeros((n_nodes * maxdeg * K, 2), dtype=np.int64)
    seqs = np.zeros(1 << (MAX_CAP + 2), dtype=np.bool_)
    g = WalkGraph(off, topo.port_neighbor.astype(np.int64),
                  topo.port_out_channel.astype(np.int64), dist, grp.astype(np.int64))
    lab = WalkLabels(1 if scheme == "sequence" else 0, int(kp["lseq"]), K, maxdeg)
    ne = _all_paths(g, adj, grp_cl, topo.serving.astype(np.int8), ALG_IDS[alg],
                    int(kp["max_hops_cap"]), int(nonmin), lab, WalkOut(seen, edges, seqs))
    if ne < 0:
        return None, n_nodes, np.nonzero(seqs)[0]
    return edges[:ne], n_nodes, np.nonzero(seqs)[0]


# ------------------------------------------------------------------ plans
def _plan(alg, topo, dist, max_hops, th_min, th_nonmin, vc_scheme):
    if vc_scheme == "auto":
        vc_scheme = "sequence"
    if vc_scheme not in ("sequence", "hop", "count"):
        raise ParameterError(f"routing.vc_scheme: '{vc_scheme}' is not one of sequence, hop, count")
    if not 0.0 <= th_min <= 1.0:
        raise ParameterError(f"routing.th_min: must be in [0, 1] (fraction of a port's buffer), "
                             f"got {th_min}")
    if not 0.0 < th_nonmin <= 1.0:
        raise ParameterError(f"routing.th_nonmin: must be in (0, 1] (fraction of Q_min), "
                             f"got {th_nonmin}")
    cap = CAPS[alg] if max_hops is None else max_hops
    if not 1 <= cap <= MAX_CAP:
        raise ParameterError(f"routing.max_hops: must be in [1, {MAX_CAP}], got {cap}")
    tables = group_structure(topo, alg)
    grp, grp_rtr, grp_nb, grp_cl, adj = tables
    if alg == "nag" and int(np.count_nonzero(grp_rtr[:, 0] >= 0)) < 3:
        raise ParameterError("routing.algorithm: 'nag' needs at least 3 working supernodes")
    ep = np.nonzero(topo.serving)[0]
    diam = int(dist[np.ix_(ep, ep)].max()) if ep.size > 1 else 0
    if diam > 5:
        what = f"the degraded '{topo.name}' network" if topo.is_degraded else f"'{topo.name}'"
        raise ParameterError(f"routing.algorithm: '{alg}' supports router diameters up to 5 "
                             f"(Galaxyfly's bound); {what} has {diam}")
    codes = sequences(topo, dist, alg, cap, tables)
    lengths = np.array([int(c).bit_length() - 1 for c in codes])
    n_glob = np.array([bin(int(c) ^ (1 << int(n))).count("1") for c, n in zip(codes, lengths)])
    longest = int(lengths.max()) if codes.size else 0
    max_local = int((lengths - n_glob).max()) if codes.size else 0
    max_global = int(n_glob.max()) if codes.size else 0
    cand, n = _canonical(codes, longest, min(longest + 6, 16))
    if cand < 0:
        raise ParameterError(f"routing.max_hops: no link-type sequence of at most {longest + 6} "
                             f"positions covers the paths of '{alg}' on this topology")
    lseq = int(cand) | (1 << int(n))
    seq_local = int(n) - bin(int(cand)).count("1")
    seq_global = bin(int(cand)).count("1")
    kp = dict(max_hops_cap=int(cap), th_min=float(th_min), th_nonmin=float(th_nonmin), lseq=lseq)
    info = dict(galaxy_alg=alg, max_local_hops=max_local, max_global_hops=max_global,
                seq_local=seq_local, seq_global=seq_global)
    tab = {"r_group": grp, "grp_rtr": grp_rtr, "grp_nb": grp_nb, "grp_cl": grp_cl}
    if vc_scheme == "hop":
        return RoutingPlan(kernel=alg, max_hops=longest, vcs_needed=max(longest, 1), scheme="hop",
                           tables=tab, kernel_params=kp, info=info,
                           vc_scheme="hop-index: VC class = number of router-to-router hops taken")
    if vc_scheme == "count":
        return RoutingPlan(kernel=alg, max_hops=longest, vcs_needed=max(max_local, max_global, 1),
                           scheme="count", tables=tab, kernel_params=kp, info=info,
                           vc_scheme=f"count (004 Sec. 4.3 literally): class = earlier hops of the "
                                     f"same link type; {max_local} local, {max_global} global "
                                     f"classes (can deadlock)")
    return RoutingPlan(kernel=alg, max_hops=longest, vcs_needed=max(seq_local, seq_global, 1),
                       scheme="sequence", tables=tab, kernel_params=kp, info=info,
                       vc_scheme=f"link-type sequence {seq_text(lseq)}: a hop takes the next "
                                 f"position of its type, class = earlier positions of that type "
                                 f"({seq_local} local, {seq_global} global classes)")


def nar(topo, dist, max_hops=None, th_min=0.8, th_nonmin=0.5, vc_scheme="sequence"):
    """Plan for NAR (non-minimal via a common neighbour supernode; 004 Sec. 4.2)."""
    return _plan("nar", topo, dist, max_hops, th_min, th_nonmin, vc_scheme)


def nal(topo, dist, max_hops=None, th_min=0.8, th_nonmin=0.5, vc_scheme="sequence"):
    """Plan for NAL (one local misroute inside the source supernode; 004 Sec. 4.2)."""
    return _plan("nal", topo, dist, max_hops, th_min, th_nonmin, vc_scheme)


def nag(topo, dist, max_hops=None, th_min=0.8, th_nonmin=0.5, vc_scheme="sequence"):
    """Plan for NAG (non-minimal via a random other supernode; 004 Sec. 4.2)."""
    return _plan("nag", topo, dist, max_hops, th_min, th_nonmin, vc_scheme)


def _params(cap):
    return [
        Param("max_hops", int, cap, f"longest non-minimal path; a longer candidate is redrawn "
              f"(004 Sec. 4.2: {cap})"),
        Param("th_min", float, 0.8, "Th_min as a fraction of one port's buffer: non-minimal only "
              "when the minimal port holds more (004: 0.8)"),
        Param("th_nonmin", float, 0.5, "Th_nonmin as a fraction of Q_min: non-minimal only when "
              "the candidate's first port holds less (004: 0.5)"),
        Param("vc_scheme", str, "sequence", "VC classes: sequence = positions in a canonical "
              "local/global link sequence (deadlock-free); hop = hop index; count = class = "
              "earlier hops of the same link type (004 Sec. 4.3 literally; can deadlock, refused "
              "by the check); auto = sequence", choices=("auto", "sequence", "hop", "count")),
    ]


ROUTINGS.register("nar", nar, params=_params(5),
                  summary="Galaxyfly NAR: adaptive misroute via a common neighbour supernode of "
                          "adjacent same-cluster supernodes (<= 5 hops)",
                  reference="004 Sec. 4.2, 4.3")
ROUTINGS.register("nal", nal, params=_params(6),
                  summary="Galaxyfly NAL: adaptive local misroute inside the source supernode "
                          "(<= 6 hops)",
                  reference="004 Sec. 4.2, 4.3")
ROUTINGS.register("nag", nag, params=_params(7),
                  summary="Galaxyfly NAG: adaptive misroute via a random other supernode (<= 7 hops)",
                  reference="004 Sec. 4.2, 4.3")


# ------------------------------------------------------------------------------ kernels
GroupTables = namedtuple("GroupTables", ["r_group", "grp_rtr", "grp_nb", "grp_cl"])
"""Group of each router; routers (padded with -1), sorted neighbour groups (padded with
``GRP_PAD``) and cluster of every group (:func:`group_structure`)."""

# kernel parameters (``ap``)
A_ALG, A_SCHEME, A_CAP, A_THMIN, A_THNON, A_LSEQ = range(6)
SCHEME_IDS = {"hop": 0, "sequence": 1, "count": 2}


def pack(plan, cfg):
    """``th_min`` (a fraction of the buffer behind the port,
    :func:`models.routing.paths.buffer_share`) and ``th_nonmin`` in millionths."""
    kp = plan.kernel_params
    return {"variant": ALG_IDS[plan.info["galaxy_alg"]], "scheme": SCHEME_IDS[plan.scheme],
            "max_hops_cap": kp["max_hops_cap"],
            "th_min_micro": int(round(kp["th_min"] * 1_000_000)),
            "th_nonmin_micro": int(round(kp["th_nonmin"] * 1_000_000)), "lseq": kp["lseq"]}


@njit_inline
def group_size(grp_rtr, g):
    """Routers of group ``g`` (rows of ``grp_rtr`` are padded with -1)."""
    n = 0
    while n < grp_rtr.shape[1] and grp_rtr[g, n] >= 0:
        n += 1
    return n


@njit_inline
def groups_adjacent(grp_nb, a, b):
    """True if group ``b`` is a neighbour of group ``a`` (binary search in a sorted row)."""
    lo = 0
    hi = grp_nb.shape[1]
    while lo < hi:
        mid = (lo + hi) >> 1
        v = grp_nb[a, mid]
        if v == b:
            return True
        if v < b:
            lo = mid + 1
        else:
            hi = mid
    return False


@njit_inline
def galaxy_mid(alg, rg, dstr, dist, cap, seed, src, seq, r_group, grp_rtr, grp_nb, grp_cl):
    """A random non-minimal candidate (intermediate router) for NAR/NAL/NAG, -1 if none.

    * NAL (``alg`` 1): another router of the source supernode (one local misroute);
    * NAG (2): a random router of a random supernode other than the source's and the
      destination's;
    * NAR (0): only when the source and destination supernodes are adjacent and in the
      same cluster: a random router of a random common neighbour supernode.

    A candidate whose path (minimal to it, then minimal on) would be longer than ``cap``
    hops is redrawn, up to ``MAX_TRIES`` times (keys: packet id, ``P_MID + try`` for the
    group or router, ``P_MID_ROUTER + try`` for the router inside a drawn group).
    """
    gs = r_group[rg]
    gd = r_group[dstr]
    n_common = 0
    if alg == 0:
        if gs == gd or grp_cl[gs] != grp_cl[gd] or not groups_adjacent(grp_nb, gs, gd):
            return -1
        for i in range(grp_nb.shape[1]):
            x = grp_nb[gs, i]
            if x == GRP_PAD:
                break
            if groups_adjacent(grp_nb, gd, x):
                n_common += 1
        if n_common == 0:
            return -1
    G = grp_rtr.shape[0]
    for k in range(MAX_TRIES):
        if alg == 1:
            m = grp_rtr[gs, below(group_size(grp_rtr, gs), seed, src, seq, P_MID + k)]
            if m == rg or m == dstr:
                continue
        else:
            gm = -1
            if alg == 2:
                gm = below(G, seed, src, seq, P_MID + k)
                if gm == gs or gm == gd:
                    continue
            else:
                j = below(n_common, seed, src, seq, P_MID + k)
                for i in range(grp_nb.shape[1]):
                    x = grp_nb[gs, i]
                    if x == GRP_PAD:
                        break
                    if groups_adjacent(grp_nb, gd, x):
                        if j == 0:
                            gm = x
                            break
                        j -= 1
            n = group_size(grp_rtr, gm)
            if n == 0:
                continue          # a failed supernode (NAG's draw; NAR's are adjacent)
            m = grp_rtr[gm, below(n, seed, src, seq, P_MID_ROUTER + k)]
        if np.int64(dist[m, rg]) + np.int64(dist[dstr, m]) > cap:
            continue
        return m
    return -1


@njit_kernel
def galaxy_source(site, eng, ctx, ap, fid):
    """Intermediate router of a NAR/NAL/NAG packet at its source router (-1 = minimal).

    004 Sec. 4.2: non-minimal iff ``Q_min > Th_min`` and ``Q_nonmin < Th_nonmin``, with
    ``Q_min`` the occupancy of the minimal output port (the one the packet would take),
    ``Q_nonmin`` that of the first port towards the candidate, ``Th_min = th_min`` times the
    buffer behind the minimal port (its VCs times their capacity) and
    ``Th_nonmin = th_nonmin * Q_min``.  The candidate is drawn only when the minimal port
    is busy.
    """
    t, rg, plo, nepk, phi = site.t, site.rg, site.plo, site.nepk, site.phi
    prm, ports, tab, crd, rec, rec_c = eng.prm, eng.ports, eng.tab, eng.crd, eng.rec, eng.rec_c
    dstr = rec[fid, F_DSTR]
    if dstr == rg:
        return
    dist = tab.dist
    seed, src, seq = prm[PR_SEED], rec[fid, F_SRC], rec[fid, F_SEQ]
    pm = min_port(rg, dstr, plo + nepk, phi, ports.out_nbr, dist, seed, src, seq, 0)
    if pm < 0:
        return
    qm = port_queue(pm, prm, ports, crd, t)
    if qm * 1000000 <= buffer_share(pm, prm, ports, ap[A_THMIN]):
        return
    m = galaxy_mid(ap[A_ALG], rg, dstr, dist, ap[A_CAP], seed, src, seq, ctx.r_group,
                   ctx.grp_rtr, ctx.grp_nb, ctx.grp_cl)
    if m < 0:
        return
    pi = min_port(rg, m, plo + nepk, phi, ports.out_nbr, dist, seed, src, seq, 0)
    if pi < 0:
        return
    qi = port_queue(pi, prm, ports, crd, t)
    if qi * 1000000 < ap[A_THNON] * qm:
        rec_c[fid, F_MID - NF_HOT] = m


@njit_inline
def lseq_position(lseq, ltype, cls):
    """Position of the ``cls``-th link of type ``ltype`` in the sequence (length if none)."""
    n = seq_length(lseq)
    c = 0
    for p in range(n):
        if ((lseq >> p) & 1) == ltype:
            if c == cls:
                return p
            c += 1
    return n


@njit_kernel
def galaxy_hop(site, eng, ctx, ap, fid):
    """Minimal towards the candidate, then the destination; classes by link type: with the
    ``sequence`` scheme the next position of the hop's type in the canonical sequence
    (``F_AUX2`` = last position), with ``count`` the earlier hops of the same type
    (``F_AUX2`` = global hops); ``hop``: hop-index classes (checked by the engine)."""
    rg, plo, nepk, phi, P, in_cls = site.rg, site.plo, site.nepk, site.phi, site.P, site.in_cls
    prm, ports, tab, rec, rec_c = eng.prm, eng.ports, eng.tab, eng.rec, eng.rec_c
    op, ovc = minimal_hop(rg, plo, nepk, phi, 0, prm[PR_SEED], ports, tab.dist, rec, rec_c, fid)
    scheme = ap[A_SCHEME]
    if scheme == 0 or op < 0 or op - plo < nepk:
        return OK, op, ovc
    r_group, out_nbr, lseq = ctx.r_group, ports.out_nbr, ap[A_LSEQ]
    lt = 0 if r_group[out_nbr[op]] == r_group[rg] else 1
    ovc, aux = seq_hop(scheme == 1, lseq, rec_c[fid, F_AUX2 - NF_HOT], rec[fid, F_HOPS], lt)
    if ovc < 0:
        return ERR_VC, op, ovc
    rec_c[fid, F_AUX2 - NF_HOT] = aux
    if P - plo >= nepk:
        # the order guard compares within a link type (classes restart per type); with
        # link-type positions also across types
        lin = 0 if r_group[out_nbr[P]] == r_group[rg] else 1
        if lin == lt:
            if ovc <= in_cls:
                return ERR_VC_ORDER, op, ovc
        elif scheme == 1 and lseq_position(lseq, lin, in_cls) >= aux:
            return ERR_VC_ORDER, op, ovc
    return OK, op, ovc


for _name in ("nar", "nal", "nag"):
    register_kernel(_name, RoutingKernel(
        module=__name__, hop="galaxy_hop", source="galaxy_source", tables=GroupTables,
        schemes=("sequence", "hop", "count"),
        params=("variant", "scheme", "max_hops_cap", "th_min_micro", "th_nonmin_micro", "lseq"),
        knobs=("max_hops_cap", "th_min", "th_nonmin", "lseq"), pack=pack, monotone=lambda plan: plan.scheme == "hop"))
