"""Every family registers a size function: the routers, links and endpoints its parameters give,
equal to the built instance's, and the same refusals as its generator, without building."""
import pytest

import models.topologies  # noqa: F401  (registers every family)
from models.core.errors import ParameterError
from models.core.registry import TOPOLOGIES
from models.topology import build, size_of

SIZES = {   # family: parameter sets besides the registry's defaults ({})
    "bdf": [{"u": 5}, {"u": 7, "p": 2}],
    "delorme": [{"v": 3}, {"v": 4, "p": 2}],
    "dln": [{"routers": 20, "shortcuts": 15}, {"routers": 30, "shortcuts": 3, "p": 2}],
    "dragonfly": [{"h": 3, "g": 5}, {"a": 3, "p": 1}, {"h": 2, "a": 5, "g": 7}],
    "dragonfly_plus": [{"h": 3, "g": 4}, {"h": 2, "leaves": 3, "spines": 4, "p": 1}],
    "fattree": [{"k": 6, "levels": 2}, {"k": 12, "oversub": 2, "pods": 5},
                {"k": 8, "levels": 2, "oversub": 3, "pods": 3},
                {"k": 36, "levels": 2, "parallel": 3}, {"k": 12, "levels": 2, "parallel": 2, "pods": 5}],
    "galaxyfly": [{"n": 3, "q": 1, "a": 4}, {"n": 2, "q": 4, "a": 2, "h": 3}, {"n": 1, "q": 5, "a": 1}],
    "hypercube": [{"n": 1}, {"n": 4, "p": 3}],
    "hyperx": [{"sizes": [5]}, {"sizes": [2, 3, 1, 4], "p": 2}],
    "lhhc": [{"n": 3}, {"n": 6, "m": 2, "p": 2}, {"n": 5, "long_hops": [31, 7]}],
    "mlfm": [{"h": 1}, {"h": 3}],
    "oft": [{"k": 3}, {"k": 5}],
    "random_regular": [{"routers": 10, "degree": 7}, {"routers": 2, "degree": 1}],
    "skywalk": [{"z": 4, "c": 9, "d_i": 3, "d_o": 2}, {"z": 2, "c": 5, "d_i": 1, "d_o": 1, "p": 1}],
    "slimfly": [{"q": 4}, {"q": 7, "p_rounding": "floor"}, {"q": 3, "p": 0}],
    "torus": [{"dims": [2, 3, 1, 5]}, {"dims": [4, 2, 3], "wrap": False}],
}
UNSIZED = {"file"}
"""Families whose counts are known only once built (a file: once read)."""
CASES = [(name, params) for name in sorted(SIZES) for params in [{}] + SIZES[name]]


def test_every_family_registers_a_size_function_and_has_cases_here():
    """Each registered topology has a size hook, and every family but the file has parameter
    sets in this module."""
    names = set(TOPOLOGIES.names())
    assert {e.name for e in TOPOLOGIES if callable(e.extra.get("size"))} == names
    assert set(SIZES) | UNSIZED == names


def test_a_file_topology_is_sized_only_once_read(tmp_path):
    """The file family's size function gives None (nothing to know before reading the file)."""
    assert size_of("file", {"path": str(tmp_path / "absent.edges")}) is None


@pytest.mark.parametrize("name,params", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_size_equals_the_built_instance(name, params):
    """Routers, endpoints and links from the parameters equal the built network's (links at most
    the bound where the family says its count is a bound)."""
    size = size_of(name, params)
    topo = build(name, params)
    assert (size.routers, size.endpoints) == (topo.n_routers, topo.n_endpoints)
    if size.exact:
        assert size.links == topo.n_links
    else:
        assert topo.n_links <= size.links
    assert size.work_bytes >= 0


REFUSED = [   # (family, parameters, the key the generator's error names)
    ("slimfly", {"q": 6}, "topology.q"),
    ("slimfly", {"q": 10}, "topology.q"),
    ("bdf", {"u": 4}, "topology.u"),
    ("delorme", {"v": 6}, "topology.v"),
    ("dragonfly", {"h": 2, "a": 2, "g": 7}, "topology.g"),
    ("dragonfly", {"local_latency": 3}, "topology.local_latency"),
    ("fattree", {"k": 7}, "topology.k"),
    ("fattree", {"k": 8, "oversub": 2}, "topology.oversub"),
    ("fattree", {"k": 8, "pods": 9}, "topology.pods"),
    ("fattree", {"k": 8, "parallel": 2}, "topology.parallel"),
    ("fattree", {"k": 12, "levels": 2, "parallel": 2, "pods": 7}, "topology.pods"),
    ("dragonfly_plus", {"h": 2, "g": 6}, "topology.g"),
    ("galaxyfly", {"q": 6}, "topology.q"),
    ("galaxyfly", {"n": 5, "q": 7, "a": 4, "h": 1}, "topology.h"),
    ("oft", {"k": 7}, "topology.k"),
    ("dln", {"routers": 10, "shortcuts": 8}, "topology.shortcuts"),
    ("dln", {"routers": 9, "shortcuts": 3}, "topology.shortcuts"),
    ("random_regular", {"routers": 8, "degree": 8}, "topology.degree"),
    ("random_regular", {"routers": 9, "degree": 3}, "topology.degree"),
    ("skywalk", {"z": 4, "d_i": 4}, "topology.d_i"),
    ("skywalk", {"z": 4, "c": 4, "d_i": 3, "d_o": 9}, "topology.d_o"),
    ("hypercube", {"n": 27, "p": 1}, "topology.n"),
    ("lhhc", {"n": 4, "m": 12}, "topology.m"),
    ("lhhc", {"n": 4, "long_hops": [3, 8]}, "topology.long_hops"),
    ("torus", {"dims": [4096, 4096, 8]}, "topology.dims"),
]


@pytest.mark.parametrize("name,params,key", REFUSED, ids=[f"{n}-{k}" for n, _, k in REFUSED])
def test_size_refuses_what_the_generator_refuses(name, params, key):
    """The size function raises the generator's own error for the same parameters."""
    with pytest.raises(ParameterError, match=key) as by_size:
        size_of(name, params)
    with pytest.raises(ParameterError) as by_build:
        build(name, params)
    assert str(by_size.value) == str(by_build.value)
