"""Tests of the file topology (edge list, BookSim anynet, GraphML) and of the exporters."""
import networkx as nx
import numpy as np
import pytest

from models.core.errors import ParameterError
from models.topologies.file import export_topology, from_file, guess_format
from models.topology import build, from_edges

EXT = {"edgelist": ".txt", "anynet": ".anynet", "graphml": ".graphml"}


def irregular():
    """Irregular graph: uneven endpoints (some 0), groups 0..3, an isolated last router."""
    rng = np.random.default_rng(3)
    pairs = {(int(min(a, b)), int(max(a, b))) for a, b in rng.integers(0, 20, (60, 2)) if a != b}
    u, v = np.array(sorted(pairs)).T
    eps = rng.integers(0, 5, 21)
    return from_edges("irr", {"seed": 3}, 21, u, v, eps, np.arange(21) % 4)


def same(a, b):
    return (np.array_equal(a.links, b.links) and np.array_equal(a.endpoints, b.endpoints)
            and np.array_equal(a.group, b.group) and a.n_routers == b.n_routers)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# ----------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("fmt", sorted(EXT))
@pytest.mark.parametrize("make", [lambda: build("slimfly", {"q": 5}), irregular],
                         ids=["slimfly5", "irregular"])
def test_export_import_round_trip(tmp_path, fmt, make):
    """Export then import keeps the links, endpoints per router and groups."""
    topo = make()
    path = str(tmp_path / f"g{EXT[fmt]}")
    export_topology(topo, fmt, path)
    back = from_file(path)
    assert same(back, topo)
    assert np.array_equal(back.link_class, topo.group[topo.links[:, 0]] != topo.group[topo.links[:, 1]])


def test_round_trip_through_registry(tmp_path):
    """The registered name 'file' builds the same graph from typed config values."""
    topo = build("slimfly", {"q": 5})
    path = str(tmp_path / "sf.edges")
    export_topology(topo, "edgelist", path)
    back = build("file", {"path": path, "p": "2"})
    assert same(back, topo) and back.name == "file" and back.params["format"] == "edgelist"


def test_anynet_export_is_plain_booksim(tmp_path):
    """The anynet file has only router/node tokens; groups go to the .groups side file."""
    topo = irregular()
    path = str(tmp_path / "g.anynet")
    files = export_topology(topo, "anynet", path)
    assert files == [path, path + ".groups"]
    for line in open(path):
        tok = line.split()
        assert tok[0] == "router" and all(t in ("router", "node") for t in tok[::2])
    # node ids are the endpoint ids, router by router, 0..E-1
    nodes = [int(t) for line in open(path) for k, t in zip(line.split()[::2], line.split()[1::2])
             if k == "node"]
    assert nodes == list(range(topo.n_endpoints))


# ----------------------------------------------------------------------------- edge list
def test_edgelist_syntax(tmp_path):
    """Comments, extra columns, commas and links listed from both sides are accepted."""
    path = write(tmp_path, "a.txt", "# header\n0 1 {}\n1 0\n1,2, 7.5\n\n2 3  # tail comment\n")
    t = from_file(path, p=3)
    assert t.links.tolist() == [[0, 1], [1, 2], [2, 3]]
    assert t.endpoints.tolist() == [3, 3, 3, 3]
    assert t.group.tolist() == [0, 1, 2, 3] and t.group_kind == "router"


def test_edgelist_router_table(tmp_path):
    """Router lines set endpoints and groups; routers N adds isolated routers; groups compact."""
    text = ("routers 5\nrouter 0 endpoints 2 group 10\nrouter 1 group 10 endpoints 0\n"
            "router 2 group 30\nrouter 3 group 20\nrouter 4 group 20\n0 1\n1 2\n")
    t = from_file(write(tmp_path, "b.edges", text), p=7)
    assert t.n_routers == 5
    assert t.endpoints.tolist() == [2, 0, 7, 7, 7]
    assert t.group.tolist() == [0, 0, 2, 1, 1] and t.group_kind == "group"


@pytest.mark.parametrize("text,line,msg", [
    ("0 1\n1 x\n", 2, "router id must be an integer"),
    ("0 1\n5\n", 2, "expected 'u v'"),
    ("0 1\n2 2\n", 2, "self-loop"),
    ("0 1\n-1 2\n", 2, ">= 0"),
    ("router 0 group 1\nrouter 0 group 2\n0 1\n", 2, "described twice"),
    ("router 0 colour 1\n0 1\n", 1, "unknown router key"),
    ("router 0 group\n0 1\n", 1, "key/value pairs"),
    ("router 0 group 1\n0 1\n", None, "router 1 has no group"),
    ("routers 2\n0 5\n", None, "routers 2"),
])
def test_edgelist_errors_name_path_and_line(tmp_path, text, line, msg):
    """A malformed edge list raises ParameterError naming topology.path and the line."""
    path = write(tmp_path, "bad.txt", text)
    with pytest.raises(ParameterError) as exc:
        from_file(path)
    text = str(exc.value)
    assert text.startswith(f"topology.path: {path}:") and msg in text
    if line is not None:
        assert f"line {line}:" in text


# ----------------------------------------------------------------------------- anynet
def test_anynet_booksim_example(tmp_path):
    """BookSim anynet lines: node and router bodies, optional link weights, node-headed lines."""
    text = ("router 0 node 0 node 1 router 1 10 router 2\n"
            "router 1 node 2 router 0 router 3 5\n"
            "node 3 router 2\n"
            "router 2 router 0 router 3\n"
            "router 3 node 4 node 5 node 6\n")
    t = from_file(write(tmp_path, "net.anynet", text))
    assert t.links.tolist() == [[0, 1], [0, 2], [1, 3], [2, 3]]
    assert t.endpoints.tolist() == [2, 1, 1, 3]
    assert t.group.tolist() == [0, 1, 2, 3]


