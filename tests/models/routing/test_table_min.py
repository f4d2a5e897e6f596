"""``table_min`` (models/routing/table_min.py): BookSim2's anynet next-hop table, compared
with an independent re-implementation of BookSim's search written from its description
(a linear scan over a set of router ids, neighbour maps in id order), and packets that
follow it."""
import numpy as np
import pytest

from models.topologies.file import export_topology, from_file
from models.topology import build
from models.routing.cdg import check
from models.routing.table_min import booksim_table
from pdes.build import plan_routing, prepare
from pdes.engine import run_local
from tests.helpers import anynet_ring, assert_same_results, cfg_builder

cfg_of = cfg_builder("routing")


def booksim_reference(text: str) -> dict:
    """{(router, destination router): next router} as BookSim2's anynet builds it from the
    network file ``text``: directed weights (a later listing of a link from the same side
    sets it again, 1 without a weight; the reverse direction is created with 1 when
    missing), then from every router: settle the unsettled router of least distance, the
    lowest id among equals, relax its neighbours in increasing id with a strictly
    shorter distance; the next hop is the first router of the predecessor chain."""
    adj: dict[int, dict[int, int]] = {}
    for line in text.splitlines():
        tok = line.split()
        if not tok or tok[0].startswith("#"):
            continue
        head_type, head = tok[0], int(tok[1])
        if head_type == "router":
            adj.setdefault(head, {})
        i, last = 2, None
        while i < len(tok):
            if tok[i] in ("router", "node"):
                body_type, body = tok[i], int(tok[i + 1])
                i += 2
                last = None
                if body_type == "router":
                    adj.setdefault(body, {})
                    if head_type == "router":
                        adj[head][body] = 1
                        adj[body].setdefault(head, 1)
                        last = body
            else:
                if last is not None:
                    adj[head][last] = int(tok[i])
                i += 1
    size = len(adj)
    out = {}
    for s in range(size):
        dist = {r: float("inf") for r in range(size)}
        prev = {r: -1 for r in range(size)}
        dist[s] = 0
        todo = set(range(size))
        while todo:
            best, cand = float("inf"), -1
            for r in sorted(todo):
                if dist[r] < best:
                    best, cand = dist[r], r
            todo.discard(cand)
            if cand < 0:
                break
            for nb in sorted(adj[cand]):
                nd = dist[cand] + adj[cand][nb]
                if nd < dist[nb]:
                    dist[nb], prev[nb] = nd, cand
        for d in range(size):
            if d == s or prev[d] < 0:
                continue
            v = d
            while prev[v] != s:
                v = prev[v]
            out[(s, d)] = v
    return out


def pdes_next_routers(topo) -> dict:
    """{(router, destination router): next router} of pdes's table."""
    T, _ = booksim_table(topo)
    off, nbr = topo.port_offsets, topo.port_neighbor
    R = topo.n_routers
    return {(s, d): int(nbr[off[s] + T[s, d]]) for s in range(R) for d in range(R) if d != s}


def lowest_id_minimal_next(topo, dist) -> dict:
    """The lowest-id neighbour one hop closer: a tie-breaking that is *not* BookSim's."""
    off, nbr = topo.port_offsets, topo.port_neighbor
    R = topo.n_routers
    out = {}
    for s in range(R):
        nb = nbr[off[s]:off[s + 1]]
        for d in range(R):
            if d != s:
                out[(s, d)] = int(min(n for n in nb if dist[n, d] == dist[s, d] - 1))
    return out


def exported(tmp_path, name, params):
    """A pdes topology exported as an anynet file (no latencies), and read back."""
    path = str(tmp_path / f"{name}.anynet")
    export_topology(build(name, params), "anynet", path)
    return path, from_file(path, format="anynet")


@pytest.fixture(scope="module")
def sf5(tmp_path_factory):
    """SF q=5 exported as an anynet file, and read back."""
    return exported(tmp_path_factory.mktemp("sf"), "slimfly", {"q": 5})


def test_slim_fly_table_is_booksims(sf5):
    """On SF q=5 every next hop is the one BookSim's search picks; there every pair of routers
    has a single fewest-hop next hop, so the table is also ``min``'s choice."""
    path, topo = sf5
    ref = booksim_reference(open(path).read())
    assert len(ref) == topo.n_routers * (topo.n_routers - 1)
    assert pdes_next_routers(topo) == ref
    topo_, dist, plan, nv = plan_routing(cfg_of("topology.name=file", f"topology.path={path}",
                                               "topology.format=anynet", "routing.algorithm=table_min"))
    assert (plan.max_hops, plan.vcs_needed, nv) == (2, 2, 2)
    assert lowest_id_minimal_next(topo, dist) == ref


