"""Static deadlock check: the channel dependency graph of a routing (Dally & Seitz).

Nodes are (directed channel, VC class).  A packet holding class ``k`` on
channel ``u -> r`` that may next request class ``k'`` on ``r -> n`` adds the
edge ``(u->r, k) -> (r->n, k')``; the routing is deadlock-free if this graph
has no cycle.

* ``hop`` scheme: every dependency goes from class ``h`` to ``h + 1``, so the
  graph is acyclic whatever the paths; the check only confirms that the
  longest path fits in the configured VCs.
* ``sequence`` scheme (Galaxyfly NAR/NAL/NAG): every hop takes a later
  position of a canonical local/global link sequence and a (link type,
  class) pair is one position, so the graph is acyclic; the plan has already
  checked that every link-type sequence the routing can produce fits.
* ``count`` scheme (class = earlier hops of the same link type, 004 Sec. 4.3
  taken literally): the graph is built from every path the routing can
  produce (:func:`models.routing.galaxyfly.dependency_graph`; non-minimal
  paths only up to 200 routers) and searched for a cycle.
* ``dateline`` and ``dor`` schemes (dimension order on the torus and mesh):
  acyclic by the argument in :mod:`models.routing.torus`; the check confirms
  the classes fit in the configured VCs.
* ``routing.vcs = "any"`` (every hop may use every VC, whatever the scheme):
  one class, so every turn of every path is an edge.  The graph is built
  exactly for routings whose paths are known: fixed paths
  (``RoutingPlan.turns``) and graph-minimal routing (``min``,
  ``min_adaptive``: the turns of :func:`minimal_turns`); for any other
  routing it is not built and the check reports that the run can deadlock.
* ``lane`` scheme (DFSSSP's virtual lanes, :mod:`models.routing.dfsssp`): a packet keeps
  the class its source router gives it, so the graph is the union of one graph per
  class; it is built from every path (``RoutingPlan.class_turns``) and searched for a
  cycle.
* ``phase`` scheme: class 0 holds every turn of a minimal path towards an
  intermediate router (or towards the destination for packets that go
  minimally), class 1 every turn of a minimal path after the intermediate;
  0 -> 1 edges cannot close a cycle, so each class's turn graph is built and
  searched for a cycle.  A turn ``u -> r -> n`` is used iff it lies on a
  shortest path from a source to a target of its class (see
  :func:`minimal_turns`).
"""
from __future__ import annotations

import numpy as np


def minimal_turns(topo, dist, sources, targets) -> np.ndarray:
    """Channel dependency edges (c_in, c_out) of shortest paths from ``sources`` to ``targets``.

    The turn ``u -> r -> n`` is used iff it lies on a shortest path from some
    source S to some target T: ``d(S,u) = d(S,r) - 1``, ``d(n,T) = d(r,T) - 1``
    and ``d(S,T) = d(S,r) + d(r,T)``.  Per router this is ``pred @ K @ succ.T``
    with ``pred[u,S]``, ``succ[n,T]`` and ``K[S,T]`` the three conditions
    (cost: degree x |sources| x |targets| per router).
    """
    S = np.asarray(sources, dtype=np.int64)
    T = np.asarray(targets, dtype=np.int64)
    off, nbr, chan = topo.port_offsets, topo.port_neighbor, topo.port_out_channel
    d_st = dist[np.ix_(S, T)].astype(np.int16)
    src, dst = [], []
    for r in range(topo.n_routers):
        lo, hi = off[r], off[r + 1]
        if hi - lo < 2:
            continue
        nb = nbr[lo:hi]
        a = dist[S, r].astype(np.int16)                        # d(S, r)
        b = dist[r, T].astype(np.int16)                        # d(r, T)
        pred = (dist[np.ix_(nb, S)].astype(np.int16) == a - 1).astype(np.float32)
        succ = (dist[np.ix_(nb, T)].astype(np.int16) == b - 1).astype(np.float32)
        k = (d_st == a[:, None] + b[None, :]).astype(np.float32)
        use = ((pred @ k) @ succ.T) > 0
        iu, jn = np.nonzero(use)
        if iu.size:
            src.append(chan[lo + iu] ^ 1)          # u -> r is the reverse of r's port to u
            dst.append(chan[lo + jn])
    if not src:
        return np.zeros((0, 2), dtype=np.int64)
    return np.stack([np.concatenate(src), np.concatenate(dst)], axis=1)


