"""Configuration: every default in one place, TOML files, ``--set`` overrides.

A config is a dict of sections.  Static sections (``layout``, ``router``,
``measure``, ``output``, ``run``) are declared in :data:`STATIC` below with
their types, defaults and docs.  Three sections are chosen by name from a
registry and take that model's declared parameters:

* ``[topology]`` -- ``name`` picks a :data:`models.core.registry.TOPOLOGIES` entry,
* ``[routing]``  -- ``algorithm`` picks a :data:`models.core.registry.ROUTINGS` entry
  (plus ``vcs``, the VC discipline, common to every algorithm),
* ``[traffic]``  -- ``pattern`` picks a :data:`models.core.registry.TRAFFIC` entry
  (plus ``load``, common to every pattern).

:func:`resolve` returns a fully typed, defaulted config or raises
:class:`ConfigError` with one line that names the key.
"""
from __future__ import annotations

import copy
import json
import tomllib

from models.core.errors import ParameterError
from models.core.registry import Param, Registry

ConfigError = ParameterError
"""Bad user input in a config file or ``--set``; printed as one line, exit 2."""

# --------------------------------------------------------------------------- defaults
DEFAULT_TOPOLOGY = {"name": "slimfly", "q": 5}  # p derived: ceil(7/2) = 4

