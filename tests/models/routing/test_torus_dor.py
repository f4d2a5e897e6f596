"""Dimension-order routing (``dor``) on the torus, mesh and HyperX: paths, VC classes, runs."""
from collections import namedtuple

import numpy as np
import pytest

from models.core.errors import ParameterError
from models.core.params import PR_SEED
from models.core.record import F_DST, F_DSTR, F_HOPS, F_SEQ, F_SRC, NF_USED, OK
from models.core.views import EngineView, Site
from models.routing.cdg import check
from models.routing.torus import DorTables, dim_order, dor_hop
from models.topologies.torus import torus
from pdes.build import plan_routing
from pdes.engine import run_local
from tests.helpers import cfg_builder

FakePorts = namedtuple("FakePorts", ["ep_first", "ep_router", "out_nbr"])
cfg_of = cfg_builder("routing", "router.link_latency=1")


def walk(topo, src, dst, seq=0):
    """Routers and classes of the ``dor`` path from router ``src`` to router ``dst`` (one
    endpoint per router, the packet's id ``(src, seq)``), taken hop by hop through the kernel."""
    plan = dim_order(topo, None)
    n = topo.n_routers
    off = np.zeros(n + 1, np.int64)
    off[1:] = np.cumsum(1 + topo.degree)
    out_nbr = np.full(off[-1], -1, np.int64)
    fill = off[:-1] + 1
    for a, b in topo.links:
        out_nbr[fill[a]] = b
        fill[a] += 1
        out_nbr[fill[b]] = a
        fill[b] += 1
    ports = FakePorts(np.arange(n + 1, dtype=np.int64), np.arange(n, dtype=np.int32), out_nbr)
    prm = np.zeros(64, np.int64)
    prm[PR_SEED] = 7
    rec = np.zeros((1, NF_USED), np.int64)
    rec[0, F_SRC], rec[0, F_DST], rec[0, F_DSTR], rec[0, F_SEQ] = src, dst, dst, seq
    eng = EngineView(prm, ports, None, None, rec, rec)
    ctx = DorTables(plan.tables["dims"])
    ap = np.array([plan.kernel_params["wrap"], plan.kernel_params["jump"]], np.int64)
    path, classes, r = [src], [], src
    while True:
        site = Site(0, r, r, off[r], 1, off[r + 1], 0, 0)
        status, port, cls = dor_hop(site, eng, ctx, ap, 0)
        assert status == OK and port >= off[r]
        if port == off[r]:
            return path, classes
        r = int(out_nbr[port])
        path.append(r)
        classes.append(int(cls))
        rec[0, F_HOPS] += 1
        assert len(path) <= n


def coords(r, dims):
    out = []
    for s in dims:
        out.append(r % s)
        r //= s
    return out


@pytest.mark.parametrize("dims,wrap", [([4, 5], True), ([3, 2, 4], True), ([4, 5], False),
                                       ([6], True), ([2, 3, 3], False)])
def test_dor_paths_and_dateline_classes(dims, wrap):
    """dor corrects dimension 0 first, one dimension after the other, the shorter way round;
    class 1 exactly on torus segments that cross the wraparound link, 0 on a mesh."""
    topo = torus(dims, wrap=wrap)
    for src in range(topo.n_routers):
        for dst in range(topo.n_routers):
            path, classes = walk(topo, src, dst, seq=src * 31 + dst)
            a, b = coords(src, dims), coords(dst, dims)
            ring = [min((t - c) % s, (c - t) % s) if wrap else abs(t - c)
                    for c, t, s in zip(a, b, dims)]
            assert len(path) - 1 == sum(ring), (src, dst, path)
            dims_of_hops = []
            for (u, v), cls in zip(zip(path, path[1:]), classes):
                cu, cv = coords(u, dims), coords(v, dims)
                d = [i for i in range(len(dims)) if cu[i] != cv[i]]
                assert len(d) == 1
                dims_of_hops.append(d[0])
                s, start, end = dims[d[0]], a[d[0]], b[d[0]]
                if s == 2:      # one link between the two routers: either way round
                    assert cls in ((0, 1) if wrap else (0,))
                    continue
                up = (cv[d[0]] - cu[d[0]]) % s == 1
                crosses = wrap and ((up and start > end) or (not up and start < end))
                assert cls == int(crosses), (src, dst, path, classes)
            assert dims_of_hops == sorted(dims_of_hops)


def test_dor_plan_and_static_check():
    """Torus: 2 classes (dateline), mesh: 1; the static check accepts both, refuses 1 VC on a torus;
    dor on another family names routing.algorithm."""
    t, m = torus([8, 8]), torus([8, 8], wrap=False)
    assert (dim_order(t, None).vcs_needed, dim_order(m, None).vcs_needed) == (2, 1)
    assert (dim_order(t, None).max_hops, dim_order(m, None).max_hops) == (8, 14)
    assert check(t, None, dim_order(t, None), 2)["ok"] and not check(t, None, dim_order(t, None), 1)["ok"]
    assert check(m, None, dim_order(m, None), 1)["ok"]
    from models.topologies.slimfly import slim_fly
    with pytest.raises(ParameterError, match="routing.algorithm: 'dor' is for the torus"):
        dim_order(slim_fly(5), None)


def test_dor_on_hyperx_corrects_each_dimension_in_one_hop():
    """HyperX 3x4x2: every pair's dor path takes one hop per differing coordinate, dimension 0
    first, straight to the destination's coordinate, all in class 0 (one class; the static
    check accepts one VC)."""
    from models.topologies.hyperx import hyperx
    dims = [3, 4, 2]
    topo = hyperx(dims)
    plan = dim_order(topo, None)
    assert (plan.vcs_needed, plan.max_hops, plan.scheme) == (1, 3, "dor")
    assert check(topo, None, plan, 1)["ok"]
    for src in range(topo.n_routers):
        for dst in range(topo.n_routers):
            path, classes = walk(topo, src, dst)
            a, b = coords(src, dims), coords(dst, dims)
            differ = [d for d in range(3) if a[d] != b[d]]
            assert len(path) - 1 == len(differ) and classes == [0] * len(differ)
            assert path[-1] == dst
            for h, d in enumerate(differ):     # hop h sets coordinate d to the destination's
                before, after = coords(path[h], dims), coords(path[h + 1], dims)
                assert after[d] == b[d] and [after[i] for i in range(3) if i != d] == \
                    [before[i] for i in range(3) if i != d]


@pytest.mark.parametrize("wrap", ["true", "false"])
def test_dor_runs_with_booksim_vc_counts(wrap):
    """dor runs an 8x8 torus on 2 VCs (min needs 8) and a mesh on 1, delivering every packet on
    minimal paths: the same hop histogram as min under the same random permutation."""
    base = ["topology.name=torus", "topology.dims=6,6", f"topology.wrap={wrap}",
            "traffic.pattern=randperm", "traffic.load=0.2"]
    vcs = 2 if wrap == "true" else 1
    a = run_local(cfg_of(*base, "routing.algorithm=dor", f"router.num_vcs={vcs}"))
    b = run_local(cfg_of(*base, "routing.algorithm=min"))
    assert not a["summary"]["saturated"]
    assert a["summary"]["measured_packets"] > 0
    assert np.array_equal(a["hist_hops"], b["hist_hops"])
    topo, dist, plan, nv = plan_routing(cfg_of(*base, "routing.algorithm=dor"))
    assert nv == vcs
