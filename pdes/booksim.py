"""BookSim2 config files read as pdes configs.

A BookSim2 config is a list of ``key = value;`` statements with ``//``
comments; values are integers, floats, names (quoted or not) or BookSim's
``{a,b,...}`` lists (one value per traffic class).  :func:`load` turns such a
file into a raw pdes config (the sections of :mod:`pdes.config`), for the keys
whose meaning pdes has; every other key present in the file is refused with a
:class:`~models.core.errors.ParameterError` naming ``booksim.<key>``.

Three kinds of keys (the tables below are the single place that lists them):

* :data:`MAPPED` -- turned into pdes keys by :func:`to_pdes` (with BookSim's
  default when the file does not give them, so that the file means what it
  means to BookSim);
* :data:`ONLY` -- accepted when their value is the one pdes implements
  (e.g. ``classes = 1``), refused otherwise;
* :data:`IGNORED` -- output, tracing and convergence keys that change no
  simulated behaviour pdes has; accepted, with a note.

The defaults and meanings follow BookSim2's ``booksim_config.cpp``,
``trafficmanager.cpp``, ``traffic.cpp``, ``routefunc.cpp``, the network files
(``networks/anynet.cpp``, ``kncube.cpp``, ``flatfly_onchip.cpp``,
``dragonfly.cpp``, ``fattree.cpp``) and ``routers/router.cpp`` (Jiang et al.,
ISPASS 2013).  BookSim's own networks are built by pdes's families of the
same graphs (:data:`NETWORKS`).
"""
from __future__ import annotations

import math
import os
import re

from models.core.errors import ParameterError

SUFFIXES = (".cfg", ".booksim")
"""Extensions of a BookSim config given as ``pdes run CONFIG``."""

# BookSim2's defaults of the keys pdes maps (booksim_config.cpp)
MAPPED = {
    "topology": "torus",
    "network_file": "",
    "routing_function": "none",
    "traffic": "uniform",
    "injection_rate": 0.1,
    "injection_rate_uses_flits": 0,
    "packet_size": 1,
    "num_vcs": 16,
    "vc_buf_size": 8,
    "buf_size": -1,
    "buffer_policy": "private",
    "private_buf_size": 1,
    "credit_delay": 0,
    "routing_delay": 1,
    "vc_alloc_delay": 1,
    "sw_alloc_delay": 1,
    "st_prepare_delay": 0,
    "st_final_delay": 1,
    "internal_speedup": 1.0,
    "vc_allocator": "islip",
    "sw_allocator": "islip",
    "alloc_iters": 1,
    "output_buffer_size": -1,
    "hold_switch_for_packet": 0,
    "wait_for_tail_credit": 0,
    "input_speedup": 1,
    "sample_period": 1000,
    "warmup_periods": 3,
    "max_samples": 10,
    "acc_warmup_thres": 0.05,
    "seed": 0,
    "link_failures": 0,
    "fail_seed": 0,
    "k": 8,
    "n": 2,
    "c": 1,
    "x": 8,
    "y": 8,
    "xr": 1,
    "injection_process": "bernoulli",
    "burst_alpha": 0.5,
    "burst_beta": 0.5,
    "burst_r1": -1.0,
    "yr": 1,
    "use_noc_latency": 1,
}

# keys accepted only with the value pdes implements: key -> (values, what pdes does)
ONLY = {
    "sim_type": (("latency",), "pdes measures as BookSim's latency mode"),
    "router": (("iq",), "pdes models BookSim's input-queued router"),
    "classes": ((1,), "pdes has one traffic class"),
    "packet_size_rate": ((1,), "pdes runs one packet size (packet_size), not a distribution of "
                         "sizes"),
    "subnets": ((1,), "pdes has one network"),
    "sim_count": ((1,), "one simulation per run"),
    "use_read_write": ((0,), "no request/reply traffic"),
    "private_bufs": ((-1,), "with buffer_policy = shared every VC has a private part of its "
                     "own (private_bufs = -1)"),
    "private_buf_start_vc": ((-1,), "every VC has a private part of its own"),
    "private_buf_end_vc": ((-1,), "every VC has a private part of its own"),
    "max_held_slots": ((-1,), "pdes's shared policy lets one VC take every shared slot "
                       "(max_held_slots belongs to BookSim's limited policies)"),
    "arb_type": (("round_robin",), "pdes's allocators arbitrate round-robin"),
    "speculative": ((0,), "pdes has no speculative switch allocation"),
    "noq": ((0,), "pdes has no next-hop output queueing"),
    "output_speedup": ((1,), "pdes's speedup is internal_speedup"),
    "priority": (("none",), "pdes has no packet priorities"),
    "measure_stats": ((1,), "pdes measures its one class"),
    "sim_power": ((0,), "pdes has no power model"),
    "channel_file": (("",), "pdes gives the channel latencies of BookSim's networks"),
}

