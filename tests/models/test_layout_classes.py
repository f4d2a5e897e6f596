"""Link latency per medium and per topology link class, and the fixed cabinet layout
(models/layout.py; docs/layout.md#fixed-cabinets, #latency-per-link-class)."""
import json

import numpy as np
import pytest

from models.analysis.latency import link_latency_ns
from models.core.errors import ParameterError
from models.layout import build_layout, cabinet_of, parse_class_cycles
from models.topologies.file import link_latency_of
from models.topology import build
from pdes.build import prepare
from pdes.engine import run_local
from pdes.loop import lookahead_of
from pdes.sizing import vc_capacities
from tests.golden import golden_cfg, result_digest, stored
from tests.helpers import (assert_refused_on_every_rank, assert_same_results, cfg_builder,
                           cli_sets, run_pdes)

SF = ("slimfly", {"q": 5})                                    # 50 routers, 5 racks of 10
DF = ("dragonfly", {"h": 2})                                  # 36 routers, 9 groups of 4
GF = ("galaxyfly", {"n": 3, "q": 5, "a": 2, "p": 2})          # 30 routers, 3 link classes
FAST = cli_sets(preset="cli")
cfg_of = cfg_builder("short", "traffic.load=0.6", "measure.drain_cycles=300")


def topo_of(spec):
    return build(*spec)


# ----------------------------------------------------------------------- latency keys
@pytest.mark.parametrize("key,medium", [("electric_cycles", True), ("optical_cycles", False)])
def test_medium_key_sets_exactly_the_links_of_its_medium(key, medium):
    """electric_cycles sets every intra-rack link and no other, optical_cycles every inter-rack one."""
    t = topo_of(SF)
    base = build_layout(t)
    lay = build_layout(t, **{key: 77})
    mine = base.intra_rack if medium else ~base.intra_rack
    assert mine.any() and (~mine).any()
    assert np.all(lay.latency[mine] == 77)
    assert np.array_equal(lay.latency[~mine], base.latency[~mine])
    assert np.array_equal(lay.latency_set, mine)
    assert np.array_equal(lay.cable_m, base.cable_m)              # cables stay as they are


@pytest.mark.parametrize("spec", [DF, GF], ids=["dragonfly", "galaxyfly"])
def test_class_key_sets_exactly_the_links_of_its_class(spec):
    """class_cycles = "c:v" gives every link of class c latency v and leaves the others alone,
    for each of the topology's classes."""
    t = topo_of(spec)
    base = build_layout(t)
    for i, name in enumerate(t.link_class_names):
        lay = build_layout(t, class_cycles=f"{name}:123")
        mine = t.link_class == i
        assert mine.any()
        assert np.all(lay.latency[mine] == 123)
        assert np.array_equal(lay.latency[~mine], base.latency[~mine])
        assert np.array_equal(lay.latency_set, mine)


def test_several_classes_in_one_key():
    """Pairs separated by commas or spaces set each class; the dict form is the same."""
    t = topo_of(GF)
    lay = build_layout(t, class_cycles="local:5, global_intra_cluster:6 global_inter_cluster:7")
    assert np.array_equal(lay.latency, np.array([5, 6, 7])[t.link_class])
    same = build_layout(t, class_cycles={"local": 5, "global_intra_cluster": 6,
                                         "global_inter_cluster": 7})
    assert np.array_equal(same.latency, lay.latency)
    assert parse_class_cycles("") == {}


def test_precedence_link_latency_then_class_then_medium_then_cable():
    """router.link_latency > class_cycles > electric/optical_cycles > the cable formula."""
    t = topo_of(DF)
    base = build_layout(t)
    lay = build_layout(t, electric_cycles=11, optical_cycles=22, class_cycles="global:33")
    glob = t.link_class == 1
    intra = lay.intra_rack
    assert np.all(lay.latency[glob] == 33)                        # class beats medium
    assert np.all(lay.latency[~glob & intra] == 11)
    assert np.all(lay.latency[~glob & ~intra] == 22)
    only_class = build_layout(t, class_cycles="global:33")
    assert np.array_equal(only_class.latency[~glob], base.latency[~glob])   # cable elsewhere
    lat, _ = link_latency_of(t, lay, 4)
    assert np.all(lat == 4)                                       # router.link_latency wins