def find_cycle(edges: np.ndarray, n_nodes: int) -> list[int] | None:
    """A cycle (list of nodes) in a directed graph given as an edge array, or None."""
    if edges.shape[0] == 0:
        return None
    order = np.argsort(edges[:, 0], kind="stable")
    e = edges[order]
    start = np.searchsorted(e[:, 0], np.arange(n_nodes + 1))
    color = np.zeros(n_nodes, dtype=np.int8)      # 0 new, 1 on stack, 2 done
    parent = np.full(n_nodes, -1, dtype=np.int64)
    for root in np.unique(e[:, 0]):
        if color[root]:
            continue
        stack = [(int(root), int(start[root]))]
        color[root] = 1
        while stack:
            v, i = stack[-1]
            if i < start[v + 1]:
                stack[-1] = (v, i + 1)
                w = int(e[i, 1])
                if color[w] == 0:
                    color[w] = 1
                    parent[w] = v
                    stack.append((w, int(start[w])))
                elif color[w] == 1:              # back edge: w ... v -> w
                    cyc = [v]
                    while cyc[-1] != w:
                        cyc.append(int(parent[cyc[-1]]))
                    return cyc[::-1]
            else:
                color[v] = 2
                stack.pop()
    return None


MINIMAL_KERNELS = ("min", "min_adaptive")
"""Kernels whose paths are all the graph-minimal paths between endpoint routers."""


def channel_names(topo, cyc) -> list[str]:
    """``u->v`` of each directed channel id in ``cyc``."""
    links = topo.links
    return [f"{int(links[c // 2, c % 2])}->{int(links[c // 2, 1 - c % 2])}" for c in cyc]


def check(topo, dist, plan, num_vcs: int, vcs: str = "hop") -> dict:
    """Deadlock analysis of a routing plan; ``ok`` is False with a reason if it can deadlock.
    ``vcs = "any"``: every hop may use every VC (one class, :func:`_check_one_class`)."""
    out = {"scheme": plan.scheme, "classes": plan.vcs_needed, "num_vcs": num_vcs,
           "max_hops": plan.max_hops, "ok": True, "reason": "", "cycle": []}
    if vcs == "any":
        out.update(scheme="any", classes=1)
        return _check_one_class(topo, dist, plan, out)
    if num_vcs < plan.vcs_needed:
        out.update(ok=False, reason=f"needs {plan.vcs_needed} VC classes, num_vcs = {num_vcs}")
        return out
    if plan.scheme == "hop":
        out["reason"] = ("acyclic: every dependency goes from class h to class h+1 "
                         f"(at most {plan.max_hops} hops, {plan.vcs_needed} classes)")
        return out
    if plan.scheme == "dragonfly":
        out["reason"] = ("acyclic: every dependency goes to a later position of the l-g-l-g-l "
                         f"sequence ({plan.vcs_needed} classes)")
        return out
    if plan.scheme == "dateline":
        out["reason"] = ("acyclic: dimension order, and in each ring class 1 holds the segments "
                         "that cross the wraparound link, class 0 the others "
                         "(models.routing.torus)")
        return out
    if plan.scheme == "dor":
        out["reason"] = ("acyclic: dimension order without wraparound links (a mesh or a "
                         "HyperX: each dimension corrected once, in order)")
        return out
    if plan.scheme in ("sequence", "count"):
        return _check_galaxy(topo, dist, plan, out)
    if plan.scheme == "lane":
        return _check_lanes(topo, plan, out)
    ep = np.nonzero(topo.serving)[0]
    mids = plan.tables.get("mid_cand")
    n_ch = 2 * topo.n_links
    # class 0: source router -> destination (minimal) or -> intermediate; class 1: intermediate ->
    # destination
    classes = [(0, ep, ep if mids is None else np.union1d(ep, mids))]
    if mids is not None:
        classes.append((1, mids, ep))
    for cls, sources, targets in classes:
        edges = minimal_turns(topo, dist, sources, targets)
        out[f"class{cls}_dependencies"] = int(edges.shape[0])
        cyc = find_cycle(edges, n_ch)
        if cyc is not None:
            names = channel_names(topo, cyc)
            out.update(ok=False, cycle=names,
                       reason=f"cycle of {len(cyc)} channels in VC class {cls}: "
                              + " , ".join(names[:12]) + (" ..." if len(names) > 12 else ""))
            return out
    out["reason"] = "acyclic: no cycle in the dependency graph of either class"
    return out


