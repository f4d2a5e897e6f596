"""BookSim2 configs read by `pdes run`, and the anynet / edge-list exports with link latencies."""
import numpy as np
import pytest

from models.core.errors import ParameterError
from pdes import booksim
from pdes import config as C
from tests.helpers import anynet_ring, run_pdes

# every key pdes maps, with values unlike BookSim's defaults
ALL_KEYS = """\
// BookSim2 config with every mapped key
topology = anynet;
network_file = "net.anynet";
routing_function = min;
traffic = randperm;
injection_rate = {0.05};
injection_rate_uses_flits = 0;
packet_size = 4;
num_vcs = 4;
vc_buf_size = 32;
credit_delay = 2;
routing_delay = 2; vc_alloc_delay = 3;
sw_alloc_delay = 4;
st_prepare_delay = 1;
st_final_delay = 2;
internal_speedup = 2.0;
sample_period = 500;
warmup_periods = 2;
max_samples = 8;
seed = 7;
sim_type = latency;
print_activity = 1;   // output only
watch_out = "-";
vc_allocator = separable_input_first;
sw_allocator = separable_output_first;
alloc_iters = 2;
input_speedup = 2;
output_buffer_size = -1;
hold_switch_for_packet = 1;
wait_for_tail_credit = 1;
"""


# ----------------------------------------------------------------------------- parsing
def test_parse_syntax():
    """`key = value;` statements, // comments, quotes, lists, several on a line or across lines."""
    text = ('// c\ntopology = anynet; k = 4;\nnetwork_file = "a b.anynet";\n'
            'injection_rate = {0.1,0.2};\nrouting_delay =\n  2;  // tail\n')
    assert booksim.parse(text) == {"topology": "anynet", "k": 4, "network_file": "a b.anynet",
                                   "injection_rate": "{0.1,0.2}", "routing_delay": 2}


@pytest.mark.parametrize("text,msg", [
    ("topology = anynet", "no ';'"),
    ("topology anynet;", "not a BookSim statement"),
    ("a = 1;\nb = ;\n", "booksim.b: no value"),
])
def test_parse_errors(text, msg):
    """Malformed statements raise one ParameterError with the line or the key."""
    with pytest.raises(ParameterError, match=msg):
        booksim.parse(text, "x.cfg")


# ----------------------------------------------------------------------------- mapping
def test_every_mapped_key_resolves(tmp_path):
    """A config with every mapped key gives the documented pdes config (conversions included)."""
    anynet_ring(tmp_path)
    cfg_path = tmp_path / "all.cfg"
    cfg_path.write_text(ALL_KEYS)
    raw, used, notes = booksim.load(str(cfg_path))
    cfg = C.resolve(raw)
    assert cfg["topology"] == {"name": "file", "path": str(tmp_path / "net.anynet"),
                               "format": "anynet", "p": 1}
    assert (cfg["routing"]["algorithm"], cfg["routing"]["vcs"]) == ("table_min", "any")
    assert cfg["traffic"]["pattern"] == "randperm"
    assert cfg["traffic"]["load"] == pytest.approx(0.05 * 4)       # packets -> flits per cycle
    r = cfg["router"]
    assert (r["packet_size"], r["num_vcs"], r["vc_buffer_flits"]) == (4, 4, 32)
    assert (r["credit_delay"], r["routing_delay"], r["vc_alloc_delay"], r["sw_alloc_delay"]) == \
        (2, 2, 3, 4)
    assert r["st_delay"] == 1 + 2 and r["internal_speedup"] == 2.0
    assert r["link_latency"] == 1              # unweighted anynet channels: 1 cycle
    assert r["pipeline"] == "booksim"          # the keys mean BookSim's cycles
    assert r["allocation"] == "booksim"        # ... and allocation is BookSim's
    assert (r["vc_allocator"], r["sw_allocator"], r["alloc_iters"]) == \
        ("separable_input_first", "separable_output_first", 2)
    assert r["output_buffer_flits"] == 4 * 32  # unlimited: never refuses a flit with a credit
    assert r["hold_switch_for_packet"] and r["wait_for_tail_credit"]
    assert r["input_speedup"] == 2
    m = cfg["measure"]
    assert (m["sample_period"], m["warmup"], m["warmup_cycles"]) == (500, "fixed", 2 * 500)
    assert m["measure_cycles"] == (8 - 2) * 500 and m["seed"] == 7
    assert all(given for key, _, given in used if key not in ("router.link_latency",
                                                              "router.pipeline",
                                                              "router.allocation"))
    assert any("print_activity" in n for n in notes) and any("watch_out" in n for n in notes)


@pytest.mark.parametrize("stmt,key", [("vc_alloc_delay = 0;", "vc_alloc_delay"),
                                      ("sw_alloc_delay = 0;", "sw_alloc_delay"),
                                      ("st_final_delay = 0;", "st_final_delay")])
