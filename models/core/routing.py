"""The interface between the cycle kernel and a routing algorithm.

A routing algorithm is a model (``models/routing/``); the engine knows only
this interface.  The algorithm's module registers a :class:`RoutingKernel`
under a name its plans give as ``RoutingPlan.kernel``; the engine compiles a
router stage for it (``pdes.kernels.generate``) in which the algorithm's
two jitted functions are module globals:

``source(site, eng, ctx, ap, fid)``
    once per packet, at its first router (``rec[fid, F_HOPS] == 0`` and
    ``rec[fid, F_PHASE] == 0``), before its first :func:`hop`; it may write
    the packet's routing words (``F_MID``, ``F_PHASE``, ``F_AUX2``; at
    injection ``-1``, ``0``, ``-1``).  Returns nothing.
``hop(site, eng, ctx, ap, fid)``
    at every router, for the head flit ``fid`` at the front of an input VC
    of port ``site.P`` whose VC class is ``site.in_cls``: returns ``(status,
    port, class)`` -- ``status`` ``OK`` or an ``ERR_*`` code of
    :mod:`models.core.record`, the output port (``port < 0``: no route) and
    the VC class of the hop (0 for ejection).

The arguments: ``site`` (:class:`models.core.views.Site`: cycle, router,
its port range and endpoint ports, input port and class) and ``eng``
(:class:`models.core.views.EngineView`: the engine's parameter vector,
ports, global tables, credits and the flit pool's two halves); the
algorithm's tables ``ctx`` (an instance of its :attr:`RoutingKernel.tables`
named tuple) and int64 parameters ``ap`` (in :attr:`RoutingKernel.params`
order); the flit's record index ``fid``.

Both functions are compiled with :func:`models.core.jit.njit_kernel` or
:func:`models.core.jit.njit_inline`: they borrow the kernel's arrays, allocate
nothing and index with non-negative integers only.  The router stage inlines
both whatever their decorator (:mod:`pdes.kernels.routed`): a call would pass
every array of ``eng`` and ``ctx``.  Every random choice is
drawn from the counter-based generator keyed by the packet id, so it is the
same whichever rank routes the packet.

The engine checks, after every hop, that the class is below the plan's
``vcs_needed`` and -- unless :attr:`RoutingKernel.monotone` says otherwise
for the plan -- that classes do not decrease along a path.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from models.core.errors import ParameterError


@dataclass(frozen=True)
class RoutingKernel:
    """A routing algorithm's kernel functions, tables and parameters.

    ``module`` defines ``hop`` (and ``source``, if given) by those names;
    ``schemes`` are the VC class schemes (``RoutingPlan.scheme``) it implements;
    ``tables`` is a named tuple class whose fields name the tables a plan
    gives (``RoutingPlan.tables``), ``optional`` maps the fields a plan may
    leave out to their stand-in arrays; ``params`` names the int64
    parameters, packed by ``pack(plan, cfg) -> {name: int}`` from the plan's
    ``kernel_params``, which must be exactly ``knobs`` (default: ``params``,
    taken as they are).  ``monotone(plan)``: whether the
    engine checks that VC classes never decrease along a path.
    ``next_hop_masks``: the algorithm reads the part's minimal next-hop
    table, built by the engine where it fits (:mod:`pdes.kernels.nexthop`;
    ``prm[PR_NHMIN] = 1``: bit ``j`` of ``tab.nh_min[k, d]`` is set when
    network port ``j`` of local router ``k`` is on a minimal path to router
    ``d``; ``2``: ``tab.nh_port`` and its lists), else ``tab.dist``.
    """

    module: str
    hop: str
    tables: type
    schemes: tuple = ("hop",)
    source: str | None = None
    params: tuple = ()
    knobs: tuple | None = None
    optional: dict = field(default_factory=dict)
    pack: Callable | None = None
    monotone: Callable = lambda plan: True
    next_hop_masks: bool = False


ROUTING_KERNELS: dict[str, RoutingKernel] = {}
"""Kernel name (``RoutingPlan.kernel``) -> :class:`RoutingKernel`; filled by the routing models."""


def register_kernel(name: str, kernel: RoutingKernel) -> RoutingKernel:
    if name in ROUTING_KERNELS and ROUTING_KERNELS[name] != kernel:
        raise ValueError(f"routing kernel '{name}' registered twice")
    ROUTING_KERNELS[name] = kernel
    return kernel


def kernel_of(alg: str, plan) -> RoutingKernel:
    """The registered kernel of a plan; an unknown name raises, naming the known ones."""
    try:
        return ROUTING_KERNELS[plan.kernel]
    except KeyError:
        raise ParameterError(f"routing.algorithm: '{alg}' has no registered kernel '{plan.kernel}' "
                             f"(known: {', '.join(sorted(ROUTING_KERNELS))})") from None


def pack(alg: str, plan, cfg: dict):
    """``(ctx, ap)`` of a plan: its tables as the kernel's named tuple and its int64
    parameters.  A table or parameter the kernel does not read, or one it reads that
    the plan does not give, raises, naming it."""
    k = kernel_of(alg, plan)
    if plan.scheme not in k.schemes:
        raise ParameterError(f"routing.algorithm: '{alg}' uses VC scheme '{plan.scheme}', which "
                             f"kernel '{plan.kernel}' does not implement (it has: "
                             f"{', '.join(k.schemes)})")
    fields = k.tables._fields
    given = dict(plan.tables)
    for name in sorted(set(given) - set(fields)):
        raise ParameterError(f"routing.algorithm: '{alg}' gives an unknown table '{name}' to "
                             f"kernel '{plan.kernel}' (it reads: {', '.join(fields) or 'none'})")
    for name in fields:
        if name not in given:
            if name not in k.optional:
                raise ParameterError(f"routing.algorithm: '{alg}' gives no table '{name}', which "
                                     f"kernel '{plan.kernel}' reads")
            given[name] = k.optional[name]
    ctx = k.tables(**{n: np.ascontiguousarray(given[n]) for n in fields})
    knobs = k.params if k.knobs is None else k.knobs
    for name in sorted(set(plan.kernel_params) - set(knobs)):
        raise ParameterError(f"routing.algorithm: '{alg}' gives an unknown kernel parameter "
                             f"'{name}' to kernel '{plan.kernel}' (it reads: "
                             f"{', '.join(knobs) or 'none'})")
    for name in knobs:
        if name not in plan.kernel_params:
            raise ParameterError(f"routing.algorithm: '{alg}' gives no kernel parameter '{name}', "
                                 f"which kernel '{plan.kernel}' reads")
    values = k.pack(plan, cfg) if k.pack is not None else dict(plan.kernel_params)
    for name in sorted(set(values) - set(k.params)):
        raise ParameterError(f"routing.algorithm: '{alg}' gives an unknown kernel parameter "
                             f"'{name}' to kernel '{plan.kernel}' (it reads: "
                             f"{', '.join(k.params) or 'none'})")
    for name in k.params:
        if name not in values:
            raise ParameterError(f"routing.algorithm: '{alg}' gives no kernel parameter '{name}', "
                                 f"which kernel '{plan.kernel}' reads")
    ap = np.array([int(values[n]) for n in k.params] or [0], dtype=np.int64)
    return ctx, ap