def test_layout_keys_override_latencies_the_topology_carries():
    """On links a layout key names, its value replaces the topology's own latency
    (Dragonfly local_latency/global_latency); the other links keep the topology's."""
    t = build("dragonfly", {"h": 2, "local_latency": 3, "global_latency": 9})
    lay = build_layout(t, class_cycles="global:40")
    lat, _ = link_latency_of(t, lay, 0)
    assert np.array_equal(lat, np.where(t.link_class == 1, 40, 3))
    lat0, _ = link_latency_of(t, build_layout(t), 0)
    assert np.array_equal(lat0, np.where(t.link_class == 1, 9, 3))


def test_defaults_are_the_cable_layout():
    """All new keys at their defaults give the same racks and latencies as before (no key set)."""
    t = topo_of(GF)
    a = build_layout(t)
    b = build_layout(t, cabinets=0, cabinet_routers=0, electric_cycles=0, optical_cycles=0,
                     class_cycles="")
    for f in ("router_rack", "intra_rack", "cable_m", "latency"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert np.array_equal(a.router_rack, t.group) and not a.latency_set.any()


@pytest.mark.parametrize("name", ["layout-latency", "fastest"])
def test_golden_digest_unchanged_with_the_keys_at_their_defaults(name):
    """A golden run on layout latencies, with every new key given at its default, still has its
    stored digest."""
    cfg = golden_cfg(name)
    cfg["layout"].update(cabinets=0, cabinet_routers=0, electric_cycles=0, optical_cycles=0,
                         class_cycles="")
    assert result_digest(run_local(cfg), cfg) == stored()[name]


# ----------------------------------------------------------------------- cabinets
@pytest.mark.parametrize("C", [1, 3, 7, 50])
def test_cabinets_are_C_equal_runs_in_group_order(C):
    """cabinets = C gives C cabinets of floor(R/C) or ceil(R/C) routers, each a run of the
    routers in group order; a link is intra-rack exactly when both ends share a cabinet."""
    t = topo_of(SF)
    R = t.n_routers
    lay = build_layout(t, cabinets=C)
    assert lay.n_racks == C
    sizes = np.bincount(lay.router_rack, minlength=C)
    assert sizes.sum() == R and sizes.min() == R // C and sizes.max() == -(-R // C)
    order = np.lexsort((np.arange(R), t.group))
    assert np.all(np.diff(lay.router_rack[order]) >= 0)
    ends = lay.router_rack[t.links]
    assert np.array_equal(lay.intra_rack, ends[:, 0] == ends[:, 1])
    assert lay.summary()["rack_routers"] == {"min": R // C, "max": -(-R // C)}


def test_cabinets_keep_groups_whole_when_the_cuts_fall_between_groups():
    """9 Dragonfly groups of 4 in 3 cabinets: 3 whole groups per cabinet."""
    t = topo_of(DF)
    lay = build_layout(t, cabinets=3)
    assert np.array_equal(lay.router_rack, t.group // 3)


@pytest.mark.parametrize("spec,C,per_cabinet", [
    (("slimfly", {"q": 13, "p": 10}), 10, (330, 340)),
    (("dragonfly", {"h": 5, "a": 11, "p": 5, "g": 56}), 14, (220, 220)),
    (("galaxyfly", {"n": 15, "q": 29, "a": 4, "p": 2}), 15, (232, 232)),
    (("galaxyfly", {"n": 15, "q": 29, "a": 1, "p": 7}), 15, (203, 203)),
    (("galaxyfly", {"n": 81, "q": 1, "a": 10, "p": 4}), 9, (360, 360)),
], ids=["SF", "DF", "GF(15,29,4,2)", "GF(15,29,1,7)", "GF(81,1,10,4)"])
def test_004_deployments_hold_200_to_360_terminals_per_cabinet(spec, C, per_cabinet):
    """004 Sec. 5.3's cabinet counts (SF 10, DF 14, GF 15, 15, 9) give cabinets of 200-360
    terminals; the Galaxyfly cabinets hold whole clusters."""
    t = build(*spec)
    lay = build_layout(t, cabinets=C)
    eps = np.bincount(lay.router_rack, weights=t.endpoints, minlength=C)
    assert (eps.min(), eps.max()) == per_cabinet
    if spec[0] == "galaxyfly":
        cl = t.meta["cluster"]
        assert all(np.unique(lay.router_rack[cl == c]).size == 1 for c in np.unique(cl))


def test_cabinet_routers_fills_with_whole_groups_and_splits_larger_ones():
    """cabinet_routers = K: a group that fits in the room left joins the cabinet, else opens a
    new one; a group larger than K fills cabinets of K and leaves its last one's room."""
    g = np.repeat(np.arange(5), [3, 3, 7, 2, 2])
    cab, n = cabinet_of(g, cabinet_routers=4)
    assert n == 5
    assert cab.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 4, 4, 4, 4]
    cab, n = cabinet_of(g, cabinet_routers=3)
    assert cab.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5] and n == 6
    t = topo_of(SF)                           # 5 racks of 10: two per cabinet of 25
    lay = build_layout(t, cabinet_routers=25)
    assert lay.n_racks == 3 and np.array_equal(lay.router_rack, t.group // 2)


# ----------------------------------------------------------------------- the engine and analysis
def test_run_uses_key_latencies_for_lookahead_and_buffers_and_parts_agree():
    """A run with cabinets and 20/40-cycle links: its links carry those latencies, the
    lookahead of a cabinet split is the optical latency, the automatic VC buffers cover each
    link's round trip, and 1 and 2 parts give identical results."""
    cfg = cfg_of("layout.cabinets=2", "layout.electric_cycles=20", "layout.optical_cycles=40")
    prep = prepare(cfg)
    lay = build_layout(prep.topo, **cfg["layout"])
    assert np.array_equal(prep.link_latency, np.where(lay.intra_rack, 20, 40))
    owner = lay.router_rack.astype(np.int32)
    assert lookahead_of(prep.topo, owner, prep.link_latency) == 40
    cap, _ = vc_capacities(cfg["router"], prep.link_latency, prep.rp.num_vcs)
    assert np.all(cap >= 2 * np.asarray(prep.link_latency))
    whole = run_local(cfg, prep=prep)
    assert whole["summary"]["measured_packets"] > 0
    assert_same_results(whole, run_local(cfg, owner=owner, prep=prep))
    assert_same_results(whole, run_local(cfg, owner=(np.arange(prep.topo.n_routers) % 2)
                                         .astype(np.int32), prep=prep))


def test_latency_analysis_uses_the_key_latencies():
    """pdes analyze's link latencies are the keys' cycles times cycle_ns; the rounding is over
    the cable links only."""
    t = topo_of(GF)
    lay = build_layout(t, cycle_ns=0.5, class_cycles="global_inter_cluster:30")
    ns, info = link_latency_ns(t, lay)
    inter = t.link_class == 2
    assert np.all(ns[inter] == 15.0)
    assert info["latency_keys_links"] == int(inter.sum())
    base_ns, base = link_latency_ns(t, build_layout(t, cycle_ns=0.5))
    assert np.array_equal(ns[~inter], base_ns[~inter])
    assert info["link_rounding_ns_max"] <= base["link_rounding_ns_max"]
    _, all_keyed = link_latency_ns(t, build_layout(t, electric_cycles=3, optical_cycles=4))
    assert all_keyed["link_rounding_ns_max"] is None


# ----------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kw,match", [
    ({"class_cycles": "nonsense:4"}, r"layout\.class_cycles: 'nonsense' is not a link class"),
    ({"class_cycles": "local=4"}, r"layout\.class_cycles: expected class:cycles"),
    ({"class_cycles": "local:0"}, r"layout\.class_cycles: local: cycles must be"),
    ({"class_cycles": "local:1,local:2"}, r"layout\.class_cycles: class 'local' is given twice"),
    ({"electric_cycles": -1}, r"layout\.electric_cycles: must be an integer in \[0"),
    ({"optical_cycles": 10 ** 6 + 1}, r"layout\.optical_cycles: must be an integer in \[0"),
    ({"cabinets": 51}, r"layout\.cabinets: 51 cabinets for 50 routers"),
    ({"cabinets": 2, "cabinet_routers": 3}, r"layout\.cabinet_routers: give layout\.cabinets"),
])
def test_bad_keys_name_the_layout_key(kw, match):
    """Every bad value of a new key raises ParameterError naming layout.<key>."""
    with pytest.raises(ParameterError, match=match):
        build_layout(topo_of(SF), **kw)