def test_zero_allocator_or_crossbar_delay_is_refused(tmp_path, stmt, key):
    """BookSim refuses allocators without delay (and asserts on a crossbar without): so does pdes."""
    anynet_ring(tmp_path)
    bs = booksim.parse("topology = anynet;\nnetwork_file = net.anynet;\nrouting_function = min;\n"
                       + stmt, "x.cfg")
    with pytest.raises(ParameterError, match=f"booksim.{key}: .*>= 1"):
        booksim.to_pdes(bs, str(tmp_path))


def test_booksim_defaults_fill_missing_keys(tmp_path):
    """Mapped keys the file leaves out take BookSim's defaults, marked as such."""
    anynet_ring(tmp_path, weights=[3] * 6)
    raw, used, _ = booksim.to_pdes({"topology": "anynet", "network_file": "net.anynet",
                                    "routing_function": "min"}, str(tmp_path))
    cfg = C.resolve(raw)
    r, m = cfg["router"], cfg["measure"]
    assert (r["num_vcs"], r["vc_buffer_flits"], r["credit_delay"], r["st_delay"]) == (16, 8, 0, 1)
    assert r["internal_speedup"] == 1.0 and r["link_latency"] == 0   # weights: file latencies
    assert cfg["traffic"] == {"pattern": "uniform", "load": pytest.approx(0.1),
                              "injection": "bernoulli", "burst_alpha": None, "burst_beta": None,
                              "burst_r1": None}
    assert (m["sample_period"], m["warmup_cycles"], m["measure_cycles"], m["seed"]) == \
        (1000, 3000, 7000, 0)
    given = {k: g for k, _, g in used}
    assert given["topology.path"] and not given["router.num_vcs"]
    text = "\n".join(booksim.describe("x.cfg", used, []))
    assert "--set router.num_vcs=16   # BookSim default" in text


def test_link_failures_map_to_faults(tmp_path):
    """BookSim's link_failures and fail_seed become faults.link_count and faults.seed, and
    the run fails that many links of the network."""
    anynet_ring(tmp_path)
    base = {"topology": "anynet", "network_file": "net.anynet", "routing_function": "min"}
    raw, _, notes = booksim.to_pdes({**base, "link_failures": 1, "fail_seed": 5}, str(tmp_path))
    cfg = C.resolve(raw)
    assert (cfg["faults"]["link_count"], cfg["faults"]["seed"]) == (1, 5)
    assert any("link_failures = 1" in n for n in notes)
    from pdes.build import plan_routing
    assert plan_routing(cfg)[0].n_links == 5          # the 6-router ring without one link
    raw, _, _ = booksim.to_pdes(base, str(tmp_path))
    assert "faults" not in raw


def test_rate_in_flits_and_converging_warmup(tmp_path):
    """injection_rate_uses_flits keeps the rate; warmup_periods = 0 becomes a converging warm-up."""
    anynet_ring(tmp_path)
    raw, _, _ = booksim.to_pdes({"topology": "anynet", "network_file": "net.anynet",
                                 "routing_function": "min", "injection_rate": 0.3,
                                 "injection_rate_uses_flits": 1, "packet_size": 4,
                                 "warmup_periods": 0, "acc_warmup_thres": 0.02,
                                 "sample_period": 100, "max_samples": 20}, str(tmp_path))
    cfg = C.resolve(raw)
    assert cfg["traffic"]["load"] == pytest.approx(0.3)
    m = cfg["measure"]
    assert (m["warmup"], m["warmup_tolerance"], m["max_warmup_cycles"]) == ("converge", 0.02, 2000)
    assert m["measure_cycles"] == 19 * 100


@pytest.mark.parametrize("traffic,keys,expect", [
    # on the node ids: pdes's tornado is per dimension on a torus, mesh or flatfly
    ("tornado({12,1,1})", {}, {"pattern": "shift", "s": 5}),
    ("neighbor({12,1,1})", {}, {"pattern": "shift", "s": 1}),
    # BookSim reads "(12,1,1)" as one token: k = atoi("12,1,1") = 12, n and xr from the keys
    ("tornado(12,1,1)", {"n": 1}, {"pattern": "shift", "s": 5}),
    ("bitcomp", {}, {"pattern": "bitcomp"}),
    ("diagonal", {}, {"pattern": "diagonal"}),
    ("asymmetric", {}, {"pattern": "asymmetric"}),
    # {{nodes},{rates}}; the last rate repeats, extra rates are dropped
    ("hotspot({{3,7,9},{2,5}})", {}, {"pattern": "hotspot_rates", "nodes": [3, 7, 9],
                                      "rates": [2, 5, 5]}),
    ("hotspot({{3},{2,5}})", {}, {"pattern": "hotspot_rates", "nodes": [3], "rates": [2]}),
    # one level of braces is BookSim's parameter list itself: node 3 at rate 7
    ("hotspot({3,7})", {}, {"pattern": "hotspot_rates", "nodes": [3], "rates": [7]}),
    ("hotspot(4)", {}, {"pattern": "hotspot_rates", "nodes": [4], "rates": [1]}),
    ("hotspot", {}, {"pattern": "hotspot_rates", "nodes": [-1], "rates": [1]}),
    ("background({{0,5,5}})", {}, {"pattern": "background", "exclude": [0, 5]}),
    ("background({5,6})", {}, {"pattern": "background", "exclude": [5]}),
    ("bad_dragon", {"k": 1}, {"pattern": "bad_dragon", "group_endpoints": 2}),
    ("bad_dragon({1,1})", {"k": 3}, {"pattern": "bad_dragon", "group_endpoints": 2}),
    ("badperm_yarc({3})", {}, {"pattern": "badperm_yarc", "k": 3}),
    ("badperm_yarc", {"k": 1, "xr": 3}, {"pattern": "badperm_yarc", "k": 3}),
])
def test_traffic_patterns(tmp_path, traffic, keys, expect):
    """Patterns with the same destinations in pdes are mapped, their parameters read as BookSim
    tokenizes them; digit patterns only in 1-D."""
    anynet_ring(tmp_path)
    raw, _, _ = booksim.to_pdes({"topology": "anynet", "network_file": "net.anynet",
                                 "routing_function": "min", "traffic": traffic, **keys},
                                str(tmp_path))
    assert {k: v for k, v in raw["traffic"].items() if k != "load"} == expect


