"""Buffers: a capacity per input port (from its link, or fixed by the user), enforced by credits,
and flit storage whose memory follows the flits present."""
import h5py
import numpy as np
import pytest

from pdes.comm import LocalGroup
from pdes.build import prepare
from pdes.engine import run_local
from pdes.loop import Engine
from pdes.sizing import MIN_AUTO_VC_FLITS, buffer_note
from models.core import params as prm_slots
from models.core.record import OK
from pdes.timing import slot_round_trip
from tests.helpers import (assert_same_results, cfg_builder, cli_sets, one_part, phase_sets,
                           restarted_on_other_part_counts, run_pdes)

FAST = phase_sets("buffers")
AUTO = ["router.buffer_flits=0", "router.vc_buffer_flits=0"]
cfg_of = cfg_builder("buffers")


def test_automatic_depth_covers_each_ports_own_link():
    """With automatic buffers every VC of a port holds max(packet, 16, 2 L + slot round trip)
    flits for its link's latency L (the endpoint channel's for injection ports): a port on a
    long link gets a deeper VC than one on a short link."""
    cfg = cfg_of(*AUTO, "router.packet_size=2")
    prep = prepare(cfg)
    r = cfg["router"]
    lat = np.asarray(prep.link_latency, np.int64)
    fixed = slot_round_trip(r)
    m = max(2, MIN_AUTO_VC_FLITS)
    want = np.maximum(2 * lat + fixed, m) + m
    assert np.array_equal(prep.rp.link_capacity(prep.topo.n_links), want)
    assert prep.rp.endpoint_capacity() == max(2 * r["endpoint_latency"] + fixed, m) + m
    assert lat.max() > lat.min() and want.max() > want.min()       # the layout's cables differ
    part = one_part(prep)
    a = part.arrays
    net = part.is_net
    link = part.out_channel[net] // 2
    assert np.array_equal(a["in_cap"][net], want[link])
    assert np.all(a["in_cap"][~net] == prep.rp.endpoint_capacity())
    long_, short = np.argmax(lat[link]), np.argmin(lat[link])
    assert a["in_cap"][net][long_] > a["in_cap"][net][short]
    # a sender's credits count the input VCs at the other end of its link
    nv = part.nv
    assert np.array_equal(a["cred"].reshape(-1, nv)[:part.nP][net], np.repeat(want[link], nv)
                          .reshape(-1, nv))
    assert buffer_note(prep) == ""              # automatic buffers cover every link


def test_vc_buffer_flits_gives_every_vc_that_depth():
    """router.vc_buffer_flits is the depth of every VC of every port; buffer_flits that agrees
    with it (buffer_flits // num_vcs) is accepted."""
    for sets in (["router.vc_buffer_flits=24"],
                 ["router.vc_buffer_flits=24", "router.buffer_flits=49", "router.num_vcs=2"]):
        prep = prepare(cfg_of(*sets))
        part = one_part(prep)
        assert np.all(part.arrays["in_cap"] == 24) and np.all(part.arrays["cr_cap"] == 24)
        assert prep.rp.vc_flits == 24 and int(part.prm[prm_slots.PR_HOT]) == 24


def test_inconsistent_buffer_keys_are_refused(tmp_path):
    """buffer_flits and vc_buffer_flits that disagree: one line naming vc_buffer_flits, exit 2."""
    out = tmp_path / "o.h5"
    r = run_pdes("run", "--set", "router.buffer_flits=64", "--set", "router.vc_buffer_flits=16",
                 "--set", "router.num_vcs=2", "-o", str(out))
    assert r.returncode == 2 and not out.exists()
    assert r.stderr.startswith("pdes: error: router.vc_buffer_flits: 16 flits per VC, but "
                               "router.buffer_flits = 64 over 2 VCs gives 32")
    assert len(r.stderr.strip().splitlines()) == 1


def test_buffer_note_only_when_the_user_fixes_buffers(tmp_path):
    """Fixed buffers below a link's round trip are reported (start, --quiet stderr, result file);
    automatic ones on the same links are not."""
    long_links = [*FAST, "router.link_latency=40"]
    auto = prepare(cfg_of(*long_links[len(FAST):], *AUTO))
    assert buffer_note(auto) == ""
    fixed = prepare(cfg_of("router.link_latency=40", "router.vc_buffer_flits=8"))
    assert buffer_note(fixed).startswith("note: router.vc_buffer_flits = 8 flits per VC")
    assert "vc_buffer_flits >= 84" in buffer_note(fixed)       # 2 * 40 + 4
    out = tmp_path / "o.h5"
    sets = [x for s in long_links for x in ("--set", s)]
    r = run_pdes("run", "--quiet", *sets, "--set", "router.vc_buffer_flits=8", "-o", str(out))
    assert r.returncode == 0 and r.stderr.count("note: router.vc_buffer_flits") == 1
    with h5py.File(out) as f:
        assert f.attrs["buffer_note"].startswith("note: router.vc_buffer_flits = 8")
    r = run_pdes("run", "--quiet", *sets, *cli_sets(*AUTO), "-o", str(out))
    assert r.returncode == 0 and "note:" not in r.stderr
    with h5py.File(out) as f:
        assert f.attrs["buffer_note"] == ""
        assert f["run"].attrs["peak_rss_mb"] > 10
    r = run_pdes("run", *sets, *cli_sets(*AUTO))
    assert "buffers: 32 to 100 flits per VC (automatic" in r.stderr
    assert "peak memory" in r.stdout