def test_ties_are_broken_as_booksim_does(tmp_path):
    """On a 4 x 6 torus, where many pairs tie between fewest-hop next hops, every next hop is
    BookSim's, and for some pairs that is not the lowest-id minimal neighbour."""
    path, topo = exported(tmp_path, "torus", {"dims": [4, 6]})
    ref = booksim_reference(open(path).read())
    assert pdes_next_routers(topo) == ref
    dist = plan_routing(cfg_of("topology.name=file", f"topology.path={path}",
                               "topology.format=anynet"))[1]
    naive = lowest_id_minimal_next(topo, dist)
    assert sum(naive[k] != ref[k] for k in ref) > 0
    assert all(dist[ref[(s, d)], d] == dist[s, d] - 1 for (s, d) in ref)     # fewest hops


def test_weights_steer_the_table(tmp_path):
    """On a ring of 6 with one heavy link (weight from both sides) the table goes the long
    way round it when that weighs less (weight 6: five hops of weight 1) and keeps the
    direct link on a tie (weight 5), as BookSim's search does; without weights it is the
    fewest-hop table."""
    for w, nxt, hops in ((6, 5, 5), (5, 1, 1)):
        heavy = anynet_ring(tmp_path, weights=[w, 1, 1, 1, 1, 1], name=f"heavy{w}.anynet")
        text = open(heavy).read() + f"router 1 router 0 {w}\n"          # both sides, one weight
        open(heavy, "w").write(text)
        topo = from_file(heavy, format="anynet")
        ref = booksim_reference(text)
        assert pdes_next_routers(topo) == ref
        assert ref[(0, 1)] == nxt and booksim_table(topo)[1][0, 1] == hops
    plain = anynet_ring(tmp_path, name="plain.anynet")
    assert pdes_next_routers(from_file(plain, format="anynet")) == booksim_reference(open(plain).read())


def test_packets_follow_the_table(sf5):
    """Under a random permutation the channels that carry flits are exactly the channels of
    the table's paths between the permutation's pairs; hop counts stay within the table's."""
    path, _ = sf5
    cfg = cfg_of("topology.name=file", f"topology.path={path}", "topology.format=anynet",
                 "routing.algorithm=table_min", "router.link_latency=1",
                 "traffic.pattern=randperm", "traffic.load=0.3")
    prep = prepare(cfg)
    res = run_local(cfg, prep=prep)
    topo = prep.topo
    T = prep.plan.tables["next_port"]
    off, nbr, chan = topo.port_offsets, topo.port_neighbor, topo.port_out_channel
    er = topo.endpoint_router
    used = set()
    for e, d in enumerate(prep.traffic.table):
        if d < 0:
            continue
        r, dr = int(er[e]), int(er[d])
        while r != dr:
            p = off[r] + T[r, dr]
            used.add(int(chan[p]))
            r = int(nbr[p])
    carried = set(np.nonzero(np.asarray(res["link_flits"]))[0].tolist())
    assert carried == used
    assert np.nonzero(res["hist_hops"])[0].max() <= 2
    b = run_local(cfg, prep=prep, owner=(np.arange(topo.n_routers) % 3).astype(np.int32))
    assert_same_results(res, b)


def test_one_class_check_uses_the_table(tmp_path, sf5):
    """With ``routing.vcs = "any"`` the static check builds the table's own dependency graph:
    a cycle on the Slim Fly, none on a fat tree (up, then down)."""
    path, _ = sf5
    sf = plan_routing(cfg_of("topology.name=file", f"topology.path={path}", "topology.format=anynet",
                             "routing.algorithm=table_min", "routing.vcs=any"))
    res = check(*sf, vcs="any")
    assert not res["ok"] and res["reason"].startswith("cycle of")
    ft = plan_routing(cfg_of("topology.name=fattree", "topology.k=4", "routing.algorithm=table_min",
                             "routing.vcs=any"))
    res = check(*ft, vcs="any")
    assert res["ok"] and res["dependencies"] > 0
