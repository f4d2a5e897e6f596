"""Declared topology parameter ranges, checked on direct Python calls as from the config.

Generated from the registry: a family registered later is covered without
editing this file.
"""
import inspect
import math
import sys

import numpy as np
import pytest

import models.topologies  # noqa: F401  (registers every family)
from models.core.errors import ParameterError
from models.core.registry import REQUIRED, TOPOLOGIES, Param, Registry, checked_call
from models.topology import build

NUMERIC = (int, float, "int_list", "float_list")


def public(entry):
    """The generator as its module exports it (what ``from models.topologies.x import f`` gets)."""
    return getattr(sys.modules[entry.func.__module__], entry.func.__name__)


def required_args(entry) -> dict:
    """Placeholders for the required parameters (checked before the generator runs)."""
    return {p.name: "unused.txt" for p in entry.params if p.default is REQUIRED}


def outside(p: Param) -> list:
    """Values just outside ``p``'s declared range (one per declared bound)."""
    scalar = int if p.kind in (int, "int_list") else float
    out = []
    if p.lo is not None:
        if scalar is int:
            out.append(p.lo if p.lo_open else p.lo - 1)
        else:
            out.append(float(p.lo) if p.lo_open else math.nextafter(p.lo, -math.inf))
    if p.hi is not None:
        out.append(p.hi + 1 if scalar is int else math.nextafter(p.hi, math.inf))
    return [[v] if isinstance(p.kind, str) else v for v in out]


BOUNDED = [(e.name, p) for e in TOPOLOGIES for p in e.params
           if p.kind in NUMERIC and (p.lo is not None or p.hi is not None)]
INTS = [(e.name, p) for e in TOPOLOGIES for p in e.params if p.kind in (int, "int_list")]


def test_every_numeric_topology_parameter_declares_a_range():
    """Every int/float (list) parameter of every family has a lower bound; strings with a fixed
    set of values list them as choices (only a file name is free text)."""
    for e in TOPOLOGIES:
        for p in e.params:
            if p.kind in NUMERIC:
                assert p.lo is not None, f"{e.name}.{p.name}"
            elif p.kind is str and p.name != "path":
                assert p.choices, f"{e.name}.{p.name}"


def test_registered_generator_is_the_checked_one():
    """The registry stores the checking wrapper, the module exports it, and it keeps the
    generator's name, docstring and signature."""
    for e in TOPOLOGIES:
        f = e.func
        assert public(e) is f, e.name
        raw = f.__wrapped__
        assert f.__name__ == raw.__name__ and f.__doc__ == raw.__doc__
        assert inspect.signature(f) == inspect.signature(raw)
        assert {p.name for p in e.params} <= set(inspect.signature(f).parameters)


@pytest.mark.parametrize("name,p", BOUNDED, ids=[f"{n}.{p.name}" for n, p in BOUNDED])
def test_direct_call_just_outside_the_range_is_refused(name, p):
    """A value just outside the declared range, given from Python, is a ParameterError naming
    topology.<param>, word for word the one the config path gives."""
    entry = TOPOLOGIES.get(name)
    for value in outside(p):
        with pytest.raises(ParameterError) as direct:
            public(entry)(**required_args(entry), **{p.name: value})
        msg = str(direct.value)
        assert msg.startswith(f"topology.{p.name}: must be ") and "\n" not in msg, msg
        with pytest.raises(ParameterError) as config:
            build(name, {**required_args(entry), p.name: value})
        assert str(config.value) == msg


@pytest.mark.parametrize("name,p", BOUNDED, ids=[f"{n}.{p.name}" for n, p in BOUNDED])
def test_bounds_themselves_are_in_range(name, p):
    """The declared bounds are inclusive unless ``lo_open``: the range check passes them."""
    for bound, is_open in ((p.lo, p.lo_open), (p.hi, False)):
        if bound is not None and not is_open:
            value = [bound] if isinstance(p.kind, str) else bound
            assert p.check(value, "topology.x") == value


