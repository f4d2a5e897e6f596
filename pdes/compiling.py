"""Whether the simulation kernels of this source version are compiled already (in Numba's
on-disk cache), and the notice that a run will compile them first."""
from __future__ import annotations

import glob
import os

COMPILE_SECONDS = 20
"""What a first compile of the simulation kernels takes on a current core (cold cache)."""


def kernels_cached(kernels=None) -> bool:
    """Whether the compiled cycle kernels of this source version for the given routing
    kernels (``models.core.routing.RoutingKernel``; None: any) are in the on-disk cache."""
    from models.core.jit import cache_dir      # (here: the command line starts without Numba)
    from pdes.kernels import generate
    if kernels is not None:
        return all(generate.compiled(k) for k in kernels)
    return bool(glob.glob(os.path.join(cache_dir(), "**", "*.advance-*.nbi"), recursive=True))


def compile_notice(say, kernels=None) -> None:
    """Say that the kernels will be compiled first, when they are not cached."""
    if say is not None and not kernels_cached(kernels):
        say(f"compiling simulation kernels once for this version, about {COMPILE_SECONDS} s")