# keys that change no simulated behaviour pdes has: key -> why
_OUTPUT = "output/tracing only"
IGNORED = {
    **{k: _OUTPUT for k in (
        "print_activity", "print_csv_results", "viewer_trace", "watch_file", "watch_flits",
        "watch_packets", "watch_transactions", "watch_out", "stats_out", "sent_packets_out",
        "injected_flits_out", "received_flits_out", "stored_flits_out", "sent_flits_out",
        "outstanding_credits_out", "ejected_flits_out", "active_packets_out", "used_credits_out",
        "free_credits_out", "max_credits_out", "power_output_file", "tech_file", "channel_width",
        "channel_sweep", "deadlock_warn_timeout", "pair_stats")},
    "include_queuing": "pdes reports both packet latency (with source queueing) and network "
                       "latency (without)",
    "latency_thres": "pdes detects saturation itself (measure.saturation_tolerance, drain)",
    "warmup_thres": "pdes's converging warm-up compares the accepted rate only",
    "stopping_thres": "pdes measures a fixed window (see measure.measure_cycles)",
    "acc_stopping_thres": "pdes measures a fixed window (see measure.measure_cycles)",
    "perm_seed": "pdes draws randperm's permutation from measure.seed",
    "in_ports": "single-router network only",
    "out_ports": "single-router network only",
    "output_delay": "read by no BookSim router",
    "batch_size": "batch mode only", "batch_count": "batch mode only",
    "max_outstanding_requests": "batch mode only",
    **{f"{kind}_{what}": "read/write traffic only; pdes refuses use_read_write = 1"
       for kind in ("read_request", "write_request", "read_reply", "write_reply")
       for what in ("size", "begin_vc", "end_vc")},
}

# BookSim traffic pattern -> pdes pattern, where the destinations are the same (those
# with parameters, and tornado/neighbor, are mapped in _traffic)
TRAFFIC = {"uniform": "uniform", "randperm": "randperm", "bitcomp": "bitcomp",
           "bitrev": "bitrev", "shuffle": "shuffle", "transpose": "transpose",
           "diagonal": "diagonal", "asymmetric": "asymmetric", "taper64": "taper64",
           "background": "background", "hotspot": "hotspot_rates", "bad_dragon": "bad_dragon",
           "badperm_yarc": "badperm_yarc"}
DIGIT = ("tornado", "neighbor", "bad_dragon", "badperm_yarc")
"""The patterns that read BookSim's k, n (and xr) when their parentheses do not give them."""

_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*;\s*$")


def _error(key: str, rule: str) -> ParameterError:
    return ParameterError(f"booksim.{key}: {rule}")


def _refuse(key: str, why: str) -> ParameterError:
    return _error(key, f"cannot be mapped to pdes ({why})")


# --------------------------------------------------------------------------- parsing
def parse(text: str, path: str = "config") -> dict:
    """``{key: value}`` of a BookSim config text (ints, floats, strings; lists as strings).

    Statements may share a line or span lines, as in BookSim's grammar.
    A key given twice keeps its last value, as in BookSim.
    """
    stripped = "\n".join(line.split("//", 1)[0] for line in text.splitlines())
    chunks = stripped.split(";")
    out = {}
    line = 1
    for i, stmt in enumerate(chunks):
        here = line + stmt[:len(stmt) - len(stmt.lstrip())].count("\n")
        line += stmt.count("\n")
        if not stmt.strip():
            continue
        if i == len(chunks) - 1:
            raise ParameterError(f"config: {path} line {here}: the last statement has no ';': "
                                 f"{stmt.strip()[:60]!r}")
        m = _LINE.match(stmt.strip() + ";")
        if not m:
            raise ParameterError(f"config: {path} line {here}: not a BookSim statement "
                                 f"'key = value;': {stmt.strip()[:60]!r}")
        out[m.group(1)] = _value(m.group(2), m.group(1))
    return out


def _value(text: str, key: str):
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    if not text:
        raise _error(key, "no value")
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def looks_like_booksim(path: str) -> bool:
    """Whether ``pdes run CONFIG`` should read ``path`` as a BookSim config.

    By extension (``.cfg``, ``.booksim``); a ``.toml`` file never; any other
    file when it is not TOML but parses as BookSim statements.
    """
    ext = os.path.splitext(path)[1].lower()
    if ext in SUFFIXES:
        return True
    if ext == ".toml":
        return False
    import tomllib
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError):
        return False
    try:
        tomllib.loads(text)
        return False
    except tomllib.TOMLDecodeError:
        pass
    try:
        return bool(parse(text, path))
    except ParameterError:
        return False


