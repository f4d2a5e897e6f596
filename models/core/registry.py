"""Name -> model registries with typed, documented parameters.

Every topology, routing algorithm and traffic pattern registers itself at the
bottom of its own module::

    TOPOLOGIES.register(
        "slimfly", slim_fly,
        params=[Param("q", int, 5, "prime power, q mod 4 != 2"), ...],
        summary="Slim Fly (MMS graph), diameter 2",
        reference="000 Sec. II-B; 001 Sec. 2.1.2",
    )

The config layer turns ``topology.q = "13"`` into the declared type with
:meth:`Param.coerce`, and reports a wrong type or an unknown key as a
:class:`~models.core.errors.ParameterError` naming the key.

A registry created with ``checked=True`` (:data:`TOPOLOGIES`) also guards
direct Python calls: :meth:`Registry.register` returns the function wrapped
so that every argument that names a :class:`Param` passes :meth:`Param.check`
(type, finiteness, ``choices``, ``lo``/``hi``) before the function runs.  The
module rebinds its public name to the returned function, so
``dragonfly(h=0)`` and ``--set topology.h=0`` refuse the same values with the
same ``topology.h: ...`` message.  Rules that tie a parameter to others or to
number theory (prime powers, divisibility, ``g <= a*h + 1``) stay in the
family's own code.
"""
from __future__ import annotations

import functools
import inspect
import math
import os
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any, Callable, NamedTuple

import numpy as np

from .errors import ParameterError

REQUIRED = object()
"""Sentinel default: the parameter has no default and must be given."""


def _type_name(kind) -> str:
    return {int: "an integer", float: "a number", str: "a string", bool: "true/false",
            "int_list": "a list of integers", "float_list": "a list of numbers"}.get(kind, str(kind))


