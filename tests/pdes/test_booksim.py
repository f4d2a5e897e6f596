"""BookSim2 configs read by `pdes run`, and the anynet / edge-list exports with link latencies."""
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
    m = cfg["measure"]
    assert (m["sample_period"], m["warmup"], m["warmup_cycles"]) == (500, "fixed", 2 * 500)
    assert m["measure_cycles"] == (8 - 2) * 500 and m["seed"] == 7
    assert all(given for key, _, given in used if key not in ("router.link_latency",
                                                              "router.pipeline"))
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
    assert cfg["traffic"] == {"pattern": "uniform", "load": pytest.approx(0.1)}
    assert (m["sample_period"], m["warmup_cycles"], m["measure_cycles"], m["seed"]) == \
        (1000, 3000, 7000, 0)
    given = {k: g for k, _, g in used}
    assert given["topology.path"] and not given["router.num_vcs"]
    text = "\n".join(booksim.describe("x.cfg", used, []))
    assert "--set router.num_vcs=16   # BookSim default" in text


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


@pytest.mark.parametrize("traffic,expect", [
    ("tornado(12,1,1)", {"pattern": "tornado"}),
    ("neighbor(12,1,1)", {"pattern": "shift", "s": 1}),
    ("bitcomp", {"pattern": "bitcomp"}),
])
def test_traffic_patterns(tmp_path, traffic, expect):
    """Patterns with the same destinations in pdes are mapped; digit patterns only in 1-D."""
    anynet_ring(tmp_path)
    raw, _, _ = booksim.to_pdes({"topology": "anynet", "network_file": "net.anynet",
                                 "routing_function": "min", "traffic": traffic}, str(tmp_path))
    assert {k: v for k, v in raw["traffic"].items() if k != "load"} == expect


@pytest.mark.parametrize("bs,key", [
    ({"vc_allocator": "islip"}, "vc_allocator"),
    ({"frobnicate": 1}, "frobnicate"),
    ({"routing_function": "ugal"}, "routing_function"),
    ({"topology": "torus"}, "topology"),
    ({"traffic": "hotspot"}, "traffic"),
    ({"traffic": "tornado"}, "traffic"),           # k=8, n=2 by default: a 2-D digit pattern
    ({"injection_rate": "{0.1,0.2}"}, "injection_rate"),
    ({"classes": 2}, "classes"),
    ({"sim_type": "throughput"}, "sim_type"),
    ({"seed": "time"}, "seed"),
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
                                      "routing_function = min;\nsw_allocator = islip;\n")
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