def test_the_1d_tornado_on_a_torus_shifts_the_node_ids(tmp_path):
    """BookSim's tornado({N,1,1}) sends node s to s + ceil(N/2) - 1 on a torus too (found
    by a parity pass: it was mapped to pdes's tornado, per coordinate on a torus, and pdes
    saturated at 0.15 where BookSim carried 0.2 on an 8 x 8 torus)."""
    from pdes.build import prepare
    raw, _, _ = booksim.to_pdes({"topology": "torus", "k": 8, "n": 2, "routing_function":
                                 "dim_order", "traffic": "tornado({64,1,1})"}, str(tmp_path))
    prep = prepare(C.resolve(raw, [f"measure.{k}=100" for k in ("warmup_cycles", "measure_cycles",
                                                               "sample_period")]))
    assert prep.traffic.table.tolist() == [(s + 31) % 64 for s in range(64)]


@pytest.mark.parametrize("traffic,keys,why", [
    ("tornado(12,1,1)", {}, "n=2"),                     # n from the key: BookSim's default 2
    ("taper64", {}, None),                              # refused when the pattern is built
    ("hotspot({{12}})", {}, "below the 12 nodes"),
    ("hotspot({{1},{0}})", {}, "positive"),
    ("background", {}, "excluded nodes"),
    ("background({{0,1,2,3,4,5,6,7,8,9,10,11}})", {}, "leaving one"),
    ("bad_dragon", {}, "2k\\*k = 128"),                  # k = 8 by default
    ("badperm_yarc", {}, "k x xr = 8"),
])
def test_traffic_parameters_outside_the_rule_are_refused(tmp_path, traffic, keys, why):
    """A pattern whose parameters do not fit the 12 nodes is refused naming booksim.traffic."""
    anynet_ring(tmp_path)
    bs = {"topology": "anynet", "network_file": "net.anynet", "routing_function": "min",
          "traffic": traffic, **keys}
    if why is None:
        raw, _, _ = booksim.to_pdes(bs, str(tmp_path))
        with pytest.raises(ParameterError, match="^traffic.pattern: taper64 .*64 endpoints"):
            from pdes.build import prepare
            prepare(C.resolve(raw))
        return
    with pytest.raises(ParameterError, match=f"^booksim.traffic: .*{why}"):
        booksim.to_pdes(bs, str(tmp_path))


@pytest.mark.parametrize("keys,expect", [
    ({"injection_process": "on_off"},
     {"injection": "on_off", "burst_alpha": 0.5, "burst_beta": 0.5, "burst_r1": -1.0}),
    ({"injection_process": "on_off", "burst_alpha": -1, "burst_r1": 0.5},
     {"injection": "on_off", "burst_alpha": -1.0, "burst_beta": 0.5, "burst_r1": 0.5}),
    ({"injection_process": "on_off({0.1,-1,0.4})", "burst_alpha": 0.9},
     {"injection": "on_off", "burst_alpha": 0.1, "burst_beta": -1.0, "burst_r1": 0.4}),
    ({"injection_process": "bernoulli", "burst_beta": 0.1}, {}),
])
def test_injection_process(tmp_path, keys, expect):
    """on_off maps to traffic.injection with BookSim's burst keys (or its parentheses);
    bernoulli is pdes's default, and the burst keys are then ignored with a note."""
    anynet_ring(tmp_path)
    raw, _, notes = booksim.to_pdes({"topology": "anynet", "network_file": "net.anynet",
                                     "routing_function": "min", "injection_rate": 0.1, **keys},
                                    str(tmp_path))
    assert {k: v for k, v in raw["traffic"].items() if k not in ("pattern", "load")} == expect
    cfg = C.resolve(raw)
    assert cfg["traffic"]["injection"] == expect.get("injection", "bernoulli")
    if not expect:
        assert any(n.startswith("booksim.burst_beta: ignored") for n in notes)


