"""Design tables (``models.design``): enumerated configurations against built instances, the
enumeration against the families' own validation, the paper points and the filters."""
import functools

import numpy as np
import pytest

from models.analysis import analytic_bisection, cost, moore_report, power
from models.core.errors import ParameterError
from models.design import COLUMNS, ENUMERATORS, MEASURE_MAX_ROUTERS, default_families, design_table
from models.gf import delta_of
from models.layout import build_layout
from models.metrics import UNREACHABLE, distance_matrix
from models.topology import build, size_of

BUILD_MAX_ROUTERS = 1000
"""Largest instance built to check a row."""


@functools.lru_cache(maxsize=None)
def small_rows():
    """Every row of radix <= 20 (torus: up to 300 endpoints; delorme: radix <= 22, v = 2, 3)."""
    return (design_table(20).rows + design_table(20, families=["torus"], endpoints=(None, 300)).rows
            + design_table(21, 22, families=["delorme"]).rows)


def _params(row):
    """The registry parameters of a row, parsed back from its text."""
    out = {}
    for item in row["params"].split():
        k, v = item.split("=")
        out[k] = [int(x) for x in v.split("x")] if k in ("sizes", "dims") else int(v)
    return out


FEW_SMALL = {"delorme": (2, 1600)}
"""Families with fewer than three small instances: (instances built, most routers). Delorme's
smallest are v = 2 (225 routers) and v = 3 (1,600); v = 4 has 7,225."""


def _rows_to_build():
    return [r for r in small_rows()
            if r["routers"] <= FEW_SMALL.get(r["family"], (0, BUILD_MAX_ROUTERS))[1]]


@pytest.mark.parametrize("row", _rows_to_build(), ids=lambda r: f"{r['family']}-{r['params']}")
def test_row_matches_the_built_instance(row):
    """A row's counts, radix, diameter, Moore bound, bisection formula, router cost and power
    are those of the instance the family builds from its parameters."""
    topo = build(row["family"], _params(row))
    deg = np.asarray(topo.degree, dtype=np.int64)
    assert (row["routers"], row["endpoints"], row["links"]) == \
        (topo.n_routers, topo.n_endpoints, topo.n_links)
    assert row["radix"] == int((deg + topo.endpoints).max())
    assert row["network_radix"] == int(deg.max())
    assert row["p"] == int(topo.endpoints.max())
    d = distance_matrix(topo)
    assert not (d == UNREACHABLE).any()
    measured = int(d.max())
    if row["diameter"] is not None:
        assert row["diameter"] == measured, row["diameter_source"]
    else:
        assert row["routers"] > MEASURE_MAX_ROUTERS and measured <= row["diameter_bound"]
    assert measured <= row["diameter_bound"]
    m = moore_report(topo, measured)
    assert (row["moore_bound"], row["moore_ratio"]) == (m["bound"], m["ratio"])
    an = analytic_bisection(topo)
    if an is None:
        assert (row["bisection_links"], row["bisection"]) == (None, "not given")
    else:
        assert (row["bisection_links"], row["bisection"], row["bisection_exact"]) == \
            (an["links"], an["formula"], an["exact"])
    assert row["links_per_endpoint"] == (topo.n_links + topo.n_endpoints) / topo.n_endpoints
    assert row["ports_per_endpoint"] == int((deg + topo.endpoints).sum()) / topo.n_endpoints
    if row["router_cost"] is not None:
        priced = cost(topo, build_layout(topo))["routers"]["dollars"]
        assert row["router_cost"] == pytest.approx(priced, rel=1e-12)
    assert row["power_w"] == pytest.approx(power(topo)["total"], rel=1e-12)


def test_small_table_builds_enough_of_every_family():
    """The built-instance check covers every family with an enumerator, several instances each
    (three, or all those of :data:`FEW_SMALL`)."""
    built = [r["family"] for r in _rows_to_build()]
    assert {f: built.count(f) >= FEW_SMALL.get(f, (3,))[0] for f in ENUMERATORS} == \
        {f: True for f in ENUMERATORS}


def _accepted(name, params):
    try:
        size_of(name, params)
    except ParameterError:
        return False
    return True


