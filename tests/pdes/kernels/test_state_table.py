"""The kernel state table (pdes/kernels/state_table.py) is what the parts allocate, what the
memory estimate counts and what the checkpoint lists name."""
import numpy as np
import pytest

from models.core import params as P
from pdes import checkpoint as K
from pdes import config as C
from pdes.build import make_parts, prepare
from pdes.kernels import cycle
from pdes.kernels import state_table as ST
from pdes.sizing import estimated_sizes, memory_estimate

SETS = {
    "slimfly": ["topology.q=5"],
    "shared-speedup": ["router.buffer_policy=shared", "router.num_vcs=4",
                       "router.internal_speedup=2"],
}


@pytest.fixture(scope="module", params=sorted(SETS))
def built(request):
    prep = prepare(C.resolve({}, SETS[request.param]))
    owner = np.zeros(prep.topo.n_routers, np.int32)
    return prep, make_parts(prep, owner, [0], 10)[0]


def test_every_array_has_its_row_shape_and_type(built):
    """Every allocated array has the length and dtype of its row; bound arrays the dtype."""
    _, part = built
    assert set(part.arrays) == set(ST.BY_NAME)
    for r in ST.ROWS:
        a = part.arrays[r.name]
        if r.dtype is not None:
            assert a.dtype == r.dtype, r.name
        if r.fill != ST.BOUND:
            assert a.shape == ST.shape(r, part.sizes), r.name


def test_groups_are_the_rows_in_order():
    for G in ST.GROUPS:
        assert G._fields == tuple(r.name for r in ST.ROWS if r.group == G.__name__)
    assert cycle.GROUPS == ST.GROUPS


def test_memory_estimate_counts_the_parts_state(built):
    """For one rank the estimated sizes are the part's (but the pool, which the estimate
    takes full, and the outboxes, which it leaves out) and the state it counts is the bytes
    of the part's arrays of the state part."""
    prep, part = built
    est = estimated_sizes(prep, 1.0)
    for k, v in part.sizes.items():
        if k not in ("n_rec", "nC", "focap", "cocap"):
            assert est[k] == pytest.approx(v), k
    state = sum(part.arrays[r.name].nbytes for r in ST.ROWS if r.memory == ST.STATE)
    assert memory_estimate(prep)["state"] == pytest.approx(state, abs=1)
    hist = sum(part.arrays[r.name].nbytes for r in ST.ROWS if r.memory == ST.HISTOGRAMS)
    assert memory_estimate(prep)["histograms"] == hist


def test_scratch_views_tile_the_scratch_array(built):
    _, part = built
    ncls = int(part.prm[P.PR_NCLS])
    *views, cls_of = cycle.scratch_views(part.arrays["scr"], part.nv, part.rp.speedup, ncls)
    assert len(views) == len(cycle.SCRATCH) == len(cycle.Scratch._fields) - 1
    assert sum(v.size for v in views) == part.arrays["scr"].size
    assert cls_of.tolist() == [v // (part.nv // ncls) for v in range(part.nv)]


def test_checkpoint_lists_come_from_the_table():
    """Each array is in at most one checkpoint list, every ring names its arrays, and every
    saved group is an index space of the file."""
    saved = [n for _, names in K.TABLES.values() for n in names]
    assert len(saved) == len(set(saved))
    assert not set(saved) & set(K.NOT_SAVED)
    for space, ids, ready, head, count in K.RINGS.values():
        assert count in saved and head in K.NOT_SAVED and ready not in saved
    assert {space for space, _ in K.TABLES.values()} == set(ST.SPACES.values())


def test_a_row_declares_an_array():
    """A new row is allocated, sized from the named sizes, by its fill."""
    row = ST.Row("Stats", "x", "(nE, NF)", np.int16, -1, ST.rebuilt("test"), ST.STATE)
    a = ST.allocate(row, {"nE": 3})
    assert a.shape == (3, ST.CONSTANTS["NF"]) and a.dtype == np.int16 and (a == -1).all()
    with pytest.raises(ValueError, match="declared"):
        ST.allocate(row._replace(fill=ST.BUILT), {"nE": 3}, np.zeros(2))