@pytest.mark.parametrize("keys,key", [
    ({"injection_process": "on_off", "burst_r1": 0.3}, "burst_r1"),     # none negative
    ({"injection_process": "on_off", "injection_rate": 0.6}, "burst_r1"),   # r1 = 1.2
    ({"injection_process": "on_off({0.5,0.5,-1,1})"}, "injection_process"),  # initial states
    ({"injection_process": "poisson"}, "injection_process"),
])
def test_bad_injection_process_is_refused(tmp_path, keys, key):
    """An on_off source BookSim would refuse, or pdes cannot start the same way, is refused."""
    anynet_ring(tmp_path)
    with pytest.raises(ParameterError) as exc:
        booksim.to_pdes({"topology": "anynet", "network_file": "net.anynet",
                         "routing_function": "min", **keys}, str(tmp_path))
    assert str(exc.value).startswith(f"booksim.{key}: ")


@pytest.mark.parametrize("bs,key", [
    ({"vc_allocator": "wavefront"}, "vc_allocator"),
    ({"output_buffer_size": 0}, "output_buffer_size"),
    ({"frobnicate": 1}, "frobnicate"),
    ({"routing_function": "ugal"}, "routing_function"),
    ({"topology": "cmesh"}, "topology"),
    ({"topology": "torus"}, "routing_function"),   # BookSim's torus has no 'min'
    ({"topology": "torus", "routing_function": "dim_order", "k": 2}, "k"),
    ({"topology": "dragonflynew", "k": 2, "n": 2}, "n"),
    ({"topology": "fattree", "routing_function": "nca", "n": 4}, "n"),
    ({"topology": "flatfly", "routing_function": "ran_min", "c": 4}, "c"),  # BookSim: c = xr*yr
    ({"traffic": "zigzag"}, "traffic"),
    ({"traffic": "tornado"}, "traffic"),           # k=8, n=2 by default: a 2-D digit pattern
    ({"injection_rate": "{0.1,0.2}"}, "injection_rate"),
    ({"classes": 2}, "classes"),
    ({"packet_size": 4, "packet_size_rate": 2}, "packet_size_rate"),
    ({"sim_type": "throughput"}, "sim_type"),
    ({"seed": "time"}, "seed"),
    ({"link_failures": 2, "fail_seed": "time"}, "fail_seed"),
    ({"link_failures": -1}, "link_failures"),
    ({"injection_rate": 0.5, "packet_size": 4}, "injection_rate"),
    ({"max_samples": 3}, "max_samples"),
])
def test_unmappable_keys_are_refused(tmp_path, bs, key):
    """A key pdes cannot map is refused with a message naming booksim.<key>."""
    anynet_ring(tmp_path)
    full = {"topology": "anynet", "network_file": "net.anynet", "routing_function": "min", **bs}
    with pytest.raises(ParameterError) as exc:
        booksim.to_pdes(full, str(tmp_path))
    assert str(exc.value).startswith(f"booksim.{key}: ")


def test_one_packet_size_at_rate_1_is_accepted(tmp_path):
    """packet_size_rate = {1} (one packet size, BookSim's default) is accepted (it was refused
    as a key pdes does not know)."""
    anynet_ring(tmp_path)
    raw, _, _ = booksim.to_pdes({"topology": "anynet", "network_file": "net.anynet",
                                 "routing_function": "min", "packet_size": 4,
                                 "packet_size_rate": "{1}"}, str(tmp_path))
    assert raw["router"]["packet_size"] == 4


def test_booksim_file_detection(tmp_path):
    """.cfg is BookSim, .toml is TOML, an extension-less file by its content."""
    (tmp_path / "a.toml").write_text("[traffic]\nload = 0.1\n")
    (tmp_path / "anynet_config").write_text("topology = anynet;\n")
    (tmp_path / "plain").write_text("[traffic]\nload = 0.1\n")
    assert booksim.looks_like_booksim(str(tmp_path / "x.cfg"))
    assert not booksim.looks_like_booksim(str(tmp_path / "a.toml"))
    assert booksim.looks_like_booksim(str(tmp_path / "anynet_config"))
    assert not booksim.looks_like_booksim(str(tmp_path / "plain"))


# ----------------------------------------------------------------------------- CLI
def test_cli_unmappable_key_exit_2_one_line(tmp_path):
    """`pdes run bad.cfg` prints one `pdes: error: booksim.<key>` line and exits 2."""
    anynet_ring(tmp_path)
    (tmp_path / "bad.cfg").write_text("topology = anynet;\nnetwork_file = net.anynet;\n"
                                      "routing_function = min;\nsw_allocator = wavefront;\n")
    r = run_pdes("run", "bad.cfg", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pdes: error: booksim.sw_allocator: cannot be "
                                                   "mapped to pdes (")


def test_cli_unmappable_key_under_mpi(tmp_path):
    """Under mpiexec -n 2 the refusal is printed once and every rank exits 2."""
    anynet_ring(tmp_path)
    (tmp_path / "bad.cfg").write_text("topology = anynet;\nnetwork_file = net.anynet;\n"
                                      "routing_function = valiant;\n")
    r = run_pdes("run", "--booksim", "bad.cfg", nranks=2, cwd=tmp_path, timeout=120)
    assert r.returncode == 2
    assert r.stderr.count("pdes: error: booksim.routing_function:") == 1


