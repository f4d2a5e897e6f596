"""A topology's worst case, analytic bisection and coordinates are registered with it."""
import numpy as np
import pytest

import models.traffic  # noqa: F401
from models.analysis import analytic_bisection
from models.core.registry import TOPOLOGIES, TRAFFIC, Hook, Param
from models.topology import build
from models.traffic import TrafficPlan
from models.traffic.worst_case import WORST


def _register_ring_probe():
    """Register a toy 'ring_probe' topology (a ring built by the torus generator) with all
    three hooks."""
    torus = TOPOLOGIES.get("torus")

    def ring(n=6):
        t = torus.func(dims=[n])
        t.name = "ring_probe"
        return t

    def worst(topo, seed):
        """every endpoint sends to the endpoint opposite on the ring"""
        E = topo.n_endpoints
        return TrafficPlan("table", ((np.arange(E) + E // 2) % E).astype(np.int32), "opposite")
    TOPOLOGIES.register("ring_probe", ring, params=[Param("n", int, 6, "routers")],
                        summary="probe", reference="test",
                        worst_case=Hook(worst, "opposite", "test"),
                        bisection=lambda topo: {"links": 2, "formula": "2", "exact": True},
                        coordinates=lambda topo: [topo.n_routers])


def test_registered_hooks_are_used():
    """worst_case, analytic_bisection and coordinate patterns read what the topology registered."""
    saved = dict(TOPOLOGIES._entries)
    try:
        _register_ring_probe()
        topo = build("ring_probe", {"n": 6})
        assert topo.name == "ring_probe"
        assert TRAFFIC.get("worst_case").func(topo, 1).description == "opposite"
        assert analytic_bisection(topo)["links"] == 2
        tor = TRAFFIC.get("tornado").func(topo, 1)
        assert tor.kind == "table" and np.all(tor.table >= 0)
    finally:
        TOPOLOGIES._entries.clear()
        TOPOLOGIES._entries.update(saved)


def test_unknown_registration_keyword_is_refused():
    """A misspelt hook name at registration raises instead of being ignored."""
    with pytest.raises(TypeError, match="unknown registration keyword 'worst_cases'"):
        TOPOLOGIES.register("never_probe", lambda: None, params=[], summary="", reference="",
                            worst_cases=None)
    assert "never_probe" not in TOPOLOGIES


def test_every_worst_case_is_a_registered_hook():
    """The worst-case table is a view of the topology registry, one pattern per family."""
    assert sorted(WORST) == sorted(e.name for e in TOPOLOGIES if "worst_case" in e.extra)
    assert {"slimfly", "dragonfly", "fattree", "galaxyfly", "hyperx", "mlfm", "oft"} <= set(WORST)
    for name in WORST:
        assert f"worst_{name}" in TRAFFIC
