"""Dragonfly PAR (models/routing/dragonfly_par.py): re-routing at the source group's second
router, its VC classes and hop bound, its gain over UGAL-L under the worst case, exactness."""
import numpy as np
import pytest

from models.routing.cdg import check
from pdes.build import plan_routing, prepare
from pdes.engine import run_local
from tests.helpers import assert_same_results, cfg_builder

DF = ["topology.name=dragonfly", "topology.h=2", "router.link_latency=2"]
cfg_of = cfg_builder("long", *DF)


def test_plan_classes_and_static_check():
    """Four VC classes (l-l-g-l-g-l), at most six hops, deadlock-free by the position argument."""
    topo, dist, plan, nv = plan_routing(cfg_of("routing.algorithm=dragonfly_par"))
    assert (plan.kernel, plan.vcs_needed, plan.max_hops, plan.scheme) == \
        ("dragonfly_par", 4, 6, "dragonfly")
    assert check(topo, dist, plan, nv)["ok"]


def test_uniform_below_saturation_is_delivered():
    """Below saturation on uniform traffic PAR delivers what is offered within its hop bound."""
    par = run_local(cfg_of("routing.algorithm=dragonfly_par", "traffic.load=0.2"))
    assert not par["summary"]["saturated"]
    assert par["summary"]["accepted_load"] == pytest.approx(0.2, rel=0.05)
    assert np.nonzero(par["hist_hops"])[0].max() <= 6


def test_worst_case_reroutes_and_beats_ugal_l():
    """Under the worst case (every group sends to the next one) the second router re-routes
    (paths of 6 hops exist only that way) and PAR accepts more than UGAL-L and far more
    than minimal routing (Jiang et al. Fig. 5)."""
    sets = ["traffic.pattern=worst_case", "traffic.load=0.5"]
    par = run_local(cfg_of("routing.algorithm=dragonfly_par", *sets))
    ugal = run_local(cfg_of("routing.algorithm=dragonfly_ugal", *sets))
    mn = run_local(cfg_of("routing.algorithm=min", "routing.vc_scheme=dragonfly", *sets))
    hops = np.nonzero(par["hist_hops"])[0]
    assert hops.max() == 6
    assert np.nonzero(ugal["hist_hops"])[0].max() <= 5
    acc = {k: r["summary"]["accepted_load"] for k, r in (("par", par), ("ugal", ugal), ("min", mn))}
    assert acc["par"] > acc["ugal"] and acc["par"] > 2 * acc["min"], acc


def test_split_is_bit_identical():
    """The same results on any partition of the routers."""
    cfg = cfg_of("routing.algorithm=dragonfly_par", "traffic.pattern=worst_case",
                 "traffic.load=0.4")
    prep = prepare(cfg)
    a = run_local(cfg, prep=prep)
    b = run_local(cfg, prep=prep, owner=np.arange(prep.topo.n_routers) % 3)
    assert_same_results(a, b)