def test_cli_print_config_and_overrides(tmp_path):
    """--print-config prints the resolved TOML; --set applies on top; the keys used go to stderr."""
    anynet_ring(tmp_path)
    (tmp_path / "b.cfg").write_text(ALL_KEYS.replace("net.anynet", "net.anynet"))
    r = run_pdes("run", "--booksim", "b.cfg", "--set", "measure.seed=9", "--print-config",
                 cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "seed = 9" in r.stdout and "vc_buffer_flits = 32" in r.stdout
    assert "--set router.st_delay=3" in r.stderr and "BookSim config b.cfg read as:" in r.stderr
    q = run_pdes("run", "b.cfg", "--print-config", "--quiet", cwd=tmp_path)
    assert q.returncode == 0 and q.stderr == "" and "seed = 7" in q.stdout
    both = run_pdes("run", "b.cfg", "--booksim", "b.cfg", cwd=tmp_path)
    assert both.returncode == 2 and "not both" in both.stderr


def test_run_booksim_cfg_on_exported_anynet(tmp_path):
    """`pdes topo --export anynet` then `pdes run booksim.cfg` runs end to end with those latencies."""
    r = run_pdes("topo", "slimfly", "--set", "topology.q=5", "--set", "router.link_latency=2",
                 "--export", "anynet", "sf.anynet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (tmp_path / "booksim.cfg").write_text(
        "topology = anynet;\nnetwork_file = sf.anynet;\nrouting_function = min;\n"
        "traffic = uniform;\ninjection_rate = 0.05;\nnum_vcs = 2;\nvc_buf_size = 16;\n"
        "credit_delay = 2;\ninternal_speedup = 2.0;\nsample_period = 100;\nwarmup_periods = 2;\n"
        "max_samples = 6;\n")
    r = run_pdes("run", "booksim.cfg", "--json", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    import json
    s = json.loads(r.stdout)
    assert s["accepted_load"] == pytest.approx(0.05, rel=0.2) and not s["saturated"]
    # zero-load as in BookSim: each endpoint channel 1 + 1 cycles, each link 2 + 1, each router 1
    h = s["hops_mean"]
    assert s["network_latency_mean"] == pytest.approx(4 + 3 * h + (h + 1), abs=0.3)


def test_id_patterns_need_the_files_node_ids(tmp_path):
    """Bit and digit patterns are refused when pdes's endpoint ids are not the file's node ids."""
    p = tmp_path / "net.anynet"
    p.write_text("router 0 node 1 router 1\nrouter 1 node 0\n")
    base = {"topology": "anynet", "network_file": "net.anynet", "routing_function": "min"}
    with pytest.raises(ParameterError, match="booksim.traffic: .*node ids"):
        booksim.to_pdes({**base, "traffic": "bitcomp"}, str(tmp_path))
    raw, _, _ = booksim.to_pdes({**base, "traffic": "uniform"}, str(tmp_path))
    assert raw["traffic"]["pattern"] == "uniform"


def test_shared_buf_size_gives_each_vc_its_share(tmp_path):
    """buf_size > 0 gives each VC buf_size // num_vcs flits, as BookSim's private buffers do."""
    anynet_ring(tmp_path)
    raw, _, _ = booksim.to_pdes({"topology": "anynet", "network_file": "net.anynet",
                                 "routing_function": "min", "num_vcs": 3, "buf_size": 100},
                                str(tmp_path))
    assert raw["router"]["buffer_flits"] == 99


# ----------------------------------------------------------------------------- BookSim's networks
# BookSim2's example configs (src/examples), comments left out.
EXAMPLES = {
    "torus88": """\
topology = torus;
k = 8;
n = 2;
routing_function = dim_order;
num_vcs = 2;
traffic = uniform;
injection_rate = 0.15;
""",
    "mesh88_lat": """\
topology = mesh;
k = 8;
n = 2;
routing_function = dor;
num_vcs     = 8;
vc_buf_size = 8;
wait_for_tail_credit = 1;
vc_allocator = islip;
sw_allocator = islip;
alloc_iters  = 1;
credit_delay   = 2;
routing_delay  = 0;
vc_alloc_delay = 1;
sw_alloc_delay = 1;
input_speedup     = 2;
output_speedup    = 1;
internal_speedup  = 1.0;
traffic = transpose;
packet_size = 20;
sim_type = latency;
injection_rate = 0.005;
""",
    "dragonflyconfig": """\
vc_buf_size = 256;
wait_for_tail_credit = 0;
vc_allocator = separable_input_first;
sw_allocator = separable_input_first;
alloc_iters  = 1;
credit_delay   = 2;
routing_delay  = 0;
vc_alloc_delay = 1;
sw_alloc_delay = 1;
st_final_delay = 1;
input_speedup     = 1;
output_speedup    = 1;
internal_speedup  = 2.0;
warmup_periods = 3;
sim_count          = 1;
sample_period  = 10000;
routing_function = min;
num_vcs     = 2;
priority = none;
traffic       = uniform;
injection_rate = 0.8;
packet_size = 10;
injection_rate_uses_flits=1;
topology = dragonflynew;
k  = 4;
n  = 1;
watch_out=-;
""",
    "fattree_config": """\
hold_switch_for_packet=1;
vc_buf_size = 16;
wait_for_tail_credit = 0;
vc_allocator = separable_input_first;
sw_allocator = separable_input_first;
alloc_iters  = 1;
credit_delay   = 2;
routing_delay  = 0;
vc_alloc_delay = 1;
sw_alloc_delay = 1;
st_final_delay = 1;
input_speedup     = 1;
output_speedup    = 1;
internal_speedup  = 1.0;
warmup_periods = 3;
sim_count          = 1;
sample_period  = 10000;
routing_function = nca;
num_vcs     = 4;
priority = none;
traffic       = uniform;
injection_rate = 0.6;
packet_size = 1;
injection_rate_uses_flits=1;
topology = fattree;
k  = 4;
n  = 3;
watch_out=-;
""",
    "flatflyconfig": """\
num_vcs     = 8;
vc_buf_size = 4;
wait_for_tail_credit = 0;
vc_allocator = islip;
sw_allocator = islip;
alloc_iters  = 1;
credit_delay   = 2;
routing_delay  = 0;
vc_alloc_delay = 1;
sw_alloc_delay = 1;
st_final_delay = 1;
input_speedup     = 1;
output_speedup    = 1;
internal_speedup  = 1.0;
warmup_periods = 3;
sample_period  = 1000;
sim_count          = 1;
traffic       = uniform;
topology = flatfly;
subnets = 1;
c  = 4;
k  = 4;
n  = 2;
x  = 4;
y  = 4;
xr = 2;
yr = 2;
routing_function = ran_min;
use_read_write = 0;
packet_size = 1;
injection_rate = 0.1;
read_request_size=1;
write_request_size=1;
read_reply_size=1;
write_reply_size=1;
read_request_begin_vc  = 0;
read_request_end_vc    = 3;
write_reply_begin_vc   = 4;
write_reply_end_vc     = 7;
read_reply_begin_vc    = 4;
read_reply_end_vc      = 7;
write_request_begin_vc = 0;
write_request_end_vc   = 3;
sim_type = latency;
""",
    "anynet_config": """\
topology = anynet;
routing_function = min;
network_file = anynet_file;
traffic = uniform;
use_read_write = 0;
sample_period = 10000;
injection_rate = 0.01;
vc_allocator = separable_input_first;
sw_allocator = separable_input_first;
alloc_iters  = 1;
num_vcs     = 1;
vc_buf_size = 3;
""",
}
ANYNET_FILE = """\
router 0 node 0 node 1 node 2 router 1
router 1 node 3 node 4 node 5
router 2 node 6 node 7 node 8 router 1 router 0
"""
SHORT = "sample_period = 100;\nwarmup_periods = 1;\nmax_samples = 3;\n"
"""Appended to each example (a key given twice keeps its last value): 200 measured cycles."""

# example -> (pdes topology, its parameters, routing, routing parameters, endpoints, link latency)
EXPECT = {
    "torus88": ("torus", {"dims": [8, 8], "p": 1, "wrap": True}, "dor", {}, 64, 2),
    "mesh88_lat": ("torus", {"dims": [8, 8], "p": 1, "wrap": False}, "dor", {}, 64, 1),
    "dragonflyconfig": ("dragonfly", {"h": 4, "a": 8, "p": 4, "g": 33, "local_latency": 10,
                                      "global_latency": 100}, "min", {}, 1056, 0),
    "fattree_config": ("fattree", {"k": 8, "levels": 3, "pods": 4}, "min",
                       {"vc_scheme": "phase"}, 64, 1),
    "flatflyconfig": ("hyperx", {"sizes": [4, 4], "p": 4, "grid_latency": [2, 2]}, "dor", {}, 64,
                      0),
    "anynet_config": ("file", {"format": "anynet"}, "table_min", {"vcs": "any"}, 9, 1),
}


def write_example(tmp_path, name, extra=SHORT):
    """The example's text (plus ``extra``) as ``name`` in tmp_path; anynet's network file beside it."""
    (tmp_path / "anynet_file").write_text(ANYNET_FILE)
    path = tmp_path / name
    path.write_text(EXAMPLES[name] + extra)
    return path


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_booksim_examples_map_to_their_pdes_networks(tmp_path, name):
    """Each of BookSim's example configs resolves to the documented pdes topology, parameters,
    routing, endpoint count and channel latency."""
    from pdes.build import prepare
    raw, used, notes = booksim.load(str(write_example(tmp_path, name)))
    cfg = C.resolve(raw)
    topo, params, alg, knobs, endpoints, latency = EXPECT[name]
    assert cfg["topology"]["name"] == topo
    assert {k: cfg["topology"][k] for k in params} == params
    assert cfg["routing"]["algorithm"] == alg
    assert {k: cfg["routing"][k] for k in knobs} == knobs
    assert cfg["router"]["link_latency"] == latency
    prep = prepare(cfg)
    assert prep.topo.n_endpoints == endpoints
    ignored = {n.split(":")[0] for n in notes if "not read by topology" in n}
    read = booksim.NETWORKS.get(EXAMPLES[name].split("topology = ")[1].split(";")[0], (0, ()))[1]
    assert ignored == {f"booksim.{k}" for k in booksim.NETWORK_KEYS
                       if k in booksim.parse(EXAMPLES[name]) and k not in read}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_booksim_examples_run(tmp_path, name, capsys, monkeypatch):
    """`pdes run EXAMPLE` (the CLI, in-process) runs each of BookSim's example configs to the end
    at a low load and reports its summary."""
    import json
    from pdes.cli import main
    # 0.05 flits per cycle per node, measured over 600 cycles; dragonflynew's packets take some
    # 250 cycles and mesh88_lat's have 20 flits: 2000 cycles there
    long = name in ("dragonflyconfig", "mesh88_lat")
    phases = (f"sample_period = {1000 if long else 200};\nwarmup_periods = 1;\n"
              f"max_samples = {3 if long else 4};\n")
    path = write_example(tmp_path, name, phases + "injection_rate = 0.05;\n"
                         "injection_rate_uses_flits = 1;\n")
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(path), "--json", "--quiet"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["measured_packets"] > 0 and not s["saturated"], s["saturated_reason"]


def test_booksim_link_latencies_reach_the_run(tmp_path):
    """dragonflynew's local and global channels take 10 and 100 cycles, flatfly's xr (yr) cycles
    per column (row) of its grid, as BookSim sets them."""
    from pdes.build import prepare
    df = prepare(C.resolve(booksim.load(str(write_example(tmp_path, "dragonflyconfig")))[0]))
    lat = df.link_latency
    assert set(lat[df.topo.link_class == 0]) == {10} and set(lat[df.topo.link_class == 1]) == {100}
    ff = prepare(C.resolve(booksim.load(str(write_example(tmp_path, "flatflyconfig")))[0]))
    a, b = ff.topo.links[:, 0], ff.topo.links[:, 1]
    assert list(ff.link_latency) == list(2 * abs(a % 4 - b % 4) + 2 * abs(a // 4 - b // 4))


def test_booksim_node_numbering_is_reproduced(tmp_path):
    """pdes's endpoint ids are BookSim's node ids: on the torus node i sits on router i and
    transpose sends it where BookSim does; on dragonflynew node i sits on router i // p; on the
    fat tree node i on leaf i // k, nodes i // k^2 sharing a subtree."""
    from pdes.build import prepare

    def prep_of(name, extra=""):
        return prepare(C.resolve(booksim.load(str(write_example(tmp_path, name, SHORT + extra)))[0]))

    torus = prep_of("torus88", "traffic = transpose;\n")
    ep_router = np.repeat(np.arange(torus.topo.n_routers), torus.topo.endpoints)
    assert np.array_equal(ep_router, np.arange(64))
    # BookSim's transpose of 64 nodes swaps the low and high 3 bits of the node id
    want = np.array([((i & 7) << 3) | (i >> 3) for i in range(64)])
    table = torus.traffic.table
    moving = want != np.arange(64)
    assert np.array_equal(table[moving], want[moving])
    df = prep_of("dragonflyconfig")
    ep_router = np.repeat(np.arange(df.topo.n_routers), df.topo.endpoints)
    assert np.array_equal(ep_router, np.arange(1056) // 4)
    assert np.array_equal(df.topo.group, np.arange(264) // 8)
    ft = prep_of("fattree_config")
    ep_router = np.repeat(np.arange(ft.topo.n_routers), ft.topo.endpoints)
    assert np.array_equal(ep_router, np.arange(64) // 4)
    level = ft.topo.meta["level"]
    up = {}
    for u, v in ft.topo.links:
        lo, hi = (u, v) if level[u] < level[v] else (v, u)
        if level[lo] == 0:
            up.setdefault(int(lo), set()).add(int(hi))
    for leaf in range(16):        # leaves share their level-1 routers iff in the same subtree
        for other in range(16):
            assert (up[leaf] == up[other]) == (leaf // 4 == other // 4)


def test_booksim_routing_functions_by_network(tmp_path):
    """Every routing function pdes maps runs the documented pdes routing; one it does not map
    is refused naming the accepted ones for that topology."""
    from pdes.build import plan_routing
    for topo, (_, _, table) in booksim.NETWORKS.items():
        base = {"torus": {"k": 4, "n": 2}, "mesh": {"k": 4, "n": 2},
                "flatfly": {"k": 3, "n": 2, "x": 3, "y": 3}, "dragonflynew": {"k": 2, "n": 1},
                "fattree": {"k": 2, "n": 3}}[topo]
        for func, (alg, knobs) in table.items():
            vcs = booksim.FIXED_VCS.get((topo, func), (16,))[0]
            raw, _, _ = booksim.to_pdes({"topology": topo, "routing_function": func,
                                         "num_vcs": vcs, **base}, str(tmp_path))
            cfg = C.resolve(raw)
            assert cfg["routing"]["algorithm"] == alg
            assert all(cfg["routing"][k] == v for k, v in knobs.items())
            plan_routing(cfg)              # the pdes routing accepts the network
        with pytest.raises(ParameterError) as exc:
            booksim.to_pdes({"topology": topo, "routing_function": "chaos", **base}, str(tmp_path))
        msg = str(exc.value)
        assert msg.startswith("booksim.routing_function: ") and "\n" not in msg
        assert f"accepted: {', '.join(table)}" in msg


@pytest.mark.parametrize("func,vcs,need", [("min", 16, 2), ("min", 4, 2), ("min", 1, 2),
                                           ("ugal", 2, 3), ("ugal", 4, 3)])
def test_booksim_dragonfly_routings_fix_the_vc_count(tmp_path, func, vcs, need):
    """min_dragonflynew sends every network hop on VC 0 or 1 whatever num_vcs is (its other VCs
    serve only the injection channel), ugal_dragonflynew asserts num_vcs = 3: any other count
    (BookSim's default of 16 too) is refused naming the one that maps."""
    with pytest.raises(ParameterError) as exc:
        booksim.to_pdes({"topology": "dragonflynew", "k": 2, "n": 1, "routing_function": func,
                         **({"num_vcs": vcs} if vcs != 16 else {})}, str(tmp_path))
    msg = str(exc.value)
    assert msg.startswith(f"booksim.num_vcs: cannot be mapped to pdes ({vcs}") and \
        msg.endswith(f"give num_vcs = {need})") and "\n" not in msg
    assert ("(BookSim default)" in msg) == (vcs == 16)
    raw, _, _ = booksim.to_pdes({"topology": "dragonflynew", "k": 2, "n": 1,
                                 "routing_function": func, "num_vcs": need}, str(tmp_path))
    assert C.resolve(raw)["router"]["num_vcs"] == need


def test_booksim_examples_keep_booksims_allocation(tmp_path):
    """The examples' allocators and switch/VC holding keys map onto router.allocation =
    "booksim": mesh88_lat's iSLIP allocators and wait_for_tail_credit (with 8-flit VCs for
    20-flit packets: wormhole), fattree_config's hold_switch_for_packet."""
    mesh = C.resolve(booksim.load(str(write_example(tmp_path, "mesh88_lat")))[0])["router"]
    assert (mesh["allocation"], mesh["vc_allocator"], mesh["sw_allocator"]) == \
        ("booksim", "islip", "islip")
    assert mesh["wait_for_tail_credit"] and not mesh["hold_switch_for_packet"]
    assert (mesh["vc_buffer_flits"], mesh["packet_size"]) == (8, 20)
    ft = C.resolve(booksim.load(str(write_example(tmp_path, "fattree_config")))[0])["router"]
    assert ft["hold_switch_for_packet"] and not ft["wait_for_tail_credit"]
    assert ft["vc_allocator"] == "separable_input_first"


DRAGON_HOTSPOT = """\
topology = dragonflynew;
k = 2;
n = 1;
routing_function = min;
num_vcs = 2;
vc_buf_size = 32;
packet_size = 1;
traffic = hotspot({{0}});
injection_rate_uses_flits = 1;
injection_rate = 0.02;
vc_allocator = separable_input_first;
sw_allocator = separable_input_first;
sample_period = 500;
warmup_periods = 2;
max_samples = 4;
seed = 1;
"""


def test_booksim_dragonfly_ejects_on_the_packets_phase_vc(tmp_path, capsys, monkeypatch):
    """BookSim's min_dragonflynew gives the ejection hop the one VC of the packet's phase (0
    within the source group, 1 from the global hop on), so a hot spot's ejection port passes
    one packet per VC every two cycles (a VC freed by a tail is granted from the next cycle):
    1-flit packets from the other groups, all on VC 1, eject at most every other cycle.  BookSim2
    (28f4329) accepts 0.0083 to 0.0087 flits per cycle per node at an offered 0.0125 to 0.02 on
    this network (72 nodes, a hot-spot sink of 0.60 to 0.63 flits per cycle); with every VC of the
    ejection port open, pdes sank 1.0."""
    import json
    from pdes.cli import main
    raw, _, _ = booksim.to_pdes({"topology": "dragonflynew", "k": 2, "n": 1,
                                 "routing_function": "min", "num_vcs": 2}, str(tmp_path))
    assert C.resolve(raw)["routing"]["eject_vcs"] == "class"
    raw, _, _ = booksim.to_pdes({"topology": "torus", "k": 4, "n": 2,
                                 "routing_function": "dim_order"}, str(tmp_path))
    assert C.resolve(raw)["routing"]["eject_vcs"] == "any"    # dim_order_torus: every VC there
    with pytest.raises(C.ConfigError, match="routing.eject_vcs"):
        C.resolve({"routing": {"eject_vcs": "class"}})         # pdes's vct allocation
    path = tmp_path / "hot.cfg"
    path.write_text(DRAGON_HOTSPOT)
    monkeypatch.chdir(tmp_path)
    sink = {}
    for eject in ("class", "any"):
        assert main(["run", str(path), "--json", "--quiet",
                     "--set", f"routing.eject_vcs={eject}"]) == 0
        s = json.loads(capsys.readouterr().out)
        sink[eject] = s["accepted_load"] * 72
    assert 0.55 < sink["class"] < 0.68, sink
    assert sink["any"] > 0.9, sink
