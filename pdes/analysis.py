"""Structural analysis of one network as a library: the computation behind ``pdes analyze``.

:func:`options` turns the analysis options (the names of ``pdes analyze``'s command-line
options with underscores: ``switch_delay``, ``endpoint_delay``, ``latency_bin``,
``sample``, ``seed``, ``pair_fractions``, ...; see :data:`OPTION_DEFAULTS`) into the
keyword arguments of :func:`models.analysis.analyze`; :func:`check_options` validates them
against a built network; :func:`report` builds the network of a resolved config
(``topology``, ``layout`` and, for the throughput section, ``traffic``) and returns the
report exactly as ``pdes analyze --json`` prints it.  A refusal is one
:class:`~models.core.errors.ParameterError` worded ``<key>: <rule>``, where the key is
the command-line option (``--switch-delay``) unless ``name`` says otherwise.
"""
from __future__ import annotations

import math

from models.core.errors import ParameterError

OPTION_DEFAULTS = {
    "only": None, "seed": "0", "sample": None, "threads": None,
    "switch_delay": None, "endpoint_delay": None, "latency_bin": None,
    "pair_fractions": None, "restrict": None, "layers": None, "max_lp_variables": None,
    "routing": None, "preserve": None, "bisection_seeds": "16",
    "samples": None, "max_samples": "400", "ci_width": "2",
    "criteria": "disconnect,diameter,distance", "step": "0.05", "level": "0.5",
    "curve": False, "cables": "fdr10", "cable_coeffs": None, "cable_gbps": None,
    "router_coeffs": None, "router_radix": "max", "electric_max_m": None,
    "endpoint_cables": False, "power": "slimfly",
}
"""Every analysis option and its default, as ``pdes analyze`` takes it on its command line."""


def option_flag(key: str) -> str:
    """The command-line name of an analysis option: ``switch_delay`` -> ``--switch-delay``."""
    return "--" + key.replace("_", "-")


INT64_MAX = 2 ** 63 - 1


def integer_option(name: str, text, lo: int, allow_none: bool = False, hi: int = INT64_MAX):
    """``text`` as a base-10 integer in ``[lo, hi]`` (``None`` passes when ``allow_none``),
    else :class:`ParameterError` naming ``name``; ``hi`` is at most the largest 64-bit
    integer."""
    if text is None and allow_none:
        return None
    try:
        value = int(str(text).strip(), 10)
    except ValueError:
        raise ParameterError(f"{name}: expected an integer, got {text!r}") from None
    if value < lo:
        raise ParameterError(f"{name}: must be an integer >= {lo}, got {text!r}")
    if value > hi:
        raise ParameterError(f"{name}: must be an integer <= {hi}"
                             + (" (64 bits)" if hi == INT64_MAX else "") + f", got {text!r}")
    return value


SAMPLES_MAX = 1_000_000
"""The most resiliency samples (``--samples``, ``--max-samples``) an analysis takes."""
THREADS_MAX = 1024


