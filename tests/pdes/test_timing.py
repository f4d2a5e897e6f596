"""Router pipeline timing: zero-load latency exactly as documented, and as BookSim2 measures it.

Each run sends one packet each way between the two nodes at the ends of a
line of routers (a finite all-to-all of one packet per message), so every
packet is alone on its path and its network latency is the zero-load one.
"""
import numpy as np
import pytest

from pdes import config as C
from pdes.build import prepare
from pdes.engine import run_local
from pdes.timing import booksim_stages, kernel_timing, router_cycles, zero_load_latency


def line(tmp_path, hops, lat=1):
    """An anynet line of ``hops + 1`` routers, node 0 on the first, node 1 on the last."""
    if hops == 0:
        text = "router 0 node 0 node 1\n"
    else:
        rows = [f"router {r} router {r + 1} {lat}" for r in range(hops)]
        rows[0] = f"router 0 node 0 router 1 {lat}"
        rows.append(f"router {hops} node 1")
        text = "\n".join(rows) + "\n"
    path = tmp_path / f"line{hops}.anynet"
    path.write_text(text)
    return str(path)


def run_line(tmp_path, hops, lat, sets, owner=None):
    cfg = C.resolve({}, ["topology.name=file", "topology.format=anynet",
                         f"topology.path={line(tmp_path, hops, lat)}", "router.link_latency=0",
                         "traffic.pattern=alltoall", "traffic.message_packets=1", *sets])
    prep = prepare(cfg)
    if owner is not None:
        owner = owner(prep.topo.n_routers)
    s = run_local(cfg, owner=owner, prep=prep)["summary"]
    assert s["measured_packets"] == 2 and s["hops_mean"] == hops
    assert s["network_latency_p50"] == s["network_latency_max"] == s["network_latency_mean"]
    return int(s["network_latency_max"]), cfg["router"]


KEYS = ("routing_delay", "vc_alloc_delay", "sw_alloc_delay", "st_delay", "internal_speedup")

# BookSim2 (commit 28f4329, iq router, anynet line, one source, injection rate 0.0002):
# (routing, vc_alloc, sw_alloc, st_prepare + st_final, internal_speedup), hops, link latency,
# packet size -> network latency, every packet
BOOKSIM = [
    ((1, 1, 1, 1, 2), 0, 1, 1, 5),
    ((1, 1, 1, 1, 2), 1, 1, 1, 8),
    ((1, 1, 1, 1, 2), 2, 1, 1, 11),
    ((1, 1, 1, 1, 2), 3, 1, 1, 14),
    ((1, 1, 1, 1, 1), 2, 1, 1, 17),
    ((0, 1, 1, 1, 2), 2, 2, 1, 13),
    ((3, 1, 1, 2, 3), 2, 3, 1, 24),
    ((1, 1, 1, 1, 4), 3, 1, 1, 10),
    ((2, 1, 1, 1, 1), 1, 4, 4, 20),
    ((1, 1, 1, 1, 2), 2, 1, 5, 15),
    ((0, 1, 1, 1, 3), 3, 2, 3, 15),
    ((1, 1, 1, 3, 2), 1, 2, 1, 13),
]


@pytest.mark.parametrize("keys,hops,lat,pkt,booksim", BOOKSIM)
def test_booksim_pipeline_gives_booksims_zero_load_latency(tmp_path, keys, hops, lat, pkt, booksim):
    """router.pipeline = booksim: a lone packet's network latency is BookSim2's, and the formula's."""
    sets = [f"router.{k}={v}" for k, v in zip(KEYS, keys)]
    got, r = run_line(tmp_path, hops, lat, ["router.pipeline=booksim", f"router.packet_size={pkt}",
                                            *sets])
    assert got == booksim == zero_load_latency(r, [lat] * hops)


