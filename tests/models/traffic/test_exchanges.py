"""Finite exchanges: message tables, completion, effective throughput, exactness."""
import numpy as np
import pytest

from models.core.errors import ParameterError
from models.topology import build
from models.traffic.exchanges import alltoall, bisection, nn3d, torus_dims
from pdes.build import prepare
from pdes.engine import run_local
from tests.helpers import assert_same_results, cfg_builder


def test_torus_dims_match_paper():
    """The largest most-cubic torus gives 001 Sec. 4.4's sizes (SF p=9/10, MLFM, OFT)."""
    assert torus_dims(3042) == (13, 13, 18)
    assert torus_dims(3380) == (13, 13, 20)
    assert sorted(torus_dims(3600)) == [15, 15, 16]
    assert torus_dims(3192) == (12, 14, 19)


def test_alltoall_table():
    """All-to-all: every process sends exactly one message to every other process."""
    topo = build("slimfly", {"q": 3})
    plan = alltoall(topo, 1, message_packets=5)
    E = topo.n_endpoints
    src = np.repeat(np.arange(E), np.diff(plan.msg_off))
    pairs = set(zip(src.tolist(), plan.msg_dst.tolist()))
    assert len(pairs) == E * (E - 1) == plan.msg_dst.size
    assert np.all(plan.msg_pkts == 5)


def test_nn3d_table():
    """Nearest neighbour: 6 messages per process to its torus neighbours."""
    topo = build("slimfly", {"q": 5})
    plan = nn3d(topo, 1, message_packets=4)
    assert np.all(np.diff(plan.msg_off) == 6)
    X, Y, Z = torus_dims(200)
    i = 7
    nb = set(plan.msg_dst[plan.msg_off[i]:plan.msg_off[i + 1]].tolist())
    x, y, z = i % X, (i // X) % Y, i // (X * Y)
    want = {((x + dx) % X) + X * (((y + dy) % Y) + Y * ((z + dz) % Z))
            for dx, dy, dz in ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1))}
    assert nb == want


def test_bisection_pairs_are_symmetric():
    """Bisection pairs: each process exchanges one message with one partner, both ways."""
    topo = build("slimfly", {"q": 5})
    plan = bisection(topo, 3, message_packets=2)
    src = np.repeat(np.arange(topo.n_endpoints), np.diff(plan.msg_off))
    pairs = set(zip(src.tolist(), plan.msg_dst.tolist()))
    assert all((b, a) in pairs for a, b in pairs)
    assert np.all(np.diff(plan.msg_off) == 1)


cfg_of = cfg_builder("exchange", "topology.q=5", "router.link_latency=1")


@pytest.mark.parametrize("sets", [
    ["traffic.pattern=alltoall", "traffic.message_packets=4"],
    ["traffic.pattern=alltoall", "traffic.message_packets=4", "traffic.schedule=staggered"],
    ["traffic.pattern=nn3d", "traffic.message_packets=64", "routing.algorithm=valiant"],
    ["traffic.pattern=bisection", "traffic.message_packets=50", "traffic.placement=random",
     "routing.algorithm=ugal_l", "router.packet_size=2"],
])
def test_exchange_completes_exactly(sets):
    """Every message completes, throughput <= 1, and splitting the routers changes no bit."""
    cfg = cfg_of(*sets)
    prep = prepare(cfg)
    a = run_local(cfg, prep=prep)
    s = a["summary"]
    assert s["messages_completed"] == s["messages"] > 0
    assert 0 < s["effective_throughput"] <= 1.0
    assert s["total_flits"] == int(prep.traffic.msg_pkts.sum()) * prep.rp.packet_size
    assert s["message_latency_max"] == s["completion_cycles"] - 1
    b = run_local(cfg, prep=prep, owner=np.arange(prep.topo.n_routers) % 3)
    assert_same_results(a, b)


def test_alltoall_minimal_beats_valiant():
    """All-to-all: minimal routing reaches well above Valiant's about one half (001 Fig. 13)."""
    eff = {}
    for alg in ("min", "valiant"):
        eff[alg] = run_local(cfg_of("traffic.pattern=alltoall", "traffic.message_packets=8",
                                    f"routing.algorithm={alg}"))["summary"]["effective_throughput"]
    assert eff["valiant"] < 0.6 and eff["min"] > 1.3 * eff["valiant"]


def test_bad_exchange_parameters():
    """Bad exchange parameters name their key."""
    with pytest.raises(ParameterError, match="traffic.message_packets"):
        prepare(cfg_of("traffic.pattern=alltoall", "traffic.message_packets=0"))
    with pytest.raises(ParameterError, match="traffic.dims"):
        prepare(cfg_of("traffic.pattern=nn3d", "traffic.dims=[10,10,10]"))


def test_in_process_split_moves_blocks_like_mpi(monkeypatch):
    """An in-process split moves its flits and credits only through pack_block/unpack_block,
    the kernels an MPI run uses (one exchange path)."""
    from pdes.kernels import exchange as X
    calls = {"pack": 0, "unpack": 0, "flits": 0, "credits": 0}
    pack, unpack = X.pack_block, X.unpack_block

    def spy_pack(buf, *a):
        n = pack(buf, *a)
        calls["pack"] += 1
        calls["flits"] += int(buf[0])
        calls["credits"] += int(buf[1])
        return n

    def spy_unpack(buf, *a):
        calls["unpack"] += 1
        return unpack(buf, *a)
    monkeypatch.setattr(X, "pack_block", spy_pack)
    monkeypatch.setattr(X, "unpack_block", spy_unpack)
    cfg = cfg_of("traffic.pattern=alltoall", "traffic.message_packets=2")
    prep = prepare(cfg)
    res = run_local(cfg, prep=prep, owner=np.arange(prep.topo.n_routers) % 2)
    assert res["summary"]["messages_completed"] == res["summary"]["messages"]
    assert calls["pack"] == calls["unpack"] > 0
    assert calls["flits"] > 0 and calls["credits"] > 0
