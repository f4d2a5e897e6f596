"""Application skeletons: the communication structure of two kinds of application, as schedules.

They stand for the application proxies of 003 Sec. 7.5-7.6 (scientific codes
with nearest-neighbour halo exchanges and small allreduces; data-parallel DNN
training, whose scaling is set by the gradient allreduce).  They are
skeletons, not the applications: compute phases are fixed cycle counts and
the messages have the sizes given, nothing is derived from a real code.

* ``stencil3d`` -- processes on a 3D torus (:func:`models.traffic.exchanges.torus_dims`,
  x fastest, as ``nn3d``); each iteration: a compute of ``compute_cycles``,
  then a halo exchange with the 6 neighbours (``halo_bytes`` each way, all
  sends and receives posted when the compute is done), then, when all of them
  have completed, an allreduce of ``allreduce_bytes`` (a residual norm).
* ``training`` -- each iteration: a compute of ``compute_cycles`` (forward and
  backward pass), then an allreduce of ``gradient_bytes``.

Each iteration starts on a process when the previous one has completed there.
"""
from __future__ import annotations

import numpy as np

from models.core.errors import ParameterError
from models.core.registry import TRAFFIC, Param
from models.schedule import MAX_CYCLES
from models.traffic.collectives import (ALLREDUCE, MAX_BYTES, PLACEMENT, ops_bound, pick_algorithm,
                                        placed, repeated)
from models.traffic.exchanges import torus_dims

HALO_TAG = 1
"""Tags of the halo messages: direction d (0..5: +x, -x, +y, -y, +z, -z) uses HALO_TAG + d; the
allreduce uses tag 0."""


def _common(iterations, compute_cycles, reduce_cycles_per_byte, sizes):
    if iterations < 1:
        raise ParameterError(f"traffic.iterations: must be >= 1, got {iterations}")
    if not 0 <= compute_cycles <= MAX_CYCLES:
        raise ParameterError(f"traffic.compute_cycles: must be in [0, {MAX_CYCLES}], got {compute_cycles}")
    if not reduce_cycles_per_byte >= 0:
        raise ParameterError(f"traffic.reduce_cycles_per_byte: must be >= 0, got {reduce_cycles_per_byte}")
    for key, v in sizes.items():
        if not 0 <= v <= MAX_BYTES:
            raise ParameterError(f"traffic.{key}: must be in [0, {MAX_BYTES:,}], got {v}")


def _compute(b, P, cycles, after):
    return b.compute(P, cycles, after=[after]) if cycles else after


