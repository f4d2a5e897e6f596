"""Long Hop hypercube (``lhhc``): Cayley-graph invariants, the diameter against a covering
radius computed without a graph search, the bisection d R/2 from every linear cut and the
spectral bound, the folded hypercube, refusals, ``pdes design`` rows and a short run."""
import csv
import itertools
import json
import math
import os

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components, shortest_path

from models.analysis import analytic_bisection, bisection, cut_size
from models.design import design_table
from models.topologies.lhhc import min_distance
from models.topology import build
from tests.helpers import assert_refused_on_every_rank, cli_sets, run_pdes

FAST = cli_sets(preset="cli")

CASES = [   # parameters: the defaults of small n, explicit m, explicit long hops
    {"n": 3}, {"n": 4, "p": 2}, {"n": 5}, {"n": 6, "m": 2}, {"n": 7}, {"n": 8},
    {"n": 6, "long_hops": [7, 56, 63]}, {"n": 7, "m": 6, "seed": 3},
]


def popcount(a):
    """Set bits of each integer, through its binary string (no shared code with the builder)."""
    return np.array([bin(int(x)).count("1") for x in np.ravel(a)], dtype=np.int64)


def adjacency(t):
    u, v = t.links[:, 0], t.links[:, 1]
    return coo_matrix((np.ones(2 * t.n_links), (np.r_[u, v], np.r_[v, u])),
                      shape=(t.n_routers,) * 2).tocsr()


def covering_radius(n, long_hops):
    """Fewest generators summing to each x, worst x: a shortest sum uses each long hop at most
    once (g + g = 0), so it is the best over the 2^m subsets b of long hops of |b| plus the unit
    vectors of what remains, x XOR (the long hops of b)."""
    x = np.arange(1 << n)
    best = np.full(x.size, 1 << 30)
    pc = popcount(x)                                 # popcount of every vector, once
    for b in range(1 << len(long_hops)):
        s = 0
        for j, g in enumerate(long_hops):
            if b >> j & 1:
                s ^= g
        best = np.minimum(best, pc[x ^ s] + bin(b).count("1"))
    return int(best.max())


def code_weights(n, long_hops):
    """w(f) = #{g in S: f.g odd} for every f in Z_2^n (the codeword weights of [I_n | L])."""
    f = np.arange(1 << n)
    pc = popcount(np.arange(1 << n))
    w = pc.copy()                                    # the n unit vectors: f.e_i = bit i of f
    for g in long_hops:
        w += pc[f & g] % 2
    return w


@pytest.mark.parametrize("params", CASES, ids=lambda p: " ".join(f"{k}={v}" for k, v in p.items()))
def test_invariants(params):
    """2^n routers, every one of degree n+m, a simple connected graph whose link of class c
    joins x and x XOR (generator c), p endpoints per router, racks of 16 consecutive ids."""
    t = build("lhhc", params)
    n, m = params["n"], t.params["m"]
    hops = t.params["long_hops"]
    assert len(hops) == m and (params.get("m", m) == m)
    assert t.n_routers == 2 ** n and np.all(t.degree == n + m)
    assert t.n_links == (n + m) * 2 ** (n - 1)
    assert np.all(t.links[:, 0] < t.links[:, 1])
    assert len({tuple(r) for r in t.links.tolist()}) == t.n_links
    assert connected_components(adjacency(t), directed=False)[0] == 1
    gens = [1 << i for i in range(n)] + hops
    assert np.array_equal(t.links[:, 0] ^ t.links[:, 1], np.asarray(gens)[t.link_class])
    assert t.link_class_names == tuple(f"dim{i}" for i in range(n)) + tuple(f"hop{j}" for j in range(m))
    assert np.all(t.endpoints == params.get("p", 1))
    assert np.array_equal(t.group, np.arange(2 ** n) >> min(n, 4)) and t.group_kind == "rack"
    assert all(g & (g - 1) and 0 < g < 2 ** n for g in hops) and len(set(hops)) == m


@pytest.mark.parametrize("params", CASES, ids=lambda p: " ".join(f"{k}={v}" for k, v in p.items()))
def test_diameter_is_the_covering_radius(params):
    """The diameter the family reports is the all-pairs maximum of the built graph and the
    covering radius computed over the subsets of long hops."""
    t = build("lhhc", params)
    hops = t.params["long_hops"]
    measured = int(shortest_path(adjacency(t), unweighted=True, directed=False).max())
    assert t.params["diameter"] == measured == covering_radius(params["n"], hops)