STATIC: dict[str, list[Param]] = {
    "layout": [
        Param("preset", str, "slimfly",
              "cable model preset: slimfly (000 Sec. VI-B: 1x1x2 m racks, 1 m intra-rack, "
              "2 m overhead per inter-rack cable), skywalk (002 Sec. III-A: 0.6x2.1 m cabinets, "
              "2 m intra, 4 m overhead)", choices=("slimfly", "skywalk")),
        Param("rack_width_m", float, None, "rack pitch along a row in metres (preset)",
              lo=0.0, lo_open=True, hi=1e4),
        Param("rack_depth_m", float, None, "rack pitch between rows in metres, aisle included (preset)",
              lo=0.0, lo_open=True, hi=1e4),
        Param("intra_rack_m", float, None, "length of every intra-rack cable in metres (preset)",
              lo=0.0, hi=1e4),
        Param("overhead_m", float, None, "added to the Manhattan distance of inter-rack cables (preset)",
              lo=0.0, hi=1e4),
        Param("racks_per_row", int, 0, "racks per row; 0 = ceil(sqrt(racks)) rows as in 002 Sec. III-A",
              lo=0, hi=10 ** 6),
        Param("ns_per_m", float, 5.0, "signal propagation delay in ns per metre of cable",
              lo=0.0, hi=1e3),
        Param("cycle_ns", float, 1.0, "router clock period in ns", lo=0.0, lo_open=True, hi=1e6),
        Param("fixed_cycles", int, 0, "SerDes/pipeline cycles added to every link latency",
              lo=0, hi=10 ** 6),
        Param("cabinets", int, 0, "fixed cabinet layout: the routers, in group order, cut into "
              "this many cabinets of equal size (+-1 router) instead of one rack per group; "
              "0 = one rack per group (docs/layout.md#fixed-cabinets)", lo=0, hi=2 ** 26),
        Param("cabinet_routers", int, 0, "fixed cabinet layout: cabinets of at most this many "
              "routers, filled with whole groups (a larger group is split); 0 = not used; "
              "not with cabinets", lo=0, hi=2 ** 26),
        Param("electric_cycles", int, 0, "latency in cycles of every intra-rack (electric) "
              "link; 0 = from the cable (docs/layout.md#latency-per-link-class)",
              lo=0, hi=10 ** 6),
        Param("optical_cycles", int, 0, "latency in cycles of every inter-rack (optical) "
              "link; 0 = from the cable", lo=0, hi=10 ** 6),
        Param("class_cycles", str, "", "latency in cycles of every link of the named "
              "topology link classes, 'class:cycles' pairs separated by commas or spaces "
              "(e.g. \"local:50,global:100\"); before electric_cycles/optical_cycles; "
              "empty = none"),
    ],
    "router": [
        Param("num_vcs", int, 0, "virtual channels per port; 0 = the minimum the routing needs",
              lo=0, hi=127),
        Param("buffer_flits", int, 0, "input buffer per port in flits, split evenly over the "
              "VCs; 0 (with vc_buffer_flits = 0) = automatic: every VC of a port covers the "
              "credit round trip of the port's own link (docs/router-model.md#buffers)",
              lo=0, hi=10 ** 7),
        Param("vc_buffer_flits", int, 0, "flits per VC of every input port (BookSim's "
              "vc_buf_size); 0 = from buffer_flits; with buffer_policy = shared the port "
              "holds num_vcs x this many flits", lo=0, hi=32767),
        Param("buffer_policy", str, "private",
              "how the VCs of an input port share its buffer (BookSim's buffer_policy, "
              "docs/router-model.md#buffers): private = every VC owns buffer_flits / num_vcs "
              "flits; shared = every VC owns private_vc_flits and the rest of the port's "
              "buffer_flits is shared by its VCs", choices=("private", "shared")),
        Param("private_vc_flits", int, 0, "with buffer_policy = shared: flits each VC keeps "
              "for itself (BookSim's private_buf_size); 0 = packet_size, the least a VC needs "
              "to make progress", lo=0, hi=32767),
        Param("packet_size", int, 1, "flits per packet", lo=1, hi=4096),
        Param("flit_bytes", int, 64, "bytes per flit: a schedule's message of b bytes is "
              "ceil(b / (flit_bytes x packet_size)) packets, at least one (SST Merlin's "
              "flit_size; docs/workloads.md)", lo=1, hi=2**20),
        Param("pipeline", str, "booksim",
              "what the delay keys mean in cycles (docs/router-model.md): booksim = as in "
              "BookSim2's input-queued router (stages advance internal_speedup times per cycle, "
              "a channel is read the cycle after its latency); staged = each stage takes its "
              "delay in whole cycles, one after the other", choices=("booksim", "staged")),
        Param("allocation", str, "vct",
              "how VCs and the switch are allocated under load (docs/router-model.md#allocation): "
              "vct = pdes's allocator, once per cycle, an output VC only with room for the whole "
              "packet (virtual cut-through); booksim = BookSim2's input-queued router, VC and "
              "switch allocation in every internal_speedup step, wormhole flow control "
              "(needs pipeline = booksim)", choices=("vct", "booksim")),
        Param("vc_allocator", str, "islip", "with allocation = booksim: BookSim's VC allocator",
              choices=("islip", "separable_input_first", "separable_output_first")),
        Param("sw_allocator", str, "islip", "with allocation = booksim: BookSim's switch allocator",
              choices=("islip", "separable_input_first", "separable_output_first")),
        Param("alloc_iters", int, 1, "with allocation = booksim: iterations of the islip "
              "allocators (BookSim's alloc_iters)", lo=1, hi=64),
        Param("hold_switch_for_packet", bool, False, "with allocation = booksim: a packet "
              "that won the switch keeps its input and output until its tail (BookSim's key)"),
        Param("input_speedup", int, 1, "with allocation = booksim: switch inputs per input "
              "port, VC v using input v mod input_speedup, so that VCs of one port on different "
              "inputs may cross the switch in the same step (BookSim's input_speedup; values "
              "above num_vcs act as num_vcs)", lo=1, hi=64),
        Param("wait_for_tail_credit", bool, False, "with allocation = booksim: an output VC "
              "is free again only when its tail's credit has come back (BookSim's key)"),
        Param("credit_delay", int, 2, "cycles for a credit to be processed (added to the link latency)",
              lo=0, hi=10 ** 4),
        Param("routing_delay", int, 1, "route computation cycles", lo=0, hi=10 ** 4),
        Param("vc_alloc_delay", int, 1, "VC allocation cycles", lo=0, hi=10 ** 4),
        Param("sw_alloc_delay", int, 1, "switch allocation cycles", lo=0, hi=10 ** 4),
        Param("st_delay", int, 1, "switch traversal cycles", lo=0, hi=10 ** 4),
        Param("internal_speedup", float, 2.0,
              "crossbar speedup: flits per cycle an input may send and an output may accept",
                    lo=1.0, hi=64.0),
        Param("output_buffer_flits", int, 8, "output queue per port in flits (absorbs the speedup)",
              lo=1, hi=32767),
        Param("link_latency", int, 0, "fixed latency in cycles for every router-router link; "
              "0 = from the physical layout", lo=0, hi=10 ** 6),
        Param("endpoint_latency", int, 1, "latency of the endpoint<->router channels in cycles",
              lo=1, hi=10 ** 6),
    ],
    "measure": [
        Param("seed", int, 1, "seed of every random draw (traffic, routing choices)",
              lo=0, hi=2 ** 63 - 1),
        Param("warmup_cycles", int, 1000, "warm-up cycles (minimum, with warmup=converge)",
              lo=0, hi=2 ** 30),
        Param("warmup", str, "fixed", "fixed: warm up for warmup_cycles; converge: also wait until "
              "the accepted rate of consecutive samples changes by less than warmup_tolerance",
              choices=("fixed", "converge")),
        Param("warmup_tolerance", float, 0.01, "relative change of the accepted rate that ends warm-up",
              lo=0.0, lo_open=True, hi=1.0),
        Param("max_warmup_cycles", int, 20000, "warm-up limit with warmup=converge", lo=0, hi=2 ** 30),
        Param("measure_cycles", int, 10000, "measurement window in cycles", lo=1, hi=2 ** 30),
        Param("sample_period", int, 200, "cycles per sample (time series, convergence and drain "
              "checks); the MPI window always divides it", lo=1, hi=10 ** 6),
        Param("drain_cycles", int, 20000, "after the window, cycles allowed for every measured packet "
              "to arrive; not draining marks the run saturated", lo=0, hi=2 ** 30),
        Param("saturation_tolerance", float, 0.02, "the run is also saturated when the accepted "
              "load is below the offered load by more than this fraction (source queues grow)",
                    lo=0.0, hi=1.0),
        Param("backlog_tolerance", float, 0.002, "the run is also saturated when the source "
              "queues grow over the window (least-squares trend) by more than this fraction of the "
              "flits offered in it (and by more than one flit per active endpoint), or the flits in "
              "the network and source queues by more than that and three standard errors",
              lo=0.0, hi=1.0),
        Param("watchdog_cycles", int, 5000, "cycles without any flit movement, while flits are in "
              "flight, that are reported as a deadlock", lo=1, hi=2 ** 30),
        Param("on_deadlock", str, "error", "what a deadlock does: 'error' stops the run with the "
              "deadlock report (exit 3); 'saturated' ends it as a saturated run whose reason is "
              "the report ('pdes sweep' uses 'saturated' unless the config sets the key)",
              choices=("error", "saturated")),
        Param("latency_hist_max", int, 16384, "latency histogram has 1-cycle bins below this value "
              "and 16 bins per octave above it", lo=1, hi=2 ** 22),
    ],
    "faults": [
        Param("links", str, "", "failed links, as router pairs u-v separated by commas or "
              "spaces (e.g. \"0-5, 3-9\")"),
        Param("link_fraction", float, 0.0, "fraction of the links (of link_classes) that fail, "
              "drawn with seed", lo=0.0, hi=1.0),
        Param("link_count", int, 0, "number of links (of link_classes) that fail, drawn with "
              "seed (BookSim's link_failures); not with link_fraction", lo=0, hi=2 ** 31 - 1),
        Param("link_classes", str, "", "link classes the drawn links come from, comma-separated "
              "names of the topology's classes (e.g. global); empty = every link"),
        Param("routers", "int_list", [], "failed routers (router ids)", lo=0, hi=2 ** 31 - 1),
        Param("router_fraction", float, 0.0, "fraction of the routers that fail, drawn with seed",
              lo=0.0, hi=1.0),
        Param("racks", "int_list", [], "failed racks: every router of these groups of the "
              "topology (its group_kind: rack, group, ...)", lo=0, hi=2 ** 31 - 1),
        Param("seed", int, 0, "seed of the drawn links and routers (BookSim's fail_seed)",
              lo=0, hi=2 ** 63 - 1),
        Param("at_cycle", int, 0, "cycle at whose start the failures happen, with flits in "
              "flight (docs/faults.md#failures-during-a-run); 0 = before the first cycle: the "
              "degraded network is simulated from the start", lo=0, hi=2 ** 31 - 1),
        Param("reroute_cycles", int, 1000, "with at_cycle: cycles from the failure until the "
              "routing tables of the degraded network take effect (a subnet manager's reaction "
              "time; real ones take milliseconds or more)", lo=0, hi=2 ** 31 - 1),
        Param("disconnected", str, "exclude", "when the failures split the network: exclude = "
              "the endpoints outside its largest part are inactive (reported); error = refuse",
              choices=("exclude", "error")),
    ],
    "output": [
        Param("file", str, "", "HDF5 result file; empty = no file (the CLI's -o sets it)"),
        Param("per_link", bool, True, "store per-channel flit counts"),
        Param("per_endpoint", bool, True, "store per-endpoint injected/delivered counts"),
    ],
    "run": [
        Param("partition", str, "racks", "router -> rank strategy", choices=("racks", "block", "metis")),
        Param("max_imbalance", float, 1.05, "racks strategy: split racks when whole racks leave "
              "the busiest rank more than this factor above the mean work", lo=1.0, hi=1e3),
        Param("max_memory_gb", float, 0.0, "refuse a run whose largest tables would not fit in "
              "this many GB per node (0 = the memory the machine has available)", lo=0.0, hi=1e6),
        Param("max_cycles", int, 0, "hard stop in cycles (0 = none)", lo=0, hi=2 ** 31 - 1),
    ],
}

