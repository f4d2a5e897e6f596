"""The on/off injection process (traffic.injection = "on_off", BookSim2's OnOffInjectionProcess):
its rates, its chain, the creation cycles the source queue finds again, and runs that give the
configured load, the same results on any part count and after a restart."""
from collections import namedtuple

import numpy as np
import pytest

from models.core import params as P
from models.core.errors import ParameterError
from models.core.rng import threshold53
from models.traffic.injection import on_off_rates
from pdes import config as C
from pdes.build import prepare
from pdes.engine import run_local
from pdes.kernels.injection import on_off_cycle, on_off_draw, on_off_replay
from tests.helpers import (assert_same_results, make_cfg, restarted_on_other_part_counts,
                           run_pdes)


@pytest.mark.parametrize("rate,given,want", [
    (0.1, (0.5, 0.5, -1.0), (0.5, 0.5, 0.2)),         # BookSim's defaults: r1 = 2 p
    (0.1, (-1.0, 0.5, 0.3), (0.25, 0.5, 0.3)),        # alpha = beta p / (r1 - p)
    (0.1, (0.5, -1.0, 0.3), (0.5, 1.0, 0.3)),         # beta = alpha (r1 - p) / p
    (0.2, (0.05, 0.2, -1.0), (0.05, 0.2, 1.0)),       # r1 = p (alpha + beta) / alpha
])
def test_rates_derived_as_booksim(rate, given, want):
    """The negative parameter is derived from the packet rate by BookSim's formulas, and the
    source then offers that rate: r1 alpha / (alpha + beta) = p."""
    got = on_off_rates(rate, *given)
    assert got == pytest.approx(want)
    a, b, r1 = got
    assert r1 * a / (a + b) == pytest.approx(rate)


@pytest.mark.parametrize("sets,key", [
    (["traffic.burst_r1=0.5"], "burst_r1"),                        # none negative
    (["traffic.burst_alpha=-1", "traffic.burst_beta=-1"], "burst_beta"),   # two negative
    (["traffic.burst_alpha=1.5"], "burst_alpha"),                 # not a probability
    (["traffic.burst_alpha=0"], "burst_alpha"),                   # never turns on
    (["traffic.load=0.6"], "burst_r1"),                           # derived r1 = 1.2
    (["traffic.burst_alpha=-1", "traffic.burst_r1=0.3"], "burst_r1"),   # r1 <= p = 0.4
    (["traffic.burst_beta=-1", "traffic.burst_r1=0.9", "traffic.burst_alpha=1",
      "traffic.load=0.3"], "burst_beta"),                         # derived beta = 2
])
def test_bad_on_off_values_are_refused(sets, key):
    """Every bad on/off value is refused naming its key."""
    with pytest.raises(ParameterError) as exc:
        C.resolve({}, ["traffic.injection=on_off", "traffic.load=0.4", *sets])
    assert str(exc.value).startswith(f"traffic.{key}: ")


def test_burst_keys_need_on_off():
    """A burst key with the Bernoulli process is refused (it would change nothing)."""
    with pytest.raises(ParameterError, match=r"^traffic\.burst_beta: only with traffic\.injection"):
        C.resolve({}, ["traffic.burst_beta=0.1"])
    with pytest.raises(ParameterError, match=r"^traffic\.injection: "):
        C.resolve({}, ["traffic.injection=poisson"])