def read(path: str) -> dict:
    """The statements of a BookSim config file."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise ParameterError(f"config: file not found: {path}") from None
    except IsADirectoryError:
        raise ParameterError(f"config: {path} is a directory, not a BookSim config") from None
    except UnicodeDecodeError:
        raise ParameterError(f"config: {path} is not UTF-8 text") from None
    except OSError as exc:
        raise ParameterError(f"config: cannot read {path} ({exc.strerror})") from None
    return parse(text, path)


# --------------------------------------------------------------------------- mapping
def _single(key: str, value):
    """The one value of a per-class ``{...}`` list (pdes has one class)."""
    if isinstance(value, str) and value.startswith("{"):
        items = [x for x in value.strip("{}").split(",") if x.strip()]
        if len(items) != 1:
            raise _refuse(key, f"{value} gives one value per traffic class; pdes has one class")
        return _value(items[0].strip(), key)
    return value


def _int(key: str, value, lo: int | None = None) -> int:
    value = _single(key, value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _error(key, f"must be an integer, got {value!r}")
    if lo is not None and value < lo:
        raise _error(key, f"must be >= {lo}, got {value}")
    return value


def _float(key: str, value) -> float:
    value = _single(key, value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _error(key, f"must be a number, got {value!r}")
    if not math.isfinite(value):
        raise _error(key, f"must be a finite number, got {value!r}")
    return float(value)


def _str(key: str, value) -> str:
    value = _single(key, value)
    if not isinstance(value, str):
        raise _error(key, f"must be a name, got {value!r}")
    return value


def _shared_private(bs: dict, get, buf: int, vcs: int, size: int) -> int:
    """pdes's ``router.private_vc_flits`` of BookSim's ``private_buf_size`` (shared policy):
    -1 gives each VC an equal share of the port (``buf_size / num_vcs``)."""
    value = get("private_buf_size")
    if isinstance(value, str) and value.startswith("{"):
        raise _refuse("private_buf_size", f"{value} gives one size per private buffer; pdes gives "
                      "every VC the same private size")
    pbs = _int("private_buf_size", value)
    total = buf if buf > 0 else vcs * _int("vc_buf_size", get("vc_buf_size"), 1)
    if pbs < 0:
        pbs = total // vcs
    default = "" if "private_buf_size" in bs else " (BookSim default)"
    if pbs < 1:
        raise _error("private_buf_size", f"{pbs} flits per VC{default}: a VC needs at least one")
    if pbs * vcs > total:
        raise _error("private_buf_size", f"num_vcs x private_buf_size = {vcs} x {pbs} = "
                     f"{vcs * pbs}, more than the port's {total} flits")
    return pbs


def _tokens(text: str) -> list[str]:
    """BookSim's list tokens (``tokenize_str``): text not starting with ``{`` is one token;
    else the items separated by commas or braces outside nested braces, so
    ``{{1,2},{3}}`` gives ``{1,2}`` and ``{3}``, and ``{1,2},{3}`` gives ``1`` and ``2``."""
    if not text:
        return []
    if text[0] != "{":
        return [text]
    out, start, nested = [], 1, 0
    for i in range(1, len(text)):
        c = text[i]
        if c == "{":
            nested += 1
        elif c == "}" and nested:
            nested -= 1
        elif c in ",}" and not nested:
            if i > start:
                out.append(text[start:i])
            start = i + 1
    return out


def _atoi(text: str) -> int:
    """C's ``atoi``, as BookSim reads an integer parameter: the leading integer, else 0."""
    m = re.match(r"\s*[+-]?\d+", text)
    return int(m.group()) if m else 0


def _atof(text: str) -> float:
    """C's ``atof`` on the forms BookSim's config grammar lets through: the leading number."""
    m = re.match(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text)
    return float(m.group()) if m else 0.0


def _call(text: str) -> tuple[str, list[str]]:
    """``(name, parameters)`` of BookSim's ``name(params)`` value (traffic, injection process):
    the text between the first ``(`` and the last ``)`` read as a list (:func:`_tokens`)."""
    name, paren, rest = text.partition("(")
    if not paren:
        return text, []
    right = rest.rfind(")")
    return name, _tokens(rest if right < 0 else rest[:right])


def _ints(text: str) -> list[int]:
    """BookSim's ``tokenize_int``."""
    return [_atoi(t) for t in _tokens(text)]


def _hotspot(args: list[str], nodes: int, notes: list) -> dict:
    """``hotspot({{nodes},{rates}})``: BookSim's hot-spot nodes (negative: drawn at random)
    and integer rates (the last one repeated; no rates: 1 each)."""
    spots = _ints(args[0]) if args else [-1]
    if not spots:
        raise _error("traffic", "hotspot needs at least one node")
    rates = _ints(args[1]) if len(args) > 1 else [1]
    if not rates:
        raise _error("traffic", "hotspot's rate list is empty")
    rates = (rates + [rates[-1]] * len(spots))[:len(spots)]
    if any(x >= nodes for x in spots):
        raise _error("traffic", f"hotspot nodes must be below the {nodes} nodes, got {spots}")
    if any(r <= 0 for r in rates):
        raise _error("traffic", f"hotspot rates must be positive, got {rates}")
    if any(x < 0 for x in spots):
        notes.append("booksim.traffic: hotspot nodes given as negative are drawn from "
                     "measure.seed, not from BookSim's generator")
    return {"pattern": "hotspot_rates", "nodes": spots, "rates": rates}