# Registry-chosen sections: (section, selector key, registry name, default selector)
CHOSEN = {
    "topology": ("name", "TOPOLOGIES", "slimfly"),
    "routing": ("algorithm", "ROUTINGS", "min"),
    "traffic": ("pattern", "TRAFFIC", "uniform"),
}
COMMON = {
    "routing": [Param("vcs", str, "hop",
                      "VC discipline: hop = each hop takes the VC class its routing gives "
                      "(deadlock-free schemes, docs/routing.md); any = every hop may take every "
                      "VC, one class (BookSim's anynet min; a run can deadlock, the start report "
                      "warns)", choices=("hop", "any")),
                Param("eject_vcs", str, "any",
                      "with router.allocation = booksim: the VCs a head may take on an ejection "
                      "port: any = every VC; class = those of the class the routing gives the "
                      "ejection hop (on a Dragonfly: 0 within the source group, 1 after a global "
                      "link, BookSim's dragonflynew min)",
                      choices=("any", "class"))],
    "traffic": [Param("load", float, 0.4, "offered load in flits/cycle/endpoint (0..1]",
                      lo=0.0, lo_open=True, hi=1.0),
                Param("injection", str, "bernoulli", "injection process: bernoulli (a packet with "
                      "probability load/packet_size every cycle) or on_off (BookSim's bursty "
                      "two-state source)", choices=("bernoulli", "on_off")),
                Param("burst_alpha", float, None, "on_off: probability per cycle of turning on "
                      "(BookSim's burst_alpha; default 0.5; negative: derived from the load)",
                      hi=1.0),
                Param("burst_beta", float, None, "on_off: probability per cycle of turning off, "
                      "1 / mean burst length (default 0.5; negative: derived from the load)",
                      hi=1.0),
                Param("burst_r1", float, None, "on_off: packet probability per cycle while on "
                      "(default -1: derived from the load, r1 = p (alpha + beta) / alpha)",
                      hi=1.0)],
}
INJECTION_KEYS = ("injection", "burst_alpha", "burst_beta", "burst_r1")
"""The [traffic] keys of the injection process (not parameters of the pattern)."""
DEFAULTS_CHOSEN = {
    "topology": dict(DEFAULT_TOPOLOGY),
    "routing": {"algorithm": "min"},
    "traffic": {"pattern": "uniform", "load": 0.4},
}