def credit_balance(part):
    """Per (sender, VC) of a one-part state: credits held + credits on their way back + flits
    in the sender's output queue on that VC + flits in the receiving input VC."""
    a = part.arrays
    nv, nP, nE = part.nv, part.nP, part.nE
    nK = (nP + nE) * nv
    total = a["cred"].astype(np.int64) + a["cr_cnt"].astype(np.int64)
    oqcap = part.rp.output_flits
    for P in range(nP):
        for j in range(int(a["oq_cnt"][P])):
            slot = ((int(a["oq_head"][P]) + j) % oqcap) * nP + P
            total[P * nv + (int(a["oq_vc"][slot]) >> 1)] += 1      # the VC it leaves on
    dest = np.concatenate([a["out_dest"], a["ep_port"]])       # receiving port of each sender
    keys = np.nonzero(np.repeat(dest >= 0, nv))[0]
    recv = dest[keys // nv] * nv + keys % nv
    total[keys] += a["ib_cnt"][recv]
    return total[keys], a["cr_cap"].astype(np.int64)[keys // nv], nK


def test_capacity_is_enforced_every_cycle():
    """Saturated, with 2-flit VCs on some links and deep ones on others: no VC ever holds more
    than its port's capacity, and every credit is accounted for (held, returning, or a flit
    downstream) in every cycle."""
    cfg = cfg_of(*AUTO, "traffic.load=0.95")
    prep = prepare(cfg)
    caps = prep.rp.link_capacity(prep.topo.n_links).copy()
    caps[::3] = 2                                          # tiny buffers on a third of the links
    prep.rp.link_vc_flits = caps
    part = one_part(prep)
    a = part.arrays
    cap_iv = np.repeat(a["in_cap"].astype(np.int64), part.nv)
    deep = 0
    for t in range(600):
        assert part.advance(t, t + 1) == OK
        cnt = a["ib_cnt"].astype(np.int64)
        assert np.all(cnt <= cap_iv)
        deep = max(deep, int(cnt.max()))
        held, cap, _ = credit_balance(part)
        assert np.array_equal(held, cap)
    assert deep > int(part.prm[prm_slots.PR_HOT])              # rings used their deep slots
    assert np.any((cnt == 2) & (cap_iv == 2))              # and the tiny VCs filled


@pytest.mark.parametrize("load", [0.5, 0.95])
def test_split_runs_with_per_port_capacities_are_identical(load):
    """Automatic buffers on the layout's links: 1, 2, 3 and 4 parts give the same results."""
    cfg = cfg_of(*AUTO, f"traffic.load={load}")
    prep = prepare(cfg)
    whole = run_local(cfg, prep=prep)
    R = prep.topo.n_routers
    for owner in (np.arange(R) % 2, (np.arange(R) * 3) // R,
                  np.random.default_rng(3).integers(0, 4, R)):
        assert_same_results(whole, run_local(cfg, owner=owner.astype(np.int32), prep=prep))


def test_checkpoint_with_per_port_capacities_restarts_on_other_part_counts(tmp_path):
    """A saturated run with automatic buffers, checkpointed on 2 parts, continues on 1 and 3
    parts to the uninterrupted run's results."""
    cfg = cfg_of(*AUTO, "traffic.load=0.95")
    prep = prepare(cfg)
    with restarted_on_other_part_counts(cfg, prep, tmp_path / "c.h5") as f:
        assert f["input_vcs/ib_cnt"][()].max() > MIN_AUTO_VC_FLITS     # deep slots saved


def test_record_pool_follows_the_flits_present():
    """At low load only the records ever in use are allocated: the pool stays far below every
    buffer full, and every record in use or freed was taken from its low end."""
    cfg = cfg_of(*AUTO, "traffic.load=0.05", "topology.q=7")
    prep = prepare(cfg)
    part = one_part(prep)
    Engine(prep, LocalGroup([part]), 1, 0).run()
    a = part.arrays
    used = int(a["rec_next"][0])
    assert 0 < used < part.max_records // 20
    assert a["rec"].shape[0] <= max(2 * used + part.records_per_cycle * 100, 1024)
    assert int(a["rec_top"][0]) <= used
