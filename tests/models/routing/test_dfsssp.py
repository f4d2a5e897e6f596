"""``dfsssp`` (models/routing/dfsssp.py): balanced shortest-path tables, virtual lanes whose
channel dependency graphs are acyclic, the lanes it reports and needs, packets that follow
the tables, degraded networks and exactness on any partition."""
import dataclasses

import numpy as np
import pytest

from models.core.errors import ParameterError
from models.routing import dfsssp as D
from models.routing.cdg import check
from models.routing.table_min import booksim_table
from pdes.build import plan_routing, prepare
from pdes.engine import run_local, simulate
from tests.helpers import assert_same_results, cfg_builder, run_pdes

cfg_of = cfg_builder("routing", "routing.algorithm=dfsssp", "router.link_latency=1")
NETS = {"sf5": ["topology.q=5"], "sf7": ["topology.q=7"],
        "torus": ["topology.name=torus", "topology.dims=4,4"]}
FAULTS = ["faults.link_fraction=0.1", "faults.routers=[3]"]


def plan_of(*sets):
    """(topology, distances, plan, num_vcs) of dfsssp with ``sets``."""
    return plan_routing(cfg_of(*sets))


def walk(topo, T, s, d):
    """Routers of the table's path from router ``s`` to ``d`` (stops after R hops)."""
    off, nbr = topo.port_offsets, topo.port_neighbor
    path = [int(s)]
    while path[-1] != d and len(path) <= topo.n_routers and T[path[-1], d] >= 0:
        path.append(int(nbr[off[path[-1]] + T[path[-1], d]]))
    return path


@pytest.mark.parametrize("net", sorted(NETS))
def test_paths_reach_their_destination_loop_free_and_fewest_hop(net):
    """Every path between routers with endpoints reaches its destination without visiting a
    router twice, in as many hops as the distance (the P^2 base weight keeps them minimal)."""
    topo, dist, plan, _ = plan_of(*NETS[net])
    T = plan.tables["next_port"]
    srv = np.nonzero(topo.serving)[0]
    for s in srv:
        for d in srv:
            if s != d:
                path = walk(topo, T, s, d)
                assert path[-1] == d and len(set(path)) == len(path), (s, d, path)
                assert len(path) - 1 == dist[s, d], (s, d, path)
    assert plan.max_hops == int(dist[np.ix_(srv, srv)].max())


@pytest.mark.parametrize("net,lanes", [("sf5", 2), ("sf7", 2)])
def test_lanes_needed_on_slim_fly_and_each_lane_is_acyclic(net, lanes):
    """DFSSSP needs 2 lanes on SF q=5 and q=7 (within a sanity bound of 4), the channel
    dependency graph of every lane is acyclic, and with all paths in one lane the same check
    finds a cycle (so the lanes are needed)."""
    topo, dist, plan, nv = plan_of(*NETS[net])
    assert plan.info["lanes"] == plan.vcs_needed == nv == lanes <= 4
    assert plan.scheme == "lane" and sum(plan.info["pairs_per_lane"]) == \
        int(topo.serving.sum()) * (int(topo.serving.sum()) - 1)
    res = check(topo, dist, plan, nv)
    assert res["ok"] and res["dependencies"] > 0, res["reason"]
    T = plan.tables["next_port"]
    one = np.zeros_like(plan.tables["lane"])
    merged = dataclasses.replace(plan, vcs_needed=1,
                                 class_turns=lambda: D.lane_turns(topo, T, one, 1))
    res = check(topo, dist, merged, 1)
    assert not res["ok"] and res["reason"].startswith("cycle of"), res["reason"]


def test_balance_against_first_found_shortest_paths():
    """All-pairs channel loads: the busiest channel carries no more routes than with
    ``table_min``'s first-found shortest paths on SF q=5 (equal there: every pair has one
    minimal path) and fewer on a 4 x 4 torus; on SF q=7 the loads are more even (smaller sum
    of squares, the quantity SSSP's greedy weights lower)."""
    def loads(*sets):
        topo, _, plan, _ = plan_of(*sets)
        return D.channel_routes(topo, plan.tables["next_port"]), \
            D.channel_routes(topo, booksim_table(topo)[0])
    dfs, first = loads(*NETS["sf5"])
    assert dfs.max() <= first.max() and dfs.sum() == first.sum()
    dfs, first = loads(*NETS["torus"])
    assert dfs.max() < first.max() and dfs.sum() == first.sum()
    dfs, first = loads(*NETS["sf7"])
    assert dfs.sum() == first.sum() and (dfs ** 2).sum() < (first ** 2).sum()


