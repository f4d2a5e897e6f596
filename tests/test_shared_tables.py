"""Read-only tables shared by the ranks of a node (MPI-3 shared memory)."""
import numpy as np
import pytest

from models.metrics import distance_matrix
from models.topology import build


@pytest.mark.mpi(min_size=2)
def test_distance_matrix_is_one_shared_copy_per_node():
    """Under MPI the distance matrix is built once per node in a shared window: every rank sees
    the serial matrix, the rank that allocated it holds the memory, the others map it."""
    from mpi4py import MPI

    from pdes.engine import distances
    comm = MPI.COMM_WORLD
    topo = build("slimfly", {"q": 7})
    keep = []
    d = distances(topo, comm, keep)
    assert np.array_equal(d, distance_matrix(topo))
    win, node = keep
    assert node.Get_size() >= 2          # the test ranks run on one machine
    # one allocation on the node: rank 0 of the node owns R*R bytes, the others none
    assert win.Get_attr(MPI.WIN_SIZE) == (d.size if node.Get_rank() == 0 else 0)
    # and every rank's array is a view of that memory
    buf, _ = win.Shared_query(0)
    assert np.shares_memory(d, np.frombuffer(buf, dtype=np.uint8))
    comm.Barrier()
