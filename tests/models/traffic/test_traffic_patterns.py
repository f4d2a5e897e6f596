"""Synthetic traffic patterns, worst cases and process placement."""
import inspect
from functools import lru_cache

import numpy as np
import pytest

from models.core.errors import ParameterError
from models.metrics import distance_matrix
from models.placement import place
from models.core.registry import TRAFFIC
from models.topology import build
from models.traffic import TrafficPlan
from models.traffic.patterns import bit_destinations, tornado_offset
from models.topologies.slimfly import slimfly_router_pairs
from models.traffic.worst_case import WORST


@lru_cache(maxsize=None)
def _cached(name, items):
    return build(name, {k: list(v) if isinstance(v, tuple) else v for k, v in items})


def topo(name, **params):
    return _cached(name, tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                                      for k, v in params.items())))


def plan(pattern, t, seed=0, **params):
    entry = TRAFFIC.get(pattern)
    return entry.func(t, seed, **entry.resolve(params, "traffic"))


def same_plan(a: TrafficPlan, b: TrafficPlan):
    assert a.kind == b.kind and a.frac == b.frac and a.description == b.description
    for f in ("table", "table2", "set_a", "set_b", "sources"):
        x, y = getattr(a, f), getattr(b, f)
        assert (x is None) == (y is None)
        if x is not None:
            assert np.array_equal(x, y)


def is_perm_on_active(p: TrafficPlan):
    act = p.table >= 0
    return np.array_equal(np.sort(p.table[act]), np.nonzero(act)[0])


def bits_of(x, b):
    return [(x >> i) & 1 for i in range(b)]


def from_bits(bits):
    return sum(v << i for i, v in enumerate(bits))


SF5 = dict(name="slimfly", q=5)          # 50 routers, p = 4, E = 200
GENERIC = ("uniform", "randperm", "shift", "bitcomp", "bitrev", "shuffle", "transpose",
           "shift_half", "tornado", "neighbor", "blended", "hotspot", "subset_uniform",
           "worst_case")


# ================================================================= generic rules
@pytest.mark.parametrize("pattern", GENERIC)
def test_pattern_is_pure_function_of_topology_and_seed(pattern):
    """Building a pattern twice with the same topology and seed gives the same plan."""
    t = topo(**SF5)
    same_plan(plan(pattern, t, 7), plan(pattern, t, 7))


@pytest.mark.parametrize("pattern", ["randperm", "bitrev", "shift_half", "subset_uniform"])
def test_random_placement_depends_on_seed_only(pattern):
    """With random placement (or randperm) the plan changes with the seed and only with it."""
    t = topo(**SF5)
    kw = {} if pattern == "randperm" else {"placement": "random", "procs": 64}
    a, b, c = plan(pattern, t, 1, **kw), plan(pattern, t, 1, **kw), plan(pattern, t, 2, **kw)
    same_plan(a, b)
    field = "set_a" if a.kind == "mix" else "table"
    assert not np.array_equal(getattr(a, field), getattr(c, field))


def test_every_pattern_registered_with_its_parameters():
    """Every registered pattern's declared parameters are keyword arguments of its function."""
    for entry in TRAFFIC:
        sig = inspect.signature(entry.func)
        assert list(sig.parameters)[:2] == ["topo", "seed"], entry.name
        for p in entry.params:
            assert p.name in sig.parameters, (entry.name, p.name)
    for name in GENERIC + tuple(f"worst_{n}" for n in WORST):
        assert name in TRAFFIC


@pytest.mark.parametrize("pattern", ["bitcomp", "randperm", "shift", "tornado", "neighbor",
                                     "worst_case"])
def test_permutations_are_permutations(pattern):
    """Permutation patterns map the active endpoints one-to-one onto themselves."""
    p = plan(pattern, topo(**SF5), 3)
    assert p.kind == "table" and p.table.dtype == np.int32
    assert is_perm_on_active(p)