def _traffic(get, nodes: int, kept: bool, notes: list) -> dict:
    """pdes [traffic] keys (pattern and its parameters) of BookSim's ``traffic``."""
    text = _str("traffic", get("traffic"))
    name, args = _call(text)
    if name in TRAFFIC or name in DIGIT:
        if name not in ("uniform", "randperm") and not kept:
            raise _refuse("traffic", f"{name} maps node ids, and BookSim's node ids here are not "
                          "pdes's endpoint ids (0..N-1 router by router)")
    if name == "hotspot":
        return _hotspot(args, nodes, notes)
    if name == "background":
        if not args:
            raise _error("traffic", "background needs its excluded nodes: background({a,b,...})")
        ex = sorted(set(_ints(args[0])))
        if any(not 0 <= x < nodes for x in ex) or len(ex) >= nodes:
            raise _error("traffic", f"background's excluded nodes must be distinct ids in "
                         f"0..{nodes - 1}, leaving one, got {_ints(args[0])}")
        return {"pattern": "background", "exclude": ex} if ex else {"pattern": "background"}
    if name in DIGIT:
        # digit patterns of a k-ary n-cube with xr nodes per router along x (BookSim reads
        # each parameter the parentheses do not give from the key of that name)
        k = _atoi(args[0]) if len(args) > 0 else _int("k", get("k"), 1)
        n = _atoi(args[1]) if len(args) > 1 else _int("n", get("n"), 1)
        xr = _atoi(args[2]) if len(args) > 2 else _int("xr", get("xr"), 1)
    if name == "bad_dragon":
        # BookSim's dragonfly: 2k routers of k nodes per group; the next group, uniformly
        g = 2 * k * k
        if g <= 0 or nodes % g or nodes // g < 2:
            raise _refuse("traffic", f"bad_dragon with k={k} sends to the next group of 2k*k = "
                          f"{g} nodes; the {nodes} nodes are not 2 or more such groups")
        return {"pattern": "bad_dragon", "group_endpoints": g}
    if name == "badperm_yarc":
        K = xr * k
        if K < 2 or (K - 1) * K + (nodes - 1) // K >= nodes:
            raise _refuse("traffic", f"badperm_yarc with k x xr = {K} sends node s to "
                          f"r*{K} + s/{K} (r < {K}), beyond the {nodes} nodes")
        return {"pattern": "badperm_yarc", "k": K}
    if name in TRAFFIC:
        if name == "randperm" and args:
            notes.append("booksim.traffic: the seed of randperm(...) is ignored; pdes draws "
                         "the permutation from measure.seed")
        return {"pattern": TRAFFIC[name]}
    if name in ("tornado", "neighbor"):
        # the 1-dimensional case (n = 1, xr = 1, k = number of nodes) is a shift
        if n != 1 or xr != 1 or k != nodes:
            raise _refuse("traffic", f"{name} with k={k}, n={n}, xr={xr} permutes the digits of "
                          f"a k-ary n-cube; pdes maps only the 1-dimensional case "
                          f"{name}({{{nodes},1,1}}) on these {nodes} nodes")
        if name == "tornado":
            # node s -> s + ceil(N/2) - 1 on the node ids, as BookSim computes it: pdes's
            # tornado works per dimension of the router coordinates on a torus, mesh or
            # flattened butterfly, a different permutation
            s = (nodes + 1) // 2 - 1
            if s == 0:
                raise _refuse("traffic", f"tornado({{{nodes},1,1}}) sends every node to itself")
            return {"pattern": "shift", "s": s}
        return {"pattern": "shift", "s": 1}
    raise _refuse("traffic", f"{text!r} has no pdes pattern with the same destinations; mapped: "
                  f"{', '.join(sorted(TRAFFIC))}, tornado/neighbor({{N,1,1}})")


class _Mapping:
    """BookSim statements being mapped: lookups with BookSim's defaults, the pdes keys set
    so far (``used``) and the notes."""

    def __init__(self, bs: dict):
        self.bs = bs
        self.used: list[tuple[str, object, bool]] = []
        self.notes: list[str] = []

    def get(self, key):
        """The file's value of a :data:`MAPPED` key, else BookSim's default."""
        return self.bs.get(key, MAPPED[key])

    def put(self, pkey, value, *bkeys):
        """Set pdes key ``pkey``; it is "from the file" if any of ``bkeys`` is in it."""
        self.used.append((pkey, value, any(k in self.bs for k in bkeys)))


def _check_keys(bs: dict, notes: list) -> None:
    """Refuse (in file order) keys pdes cannot honour; note the ignored ones."""
    for key, value in bs.items():
        if key in MAPPED:          # network keys a network does not read: noted by _map_network
            continue
        if key in ONLY:
            allowed, why = ONLY[key]
            v = _single(key, value)
            if v not in allowed:
                raise _refuse(key, f"{key} = {value}: {why}; accepted: "
                              + ", ".join(str(a) if a != "" else '""' for a in allowed))
            continue
        if key in IGNORED:
            notes.append(f"booksim.{key}: ignored ({IGNORED[key]})")
            continue
        raise _refuse(key, "not a BookSim key pdes knows")


NETWORKS = {
    "torus": ("KNCube", ("k", "n", "use_noc_latency"),
              {"dim_order": ("dor", {}), "valiant": ("valiant", {}),
               "min_adapt": ("min_adaptive", {})}),
    "mesh": ("KNCube", ("k", "n"),
             {"dim_order": ("dor", {}), "dor": ("dor", {}), "valiant": ("valiant", {}),
              "min_adapt": ("min_adaptive", {})}),
    "flatfly": ("FlatFlyOnChip", ("k", "n", "c", "x", "y", "xr", "yr", "use_noc_latency"),
                {"ran_min": ("dor", {}), "xyyx": ("min", {}), "valiant": ("valiant", {}),
                 "ugal": ("ugal_l", {"n_indirect": 1})}),
    # BookSim's ugal: minimal unless its queue exceeds 2 x the non-minimal one + 30 flits
    "dragonflynew": ("DragonFlyNew", ("k", "n"),
                     # min_dragonflynew gives the ejection hop the one VC of the packet's
                     # phase (out_vc = f->ph, dragonfly.cpp), as every other hop
                     {"min": ("min", {"eject_vcs": "class"}),
                      "ugal": ("dragonfly_ugal", {"c": 2.0, "bias": 30.0,
                                                  "length_weighted": False})}),
    # BookSim's nca may use every VC on every hop: one class (up*/down* paths are acyclic)
    "fattree": ("FatTree", ("k", "n"),
                {"nca": ("min", {"vc_scheme": "phase"}), "anca": ("anca", {})}),
}
"""BookSim's networks pdes builds itself: topology -> (BookSim's class, the keys it reads,
{routing function: (pdes routing, its parameters)}); anynet files are read by _map_anynet."""