def test_cli_bad_on_off_value_exit_2_one_line(tmp_path):
    """`pdes run` with a bad on/off value prints one `pdes: error:` line and exits 2."""
    r = run_pdes("run", "--set", "traffic.injection=on_off", "--set", "traffic.burst_r1=0.5",
                 cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pdes: error: traffic.burst_r1: exactly one")


def _prm(alpha, beta):
    prm = np.zeros(P.NPRM, np.int64)
    prm[P.PR_ALPHA_THR], prm[P.PR_BETA_THR] = threshold53(alpha), threshold53(beta)
    return prm


def test_chain_on_fraction_burst_length_and_rate():
    """Over a long run the chain is on alpha / (alpha + beta) of the cycles, its on-periods
    last 1 / beta cycles on average (BookSim: on -> off with probability beta per cycle) and
    it creates r1 packets per on-cycle."""
    alpha, beta, r1 = 0.05, 0.2, 0.8
    a_t, b_t, r_t = threshold53(alpha), threshold53(beta), threshold53(r1)
    T = 200_000
    state, on, created, periods, run = -1, 0, 0, [], 0
    for c in range(T):
        state, g = on_off_cycle(state, 3, 17, c, a_t, b_t, r_t)
        on += state
        created += g
        if state:
            run += 1
        elif run:
            periods.append(run)
            run = 0
    assert on / T == pytest.approx(alpha / (alpha + beta), rel=0.05)
    assert np.mean(periods) == pytest.approx(1 / beta, rel=0.05)
    assert created / T == pytest.approx(r1 * alpha / (alpha + beta), rel=0.05)


Srcs = namedtuple("Srcs", ["ep_onoff", "ep_onoff_gen", "ep_pending", "ep_cur_left"])


def test_queued_packets_get_their_creation_cycles_back():
    """The source queue holds counts only: starting a queued packet finds again exactly the
    cycle its on/off draws created it, whatever happened between (FIFO order)."""
    prm = _prm(0.1, 0.3)
    thr = threshold53(0.6)
    srcs = Srcs(np.full(1, -1, np.int8), np.full(1, -1, np.int8), np.zeros(1, np.int64),
                np.zeros(1, np.int32))
    rng = np.random.default_rng(4)
    created, started, next_gen = [], [], 0
    for t in range(5000):
        idle = srcs.ep_pending[0] == 0 and srcs.ep_cur_left[0] == 0
        g = on_off_draw(t, 0, 9, 5, thr, prm, srcs)
        if g:
            created.append(t)
            if idle:
                next_gen = t
            srcs.ep_pending[0] += 1
        if srcs.ep_pending[0] > 0 and rng.random() < 0.25:    # the injection port frees up
            c = on_off_replay(next_gen, 0, 9, 5, thr, prm, srcs)
            next_gen = c + 1
            srcs.ep_pending[0] -= 1
            started.append(c)
            srcs.ep_cur_left[0] = 1 if rng.random() < 0.5 else 0   # a packet still going out
        elif srcs.ep_cur_left[0] and rng.random() < 0.5:
            srcs.ep_cur_left[0] = 0
    assert len(started) > 200 and started == created[:len(started)]


# on a third of the cycles, in bursts of 50 cycles at 0.9 flits per cycle
BURSTY = ("topology.q=5", "router.packet_size=4", "traffic.load=0.3", "traffic.injection=on_off",
          "traffic.burst_alpha=0.01", "traffic.burst_beta=0.02")


def test_run_offers_the_configured_load():
    """An on/off run offers the configured load over the window, like a Bernoulli one, and its
    bursts make packets wait longer at the source."""
    cfg = make_cfg(*BURSTY, "measure.measure_cycles=3000", preset="engine")
    s = run_local(cfg)["summary"]
    assert s["offered_load"] == pytest.approx(0.3, rel=0.03)
    assert s["accepted_load"] == pytest.approx(0.3, rel=0.03)
    b = run_local(make_cfg(*BURSTY[:3], "measure.measure_cycles=3000", preset="engine"))["summary"]
    assert s["packet_latency_mean"] > b["packet_latency_mean"] + 3     # 42.6 vs 37.6


def test_same_results_on_any_part_count():
    """On/off runs split into 2, 3 and 4 parts give the results of the whole, bit for bit."""
    cfg = make_cfg(*BURSTY, "router.packet_size=2", "traffic.burst_alpha=0.05", preset="engine")
    prep = prepare(cfg)
    whole = run_local(cfg, prep=prep)
    R = prep.topo.n_routers
    for owner in (np.arange(R) % 2, (np.arange(R) * 3) // R,
                  np.random.default_rng(7).integers(0, 4, R)):
        assert_same_results(whole, run_local(cfg, owner=owner.astype(np.int32), prep=prep))


def test_restart_keeps_the_on_off_state(tmp_path):
    """A checkpoint saves each endpoint's on/off state: the run continued on 1 and 3 parts
    gives the uninterrupted run's results."""
    cfg = make_cfg(*BURSTY, preset="engine")
    prep = prepare(cfg)
    with restarted_on_other_part_counts(cfg, prep, tmp_path / "c.h5") as f:
        on = np.asarray(f["endpoints/ep_onoff"])
        assert on.size == prep.topo.n_endpoints and set(np.unique(on)) == {0, 1}
