"""Resiliency to random link failures (000 Sec. III-D, 004 Sec. 3.4).

Procedure
---------
Links fail in steps of ``step`` (default 5 %) of all links: at step ``s`` the
first ``m_s = floor(s * L * step)`` links of a random permutation are removed.
Sample ``i`` draws its permutation from ``numpy.random.default_rng([seed, i])``,
so its failure sets are *nested* (a link that failed at step ``s`` is still
down at ``s+1``).  Removing links never shortens a path, so for every sample
connectivity can only be lost, and diameter and average distance can only
grow, as ``s`` increases: every curve is monotone by construction, and a
sample's result does not depend on which MPI rank computed it.

For each sample three thresholds are found (a step is *tolerated* when the
condition holds):

``disconnect`` (000 Sec. III-D1)
    the largest step at which the network is still connected.  The exact
    number of links ``m*`` that can fail first is found by bisection over the
    permutation prefix (connectivity with ``scipy.sparse.csgraph``), and the
    step threshold is the largest ``s`` with ``m_s <= m*``.
``diameter`` (000 Sec. III-D2)
    the largest step at which the network is connected and its diameter is at
    most ``D0 + diameter_slack`` (default 2).
``distance`` (000 Sec. III-D3)
    the largest step at which the network is connected and its average
    distance is at most ``A0 + distance_slack`` (default 1 hop).

Distances are router hops between the routers that have endpoints
("terminal" routers; all routers of a direct network), over ordered pairs of
distinct terminal routers; connectivity likewise only asks that all terminal
routers be mutually reachable (a spine router cut off from everything does
not disconnect an indirect network).  Both searches over steps use bisection,
which is valid because the conditions are monotone.

Number of samples
-----------------
000 Sec. III-D1 uses "enough samples to guarantee a 95 % confidence interval
of width 2".  Here the measured quantity is each sample's threshold in
percent of the links (the exact ``100 m*/L`` for disconnection, the step
threshold for the other two), and samples are drawn in batches of ``batch``
until the 95 % Student-t confidence interval of the *mean* threshold has
width at most ``ci_width`` percentage points for every requested criterion
(at least ``min_samples``, at most ``max_samples``).  ``samples=n`` draws
exactly ``n``.

The per-step ``curve`` gives, for every step, the share of samples that
tolerate it (non-increasing by construction).  The tabulated value
(``fraction``) is the largest step tolerated by at least ``level`` of the
samples (default one half, i.e. the median threshold on the step grid): "SF
can lose 75 % of its links" means that, with 75 % of the links failed, at
least half of the failure sets leave it connected.

Distance curve (004 Fig. 5)
---------------------------
With ``curve=True`` each sample also records the diameter and the average
distance of the surviving network at *every* step up to its own
disconnection step (the same permutation, so the same nested failure sets as
the thresholds; the threshold searches reuse these values and give the same
thresholds as without the curve).  ``curve["paths"]`` reports, per step
``s`` from 0 to the last step at which any sample is still connected: the
share and number of samples still connected, and the mean, standard
deviation, minimum and maximum of the diameter and of the average distance
over the connected samples only (004 Sec. 3.4 removes links "until the
network is disconnected": a disconnected sample has no finite distances and
is left out, the connected share says how many remain).  This costs one
all-pairs search per step and sample (about ``1/step`` times the thresholds'
few searches).

Parallelism
-----------
With an mpi4py communicator ``comm`` the samples of each batch are dealt
round-robin to the ranks and gathered on all ranks after the batch; the
stopping rule is evaluated on the gathered results, so the answer is the same
for any number of ranks.  Without ``comm`` everything runs here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from models.core.errors import ParameterError

__all__ = ["resiliency", "CRITERIA", "DEFAULTS"]

CRITERIA = ("disconnect", "diameter", "distance")
"""Names of the resiliency criteria, in report order."""


# ------------------------------------------------------------------------ graph helpers
class _Graph:
    """The router graph with a removable prefix of a link permutation."""

    def __init__(self, topo, threads):
        self.topo = topo
        self.R = topo.n_routers
        self.links = np.asarray(topo.links, dtype=np.int64)
        self.terminals = np.nonzero(np.asarray(topo.endpoints) > 0)[0]
        if self.terminals.size == 0:
            self.terminals = np.arange(self.R)
        self.all_terminal = self.terminals.size == self.R
        self.threads = threads

    def connected(self, keep: np.ndarray) -> bool:
        """Are all terminal routers mutually reachable over the links ``keep``?"""
        import scipy.sparse as sp
        from scipy.sparse.csgraph import connected_components
        if self.terminals.size <= 1:
            return True
        e = self.links[keep]
        g = sp.coo_matrix((np.ones(e.shape[0], dtype=np.int8), (e[:, 0], e[:, 1])),
                          shape=(self.R, self.R)).tocsr()
        _, label = connected_components(g, directed=True, connection="weak")
        lt = label[self.terminals]
        return bool(np.all(lt == lt[0]))

    def distances(self, keep: np.ndarray) -> tuple[int, float]:
        """(diameter, average distance) over ordered pairs of distinct terminal routers."""
        from ..metrics import UNREACHABLE, distance_rows, path_statistics
        from ..topology import from_edges
        topo = self.topo
        e = self.links[keep]
        sub = from_edges(topo.name, {}, self.R, e[:, 0], e[:, 1], topo.endpoints, topo.group,
                         link_class=np.zeros(e.shape[0], np.int8), link_class_names=("any",))
        t = self.terminals
        if self.all_terminal:
            st = path_statistics(sub, threads=self.threads)
            return int(st["eccentricity_max"]), float(st["avg_distance"])
        T = t.size
        dmax = 0
        total = 0
        chunk = max(1, min(T, 2**22 // max(self.R, 1)))
        for i0 in range(0, T, chunk):
            rows = distance_rows(sub, t[i0:i0 + chunk], threads=self.threads)[:, t]
            if np.any(rows == UNREACHABLE):  # pragma: no cover - only called when connected
                raise RuntimeError("distances() on a disconnected graph")
            dmax = max(dmax, int(rows.max()))
            total += int(rows.sum(dtype=np.int64))
        return dmax, total / (T * (T - 1)) if T > 1 else 0.0


def _largest_true(lo: int, hi: int, pred) -> int:
    """Largest ``x`` in ``[lo, hi]`` with ``pred(x)``, given ``pred(lo)`` and monotone ``pred``."""
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if pred(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _one_sample(graph: _Graph, seed: int, i: int, n_steps: int, base, criteria,
                curve: bool = False) -> tuple:
    """Thresholds of sample ``i``, (m*, s_disconnect, s_diameter, s_distance) with -1 = not
    computed, and, with ``curve``, the (diameter, average distance) at steps 0..s_disconnect
    (else None)."""
    L = graph.links.shape[0]
    perm = np.random.default_rng([seed, i]).permutation(L)

    def keep(m):
        return perm[m:]

    m_star = _largest_true(0, L, lambda m: graph.connected(keep(m)))
    steps_m = (np.arange(n_steps, dtype=np.int64) * L) // n_steps
    s_conn = int(np.searchsorted(steps_m, m_star, side="right") - 1)
    d0, a0, dslack, aslack = base
    cache = {} if d0 is None else {0: (d0, a0)}      # step 0 is the intact network

    def dist(s):
        if s not in cache:
            cache[s] = graph.distances(keep(int(steps_m[s])))
        return cache[s]

    s_diam = s_dist = -1
    if "diameter" in criteria:
        s_diam = _largest_true(0, s_conn, lambda s: dist(s)[0] <= d0 + dslack)
    if "distance" in criteria:
        s_dist = _largest_true(0, s_conn, lambda s: dist(s)[1] <= a0 + aslack + 1e-9)
    path_curve = None
    if curve:
        values = [dist(s) for s in range(s_conn + 1)]
        path_curve = (np.array([v[0] for v in values], dtype=np.int64),
                      np.array([v[1] for v in values], dtype=np.float64))
    return (int(m_star), s_conn, s_diam, s_dist), path_curve


def _ci_width(x: np.ndarray) -> float:
    """Width of the two-sided 95 % Student-t confidence interval of the mean of ``x``."""
    n = x.size
    if n < 2:
        return math.inf
    from scipy.stats import t as student_t
    s = float(np.std(x, ddof=1))
    return 2.0 * float(student_t.ppf(0.975, n - 1)) * s / math.sqrt(n)


def _check_int(key, value, lo, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        raise ParameterError(f"resiliency.{key}: must be an integer >= {lo}, got {value!r}")
    return int(value)


def _check_float(key, value, lo, hi=None):
    try:
        if isinstance(value, bool):
            raise TypeError
        out = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"resiliency.{key}: expected a number, got {value!r}") from None
    if not math.isfinite(out) or out <= lo or (hi is not None and out >= hi):
        rng = f"in ({lo}, {hi})" if hi is not None else f"> {lo}"
        raise ParameterError(f"resiliency.{key}: must be {rng}, got {value!r}")
    return out


DEFAULTS = {"criteria": CRITERIA, "step": 0.05, "level": 0.5, "min_samples": 16,
            "max_samples": 400, "batch": 16, "ci_width": 2.0, "diameter_slack": 2,
            "distance_slack": 1.0, "curve": False}
"""Keyword options of :func:`resiliency` and their defaults."""


@dataclass(frozen=True)
class _Settings:
    """Checked arguments of one :func:`resiliency` call."""

    seed: int
    samples: int | None
    criteria: tuple          # the requested criteria and "disconnect", in CRITERIA order
    step: float
    n_steps: int
    level: float
    min_samples: int
    max_samples: int
    batch: int
    ci_width: float
    diameter_slack: int
    distance_slack: float
    curve: bool


def _settings(seed, samples, options: dict) -> _Settings:
    """Check the arguments of :func:`resiliency` (first bad one in this order is reported)."""
    for key in options:
        if key not in DEFAULTS:
            raise TypeError(f"resiliency() got an unexpected keyword argument {key!r}")
    o = {**DEFAULTS, **options}
    seed = _check_int("seed", seed, 0)
    samples = _check_int("samples", samples, 1, allow_none=True)
    min_samples = _check_int("min_samples", o["min_samples"], 2)
    max_samples = _check_int("max_samples", o["max_samples"], 1)
    batch = _check_int("batch", o["batch"], 1)
    step = _check_float("step", o["step"], 0.0, 1.0)
    level = _check_float("level", o["level"], 0.0, 1.0 + 1e-12)
    ci_width = _check_float("ci_width", o["ci_width"], 0.0)
    diameter_slack = _check_int("diameter_slack", o["diameter_slack"], 0)
    distance_slack = o["distance_slack"]
    if isinstance(distance_slack, bool) or not isinstance(distance_slack, (int, float, np.number)) \
            or not math.isfinite(distance_slack) or distance_slack < 0:
        raise ParameterError(f"resiliency.distance_slack: must be a number >= 0, "
                             f"got {distance_slack!r}")
    if not isinstance(o["curve"], (bool, np.bool_)):
        raise ParameterError(f"resiliency.curve: must be true or false, got {o['curve']!r}")
    n_steps = round(1.0 / step)
    if abs(n_steps * step - 1.0) > 1e-9:
        raise ParameterError(f"resiliency.step: 1/step must be an integer, got {step!r}")
    criteria = o["criteria"]
    if isinstance(criteria, str):
        criteria = [c for c in criteria.split(",") if c]
    for c in criteria:
        if c not in CRITERIA:
            raise ParameterError(f"resiliency.criteria: unknown criterion {c!r} "
                                 f"(known: {', '.join(CRITERIA)})")
    crit = tuple(c for c in CRITERIA if c in criteria or c == "disconnect")
    return _Settings(seed=seed, samples=samples, criteria=crit, step=step, n_steps=n_steps,
                     level=level, min_samples=min_samples, max_samples=max_samples, batch=batch,
                     ci_width=ci_width, diameter_slack=diameter_slack,
                     distance_slack=float(distance_slack), curve=bool(o["curve"]))


def intact_connected(topo) -> bool:
    """Whether every router with endpoints (every router, if none has any) reaches every other
    one with no link failed: resiliency's thresholds are defined only then."""
    g = _Graph(topo, None)
    return g.connected(np.arange(topo.n_links))


