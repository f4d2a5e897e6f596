"""The stages' prefetch pipelines (``prm[PR_PF]``): on in the cycles that start with enough
flits in the part for the state a cycle touches to outgrow the caches, and never a change of
result."""
import numpy as np
import pytest

from pdes.build import make_parts, prepare
from pdes.engine import run_local
from pdes.kernels import cycle
from models.core import params as prm_slots
from tests.helpers import assert_same_results, cfg_builder

cfg_of = cfg_builder("prefetch")


def pipelines(monkeypatch, on: bool) -> None:
    monkeypatch.setattr(cycle, "PF_MIN_FLITS", 0 if on else 1 << 62)


@pytest.mark.parametrize("sets", [
    ["traffic.load=0.5"],
    ["traffic.load=0.9", "router.packet_size=3", "router.link_latency=2"],     # saturated
    ["router.buffer_flits=0", "router.vc_buffer_flits=0", "traffic.load=0.6",  # deep rings
     "router.packet_size=2"],
    ["router.buffer_policy=shared", "router.buffer_flits=24", "router.num_vcs=4",
     "traffic.load=0.7", "router.packet_size=2"],
    ["topology.name=dragonfly", "topology.h=2", "routing.algorithm=dragonfly_ugal",
     "router.num_vcs=4", "traffic.pattern=randperm", "traffic.load=0.6"],
    ["topology.name=galaxyfly", "topology.n=3", "topology.q=5", "topology.a=2", "topology.p=2",
     "traffic.load=0.6", "router.num_vcs=6"],
    ["traffic.pattern=alltoall", "traffic.message_packets=2"],
    # packets dropped at a failure inside the run (heads with nowhere to go are discarded)
    ["routing.algorithm=ugal_l", "faults.link_fraction=0.1", "faults.at_cycle=300",
     "faults.reroute_cycles=100", "traffic.load=0.6", "router.packet_size=2"],
])
def test_pipelines_change_no_result(monkeypatch, sets):
    """The same run with the pipelines on and off, whole and split into 3 parts, is
    bit-identical."""
    cfg = cfg_of(*sets)
    prep = prepare(cfg)
    R = prep.topo.n_routers
    out = {}
    for on in (False, True):
        pipelines(monkeypatch, on)
        (part,) = make_parts(prep, np.zeros(R, np.int32), [0], 1)
        assert part.prm[prm_slots.PR_PFMIN] == (0 if on else 1 << 62)
        out[on] = [run_local(cfg, prep=prep), run_local(cfg, owner=np.arange(R) % 3, prep=prep)]
    assert out[True][0]["summary"]["measured_packets"] > 0
    if cfg["faults"]["at_cycle"] > 0:           # the case is about drops: there are some
        assert out[True][0]["counters"]["dropped_packets"] > 0
    for a, b in zip(out[False], out[True]):
        assert_same_results(a, b)
    assert_same_results(out[True][0], out[True][1])


def test_pipelines_follow_the_flits_in_the_part(monkeypatch):
    """A cycle runs the pipelines when it starts with at least PF_MIN_FLITS flits in the part
    (records in use), and not below, inside a window too; BookSim's allocation, which has no
    pipelines in its router stage, never."""
    monkeypatch.setattr(cycle, "PF_MIN_FLITS", 60)
    prep = prepare(cfg_of("traffic.load=0.5"))
    R = prep.topo.n_routers
    (part,) = make_parts(prep, np.zeros(R, np.int32), [0], 1)
    assert part.prm[prm_slots.PR_PF] == 0                  # empty
    a, seen = part.arrays, set()
    for t in range(400):
        live = int(a["rec_next"][0] - a["rec_top"][0])
        assert part.advance(t, t + 1) == 0
        a = part.arrays                                    # the pool may have grown
        seen.add(int(live >= 60))
        assert part.prm[prm_slots.PR_PF] == int(live >= 60), t
    assert seen == {0, 1}
    (part,) = make_parts(prep, np.zeros(R, np.int32), [0], 1)
    assert part.advance(0, 300) == 0                       # one window from an empty part
    assert part.prm[prm_slots.PR_PF] == 1
    monkeypatch.setattr(cycle, "PF_MIN_FLITS", 0)
    prep = prepare(cfg_of("traffic.load=0.5", "router.allocation=booksim"))
    (part,) = make_parts(prep, np.zeros(R, np.int32), [0], 1)
    for t in range(50):
        assert part.advance(t, t + 1) == 0
        assert part.prm[prm_slots.PR_PF] == 0


def test_pipeline_geometry_is_checked():
    """A pipeline step or depth that its ring of lists cannot hold is refused (a prefetch of
    the wrong lines would change no result, so no simulation test could notice)."""
    from pdes.kernels import prefetch as PF
    PF.check_geometry()                      # the shipped constants pass
    with pytest.raises(ValueError, match="router-stage ring"):
        PF.check_geometry(routers=2)         # lists of k+2 and k+6 would share a slot of 4
    with pytest.raises(ValueError, match="output-stage ring"):
        PF.check_geometry(out=9)
    with pytest.raises(ValueError, match="powers of two"):
        PF.check_geometry(ring=6)