def _check_one_class(topo, dist, plan, out) -> dict:
    if plan.turns is not None:
        edges = plan.turns()
    elif plan.kernel in MINIMAL_KERNELS:
        ep = np.nonzero(topo.serving)[0]
        edges = minimal_turns(topo, dist, ep, ep)
    else:
        out.update(ok=False, reason=f"the dependency graph of kernel '{plan.kernel}' with one VC "
                   "class is not built, so nothing shows that its paths close no cycle")
        return out
    out["dependencies"] = int(edges.shape[0])
    cyc = find_cycle(edges, 2 * topo.n_links)
    if cyc is not None:
        names = channel_names(topo, cyc)
        out.update(ok=False, cycle=names,
                   reason=f"cycle of {len(cyc)} channels with one VC class: "
                          + " , ".join(names[:12]) + (" ..." if len(names) > 12 else ""))
        return out
    out["reason"] = "acyclic: no cycle in the dependency graph of every path with one VC class"
    return out


def _check_lanes(topo, plan, out) -> dict:
    """Classes fixed per path: one cycle search over the (channel, class) graph of every path."""
    K = max(int(plan.vcs_needed), 1)
    edges = plan.class_turns()
    out["dependencies"] = int(edges.shape[0])
    cyc = find_cycle(edges, 2 * topo.n_links * K)
    if cyc is not None:
        names = [f"{n}:{node % K}" for n, node in zip(channel_names(topo, [c // K for c in cyc]), cyc)]
        out.update(ok=False, cycle=names,
                   reason=f"cycle of {len(cyc)} (channel:lane) nodes: " + " , ".join(names[:12])
                   + (" ..." if len(names) > 12 else ""))
        return out
    lanes = "its one lane" if K == 1 else f"any of its {K} lanes"
    out["reason"] = (f"acyclic: no cycle in the channel dependency graph of {lanes} (every "
                     "path keeps the lane its source router gives it)")
    return out


def _check_galaxy(topo, dist, plan, out) -> dict:
    from models.routing.galaxyfly import EXACT_MAX_ROUTERS, dependency_graph, seq_text
    kp = plan.kernel_params
    if plan.scheme == "sequence":
        out["reason"] = (f"acyclic: every hop takes a later position of the link-type sequence "
                         f"{seq_text(kp['lseq'])} ({plan.info['seq_local']} local, {plan.info['seq_global']} "
                         f"global classes; every path of the routing fits, at most "
                         f"{plan.max_hops} hops)")
        return out
    nonmin = topo.n_routers <= EXACT_MAX_ROUTERS
    edges, n_nodes, _ = dependency_graph(topo, dist, plan, nonmin=nonmin)
    if edges is None:
        out.update(ok=False, reason=f"a path needs more than {plan.vcs_needed} classes")
        return out
    out["dependencies"] = int(edges.shape[0])
    cyc = find_cycle(edges, n_nodes)
    if cyc is not None:
        K = n_nodes // (2 * topo.n_links)
        links = topo.links
        names = []
        for node in cyc:
            c, k = node // K, node % K
            names.append(f"{int(links[c // 2, c % 2])}->{int(links[c // 2, 1 - c % 2])}:{k}")
        out.update(ok=False, cycle=names,
                   reason=f"cycle of {len(cyc)} (channel:class) nodes: " + " , ".join(names[:12])
                   + (" ..." if len(names) > 12 else ""))
        return out
    if not nonmin:
        out.update(ok=False, reason=f"no cycle among the dependencies of minimal paths, but "
                   f"non-minimal paths are only enumerated up to {EXACT_MAX_ROUTERS} routers")
        return out
    out["reason"] = "acyclic: no cycle in the dependency graph of every path the routing produces"
    return out