@pytest.mark.parametrize("n", range(3, 13))
def test_default_long_hops_give_a_distance_3_code(n):
    """The default m is the smallest with 2^m >= n+m+1, and the default long hops' code has
    minimum distance 3: every nonzero linear cut crosses at least 3 generators."""
    t = build("lhhc", {"n": n})
    m = t.params["m"]
    assert m == min(k for k in range(8) if 2 ** k >= n + k + 1)
    w = code_weights(n, t.params["long_hops"])[1:]
    assert int(w.min()) == t.params["min_distance"] == 3


@pytest.mark.parametrize("n", [2, 5, 9, 12])
def test_min_distance_is_the_least_codeword_weight(n):
    """The builder's minimum distance (a Gray-code walk over Z_2^n) equals the least weight
    of every nonzero codeword, for random long-hop sets of 0 to 48 vectors (repeated and
    unit vectors included: the walk does not rely on the rules the builder enforces)."""
    rng = np.random.default_rng(n)
    for m in [0, 1, 2, 3, 7, 20, 48]:
        for _ in range(3):
            hops = [int(g) for g in rng.integers(0, 1 << n, size=m)]
            want = int(code_weights(n, hops)[1:].min())
            assert min_distance(n, hops) == want, (n, hops)


@pytest.mark.parametrize("n", [3, 4, 5])
def test_one_long_hop_fewer_has_no_distance_3_code(n):
    """With one long hop fewer than the default, no choice of long hops has minimum distance 3
    (all sets enumerated): the default m is the fewest."""
    m = build("lhhc", {"n": n}).params["m"] - 1
    pool = [g for g in range(3, 2 ** n) if g & (g - 1)]
    assert all(int(code_weights(n, hops)[1:].min()) < 3 for hops in itertools.combinations(pool, m))


@pytest.mark.parametrize("params", [{"n": 4}, {"n": 5}, {"n": 6}, {"n": 6, "m": 2},
                                    {"n": 5, "long_hops": [31]}],
                         ids=lambda p: " ".join(f"{k}={v}" for k, v in p.items()))
def test_bisection_is_d_times_half_the_routers(params):
    """Every linear cut {x: f.x odd} cuts 2^(n-1) w(f) links; the least is the registered
    d R/2 (3N/2 for the defaults); the spectral bound lambda_2 R/4 equals it, so it is the
    bisection width, and METIS finds no balanced cut below it."""
    t = build("lhhc", params)
    n = params["n"]
    w = code_weights(n, t.params["long_hops"])
    x = np.arange(2 ** n)
    cuts = [cut_size(t, popcount(x & f) % 2) for f in range(1, 2 ** n)]
    assert cuts == [2 ** (n - 1) * int(wf) for wf in w[1:]]
    an = analytic_bisection(t)
    assert an["exact"] and an["links"] == min(cuts) == t.params["min_distance"] * 2 ** (n - 1)
    if "m" not in params and "long_hops" not in params:
        assert an["links"] == 3 * t.n_endpoints // 2
    deg = np.asarray(t.degree, dtype=float)
    lap = np.diag(deg) - adjacency(t).toarray()
    lam2 = np.linalg.eigvalsh(lap)[1]
    assert lam2 * t.n_routers / 4 == pytest.approx(an["links"])
    assert bisection(t, seeds=4)["links_cut"] >= an["links"]


@pytest.mark.parametrize("n", range(3, 11))
def test_folded_hypercube(n):
    """One long hop, the all-ones vector, is the folded hypercube of diameter ceil(n/2); with
    m = 1 the default search picks exactly that long hop."""
    t = build("lhhc", {"n": n, "long_hops": [2 ** n - 1]})
    ecc = int(shortest_path(adjacency(t), unweighted=True, directed=False, indices=[0]).max())
    assert t.params["diameter"] == ecc == math.ceil(n / 2)
    assert build("lhhc", {"n": n, "m": 1}).params["long_hops"] == [2 ** n - 1]


BAD = [   # (--set values, the start of the error after "pdes: error: ")
    (["topology.n=2"], "topology.n: must be in [3, 20] (got 2)"),
    (["topology.n=21"], "topology.n: must be in [3, 20] (got 21)"),
    (["topology.m=-1"], "topology.m: must be in [0, 48] (got -1)"),
    (["topology.n=4", "topology.m=12"], "topology.m: 12 long hops, but Z_2^4 has only 11"),
    (["topology.p=0"], "topology.p: must be >= 1 (got 0)"),
    (["topology.long_hops=[0]"], "topology.long_hops: must be in [1, 1,048,575] (got 0)"),
    (["topology.long_hops=[3,16]"], "topology.long_hops: 16 is a unit vector"),
    (["topology.long_hops=[3,5,3]"], "topology.long_hops: 3 is listed twice"),
    (["topology.n=5", "topology.long_hops=[32]"], "topology.long_hops: 32 is not a vector of Z_2^5"),
    (["topology.m=3", "topology.long_hops=[3,5]"], "topology.m: m = 3 but long_hops lists 2"),
    (["topology.tries=0"], "topology.tries: must be in [1, 4,096] (got 0)"),
    (["topology.n=x"], "topology.n: expected an integer"),
]


