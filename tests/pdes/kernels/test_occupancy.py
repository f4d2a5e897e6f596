"""The input-port occupancy bitmap (``ip_occ``): the allocators visit only the ports it
marks, so it must mark exactly the ports that hold a flit, whatever changed the buffers."""
import numpy as np
import pytest

from models.core import params as P
from pdes.build import prepare
from tests.helpers import cfg_builder, one_part

cfg_of = cfg_builder("engine")


def marked(part) -> np.ndarray:
    """Per input port of the part: its bit in the bitmap."""
    words = part.arrays["ip_occ"].view(np.uint64)
    port = np.arange(part.nP, dtype=np.int64)
    return ((words[port >> 6] >> (port & 63).astype(np.uint64)) & np.uint64(1)) != 0


def holding(part) -> np.ndarray:
    """Per input port of the part: whether one of its VCs holds a flit."""
    return (part.arrays["ib_cnt"].reshape(part.nP, part.nv) != 0).any(axis=1)


@pytest.mark.parametrize("sets", [
    ["traffic.load=0.6"],
    ["traffic.load=0.9", "router.packet_size=3", "router.link_latency=2"],
    ["router.allocation=booksim", "traffic.load=0.6", "router.packet_size=2"],
    ["router.buffer_policy=shared", "router.buffer_flits=24", "router.num_vcs=4",
     "traffic.load=0.7", "router.packet_size=2"],
])
def test_the_bitmap_marks_the_ports_with_flits(sets):
    """After every window of a run the marked ports are the ports holding a flit (and some
    were, some were not)."""
    prep = prepare(cfg_of(*sets))
    part = one_part(prep)
    busy = idle = 0
    for t in range(0, 600, 37):
        part.advance(t, t + 37)
        assert np.array_equal(marked(part), holding(part)), t
        assert part.occupancy_ok()
        busy += int(holding(part).sum())
        idle += int((~holding(part)).sum())
    assert busy > 0 and idle > 0


def test_a_stale_bitmap_is_noticed_and_built_again():
    """A bitmap that differs from the buffers fails ``occupancy_ok`` (the end-of-run check
    that raises an engine bug); with ``PR_OCC = 0`` (what Python code that changes the
    buffers sets) the next kernel call builds it from ``ib_cnt``."""
    prep = prepare(cfg_of("traffic.load=0.6"))
    part = one_part(prep)
    part.advance(0, 200)
    want = part.arrays["ip_occ"].copy()
    assert want.any() and part.prm[P.PR_OCC] == 1
    part.arrays["ip_occ"][:] = 0
    assert not part.occupancy_ok()
    part.prm[P.PR_OCC] = 0
    assert part.occupancy_ok()                  # due to be built
    part.advance(200, 200)                      # no cycle: only the build
    assert part.prm[P.PR_OCC] == 1
    assert np.array_equal(part.arrays["ip_occ"], want)