def stencil3d(topo, seed, procs=0, placement="linear", placement_file="", dims=None,
              compute_cycles=1000, halo_bytes=8192, allreduce_bytes=8,
              algorithm="recursive_doubling", reduce_cycles_per_byte=0.0, iterations=1):
    """3D stencil skeleton: compute, 6-neighbour halo exchange, small allreduce, per iteration."""
    gen = pick_algorithm(ALLREDUCE, algorithm)
    _common(iterations, compute_cycles, reduce_cycles_per_byte,
            {"halo_bytes": halo_bytes, "allreduce_bytes": allreduce_bytes})
    ep = placed(topo, seed, procs, placement, placement_file)
    if dims:
        if len(dims) != 3 or min(dims) < 1:
            raise ParameterError(f"traffic.dims: three positive sizes needed, got {dims}")
        X, Y, Z = dims
        if X * Y * Z > ep.size:
            raise ParameterError(f"traffic.dims: {X}x{Y}x{Z} = {X * Y * Z} processes do not fit "
                                 f"{ep.size} placed processes")
        if X * Y * Z < 2:
            raise ParameterError("traffic.dims: the grid needs at least 2 processes")
    else:
        X, Y, Z = torus_dims(ep.size)
    n = X * Y * Z
    ep = ep[:n]
    i = np.arange(n)
    x, y, z = i % X, (i // X) % Y, i // (X * Y)
    dirs = []                   # (direction, neighbour at +d, neighbour at -d)
    for d, (dx, dy, dz) in enumerate(((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1),
                                      (0, 0, -1))):
        if (X if dx else Y if dy else Z) > 1:      # a side of 1 has no neighbour that way
            dirs.append((d, ((x + dx) % X) + X * (((y + dy) % Y) + Y * ((z + dz) % Z)),
                         ((x - dx) % X) + X * (((y - dy) % Y) + Y * ((z - dz) % Z))))

    def body(b, P, after):
        start = _compute(b, P, compute_cycles, after)
        halo = []
        for d, to, frm in dirs:  # direction d: send to the neighbour at +d, receive from -d
            halo.append(b.send(P, to, halo_bytes, HALO_TAG + d, after=[start]))
            halo.append(b.recv(P, frm, halo_bytes, HALO_TAG + d, after=[start]))
        return gen(b, P, allreduce_bytes, after=halo or start, tag=0,
                   reduce_cycles_per_byte=reduce_cycles_per_byte)

    per = n + 2 * len(dirs) * n + ops_bound("allreduce", algorithm, n,
                                            reducing=reduce_cycles_per_byte > 0)
    desc = (f"3D stencil skeleton on a {X}x{Y}x{Z} torus: {compute_cycles} compute cycles, "
            f"{halo_bytes}-byte halos, {allreduce_bytes}-byte allreduce ({algorithm}), "
            f"{iterations} iteration{'s' if iterations > 1 else ''}")
    return repeated(topo, ep, body, per, iterations, 0, desc)


def training(topo, seed, procs=0, placement="linear", placement_file="", compute_cycles=10000,
             gradient_bytes=1 << 20, algorithm="ring", reduce_cycles_per_byte=0.0, iterations=1):
    """Data-parallel training skeleton: compute (forward + backward), gradient allreduce."""
    gen = pick_algorithm(ALLREDUCE, algorithm)
    _common(iterations, compute_cycles, reduce_cycles_per_byte, {"gradient_bytes": gradient_bytes})
    ep = placed(topo, seed, procs, placement, placement_file)
    n = ep.size

    def body(b, P, after):
        return gen(b, P, gradient_bytes, after=_compute(b, P, compute_cycles, after), tag=0,
                   reduce_cycles_per_byte=reduce_cycles_per_byte)

    per = n + ops_bound("allreduce", algorithm, n, reducing=reduce_cycles_per_byte > 0)
    desc = (f"data-parallel training skeleton of {n} processes: {compute_cycles} compute cycles, "
            f"{gradient_bytes}-byte gradient allreduce ({algorithm}), "
            f"{iterations} iteration{'s' if iterations > 1 else ''}")
    return repeated(topo, ep, body, per, iterations, 0, desc)


_REPEAT = [Param("iterations", int, 1, "iterations, each after the previous one has completed on "
                 "that process", lo=1)]
_RCPB = Param("reduce_cycles_per_byte", float, 0.0, "allreduce: after each received part that is "
              "reduced, a compute of ceil(bytes x this) cycles", lo=0.0)


def _alg(default):
    return Param("algorithm", str, default, "allreduce algorithm", choices=tuple(ALLREDUCE))


TRAFFIC.register("stencil3d", stencil3d, params=PLACEMENT + [
    Param("dims", "int_list", None, "torus sides X,Y,Z (default: largest most-cubic torus)"),
    Param("compute_cycles", int, 1000, "compute per iteration, before the halo exchange", lo=0,
          hi=MAX_CYCLES),
    Param("halo_bytes", int, 8192, "bytes to each of the 6 neighbours", lo=0, hi=MAX_BYTES),
    Param("allreduce_bytes", int, 8, "allreduce vector per iteration", lo=0, hi=MAX_BYTES),
    _alg("recursive_doubling"), _RCPB] + _REPEAT,
    summary="3D stencil skeleton: compute, halo exchange, allreduce per iteration (a skeleton)",
    reference="003 Sec. 7.5", finite=True)
TRAFFIC.register("training", training, params=PLACEMENT + [
    Param("compute_cycles", int, 10000, "forward and backward pass per iteration", lo=0,
          hi=MAX_CYCLES),
    Param("gradient_bytes", int, 1 << 20, "gradient allreduce per iteration", lo=0, hi=MAX_BYTES),
    _alg("ring"), _RCPB] + _REPEAT,
    summary="data-parallel training skeleton: compute, gradient allreduce per iteration "
            "(a skeleton)", reference="003 Sec. 7.6", finite=True)
