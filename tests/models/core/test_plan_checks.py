"""Misspellings fail at plan time: routing plans and traffic plans name only what the kernel reads."""
import dataclasses

import numpy as np
import pytest

import models.routing  # noqa: F401  (registers the algorithms)
import models.traffic  # noqa: F401
from models.core.errors import ParameterError
from models.core.registry import ROUTINGS, TRAFFIC
from pdes.build import prepare
from tests.helpers import cfg_builder

cfg_of = cfg_builder("plan")


def _patch_routing(monkeypatch, alg, change):
    entry = ROUTINGS.get(alg)
    orig = entry.func
    monkeypatch.setattr(entry, "func", lambda *a, **k: change(orig(*a, **k)))


@pytest.mark.parametrize("alg,change,match", [
    ("valiant", lambda p: dataclasses.replace(p, kernel="valiamt"), "kernel 'valiamt'"),
    ("valiant", lambda p: dataclasses.replace(p, scheme="hopp"), "VC scheme 'hopp'"),
    ("valiant", lambda p: dataclasses.replace(p, tables={"mid_cnd": p.tables["mid_cand"]}),
     "unknown table 'mid_cnd'"),
    ("valiant", lambda p: dataclasses.replace(p, tables={}), "no table 'mid_cand'"),
    ("ugal_l", lambda p: dataclasses.replace(p, kernel_params={**p.kernel_params, "n_indirekt": 2}),
     "unknown kernel parameter 'n_indirekt'"),
    ("ugal_l", lambda p: dataclasses.replace(
        p, kernel_params={k: v for k, v in p.kernel_params.items() if k != "c"}),
     "no kernel parameter 'c'"),
    ("min", lambda p: dataclasses.replace(p, tables={"wdist": np.zeros((1, 1), np.int32)}),
     "unknown table 'wdist'"),
])
def test_routing_plan_misspellings_raise(monkeypatch, alg, change, match):
    """A plan with an unknown kernel, scheme, table or kernel parameter (or one missing) is refused
    at plan time, with the key named."""
    _patch_routing(monkeypatch, alg, change)
    with pytest.raises(ParameterError, match=match):
        prepare(cfg_of(f"routing.algorithm={alg}"))


def test_unknown_traffic_kind_raises(monkeypatch):
    """A traffic plan of an unknown kind is refused instead of running uniform traffic."""
    entry = TRAFFIC.get("uniform")
    orig = entry.func
    monkeypatch.setattr(entry, "func",
                        lambda *a, **k: dataclasses.replace(orig(*a, **k), kind="unifrom"))
    with pytest.raises(ParameterError, match="kind 'unifrom'"):
        prepare(cfg_of())


def test_every_registered_routing_passes_the_plan_check():
    """Every registered algorithm's plan, on the first of a few topologies it accepts, names
    exactly its kernel's inputs."""
    from pdes.build import check_plan, plan_routing
    candidates = [[], ["topology.name=dragonfly", "topology.h=2"],
                  ["topology.name=galaxyfly", "topology.n=3", "topology.q=5", "topology.a=2",
                   "topology.p=2"],
                  ["topology.name=fattree", "topology.k=4"],
                  ["topology.name=torus", "topology.dims=4,4"]]
    for alg in ROUTINGS.names():
        for sets in candidates:
            try:
                _, _, plan, _ = plan_routing(cfg_of(f"routing.algorithm={alg}", *sets))
            except ParameterError as exc:
                if str(exc).startswith(("routing.algorithm", "topology.g")):
                    continue      # not for this topology
                raise
            check_plan(alg, plan)
            break
        else:
            raise AssertionError(f"{alg}: no candidate topology accepted")