def _float(name: str, text, allow_none: bool = False):
    if text is None and allow_none:
        return None
    try:
        value = float(str(text).strip())
    except ValueError:
        raise ParameterError(f"{name}: expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise ParameterError(f"{name}: expected a finite number, got {text!r}")
    return value


def _floats(name: str, text, n: int):
    if text is None:
        return None
    parts = [s for s in str(text).replace(" ", ",").split(",") if s]
    if len(parts) != n:
        raise ParameterError(f"{name}: expected {n} comma-separated numbers, got {text!r}")
    return tuple(_float(name, s) for s in parts)


def _flag(value, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ParameterError(f"{name}: expected true or false, got {value!r}")


def options(values: dict, name=option_flag) -> dict:
    """Keyword arguments of :func:`models.analysis.analyze` from the analysis options
    ``values`` (keys of :data:`OPTION_DEFAULTS`; missing keys take their default; values
    as the command line gives them or as numbers, lists, booleans).  ``name(key)`` is the
    key a refusal names (default: the command-line option)."""
    from models.analysis import latency_options, parse_only
    from models.analysis.path_sets import parse_preserve, parse_routings
    from models.analysis.throughput import (MAX_LP_VARIABLES, parse_fractions, parse_layers,
                                            parse_restrict)
    unknown = sorted(set(values) - set(OPTION_DEFAULTS))
    if unknown:
        raise ParameterError(f"{name(unknown[0])}: unknown option (known: "
                             f"{', '.join(OPTION_DEFAULTS)})")
    v = {**OPTION_DEFAULTS, **{k: _text(x) for k, x in values.items()}}
    radix = str(v["router_radix"]).strip()
    if radix not in ("max", "used"):
        radix = integer_option(name("router_radix"), radix, 1)
    only = parse_only(v["only"]) if v["only"] is not None else None
    crit = [c.strip() for c in str(v["criteria"]).split(",") if c.strip()]
    cost_opts = {"cables": v["cables"], "radix": radix,
                 "cable_coeffs": _floats(name("cable_coeffs"), v["cable_coeffs"], 4),
                 "cable_gbps": _float(name("cable_gbps"), v["cable_gbps"], allow_none=True),
                 "router_coeffs": _floats(name("router_coeffs"), v["router_coeffs"], 2),
                 "electric_max_m": _float(name("electric_max_m"), v["electric_max_m"],
                                          allow_none=True),
                 "endpoint_cables": _flag(v["endpoint_cables"], name("endpoint_cables"))}
    return _renamed(lambda: {
        "only": only,
        "seed": integer_option(name("seed"), v["seed"], 0),
        "samples": integer_option(name("samples"), v["samples"], 1, allow_none=True,
                                  hi=SAMPLES_MAX),
        "sample": integer_option(name("sample"), v["sample"], 1, allow_none=True),
        "threads": integer_option(name("threads"), v["threads"], 1, allow_none=True,
                                  hi=THREADS_MAX),
        "bisection_seeds": integer_option(name("bisection_seeds"), v["bisection_seeds"], 1),
        "resiliency_opts": {"max_samples": integer_option(name("max_samples"), v["max_samples"], 1,
                                                          hi=SAMPLES_MAX),
                            "ci_width": _float(name("ci_width"), v["ci_width"]),
                            "criteria": crit,
                            "step": _float(name("step"), v["step"]),
                            "level": _float(name("level"), v["level"]),
                            "curve": _flag(v["curve"], name("curve"))},
        "cost_opts": cost_opts,
        "power_model": v["power"],
        "latency_opts": latency_options(v["switch_delay"], v["endpoint_delay"],
                                        v["latency_bin"]),
        "throughput_opts": {
            "fractions": parse_fractions(v["pair_fractions"]),
            "restrict": parse_restrict(v["restrict"]),
            "layers": parse_layers(v["layers"]),
            "max_variables": (MAX_LP_VARIABLES if v["max_lp_variables"] is None else
                              integer_option(name("max_lp_variables"), v["max_lp_variables"], 1))},
        "path_sets_opts": {"routings": parse_routings(v["routing"]),
                           "layers": parse_layers(v["layers"]),
                           "preserve": parse_preserve(v["preserve"])},
    }, name)


def _text(value):
    """An option value as the command line would give it (lists as comma lists)."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(x) for x in value)
    return value


def _renamed(fn, name):
    """``fn()``, with a refusal's leading ``--option:`` renamed by ``name`` (the parsers of
    :mod:`models.analysis` name the command-line option)."""
    try:
        return fn()
    except ParameterError as exc:
        if name is option_flag:
            raise
        raise ParameterError(rename(str(exc), name)) from None


def rename(message: str, name) -> str:
    """``message`` with its leading ``--option-name:`` given as ``name(option_name)``."""
    head, sep, rest = message.partition(":")
    if sep and head.startswith("--") and " " not in head:
        key = head[2:].replace("-", "_")
        if key in OPTION_DEFAULTS:
            return f"{name(key)}:{rest}"
    return message


def check_options(topo, opts: dict, layout, name=option_flag) -> None:
    """Validate the cost/power/resiliency/latency options against the built network, before
    any (collective) work starts."""
    from models.analysis import ANALYSES
    from models.analysis.cost import CABLE_PRESETS, POWER_MODELS, router_radix
    from models.analysis.latency import check_latency
    from models.analysis.resiliency import CRITERIA
    c = opts["cost_opts"]
    if c["cables"] not in CABLE_PRESETS:
        raise ParameterError(f"{name('cables')}: unknown preset {c['cables']!r} "
                             f"(known: {', '.join(CABLE_PRESETS)})")
    if opts["power_model"] not in POWER_MODELS:
        raise ParameterError(f"{name('power')}: unknown model {opts['power_model']!r} "
                             f"(known: {', '.join(POWER_MODELS)})")
    for crit in opts["resiliency_opts"]["criteria"]:
        if crit not in CRITERIA:
            raise ParameterError(f"{name('criteria')}: unknown criterion {crit!r} "
                                 f"(known: {', '.join(CRITERIA)})")
    r = opts["resiliency_opts"]
    if not 0 < r["step"] < 1 or abs(round(1 / r["step"]) * r["step"] - 1) > 1e-9:
        raise ParameterError(f"{name('step')}: must be in (0, 1) with 1/step an integer, "
                             f"got {r['step']}")
    if not 0 < r["level"] <= 1:
        raise ParameterError(f"{name('level')}: must be in (0, 1], got {r['level']}")
    if r["ci_width"] <= 0:
        raise ParameterError(f"{name('ci_width')}: must be > 0, got {r['ci_width']}")
    if c["radix"] not in ("max", "used"):
        try:
            router_radix(topo, c["radix"])
        except ParameterError as exc:
            raise ParameterError(str(exc).replace("cost.router_radix",
                                                  name("router_radix"))) from None
    if "cost" in (opts["only"] or ANALYSES):
        from models.analysis.cost import router_model, router_prices
        try:
            router_prices(router_radix(topo, c["radix"]), router_model(c.get("routers", "fdr10"),
                                                                       c["router_coeffs"]))
        except ParameterError as exc:
            hint = "" if c["router_coeffs"] is not None else (
                f" (the default fit); price this radix with {name('router_coeffs')}, or leave "
                f"cost out with {name('only')}")
            raise ParameterError(str(exc).replace("cost.router_coeffs",
                                                  name("router_coeffs")) + hint) from None
    if c["cable_gbps"] is not None and c["cable_gbps"] <= 0:
        raise ParameterError(f"{name('cable_gbps')}: must be > 0, got {c['cable_gbps']}")
    if c["electric_max_m"] is not None and c["electric_max_m"] < 0:
        raise ParameterError(f"{name('electric_max_m')}: must be >= 0, "
                             f"got {c['electric_max_m']}")
    if "latency" in (opts["only"] or ANALYSES):
        _renamed(lambda: check_latency(topo, layout, **opts["latency_opts"]), name)


def clean(obj):
    """The report with numpy scalars turned into Python numbers and non-finite floats into
    None."""
    import numpy as np
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return clean(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def traffic_plan(topo, tcfg: dict, opts: dict):
    """The traffic plan of the throughput section: the ``[traffic]`` pattern and its
    parameters, seeded with the ``seed`` option (the load and injection keys do not apply);
    checked on every rank before any (collective) work."""
    from models.analysis.throughput import check_plan, check_variables
    from models.core.registry import TRAFFIC
    from pdes.config import INJECTION_KEYS
    check_variables(topo.n_routers, topo.n_links, opts["throughput_opts"]["max_variables"])
    t = dict(tcfg)
    pattern = t.pop("pattern")
    t.pop("load", None)
    for key in INJECTION_KEYS:
        t.pop(key, None)
    plan = TRAFFIC.get(pattern).func(topo, opts["seed"], **t)
    check_plan(plan)
    return plan


def check_network_params(cfg: dict, opts: dict):
    """The checks of :func:`build_network` that need only the config's parameters (the
    family's rules and size, the size against ``sample``, the LP's variables); returns the
    size (None for a family known only once built)."""
    from models.metrics import check_exact
    from pdes.sizing import check_network
    size = check_network(cfg, distances=False)      # from the parameters, before building
    if size is not None and (opts["only"] is None or {"paths", "moore", "shortest-paths",
                                                      "latency", "path-sets"} & set(opts["only"])):
        check_exact(size.routers, opts["sample"])
    if _lp(opts) and size is not None and size.exact:
        from models.analysis.throughput import check_variables
        check_variables(size.routers, size.links, opts["throughput_opts"]["max_variables"])
    return size


def build_network(cfg: dict, opts: dict):
    """``(topology, layout)`` of a resolved config, after the checks that need only its
    parameters (:func:`check_network_params`)."""
    from models.layout import build_layout
    from models.topology import build
    from pdes import config as cfgmod
    name, params = cfgmod.topology_params(cfg)
    check_network_params(cfg, opts)
    topo = build(name, params)
    return topo, build_layout(topo, **cfg["layout"])


def _lp(opts) -> bool:
    return opts["only"] is not None and "throughput" in opts["only"]


def report(cfg: dict, opts: dict, comm=None, rank: int = 0, network=None, notice=None,
           name=option_flag):
    """The report of ``pdes analyze --json`` for the resolved config ``cfg`` and the
    options ``opts`` (:func:`options`), on rank 0; ``None`` on the other ranks.

    ``comm`` (or None): the ranks that share the resiliency samples, all calling this
    alike; the other ranks compute only those, rank 0 every section.  ``rank``: this
    process's rank in the job (without ``comm`` every rank computes alike).
    ``network``: a ``(topology, layout)`` already built from ``cfg``.  ``notice(topo,
    kw)``: called on rank 0 before the work starts (what large sections will cost).  A
    refusal found on rank 0 while computing is raised on every rank of ``comm``.
    """
    from models.analysis import analyze
    topo, layout = network if network is not None else build_network(cfg, opts)
    check_options(topo, opts, layout, name)
    lp = _lp(opts)
    plan = _renamed(lambda: traffic_plan(topo, cfg["traffic"], opts), name) if lp else None
    kw = dict(opts)
    if lp:
        kw["throughput_opts"] = dict(opts["throughput_opts"], plan=plan)
    if comm is not None and kw["threads"] is None:
        kw["threads"] = 1
    if opts["only"] is not None and "path-sets" in opts["only"]:
        # every rank builds the routings' tables: a routing without a path set is refused
        # on every rank before any (collective) work
        from models.analysis.path_sets import build_sets
        from models.metrics import distance_matrix
        p = opts["path_sets_opts"]
        dist = distance_matrix(topo, threads=kw["threads"])
        kw["path_sets_opts"] = dict(p, dist=dist, sets=_renamed(lambda: build_sets(
            topo, dist, p["routings"], p["layers"], p["preserve"], opts["seed"]), name))
    if comm is not None and rank != 0:
        # the other ranks only help with the resiliency samples
        kw["only"] = ("resiliency",)
    if rank == 0 and notice is not None:
        notice(topo, kw)
    err = None
    helping = comm is not None and rank != 0
    if helping and opts["only"] is None:
        from models.analysis.resiliency import intact_connected
        helping = intact_connected(topo)    # rank 0 leaves resiliency out, as analyze() does
    try:
        rep = analyze(topo, layout, comm=comm, **kw) if helping or rank == 0 or comm is None \
            else None
    except ParameterError as exc:
        if comm is None:
            raise ParameterError(rename(str(exc), name)) from None
        err = rename(str(exc), name)
    if comm is not None:
        # rank 0 alone computes the sections after the shared samples: a refusal found
        # there (a restricted LP above its limit) is every rank's refusal
        err = comm.bcast(err, root=0)
        if err is not None:
            raise ParameterError(err)
    return clean(rep) if rank == 0 else None