def _baseline(graph: _Graph, st: _Settings) -> tuple:
    """(diameter, average distance) of the intact network, (None, None) if no criterion needs
    them; refuses a network that is disconnected before any link fails."""
    topo = graph.topo
    all_links = np.arange(topo.n_links)
    if not graph.connected(all_links):
        raise ParameterError(f"topology '{topo.name}': the network is disconnected before any "
                             "link fails")
    need_dist = "diameter" in st.criteria or "distance" in st.criteria or st.curve
    return graph.distances(all_links) if need_dist else (None, None)


def _thresholds(arr: np.ndarray, st: _Settings, L: int) -> list:
    """Per-sample thresholds in percent, one column per criterion (CI quantity)."""
    cols = []
    for c in st.criteria:
        if c == "disconnect":
            cols.append(100.0 * arr[:, 0] / L)
        else:
            cols.append(100.0 * st.step * arr[:, 1 + CRITERIA.index(c)])
    return cols


def _draw_samples(graph: _Graph, st: _Settings, base: tuple, comm) -> tuple:
    """Per-sample (m*, s_disconnect, s_diameter, s_distance) as an array and the per-sample
    distance curves (a list; None entries without ``st.curve``), drawn in batches until the
    stopping rule holds; samples split round-robin over the ranks of ``comm``."""
    rank, size = (comm.Get_rank(), comm.Get_size()) if comm is not None else (0, 1)
    results: list[tuple] = []
    curves: list = []
    samples = st.samples
    target = samples if samples is not None else st.max_samples
    while len(results) < target:
        b0 = len(results)
        b1 = min(target, b0 + (st.batch if samples is None else target))
        mine = [(i, *_one_sample(graph, st.seed, i, st.n_steps, base, st.criteria, st.curve))
                for i in range(b0 + rank, b1, size)]
        if comm is not None and size > 1:
            gathered = [r for part in comm.allgather(mine) for r in part]
        else:
            gathered = mine
        gathered.sort(key=lambda r: r[0])
        results.extend(r[1] for r in gathered)
        curves.extend(r[2] for r in gathered)
        if samples is None and len(results) >= st.min_samples:
            cols = _thresholds(np.asarray(results, dtype=np.int64), st, graph.topo.n_links)
            if max(_ci_width(x) for x in cols) <= st.ci_width:
                break
    return np.asarray(results, dtype=np.int64), curves