FIXED_VCS = {
    ("dragonflynew", "min"): (2, "BookSim's min_dragonflynew sends every network hop on VC 0 or 1 "
                              "(the packet's phase), whatever num_vcs is, and only its injection "
                              "channel on the others"),
    ("dragonflynew", "ugal"): (3, "BookSim's ugal_dragonflynew runs only with num_vcs = 3 (it "
                               "asserts it)"),
}
"""(network, routing function): (the VC count BookSim's function uses, why) where that routing
function ignores num_vcs's other values or refuses them."""

NETWORK_KEYS = ("k", "n", "c", "x", "y", "xr", "yr", "use_noc_latency")
"""BookSim's topology keys: read by the network that uses them, noted as ignored otherwise."""

DRAGONFLY_LATENCY = (10, 100)
"""Cycles of dragonflynew's local and global channels (dragonfly.cpp defines DRAGON_LATENCY)."""


def _map_network(m: _Mapping, base_dir: str):
    """[topology] keys and routing of BookSim's network; returns the network (a topology, with
    ``meta["node_ids_kept"]``: whether pdes's endpoint ids are BookSim's node ids)."""
    bs, get = m.bs, m.get
    topo = _str("topology", get("topology"))
    if topo == "anynet":
        network = _map_anynet(m, base_dir)
        read = ()
    elif topo in NETWORKS:
        network = _map_builtin(m, topo)
        read = NETWORKS[topo][1]
    else:
        raise _refuse("topology", f"{topo!r}{' (BookSim default)' if 'topology' not in bs else ''}"
                      f": pdes builds BookSim's {', '.join(NETWORKS)} and reads anynet files "
                      "(export a pdes topology with 'pdes topo NAME --export anynet FILE'); "
                      "accepted: anynet, " + ", ".join(NETWORKS))
    digit = str(bs.get("traffic", "")).startswith(DIGIT)
    for key in NETWORK_KEYS:
        if key in bs and key not in read and not (digit and key in ("k", "n", "xr")):
            m.notes.append(f"booksim.{key}: ignored (not read by topology = {topo})")
    return network


def _map_anynet(m: _Mapping, base_dir: str):
    """[topology] keys and routing of an anynet network file."""
    get, put = m.get, m.put
    net = _str("network_file", get("network_file"))
    if not net:
        raise _error("network_file", "required with topology = anynet")
    if not os.path.isabs(net):
        net = os.path.normpath(os.path.join(base_dir, net))
    put("topology.name", "file", "topology")
    put("topology.format", "anynet", "topology")
    put("topology.path", net, "network_file")
    from models.topologies.file import file_link_latency, from_file
    if not os.path.isfile(net):
        raise _error("network_file", f"file not found: {net}")
    network = from_file(net, format="anynet")
    carried = file_link_latency(network)
    if carried is None:
        # BookSim's anynet channels without a weight take one cycle
        put("router.link_latency", 1, "topology")

    routing = _str("routing_function", get("routing_function"))
    if routing != "min":
        raise _refuse("routing_function", f"{routing!r}: BookSim's anynet has only 'min' "
                      "(pdes's own algorithms: --set routing.algorithm=NAME)")
    # BookSim's anynet min: its next-hop table, every VC at every hop
    put("routing.algorithm", "table_min", "routing_function")
    put("routing.vcs", "any", "routing_function")
    return network


def _map_builtin(m: _Mapping, topo: str):
    """[topology], link latency and routing of one of BookSim's own networks (:data:`NETWORKS`),
    built by pdes's family of the same graph; returns the network built."""
    get, put = m.get, m.put
    if "network_file" in m.bs:
        m.notes.append(f"booksim.network_file: ignored (topology = {topo} has no network file)")
    k = _int("k", get("k"), 1)
    n = _int("n", get("n"), 1)
    params, latency, kept = {
        "torus": _kncube, "mesh": _kncube, "flatfly": _flatfly, "dragonflynew": _dragonflynew,
        "fattree": _fattree}[topo](get, topo, k, n)
    name = {"torus": "torus", "mesh": "torus", "flatfly": "hyperx", "dragonflynew": "dragonfly",
            "fattree": "fattree"}[topo]
    keys = NETWORKS[topo][1]
    put("topology.name", name, "topology")
    for key, value in params.items():
        put(f"topology.{key}", value, "topology", *keys)
    put("router.link_latency", latency, "topology", *keys)
    routing = _str("routing_function", get("routing_function"))
    table = NETWORKS[topo][2]
    if routing not in table:
        raise _refuse("routing_function", f"{routing!r}{_default('routing_function', m.bs)} on "
                      f"topology = {topo}: not a routing function pdes has an equivalent of "
                      f"there; accepted: {', '.join(table)}")
    alg, knobs = table[routing]
    need = FIXED_VCS.get((topo, routing))
    if need is not None:
        vcs = _int("num_vcs", get("num_vcs"), 1)
        if vcs != need[0]:
            raise _refuse("num_vcs", f"{vcs}{_default('num_vcs', m.bs)}: {need[1]}; give "
                          f"num_vcs = {need[0]}")
    put("routing.algorithm", alg, "routing_function")
    for key, value in knobs.items():
        put(f"routing.{key}", value, "routing_function")
    from models.topology import build
    network = build(name, params)
    network.meta["node_ids_kept"] = kept
    return network