@pytest.mark.parametrize("name,key,values,radix_of", [
    ("slimfly", "q", range(2, 40),
     lambda q: (3 * q - delta_of(q)) // 2 + (3 * q - delta_of(q) + 2) // 4),   # k' + ceil(k'/2)
    ("bdf", "u", range(2, 40), lambda u: 2 * (u + 1)),
    ("delorme", "v", range(2, 40), lambda v: (v + 1) ** 2 + -(-(v + 1) ** 2 // 3)),
    ("oft", "k", range(3, 40), lambda k: 2 * k),
    ("mlfm", "h", range(1, 40), lambda h: 2 * h),
    ("hypercube", "n", range(1, 30), lambda n: n + 1),
    ("lhhc", "n", range(1, 30), lambda n: n + min(m for m in range(8) if 2 ** m >= n + m + 1) + 1),
])
def test_every_value_the_family_accepts_is_listed(name, key, values, radix_of):
    """Each value of the family's size parameter that the family accepts, with its default
    endpoints and a radix <= 48, is a row of the table, and no other value is."""
    table = design_table(48, families=[name])
    listed = sorted(_params(r)[key] for r in table.rows)
    expect = sorted(v for v in values if _accepted(name, {key: v}) and radix_of(v) <= 48)
    assert listed == expect


def test_rows_fit_the_radix_range_and_are_sorted():
    """With --radix K every row uses at most K ports; with a range K..M between K and M; rows
    are sorted by family, then endpoints; every row has every column."""
    one = design_table(24)
    assert one.rows and max(r["radix"] for r in one.rows) <= 24
    assert {r["family"] for r in one.rows} == set(default_families())
    swept = design_table(24, 40)
    assert swept.rows and all(24 <= r["radix"] <= 40 for r in swept.rows)
    keys = [(r["family"], r["endpoints"]) for r in swept.rows]
    assert keys == sorted(keys)
    assert all(tuple(r) == COLUMNS for r in swept.rows)
    again = {(r["family"], r["params"]) for r in design_table(40).rows if r["radix"] >= 24}
    assert {(r["family"], r["params"]) for r in swept.rows} == again


def test_filters_keep_exactly_the_matching_rows():
    """--endpoints keeps MIN <= N <= MAX, --diameter keeps diameter (or bound) <= D, and a row
    whose diameter is not given is dropped under --diameter."""
    full = design_table(32)
    lo, hi = 1000, 20000
    ranged = design_table(32, endpoints=(lo, hi))
    assert ranged.rows == [r for r in full.rows if lo <= r["endpoints"] <= hi]
    d3 = design_table(32, diameter=3)
    assert d3.rows == [r for r in full.rows if r["diameter_bound"] <= 3]
    assert {r["family"] for r in d3.rows} >= {"slimfly", "bdf", "dragonfly", "oft"}


def test_slimfly_paper_points():
    """000 Sec. V: q = 19, k' = 29, p = 15 gives 722 routers and 10,830 endpoints, the largest
    Slim Fly of 48 ports (003 Table 2's 882 routers have q = 21, not a prime power); 003
    Table 2, 36 ports: q = 16, 512 routers, 6,144 endpoints, k' = 24, p = 12; 000
    Sec. II-B3: k' = 96 gives 8,192 routers against the Moore bound 9,217."""
    rows = design_table(48, families=["slimfly"]).rows
    top = rows[-1]
    assert (top["params"], top["routers"], top["endpoints"], top["network_radix"], top["p"],
            top["radix"], top["diameter"]) == ("q=19 p=15", 722, 10830, 29, 15, 44, 2)
    assert "q=21" not in {r["params"].split()[0] for r in rows}
    top36 = design_table(36, families=["slimfly"]).rows[-1]
    assert (top36["routers"], top36["endpoints"], top36["network_radix"], top36["p"]) == \
        (512, 6144, 24, 12)
    (k96,) = [r for r in design_table(144, families=["slimfly"]).rows
              if r["network_radix"] == 96]
    assert (k96["routers"], k96["moore_bound"]) == (8192, 9217)


def test_delorme_paper_points():
    """000 Sec. II-C: DEL graphs have N_r = (v+1)^2 (v^2+1)^2 routers of network radix
    (v+1)^2 and diameter 3, 68% of the Moore bound near k' = 96 (v = 9, k' = 100, p = 34)."""
    rows = design_table(134, families=["delorme"]).rows
    assert [r["params"] for r in rows] == [f"v={v} p={-(-(v + 1) ** 2 // 3)}"
                                           for v in (2, 3, 4, 5, 7, 8, 9)]
    top = rows[-1]
    assert (top["routers"], top["network_radix"], top["radix"], top["diameter"]) == \
        (672400, 100, 134, 3)
    assert round(100 * top["moore_ratio"]) == 68


def test_galaxyfly_and_dragonfly_paper_points():
    """004 Table 3: GF(5,7,4,2), GF(9,19,6,3), GF(17,31,8,4), GF(37,73,12,6) have 140, 1,026,
    4,216 and 32,412 routers, the balanced DF(n,1,2h,h) with n = 9, 19, 33, 73 have 36, 114,
    264, 876 (the table's a = 10 rows, DF(55,1,10,5) and GF(30,53,10,5), need h = 6); the
    registered bisection estimate of DF h = 2 is 19; 004 Sec. 3.1: no balanced Dragonfly
    of 48 ports reaches 100K endpoints."""
    gf = {r["params"]: r for r in design_table(23, families=["galaxyfly"]).rows}
    for (n, q, a, p), routers in {(5, 7, 4, 2): 140, (9, 19, 6, 3): 1026, (17, 31, 8, 4): 4216,
                                  (37, 73, 12, 6): 32412, (9, 1, 4, 2): 36, (19, 1, 6, 3): 114,
                                  (33, 1, 8, 4): 264, (73, 1, 12, 6): 876}.items():
        row = gf[f"n={n} q={q} a={a} p={p} h={p}"]
        assert (row["routers"], row["radix"]) == (routers, p + a - 1 + p)
        if q > 1 and routers > MEASURE_MAX_ROUTERS:      # not built: only 004's bound
            assert (row["diameter"], row["diameter_bound"]) == (None, 5)
    df = design_table(48, families=["dragonfly"]).rows
    assert max(r["endpoints"] for r in df) == 83232 < 100000
    assert [r["bisection_links"] for r in df][1] == 19     # h = 2: floor((72+8-1)/4)


def test_indirect_paper_points():
    """001 Sec. 2.3.1, radix 64: the OFT reaches 63,552 endpoints (k = 32) and the MLFM 33,792
    (h = 32), both with 3 router ports and 2 links per endpoint (001 Sec. 2.2)."""
    rows = design_table(64, families=["oft", "mlfm"]).rows
    top = {r["family"]: r for r in rows}       # sorted by endpoints: the last of each family
    assert (top["oft"]["endpoints"], top["mlfm"]["endpoints"]) == (63552, 33792)
    assert all((r["ports_per_endpoint"], r["links_per_endpoint"]) == (3, 2) for r in rows)


@pytest.mark.parametrize("kwargs,key", [
    ({"radix": 0}, "radix"),
    ({"radix": 257}, "radix"),
    ({"radix": 48, "radix_max": 40}, "radix_max"),
    ({"radix": 48, "families": ["random_regular"]}, "families"),
    ({"radix": 48, "families": ["nonesuch"]}, "families"),
    ({"radix": 48, "families": ["torus"]}, "families"),
    ({"radix": 48, "endpoints": (10, 5)}, "endpoints"),
    ({"radix": 48, "diameter": 0}, "diameter"),
    ({"radix": 48, "power_model": "nonesuch"}, "power"),
])
def test_bad_arguments_are_refused(kwargs, key):
    """Arguments out of range, a family without an enumerator (random or unknown), torus
    without a largest endpoint count: a ParameterError naming the argument."""
    with pytest.raises(ParameterError, match=rf"^{key}: "):
        design_table(**kwargs)


def test_moore_bound_is_the_geometric_sum_in_closed_form():
    """The Moore bound 1 + k sum_{i<D} (k-1)^i, in closed form (a torus row of a large
    --endpoints has a diameter in the thousands), equals the sum term by term."""
    from models.metrics import moore_bound
    for k in range(0, 24):
        for d in range(0, 20):
            assert moore_bound(k, d) == 1 + k * sum((k - 1) ** i for i in range(d)), (k, d)
    assert moore_bound(4, 5000) == 1 + 4 * (3 ** 5000 - 1) // 2


def test_a_torus_table_to_a_huge_endpoint_count_is_bounded():
    """The torus rows stop at the largest network pdes builds, however large --endpoints is."""
    from models.topology import MAX_ROUTERS
    t = design_table(16, families=["torus"], endpoints=(None, 10 ** 20))
    assert t.rows and max(r["routers"] for r in t.rows) <= MAX_ROUTERS
