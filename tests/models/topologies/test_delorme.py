"""Invariants of the Delorme (DEL) family: the quadrangle W(v) it is built from and the counts,
degrees and diameter 000 Sec. II-C states."""
import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import shortest_path

from models.core.errors import ParameterError
from models.gf import GF
from models.metrics import moore_bound
from models.topology import build, size_of
from models.topologies.delorme import delorme, delorme_size, symplectic_quadrangle


def hops(t, sources=None):
    n, u, v = t.n_routers, t.links[:, 0], t.links[:, 1]
    a = coo_matrix((np.ones(2 * t.n_links), (np.r_[u, v], np.r_[v, u])), shape=(n, n)).tocsr()
    return shortest_path(a, unweighted=True, directed=False, indices=sources)


def incidence_hops(on_line):
    """All-pairs distances of the point-line incidence graph (points first, then lines)."""
    n, s = on_line.shape
    lines = np.repeat(np.arange(n), s) + n
    pts = on_line.ravel()
    a = coo_matrix((np.ones(2 * pts.size), (np.r_[pts, lines], np.r_[lines, pts])),
                   shape=(2 * n, 2 * n)).tocsr()
    return shortest_path(a, unweighted=True, directed=False)


@pytest.mark.parametrize("v", [2, 3, 4])
def test_quadrangle_w_v(v):
    """W(v) has (v+1)(v^2+1) points and lines, v+1 points per line and lines per point, every
    line totally isotropic, and an incidence graph of diameter 4 and girth 8 (a generalized
    quadrangle: two points share at most one line)."""
    F = GF(v)
    points, on_line, through = symplectic_quadrangle(v)
    n = (v + 1) * (v * v + 1)
    assert points.shape == (n, 4) and on_line.shape == through.shape == (n, v + 1)
    assert np.all(np.bincount(on_line.ravel(), minlength=n) == v + 1)
    for x in range(n):                                   # through is the transpose of on_line
        assert np.array_equal(np.nonzero((on_line == x).any(axis=1))[0], through[x])
    a, b = points[on_line[:, :, None]], points[on_line[:, None, :]]      # all pairs on a line
    m = F.mul
    form = F.sub[F.add[m[a[..., 0], b[..., 2]], m[a[..., 1], b[..., 3]]],
                 F.add[m[a[..., 2], b[..., 0]], m[a[..., 3], b[..., 1]]]]
    assert np.all(form == 0)
    d = incidence_hops(on_line)
    assert d.max() == 4
    shared = np.zeros((n, n), dtype=np.int64)             # lines through both points
    for row in on_line:
        shared[np.ix_(row, row)] += 1
    np.fill_diagonal(shared, 0)
    assert shared.max() == 1


@pytest.mark.parametrize("v", [2, 3])
def test_delorme_counts_degrees_diameter(v):
    """DEL(v): N_r = (v+1)^2 (v^2+1)^2 and k' = (v+1)^2 (000 Sec. II-C); flags (x on L) have
    k'-1 links, the rest k'; diameter 3; default p = ceil(k'/3)."""
    t = delorme(v)
    n = (v + 1) * (v * v + 1)
    k = (v + 1) ** 2
    assert t.n_routers == (v + 1) ** 2 * (v * v + 1) ** 2 == n * n
    _, on_line, _ = symplectic_quadrangle(v)
    x, line = np.divmod(np.arange(t.n_routers), n)
    flag = (on_line[line] == x[:, None]).any(axis=1)
    assert flag.sum() == n * (v + 1)
    assert np.all(t.degree[flag] == k - 1) and np.all(t.degree[~flag] == k)
    assert hops(t).max() == 3
    assert np.all(t.endpoints == -(-k // 3)) and t.params["radix"] == k + -(-k // 3)


def test_delorme_v4_diameter_from_flags_and_others():
    """DEL(4) (7,225 routers, k' = 25): the eccentricity of flag and of non-flag routers is 3
    (BFS from some of each kind; the construction gives diameter 3 for every v)."""
    v = 4
    t = delorme(v)
    _, on_line, _ = symplectic_quadrangle(v)
    n = len(on_line)
    x, line = np.divmod(np.arange(t.n_routers), n)
    flag = (on_line[line] == x[:, None]).any(axis=1)
    sources = np.r_[np.nonzero(flag)[0][::97], np.nonzero(~flag)[0][::1361]]
    assert flag[sources].any() and (~flag[sources]).any()
    assert np.all(hops(t, sources=sources).max(axis=1) == 3)
    assert sorted(set(t.degree.tolist())) == [24, 25]


def test_delorme_links_are_the_incidence_rule():
    """(x, L) -- (y, M) exactly when x lies on M and y on L (v = 3): no link is missing or extra."""
    v = 3
    t = delorme(v)
    _, on_line, _ = symplectic_quadrangle(v)
    n = len(on_line)
    inc = np.zeros((n, n), dtype=bool)                    # inc[x, L]: x lies on L
    inc[on_line.ravel(), np.repeat(np.arange(n), v + 1)] = True
    x, line = np.divmod(np.arange(n * n), n)
    want = inc[x[:, None], line[None, :]] & inc[x[None, :], line[:, None]]
    np.fill_diagonal(want, False)
    got = np.zeros_like(want)
    got[t.links[:, 0], t.links[:, 1]] = got[t.links[:, 1], t.links[:, 0]] = True
    assert np.array_equal(got, want)


def test_delorme_groups_are_points():
    """Group x holds the n routers (x, .); its only local links join the v+1 flags of x (a
    clique), the rest are global."""
    v = 2
    t = delorme(v)
    n = (v + 1) * (v * v + 1)
    assert t.group_kind == "group" and np.all(np.bincount(t.group) == n)
    local = t.group[t.links[:, 0]] == t.group[t.links[:, 1]]
    assert np.array_equal(np.bincount(t.group[t.links[local, 0]], minlength=n),
                          np.full(n, v * (v + 1) // 2))
    assert np.array_equal(t.link_class, (~local).astype(np.int8))


def test_delorme_moore_ratio_of_000():
    """000 Sec. II-C: DEL graphs reach 68% of the Moore bound; v = 9 (k' = 100, the DEL radix
    nearest 000's k' = 96) gives 672,400 routers, 67.9% of the bound; the ratio grows with v."""
    ratios = []
    for v in (2, 3, 4, 5, 7, 8, 9):
        size = delorme_size(v)
        ratios.append(size.routers / moore_bound((v + 1) ** 2, 3))
    assert delorme_size(9).routers == 672400
    assert round(100 * ratios[-1]) == 68
    assert ratios == sorted(ratios)


@pytest.mark.parametrize("params,match", [
    ({"v": 6}, r"^topology\.v: Delorme v=6 must be a prime power$"),
    ({"v": 1}, r"^topology\.v: "),
    ({"v": 2, "p": -1}, r"^topology\.p: "),
    ({"v": 101}, r"^topology\.v: gives .* routers, more than"),
])
def test_delorme_refusals(params, match):
    """Bad parameters give one-line ParameterErrors naming the key, from the size hook and the
    generator alike."""
    with pytest.raises(ParameterError, match=match):
        build("delorme", params)
    with pytest.raises(ParameterError, match=match):
        size_of("delorme", params)
