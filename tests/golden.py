"""The golden configs and their digests (used by tests/test_golden.py, tests/test_mpi.py,
tests/pdes/test_checkpoint.py and run_scripts/golden_digests.py).

Each config of :data:`GOLDEN` (on top of :data:`BASE`) is pinned by the SHA-256 of every
dataset :func:`pdes.output.write_results` writes outside ``/run`` (:func:`result_digest`),
stored in ``tests/golden_digests.json``.  Every registered routing kernel is the plan's kernel
of at least one golden config (tests/test_golden.py checks it).  Regenerate the digests with
``python run_scripts/golden_digests.py`` only in a commit that means to change results, and
say so in the commit message.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from pdes import config as C
from tests.helpers import phase_sets

DIGESTS = Path(__file__).with_name("golden_digests.json")

BASE = [*phase_sets("golden"), "router.link_latency=1"]
GF = ["topology.name=galaxyfly", "topology.n=3", "topology.q=5", "topology.a=2", "topology.p=2"]
DF = ["topology.name=dragonfly", "topology.h=2"]
SKYWALK = ["topology.name=skywalk", "topology.z=4", "topology.c=16", "topology.d_i=3",
           "topology.d_o=2", "topology.p=2", "layout.preset=skywalk", "router.link_latency=0"]

GOLDEN = {
    "min": ["traffic.load=0.5"],
    "min-saturated": ["traffic.load=0.95", "router.num_vcs=4"],
    "valiant": ["routing.algorithm=valiant", "traffic.pattern=worst_case", "traffic.load=0.4"],
    "ugal_l": ["routing.algorithm=ugal_l", "traffic.load=0.8"],
    "ugal_g": ["routing.algorithm=ugal_g", "routing.epoch=50", "traffic.load=0.6",
               "traffic.pattern=worst_case"],
    "ugal_l-phase-mlfm": ["topology.name=mlfm", "topology.h=3", "routing.algorithm=ugal_l",
                          "routing.vc_scheme=phase", "traffic.load=0.6"],
    "min_adaptive": ["routing.algorithm=min_adaptive", "traffic.load=0.7",
                     "traffic.pattern=randperm"],
    "anca": ["topology.name=fattree", "topology.k=4", "routing.algorithm=anca",
             "traffic.load=0.7"],
    "fastest": [*SKYWALK, "routing.algorithm=fastest", "traffic.load=0.3"],
    "dragonfly_ugal": [*DF, "routing.algorithm=dragonfly_ugal", "traffic.load=0.6",
                       "traffic.pattern=shift", "traffic.s=4", "router.link_latency=3"],
    "dragonfly_valiant": [*DF, "routing.algorithm=dragonfly_valiant", "traffic.load=0.4"],
    "dragonfly_min": [*DF, "traffic.load=0.5", "router.link_latency=3"],
    "dragonfly_par": [*DF, "routing.algorithm=dragonfly_par", "traffic.pattern=worst_case",
                      "traffic.load=0.4"],
    "nar": [*GF, "routing.algorithm=nar", "routing.th_min=0.05", "traffic.load=0.8"],
    "nal": [*DF, "routing.algorithm=nal", "routing.th_min=0.05", "traffic.load=0.7"],
    "nag": [*GF, "routing.algorithm=nag", "routing.th_min=0.05", "traffic.load=0.6",
            "traffic.pattern=worst_case"],
    "layered": ["routing.algorithm=layered", "traffic.load=0.7"],
    "layered-rr": ["routing.algorithm=layered", "routing.layer_select=round_robin",
                   "routing.layers=8", "traffic.pattern=worst_case", "traffic.load=0.5"],
    "rues": ["routing.algorithm=rues", "routing.preserve=0.4", "traffic.load=0.3"],
    "multiflit": ["router.packet_size=4", "traffic.load=0.6", "router.link_latency=2"],
    "exchange": ["traffic.pattern=alltoall", "traffic.message_packets=2",
                 "routing.algorithm=ugal_l", "router.packet_size=2"],
    "exchange-staggered": ["traffic.pattern=bisection", "traffic.message_packets=20",
                           "traffic.schedule=staggered", "routing.algorithm=valiant"],
    "latency4-bdf": ["topology.name=bdf", "topology.u=5", "topology.p=3",
                     "router.link_latency=4", "traffic.load=0.5", "traffic.pattern=randperm"],
    "layout-latency": ["router.link_latency=0", "traffic.load=0.5"],
    "dor": ["topology.name=torus", "topology.dims=4,4", "topology.p=2", "routing.algorithm=dor",
            "traffic.load=0.5"],
    "booksim-islip": ["router.allocation=booksim", "router.packet_size=4", "router.num_vcs=4",
                      "routing.algorithm=ugal_l", "traffic.load=0.6"],
    "booksim-hold": ["router.allocation=booksim", "router.vc_allocator=separable_input_first",
                     "router.sw_allocator=separable_output_first",
                     "router.hold_switch_for_packet=true", "router.wait_for_tail_credit=true",
                     "router.packet_size=3", "router.vc_buffer_flits=2",
                     "router.internal_speedup=1", "traffic.load=0.3"],
    # a failure inside the run under BookSim's allocation (heads dropped while the same
    # step's switch requests stand), two switch inputs per port, output VCs held to the tail
    "booksim-faults": ["router.allocation=booksim", "routing.algorithm=ugal_l",
                       "router.packet_size=4", "traffic.load=0.4", "faults.link_fraction=0.1",
                       "faults.routers=[3]", "faults.at_cycle=300", "faults.reroute_cycles=200",
                       "router.input_speedup=2", "router.wait_for_tail_credit=true"],
    "dfsssp": ["routing.algorithm=dfsssp", "router.num_vcs=4", "traffic.load=0.7"],
    "table_min-any": ["routing.algorithm=table_min", "routing.vcs=any", "router.num_vcs=2",
                      "traffic.load=0.5"],
    "faults": ["routing.algorithm=ugal_l", "faults.link_fraction=0.1", "faults.routers=3",
               "traffic.load=0.5"],
    "shared-buffers": ["router.buffer_policy=shared", "router.buffer_flits=40", "router.num_vcs=4",
                       "router.packet_size=2", "routing.algorithm=ugal_l", "traffic.load=0.8"],
}


def golden_cfg(name: str) -> dict:
    """The resolved golden config ``name``: :data:`BASE`, then its own keys."""
    return C.resolve({}, [*BASE, *GOLDEN[name]])


def golden_kernel(name: str) -> str:
    """The routing kernel (``RoutingPlan.kernel``) the engine plans for golden config ``name``."""
    from pdes.build import plan_routing
    return plan_routing(golden_cfg(name))[2].kernel



def split_owner(n_routers: int) -> np.ndarray:
    """The two-part in-process split the digests are checked on."""
    return (np.arange(n_routers) % 2).astype(np.int32)


def result_digest(res: dict, cfg: dict) -> str:
    """SHA-256 over every dataset outside ``/run`` and ``/config`` and the root attributes
    that are results.

    The config (its text, its ``/config`` datasets and the buffer check derived
    from it) and the package version are inputs, not results: a new config key
    with a default must not change a digest.
    """
    import h5py

    from pdes.output import write_results
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "r.h5")
        write_results(path, res, C.to_toml(cfg), nranks=1, partition=None, version="golden")
        h = hashlib.sha256()
        with h5py.File(path, "r") as f:
            for k in sorted(f.attrs):
                if k not in ("pdes_version", "config_toml", "buffer_note"):
                    h.update(f"@{k}={f.attrs[k]!r}".encode())

            def visit(name, obj):
                if name.split("/")[0] in ("run", "config") or not isinstance(obj, h5py.Dataset):
                    return
                a = obj[()]
                if isinstance(a, bytes):
                    a = np.frombuffer(a, np.uint8)
                a = np.asarray(a)
                h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
                h.update(np.ascontiguousarray(a).tobytes())
            f.visititems(visit)
        return h.hexdigest()


def stored() -> dict:
    """The stored digests, by golden config name."""
    return json.loads(DIGESTS.read_text())