@pytest.mark.parametrize("pipeline,sets,hops,lat", [
    ("booksim", ["router.endpoint_latency=3", "router.credit_delay=0"], 2, 2),
    ("booksim", ["router.routing_delay=4", "router.vc_alloc_delay=3", "router.st_delay=2",
                 "router.internal_speedup=2.5", "router.packet_size=2"], 1, 5),
    ("staged", [], 0, 1),
    ("staged", [], 3, 1),
    ("staged", ["router.routing_delay=2", "router.sw_alloc_delay=3", "router.st_delay=0",
                "router.packet_size=3", "router.endpoint_latency=2"], 2, 3),
])
def test_zero_load_latency_is_the_documented_formula(tmp_path, pipeline, sets, hops, lat):
    """Both pipelines: a lone packet's network latency is docs/router-model.md's formula."""
    got, r = run_line(tmp_path, hops, lat, [f"router.pipeline={pipeline}", *sets])
    assert got == zero_load_latency(r, [lat] * hops)


def test_slim_fly_keys_give_5_plus_3h_and_6_plus_5h(tmp_path):
    """The Slim Fly study's keys: 5 + 3 H cycles under booksim (as BookSim2), 6 + 5 H under staged."""
    for hops in (1, 2):
        assert run_line(tmp_path, hops, 1, ["router.pipeline=booksim"])[0] == 5 + 3 * hops
        assert run_line(tmp_path, hops, 1, ["router.pipeline=staged"])[0] == 6 + 5 * hops


def test_split_line_keeps_the_timing(tmp_path):
    """A two-part split (flits cross through the exchange blocks) gives the same latency, also
    when a head's VC allocation falls in the cycle before it is read (internal_speedup 4)."""
    sets = ["router.pipeline=booksim", "router.internal_speedup=4", "router.packet_size=2"]
    assert kernel_timing(C.resolve({}, sets)["router"]).head == -1
    one, r = run_line(tmp_path, 3, 2, sets)
    two, _ = run_line(tmp_path, 3, 2, sets, owner=lambda n: (np.arange(n) % 2).astype(np.int32))
    assert one == two == zero_load_latency(r, [2] * 3)


def test_booksim_router_cycles():
    """BookSim's stages: with speedup 1 they add up (minus the read cycle); speedup 2 runs two
    one-cycle stages per cycle; a longer stage ends in the first step of its last cycle."""
    assert booksim_stages(1, 1, 1, 1, 1) == (1, 2, 3)
    assert booksim_stages(1, 1, 1, 1, 2) == (0, 1, 1)
    assert booksim_stages(0, 1, 1, 1, 2) == (0, 0, 1)
    assert booksim_stages(2, 1, 1, 1, 2) == (1, 2, 2)
    assert booksim_stages(1, 1, 1, 1, 4) == (0, 0, 0)
    assert booksim_stages(1, 1, 1, 1, 1.5) == booksim_stages(1, 1, 1, 1, 1)
    r = C.resolve({}, [])["router"]
    for rd, va, sa, st in [(1, 1, 1, 1), (0, 2, 1, 3), (5, 1, 2, 1)]:
        r.update(routing_delay=rd, vc_alloc_delay=va, sw_alloc_delay=sa, st_delay=st,
                 internal_speedup=1.0, pipeline="booksim")
        assert router_cycles(r) == rd + va + sa + st - 1
        t = kernel_timing(r)
        assert t.head + t.va_to_sa + t.sa_to_send == router_cycles(r) and t.va_to_sa >= 1


@pytest.mark.parametrize("key", ["vc_alloc_delay", "sw_alloc_delay", "st_delay"])
def test_booksim_pipeline_refuses_zero_stage_delays(key):
    """BookSim's allocators and crossbar take at least a cycle: 0 is refused, naming the key."""
    with pytest.raises(C.ConfigError, match=f"router.{key}: must be >= 1 with router.pipeline"):
        C.resolve({}, ["router.pipeline=booksim", f"router.{key}=0"])
    assert C.resolve({}, ["router.pipeline=staged", f"router.{key}=0"])["router"][key] == 0
