"""Minimal next-hop tables (pdes.kernels.nexthop): the same ports, in the same order, with
the same draws as the scan of the distance rows, at any radix."""
from collections import namedtuple

import numpy as np
import pytest

from models.core.jit import njit
from models.routing.paths import min_port
from pdes import config as C
from pdes.build import make_parts, prepare
from pdes.engine import run_local
from pdes.sizing import check_run_memory, describe_memory
from pdes.kernels import nexthop as NH
from models.core import nexthop as NHK
from models.core.params import PR_NHMIN, PR_NHMULTI
from models.core.nexthop import table_port
from models.core.rng import P_ROUTE
from pdes.state import PartState
from tests.helpers import assert_same_results, cfg_builder

PortTable = namedtuple("PortTable", ["nh_port", "nh_blk", "nh_off", "nh_cand"])
cfg_of = cfg_builder("short")


def parts_of(prep, nparts, kind="auto"):
    """The parts of a round-robin split, each with a next-hop table of ``kind``."""
    R = prep.topo.n_routers
    owner = (np.arange(R) % nparts).astype(np.int32)
    parts = make_parts(prep, owner, list(range(nparts)), 10)
    for p in parts:
        p.use_next_hop_table(prep.dist, kind=kind, max_degree=int(prep.topo.degree.max()))
    return parts


def candidates(part, k, d):
    """The network ports (from 0) the part's port table lists for local router k and
    destination d, decoded in plain Python."""
    a = part.arrays
    e = int(a["nh_port"][k, d])
    if e != int(part.prm[PR_NHMULTI]):
        return [e]
    w = d >> 6
    bits, base = int(a["nh_blk"][k, w, 0]), int(a["nh_blk"][k, w, 1])
    i = base + bin(bits & ((1 << (d & 63)) - 1)).count("1")
    return [int(x) for x in a["nh_cand"][a["nh_off"][i]:a["nh_off"][i + 1]]]



@njit
def _mismatches(tab, multi, router_gid, port_off, n_epp, out_nbr, dist, seed, draws):
    """Draws where table_port and the scan (min_port) pick different ports."""
    bad = 0
    R = dist.shape[0]
    for k in range(router_gid.shape[0]):
        rg = router_gid[k]
        lo = port_off[k] + n_epp[k]
        hi = port_off[k + 1]
        for d in range(R):
            if d == rg:
                continue
            for s in range(draws):
                a = min_port(rg, d, lo, hi, out_nbr, dist, seed, s, 7 * s + d, s % 5)
                j = table_port(tab, k, d, multi, seed, s, 7 * s + d, P_ROUTE + 64 * (s % 5))
                b = lo + j if j >= 0 else -1
                if a != b:
                    bad += 1
    return bad


TOPOS = {
    "slimfly q=25 (37 ports)": ["topology.name=slimfly", "topology.q=25", "topology.p=1"],
    "random regular, 40 ports": ["topology.name=random_regular", "topology.routers=90",
                                 "topology.degree=40", "topology.p=1"],
    "leaf-spine k=36 (many parallel paths)": ["topology.name=fattree", "topology.k=36",
                                              "topology.levels=2"],
    "hypercube n=7, ports forced": ["topology.name=hypercube", "topology.n=7"],
    "random regular, 280 ports (uint16)": ["topology.name=random_regular", "topology.routers=300",
                                           "topology.degree=280", "topology.p=1"],
}


# Slim Fly q=25 (1,250 routers) is the largest case of each test, and the other networks
# above 32 ports cover the same rules in a fraction of the time: it runs in the slow tier
SLOW = ("slimfly q=25 (37 ports)", "slimfly q=25")


def cases(names):
    """The parametrize list of ``names``, the cases of :data:`SLOW` marked slow."""
    return [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in names]


@pytest.mark.parametrize("name", cases(TOPOS))
def test_port_table_lists_the_scans_ports_in_port_order(name):
    """Every (local router, destination) entry of the port table lists exactly the network
    ports one step closer, in port order, on each part of a 3-way split (rank-local rows)."""
    prep = prepare(cfg_of(*TOPOS[name]))
    d = prep.dist.astype(np.int64)
    big = int(prep.topo.degree.max()) > 255
    for part in parts_of(prep, 3, kind="ports"):
        a = part.arrays
        assert part.prm[PR_NHMIN] == NHK.NH_PORTS
        assert a["nh_port"].dtype == (np.uint16 if big else np.uint8)
        assert a["nh_port"].shape == (part.nR, prep.topo.n_routers)
        multi = 0
        for k in range(part.nR):
            rg = a["router_gid"][k]
            lo, hi = a["port_off"][k] + a["n_epp"][k], a["port_off"][k + 1]
            nbrs = a["out_nbr"][lo:hi]
            ok = (d[nbrs, :] == d[rg, :] - 1) & (d[rg, :] > 0) & (d[rg, :] != 255)
            for dst in range(prep.topo.n_routers):
                want = np.nonzero(ok[:, dst])[0].tolist()
                got = candidates(part, k, dst)
                assert got == want, (k, dst)
                multi += len(want) != 1
        assert part.next_hops["multi"] == multi
        assert part.next_hops["bytes"] == sum(a[n].nbytes for n in ("nh_port", "nh_blk", "nh_off",
                                                                    "nh_cand"))


@pytest.mark.parametrize("name", cases(["slimfly q=25 (37 ports)",
                                        "leaf-spine k=36 (many parallel paths)",
                                        "hypercube n=7, ports forced"]))