BAD = [   # (--set values, the key the error line names)
    (["layout.class_cycles=global_inter_cluster:50"], "layout.class_cycles"),   # not SF's
    (["layout.class_cycles=local:50;global:100"], "layout.class_cycles"),
    (["layout.class_cycles=local:2000000"], "layout.class_cycles"),
    (["layout.electric_cycles=0.5"], "layout.electric_cycles"),
    (["layout.optical_cycles=1000001"], "layout.optical_cycles"),
    (["layout.cabinets=-1"], "layout.cabinets"),
    (["layout.cabinets=51"], "layout.cabinets"),
    (["layout.cabinets=2", "layout.cabinet_routers=10"], "layout.cabinet_routers"),
]


def _sets(sets):
    return [a for s in sets for a in ("--set", s)]


@pytest.mark.parametrize("sets,key", BAD, ids=[f"{k}-{i}" for i, (_, k) in enumerate(BAD)])
def test_bad_keys_are_one_line_exit_2_from_the_cli(tmp_path, sets, key):
    """`pdes run` with a bad layout key: exit 2, one `pdes: error: layout.<key>` line, no
    traceback, no output file."""
    r = run_pdes("run", *FAST, *_sets(sets), "-o", str(tmp_path / "o.h5"), cwd=tmp_path)
    lines = [ln for ln in r.stderr.strip().splitlines() if not ln.startswith("[pdes]")]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith(f"pdes: error: {key}:") and "Traceback" not in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_unknown_class_is_refused_by_topo_and_analyze(tmp_path):
    """`pdes topo` and `pdes analyze` refuse a class the topology lacks the same way."""
    for cmd in (["topo", "slimfly"], ["analyze", "slimfly", "--only", "latency"]):
        r = run_pdes(*cmd, "--set", "layout.class_cycles=global_inter_cluster:5", cwd=tmp_path)
        assert r.returncode == 2, r.stderr
        assert r.stderr.strip().splitlines()[-1].startswith("pdes: error: layout.class_cycles:")


