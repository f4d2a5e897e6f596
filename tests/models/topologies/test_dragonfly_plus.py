"""Dragonfly+ (Shpiner et al. HiPINEB 2017; 004 Fig. 13): sizes against the paper's formulas,
structure, distances, the size hook, design rows, the static deadlock check and short runs."""
import numpy as np
import pytest

from models.core.errors import ParameterError
from models.design import design_table
from models.metrics import distance_matrix
from models.routing.cdg import check
from models.topology import build, size_of
from pdes.build import plan_routing
from pdes.engine import run_local
from tests.helpers import cfg_builder

cfg_of = cfg_builder("routing", "topology.name=dragonfly_plus", "router.link_latency=2")

CASES = [{"h": 1}, {"h": 2}, {"h": 3}, {"h": 4}, {"h": 3, "g": 4},
         {"h": 2, "leaves": 3, "spines": 4, "p": 1}, {"h": 1, "spines": 3, "g": 2}]


def resolved(params):
    """(h, leaves, spines, p, g) with the documented defaults."""
    h = params.get("h", 2)
    s = params.get("spines", h)
    return (h, params.get("leaves", h), s, params.get("p", s), params.get("g", s * h + 1))


@pytest.mark.parametrize("params", CASES, ids=str)
def test_counts_degrees_and_links_follow_the_construction(params):
    """g(l+s) routers, g*l*p endpoints, g*l*s local links (complete leaf-spine bipartite per
    group) and one global link per group pair between spines; leaf radix p+s, spine degree
    l + (global links it serves); the size hook gives the built counts."""
    h, l, s, p, g = resolved(params)
    t = build("dragonfly_plus", params)
    assert (t.n_routers, t.n_endpoints, t.n_links) == (g * (l + s), g * l * p,
                                                       g * l * s + g * (g - 1) // 2)
    assert tuple(size_of("dragonfly_plus", params)[:3]) == (t.n_routers, t.n_links, t.n_endpoints)
    leaf = t.meta["level"] == 0
    assert leaf.sum() == g * l and np.all(t.endpoints[leaf] == p) and np.all(t.endpoints[~leaf] == 0)
    assert np.all(t.degree[leaf] == s)
    u, v = t.links[:, 0], t.links[:, 1]
    local = t.link_class == t.link_class_names.index("local")
    assert np.all((t.group[u] == t.group[v]) == local)
    assert np.all(leaf[u[local]] != leaf[v[local]])              # local: leaf - spine
    assert not leaf[u[~local]].any() and not leaf[v[~local]].any()  # global: spine - spine
    pairs = {tuple(sorted(x)) for x in zip(t.group[u[~local]].tolist(), t.group[v[~local]].tolist())}
    assert len(pairs) == (~local).sum() == g * (g - 1) // 2     # one link per pair of groups
    glob_deg = np.bincount(np.r_[u[~local], v[~local]], minlength=t.n_routers)
    assert np.all(glob_deg <= h) and np.all(t.degree[~leaf] == l + glob_deg[~leaf])
    assert t.group_kind == "group" and t.n_groups == g
    assert np.all(np.bincount(t.group) == l + s)


@pytest.mark.parametrize("h", [1, 2, 3, 4, 6])
def test_balanced_size_and_distances(h):
    """Balanced, router radix k = 2h: N = (k^2/4)(k^2/4+1) endpoints, every router radix k;
    leaves of two groups are 3 apart at most (leaf-spine-spine-leaf), of one group 2;
    the router-graph diameter (spine to spine) is min(h+2, 5)."""
    k = 2 * h
    t = build("dragonfly_plus", {"h": h})
    assert t.n_endpoints == (k * k // 4) * (k * k // 4 + 1)
    assert set((t.degree + t.endpoints).tolist()) == {k}
    assert t.params["balanced"]
    d = distance_matrix(t).astype(np.int64)
    leaf = np.nonzero(t.meta["level"] == 0)[0]
    dl = d[np.ix_(leaf, leaf)]
    same = t.group[leaf][:, None] == t.group[leaf][None, :]
    assert dl[~same].max() == 3 and dl[same].max() == (2 if h > 1 else 0)
    assert d.max() == min(h + 2, 5)


def test_shpiner_and_004_fig13_points():
    """Radix 40, by the maximal formula (k^2/4)(k^2/4+1): 20 leaves and 20 spines per group,
    401 groups, 160,400 endpoints; radix 48 (004 Fig. 13): the largest Dragonfly+ has 332,352 endpoints on
    27,696 routers, about 4x the balanced Dragonfly's 83,232 (k^4/16 against k^4/64)."""
    s40 = size_of("dragonfly_plus", {"h": 20})
    assert (s40.routers, s40.endpoints) == (401 * 40, 160400)
    rows = design_table(48, families=["dragonfly", "dragonfly_plus"]).rows
    top = {r["family"]: r for r in rows}          # sorted by endpoints: the last of each
    plus, df = top["dragonfly_plus"], top["dragonfly"]
    assert (plus["params"], plus["endpoints"], plus["routers"], plus["radix"]) == \
        ("h=24 leaves=24 spines=24 p=24 g=577", 332352, 27696, 48)
    assert df["endpoints"] == 83232 and 3.9 < plus["endpoints"] / df["endpoints"] < 4.1
    assert all(r["radix"] == r["network_radix"] == 2 * r["p"] for r in rows
               if r["family"] == "dragonfly_plus")


@pytest.mark.parametrize("params,key", [({"h": 2, "g": 6}, "topology.g"),
                                        ({"h": 3, "spines": 1, "g": 5}, "topology.g"),
                                        ({"h": 0}, "topology.h"), ({"leaves": 0}, "topology.leaves")])
def test_bad_parameters_are_refused_with_their_key(params, key):
    """More groups than spines*h + 1 global ports allow, or a count below its bound, is a
    ParameterError naming the key, from the size hook as from the generator."""
    with pytest.raises(ParameterError, match=rf"^{key}: "):
        size_of("dragonfly_plus", params)
    with pytest.raises(ParameterError, match=rf"^{key}: "):
        build("dragonfly_plus", params)


def test_min_routing_is_deadlock_free_with_three_hop_classes():
    """The generic min routing on Dragonfly+ needs 3 hop classes (the leaf-to-leaf distance)
    and its channel dependency graph is then acyclic."""
    topo, dist, plan, nv = plan_routing(cfg_of("topology.h=2"))
    assert (plan.max_hops, plan.vcs_needed, nv) == (3, 3, 3)
    res = check(topo, dist, plan, nv)
    assert res["ok"], res["reason"]


def test_short_runs_deliver_and_the_worst_case_shares_one_global_link():
    """Uniform traffic at load 0.2 is delivered in 0, 2 or 3 router hops; under the worst
    case (group i -> i+1) every packet takes 3 hops and the l*p = 4 endpoints of a group
    share one global link, so accepted load stays near 1/4 at offered 0.6."""
    res = run_local(cfg_of("topology.h=2", "traffic.load=0.2"))
    assert not res["summary"]["saturated"]
    assert res["summary"]["accepted_load"] == pytest.approx(0.2, rel=0.05)
    assert set(np.nonzero(res["hist_hops"])[0].tolist()) <= {0, 2, 3}
    worst = run_local(cfg_of("topology.h=2", "traffic.pattern=worst_case", "traffic.load=0.6"))
    assert set(np.nonzero(worst["hist_hops"])[0].tolist()) == {3}
    assert worst["summary"]["accepted_load"] < 0.3
