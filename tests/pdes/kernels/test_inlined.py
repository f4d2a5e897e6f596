"""The router stages inline what they run per router and per flit.

A call from one compiled function to another passes every field of every array in its
arguments (the engine's state groups: several hundred machine words), and LLVM inlines
a large callee only when it chooses to: a call left in the router stage cost ~660 pushes
per router and step (BookSim's switch step) or ~370 per head flit (a routing's ``hop``
or ``source`` compiled on its own).  These tests read the optimized LLVM IR of the window
loop and check that the stages call no routing function and no engine function (the
endpoint stage calls the random draws, a few scalars each), and that the window loop
itself updates no reference counts."""
import re

import pytest

from pdes.build import prepare
from tests.helpers import make_cfg, one_part

CALL = re.compile(r'\b(?:call|invoke)\b[^@\n]*@"?([\w.$]+)')
DEFINE = re.compile(r'^define\b[^@]*@"?([\w.$]+)')
# mangled prefixes of functions that must not stay calls: routings and the cycle kernels
FORBIDDEN = ("_ZN6models7routing", "_ZN4pdes7kernels")


def module_ir(library) -> str:
    """The optimized LLVM IR of a compiled function's module: the module other code links
    against, which code loaded from the cache keeps as bitcode, parsed when asked for."""
    return str(library._get_module_for_linking())


STAGES = ("router_stage", "endpoint_stage", "output_stage")


def stage_calls(ir: str, names=STAGES) -> dict:
    """{stage function: the functions it calls} from a module's LLVM IR (the window loop's
    module holds the three stages it calls once per cycle); ``names``: the functions whose
    names contain one of them."""
    out, name = {}, None
    for line in ir.splitlines():
        m = DEFINE.match(line)
        if m:
            name = m.group(1) if any(s in m.group(1) for s in names) else None
            if name:
                out[name] = set()
        elif line.startswith("}"):
            name = None
        elif name:
            out[name].update(CALL.findall(line))
    return out


@pytest.mark.parametrize("sets", [
    ("routing.algorithm=min",),                                # the engine benchmark's
    ("routing.algorithm=min_adaptive",),                       # a hop compiled on its own
    ("routing.algorithm=ugal_l", "router.num_vcs=4"),          # a source compiled on its own
    ("routing.algorithm=ugal_l", "router.num_vcs=4", "router.allocation=booksim"),
])
def test_stages_call_no_routing_or_engine_function(sets):
    part = one_part(prepare(make_cfg(*sets, "traffic.load=0.5", preset="short")))
    part.advance(0, 10)
    stages = {}
    for cres in part.kernel_advance.overloads.values():
        stages.update(stage_calls(module_ir(cres.library)))
    for s in STAGES:
        assert any(s in name for name in stages), f"no {s} in the window loop's module"
    for name, calls in stages.items():
        left = sorted(c for c in calls if c.startswith(FORBIDDEN))
        assert not left, f"{name[:60]}... still calls {[c[:60] for c in left]}"
    # the window loop itself counts no references (models.core.jit.njit_window): Numba
    # would wrap each array it passes to a stage in count updates
    loops = {}
    for cres in part.kernel_advance.overloads.values():
        loops.update(stage_calls(module_ir(cres.library), names=("7advance", "10advance_iq")))
    assert loops
    for name, calls in loops.items():
        assert not [c for c in calls if c.startswith("NRT_")], f"{name[:60]}... counts references"
