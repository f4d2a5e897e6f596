"""``fatpaths`` (models/routing/fatpaths.py): FatPaths layers on the layered kernel -- acyclic
layers of round(rho x links) links, shortest paths inside them, layer 0 for the pairs a layer
does not reach, seeded construction, refused parameters, runs on any partition."""
import numpy as np
import pytest

from models.core.errors import ParameterError
from models.routing.cdg import check
from pdes.build import plan_routing, prepare
from pdes.engine import run_local, simulate
from tests.helpers import assert_same_results, cfg_builder, cli_sets, run_pdes

cfg_of = cfg_builder("routing", "topology.q=5", "router.link_latency=2",
                     "routing.algorithm=fatpaths")
VARIANTS = ["random", "min_overlap"]


def layer_channels(topo, T):
    """The directed channels the next-hop table ``T`` (R x R) of one layer uses."""
    off, chan = topo.port_offsets, topo.port_out_channel
    u, d = np.nonzero(T >= 0)
    return np.unique(chan[off[u] + T[u, d]])


def has_cycle(topo, channels) -> bool:
    """Whether the directed graph of these channels (router -> router) has a cycle (Kahn)."""
    links = topo.links
    src = np.where(channels % 2 == 0, links[channels // 2, 0], links[channels // 2, 1])
    dst = np.where(channels % 2 == 0, links[channels // 2, 1], links[channels // 2, 0])
    indeg = np.bincount(dst, minlength=topo.n_routers)
    out = {r: [] for r in range(topo.n_routers)}
    for a, b in zip(src.tolist(), dst.tolist()):
        out[a].append(b)
    ready = [r for r in range(topo.n_routers) if indeg[r] == 0]
    seen = 0
    while ready:
        r = ready.pop()
        seen += 1
        for b in out[r]:
            indeg[b] -= 1
            if indeg[b] == 0:
                ready.append(b)
    return seen < topo.n_routers


def walk(topo, T, s, d):
    """Routers from ``s`` following ``T`` towards ``d`` (stops at a missing entry or a
    revisited router)."""
    off, nbr = topo.port_offsets, topo.port_neighbor
    path = [int(s)]
    while path[-1] != d and T[path[-1], d] >= 0:
        nxt = int(nbr[off[path[-1]] + T[path[-1], d]])
        if nxt in path:
            path.append(nxt)
            break
        path.append(nxt)
    return path


@pytest.mark.parametrize("variant", VARIANTS)
def test_layers_are_acyclic_loop_free_and_fall_back_to_layer_0(variant):
    """Every layer >= 1 uses at most round(rho x links) links, in one direction each, and its
    channels form no directed cycle; a pair of endpoint routers either reaches its destination
    without revisiting a router (every router on the way routed too) or has no entry at its
    source (the kernel then uses layer 0); the statistics count both."""
    topo, dist, plan, nv = plan_routing(cfg_of("routing.layers=6", f"routing.variant={variant}"))
    tab = plan.tables["lay_port"]
    assert tab.dtype == np.int16 and tab.shape == (5, topo.n_routers, topo.n_routers)
    ep = np.nonzero(topo.endpoints > 0)[0]
    n_keep = round(0.8 * topo.n_links)
    for st in plan.info["layers"]:
        T = tab[st["layer"] - 1]
        ch = layer_channels(topo, T)
        assert np.unique(ch // 2).size == ch.size <= st["links"] == n_keep
        assert not has_cycle(topo, ch)
        routed, longest = 0, 0
        for s in ep:
            for d in ep:
                if s == d:
                    continue
                path = walk(topo, T, s, d)
                if T[s, d] < 0:
                    assert path == [s]
                    continue
                assert path[-1] == d and len(set(path)) == len(path)
                routed += 1
                longest = max(longest, len(path) - 1)
        assert routed == st["routed_pairs"] > 0
        assert st["unreachable_pairs"] == ep.size * (ep.size - 1) - routed > 0
        assert longest == st["longest"] <= plan.max_hops == plan.vcs_needed


@pytest.mark.parametrize("variant", VARIANTS)
def test_construction_is_seeded(variant):
    """The layers depend on measure.seed only: the same seed gives the same tables, another
    seed other tables, and the two variants differ."""
    base = ("routing.layers=4", f"routing.variant={variant}")
    a = plan_routing(cfg_of(*base))[2].tables["lay_port"]
    b = plan_routing(cfg_of(*base))[2].tables["lay_port"]
    c = plan_routing(cfg_of(*base, "measure.seed=2"))[2].tables["lay_port"]
    other = "random" if variant == "min_overlap" else "min_overlap"
    e = plan_routing(cfg_of("routing.layers=4", f"routing.variant={other}"))[2]
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert not np.array_equal(a, e.tables["lay_port"])


def channel_paths(topo, tab):
    """Per directed channel: the layer paths (layers >= 1, pairs of endpoint routers) on it."""
    W = np.zeros(2 * topo.n_links, dtype=np.int64)
    ep = np.nonzero(topo.endpoints > 0)[0]
    for T in tab:
        for s in ep:
            for d in ep:
                path = walk(topo, T, s, d)
                if s != d and T[s, d] >= 0:
                    for u, v in zip(path, path[1:]):
                        k = int(np.nonzero(topo.port_neighbor[topo.port_offsets[u]:
                                                              topo.port_offsets[u + 1]] == v)[0][0])
                        W[topo.port_out_channel[topo.port_offsets[u] + k]] += 1
    return W


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_min_overlap_spreads_the_paths_more_evenly(seed):
    """Choosing each layer's links by the paths earlier layers put on them spreads the layer
    paths more evenly over the channels than uniform sampling: a smaller standard deviation of
    the paths per channel (SF q=5, 8 layers, rho = 0.6; counts recomputed from the tables,
    their maximum as in the plan's statistics)."""
    spread = {}
    for variant in VARIANTS:
        topo, _, plan, _ = plan_routing(cfg_of("routing.layers=8", "routing.rho=0.6",
                                               f"routing.variant={variant}",
                                               f"measure.seed={seed}"))
        W = channel_paths(topo, plan.tables["lay_port"])
        assert W.max() == plan.info["max_channel_paths"]
        spread[variant] = W.std()
    assert spread["min_overlap"] < 0.85 * spread["random"], spread


@pytest.mark.parametrize("rho", [0.3, 1.0])
def test_rho_sets_the_links_per_layer_and_the_static_check_passes(rho):
    """Each layer keeps round(rho x links) links; the hop-index classes cover the longest
    path, so the channel dependency graph is acyclic (static deadlock check)."""
    topo, dist, plan, nv = plan_routing(cfg_of(f"routing.rho={rho}"))
    assert all(st["links"] == round(rho * topo.n_links) for st in plan.info["layers"])
    res = check(topo, dist, plan, nv)
    assert res["ok"], res["reason"]


@pytest.mark.parametrize("sets,key", [
    (["routing.rho=0"], "routing.rho"),
    (["routing.rho=1.5"], "routing.rho"),
    (["routing.variant=overlap"], "routing.variant"),
    (["routing.layers=0"], "routing.layers"),
    (["routing.layer_select=first"], "routing.layer_select"),
])
def test_bad_parameters_are_refused(sets, key):
    """Bad FatPaths parameters are refused at plan time with one line naming the key."""
    with pytest.raises(ParameterError, match=f"^{key}: ") as e:
        prepare(cfg_of(*sets))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("bad,key", [("routing.rho=1.5", "routing.rho"),
                                     ("routing.variant=overlap", "routing.variant")])
def test_cli_refuses_bad_parameters_with_one_line(tmp_path, bad, key):
    """`pdes run` with a bad FatPaths parameter: exit 2, one `pdes: error: <key>:` line, no
    traceback, no output file."""
    r = run_pdes("run", *cli_sets("topology.q=5", "routing.algorithm=fatpaths", bad,
                                  preset="cli"), "-o", str(tmp_path / "o.h5"), cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if not ln.startswith("[pdes]")]
    assert len(lines) == 1 and lines[0].startswith(f"pdes: error: {key}: "), r.stderr
    assert "Traceback" not in r.stderr and not list(tmp_path.iterdir())


def test_run_delivers_and_is_identical_on_any_partition():
    """A run below saturation delivers the offered load within the declared hops, and the same
    run on 2 and 3 parts gives identical results."""
    cfg = cfg_of("traffic.load=0.3")
    prep = prepare(cfg)
    a = run_local(cfg, prep=prep)
    assert not a["summary"]["saturated"]
    assert a["summary"]["accepted_load"] == pytest.approx(0.3, rel=0.05)
    assert np.nonzero(a["hist_hops"])[0].max() <= prep.plan.max_hops
    R = prep.topo.n_routers
    for owner in (np.arange(R) % 2, np.random.default_rng(11).integers(0, 3, R)):
        assert_same_results(a, run_local(cfg, prep=prep, owner=owner))


@pytest.mark.mpi(min_size=2)
def test_mpi_run_equals_serial():
    """On the ranks of the world communicator a FatPaths run equals the one-process run."""
    from mpi4py import MPI
    cfg = cfg_of("traffic.load=0.6", "routing.variant=random")
    assert_same_results(simulate(cfg, MPI.COMM_WORLD), simulate(cfg, None))
