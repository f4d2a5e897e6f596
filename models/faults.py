"""Failed links, routers and racks: the degraded network a run simulates (``[faults]``).

A fault set is a pure function of the intact topology and the ``[faults]`` keys, so every
rank computes the same one, on any rank count:

* explicit links (router pairs ``u-v``), routers and racks (every router of a group of the
  topology: a Slim Fly rack, a Dragonfly group, ``topo.group_kind`` names it);
* a random fraction (or count) of the links, optionally only of some link classes
  (``global``, ``optical``, ...), and a random fraction of the routers: each candidate
  gets a key from the counter-based generator (:mod:`models.core.rng`, keyed by
  ``faults.seed`` and the link or router id) and the ``k`` smallest keys fail, so the set
  does not depend on the rank count, and with one seed a larger fraction fails a superset
  of the links a smaller one fails (a curve against the fraction degrades one network step
  by step).

:func:`degrade` removes the failed links, and every link of a failed router, from the
topology; routers, groups, link classes and the link latencies of the layout stay those of
the intact network, and router and endpoint ids do not change.  A failed router keeps its
endpoints, which become inactive.  When the surviving links split the network, the part
that holds the most endpoints is kept and the routers outside it are *cut off*: their
endpoints are inactive too (``faults.disconnected = "error"`` refuses such a fault set
instead).  :attr:`models.topology.Topology.up` marks the routers that remain.
:func:`restrict_traffic` drops, from a traffic plan of the intact network, every
source and destination that is not active.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from models.core.errors import ParameterError
from models.core.jit import njit
from models.core.rng import P_FAIL_LINK, P_FAIL_ROUTER, hash4


@njit
def _keys(seed, n, purpose):
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        out[i] = hash4(seed, i, 0, purpose)
    return out


def _draw(seed: int, cand: np.ndarray, k: int, n_all: int, purpose: int) -> np.ndarray:
    """The ``k`` candidates with the smallest keys (ids ascending)."""
    if k <= 0 or cand.size == 0:
        return np.zeros(0, dtype=np.int64)
    keys = _keys(np.uint64(seed), n_all, purpose)[cand]
    order = np.lexsort((cand, keys))
    return np.sort(cand[order[:k]])


GRAPH_ROUTINGS = ("min, min_adaptive, nearest, fastest, valiant, ugal_l, ugal_g, table_min, dfsssp, "
                  "layered, rues or fatpaths")
"""Routings whose tables come from the surviving graph alone (docs/faults.md)."""


def unroutable(what: str, why: str) -> ParameterError:
    """The error of a routing (``what``: its name in quotes, or a phrase) whose structure the
    failures break (``why`` says where)."""
    return ParameterError(f"routing.algorithm: {what} cannot route this degraded network: {why}; "
                          f"{GRAPH_ROUTINGS} route on the surviving links")


def configured(f: dict) -> bool:
    """Whether a resolved ``[faults]`` section fails anything."""
    return bool(f["links"].strip() or f["link_fraction"] > 0 or f["link_count"] > 0
                or len(f["routers"]) or f["router_fraction"] > 0 or len(f["racks"]))


def parse_links(text: str, topo) -> np.ndarray:
    """Link ids of the router pairs ``"u-v, u-v ..."`` (each must be a link of the topology;
    a pair joined by parallel links names all of them)."""
    items = [t for t in re.split(r"[,\s]+", text.strip()) if t]
    key = topo.links[:, 0].astype(np.int64) * topo.n_routers + topo.links[:, 1]
    ids = []
    for t in items:
        m = re.fullmatch(r"(\d+)-(\d+)", t)
        if not m:
            raise ParameterError(f"faults.links: '{t}' is not a router pair u-v "
                                 "(pairs separated by commas or spaces, e.g. \"0-5, 3-9\")")
        u, v = sorted((int(m.group(1)), int(m.group(2))))
        if v >= topo.n_routers:
            raise ParameterError(f"faults.links: {t} names a router outside 0..{topo.n_routers - 1}")
        i, j = np.searchsorted(key, u * topo.n_routers + v, side="left"), \
            np.searchsorted(key, u * topo.n_routers + v, side="right")
        if i == j:
            raise ParameterError(f"faults.links: {t} is not a link of the {topo.name} network")
        ids.extend(range(int(i), int(j)))
    return np.unique(np.asarray(ids, dtype=np.int64))


@dataclass(frozen=True)
class FaultSet:
    """The failed and cut-off elements of a network (ids of the intact topology)."""

    links: np.ndarray          # failed link ids (explicit, drawn, and those of failed routers)
    link_pairs: np.ndarray     # (k, 2) the routers of each failed link
    routers: np.ndarray        # failed routers
    cut_off: np.ndarray        # working routers outside the largest connected part
    keep: np.ndarray           # (L,) bool: the links that remain
    inactive_endpoints: int    # endpoints on failed or cut-off routers
    description: str

    def summary(self) -> dict:
        return {"failed_links": int(self.links.size), "failed_routers": int(self.routers.size),
                "cut_off_routers": int(self.cut_off.size),
                "inactive_endpoints": int(self.inactive_endpoints)}


def select(topo, f: dict) -> FaultSet:
    """The fault set of the resolved ``[faults]`` section ``f`` on the intact ``topo``."""
    R, L = topo.n_routers, topo.n_links
    seed = int(f["seed"])
    failed_r = np.zeros(R, dtype=bool)
    routers = np.asarray(f["routers"], dtype=np.int64)
    if routers.size and (routers.min() < 0 or routers.max() >= R):
        raise ParameterError(f"faults.routers: router ids are 0..{R - 1}")
    failed_r[routers] = True
    racks = np.asarray(f["racks"], dtype=np.int64)
    if racks.size:
        G = topo.n_groups
        if racks.min() < 0 or racks.max() >= G:
            raise ParameterError(f"faults.racks: the {topo.name} network has {G} "
                                 f"{topo.group_kind}s, ids 0..{G - 1}")
        failed_r |= np.isin(topo.group, racks)
    if f["router_fraction"] > 0:
        k = int(round(f["router_fraction"] * R))
        cand = np.nonzero(~failed_r)[0]
        failed_r[_draw(seed, cand, min(k, cand.size), R, P_FAIL_ROUTER)] = True

    failed_l = np.zeros(L, dtype=bool)
    failed_l[parse_links(f["links"], topo)] = True
    if f["link_fraction"] > 0 and f["link_count"] > 0:
        raise ParameterError("faults.link_count: give link_fraction or link_count, not both")
    if f["link_fraction"] > 0 or f["link_count"] > 0:
        in_class = np.ones(L, dtype=bool)
        names = [t for t in re.split(r"[,\s]+", f["link_classes"].strip()) if t]
        if names:
            unknown = [n for n in names if n not in topo.link_class_names]
            if unknown:
                raise ParameterError(
                    f"faults.link_classes: '{unknown[0]}' is not a link class of the {topo.name} "
                    f"network (its classes: {', '.join(topo.link_class_names)})")
            idx = [topo.link_class_names.index(n) for n in names]
            in_class = np.isin(topo.link_class, idx)
        cand = np.nonzero(in_class & ~failed_l)[0]
        k = int(round(f["link_fraction"] * cand.size)) if f["link_fraction"] > 0 else int(f["link_count"])
        if k > cand.size:
            raise ParameterError(f"faults.link_count: {k} links asked to fail, the network has "
                                 f"{cand.size} candidates")
        failed_l[_draw(seed, cand, k, L, P_FAIL_LINK)] = True
    # a failed router takes its links with it
    failed_l |= failed_r[topo.links[:, 0]] | failed_r[topo.links[:, 1]]
    keep = ~failed_l

    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components
    u, v = topo.links[keep, 0], topo.links[keep, 1]
    g = csr_matrix((np.ones(u.size, dtype=np.int8), (u, v)), shape=(R, R))
    _, label = connected_components(g, directed=False)
    ep = np.where(failed_r, 0, topo.endpoints).astype(np.int64)
    per = np.bincount(label, weights=ep, minlength=int(label.max()) + 1)
    main = int(np.argmax(per))          # most endpoints; ties: the part of the lowest router
    cut = (label != main) & ~failed_r
    if per[main] < 2:
        raise ParameterError("faults: no two working endpoints remain connected")
    cut_eps = int(topo.endpoints[cut].sum())
    if cut_eps and f["disconnected"] == "error":
        raise ParameterError(
            f"faults: the fault set cuts {cut_eps} endpoints on {int((cut & (topo.endpoints > 0)).sum())} "
            f"routers off the rest of the network (faults.disconnected = error; \"exclude\" "
            "makes them inactive)")
    inactive = int(topo.endpoints[failed_r | cut].sum())
    parts = [f"{int(failed_l.sum())} of {L} links"]
    if failed_r.any():
        parts.append(f"{int(failed_r.sum())} of {R} routers")
    desc = "failed: " + ", ".join(parts)
    if cut.any():
        desc += f"; {int(cut.sum())} routers cut off"
    if inactive:
        desc += f"; {inactive} of {topo.n_endpoints} endpoints inactive"
    return FaultSet(links=np.nonzero(failed_l)[0], link_pairs=topo.links[failed_l].copy(),
                    routers=np.nonzero(failed_r)[0],
                    cut_off=np.nonzero(cut)[0], keep=keep, inactive_endpoints=inactive,
                    description=desc)


def degrade(topo, fs: FaultSet):
    """The topology without the failed links, with :attr:`~models.topology.Topology.up`
    False on failed and cut-off routers (same routers, ids, groups and link classes)."""
    from models.topology import Topology
    up = np.ones(topo.n_routers, dtype=bool)
    up[fs.routers] = False
    up[fs.cut_off] = False
    meta = dict(topo.meta)
    meta["faults"] = fs.summary()
    return Topology(name=topo.name, params=dict(topo.params), n_routers=topo.n_routers,
                    links=np.ascontiguousarray(topo.links[fs.keep]), endpoints=topo.endpoints.copy(),
                    group=topo.group.copy(), link_class=topo.link_class[fs.keep].copy(),
                    link_class_names=tuple(topo.link_class_names), group_kind=topo.group_kind,
                    meta=meta, router_up=up)


def restrict_traffic(plan, ok: np.ndarray):
    """(plan, pairs dropped): the traffic plan ``plan`` of the intact network with every
    inactive endpoint (``ok[e]`` False) removed as a source and as a destination.

    ``uniform`` becomes uniform over the active endpoints; a fixed destination that is
    inactive leaves its source idle (``two_choice``: the other choice is taken); ``mix`` and
    ``weighted`` draw only active candidates; a finite exchange loses the messages from or
    to an inactive endpoint.  The count is of sources left idle (or messages dropped).
    """
    ok = np.asarray(ok, dtype=bool)
    if plan.kind == "schedule":
        lost = np.nonzero(~ok[plan.ops.proc_ep])[0]
        if lost.size:
            raise ParameterError(f"faults: process {int(lost[0])} of the schedule is on endpoint "
                                 f"{int(plan.ops.proc_ep[lost[0]])}, whose router failed or is cut "
                                 "off (place the processes on active endpoints)")
        return plan, 0
    src = plan.active.astype(bool) & ok
    note = "; inactive endpoints removed"
    if plan.kind == "uniform":
        members = np.nonzero(ok)[0].astype(np.int32)
        return replace(plan, kind="mix", set_a=members, set_b=np.zeros(0, np.int32), frac=0.0,
                       sources=src.astype(np.int8), description=plan.description + note), 0
    if plan.kind in ("table", "two_choice"):
        t1 = plan.table.astype(np.int64)
        t2 = t1 if plan.kind == "table" else plan.table2.astype(np.int64)
        g1 = (t1 >= 0) & ok[np.maximum(t1, 0)]
        g2 = (t2 >= 0) & ok[np.maximum(t2, 0)]
        n1 = np.where(g1, t1, np.where(g2, t2, -1))
        n2 = np.where(g2, t2, n1)
        n1[~src] = -1
        n2[~src] = -1
        dropped = int((src & (n1 < 0)).sum())
        out = replace(plan, table=n1.astype(np.int32), description=plan.description + note,
                      sources=None if plan.sources is None else (src & (n1 >= 0)).astype(np.int8))
        if plan.kind == "two_choice":
            out = replace(out, table2=n2.astype(np.int32))
        return out, dropped
    if plan.kind == "mix":
        a = plan.set_a[ok[plan.set_a]]
        b = plan.set_b[ok[plan.set_b]] if plan.set_b is not None else np.zeros(0, np.int32)
        if a.size < 2:
            raise ParameterError("faults: fewer than two of the traffic pattern's endpoints remain active")
        return replace(plan, set_a=a, set_b=b, description=plan.description + note,
                       sources=None if plan.sources is None else src.astype(np.int8)), 0
    if plan.kind == "weighted":
        from models.traffic.booksim import weighted_plan
        lo, hi = plan.table.astype(np.int64), plan.table2.astype(np.int64)
        rows, row_of = [], np.full(ok.size, -1, dtype=np.int64)
        index = {}
        dropped = 0
        for e in np.nonzero(src & (lo >= 0))[0]:
            key = (int(lo[e]), int(hi[e]))
            if key not in index:
                cand = plan.set_a[key[0]:key[1]].astype(np.int64)
                cum = plan.set_b[key[0]:key[1]].astype(np.int64)
                w = np.diff(np.concatenate([[0], cum]))
                good = ok[cand]
                index[key] = len(rows) if good.any() else -1
                if good.any():
                    rows.append((cand[good], w[good]))
            row_of[e] = index[key]
            dropped += int(index[key] < 0)
        if not rows:
            raise ParameterError("faults: no source of the traffic pattern has an active destination")
        out = weighted_plan(rows, row_of, plan.description + note)
        return replace(out, sources=None if plan.sources is None else
                       (src & (row_of >= 0)).astype(np.int8)), dropped
    if plan.kind == "messages":
        E = ok.size
        owner = np.repeat(np.arange(E), np.diff(plan.msg_off))
        keep = ok[owner] & ok[plan.msg_dst]
        off = np.zeros(E + 1, dtype=np.int64)
        np.cumsum(np.bincount(owner[keep], minlength=E), out=off[1:])
        return replace(plan, msg_off=off.astype(plan.msg_off.dtype), msg_dst=plan.msg_dst[keep],
                       msg_pkts=plan.msg_pkts[keep], description=plan.description + note), \
            int((~keep).sum())
    raise ParameterError(f"faults: traffic of kind '{plan.kind}' cannot be restricted to the "
                         "active endpoints")