# ================================================================== bit patterns
@pytest.mark.parametrize("kind", ["bitcomp", "bitrev", "shuffle", "transpose"])
def test_bit_destinations_follow_000_formulas(kind):
    """bitcomp d_i=~s_i, bitrev d_i=s_(b-1-i), shuffle d_i=s_(i-1 mod b), transpose swaps halves."""
    b = 6
    got = bit_destinations(kind, b)
    for s in range(1 << b):
        sb = bits_of(s, b)
        if kind == "bitcomp":
            want = [1 - sb[i] for i in range(b)]
        elif kind == "bitrev":
            want = [sb[b - 1 - i] for i in range(b)]
        elif kind == "shuffle":
            want = [sb[(i - 1) % b] for i in range(b)]
        else:
            want = [sb[(i + b // 2) % b] for i in range(b)]
        assert got[s] == from_bits(want), (kind, s)
    assert np.array_equal(np.sort(got), np.arange(1 << b))


@pytest.mark.parametrize("kind, active", [("bitcomp", 128), ("bitrev", 128), ("shuffle", 128),
                                          ("transpose", 64)])
def test_bit_patterns_use_largest_power_of_two_and_idle_the_rest(kind, active):
    """On E=200 bit patterns use endpoints 0..127 (transpose, odd b=7: 0..63); the rest are -1."""
    p = plan(kind, topo(**SF5))
    assert np.all(p.table[:active] >= 0) and np.all(p.table[active:] == -1)
    assert np.array_equal(p.table[:active], bit_destinations(kind, active.bit_length() - 1))
    assert p.active.sum() == active and is_perm_on_active(p)


def test_bit_pattern_on_random_placement_maps_processes():
    """With placement, process s on endpoint ep[s] sends to the endpoint of process f(s)."""
    t = topo(**SF5)
    p = plan("bitrev", t, 5, placement="random", procs=32)
    ep = place(t, 32, "random", 5)
    assert np.array_equal(p.table[ep], ep[bit_destinations("bitrev", 5)])
    assert (p.table >= 0).sum() == 32


def test_bit_pattern_procs_rules():
    """procs must be a power of two (transpose: of four) and fit the network."""
    t = topo(**SF5)
    for kind, procs in (("bitcomp", 48), ("transpose", 32), ("bitrev", 256), ("shuffle", 1)):
        with pytest.raises(ParameterError, match=r"^traffic\.(procs|placement)"):
            plan(kind, t, procs=procs)
    assert plan("transpose", t, procs=16).active.sum() == 16


# =================================================================== shift_half
def test_shift_half_two_choices_as_000():
    """shift_half: d = s mod N/2 or (s mod N/2) + N/2 with probability 1/2 (kind two_choice)."""
    p = plan("shift_half", topo(**SF5))
    n = 128
    s = np.arange(n)
    assert p.kind == "two_choice"
    assert np.array_equal(p.table[:n], s % (n // 2))
    assert np.array_equal(p.table2[:n], s % (n // 2) + n // 2)
    assert np.all(p.table[n:] == -1) and np.all(p.table2[n:] == -1)
    assert p.active.sum() == n
    q = plan("shift_half", topo(**SF5), procs=200)
    assert np.array_equal(q.table2, np.arange(200) % 100 + 100)
    with pytest.raises(ParameterError, match=r"^traffic\.procs"):
        plan("shift_half", topo(**SF5), procs=7)


# ============================================================== tornado/neighbor
def test_tornado_on_endpoints_and_per_dimension():
    """tornado: e -> e+ceil(N/2)-1 on endpoints; x_i -> x_i+ceil(S_i/2)-1 per dim on torus."""
    t = topo(**SF5)
    assert np.array_equal(plan("tornado", t).table, (np.arange(200) + 99) % 200)
    assert [tornado_offset(s) for s in (1, 2, 3, 4, 5, 8)] == [0, 1, 1, 1, 2, 3]
    tt = topo("torus", dims=[5, 8], p=2)
    tab = plan("tornado", tt).table
    r = tt.endpoint_router
    x, y = r % 5, r // 5
    dr = tab // 2
    assert np.array_equal(dr % 5, (x + 2) % 5) and np.array_equal(dr // 5, (y + 3) % 8)
    assert np.array_equal(tab % 2, np.arange(tt.n_endpoints) % 2)


def test_neighbor_next_router_or_plus_one_per_dimension():
    """neighbor: same-index endpoint of router r+1 (SF); +1 in every dimension on torus."""
    t = topo(**SF5)
    assert np.array_equal(plan("neighbor", t).table, (np.arange(200) + 4) % 200)
    tt = topo("torus", dims=[3, 4], p=1)
    tab = plan("neighbor", tt).table
    x, y = np.arange(12) % 3, np.arange(12) // 3
    assert np.array_equal(tab, (x + 1) % 3 + 3 * ((y + 1) % 4))
    ft = topo("fattree", k=4)                    # endpoints only on the 8 edge routers
    tab = plan("neighbor", ft).table
    assert np.array_equal(tab, (np.arange(16) + 2) % 16)


# ================================================================ hotspot/blend
def test_blended_sets_match_004():
    """blended: kind mix, I/O = last block, compute = the rest, frac 0.1, only compute inject."""
    t = topo(**SF5)
    p = plan("blended", t)
    assert p.kind == "mix" and p.frac == pytest.approx(0.10)
    assert np.array_equal(p.set_b, np.arange(190, 200))
    assert np.array_equal(p.set_a, np.arange(190))
    assert np.array_equal(np.nonzero(p.active)[0], np.arange(190))
    q = plan("blended", t, 3, io_endpoints=8, io_placement="random", frac=0.25)
    assert q.set_b.size == 8 and np.all(np.diff(q.set_b) > 0)
    assert np.array_equal(np.union1d(q.set_a, q.set_b), np.arange(200))
    assert np.intersect1d(q.set_a, q.set_b).size == 0 and q.frac == 0.25
    with pytest.raises(ParameterError, match=r"^traffic\.io_endpoints"):
        plan("blended", t, io_endpoints=200)
    with pytest.raises(ParameterError, match=r"^traffic\.frac"):
        plan("blended", t, frac=1.5)


def test_hotspot_everyone_injects():
    """hotspot: kind mix, set_a = all endpoints, set_b = evenly spread hot spots, all inject."""
    t = topo(**SF5)
    p = plan("hotspot", t, hotspots=4)
    assert p.kind == "mix" and p.frac == pytest.approx(0.10)
    assert np.array_equal(p.set_b, [25, 75, 125, 175])
    assert np.array_equal(p.set_a, np.arange(200)) and p.active.sum() == 200


def test_subset_uniform_is_a_partial_machine_job():
    """subset_uniform: uniform mix over the placed processes only, frac 0."""
    t = topo(**SF5)
    p = plan("subset_uniform", t, 4, procs=50, placement="random")
    assert p.kind == "mix" and p.frac == 0.0 and p.set_b.size == 0
    assert np.array_equal(p.set_a, np.sort(place(t, 50, "random", 4)))
    assert p.active.sum() == 50


# ==================================================================== placement
def test_placement_linear_random_file(tmp_path):
    """linear is 0..n-1, random is a seeded subset without repeats, file is read in order."""
    t = topo(**SF5)
    assert np.array_equal(place(t, 10), np.arange(10))
    r = place(t, 100, "random", 9)
    assert r.dtype == np.int32 and np.unique(r).size == 100 and r.max() < 200
    assert np.array_equal(r, place(t, 100, "random", 9))
    assert not np.array_equal(r, place(t, 100, "random", 10))
    f = tmp_path / "map.txt"
    f.write_text("# rank -> endpoint\n5\n\n7  # two\n199\n")
    assert place(t, None, "file", path=str(f)).tolist() == [5, 7, 199]
    assert place(t, 2, "file", path=str(f)).tolist() == [5, 7]


@pytest.mark.parametrize("text, n, match", [
    ("1\n2\n1\n", None, "more than once"),
    ("1\n200\n", None, "outside 0..199"),
    ("1\nx\n", None, "expected one endpoint id"),
    ("1\n2\n", 3, "do not fit"),
    ("", None, "lists no endpoint"),
])
def test_placement_file_errors(tmp_path, text, n, match):
    """A bad placement file stops with a ParameterError naming the key."""
    f = tmp_path / "map.txt"
    f.write_text(text)
    with pytest.raises(ParameterError, match=r"^traffic\.placement") as ei:
        place(topo(**SF5), n, "file", path=str(f))
    assert match in str(ei.value)


def test_placement_count_and_name_errors(tmp_path):
    """Too many processes, an unknown strategy or a missing file are refused."""
    t = topo(**SF5)
    with pytest.raises(ParameterError, match="201 processes do not fit"):
        place(t, 201)
    with pytest.raises(ParameterError, match="unknown placement"):
        place(t, 4, "zigzag")
    with pytest.raises(ParameterError, match="cannot read"):
        place(t, 4, "file", path=str(tmp_path / "missing.txt"))


# =================================================================== worst cases
def directed_link_loads(t, table, pick):
    """Flows per directed router link with one fixed minimal path per router pair."""
    d = distance_matrix(t)
    adj = d == 1
    load = np.zeros((t.n_routers, t.n_routers), dtype=np.int64)
    src = np.nonzero(table >= 0)[0]
    rs, rd = t.endpoint_router[src], t.endpoint_router[table[src]]
    for a, b in zip(rs.tolist(), rd.tolist()):
        if d[a, b] == 1:
            load[a, b] += 1
        elif d[a, b] == 2:
            m = pick(np.nonzero(adj[a] & adj[b])[0])
            load[a, m] += 1
            load[m, b] += 1
        else:
            assert a == b or d[a, b] <= 2
    return load


@pytest.mark.parametrize("q", [5, 7])
def test_slimfly_worst_case_max_link_load_is_2p(q):
    """SF worst case: under minimal routing the most loaded link carries exactly 2p flows."""
    t = topo("slimfly", q=q)
    p = int(t.endpoints[0])
    wc = plan("worst_case", t)
    assert is_perm_on_active(wc)
    for pick in (np.min, np.max):            # any fixed choice among minimal paths
        load = directed_link_loads(t, wc.table, pick)
        assert load.max() == 2 * p
    partner, quads = slimfly_router_pairs(t)
    assert len(quads) >= t.n_routers // 5
    assert np.all(partner[partner[partner >= 0]] == np.nonzero(partner >= 0)[0])   # involution


def test_slimfly_worst_case_chains_overlap_as_fig5():
    """Each SF chain (A,B,C,D) pairs A<->C and B<->D at distance 2 through B-C, with sole routes."""
    t = topo("slimfly", q=7)
    d = distance_matrix(t)
    adj = d == 1
    partner, quads = slimfly_router_pairs(t)
    for A, B, C, D in quads.tolist():
        assert partner[A] == C and partner[B] == D
        assert adj[A, B] and adj[B, C] and adj[C, D] and d[A, C] == 2 and d[B, D] == 2
        assert (adj[A] & adj[C]).sum() == 1 and (adj[B] & adj[D]).sum() == 1
    e = t.endpoint_offsets
    tab = plan("worst_slimfly", t).table
    A, B, C, D = quads[0].tolist()
    assert np.array_equal(tab[e[A]:e[A + 1]], np.arange(e[C], e[C + 1]))  # endpoint i -> i


def test_dragonfly_worst_case_group_to_next_group():
    """DF worst case: every endpoint of group i sends into group i+1 (mod g)."""
    t = topo("dragonfly", h=2)
    wc = plan("worst_case", t)
    g = t.group[t.endpoint_router]
    assert np.all(wc.table >= 0) and is_perm_on_active(wc)
    assert np.array_equal(t.group[t.endpoint_router[wc.table]], (g + 1) % t.n_groups)


@pytest.mark.parametrize("levels", [2, 3])
def test_fattree_worst_case_through_top_level(levels):
    """FT worst case: every minimal route's midpoint routers are top-level (core/spine) routers."""
    t = topo("fattree", k=6, levels=levels)
    wc = plan("worst_case", t)
    assert np.all(wc.table >= 0) and is_perm_on_active(wc)
    d = distance_matrix(t).astype(np.int64)
    level = t.meta["level"]
    top = level.max()
    rs, rd = t.endpoint_router, t.endpoint_router[wc.table]
    assert np.all(d[rs, rd] == 2 * top)
    for a, b in set(zip(rs.tolist(), rd.tolist())):
        mid = np.nonzero((d[a] == top) & (d[a] + d[:, b] == d[a, b]))[0]
        assert mid.size and np.all(level[mid] == top)


def test_galaxyfly_worst_case_crosses_clusters():
    """Galaxyfly worst case: source and destination are always in different clusters."""
    t = topo("galaxyfly", n=4, q=5, a=2, p=2)
    wc = plan("worst_case", t)
    cl = t.meta["cluster"]
    assert np.all(wc.table >= 0) and is_perm_on_active(wc)
    src_cl = cl[t.endpoint_router]
    dst_cl = cl[t.endpoint_router[wc.table]]
    assert np.all(src_cl != dst_cl)
    assert np.array_equal(dst_cl, (src_cl + 1) % 4)


def test_hyperx_worst_case_tornado_every_dimension():
    """HyperX worst case: every route changes every coordinate (tornado per dimension)."""
    t = topo("hyperx", sizes=[2, 4, 5], p=2)
    wc = plan("worst_case", t)
    assert is_perm_on_active(wc)
    d = distance_matrix(t)
    rs, rd = t.endpoint_router, t.endpoint_router[wc.table]
    assert np.all(d[rs, rd] == 3)
    assert np.array_equal(rd % 2, (rs % 2 + 1) % 2)
    assert np.array_equal((rd // 2) % 4, ((rs // 2) % 4 + 1) % 4)
    assert np.array_equal(rd // 8, (rs // 8 + 2) % 5)


def test_mlfm_and_oft_worst_cases_are_shifts():
    """MLFM worst case is shift by h, OFT worst case is shift by k (001 Sec. 4.2)."""
    m = topo("mlfm", h=4)
    assert np.array_equal(plan("worst_case", m).table, plan("shift", m, s=4).table)
    o = topo("oft", k=4)
    assert np.array_equal(plan("worst_case", o).table, plan("shift", o, s=4).table)


def test_worst_case_refuses_unknown_topologies():
    """worst_case on a topology without a worst case raises 'traffic.pattern: ...' listing the known."""
    with pytest.raises(ParameterError, match=r"^traffic\.pattern: no worst case .* 'torus' "
                                             r"\(known: dragonfly, dragonfly_plus, fattree"):
        plan("worst_case", topo("torus", dims=[3, 3]))
    with pytest.raises(ParameterError, match=r"^traffic\.pattern: worst_dragonfly"):
        plan("worst_dragonfly", topo(**SF5))
    with pytest.raises(ParameterError, match=r"^traffic\.pattern: the worst case needs at least 2"):
        plan("worst_case", topo("fattree", k=4, pods=1))



# ================================================================== finite workloads
ON = {   # pattern: (topology, params) where it builds; all others build on SF5
    "bad_dragon": (SF5, {"group_endpoints": 4}),
    "badperm_yarc": (SF5, {"k": 10}),
    "taper64": (dict(name="hypercube", n=4, p=4), {}),     # exactly 64 endpoints
    "worst_dragonfly": (dict(name="dragonfly", h=2, a=4, g=9), {}),
    "worst_dragonfly_plus": (dict(name="dragonfly_plus", h=2, leaves=3, spines=4, p=1), {}),
    "worst_fattree": (dict(name="fattree", k=6, levels=2), {}),
    "worst_galaxyfly": (dict(name="galaxyfly", n=3, q=1, a=4), {}),
    "worst_hyperx": (dict(name="hyperx", sizes=[2, 4, 5], p=2), {}),
    "worst_mlfm": (dict(name="mlfm", h=2), {}),
    "worst_oft": (dict(name="oft", k=3), {}),
}


def test_finite_mark_agrees_with_the_plan_kind(tmp_path):
    """A pattern is registered finite=True exactly when its plan is one the engine runs to
    completion (kind messages or schedule)."""
    from models.traffic import is_finite_pattern
    from models.traffic.goal import write_goal
    from pdes.workload import is_finite
    trace = tmp_path / "ring.goal"
    write_goal(plan("allreduce", topo(**SF5), procs=4, bytes=64).ops, str(trace))
    finite = set()
    for entry in TRAFFIC:
        where, params = ON.get(entry.name, (SF5, {}))
        if entry.param("procs") is not None and entry.name != "goal":
            params = dict(params, procs=16)      # a few processes (a power of four): fast
        if entry.name == "goal":
            params = {"file": str(trace)}
        p = plan(entry.name, topo(**where), 1, **params)
        assert is_finite_pattern(entry.name) == is_finite(p), (entry.name, p.kind)
        if is_finite(p):
            finite.add(entry.name)
    assert finite >= {"alltoall", "nn3d", "bisection", "allreduce", "allgather", "broadcast",
                      "reduce", "alltoall_collective", "barrier", "stencil3d", "training", "goal"}