def test_table_draws_the_port_the_scan_draws(name):
    """The jitted lookup of the port table picks, for many packet ids and hops, the same port
    as the scan of the distance row (min_port)."""
    prep = prepare(cfg_of(*TOPOS[name]))
    for part in parts_of(prep, 2, kind="ports"):
        a = part.arrays
        tab = PortTable(a["nh_port"], a["nh_blk"], a["nh_off"], a["nh_cand"])
        bad = _mismatches(tab, np.int64(part.prm[PR_NHMULTI]), a["router_gid"].astype(np.int64),
                          a["port_off"].astype(np.int64), a["n_epp"].astype(np.int64),
                          a["out_nbr"].astype(np.int64), prep.dist, np.int64(12345), 6)
        assert bad == 0


def test_table_kind_follows_the_radix():
    """Masks up to 32 network ports, uint8 port entries up to 255, uint16 up to 65535."""
    assert NH.table_kind(32) == (NHK.NH_MASKS, np.uint32)
    assert NH.table_kind(33) == (NHK.NH_PORTS, np.uint8)
    assert NH.table_kind(255) == (NHK.NH_PORTS, np.uint8)
    assert NH.table_kind(256) == (NHK.NH_PORTS, np.uint16)
    assert NH.table_kind(70000)[0] == NHK.NH_NONE
    # SF q=97: 18,818 routers with 145 ports, uint8 entries plus 16 bytes per 64 destinations
    assert NH.fixed_bytes(NHK.NH_PORTS, np.uint8, 18818, 18818) == 18818 ** 2 + 18818 * 295 * 16


RUNS = {
    "slimfly q=25": ["topology.name=slimfly", "topology.q=25", "topology.p=1", "traffic.load=0.6",
                     "router.num_vcs=2"],
    "random regular 40 ports": ["topology.name=random_regular", "topology.routers=90",
                                "topology.degree=40", "topology.p=3", "traffic.load=0.8",
                                "router.num_vcs=3", "traffic.pattern=randperm"],
    "leaf-spine k=36": ["topology.name=fattree", "topology.k=36", "topology.levels=2",
                        "traffic.load=0.7", "router.packet_size=2"],
}


@pytest.mark.parametrize("name", cases(RUNS))
def test_runs_with_the_port_table_equal_the_scan(name, monkeypatch):
    """Minimal routing above 32 network ports gives bit-identical results with the port table
    (one part and two parts) and with the scan of the distance rows."""
    cfg = cfg_of(*RUNS[name])
    prep = prepare(cfg)
    R = prep.topo.n_routers
    assert int(prep.topo.degree.max()) > 32
    table = run_local(cfg, prep=prep)
    assert table["next_hops"]["kind"] == "ports (uint8)" and table["next_hops"]["bytes"] > R * R
    split = run_local(cfg, prep=prep, owner=(np.arange(R) % 2).astype(np.int32))
    # the same entries, split by rows (each part's CSR offsets have one more word)
    assert split["next_hops"]["bytes"] == table["next_hops"]["bytes"] + 4
    monkeypatch.setattr(PartState, "use_next_hop_table", lambda self, dist, **kw: "none")
    scan = run_local(cfg, prep=prep)
    assert scan["next_hops"] == {"kind": "none", "bytes": 0, "bytes_max_rank": 0}
    assert_same_results(table, scan)
    assert_same_results(split, scan)


def test_results_file_records_the_table(tmp_path):
    """/run in the results file names the next-hop table's kind and its bytes."""
    import h5py
    from pdes.output import write_results
    cfg = cfg_of(*RUNS["random regular 40 ports"])
    res = run_local(cfg)
    write_results(str(tmp_path / "r.h5"), res, C.to_toml(cfg), nranks=1, partition=None,
                  version="t")
    with h5py.File(tmp_path / "r.h5") as f:
        assert f["run"].attrs["next_hop_table"] == "ports (uint8)"
        assert f["run"].attrs["next_hop_bytes"] == res["next_hops"]["bytes"] >= 90 * 90


def test_ports_on_a_low_radix_equal_the_masks(monkeypatch):
    """The port table (forced on a hypercube, where most entries have several minimal ports)
    gives the results of the masks."""
    cfg = cfg_of("topology.name=hypercube", "topology.n=6", "topology.p=2", "traffic.load=0.7",
                 "router.num_vcs=6")
    prep = prepare(cfg)
    masks = run_local(cfg, prep=prep)
    assert masks["next_hops"]["kind"] == "masks"
    orig = PartState.use_next_hop_table
    monkeypatch.setattr(PartState, "use_next_hop_table",
                        lambda self, dist, **kw: orig(self, dist, kind="ports"))
    ports = run_local(cfg, prep=prep)
    assert ports["next_hops"]["kind"] == "ports (uint8)"
    assert_same_results(masks, ports)


def test_a_table_that_does_not_fit_is_left_out():
    """When the run fits in the memory limit only without the next-hop table, the table is
    left out (the routing scans the distance rows) and the start report says so."""
    sets = ["topology.name=random_regular", "topology.routers=600", "topology.degree=40",
            "topology.p=1"]
    est = check_run_memory(prepare(cfg_of(*sets)))
    assert est["next_hops_kind"] == "ports (uint8)" and est["next_hops"] >= 600 * 600
    assert "next hops 456 kB (ports (uint8))" in describe_memory(est)
    limit = (est["per_node"] - est["next_hops"] / 2) / 1e9
    prep = prepare(cfg_of(*sets, f"run.max_memory_gb={limit}"))
    est2 = check_run_memory(prep)
    assert prep.next_hops == "off" and est2["next_hops"] == 0
    assert any(n.startswith("next hops: no table") for n in prep.notes)
    (part,) = make_parts(prep, np.zeros(600, np.int32), [0], 10)
    assert part.prm[PR_NHMIN] == NHK.NH_NONE and part.next_hops["kind"] == "none"

