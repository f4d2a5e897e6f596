"""partition.assign: a pure function giving contiguous, balanced, complete owner maps."""
import numpy as np
import pytest

import partition as PT
from models.core.errors import ParameterError
from models.layout import build_layout
from models.topology import build

TOPOS = [("slimfly", {"q": 5}), ("dragonfly", {"h": 2}), ("galaxyfly", {"n": 3, "q": 5, "a": 2, "p": 2}),
         ("fattree", {"k": 4, "levels": 3}), ("hyperx", {"sizes": [4, 4]})]


@pytest.mark.parametrize("name,params", TOPOS)
@pytest.mark.parametrize("strategy", ["racks", "block"])
def test_every_rank_count_1_to_16(name, params, strategy):
    """Every rank 0..n-1 owns at least one router, racks stay whole while ranks <= racks."""
    topo = build(name, params)
    lat = build_layout(topo).latency
    for n in range(1, 17):
        if n > topo.n_routers:
            break
        owner = PT.assign(topo, lat, n, strategy)
        assert owner.shape == (topo.n_routers,) and owner.dtype == np.int32
        assert np.array_equal(np.unique(owner), np.arange(n))
        assert np.array_equal(owner, PT.assign(topo, lat, n, strategy))  # pure function
        rep = PT.report(topo, owner, lat)
        assert rep["routers_per_rank"].sum() == topo.n_routers
        assert rep["endpoints_per_rank"].sum() == topo.n_endpoints
        if strategy == "racks" and n <= topo.n_groups:
            whole = PT.assign(topo, lat, n, strategy, max_imbalance=float("inf"))
            rep_whole = PT.report(topo, whole, lat)
            assert rep_whole["groups_split"] == 0                 # racks stay whole ...
            if rep_whole["imbalance"] <= 1.05:
                assert np.array_equal(owner, whole)               # ... by default when balanced
            else:
                assert rep["imbalance"] <= rep_whole["imbalance"]  # otherwise split, no worse
        if n > 1 and rep["cut_links"]:
            cut = owner[topo.links[:, 0]] != owner[topo.links[:, 1]]
            assert rep["lookahead"] == lat[cut].min()


def test_racks_keep_long_cables_cut():
    """Rack partitioning of SF q=5 cuts only inter-rack links, so lookahead > intra-rack latency."""
    topo = build("slimfly", {"q": 5})
    lay = build_layout(topo)
    owner = PT.assign(topo, lay.latency, 2, "racks", max_imbalance=1.5)
    rep = PT.report(topo, owner, lay.latency)
    assert rep["lookahead"] > lay.latency[lay.intra_rack].max()


def test_racks_split_for_balance():
    """13 SF q=13 racks on 2 ranks (7:6) are split to balance; the report says so."""
    topo = build("slimfly", {"q": 13, "p": 9})
    lat = build_layout(topo).latency
    whole = PT.report(topo, PT.assign(topo, lat, 2, "racks", max_imbalance=1.1), lat)
    assert whole["groups_split"] == 0 and whole["imbalance"] > 1.07
    rep = PT.report(topo, PT.assign(topo, lat, 2, "racks"), lat)
    assert rep["groups_split"] == 1 and rep["imbalance"] < 1.01
    assert rep["lookahead"] < whole["lookahead"]


def test_metis_strategy():
    """The metis strategy returns a complete owner map."""
    topo = build("slimfly", {"q": 7})
    owner = PT.assign(topo, build_layout(topo).latency, 4, "metis")
    assert np.array_equal(np.unique(owner), np.arange(4))


def test_too_many_ranks():
    """More ranks than routers is refused with a message naming run.partition."""
    with pytest.raises(ParameterError, match="run.partition"):
        PT.assign(build("slimfly", {"q": 3}), None, 100)