def test_anynet_without_nodes_uses_p(tmp_path):
    """An anynet file without nodes gives every router p endpoints."""
    t = from_file(write(tmp_path, "ring", "router 0 router 1\nrouter 1 router 2\nrouter 2 router 0\n"),
                  format="anynet", p=4)
    assert t.endpoints.tolist() == [4, 4, 4] and t.n_links == 3


@pytest.mark.parametrize("text,line,msg", [
    ("router 0 router 1\nswitch 1 router 0\n", 2, "must start with"),
    ("router 0 node 0\nrouter 1 node 0 router 0\n", 2, "node 0 is attached to routers 0 and 1"),
    ("node 0 node 1\n", 1, "cannot connect node"),
    ("router 0 router\n", 1, "without an id"),
    ("router 0 router 1 x\n", 1, "link weight"),
    ("router 0 router 0\n", 1, "self-loop"),
    ("router 0 router 1 5 7\n", 1, "expected 'router <id>'"),
])
def test_anynet_errors(tmp_path, text, line, msg):
    """Malformed anynet lines are reported with the path and line number."""
    path = write(tmp_path, "bad.anynet", text)
    with pytest.raises(ParameterError, match="topology.path") as exc:
        from_file(path)
    assert f"line {line}:" in str(exc.value) and msg in str(exc.value)


def test_anynet_incomplete_groups_file(tmp_path):
    """A .groups side file must give every router a group."""
    path = write(tmp_path, "g.anynet", "router 0 router 1\nrouter 1 router 2\n")
    write(tmp_path, "g.anynet.groups", "router 0 group 0\nrouter 1 group 0\n")
    with pytest.raises(ParameterError, match=r"g\.anynet\.groups.*router 2 has no"):
        from_file(path)


# ----------------------------------------------------------------------------- graphml
def test_graphml_from_networkx(tmp_path):
    """GraphML written by networkx with string labels and partial attributes is read."""
    g = nx.Graph()
    g.add_node("a", endpoints=3)
    g.add_node("b")
    g.add_node("c", endpoints=0)
    g.add_edges_from([("a", "b"), ("b", "c"), ("c", "a")])
    path = str(tmp_path / "x.graphml")
    nx.write_graphml(g, path)
    t = from_file(path, p=2)
    assert t.n_routers == 3 and t.n_links == 3
    assert t.endpoints.tolist() == [3, 2, 0]
    assert t.meta["labels"] == ["a", "b", "c"]


def test_graphml_directed_multi_edges_collapse(tmp_path):
    """Directed and parallel GraphML edges become one undirected link."""
    g = nx.MultiDiGraph()
    g.add_edges_from([(0, 1), (1, 0), (0, 1), (1, 2)])
    path = str(tmp_path / "m.graphml")
    nx.write_graphml(g, path)
    assert from_file(path).links.tolist() == [[0, 1], [1, 2]]


def test_graphml_broken_xml(tmp_path):
    """Broken XML is reported with the path and the line of the parse error."""
    path = write(tmp_path, "bad.graphml", "<graphml>\n<graph>\n<node id='0'>\n</graph>\n")
    with pytest.raises(ParameterError, match=r"topology.path: .*bad\.graphml: line 4:"):
        from_file(path)


def test_graphml_bad_attribute(tmp_path):
    """A negative endpoints attribute names the node."""
    g = nx.Graph()
    g.add_node(0, endpoints=-1)
    g.add_edge(0, 1)
    path = str(tmp_path / "n.graphml")
    nx.write_graphml(g, path)
    with pytest.raises(ParameterError, match="node '0': endpoints"):
        from_file(path)


# ----------------------------------------------------------------------------- misc
@pytest.mark.parametrize("name,fmt", [("a.txt", "edgelist"), ("a.EDGES", "edgelist"),
                                      ("net.anynet", "anynet"), ("g.graphml", "graphml"),
                                      ("g.xml", "graphml")])
def test_guess_format(name, fmt):
    """The format follows the file extension."""
    assert guess_format(name) == fmt


def test_unknown_extension_needs_format(tmp_path):
    """Without a known extension the format must be given."""
    with pytest.raises(ParameterError, match="topology.format"):
        from_file(write(tmp_path, "net.dat", "0 1\n"))
    assert from_file(str(tmp_path / "net.dat"), format="edgelist").n_links == 1


@pytest.mark.parametrize("fmt", sorted(EXT))
def test_missing_file(tmp_path, fmt):
    """A missing file is reported as topology.path: ... file not found."""
    path = str(tmp_path / f"none{EXT[fmt]}")
    with pytest.raises(ParameterError, match=r"topology\.path: .*file not found"):
        from_file(path)


def test_empty_file(tmp_path):
    """A file without any router is refused."""
    with pytest.raises(ParameterError, match="no router"):
        from_file(write(tmp_path, "e.txt", "# nothing\n"))


def test_negative_p_refused(tmp_path):
    """p must be a non-negative integer."""
    with pytest.raises(ParameterError, match="topology.p"):
        from_file(write(tmp_path, "a.txt", "0 1\n"), p=-1)


def test_export_unknown_format_and_unwritable(tmp_path):
    """Export refuses unknown formats and unwritable paths with a ParameterError."""
    t = irregular()
    with pytest.raises(ParameterError, match="unknown format"):
        export_topology(t, "dot", str(tmp_path / "x.dot"))
    with pytest.raises(ParameterError, match="cannot write"):
        export_topology(t, "edgelist", str(tmp_path / "missing_dir" / "x.txt"))