def _sets(values):
    return [a for v in ["topology.name=lhhc", *values] for a in ("--set", v)]


@pytest.mark.parametrize("values,msg", BAD, ids=[" ".join(v) for v, _ in BAD])
def test_bad_input_is_one_line_exit_2(values, msg, tmp_path, capsys):
    """`pdes run` and `pdes topo` refuse each bad parameter with one line `pdes: error:
    topology.<key>: <rule>` and status 2, and `run` writes no output file."""
    from pdes.cli import main
    out = tmp_path / "out.h5"
    for argv in (["run", *FAST, *_sets(values), "-o", str(out)], ["topo", "lhhc", *_sets(values)]):
        assert main(argv) == 2
        err = [ln for ln in capsys.readouterr().err.splitlines() if not ln.startswith("[pdes]")]
        assert len(err) == 1 and err[0].startswith(f"pdes: error: {msg}"), err
    assert not out.exists()


@pytest.mark.mpi(min_size=2)
def test_bad_input_under_mpi_exits_2_on_every_rank(tmp_path, capfd):
    """Under MPI each bad parameter gives status 2 on every rank, one error line on rank 0 and
    no output file."""
    from mpi4py import MPI

    from pdes.cli import main
    comm = MPI.COMM_WORLD
    out = os.path.join(comm.bcast(str(tmp_path), root=0), "out.h5")
    for values, msg in BAD:
        capfd.readouterr()
        status = main(["run", *FAST, *_sets(values), "-o", out])
        err = capfd.readouterr().err
        assert_refused_on_every_rank(comm, status, err,
                                     lambda line: line.startswith(f"pdes: error: {msg}"), values)
        comm.Barrier()
        assert not os.path.exists(out)


def test_design_rows_match_built_instances(tmp_path):
    """`pdes design --families lhhc` lists n = 3..11 at radix 16, each row with the counts,
    radix, diameter and bisection of the instance the family builds."""
    from pdes.cli import main
    out = tmp_path / "lhhc.csv"
    assert main(["design", "--radix", "16", "--families", "lhhc", "-o", str(out)]) == 0
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["params"] for r in rows] == \
        [f"n={n} m={3 if n < 5 else 4} p=1" for n in range(3, 12)]
    for r in rows:
        params = {k: int(v) for k, v in (kv.split("=") for kv in r["params"].split())}
        t = build("lhhc", params)
        ecc = int(shortest_path(adjacency(t), unweighted=True, directed=False, indices=[0]).max())
        assert (int(r["routers"]), int(r["endpoints"]), int(r["links"])) == \
            (t.n_routers, t.n_endpoints, t.n_links)
        assert int(r["radix"]) == int((t.degree + t.endpoints).max()) == params["n"] + params["m"] + 1
        assert int(r["diameter"]) == ecc
        assert int(r["bisection_links"]) == analytic_bisection(t)["links"] == 3 * t.n_routers // 2


def test_design_at_8192_routers_has_the_radix_and_power_of_000():
    """n = 13: radix 19 (000 Sec. VI-B4, Table IV), bisection 3N/2 = 12,288 links (000
    Sec. III-C) and 53.2 W per endpoint (000 Table IV, its power model)."""
    row = next(r for r in design_table(19, families=["lhhc"]).rows if r["routers"] == 8192)
    assert (row["params"], row["radix"], row["bisection_links"]) == ("n=13 m=5 p=1", 19, 12288)
    assert row["power_per_endpoint_w"] == pytest.approx(53.2)


def test_short_run_uses_every_link_class(tmp_path):
    """`pdes run` on n = 5 with min routing delivers packets over every link class (hypercube
    dimensions and long hops), none taking more hops than the diameter."""
    import h5py
    out = tmp_path / "lh.h5"
    r = run_pdes("run", *FAST, *_sets(["topology.n=5", "traffic.load=0.3"]), "--set",
                 "routing.algorithm=min", "--set", "output.per_link=true", "-o", str(out))
    assert r.returncode == 0, r.stderr
    with h5py.File(out, "r") as f:
        diameter = json.loads(f.attrs["topology_params"])["diameter"]
        flits = f["links/channel_flits"][:].reshape(-1, 2).sum(axis=1)
        cls = f["links/link_class"][:]
        hops = f["hist/hops"][:]
        assert int(f.attrs["routing_max_hops"]) == diameter == 3
    assert np.all(np.bincount(cls, weights=flits) > 0) and np.bincount(cls).size == 5 + 4
    assert hops.sum() > 0 and not hops[diameter + 1:].any()
