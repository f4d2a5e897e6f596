"""Structural analyses of a network before it is simulated.

Path metrics and the Moore bound (:mod:`.report`), shortest-path multiplicity
(:mod:`.shortest_paths`), nearest and fastest path latency (:mod:`.latency`), METIS bisection
(:mod:`.bisection`), maximum achievable throughput by linear programming
(:mod:`.throughput`), the path sets of multipath routings (:mod:`.path_sets`, sharing
:mod:`.routing_paths` with the throughput LPs), resiliency to random link failures
(:mod:`.resiliency`)
and the cost and power models (:mod:`.cost`), combined by :func:`analyze`
into the report that ``python -m pdes analyze`` prints.  Pure numpy/scipy
(plus pymetis); the breadth-first searches are the compiled ones of
:mod:`models.metrics`, the path-set statistics compiled (Numba) too.

References: 000 Sec. II-A, III, VI; 001 Sec. 2.3; 002 Sec. II-E, III;
003 Table 4, Sec. 6; 004 Sec. 3, 6.
"""
from .bisection import analytic_bisection, bisection, cut_size
from .cost import CABLE_PRESETS, POWER_MODELS, ROUTER_PRESETS, cost, power, router_radix
from .latency import latency_options, latency_report
from .path_sets import path_sets_report
from .report import ANALYSES, DEFAULT_ANALYSES, analyze, moore_report, parse_only, path_metrics
from .resiliency import CRITERIA, resiliency
from .shortest_paths import shortest_paths_report
from .throughput import throughput_report

__all__ = ["ANALYSES", "DEFAULT_ANALYSES", "CABLE_PRESETS", "CRITERIA", "POWER_MODELS",
           "ROUTER_PRESETS", "analytic_bisection", "analyze", "bisection", "cost", "cut_size", "latency_options",
           "latency_report", "moore_report", "parse_only", "path_metrics", "path_sets_report", "power", "resiliency",
           "router_radix", "shortest_paths_report", "throughput_report"]
