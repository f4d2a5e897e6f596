"""Tests of the Topology container and the registry/config plumbing."""
import numpy as np
import pytest

from models.core.errors import ParameterError
from models.core.registry import Param
from models.topology import from_edges


def ring(n=5):
    u = np.arange(n)
    return from_edges("ring", {}, n, u, (u + 1) % n, 2, np.arange(n) // 2)


def test_links_normalised_and_sorted():
    """Links are stored once with u < v, sorted lexicographically."""
    t = ring()
    assert t.links.tolist() == [[0, 1], [0, 4], [1, 2], [2, 3], [3, 4]]


def test_port_csr_is_consistent():
    """Each port's peer port points back, and channels pair up as 2l / 2l+1."""
    t = ring(7)
    R = t.n_routers
    owner = np.repeat(np.arange(R), t.degree)
    peer = t.port_peer
    assert np.array_equal(peer[peer], np.arange(2 * t.n_links))
    assert np.array_equal(owner[peer], t.port_neighbor)
    assert np.array_equal(t.port_link, t.port_link[peer])
    assert np.array_equal(t.port_out_channel ^ 1, t.port_out_channel[peer])
    # channel 2l leaves links[l,0]
    ch = t.port_out_channel
    l = ch // 2
    src = np.where(ch % 2 == 0, t.links[l, 0], t.links[l, 1])
    assert np.array_equal(src, owner)
    # neighbours in increasing order per router
    for r in range(R):
        nb = t.neighbors(r)
        assert np.all(np.diff(nb) > 0)


def test_default_link_class_from_groups():
    """Without explicit classes a link is local inside a group, global between groups."""
    t = ring(6)
    same = t.group[t.links[:, 0]] == t.group[t.links[:, 1]]
    assert np.array_equal(t.link_class == 0, same)


@pytest.mark.parametrize("u,v,msg", [([0, 1], [1, 0], "duplicate"), ([0], [0], "self-loop"),
                                     ([0], [9], "outside")])
def test_bad_edges_rejected(u, v, msg):
    """Malformed edge lists raise a ParameterError naming the problem."""
    with pytest.raises(ParameterError, match=msg):
        from_edges("x", {}, 3, u, v, 1, 0)


@pytest.mark.parametrize("kind,text,value", [(int, "13", 13), (int, 4.0, 4), (float, "0.5", 0.5),
                                              (bool, "true", True), ("int_list", "4x4x2", [4, 4, 2]),
                                              ("int_list", [3, 5], [3, 5])])
def test_param_coerce(kind, text, value):
    """Parameters coerce text and TOML values to their declared type."""
    assert Param("k", kind, None, "").coerce(text, "s.k") == value


@pytest.mark.parametrize("kind,text", [(int, "5.5"), (int, 5.5), (int, True), (float, "abc"), (bool, "maybe")])
def test_param_coerce_rejects(kind, text):
    """A wrong type names the key."""
    with pytest.raises(ParameterError, match="s.k: expected"):
        Param("k", kind, None, "").coerce(text, "s.k")
