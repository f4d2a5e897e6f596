"""Shared input buffers (``router.buffer_policy = "shared"``, BookSim's SharedBufferPolicy): each
VC of a port owns ``private_vc_flits``, the rest of the port's ``buffer_flits`` is shared."""
import numpy as np
import pytest

from models.core.errors import ParameterError
from pdes import booksim
from pdes import config as C
from pdes.build import prepare
from pdes.engine import run_local
from models.core import params as prm_slots
from models.core.record import OK
from tests.helpers import (anynet_ring, assert_same_results, cfg_builder, cli_sets, one_part,
                           restarted_on_other_part_counts, run_pdes)

SHARED = ["router.buffer_policy=shared"]
# a hot spot: a quarter of the traffic goes to 4 endpoints, so their routers' ports fill
HOT = ["traffic.pattern=hotspot", "traffic.frac=0.3", "traffic.hotspots=4", "traffic.load=0.9"]
SAT = ["traffic.load=0.95"]     # saturated, but measured packets arrive (no NaN means)
LAT2 = ["router.link_latency=2"]
cfg_of = cfg_builder("buffers", *LAT2)


def test_default_policy_is_private():
    """Without buffer_policy the kernel runs private buffers (PR_PRIV = 0) and reserves nothing."""
    cfg = cfg_of("router.buffer_flits=32", "router.num_vcs=2", "traffic.load=0.9")
    assert cfg["router"]["buffer_policy"] == "private"
    prep = prepare(cfg)
    assert prep.rp.private_flits == 0
    part = one_part(prep)
    assert int(part.prm[prm_slots.PR_PRIV]) == 0 and np.all(part.arrays["in_cap"] == 16)
    for t in range(300):
        assert part.advance(t, t + 1) == OK
    assert not part.arrays["cr_res"].any()


def test_capacities_of_a_shared_port():
    """buffer_flits is the port's total; a VC's ring (and credit count) holds its private
    flits plus every shared one; vc_buffer_flits gives num_vcs x that per port, and automatic
    buffers num_vcs x the automatic depth of a private VC."""
    prep = prepare(cfg_of(*SHARED, "router.buffer_flits=256", "router.num_vcs=4",
                          "router.private_vc_flits=5"))
    part = one_part(prep)
    assert np.all(part.arrays["in_cap"] == 256 - 3 * 5) and np.all(part.arrays["cr_cap"] == 241)
    assert int(part.prm[prm_slots.PR_PRIV]) == 5 and prep.rp.port_flits(241) == 256
    prep = prepare(cfg_of(*SHARED, "router.vc_buffer_flits=16", "router.num_vcs=2",
                          "router.packet_size=4"))
    assert prep.rp.private_flits == 4 and np.all(one_part(prep).arrays["in_cap"] == 32 - 4)
    auto = prepare(cfg_of("router.num_vcs=2", "router.link_latency=0"))
    shared = prepare(cfg_of(*SHARED, "router.num_vcs=2", "router.link_latency=0"))
    want = 2 * auto.rp.link_capacity(auto.topo.n_links) - 1
    assert np.array_equal(shared.rp.link_capacity(shared.topo.n_links), want)
    assert shared.rp.endpoint_capacity() == 2 * auto.rp.endpoint_capacity() - 1


