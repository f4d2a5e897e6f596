"""BookSim2's random patterns (models.traffic.booksim) and the kernel's weighted choice.

Each pattern's destination distribution is computed here independently, by
enumerating the outcomes of BookSim's draws (``RandomInt(m)``: uniform over
0..m) in ``traffic.cpp``'s rules, and compared exactly with the plan's, then
with the frequencies the kernel draws.
"""
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest

from models.core.errors import ParameterError
from models.core.registry import TRAFFIC
from models.topology import build
from models.traffic import TrafficPlan
from models.traffic.booksim import _groups_of
from pdes.kernels.traffic import KINDS, destination


def fake_topo(E, name="test", **extra):
    return SimpleNamespace(n_endpoints=E, name=name, **extra)


def plan(pattern, topo, seed=0, **params):
    entry = TRAFFIC.get(pattern)
    return entry.func(topo, seed, **entry.resolve(params, "traffic"))


# ------------------------------------------------ BookSim's rules, outcome by outcome
def rand_int(m):
    """The outcomes of BookSim's RandomInt(m), each with its probability."""
    return [(r, Fraction(1, m + 1)) for r in range(m + 1)]


def add(dist, d, p):
    dist[d] = dist.get(d, 0) + p


def booksim_dist(name, N, s, **kw):
    """{destination: probability} of BookSim's pattern ``name`` for source ``s``."""
    out = {}
    if name == "diagonal":
        for r, p in rand_int(2):
            add(out, (s + 1) % N if r == 0 else s, p)
    elif name == "asymmetric":
        half = N // 2
        for r, p in rand_int(1):
            add(out, s % half + (half if r else 0), p)
    elif name == "taper64":
        for r, p in rand_int(1):
            if r:
                for a, pa in rand_int(2):
                    for b, pb in rand_int(2):
                        add(out, (64 + s + 8 * (a - 1) + (b - 1)) % 64, p * pa * pb)
            else:
                for d, pd in rand_int(N - 1):
                    add(out, d, p * pd)
    elif name == "bad_dragon":
        gsn = 2 * kw["k"] * kw["k"]
        for r, p in rand_int(gsn - 1):
            add(out, (r + (s // gsn + 1) * gsn) % N, p)
    elif name == "badperm_yarc":
        K = kw["k"]
        for r, p in rand_int(K - 1):
            add(out, r * K + s // K, p)
    elif name == "hotspot":
        spots, rates = kw["nodes"], kw["rates"]
        if len(spots) == 1:
            return {spots[0]: Fraction(1)}
        for pct, p in rand_int(sum(rates) - 1):
            for h, lim in zip(spots, rates):
                if lim > pct:
                    add(out, h, p)
                    break
                pct -= lim
    elif name == "background":
        # redraw until not excluded: uniform over the others
        keep = [d for d in range(N) if d not in kw["exclude"]]
        for d in keep:
            add(out, d, Fraction(1, len(keep)))
    return out


def plan_dist(p: TrafficPlan, s):
    """{destination: probability} of a plan (weighted or two-choice) for source ``s``."""
    if p.kind == "two_choice":
        out = {}
        add(out, int(p.table[s]), Fraction(1, 2))
        add(out, int(p.table2[s]), Fraction(1, 2))
        return out
    assert p.kind == "weighted"
    lo, hi = int(p.table[s]), int(p.table2[s])
    cum = [0] + [int(x) for x in p.set_b[lo:hi]]
    total = cum[-1]
    return {int(p.set_a[lo + i]): Fraction(cum[i + 1] - cum[i], total) for i in range(hi - lo)}


CASES = [
    ("diagonal", "diagonal", 12, {}, {}),
    ("asymmetric", "asymmetric", 12, {}, {}),
    ("asymmetric", "asymmetric", 13, {}, {}),       # odd N: N/2 rounded down
    ("taper64", "taper64", 64, {}, {}),
    ("bad_dragon", "bad_dragon", 24, {"k": 2}, {"group_endpoints": 8}),
    ("badperm_yarc", "badperm_yarc", 16, {"k": 4}, {"k": 4}),
    ("badperm_yarc", "badperm_yarc", 27, {"k": 3}, {"k": 3}),   # 3-ary 3-cube ids
    ("hotspot", "hotspot_rates", 16, {"nodes": [2, 9, 2, 14], "rates": [1, 3, 2, 5]},
     {"nodes": [2, 9, 2, 14], "rates": [1, 3, 2, 5]}),
    ("hotspot", "hotspot_rates", 16, {"nodes": [5], "rates": [4]}, {"nodes": [5], "rates": [4]}),
    ("background", "background", 10, {"exclude": [0, 3, 4]}, {"exclude": [0, 3, 4]}),
]


@pytest.mark.parametrize("bs,pattern,N,bkw,pkw", CASES)
def test_distribution_equals_booksim_rule(bs, pattern, N, bkw, pkw):
    """Every source's destination distribution is exactly BookSim's (enumerated draws)."""
    p = plan(pattern, fake_topo(N), **pkw)
    assert np.all(p.active == 1)
    for s in range(N):
        assert plan_dist(p, s) == booksim_dist(bs, N, s, **bkw), f"source {s}"


@pytest.mark.parametrize("bs,pattern,N,bkw,pkw", CASES)
def test_kernel_draws_follow_the_distribution(bs, pattern, N, bkw, pkw):
    """The kernel's draws (seed, source, cycle) hit exactly the support, at the rule's
    frequencies (within 5 standard deviations over 4000 draws per source)."""
    p = plan(pattern, fake_topo(N), **pkw)
    z = np.zeros(1, np.int32)
    table2 = z if p.table2 is None else p.table2
    set_a = z if p.set_a is None else p.set_a
    set_b = z if p.set_b is None else p.set_b
    n = 4000
    for s in range(0, N, max(1, N // 6)):
        want = booksim_dist(bs, N, s, **bkw)
        got = np.array([destination(KINDS[p.kind], p.table, table2, set_a, set_b, 0, N, 11, s, c)
                        for c in range(n)])
        dests, counts = np.unique(got, return_counts=True)
        assert set(dests.tolist()) <= set(want), f"source {s}: outside the support"
        for d, prob in want.items():
            f = float(prob)
            k = int(counts[dests == d].sum())
            assert abs(k - n * f) <= 5 * np.sqrt(n * f * (1 - f)) + 1, (s, d, k, n * f)


def test_weighted_draws_do_not_depend_on_the_table_layout():
    """A weighted draw is a pure function of (seed, source, cycle) and the row: the same
    row placed elsewhere in the tables gives the same destinations."""
    p = plan("hotspot_rates", fake_topo(16), nodes=[1, 4, 7], rates=[2, 1, 5])
    shifted_a = np.concatenate([np.array([9, 9], np.int32), p.set_a])
    shifted_b = np.concatenate([np.array([3, 6], np.int32), p.set_b])
    k = KINDS["weighted"]
    for c in range(200):
        a = destination(k, p.table, p.table2, p.set_a, p.set_b, 0, 16, 5, 3, c)
        b = destination(k, p.table + 2, p.table2 + 2, shifted_a, shifted_b, 0, 16, 5, 3, c)
        assert a == b


def test_bad_dragon_defaults_to_the_dragonfly_groups():
    """On a pdes dragonfly, bad_dragon's groups are the topology's (a*p endpoints each)."""
    t = build("dragonfly", {"h": 2})
    groups = int(np.max(t.group)) + 1
    G = t.n_endpoints // groups
    p = plan("bad_dragon", t)
    g_ep = np.asarray(t.group)[t.endpoint_router]
    for s in (0, G + 1, t.n_endpoints - 1):
        assert set(plan_dist(p, s)) == set(np.nonzero(g_ep == (g_ep[s] + 1) % groups)[0].tolist())


@pytest.mark.parametrize("pattern,N,params,key", [
    ("taper64", 32, {}, "traffic.pattern"),
    ("bad_dragon", 24, {}, "traffic.group_endpoints"),       # no groups on this topology
    ("bad_dragon", 24, {"group_endpoints": 7}, "traffic.group_endpoints"),
    ("bad_dragon", 24, {"group_endpoints": 24}, "traffic.group_endpoints"),
    ("badperm_yarc", 20, {}, "traffic.k"),                   # 20 is not a square
    ("badperm_yarc", 16, {"k": 8}, "traffic.k"),             # 7*8 + 1 >= 16
    ("hotspot_rates", 16, {"nodes": [16]}, "traffic.nodes"),
    ("hotspot_rates", 16, {"nodes": [1], "rates": [1, 2]}, "traffic.rates"),
    ("hotspot_rates", 16, {"nodes": [1], "rates": [0]}, "traffic.rates"),
    ("background", 4, {"exclude": [0, 1, 2, 3]}, "traffic.exclude"),
    ("background", 4, {"exclude": [4]}, "traffic.exclude"),
])
def test_bad_parameters_are_refused(pattern, N, params, key):
    """Parameters outside a pattern's rule are refused with the key named."""
    with pytest.raises(ParameterError) as exc:
        plan(pattern, fake_topo(N), **params)
    assert str(exc.value).startswith(f"{key}: ")


def test_defaults_that_do_not_fit_are_named_as_defaults():
    """A refusal of a parameter the user left at its default says so (and asks for it)."""
    with pytest.raises(ParameterError, match=r"^traffic\.k: required here \(its default is the "
                       r"square root of the endpoint count, and 20 is not a square\)$"):
        plan("badperm_yarc", fake_topo(20))
    one_group = build("hyperx", {"sizes": [4], "p": 2})       # every router in one rack
    assert _groups_of(one_group) == 8
    with pytest.raises(ParameterError, match=r"^traffic\.group_endpoints: must divide the 8 "
                       r"endpoints into at least 2 groups \(the topology's groups hold 8 each: "
                       r"give it\)$"):
        plan("bad_dragon", one_group)


def test_negative_hotspot_is_drawn_from_the_seed():
    """hotspot_rates' negative node (BookSim's default) is one endpoint drawn from the seed."""
    a, b = plan("hotspot_rates", fake_topo(1000), 1), plan("hotspot_rates", fake_topo(1000), 1)
    c = plan("hotspot_rates", fake_topo(1000), 2)
    assert a.set_a.size == 1 and np.array_equal(a.set_a, b.set_a)
    assert not np.array_equal(a.set_a, c.set_a)


def test_hotspot_rates_run_delivers_in_proportion(tmp_path):
    """A run of hotspot_rates delivers only to the hot spots, in proportion to their rates,
    and the same on 1 and 3 parts (the hot spot of rate 3 takes 0.9 flits per cycle)."""
    from pdes.build import prepare
    from pdes.engine import run_local
    from tests.helpers import assert_same_results, make_cfg
    cfg = make_cfg("topology.q=5", "traffic.pattern=hotspot_rates", "traffic.nodes=[3,150]",
                   "traffic.rates=[1,3]", "traffic.load=0.006", preset="engine")
    prep = prepare(cfg)
    res = run_local(cfg, prep=prep)
    got = np.asarray(res["endpoint_delivered"])
    assert got.sum() == got[3] + got[150] and got.sum() > 400
    f = got[150] / got.sum()
    assert abs(f - 0.75) < 5 * np.sqrt(0.75 * 0.25 / got.sum())
    R = prep.topo.n_routers
    assert_same_results(res, run_local(cfg, owner=(np.arange(R) * 3) // R, prep=prep))