@dataclass(frozen=True)
class Param:
    """One parameter of a registered model.

    ``kind`` is ``int``, ``float``, ``str``, ``bool``, ``"int_list"`` or
    ``"float_list"``.  ``default`` may be ``None`` (optional, derived by the
    model) or :data:`REQUIRED`.  ``choices`` restricts a ``str`` parameter.
    ``lo`` and ``hi`` bound a number (or every item of a list), inclusive;
    ``lo_open`` makes the lower bound exclusive.  Every float must be finite and
    every integer fit in 64 bits, bounds or not.

    ``files`` marks a parameter that names input files: ``True`` when a
    non-empty value is the path of a file the model reads, or a function
    ``(value, section) -> {role: path}`` (``section``: the resolved section's
    dict; role ``""`` for the named file itself, else a short noun such as
    ``"groups file"``) that gives every file the model reads for that value,
    an empty dict when it reads none.  :mod:`pdes.provenance` records their
    content digests.
    """

    name: str
    kind: Any
    default: Any
    doc: str
    choices: tuple | None = None
    lo: Any = None
    hi: Any = None
    lo_open: bool = False
    files: Any = None

    def range_text(self) -> str:
        """The declared range as text (empty when there is none)."""
        if self.lo is None and self.hi is None:
            return ""
        lo = "" if self.lo is None else f"{self.lo:g}" if isinstance(self.lo, float) else f"{self.lo:,}"
        hi = "" if self.hi is None else f"{self.hi:g}" if isinstance(self.hi, float) else f"{self.hi:,}"
        if self.hi is None:
            return f"> {lo}" if self.lo_open else f">= {lo}"
        if self.lo is None:
            return f"<= {hi}"
        return f"in {'(' if self.lo_open else '['}{lo}, {hi}]"

    def check_range(self, out, where: str):
        items = out if isinstance(out, list) else [out]
        for v in items:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            if isinstance(v, float) and not math.isfinite(v):
                raise ParameterError(f"{where}: must be a finite number (got {v})")
            if isinstance(v, int) and not -2 ** 63 <= v < 2 ** 63:
                raise ParameterError(f"{where}: {v} does not fit in a 64-bit integer")
            low_bad = self.lo is not None and (v <= self.lo if self.lo_open else v < self.lo)
            if low_bad or (self.hi is not None and v > self.hi):
                raise ParameterError(f"{where}: must be {self.range_text()} (got {v:g})"
                                     if isinstance(v, float) else
                                     f"{where}: must be {self.range_text()} (got {v})")
        return out

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def coerce(self, value, where: str):
        """Convert ``value`` (from TOML or ``--set`` text) to this parameter's type."""
        if value is None:
            return None
        kind = self.kind
        try:
            if kind is bool:
                if isinstance(value, bool):
                    out = value
                elif isinstance(value, str) and value.lower() in ("true", "1", "yes", "on"):
                    out = True
                elif isinstance(value, str) and value.lower() in ("false", "0", "no", "off"):
                    out = False
                else:
                    raise ValueError
            elif kind is int:
                if isinstance(value, bool):
                    raise ValueError
                if isinstance(value, float):
                    if not value.is_integer():
                        raise ValueError
                    out = int(value)
                elif isinstance(value, str):
                    out = int(value.strip(), 0)
                else:
                    out = int(value)
                    if out != value:
                        raise ValueError
            elif kind is float:
                if isinstance(value, bool):
                    raise ValueError
                out = float(value)
            elif kind is str:
                if not isinstance(value, str):
                    raise ValueError
                out = value
            elif kind in ("int_list", "float_list"):
                conv = Param(self.name, int if kind == "int_list" else float, None, "")
                if isinstance(value, str):
                    text = value.strip().strip("[]()")
                    items = [s for s in text.replace("x", ",").replace(" ", ",").split(",") if s]
                elif isinstance(value, (list, tuple)):
                    items = list(value)
                else:
                    items = [value]
                if not items and not self.empty_ok:
                    raise ValueError
                out = [conv.coerce(v, where) for v in items]
            else:  # pragma: no cover - programming error
                raise TypeError(f"unknown parameter kind {kind!r}")
        except (ValueError, TypeError, ParameterError):
            raise ParameterError(f"{where}: expected {_type_name(kind)}, got {value!r}") from None
        return self._finish(out, where)

    @property
    def empty_ok(self) -> bool:
        """A list parameter whose default is the empty list takes an empty list."""
        return isinstance(self.default, list) and not self.default

    def check(self, value, where: str):
        """Validate ``value`` given from Python (not text) and return it in its plain type.

        Stricter than :meth:`coerce`, which parses config text: an ``int``
        parameter takes any :class:`numbers.Integral` (numpy integers too) but
        not a ``bool`` or a float, however integral; a ``float`` parameter any
        real number but a ``bool``; a list parameter a non-empty list, tuple
        or 1-D array of such items; a ``str`` parameter a string (or an
        ``os.PathLike``, for file names).  Then ``choices`` and ``lo``/``hi``
        apply as for the config.  Integers come back as ``int``, numbers as
        ``float``, lists as ``list``; ``None`` is the caller's business.
        """
        kind = self.kind
        bad = ParameterError(f"{where}: expected {_type_name(kind)}, got {value!r}")
        if kind in ("int_list", "float_list"):
            if isinstance(value, (str, bytes)) or getattr(value, "ndim", 1) != 1:
                raise bad
            try:
                items = list(value)
            except TypeError:
                raise bad from None
            if not items and not self.empty_ok:
                raise bad
            item = Param(self.name, int if kind == "int_list" else float, None, "")
            try:
                out = [item._plain(v) for v in items]
            except ValueError:
                raise bad from None
        else:
            try:
                out = self._plain(value)
            except ValueError:
                raise bad from None
        return self._finish(out, where)

    def _plain(self, value):
        """``value`` as this (scalar) kind's plain Python type, or ValueError."""
        kind = self.kind
        if kind is int:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral):
                raise ValueError
            return int(value)
        if kind is float:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
                raise ValueError
            return float(value)
        if kind is bool:
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError
            return bool(value)
        if kind is str:
            if not isinstance(value, (str, os.PathLike)):
                raise ValueError
            return value
        raise TypeError(f"unknown parameter kind {kind!r}")  # pragma: no cover

    def _finish(self, out, where: str):
        if self.choices is not None and out not in self.choices:
            raise ParameterError(
                f"{where}: {out!r} is not one of {', '.join(map(str, self.choices))}")
        return self.check_range(out, where)


@dataclass
class Entry:
    """A registered model: its callable, parameters and documentation."""

    name: str
    func: Callable
    params: list[Param]
    summary: str
    reference: str
    extra: dict = field(default_factory=dict)

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None

    def resolve(self, given: dict, section: str) -> dict:
        """Typed parameter dict: defaults filled in, unknown keys refused."""
        out = {}
        known = {p.name for p in self.params}
        for key in given:
            if key not in known:
                raise ParameterError(
                    f"{section}.{key}: unknown parameter for {section} '{self.name}' "
                    f"(known: {', '.join(sorted(known)) or 'none'})")
        for p in self.params:
            if p.name in given and given[p.name] is not None:
                out[p.name] = p.coerce(given[p.name], f"{section}.{p.name}")
            elif p.required:
                raise ParameterError(f"{section}.{p.name}: required for {section} '{self.name}' ({p.doc})")
            else:
                out[p.name] = p.default
        return out