def test_shared_accounting_of_one_port():
    """The kernel's rule on one port of 20 flits, 3 VCs, 2 private each: arrived credits are
    absorbed, the shared occupancy is the committed flits beyond the private ones, and the
    rooms add up to the port's free flits."""
    from pdes.kernels.buffers import shared_free, shared_room
    from pdes.kernels.state_table import Credits
    nv, T, p = 3, 20, 2
    cap = T - (nv - 1) * p                                  # one VC's most: 16
    i8 = np.int64
    cred = np.array([cap - 5, cap, cap - 2], np.int16)     # 5, 0, 2 flits sent
    res = np.zeros(nv, np.int16)
    cr_t = np.zeros(cap * nv, np.int32)
    cr_t[0], cr_t[nv] = 10, 20                               # two credits of VC 0 on their way
    head, cnt = np.zeros(nv, np.int16), np.array([2, 0, 0], np.int16)
    deep = np.zeros(nv, np.int64)

    def free(t):
        return shared_free(Credits(cr_t, head, cnt, cred, res), deep, i8(cap), i8(nv), i8(cap),
                           i8(p), i8(0), i8(t))
    f = free(15)                                             # the first credit arrived
    assert cnt[0] == 1 and cred[0] == cap - 4
    assert f == (cap - p) - ((4 - p) + 0 + 0)               # 12 shared flits free
    rooms = [shared_room(cred, res, i8(cap), i8(p), i8(v), i8(f)) for v in range(nv)]
    assert rooms == [12, 14, 12]
    assert 4 + 0 + 2 + rooms[1] == T                         # VC 1 may fill the port
    res[1] = 3                                               # a packet of 3 flits granted on VC 1
    f = free(15)
    assert f == 11 and shared_room(cred, res, i8(cap), i8(p), i8(2), i8(f)) == 11
    assert 4 + 3 + 2 + 11 == T
    f = free(25)                                             # the second credit arrived
    assert cnt[0] == 0 and head[0] == 0 and f == 12


def port_loads(part):
    """(flits committed to every receiving port, per VC) of a one-part state: flits in the
    input VC (in the wire included) and flits queued for it at the sender."""
    a = part.arrays
    nv, nP = part.nv, part.nP
    occ = a["ib_cnt"].astype(np.int64).copy()
    oqcap = part.rp.output_flits
    for P in range(nP):
        D = int(a["out_dest"][P])
        for j in range(int(a["oq_cnt"][P])):
            slot = ((int(a["oq_head"][P]) + j) % oqcap) * nP + P
            if D >= 0:
                occ[D * nv + (int(a["oq_vc"][slot]) >> 1)] += 1      # the VC it leaves on
    return occ.reshape(nP, nv)