SECTION_ORDER = ("topology", "layout", "router", "routing", "traffic", "measure", "faults", "output",
                 "run")


def _registry(section: str) -> Registry:
    import models.core.registry as reg
    if section == "topology":
        import models.topologies  # noqa: F401
    elif section == "routing":
        import models.routing  # noqa: F401
    elif section == "traffic":
        import models.traffic  # noqa: F401
    return getattr(reg, CHOSEN[section][1])


# --------------------------------------------------------------------------- parsing
def parse_value(text: str):
    """Parse the value of ``--set key=value`` as a TOML value, else keep the text."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def load_toml(path: str) -> dict:
    from pdes.files import check_regular
    check_regular(path, "config")      # a pipe or device: every rank reads the file
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"config: file not found: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"config: {path} is a directory, not a TOML file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config: {path} is not valid TOML ({exc})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"config: {path} is not UTF-8 text (TOML files are UTF-8)") from None
    except OSError as exc:
        raise ConfigError(f"config: cannot read {path} ({exc.strerror})") from None
    return data


def apply_overrides(raw: dict, overrides: list[str] | None) -> dict:
    """Apply ``section.key=value`` (or ``jobs.N.key=value``) strings to a raw (untyped)
    config dict."""
    raw = copy.deepcopy(raw)
    for item in overrides or []:
        if "=" not in item:
            raise ConfigError(f"--set {item}: expected section.key=value")
        key, text = item.split("=", 1)
        set_key(raw, key.strip(), parse_value(text.strip()), f"--set {item}")
    return raw


def set_key(raw: dict, key: str, value, where: str) -> None:
    """Set ``section.key`` (or ``jobs.N.key``: job N's key, N at most the number of jobs
    so far, which adds one) in a raw config dict."""
    parts = key.split(".")
    if parts[0] == "jobs":
        if len(parts) != 3 or not parts[1].isdigit() or not parts[2]:
            raise ConfigError(f"{where}: a job's key is jobs.N.key (e.g. jobs.0.bytes=4096)")
        jobs = raw.setdefault("jobs", [])
        if not isinstance(jobs, list):
            raise ConfigError("jobs: expected [[jobs]] tables")
        n = int(parts[1])
        if n > len(jobs):
            raise ConfigError(f"{where}: job {n} given before job {len(jobs)} (jobs are numbered "
                              "from 0, in order)")
        if n == len(jobs):
            jobs.append({})
        if not isinstance(jobs[n], dict):
            raise ConfigError(f"jobs.{n}: expected a [[jobs]] table")
        jobs[n][parts[2]] = value
        return
    if len(parts) != 2 or not all(parts):
        raise ConfigError(f"{where}: key must be section.key (e.g. topology.q=13)")
    section, name = parts
    if section not in SECTION_ORDER:
        raise ConfigError(f"{key}: unknown section '{section}' (known: {', '.join(SECTION_ORDER)}, jobs)")
    raw.setdefault(section, {})[name] = value


def _resolve_static(section: str, given: dict) -> dict:
    params = STATIC[section]
    known = {p.name for p in params}
    for key in given:
        if key not in known:
            raise ConfigError(f"{section}.{key}: unknown key (known: {', '.join(sorted(known))})")
    out = {}
    for p in params:
        out[p.name] = p.coerce(given[p.name], f"{section}.{p.name}") if given.get(p.name) is not None \
            else p.default
    return out


def _resolve_chosen(section: str, given: dict) -> dict:
    selector, _, default_name = CHOSEN[section]
    given = dict(given)
    if section in DEFAULTS_CHOSEN and selector not in given:
        # untouched section: the built-in default (with its parameters)
        base = dict(DEFAULTS_CHOSEN[section])
        for k, v in given.items():
            base[k] = v
        given = base
    name = given.pop(selector, default_name)
    if not isinstance(name, str):
        raise ConfigError(f"{section}.{selector}: expected a name, got {name!r}")
    common = {p.name: p for p in COMMON.get(section, [])}
    out = {selector: name}
    for key, p in common.items():
        out[key] = p.coerce(given.pop(key), f"{section}.{key}") if key in given else p.default
    entry = _registry(section).get(name)
    out.update(entry.resolve(given, section))
    return out


def resolve(raw: dict | None = None, overrides: list[str] | None = None,
            sections: tuple[str, ...] = SECTION_ORDER) -> dict:
    """Typed, fully defaulted config from a raw dict and ``--set`` overrides."""
    raw = apply_overrides(raw or {}, overrides)
    for section, body in raw.items():
        if section == "jobs":
            continue
        if section not in SECTION_ORDER:
            raise ConfigError(f"{section}: unknown section (known: {', '.join(SECTION_ORDER)})")
        if not isinstance(body, dict):
            raise ConfigError(f"{section}: expected a [{section}] table")
    out = {}
    for section in SECTION_ORDER:
        if section not in sections:
            continue
        given = raw.get(section, {})
        if section in CHOSEN:
            out[section] = _resolve_chosen(section, given)
        else:
            out[section] = _resolve_static(section, given)
    if raw.get("jobs") is not None and "traffic" in sections:
        # [traffic] is not read with jobs: a key of it set to other than its default would be
        # ignored (a printed config, which lists every default, still runs)
        unread = _resolve_chosen("traffic", {})
        for key in ["pattern"] + sorted(out["traffic"]):
            if out["traffic"].get(key) != unread.get(key):
                raise ConfigError(f"traffic.{key}: a config with [[jobs]] takes its workload "
                                  "from the jobs (leave [traffic] out)")
        out["jobs"] = resolve_jobs(raw["jobs"])
    check_relations(out)
    return out


JOB_PARAMS = [
    Param("name", str, "", "the job's name in the results (default job<N>)"),
    Param("pattern", str, "", "a schedule pattern (collective, skeleton, goal trace)"),
    Param("start_cycle", int, 0, "cycle the job starts (its first operations wait until then)",
          lo=0, hi=2**30),
    Param("placement", str, "linear", "where its processes run among the endpoints no earlier "
          "job holds: linear, random, racks, file or list",
          choices=("linear", "random", "racks", "file", "list")),
    Param("placement_file", str, "", "placement 'file': one endpoint id per line",
          files=lambda value, job: {"": value} if value and job.get("placement") == "file" else {}),
    Param("endpoints", "int_list", None, "placement 'list': the endpoints, in process order"),
]
"""The keys of a ``[[jobs]]`` entry besides its pattern's parameters (:mod:`models.jobs`)."""
MAX_JOBS = 4096