def test_num_vcs_takes_the_lanes_and_too_few_are_refused():
    """``router.num_vcs = 0`` takes the lanes needed; fewer VCs are refused, naming the lanes;
    the static check and the start report state them."""
    assert plan_of("router.num_vcs=0")[3] == 2
    with pytest.raises(ParameterError, match=r"router.num_vcs: routing 'dfsssp' needs 2 VCs .*"
                                             r"\(2 lanes needed\).* num_vcs = 1"):
        plan_of("router.num_vcs=1")
    r = run_pdes("check", "--set", "routing.algorithm=dfsssp")
    assert r.returncode == 0, r.stderr
    assert "routing: dfsssp needs 2 virtual lanes (router pairs per lane: 1679, 771" in r.stdout
    r = run_pdes("run", "--set", "routing.algorithm=dfsssp", "--set", "router.num_vcs=1")
    lines = [ln for ln in r.stderr.strip().splitlines() if not ln.startswith("[pdes]")]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith("pdes: error: router.num_vcs: routing 'dfsssp' needs 2 VCs")
    assert "(2 lanes needed)" in lines[0]


def test_memory_and_lane_limits_are_refused(monkeypatch):
    """Tables or construction beyond the memory limit, or more lanes than the lane table
    holds, are refused with a ParameterError naming the routing."""
    topo = plan_of()[0]
    with pytest.raises(ParameterError, match="more than 1 virtual lanes"):
        D.build(topo, max_lanes=1)
    monkeypatch.setattr(D, "MEMORY_LIMIT", 10_000)          # tables fit, turns do not
    with pytest.raises(ParameterError, match="'dfsssp' needs .* GB to assign its virtual lanes"):
        D.build(topo)
    monkeypatch.setattr(D, "MEMORY_LIMIT", 1_000)
    with pytest.raises(ParameterError, match="'dfsssp' needs a 50 x 50 next-hop table"):
        D.build(topo)


def test_packets_follow_the_table_and_split_is_bit_identical():
    """Under a random permutation the channels that carry flits are exactly those of the
    table's paths between the permutation's pairs (VC classes never lower along a path:
    the kernel stops otherwise); any partition of the routers gives the same results."""
    cfg = cfg_of("traffic.pattern=randperm", "traffic.load=0.4", "router.num_vcs=4")
    prep = prepare(cfg)
    res = run_local(cfg, prep=prep)
    topo, T = prep.topo, prep.plan.tables["next_port"]
    chan = topo.port_out_channel
    er = topo.endpoint_router
    used = set()
    for e, d in enumerate(prep.traffic.table):
        if d >= 0:
            path = walk(topo, T, er[e], er[d])
            used |= {int(chan[topo.port_offsets[u] + T[u, er[d]]]) for u in path[:-1]}
    assert set(np.nonzero(np.asarray(res["link_flits"]))[0].tolist()) == used
    b = run_local(cfg, prep=prep, owner=(np.arange(topo.n_routers) % 3).astype(np.int32))
    assert_same_results(res, b)


def test_degraded_network_routes_on_the_surviving_links():
    """With failed links and a failed router, every pair of working routers is routed over
    surviving links only, the lanes stay acyclic, and traffic below saturation is delivered;
    the error of a structure-bound routing names dfsssp among the graph routings."""
    topo, dist, plan, nv = plan_of(*FAULTS)
    assert topo.is_degraded and not topo.up[3]
    T = plan.tables["next_port"]
    srv = np.nonzero(topo.serving)[0]
    assert 3 not in srv
    for s in srv:
        for d in srv:
            if s != d:
                path = walk(topo, T, s, d)
                assert path[-1] == d and len(path) - 1 == dist[s, d] and 3 not in path
    assert check(topo, dist, plan, nv)["ok"]
    res = run_local(cfg_of(*FAULTS, "traffic.load=0.3"))
    assert not res["summary"]["saturated"]
    assert res["summary"]["accepted_load"] == pytest.approx(0.3, rel=0.05)
    with pytest.raises(ParameterError, match="dfsssp"):
        plan_routing(cfg_of("topology.name=torus", "topology.dims=4,4", "routing.algorithm=dor",
                            "faults.link_count=1"))


@pytest.mark.mpi(min_size=2)
def test_mpi_run_equals_serial():
    """On the ranks of the world communicator a degraded-network run equals the one-process run."""
    from mpi4py import MPI
    cfg = cfg_of(*FAULTS, "traffic.load=0.6")
    assert_same_results(simulate(cfg, MPI.COMM_WORLD), simulate(cfg, None))