class Hook(NamedTuple):
    """A model-specific function registered with an entry, with its one-line doc and source."""

    func: Callable
    summary: str
    reference: str


def checked_call(func: Callable, params: list[Param], section: str) -> Callable:
    """``func`` wrapped so that each argument named by a :class:`Param` passes :meth:`Param.check`.

    The wrapper keeps ``func``'s name, docstring and signature
    (:func:`functools.wraps`), binds the call to that signature (a wrong
    call is the same ``TypeError``), validates every given argument that
    has a ``Param`` and calls ``func`` with the plain values.  An argument
    of ``None`` passes untouched where ``None`` is the default (of the
    ``Param`` or of ``func``): the function derives that value itself.
    Defaults the caller leaves out are not checked.  The errors read
    ``<section>.<param>: <rule>``, as from the config.
    """
    sig = inspect.signature(func)
    by_name = {p.name: p for p in params}
    missing = [n for n in by_name if n not in sig.parameters]
    if missing:
        raise TypeError(f"{section} {func.__name__}: Param {', '.join(missing)} is not an "
                        "argument of the function")
    nullable = {n for n, p in by_name.items()
                if p.default is None or sig.parameters[n].default is None}

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        for name, value in bound.arguments.items():
            p = by_name.get(name)
            if p is None or (value is None and name in nullable):
                continue
            bound.arguments[name] = p.check(value, f"{section}.{name}")
        return func(*bound.args, **bound.kwargs)

    return wrapper


class Registry:
    """A small name -> :class:`Entry` dictionary for one kind of model.

    ``extras`` names the keyword hooks an entry may register with itself
    (e.g. a topology's worst-case pattern); any other keyword is refused.
    With ``checked``, :meth:`register` returns (and stores) the function
    wrapped by :func:`checked_call` under the config section ``section``.
    """

    def __init__(self, kind: str, key: str, extras: dict[str, str] | None = None,
                 checked: bool = False):
        self.kind = kind
        self.key = key  # the config key that names an entry, for error messages
        self.section = key.split(".", 1)[0]
        self.extras = dict(extras or {})
        self.checked = checked
        self._entries: dict[str, Entry] = {}

    def register(self, name: str, func: Callable, *, params: list[Param], summary: str,
                 reference: str, **extra) -> Callable:
        """Register ``func`` under ``name``; returns the function callers should use.

        For a ``checked`` registry that is the argument-checking wrapper:
        bind the module's public name to it (``slim_fly = TOPOLOGIES.register(
        "slimfly", slim_fly, ...)``) so direct calls are checked too.
        """
        if name in self._entries:
            raise RuntimeError(f"{self.kind} '{name}' registered twice")
        for k in extra:
            if k not in self.extras:
                raise TypeError(f"{self.kind} '{name}': unknown registration keyword '{k}' "
                                f"(known: {', '.join(sorted(self.extras)) or 'none'})")
        if self.checked:
            func = checked_call(func, list(params), self.section)
        self._entries[name] = Entry(name, func, list(params), summary, reference, dict(extra))
        return func

    def get(self, name: str) -> Entry:
        try:
            return self._entries[name]
        except KeyError:
            raise ParameterError(
                f"{self.key}: unknown {self.kind} '{name}' "
                f"(known: {', '.join(self.names())})") from None

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def __iter__(self):
        return iter(self._entries[n] for n in self.names())


TOPOLOGIES = Registry("topology", "topology.name", checked=True, extras={
    "worst_case": "Hook: (topo, seed) -> TrafficPlan, the adversarial pattern for minimal routing",
    "bisection": "(topo) -> {links, formula, exact} or None: closed-form bisection (000 Sec. III-C)",
    "coordinates": "(topo) -> dimension sizes, when router ids are mixed-radix coordinates",
    "size": "(**params) -> models.topology.TopologySize or None: routers, links and endpoints "
            "the parameters give, without building (None: known only once built)",
    "min_routes": "Hook: (topo, dist) -> RoutingPlan or None, the family's own minimal routes and "
                  "VC classes: what `min` runs under `vc_scheme = auto` (and under the hook's "
                  "scheme name); None where the instance lacks the structure",
})
ROUTINGS = Registry("routing", "routing.algorithm", extras={
    "seeded": "True: the plan builder takes the run's seed (randomised table construction)",
})
TRAFFIC = Registry("traffic", "traffic.pattern", extras={
    "finite": "True: a finite workload (plan kind `messages` or `schedule`): the run ends when its "
              "messages or operations are done and traffic.load is not read",
})
