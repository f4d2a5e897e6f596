"""Read-only tables shared by the ranks of a node (MPI-3 shared memory, pdes.shared)."""
import numpy as np
import pytest

from models.core.errors import ParameterError
from models.metrics import distance_matrix, is_symmetric, submatrix_max
from models.topology import build
from pdes.build import TOPOLOGY_SHARED
from pdes.shared import NodeShare


def test_block_helpers_match_numpy():
    """submatrix_max and is_symmetric give numpy's answers, also across several row blocks."""
    import models.metrics as M
    rng = np.random.default_rng(1)
    a = rng.integers(0, 200, size=(37, 37)).astype(np.uint8)
    idx = np.array([3, 5, 8, 30, 36])
    saved = M.BLOCK_BYTES
    try:
        M.BLOCK_BYTES = 40          # a few rows per block
        assert submatrix_max(a, idx) == a[np.ix_(idx, idx)].max()
        assert submatrix_max(a, np.arange(37)) == a.max()
        assert submatrix_max(a, np.zeros(0, np.int64)) == 0
        assert not is_symmetric(a)
        s = np.maximum(a, a.T)
        assert is_symmetric(s)
        s[36, 0] += 1
        assert not is_symmetric(s)
    finally:
        M.BLOCK_BYTES = saved


def test_one_rank_builds_private_arrays():
    """Without a communicator every NodeShare method builds a plain private array."""
    ns = NodeShare(None)
    a = ns.array((3, 4), np.int32, rows=lambda lo, hi: np.arange(lo * 4, hi * 4).reshape(-1, 4))
    assert np.array_equal(a, np.arange(12).reshape(3, 4))
    assert ns.build(lambda: (np.ones(3), None))[1] is None
    topo = ns.object(lambda: build("slimfly", {"q": 5}), touch=TOPOLOGY_SHARED)
    assert "port_peer" in vars(topo)
    assert ns.keep == [] and ns.node_bytes == 0


def _windows_hold(ns, arr):
    return ns.is_shared(arr) and any(np.shares_memory(arr, a) for a in ns.arrays)


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("shared", [True, False])
def test_node_share_gives_every_rank_the_same_arrays(shared, monkeypatch):
    """Topology, rows-built and rank-0-built arrays are equal to a serial build on every rank:
    one node copy in shared memory, or (fallback) a private copy per rank."""
    from mpi4py import MPI

    import pdes.shared
    monkeypatch.setattr(pdes.shared, "MIN_SHARED_BYTES", 1)     # share even this small network
    comm = MPI.COMM_WORLD
    ns = NodeShare(comm, shared=shared)
    assert ns.node_size >= 2          # the test ranks run on one machine
    ref = build("slimfly", {"q": 7})
    topo = ns.object(lambda: build("slimfly", {"q": 7}), touch=TOPOLOGY_SHARED)
    for name in ("links", "endpoints", "group", "link_class", *TOPOLOGY_SHARED):
        assert np.array_equal(getattr(topo, name), getattr(ref, name)), name
    assert topo.name == ref.name and topo.params == ref.params and topo.n_routers == ref.n_routers
    d = ns.array((ref.n_routers, ref.n_routers), np.uint8,
                 rows=lambda lo, hi: distance_matrix(ref)[lo:hi])
    assert np.array_equal(d, distance_matrix(ref))
    lat, none = ns.build(lambda: (np.arange(ref.n_links * 100, dtype=np.int64), None))
    assert none is None and np.array_equal(lat, np.arange(ref.n_links * 100))
    big = ns.adopt(np.full(100, comm.Get_rank(), dtype=np.int32))   # rank 0's values
    assert np.all(big == 0)                      # the node's rank 0's values, either way
    if shared:
        # one allocation on the node, made by its rank 0; every rank's arrays map it
        sizes = [w.Get_attr(MPI.WIN_SIZE) for w in ns.keep[1:]]
        assert all(s == 0 for s in sizes) or ns.node_rank == 0
        assert _windows_hold(ns, d) and _windows_hold(ns, lat) and _windows_hold(ns, topo.links)
        assert topo.port_neighbor is topo._csr[0]          # one array under two names
        assert ns.node_bytes >= d.nbytes + lat.nbytes
    else:
        assert ns.arrays == [] and not ns.is_shared(d) and ns.private_bytes >= d.nbytes
    comm.Barrier()
    ns.free()


@pytest.mark.mpi(min_size=2)
def test_a_build_error_is_raised_on_every_rank():
    """An error in a build run by the node's rank 0 only is raised on every rank (no hang)."""
    from mpi4py import MPI
    ns = NodeShare(MPI.COMM_WORLD)
    with pytest.raises(ParameterError, match="prime power"):
        ns.object(lambda: build("slimfly", {"q": 6}))
    with pytest.raises(ParameterError, match="nope"):
        ns.build(lambda: (_ for _ in ()).throw(ParameterError("layout: nope")))
    ns.free()


@pytest.mark.mpi(min_size=2)
def test_prepare_shares_the_read_only_tables_once_per_node(monkeypatch):
    """Under MPI, prepare() holds topology, layout, distances, routing and traffic tables and
    the kernel's global maps once per node; the same values as a serial prepare."""
    from mpi4py import MPI

    import pdes.shared
    monkeypatch.setattr(pdes.shared, "MIN_SHARED_BYTES", 1)     # share even this small network

    from pdes import config as C
    from pdes.build import prepare
    from pdes.sizing import memory_estimate
    comm = MPI.COMM_WORLD
    cfg = C.resolve({}, ["topology.q=7", "routing.algorithm=layered", "traffic.pattern=worst_case"])
    prep = prepare(cfg, comm)
    ref = prepare(cfg)
    sh = prep.share
    for arr in (prep.dist, prep.topo.links, prep.topo.port_peer, prep.link_latency,
                prep.kglobals["g_nbr"], prep.kglobals["g_chan"]):
        assert sh.is_shared(arr)
    assert np.array_equal(prep.dist, ref.dist)
    assert np.array_equal(prep.link_latency, ref.link_latency)
    for k, v in ref.plan.tables.items():
        if isinstance(v, np.ndarray):
            assert np.array_equal(prep.plan.tables[k], v), k
            assert sh.is_shared(prep.plan.tables[k]) == (v.nbytes > 0), k
    est = memory_estimate(prep, comm.Get_size(), sh.node_size)
    assert est["distances_shared"] and est["shared"] == sh.node_bytes
    assert est["per_node"] == sh.node_size * est["per_rank"] + sh.node_bytes
    comm.Barrier()
