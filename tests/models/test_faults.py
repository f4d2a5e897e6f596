"""Fault sets and degraded networks (models.faults): which elements fail, what remains."""
import numpy as np
import pytest

from models import faults as F
from models.core.errors import ParameterError
from models.topology import build
from pdes import config as C


def fsec(*sets):
    return C.resolve({}, [f"faults.{s}" for s in sets])["faults"]


@pytest.fixture(scope="module")
def sf():
    return build("slimfly", {"q": 5})


def test_nothing_configured_is_no_fault():
    """The default [faults] section fails nothing."""
    assert not F.configured(fsec())
    assert F.configured(fsec("link_count=1"))


def test_drawn_links_are_a_pure_function_and_nested(sf):
    """The drawn set depends only on the seed; a larger fraction fails a superset; the count
    is round(fraction x candidates)."""
    a = F.select(sf, fsec("link_fraction=0.05"))
    b = F.select(sf, fsec("link_fraction=0.05"))
    c = F.select(sf, fsec("link_fraction=0.2"))
    d = F.select(sf, fsec("link_fraction=0.05", "seed=7"))
    assert np.array_equal(a.links, b.links)
    assert a.links.size == round(0.05 * sf.n_links) and c.links.size == round(0.2 * sf.n_links)
    assert set(a.links) <= set(c.links)
    assert not np.array_equal(a.links, d.links)


def test_link_classes_restrict_the_draw():
    """link_classes draws only from the named classes; an unknown class is refused."""
    df = build("dragonfly", {"h": 2})
    fs = F.select(df, fsec("link_count=5", "link_classes=global"))
    assert fs.links.size == 5 and np.all(df.link_class[fs.links] == 1)
    with pytest.raises(ParameterError, match="faults.link_classes: 'optical' is not a link class"):
        F.select(df, fsec("link_count=1", "link_classes=optical"))


def test_explicit_links_routers_and_racks(sf):
    """Explicit pairs fail those links; a failed router or rack takes all its links and its
    endpoints become inactive."""
    u, v = (int(x) for x in sf.links[10])
    fs = F.select(sf, fsec(f'links="{v}-{u}"'))
    assert fs.links.tolist() == [10] and fs.inactive_endpoints == 0
    fs = F.select(sf, fsec("routers=[4]"))
    assert fs.routers.tolist() == [4]
    assert set(fs.links) == set(np.nonzero((sf.links == 4).any(axis=1))[0])
    assert fs.inactive_endpoints == sf.endpoints[4]
    fs = F.select(sf, fsec("racks=[2]"))
    assert set(fs.routers) == set(np.nonzero(sf.group == 2)[0])
    topo = F.degrade(sf, fs)
    assert topo.n_links == sf.n_links - fs.links.size
    assert not topo.up[fs.routers].any() and topo.up.sum() == sf.n_routers - fs.routers.size
    assert np.all(topo.degree[fs.routers] == 0)
    assert np.array_equal(topo.endpoints, sf.endpoints) and np.array_equal(topo.group, sf.group)


@pytest.mark.parametrize("sets, message", [
    (['links="0-0x"'], "faults.links: '0-0x' is not a router pair"),
    (['links="0-999"'], "faults.links: 0-999 names a router outside"),
    (["link_fraction=0.1", "link_count=3"], "give link_fraction or link_count, not both"),
    (["link_count=100000"], "faults.link_count: 100000 links asked to fail"),
    (["routers=[50]"], "faults.routers: router ids are 0..49"),
    (["racks=[99]"], "faults.racks: the slimfly network has"),
    (["router_fraction=1.0"], "faults: no two working endpoints remain connected"),
])
def test_bad_fault_sets_are_refused(sf, sets, message):
    """Malformed or impossible fault sets raise one ParameterError naming the key."""
    with pytest.raises(ParameterError, match=message):
        F.select(sf, fsec(*sets))


def test_a_pair_that_is_not_a_link_is_refused(sf):
    """faults.links names existing links only."""
    a = int(np.nonzero(~np.isin(np.arange(50), sf.neighbors(0)))[0][1])
    with pytest.raises(ParameterError, match=f"faults.links: 0-{a} is not a link"):
        F.select(sf, fsec(f'links="0-{a}"'))


def test_a_cut_off_router_is_excluded_or_refused(sf):
    """Failing every link of a router cuts it off: its endpoints become inactive
    (disconnected = exclude) or the fault set is refused (error)."""
    pairs = ", ".join(f"0-{int(n)}" for n in sf.neighbors(0))
    fs = F.select(sf, fsec(f'links="{pairs}"'))
    assert fs.cut_off.tolist() == [0] and fs.routers.size == 0
    assert fs.inactive_endpoints == sf.endpoints[0]
    assert not F.degrade(sf, fs).up[0]
    with pytest.raises(ParameterError, match="faults: the fault set cuts 4 endpoints on 1 routers"):
        F.select(sf, fsec(f'links="{pairs}"', "disconnected=error"))


def test_restricted_traffic_never_names_an_inactive_endpoint():
    """Every kind of traffic plan loses its inactive sources and destinations."""
    import models.traffic  # noqa: F401
    from models.core.registry import TRAFFIC
    topo = build("slimfly", {"q": 5})
    ok = np.ones(topo.n_endpoints, dtype=bool)
    ok[[0, 1, 2, 3, 17, 150]] = False
    for pattern, extra in [("uniform", {}), ("randperm", {}), ("shift", {"s": 4}),
                           ("hotspot", {}), ("alltoall", {})]:
        plan = TRAFFIC.get(pattern).func(topo, 1, **extra)
        out, _ = F.restrict_traffic(plan, ok)
        act = out.active.astype(bool)
        assert not act[~ok].any(), pattern
        if out.kind == "mix":
            assert ok[out.set_a].all() and ok[out.set_b].all()
        elif out.kind in ("table", "two_choice"):
            dst = out.table[act]
            assert ok[dst].all(), pattern
            if out.kind == "two_choice":
                assert ok[out.table2[act]].all()
        elif out.kind == "messages":
            owner = np.repeat(np.arange(ok.size), np.diff(out.msg_off))
            assert ok[owner].all() and ok[out.msg_dst].all()
            assert out.msg_dst.size == plan.msg_dst.size - _


def test_faults_section_survives_a_round_trip():
    """The resolved [faults] section (empty lists included) reads back from its TOML and JSON,
    as a result file's config and a checkpoint's are read back."""
    import json
    import tomllib
    cfg = C.resolve({}, ["faults.link_fraction=0.1"])
    assert C.resolve(tomllib.loads(C.to_toml(cfg)))["faults"] == cfg["faults"]
    assert C.resolve(json.loads(json.dumps(cfg)))["faults"] == cfg["faults"]


def test_min_on_a_degraded_dragonfly_takes_graph_routes():
    """`min` (vc_scheme auto) takes the Dragonfly's own l-g-l routes on the intact network and
    graph-minimal hop-index routes on a degraded one, whose structure they no longer fit."""
    from pdes.build import plan_routing
    base = ["topology.name=dragonfly", "topology.h=2"]
    assert plan_routing(C.resolve({}, base))[2].scheme == "dragonfly"
    assert plan_routing(C.resolve({}, [*base, "faults.link_count=3"]))[2].scheme == "hop"