def _stats(x: np.ndarray) -> dict:
    """Mean, standard deviation and 95 % CI width of per-sample thresholds ``x``."""
    n = x.shape[0]
    return {"mean": float(x.mean()), "std": float(x.std(ddof=1)) if n > 1 else 0.0,
            "ci95_width": _ci_width(x) if n > 1 else None}


def _path_curve(curves: list, st: _Settings) -> dict:
    """``curve["paths"]``: per step up to the last one with a connected sample, the connected
    share and the diameter and average distance statistics over the connected samples."""
    n = len(curves)
    last = max(c[0].size for c in curves)
    out = {"fraction": [], "connected": [], "samples_connected": []}
    for q in ("diameter", "avg_distance"):
        for k in ("mean", "std", "min", "max"):
            out[f"{q}_{k}"] = []
    for s in range(last):
        alive = [c for c in curves if c[0].size > s]
        out["fraction"].append(float(s * st.step))
        out["connected"].append(len(alive) / n)
        out["samples_connected"].append(len(alive))
        for q, j in (("diameter", 0), ("avg_distance", 1)):
            x = np.array([c[j][s] for c in alive], dtype=np.float64)
            out[f"{q}_mean"].append(float(x.mean()))
            out[f"{q}_std"].append(float(x.std(ddof=1)) if x.size > 1 else 0.0)
            out[f"{q}_min"].append(float(x.min()))
            out[f"{q}_max"].append(float(x.max()))
    return out


