"""Exports with link latencies (anynet weights, networkx-readable edge lists) and reading them back."""

import numpy as np
import pytest

from models.core.errors import ParameterError
from models.topologies.file import export_topology, from_file
from models.topology import build
from pdes import config as C
from tests.helpers import anynet_ring, run_pdes


# ----------------------------------------------------------------------------- exports
def test_anynet_round_trip_keeps_graph_and_latencies(tmp_path):
    """Anynet export with latencies reads back to the same graph and the same per-link latencies."""
    topo = build("slimfly", {"q": 5})
    lat = 1 + np.arange(topo.n_links) % 7
    path = str(tmp_path / "sf.anynet")
    export_topology(topo, "anynet", path, latency=lat)
    back = from_file(path)
    assert np.array_equal(back.links, topo.links) and np.array_equal(back.endpoints, topo.endpoints)
    assert np.array_equal(back.group, topo.group)
    assert np.array_equal(back.meta["link_latency"], lat)
    # both directions are written, as BookSim reads 'router R router S w' as the channel R -> S
    first = open(path).readline().split()
    assert first[:2] == ["router", "0"] and first[-3] == "router" and first[-1].isdigit()


def test_anynet_weights_one_side_default_and_conflict(tmp_path):
    """A weight from one side serves both directions; unweighted links get 1; conflicts are refused."""
    t = from_file(anynet_ring(tmp_path, weights=[4, 4, 4, 4, 4, 4]))
    assert t.meta["link_latency"].tolist() == [4] * 6
    p = tmp_path / "m.anynet"
    p.write_text("router 0 node 0 router 1 5 router 2\nrouter 1 node 1 router 2\nrouter 2 node 2\n")
    t = from_file(str(p))
    assert dict(zip(map(tuple, t.links.tolist()), t.meta["link_latency"].tolist())) == \
        {(0, 1): 5, (0, 2): 1, (1, 2): 1}
    p.write_text("router 0 router 1 5\nrouter 1 router 0 6\n")
    with pytest.raises(ParameterError, match="two different latency"):
        from_file(str(p))
    p.write_text("router 0 router 1 0\n")
    with pytest.raises(ParameterError, match="link weight"):
        from_file(str(p))


def test_engine_uses_file_latencies_unless_fixed(tmp_path):
    """A run takes a file's link latencies when router.link_latency = 0, the fixed value otherwise."""
    from pdes.build import link_latencies
    path = anynet_ring(tmp_path, weights=[1, 2, 3, 4, 5, 6])
    cfg = C.resolve({}, ["topology.name=file", f"topology.path={path}"])
    lat, _ = link_latencies(cfg, from_file(path))
    assert sorted(lat.tolist()) == [1, 2, 3, 4, 5, 6]
    cfg = C.resolve({}, ["topology.name=file", f"topology.path={path}", "router.link_latency=9"])
    assert link_latencies(cfg, from_file(path))[0].tolist() == [9] * 6


def test_edgelist_is_networkx_readable_and_reads_back(tmp_path):
    """--export edgelist: networkx reads links with latency/cable_m data; pdes reads it all back."""
    import networkx as nx
    r = run_pdes("topo", "slimfly", "--set", "topology.q=5", "--export", "edgelist", "sf.txt",
                 "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    from models.layout import build_layout
    topo = build("slimfly", {"q": 5})
    lay = build_layout(topo)
    g = nx.read_edgelist(tmp_path / "sf.txt", nodetype=int)
    assert g.number_of_edges() == topo.n_links
    for (a, b), la, cm in zip(topo.links.tolist(), lay.latency.tolist(), lay.cable_m.tolist()):
        assert g.edges[a, b]["latency"] == la and g.edges[a, b]["cable_m"] == pytest.approx(cm)
    text = (tmp_path / "sf.txt").read_text()
    assert "# routers 50" in text and "# router 0 endpoints 4 group 0" in text
    back = from_file(str(tmp_path / "sf.txt"))
    assert np.array_equal(back.links, topo.links) and np.array_equal(back.group, topo.group)
    assert np.array_equal(back.endpoints, topo.endpoints)
    assert np.array_equal(back.meta["link_latency"], lay.latency)
    assert np.allclose(back.meta["cable_m"], lay.cable_m)


def test_edgelist_data_errors(tmp_path):
    """Edge data must be a dict with integer latencies; all links or none carry a latency."""
    p = tmp_path / "e.txt"
    p.write_text("0 1 {'latency': 2}\n1 2\n")
    with pytest.raises(ParameterError, match="no latency but other links do"):
        from_file(str(p))
    p.write_text("0 1 {'latency': 0.5}\n")
    with pytest.raises(ParameterError, match="latency must be an integer"):
        from_file(str(p))
    p.write_text("0 1 {oops\n")
    with pytest.raises(ParameterError, match="not a dict literal"):
        from_file(str(p))
    p.write_text("# router 5 is broken\n0 1 {'weight': 3}\n")    # free comment, other keys
    t = from_file(str(p))
    assert t.n_routers == 2 and "link_latency" not in t.meta


def test_topo_reports_the_latencies_a_run_uses(tmp_path):
    """`pdes topo` reports the file's latencies (or router.link_latency) and says where they come from."""
    import json
    path = anynet_ring(tmp_path, weights=[2, 2, 2, 2, 2, 7])
    r = run_pdes("topo", "file", "--set", f"topology.path={path}", "--json")
    d = json.loads(r.stdout)
    assert d["link_latency_source"] == "file"
    assert (d["layout"]["latency_cycles"]["min"], d["layout"]["latency_cycles"]["max"]) == (2, 7)
    r = run_pdes("topo", "file", "--set", f"topology.path={path}", "--set", "router.link_latency=3")
    assert r.returncode == 0 and "3..3 (mean 3), from router.link_latency" in r.stdout
