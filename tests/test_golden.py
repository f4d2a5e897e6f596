"""Golden digests: every routing/traffic path of the engine keeps its exact results.

Each config of :data:`tests.golden.GOLDEN` is run on one part and on a two-part split in
this process (and, in the MPI tier, on the ranks of the world communicator);
the SHA-256 of every dataset :func:`pdes.output.write_results` writes outside
``/run`` (timings and partition are the only rank-dependent part) must equal
the digest stored in ``tests/golden_digests.json``.  Regenerate that file with
``python run_scripts/golden_digests.py`` only in a commit that means to change
results, and say so in the commit message.
"""
from __future__ import annotations

import pytest

from tests.golden import GOLDEN, golden_cfg, golden_kernel, result_digest, split_owner, stored


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_one_and_two_parts(name):
    """Results of a golden config on 1 part and on a 2-part split equal the stored digest."""
    from pdes.build import prepare
    from pdes.engine import run_local
    cfg = golden_cfg(name)
    want = stored()[name]
    prep = prepare(cfg)
    assert result_digest(run_local(cfg, prep=prep), cfg) == want
    owner = split_owner(prep.topo.n_routers)
    assert result_digest(run_local(cfg, owner=owner, prep=prep), cfg) == want


def test_golden_set_is_complete():
    """Every golden config has a stored digest and no stale digest remains."""
    assert sorted(stored()) == sorted(GOLDEN)


def test_every_routing_kernel_has_a_golden_config():
    """Every registered routing kernel is the planned kernel of at least one golden config."""
    import models.routing  # noqa: F401  (registers the kernels)
    from models.core.routing import ROUTING_KERNELS
    covered = {golden_kernel(name) for name in GOLDEN}
    missing = sorted(set(ROUTING_KERNELS) - covered)
    assert not missing, f"routing kernels without a golden config: {missing}"


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_mpi(name):
    """Results of a golden config on the ranks of the world communicator equal the stored digest."""
    from mpi4py import MPI

    from pdes.engine import simulate
    cfg = golden_cfg(name)
    res = simulate(cfg, MPI.COMM_WORLD)
    assert result_digest(res, cfg) == stored()[name]