def resolve_jobs(jobs) -> list[dict]:
    """The typed ``[[jobs]]`` entries: the job keys, then the pattern's parameters (without
    its own placement keys, which the job's replace)."""
    if not isinstance(jobs, list) or not all(isinstance(j, dict) for j in jobs):
        raise ConfigError("jobs: expected [[jobs]] tables")
    if not jobs:
        raise ConfigError("jobs: an empty list of jobs")
    if len(jobs) > MAX_JOBS:
        raise ConfigError(f"jobs: {len(jobs)} jobs, more than {MAX_JOBS}")
    out, names = [], set()
    for i, given in enumerate(jobs):
        g = dict(given)
        job = {}
        for p in JOB_PARAMS:
            v = g.pop(p.name, None)
            job[p.name] = p.coerce(v, f"jobs.{i}.{p.name}") if v is not None else p.default
        job["name"] = job["name"] or f"job{i}"
        if "/" in job["name"] or job["name"] in (".", ".."):
            raise ConfigError(f"jobs.{i}.name: '{job['name']}' cannot name a group of the results "
                              "file (/jobs/<name>): no '/', not '.' or '..'")
        if job["name"] in names:
            raise ConfigError(f"jobs.{i}.name: '{job['name']}' names an earlier job too")
        names.add(job["name"])
        if not job["pattern"]:
            raise ConfigError(f"jobs.{i}.pattern: required (a schedule pattern such as allreduce)")
        reg = _registry("traffic")
        if job["pattern"] not in reg:
            raise ConfigError(f"jobs.{i}.pattern: unknown traffic '{job['pattern']}' (known: "
                              f"{', '.join(reg.names())})")
        if job["placement"] == "list" and not job["endpoints"]:
            raise ConfigError(f"jobs.{i}.endpoints: placement 'list' needs the endpoints")
        entry = reg.get(job["pattern"])
        own = {p.name for p in entry.params} & {"placement", "placement_file"}
        for k in own:
            if k in g:
                raise ConfigError(f"jobs.{i}.{k}: given twice")
        params = entry.resolve(g, f"jobs.{i}")
        job.update({k: v for k, v in params.items() if k not in own})
        out.append(job)
    return out