def _default(key: str, bs: dict) -> str:
    return "" if key in bs else " (BookSim default)"


def _kncube(get, topo, k, n):
    """BookSim's k-ary n-cube (torus) or n-dimensional mesh: k^n routers, one node each, node id =
    router id, dimension 0 fastest.  With use_noc_latency (its default) a torus channel takes 2
    cycles (its wraparound is longer), a mesh channel 1; without, every channel 1."""
    if topo == "torus" and k < 3:
        raise _refuse("k", f"k = {k}: BookSim's torus of k = {k} has two channels each way between "
                      "the routers of a ring; pdes's torus has one link per router pair; k >= 3")
    noc = _int("use_noc_latency", get("use_noc_latency")) == 1 if topo == "torus" else False
    return {"dims": [k] * n, "p": 1, "wrap": topo == "torus"}, 2 if noc else 1, True


def _flatfly(get, topo, k, n):
    """BookSim's on-chip flattened butterfly: k^n routers fully connected along each dimension
    (HyperX), c nodes each.  Its nodes are numbered on a grid of x*xr columns, so a router's c
    nodes are consecutive only when c = 1; with use_noc_latency (its default) a channel takes
    xr cycles per column and yr per row of a grid of x routers a row."""
    c, x, y = _int("c", get("c"), 1), _int("x", get("x"), 1), _int("y", get("y"), 1)
    xr, yr = _int("xr", get("xr"), 1), _int("yr", get("yr"), 1)
    if x != y or xr != yr or c != xr * yr:
        raise _error("c", f"BookSim's flatfly needs x = y, xr = yr and c = xr * yr (it stops "
                     f"otherwise), got x = {x}, y = {y}, xr = {xr}, yr = {yr}, c = {c}")
    params = {"sizes": [k] * n, "p": c}
    latency = 1
    if _int("use_noc_latency", get("use_noc_latency")) == 1:
        if x != k:
            raise _refuse("x", f"x = {x}: with use_noc_latency = 1 BookSim lays the routers out "
                          f"in rows of x; pdes's grid has k = {k} routers a row (set x = k, or "
                          "use_noc_latency = 0)")
        if xr > 3:
            raise _refuse("xr", f"xr = {xr}: with use_noc_latency = 1 BookSim's injection and "
                          "ejection channels then take more than 1 cycle for some nodes; pdes's "
                          "endpoint channels all take router.endpoint_latency (xr <= 3, or "
                          "use_noc_latency = 0)")
        params["grid_latency"] = [xr, yr]
        latency = 0
    return params, latency, c == 1


def _dragonflynew(get, topo, k, n):
    """BookSim's dragonflynew: p = k nodes and global channels per router, a = 2p routers per
    group, g = a p + 1 groups; node id = p * router + index, router id = a * group + index;
    local channels 10 cycles, global channels 100."""
    if n != 1:
        raise _refuse("n", f"n = {n}: BookSim's dragonflynew has one dimension per group (n = 1)")
    local, glob = DRAGONFLY_LATENCY
    return {"h": k, "a": 2 * k, "p": k, "g": 2 * k * k + 1, "local_latency": local,
            "global_latency": glob}, 0, True


def _fattree(get, topo, k, n):
    """BookSim's k-ary n-tree: n levels of k^(n-1) routers of radix 2k, k^n nodes, node d on
    leaf d // k; pdes's fat tree of radix 2k with k pods is the same graph for n = 2, 3."""
    if n not in (2, 3):
        raise _refuse("n", f"n = {n}: pdes's fat tree has 2 or 3 levels (BookSim's k-ary n-tree "
                      "with n = 2 or 3)")
    return {"k": 2 * k, "levels": n, "pods": k}, 1, True


def _map_traffic(m: _Mapping, network) -> int:
    """[traffic] keys (pattern, load) and the packet size; returns the packet size."""
    get, put = m.get, m.put
    for k, v in _traffic(get, network.n_endpoints, network.meta["node_ids_kept"],
                         m.notes).items():
        put(f"traffic.{k}", v, "traffic")
    size = _int("packet_size", get("packet_size"), 1)
    rate = _float("injection_rate", get("injection_rate"))
    flits = _int("injection_rate_uses_flits", get("injection_rate_uses_flits"))
    load = rate if flits else rate * size
    if not 0 < load <= 1:
        unit = "flits" if flits else f"packets of {size} flits"
        raise _error("injection_rate", f"{rate:g} {unit} per cycle per node is {load:g} flits per "
                     "cycle per node; pdes needs a load in (0, 1]")
    put("traffic.load", load, "injection_rate", "injection_rate_uses_flits", "packet_size")
    put("router.packet_size", size, "packet_size")
    _map_injection(m, load / size)
    return size