@pytest.mark.mpi(min_size=2)
def test_bad_keys_under_mpi_are_one_line_exit_2_on_every_rank(capfd):
    """Under MPI a bad layout key gives status 2 on every rank and one error line (rank 0)."""
    from mpi4py import MPI

    from pdes.cli import main
    comm = MPI.COMM_WORLD
    for sets, key in BAD:
        capfd.readouterr()
        status = main(["run", *FAST, *_sets(sets)])
        err = capfd.readouterr().err
        assert_refused_on_every_rank(
            comm, status, err, lambda line: line.startswith(f"pdes: error: {key}:"), sets)
        comm.Barrier()


@pytest.mark.mpi(min_size=2)
def test_class_latencies_on_every_rank_equal_the_serial_run():
    """A run with class latencies and cabinets on all ranks equals the one-process run."""
    from mpi4py import MPI

    from pdes.engine import simulate
    cfg = cfg_of("topology.name=dragonfly", "topology.h=2", "layout.cabinets=3",
                 "layout.class_cycles=local:6,global:25")
    assert_same_results(simulate(cfg, MPI.COMM_WORLD), simulate(cfg, None))


def test_summary_is_json_ready():
    """The layout summary with every new key set is plain JSON."""
    lay = build_layout(topo_of(DF), cabinets=3, electric_cycles=4, class_cycles="global:9")
    s = json.loads(json.dumps(lay.summary()))
    assert s["racks_from"] == "cabinets" and s["class_cycles"] == {"global": 9}
    assert s["latency_set_links"] == topo_of(DF).n_links