@pytest.mark.parametrize("pkt", [1, 4])
def test_shared_rule_is_enforced_every_cycle(pkt):
    """Under a hot spot a VC takes more than an even share of its port (its private flits and
    shared ones), but no VC more than private + shared and no port more than buffer_flits, in
    every cycle; credits stay balanced and reservations end with their packets."""
    total, nv, priv = 24, 2, pkt
    cfg = cfg_of(*SHARED, *HOT, f"router.buffer_flits={total}", f"router.num_vcs={nv}",
                 f"router.packet_size={pkt}", f"router.private_vc_flits={priv}")
    prep = prepare(cfg)
    part = one_part(prep)
    a = part.arrays
    net = part.is_net
    most_vc = most_port = 0
    for t in range(800):
        assert part.advance(t, t + 1) == OK
        occ = port_loads(part)[net]
        most_vc = max(most_vc, int(occ.max()))
        most_port = max(most_port, int(occ.sum(axis=1).max()))
        assert occ.max() <= total - (nv - 1) * priv
        assert occ.sum(axis=1).max() <= total
        res = a["cr_res"].astype(np.int64)
        assert res.min() >= 0 and res.max() <= pkt
        owned = a["ov_owner"][:part.nP * nv] >= 0
        assert not np.any(res[:part.nP * nv][~owned])       # only a held VC has a reservation
        held = a["cred"].astype(np.int64) + a["cr_cnt"].astype(np.int64)
        keys = np.nonzero(np.repeat(np.concatenate([net, np.zeros(part.nE, bool)]), nv))[0]
        flits = port_loads(part).ravel()[(a["out_dest"][keys // nv] * nv + keys % nv)]
        assert np.array_equal(held[keys] + flits, a["cr_cap"].astype(np.int64)[keys // nv])
    assert most_vc > total // nv          # a VC held more than the private policy's share
    assert most_port == total             # and a port filled up


def test_no_shared_flits_gives_the_private_results():
    """private_vc_flits = buffer_flits / num_vcs leaves nothing to share: the results are those
    of private buffers, with minimal and adaptive routing and multi-flit packets."""
    for sets in (["traffic.load=0.9"],
                 ["routing.algorithm=ugal_l", "traffic.pattern=worst_case", "traffic.load=0.6"],
                 ["router.packet_size=4", "traffic.load=0.8", "router.num_vcs=4"]):
        base = cfg_of("router.buffer_flits=32", *sets)
        nv = prepare(base).rp.num_vcs
        private = run_local(base)
        shared = run_local(cfg_of("router.buffer_flits=32", *sets, *SHARED,
                                  f"router.private_vc_flits={32 // nv}"))
        assert private["counters"]["delivered_measured"] > 0
        assert_same_results(private, shared)


def test_sharing_changes_a_saturated_run():
    """With flits to share the saturated results differ from private buffers (the option does
    something)."""
    private = run_local(cfg_of(*SAT, "router.buffer_flits=24", "router.num_vcs=2"))
    shared = run_local(cfg_of(*SAT, *SHARED, "router.buffer_flits=24", "router.num_vcs=2"))
    assert private["counters"]["delivered_measured"] > 0
    assert shared["counters"]["delivered_measured"] > 0
    assert private["counters"] != shared["counters"]


@pytest.mark.parametrize("sets", [
    [*SAT, "router.buffer_flits=24", "router.num_vcs=2"],
    ["routing.algorithm=ugal_l", "traffic.load=0.9", "router.packet_size=2",
     "router.private_vc_flits=2", "router.buffer_flits=40"],
    ["routing.algorithm=ugal_g", "routing.epoch=50", "traffic.pattern=worst_case",
     "traffic.load=0.6", "router.link_latency=0"],
])
def test_split_runs_with_shared_buffers_are_identical(sets):
    """Shared buffers (fixed, automatic; minimal and adaptive routing): 1, 2, 3 and 4 parts give
    the same results."""
    cfg = cfg_of(*SHARED, *sets)
    prep = prepare(cfg)
    whole = run_local(cfg, prep=prep)
    assert whole["counters"]["delivered_measured"] > 0
    R = prep.topo.n_routers
    for owner in (np.arange(R) % 2, (np.arange(R) * 3) // R,
                  np.random.default_rng(5).integers(0, 4, R)):
        assert_same_results(whole, run_local(cfg, owner=owner.astype(np.int32), prep=prep))


def test_checkpoint_with_shared_buffers_restarts_on_other_part_counts(tmp_path):
    """A saturated shared-buffer run with 2-flit packets, checkpointed on 2 parts while packets
    hold reservations, continues on 1 and 3 parts to the uninterrupted run's results."""
    cfg = cfg_of(*SHARED, *SAT, "router.buffer_flits=24", "router.num_vcs=2",
                 "router.packet_size=2")
    prep = prepare(cfg)
    with restarted_on_other_part_counts(cfg, prep, tmp_path / "c.h5") as f:
        assert f["credits/cr_res"][()].max() > 0          # reservations were saved


@pytest.mark.parametrize("sets,msg", [
    (["router.private_vc_flits=4"], "router.private_vc_flits: only with router.buffer_policy"),
    ([*SHARED, "router.private_vc_flits=1", "router.packet_size=2"],
     "router.private_vc_flits: 1 flits, smaller than a packet"),
    ([*SHARED, "router.private_vc_flits=20", "router.buffer_flits=32", "router.num_vcs=2"],
     "router.private_vc_flits: 2 VCs x 20 private flits = 40, more than the 32 flits of a port "
     "(router.buffer_flits)"),
    ([*SHARED, "router.buffer_flits=70000", "router.num_vcs=2"],
     "router.buffer_flits: a VC of a shared buffer may hold 69999 flits"),
])
def test_bad_shared_buffers_are_refused(sets, msg):
    """Impossible combinations raise one ParameterError naming the key."""
    with pytest.raises(ParameterError) as exc:
        prepare(cfg_of(*sets))
    assert str(exc.value).startswith(msg)


def test_cli_bad_policy_is_one_line_exit_2(tmp_path):
    """An unknown policy, and too many private flits, stop the CLI with one line and exit 2."""
    out = tmp_path / "o.h5"
    for sets, start in ((["router.buffer_policy=limited"], "pdes: error: router.buffer_policy: "),
                        ([*SHARED, "router.private_vc_flits=40", "router.buffer_flits=64",
                          "router.num_vcs=2"], "pdes: error: router.private_vc_flits: ")):
        r = run_pdes("run", "-o", str(out), *cli_sets(*sets))
        assert r.returncode == 2 and not out.exists()
        assert r.stderr.startswith(start) and len(r.stderr.strip().splitlines()) == 1


def test_start_report_shows_the_shared_buffers():
    """The start report gives the port's flits and the private ones; the result file's config
    holds the policy."""
    r = run_pdes("run", "--set", "router.buffer_policy=shared",
                 "--set", "router.buffer_flits=256", "--set", "router.num_vcs=4",
                 "--set", "router.private_vc_flits=5", *cli_sets(*LAT2, preset="buffers"))
    assert r.returncode == 0, r.stderr
    assert ("buffers: shared, 256 flits per port: 5 private per VC, up to 241 per VC "
            "(router.buffer_flits, vc_buffer_flits)") in r.stderr


# ----------------------------------------------------------------------------- BookSim
def _bs(tmp_path, **keys):
    anynet_ring(tmp_path)
    return booksim.to_pdes({"topology": "anynet", "network_file": "net.anynet",
                            "routing_function": "min", **keys}, str(tmp_path))


def test_booksim_shared_policy_maps(tmp_path):
    """buffer_policy = shared maps with buf_size as the port's flits and private_buf_size as
    each VC's own (-1: an equal share); without buf_size the port holds num_vcs x
    vc_buf_size."""
    raw, used, _ = _bs(tmp_path, buffer_policy="shared", buf_size=256, num_vcs=4,
                       private_buf_size=5)
    r = C.resolve(raw)["router"]
    assert (r["buffer_policy"], r["buffer_flits"], r["private_vc_flits"]) == ("shared", 256, 5)
    raw, used, _ = _bs(tmp_path, buffer_policy="shared", num_vcs=2, vc_buf_size=8)
    r = C.resolve(raw)["router"]
    assert (r["vc_buffer_flits"], r["private_vc_flits"]) == (8, 1)     # BookSim's default 1
    assert dict((k, g) for k, _, g in used)["router.private_vc_flits"]
    raw, _, _ = _bs(tmp_path, buffer_policy="shared", num_vcs=3, buf_size=100,
                    private_buf_size=-1)
    assert raw["router"]["private_vc_flits"] == 33 and raw["router"]["buffer_flits"] == 100
    raw, _, notes = _bs(tmp_path, private_buf_size=4)
    assert "buffer_policy" not in raw["router"]
    assert any(n.startswith("booksim.private_buf_size: ignored") for n in notes)


@pytest.mark.parametrize("keys,key", [
    ({"buffer_policy": "limited"}, "buffer_policy"),
    ({"buffer_policy": "feedback"}, "buffer_policy"),
    ({"buffer_policy": "shared", "private_bufs": 1}, "private_bufs"),
    ({"buffer_policy": "shared", "private_buf_start_vc": 0}, "private_buf_start_vc"),
    ({"buffer_policy": "shared", "private_buf_end_vc": 3}, "private_buf_end_vc"),
    ({"max_held_slots": 4}, "max_held_slots"),
    ({"buffer_policy": "shared", "private_buf_size": 0}, "private_buf_size"),
    ({"buffer_policy": "shared", "private_buf_size": "{2,3}"}, "private_buf_size"),
    ({"buffer_policy": "shared", "private_buf_size": 9, "num_vcs": 2, "buf_size": 16},
     "private_buf_size"),
])
def test_booksim_other_buffer_keys_are_refused(tmp_path, keys, key):
    """Other policies, and the keys of their private-buffer layout when not at their defaults,
    are refused naming booksim.<key>."""
    with pytest.raises(ParameterError) as exc:
        _bs(tmp_path, **keys)
    assert str(exc.value).startswith(f"booksim.{key}: ")