def _map_injection(m: _Mapping, rate: float) -> None:
    """``injection_process``: ``bernoulli`` as is (pdes's default), ``on_off`` with
    ``burst_alpha``, ``burst_beta``, ``burst_r1`` (or ``on_off({alpha,beta,r1})``) checked
    as BookSim derives the negative one from the packet rate ``rate``."""
    from models.traffic.injection import on_off_rates
    bs, get, put = m.bs, m.get, m.put
    name, args = _call(_str("injection_process", get("injection_process")))
    keys = ("burst_alpha", "burst_beta", "burst_r1")
    if name == "bernoulli":
        m.notes.extend(f"booksim.{k}: ignored (used by injection_process = on_off only)"
                       for k in keys if k in bs)
        return
    if name != "on_off":
        raise _refuse("injection_process", f"{name!r}: BookSim has bernoulli and on_off")
    if len(args) > 3:
        raise _refuse("injection_process", "on_off with a fourth parameter sets the initial "
                      "states; pdes draws each endpoint's initial state (on or off, 1/2 each)")
    values = [_atof(args[i]) if i < len(args) else _float(k, get(k)) for i, k in enumerate(keys)]
    try:
        on_off_rates(rate, *values)
    except ParameterError as exc:
        raise _error(str(exc).split(":", 1)[0].split(".", 1)[1],
                     str(exc).split(": ", 1)[1]) from None
    put("traffic.injection", "on_off", "injection_process")
    for i, (k, v) in enumerate(zip(keys, values)):
        put(f"traffic.{k}", v, *(("injection_process",) if i < len(args) else (k,)))