@pytest.mark.parametrize("name,p", INTS, ids=[f"{n}.{p.name}" for n, p in INTS])
def test_direct_call_refuses_bool_and_float_for_an_integer(name, p):
    """True and an integral float are not integers on the direct-call path."""
    entry = TOPOLOGIES.get(name)
    f = public(entry)
    good = p.lo if p.lo is not None else 1
    for bad in (True, False, float(good), np.bool_(True), "3"):
        value = [bad] if p.kind == "int_list" else bad
        with pytest.raises(ParameterError,
                           match=rf"^topology\.{p.name}: expected (an integer|a list of integers), "):
            f(**required_args(entry), **{p.name: value})


def test_float_parameter_takes_real_numbers_but_not_bool_or_nan():
    """Skywalk r_limit: ints and numpy floats in (0, 1] are fine, bool and nan are not."""
    from models.topologies.skywalk import skywalk
    kw = dict(z=4, c=4, d_i=3, d_o=1)
    assert skywalk(**kw, r_limit=1).params["r_limit"] == 1.0
    assert skywalk(**kw, r_limit=np.float32(0.875)).params["r_limit"] == 0.875
    with pytest.raises(ParameterError, match=r"^topology\.r_limit: expected a number, got True"):
        skywalk(**kw, r_limit=True)
    with pytest.raises(ParameterError, match=r"^topology\.r_limit: must be a finite number"):
        skywalk(**kw, r_limit=float("nan"))


def test_numpy_integers_are_accepted_and_become_python_ints():
    """Internal callers may pass numpy integers (and arrays for lists); the generator sees ints."""
    from models.topologies.dragonfly import dragonfly
    from models.topologies.hyperx import hyperx
    a = dragonfly(h=np.int64(2), p=np.int32(1))
    b = dragonfly(h=2, p=1)
    assert np.array_equal(a.links, b.links) and a.params == b.params
    assert all(type(v) is int for k, v in a.params.items() if k != "balanced")
    t = hyperx(sizes=np.array([3, 2], dtype=np.int16), p=np.uint8(2))
    assert t.params["sizes"] == [3, 2] and type(t.params["sizes"][0]) is int and t.params["p"] == 2


def test_none_derives_where_the_default_is_none():
    """None is 'derive it' where the default is None, and an error elsewhere."""
    from models.topologies.fattree import fat_tree
    from models.topologies.slimfly import slim_fly
    assert slim_fly(5, p=None).params["p"] == 4
    assert fat_tree(4, pods=None).params["pods"] == 4
    with pytest.raises(ParameterError, match=r"^topology\.k: expected an integer, got None"):
        fat_tree(None)


def test_family_rules_stay_with_the_family():
    """In range but against the family's own rule: the family's message."""
    from models.topologies.fattree import fat_tree
    from models.topologies.slimfly import slim_fly
    with pytest.raises(ParameterError, match=r"^topology\.q: Slim Fly q=6 is not a prime power"):
        slim_fly(6)
    with pytest.raises(ParameterError, match=r"^topology\.k: fat tree radix k = 7 must be even"):
        fat_tree(7)
    with pytest.raises(ParameterError, match=r"^topology\.p_rounding: 'round' is not one of ceil"):
        slim_fly(5, p_rounding="round")


def test_wrong_call_is_still_a_type_error():
    """An unknown keyword or too many arguments is the generator's own TypeError."""
    from models.topologies.mlfm import mlfm
    with pytest.raises(TypeError):
        mlfm(2, 3)
    with pytest.raises(TypeError):
        mlfm(hh=2)


def test_checked_call_needs_every_param_in_the_signature():
    """A Param that names no argument of the function is a registration error."""
    def f(a=1):
        return a
    with pytest.raises(TypeError, match="Param b is not an argument"):
        checked_call(f, [Param("b", int, 1, "b")], "s")
    reg = Registry("thing", "s.name", checked=True)
    g = reg.register("f", f, params=[Param("a", int, 1, "a", lo=0)], summary="", reference="")
    assert g(a=np.int8(3)) == 3 and type(g(a=np.int8(3))) is int and g() == 1
    with pytest.raises(ParameterError, match=r"^s\.a: must be >= 0 \(got -1\)"):
        g(-1)
    plain = Registry("thing", "s.name")
    assert plain.register("f", f, params=[], summary="", reference="") is f
