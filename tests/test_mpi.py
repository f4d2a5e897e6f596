"""MPI tests (run with `mpiexec -n 2|4 python -m pytest --with-mpi -m mpi`).

Each rank also runs the same config alone in-process; the MPI results must
be bit-identical to that serial run, on the world communicator and on a
split communicator of 3 ranks.  The cases are every golden config
(tests/golden.py) and the MPI-only cases of :data:`MPI_ONLY`.
"""
import pytest

from pdes import config as C
from pdes.engine import simulate
from tests.golden import GOLDEN
from tests.helpers import assert_same_results, cfg_builder

cfg_of = cfg_builder("short")


def golden_cases() -> dict:
    """Every golden config by its own keys, on this tier's phases with drains as short as the
    golden BASE's; without BASE's 1-cycle links (test_golden_mpi runs those), so a config that
    does not fix its link latency runs on the layout's latencies and exchanges in windows of
    several cycles.  A config that is then the same as an earlier one's is run once."""
    out, seen = {}, set()
    for name, own in GOLDEN.items():
        sets = [*own, "measure.drain_cycles=300"]
        key = C.to_toml(cfg_of(*sets))
        if key not in seen:
            seen.add(key)
            out[name] = sets
    return out


CASES = golden_cases()

GF = ["topology.name=galaxyfly", "topology.n=3", "topology.q=5", "topology.a=2", "topology.p=2"]
# MPI-only cases: paths no golden config takes on several ranks
MPI_ONLY = {
    "df-sat": ["topology.name=dragonfly", "topology.h=2", "traffic.pattern=shift", "traffic.s=4",
               "traffic.load=0.9", "measure.drain_cycles=300"],
    "gf": [*GF, "traffic.load=0.5", "router.num_vcs=6"],
    "gf-sat": [*GF, "traffic.load=1.0", "router.num_vcs=6", "measure.drain_cycles=300"],
    "sf-shared-sat": ["router.buffer_policy=shared", "router.buffer_flits=32", "router.num_vcs=2",
                      "router.packet_size=2", "router.private_vc_flits=4", "router.link_latency=2",
                      "traffic.load=0.95", "measure.drain_cycles=300"],
    "gf-shared-nar": [*GF, "routing.algorithm=nar", "routing.th_min=0.05",
                      "router.buffer_policy=shared", "router.private_vc_flits=2",
                      "traffic.load=0.8", "measure.drain_cycles=300"],
    # more than 32 network ports: minimal next hops from the port table of each rank's routers
    "rr40-min": ["topology.name=random_regular", "topology.routers=90", "topology.degree=40",
                 "topology.p=3", "traffic.load=0.8", "router.num_vcs=3"],
    "rr40-ugal_l": ["topology.name=random_regular", "topology.routers=90", "topology.degree=40",
                    "topology.p=3", "routing.algorithm=ugal_l", "traffic.load=0.8",
                    "router.num_vcs=4", "measure.drain_cycles=300"],
    # parallel links (two ports and channels per router pair) crossing the ranks
    "ft-parallel": ["topology.name=fattree", "topology.k=12", "topology.levels=2",
                    "topology.parallel=3", "traffic.load=0.9", "measure.drain_cycles=300"],
    # a failure during the run (packets cut by failed links and a failed router, the reroute)
    "faults-mid": ["router.packet_size=4", "traffic.load=0.4", "faults.link_fraction=0.1",
                   "faults.routers=[3]", "faults.at_cycle=300", "faults.reroute_cycles=100"],
    "faults-mid-booksim": ["router.allocation=booksim", "routing.algorithm=ugal_l",
                           "router.packet_size=4", "traffic.load=0.4", "faults.link_fraction=0.1",
                           "faults.at_cycle=300", "faults.reroute_cycles=100"],
    "dfplus-worst": ["topology.name=dragonfly_plus", "topology.h=2", "traffic.pattern=worst_case",
                     "traffic.load=0.6", "measure.drain_cycles=300"],
    # schedules (pdes.kernels.schedule): per-operation cycles on processes of every rank
    "allreduce-rab": ["traffic.pattern=allreduce", "traffic.algorithm=rabenseifner",
                      "traffic.procs=12", "traffic.placement=random", "traffic.bytes=30000",
                      "traffic.iterations=2", "traffic.compute_cycles=40",
                      "router.packet_size=2", "routing.algorithm=ugal_l"],
    "jobs": ["jobs.0.pattern=allreduce", "jobs.0.procs=8", "jobs.0.placement=random",
             "jobs.0.iterations=3", "jobs.0.bytes=512", "jobs.1.pattern=alltoall_collective",
             "jobs.1.procs=40", "jobs.1.placement=random", "jobs.1.start_cycle=30"],
    "stencil": ["traffic.pattern=stencil3d", "traffic.procs=27", "traffic.placement=random",
                "traffic.iterations=2", "traffic.compute_cycles=50", "traffic.halo_bytes=2000"],
}
assert not set(MPI_ONLY) & set(CASES), "an MPI-only case has a golden config's name"
CASES.update(MPI_ONLY)


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("case", sorted(CASES))
def test_world_equals_serial(case):
    """Results on all ranks of the world communicator equal the one-process run."""
    from mpi4py import MPI
    cfg = cfg_of(*CASES[case])
    par = simulate(cfg, MPI.COMM_WORLD)
    ser = simulate(cfg, None)
    assert_same_results(par, ser)
    assert par["partition"]["ranks"] == MPI.COMM_WORLD.Get_size()


@pytest.mark.mpi(min_size=4)
@pytest.mark.parametrize("case", ["min", "gf-sat", "ugal_g", "nag", "layered", "sf-shared-sat",
                                  "faults", "faults-mid", "allreduce-rab"])
def test_split_communicator_of_three(case):
    """A run on a split communicator of 3 ranks equals the one-process run."""
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    sub = world.Split(0 if world.Get_rank() < 3 else 1, world.Get_rank())
    cfg = cfg_of(*CASES[case])
    res = simulate(cfg, sub if sub.Get_size() > 1 else None)
    assert_same_results(res, simulate(cfg, None))
    sub.Free()
