"""partition.assign: a pure function giving contiguous, balanced, complete owner maps."""
import numpy as np
import pytest

import partition as PT
from models.errors import ParameterError
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
            assert rep["groups_split"] == 0
        if n > 1 and rep["cut_links"]:
            cut = owner[topo.links[:, 0]] != owner[topo.links[:, 1]]
            assert rep["lookahead"] == lat[cut].min()


def test_racks_keep_long_cables_cut():
    """Rack partitioning of SF q=5 cuts only inter-rack links, so lookahead > intra-rack latency."""
    topo = build("slimfly", {"q": 5})
    lay = build_layout(topo)
    rep = PT.report(topo, PT.assign(topo, lay.latency, 2, "racks"), lay.latency)
    assert rep["lookahead"] > lay.latency[lay.intra_rack].max()


def test_metis_strategy():
    """The metis strategy returns a complete owner map."""
    topo = build("slimfly", {"q": 7})
    owner = PT.assign(topo, build_layout(topo).latency, 4, "metis")
    assert np.array_equal(np.unique(owner), np.arange(4))


def test_too_many_ranks():
    """More ranks than routers is refused with a message naming run.partition."""
    with pytest.raises(ParameterError, match="run.partition"):
        PT.assign(build("slimfly", {"q": 3}), None, 100)