def job_pattern_params(job: dict) -> dict:
    """The pattern parameters of a resolved job, its processes placed linearly (models.jobs
    moves them onto the job's endpoints)."""
    from models.jobs import JOB_KEYS
    entry = _registry("traffic").get(job["pattern"])
    params = {k: v for k, v in job.items() if k not in JOB_KEYS}
    names = {p.name for p in entry.params}
    if "placement" in names:
        params["placement"] = "linear"
    if "placement_file" in names:
        params["placement_file"] = ""
    return params


def check_relations(cfg: dict) -> None:
    """Rules between keys (each key's own range is declared with it)."""
    if "layout" in cfg:
        from models.layout import parse_class_cycles
        lay = cfg["layout"]
        parse_class_cycles(lay["class_cycles"])      # the syntax; the classes once built
        if lay["cabinets"] and lay["cabinet_routers"]:
            raise ConfigError(f"layout.cabinet_routers: give layout.cabinets or "
                              f"layout.cabinet_routers, not both (got {lay['cabinets']} and "
                              f"{lay['cabinet_routers']})")
    if "router" in cfg and cfg["router"]["pipeline"] == "booksim":
        r = cfg["router"]
        for key, what in (("vc_alloc_delay", "VC allocation"), ("sw_alloc_delay", "switch allocation"),
                          ("st_delay", "the crossbar")):
            if r[key] < 1:
                raise ConfigError(f"router.{key}: must be >= 1 with router.pipeline = \"booksim\" "
                                  f"(BookSim's {what} takes at least one cycle), got {r[key]}")
    if "traffic" in cfg and "router" in cfg:
        from models.traffic.injection import injection_of   # the registry's package, loaded by now
        injection_of(cfg["traffic"], cfg["router"]["packet_size"])
    if "router" in cfg:
        r = cfg["router"]
        if r["allocation"] == "booksim" and r["pipeline"] != "booksim":
            raise ConfigError("router.allocation: \"booksim\" needs router.pipeline = \"booksim\" "
                              "(BookSim's allocation runs in its pipeline's steps)")
        if r["allocation"] == "vct" and cfg.get("routing", {}).get("eject_vcs", "any") != "any":
            raise ConfigError("routing.eject_vcs: only with router.allocation = \"booksim\" "
                              "(pdes's vct allocation takes no VC on an ejection port)")
        if r["allocation"] == "vct":
            for key, default in (("vc_allocator", "islip"), ("sw_allocator", "islip"),
                                 ("alloc_iters", 1), ("hold_switch_for_packet", False),
                                 ("input_speedup", 1),
                                 ("wait_for_tail_credit", False)):
                if r[key] != default:
                    raise ConfigError(f"router.{key}: only with router.allocation = \"booksim\" "
                                      f"(pdes's vct allocation is separable input-first, round-robin)")
    if "measure" not in cfg or "run" not in cfg:
        return
    m, run = cfg["measure"], cfg["run"]
    if m["sample_period"] > m["measure_cycles"]:
        raise ConfigError(f"measure.sample_period: must be <= measure.measure_cycles "
                          f"({m['measure_cycles']}), got {m['sample_period']}")
    total = m["max_warmup_cycles"] + m["warmup_cycles"] + m["measure_cycles"] + m["drain_cycles"]
    if total > 2 ** 30:
        raise ConfigError("measure: warm-up + measurement + drain must stay below 2**30 cycles")
    if "router" in cfg and cfg["router"]["allocation"] == "booksim":
        steps = max(1, int(cfg["router"]["internal_speedup"]))
        horizon = min(total, run["max_cycles"]) if run["max_cycles"] else total
        if (horizon + 1) * steps >= 2 ** 31 - 1:
            raise ConfigError("measure: with router.allocation = \"booksim\", (warm-up + "
                              "measurement + drain) x internal_speedup must stay below 2**31 "
                              "steps")
    first = m["warmup_cycles"] + m["measure_cycles"]
    if run["max_cycles"] and run["max_cycles"] < first:
        raise ConfigError(f"run.max_cycles: must be 0 (no limit) or >= measure.warmup_cycles + "
                          f"measure.measure_cycles = {first}, got {run['max_cycles']}")
    at = cfg.get("faults", {}).get("at_cycle", 0)
    if at:
        # a failure during the run applies to load patterns, whose runs end by warm-up (at
        # most both warm-up keys) + window + drain, rounded up to the sample period
        last = total + 2 * m["sample_period"]
        if run["max_cycles"]:
            last = min(last, run["max_cycles"])
        if at >= last:
            raise ConfigError(f"faults.at_cycle: {at} is after the last cycle the run can reach "
                              f"({last}: warm-up, measurement and drain"
                              + (", run.max_cycles" if run["max_cycles"] else "")
                              + "), so the failure would never happen")


def section_params(cfg: dict, section: str) -> list[Param]:
    """The declared parameters of a section of the resolved ``cfg``: the static section's, or
    the common ones and the chosen model's."""
    if section in STATIC:
        return list(STATIC[section])
    selector = CHOSEN[section][0]
    return list(COMMON.get(section, [])) + list(_registry(section).get(cfg[section][selector]).params)


def topology_params(cfg: dict) -> tuple[str, dict]:
    """(name, parameters) of the configured topology."""
    t = dict(cfg["topology"])
    return t.pop("name"), t


def to_toml(cfg: dict) -> str:
    """The resolved config as TOML text (``None`` values are omitted)."""
    lines = []
    for section in SECTION_ORDER:
        if section not in cfg:
            continue
        lines.append(f"[{section}]")
        for key, value in cfg[section].items():
            if value is None:
                continue
            lines.append(f"{key} = {json.dumps(value)}")
        lines.append("")
    for job in cfg.get("jobs") or []:
        lines.append("[[jobs]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in job.items() if v is not None]
        lines.append("")
    return "\n".join(lines)