def _report(arr: np.ndarray, graph: _Graph, st: _Settings, baseline: tuple,
            curves: list | None = None) -> dict:
    """The result dict of :func:`resiliency` from the per-sample thresholds ``arr``."""
    L = graph.topo.n_links
    step = st.step
    d0, a0 = baseline
    n = arr.shape[0]
    out = {
        "links": L,
        "step": step,
        "level": st.level,
        "seed": st.seed,
        "samples": n,
        "ci_target": st.ci_width,
        "terminal_routers": int(graph.terminals.size),
        "baseline": {"diameter": d0, "avg_distance": a0,
                     "diameter_limit": None if d0 is None else d0 + st.diameter_slack,
                     "avg_distance_limit": None if a0 is None else a0 + st.distance_slack},
    }
    steps = np.arange(st.n_steps)
    curve = {"fraction": [float(s * step) for s in steps]}
    for c in st.criteria:
        thr = arr[:, 1 + CRITERIA.index(c)]
        tolerated = np.array([np.count_nonzero(thr >= s) / n for s in steps])
        out[c] = {
            "fraction": float(np.nonzero(tolerated >= st.level - 1e-12)[0].max() * step),
            **_stats(100.0 * step * thr),
            "median": float(np.median(thr) * step),
            "min": float(thr.min() * step),
            "max": float(thr.max() * step),
        }
        curve[c] = [float(v) for v in tolerated]
    out["disconnect"]["exact"] = _stats(100.0 * arr[:, 0] / L)
    if st.curve:
        curve["paths"] = _path_curve(curves, st)
    out["curve"] = curve
    return out


