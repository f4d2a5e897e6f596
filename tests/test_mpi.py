"""MPI tests (run with `mpiexec -n 2|4 python -m pytest --with-mpi -m mpi`).

Each rank also runs the same config alone in-process; the MPI results must
be bit-identical to that serial run, on the world communicator and on a
split communicator of 3 ranks.
"""
import pytest

from pdes.engine import simulate
from tests.helpers import assert_same_results, cfg_builder

CASES = {
    "sf-below": ["traffic.load=0.4"],
    "sf-above": ["traffic.load=0.95", "measure.drain_cycles=300"],
    "df": ["topology.name=dragonfly", "topology.h=2", "traffic.load=0.5", "router.link_latency=3"],
    "df-sat": ["topology.name=dragonfly", "topology.h=2", "traffic.pattern=shift", "traffic.s=4",
               "traffic.load=0.9", "measure.drain_cycles=300"],
    "gf": ["topology.name=galaxyfly", "topology.n=3", "topology.q=5", "topology.a=2",
           "topology.p=2", "traffic.load=0.5", "router.num_vcs=6"],
    "gf-sat": ["topology.name=galaxyfly", "topology.n=3", "topology.q=5", "topology.a=2",
               "topology.p=2", "traffic.load=1.0", "router.num_vcs=6", "measure.drain_cycles=300"],
    "sf-valiant-wc": ["routing.algorithm=valiant", "traffic.pattern=worst_case", "traffic.load=0.5"],
    "sf-ugal_l": ["routing.algorithm=ugal_l", "traffic.load=0.8", "measure.drain_cycles=300"],
    "sf-ugal_g": ["routing.algorithm=ugal_g", "routing.epoch=50", "traffic.load=0.6",
                  "traffic.pattern=worst_case"],
    "mlfm-ugal-phase": ["topology.name=mlfm", "topology.h=3", "routing.algorithm=ugal_l",
                        "routing.vc_scheme=phase", "traffic.load=0.6"],
    "sf-alltoall": ["traffic.pattern=alltoall", "traffic.message_packets=2",
                    "routing.algorithm=ugal_l"],
    "fattree-anca": ["topology.name=fattree", "topology.k=4", "routing.algorithm=anca",
                     "traffic.load=0.7"],
    "gf-nag": ["topology.name=galaxyfly", "topology.n=3", "topology.q=5", "topology.a=2",
               "topology.p=2", "routing.algorithm=nag", "routing.th_min=0.05", "traffic.load=0.6",
               "traffic.pattern=worst_case", "measure.drain_cycles=300"],
    "gf-nar": ["topology.name=galaxyfly", "topology.n=3", "topology.q=5", "topology.a=2",
               "topology.p=2", "routing.algorithm=nar", "routing.th_min=0.05", "traffic.load=0.8",
               "measure.drain_cycles=300"],
    "df-nal": ["topology.name=dragonfly", "topology.h=2", "routing.algorithm=nal",
               "routing.th_min=0.05", "traffic.load=0.7", "router.link_latency=3"],
    "sf-layered": ["routing.algorithm=layered", "traffic.load=0.7", "measure.drain_cycles=300"],
    "sf-layered-rr": ["routing.algorithm=layered", "routing.layer_select=round_robin",
                      "routing.layers=8", "traffic.pattern=worst_case", "traffic.load=0.5",
                      "measure.drain_cycles=300"],
    "sf-rues": ["routing.algorithm=rues", "routing.preserve=0.4", "traffic.load=0.3",
                "measure.drain_cycles=300"],
    "sf-shared-sat": ["router.buffer_policy=shared", "router.buffer_flits=32", "router.num_vcs=2",
                      "router.packet_size=2", "router.private_vc_flits=4", "router.link_latency=2",
                      "traffic.load=0.95", "measure.drain_cycles=300"],
    "gf-shared-nar": ["topology.name=galaxyfly", "topology.n=3", "topology.q=5", "topology.a=2",
                      "topology.p=2", "routing.algorithm=nar", "routing.th_min=0.05",
                      "router.buffer_policy=shared", "router.private_vc_flits=2",
                      "traffic.load=0.8", "measure.drain_cycles=300"],
    # more than 32 network ports: minimal next hops from the port table of each rank's routers
    "rr40-min": ["topology.name=random_regular", "topology.routers=90", "topology.degree=40",
                 "topology.p=3", "traffic.load=0.8", "router.num_vcs=3"],
    "rr40-ugal_l": ["topology.name=random_regular", "topology.routers=90", "topology.degree=40",
                    "topology.p=3", "routing.algorithm=ugal_l", "traffic.load=0.8",
                    "router.num_vcs=4", "measure.drain_cycles=300"],
}


cfg_of = cfg_builder("short")


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
@pytest.mark.parametrize("case", ["sf-below", "gf-sat", "sf-ugal_g", "gf-nag", "sf-layered",
                                  "sf-shared-sat"])
def test_split_communicator_of_three(case):
    """A run on a split communicator of 3 ranks equals the one-process run."""
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    sub = world.Split(0 if world.Get_rank() < 3 else 1, world.Get_rank())
    cfg = cfg_of(*CASES[case])
    res = simulate(cfg, sub if sub.Get_size() > 1 else None)
    assert_same_results(res, simulate(cfg, None))
    sub.Free()