def _map_buffers(m: _Mapping, size: int) -> None:
    """[router] VCs and buffers of BookSim's private or shared buffer policy."""
    bs, get, put = m.bs, m.get, m.put
    vcs = _int("num_vcs", get("num_vcs"), 1)
    put("router.num_vcs", vcs, "num_vcs")
    buf = _int("buf_size", get("buf_size"))
    policy = _str("buffer_policy", get("buffer_policy"))
    if policy not in ("private", "shared"):
        raise _refuse("buffer_policy", f"buffer_policy = {policy}: pdes has BookSim's private and "
                      "shared policies (router.buffer_policy), not its limited, dynamic, shifting "
                      "or feedback ones; accepted: private, shared")
    if policy == "shared":
        put("router.buffer_policy", "shared", "buffer_policy")
        put("router.private_vc_flits", _shared_private(bs, get, buf, vcs, size),
            "private_buf_size", "buf_size", "vc_buf_size", "num_vcs")
        if buf > 0:
            put("router.buffer_flits", buf, "buf_size")          # the port's flits, as given
        else:
            put("router.vc_buffer_flits", _int("vc_buf_size", get("vc_buf_size"), 1),
                "vc_buf_size")                                    # num_vcs x this per port
    elif buf > 0:
        if buf < vcs:
            raise _error("buf_size", f"must be >= num_vcs ({vcs}): each VC gets buf_size // num_vcs "
                         f"flits, got {buf}")
        put("router.buffer_flits", buf // vcs * vcs, "buf_size", "num_vcs")
    else:
        put("router.vc_buffer_flits", _int("vc_buf_size", get("vc_buf_size"), 1), "vc_buf_size")
    if policy == "private" and "private_buf_size" in bs:
        m.notes.append("booksim.private_buf_size: ignored (used by the shared buffer policy only)")


def _map_pipeline(m: _Mapping) -> None:
    """[router] pipeline delays and internal speedup."""
    get, put = m.get, m.put
    # BookSim's timing of these keys (docs/router-model.md#pipeline-timing); its
    # allocators take at least a cycle (iq_router.cpp refuses 0), and so does its crossbar
    put("router.pipeline", "booksim", "router")
    for key, lo in (("credit_delay", 0), ("routing_delay", 0), ("vc_alloc_delay", 1),
                    ("sw_alloc_delay", 1)):
        put(f"router.{key}", _int(key, get(key), lo), key)
    crossbar = _int("st_prepare_delay", get("st_prepare_delay"), 0) \
        + _int("st_final_delay", get("st_final_delay"), 0)
    if crossbar < 1:
        raise _error("st_final_delay", "st_prepare_delay + st_final_delay must be >= 1 (BookSim's "
                     "crossbar takes at least one cycle)")
    put("router.st_delay", crossbar, "st_prepare_delay", "st_final_delay")
    speedup = _float("internal_speedup", get("internal_speedup"))
    if speedup != int(speedup):
        m.notes.append(f"booksim.internal_speedup: pdes moves whole flits: {speedup:g} acts as "
                       f"{int(speedup)}")
    put("router.internal_speedup", speedup, "internal_speedup")


ALLOCATORS = ("islip", "separable_input_first", "separable_output_first")


def _map_allocation(m: _Mapping) -> None:
    """[router] BookSim's allocation (router.allocation = "booksim"): its allocators and
    output buffers."""
    get, put = m.get, m.put
    put("router.allocation", "booksim", "router")
    for key in ("vc_allocator", "sw_allocator"):
        name = _str(key, get(key))
        if name not in ALLOCATORS:
            raise _refuse(key, f"{key} = {name}: pdes has BookSim's " + ", ".join(ALLOCATORS))
        put(f"router.{key}", name, key)
    put("router.alloc_iters", _int("alloc_iters", get("alloc_iters"), 1), "alloc_iters")
    isx = _int("input_speedup", get("input_speedup"), 1)
    if isx > 64:
        raise _error("input_speedup", f"must be in [1, 64], got {isx}")
    put("router.input_speedup", isx, "input_speedup")
    for key in ("hold_switch_for_packet", "wait_for_tail_credit"):
        v = _int(key, get(key), 0)
        if v not in (0, 1):
            raise _error(key, f"must be 0 or 1, got {v}")
        put(f"router.{key}", bool(v), key)
    size = _int("output_buffer_size", get("output_buffer_size"), -1)
    if size == 0:
        raise _error("output_buffer_size", "must be -1 (unlimited) or >= 1")
    if size < 0:
        # unlimited in BookSim; flits reach an output queue only with a credit of the next
        # input port, so a queue of the port's flits never refuses one
        used = dict((k, v) for k, v, _ in m.used)
        vcs = used["router.num_vcs"]
        per_vc = used.get("router.vc_buffer_flits") or 0
        port = used.get("router.buffer_flits") or vcs * per_vc
        size = min(max(port, vcs * per_vc, 1), 32767)
    put("router.output_buffer_flits", size, "output_buffer_size")


def _map_measure(m: _Mapping) -> None:
    """[measure] keys: sample period, warm-up, measured cycles and seed."""
    get, put = m.get, m.put
    period = _int("sample_period", get("sample_period"), 1)
    warm = _int("warmup_periods", get("warmup_periods"), 0)
    samples = _int("max_samples", get("max_samples"), 1)
    if samples <= warm:
        raise _error("max_samples", f"must be > warmup_periods ({warm}): BookSim stops after "
                     f"max_samples periods, warm-up included, so {samples} leaves none to measure")
    put("measure.sample_period", period, "sample_period")
    if warm > 0:
        put("measure.warmup", "fixed", "warmup_periods")
        put("measure.warmup_cycles", warm * period, "warmup_periods", "sample_period")
    else:
        put("measure.warmup", "converge", "warmup_periods")
        put("measure.warmup_cycles", period, "warmup_periods", "sample_period")
        put("measure.warmup_tolerance", _float("acc_warmup_thres", get("acc_warmup_thres")),
            "acc_warmup_thres")
        put("measure.max_warmup_cycles", samples * period, "max_samples", "sample_period")
    put("measure.measure_cycles", (samples - max(warm, 1)) * period, "max_samples",
        "warmup_periods", "sample_period")
    seed = get("seed")
    if seed == "time":
        raise _refuse("seed", "'time' is not reproducible; give an integer")
    put("measure.seed", _int("seed", seed, 0), "seed")


def _map_faults(m: _Mapping) -> None:
    """link_failures / fail_seed: that many links fail, drawn from fail_seed (faults.*).

    BookSim draws them with its own generator (on a k-ary n-cube only, for its fault-aware
    routing functions); pdes draws the same number from faults.seed, so the set differs."""
    n = _int("link_failures", m.get("link_failures"), 0)
    if n == 0:
        return
    seed = m.get("fail_seed")
    if seed == "time":
        raise _refuse("fail_seed", "'time' is not reproducible; give an integer")
    m.put("faults.link_count", n, "link_failures")
    m.put("faults.seed", _int("fail_seed", seed, 0), "fail_seed")
    m.notes.append(f"link_failures = {n}: pdes fails {n} links drawn from faults.seed "
                   "(its own draw: not the links BookSim would fail)")


def to_pdes(bs: dict, base_dir: str = ".") -> tuple[dict, list[tuple[str, object, bool]], list[str]]:
    """(raw pdes config, [(pdes key, value, from the file?)], notes) of BookSim statements.

    Raises :class:`ParameterError` ``booksim.<key>: ...`` for the first key
    that cannot be mapped (in file order) or has a bad value.
    """
    m = _Mapping(bs)
    _check_keys(bs, m.notes)
    network = _map_network(m, base_dir)
    size = _map_traffic(m, network)
    _map_buffers(m, size)
    _map_pipeline(m)
    _map_allocation(m)
    _map_measure(m)
    _map_faults(m)
    raw: dict = {}
    for key, value, _ in m.used:
        section, name = key.split(".")
        raw.setdefault(section, {})[name] = value
    return raw, m.used, m.notes


def load(path: str) -> tuple[dict, list[tuple[str, object, bool]], list[str]]:
    """(raw pdes config, keys used, notes) of a BookSim config file (see :func:`to_pdes`).

    A relative ``network_file`` is taken relative to the config file's directory.
    """
    return to_pdes(read(path), os.path.dirname(os.path.abspath(path)))


def describe(path: str, used, notes) -> list[str]:
    """Lines that say which pdes keys a BookSim config set (``--set`` spelling)."""
    import json
    out = [f"BookSim config {path} read as:"]
    for key, value, given in used:
        if isinstance(value, list):
            v = ",".join(str(x) for x in value)        # --set spelling of an int_list
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            v = value
        else:
            v = json.dumps(value)
        out.append(f"  --set {key}={v}" + ("" if given else "   # BookSim default"))
    out.extend(notes)
    return out