def resiliency(topo, seed: int = 0, samples: int | None = None, *, comm=None,
               threads: int | None = None, **options) -> dict:
    """Random link-failure resiliency: disconnection, diameter and distance thresholds.

    Parameters
    ----------
    topo : Topology
    seed : int
        Seed of the failure permutations (sample ``i`` uses ``default_rng([seed, i])``).
    samples : int, optional
        Exact number of samples; default: adaptive (see the module docstring).
    comm : mpi4py communicator, optional
        Samples are split over its ranks; the result is identical for any size.
    threads : int, optional
        Threads of each distance computation (default: all CPUs).
    **options
        Keyword options (defaults in :data:`DEFAULTS`):

        criteria : sequence of str
            Any of ``"disconnect"``, ``"diameter"``, ``"distance"`` (the
            disconnection threshold is always computed: the others need it).
        step : float
            Failure step as a fraction of the links (``1/step`` must be an integer).
        level : float
            Share of the samples that must tolerate a step for it to count in the
            tabulated ``fraction`` (default 0.5: the median threshold).
        min_samples, max_samples, batch : int
            Bounds and batch size of the adaptive sample count.
        ci_width : float
            Target width of the 95 % confidence interval of the mean threshold,
            in percentage points of the links.
        diameter_slack : int
            Tolerated growth of the diameter (000 Sec. III-D2: 2).
        distance_slack : float
            Tolerated growth of the average distance in hops (000 Sec. III-D3: 1).
        curve : bool
            Also record the diameter and average distance at every step up to
            disconnection (``curve["paths"]``, 004 Fig. 5; module docstring).

    Returns
    -------
    dict
        ``links``, ``step``, ``level``, ``seed``, ``samples``, ``baseline``
        (diameter and average distance of the intact network and their
        limits), one entry per criterion -- ``fraction`` (tabulated value),
        ``mean``, ``std`` and ``ci95_width`` of the per-sample step threshold
        in percent, ``median``, ``min``, ``max`` as fractions -- with
        ``disconnect.exact`` (the same statistics of ``100 m*/L`` without the
        step grid), and ``curve``: per step, the ``fraction`` of failed links
        and, per criterion, the share of samples that tolerate it; with
        ``curve=True`` also ``curve["paths"]`` (``fraction``, ``connected``,
        ``samples_connected``, ``diameter_mean``/``_std``/``_min``/``_max``,
        ``avg_distance_mean``/``_std``/``_min``/``_max`` in router hops).

    Raises
    ------
    ParameterError
        Bad numbers or criteria (the message names ``resiliency.<key>``), or a
        network that is disconnected before any link fails.
    TypeError
        An unknown keyword option.

    References
    ----------
    000 Sec. III-D (Table III); 004 Sec. 3.4, Fig. 5.
    """
    st = _settings(seed, samples, options)
    if topo.n_links == 0:
        raise ParameterError(f"topology '{topo.name}': resiliency needs at least one link")
    graph = _Graph(topo, threads)
    d0, a0 = _baseline(graph, st)
    base = (d0, a0, st.diameter_slack, st.distance_slack)
    arr, curves = _draw_samples(graph, st, base, comm)
    return _report(arr, graph, st, (d0, a0), curves)
