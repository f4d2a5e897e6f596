"""One compiled router stage per routing kernel.

Numba caches a compiled function on disk keyed by its own source file and
argument types.  A cycle kernel that received the routing functions as
arguments would carry their dispatchers' identities in its argument types
and miss the cache in every new process; a kernel whose module refers to
them as globals caches normally.  So for each routing kernel
(:class:`models.core.routing.RoutingKernel`) this module writes a copy of
:mod:`pdes.kernels.routed` whose two lines marked ``# routing import``
import that kernel's functions, into the project's cache directory
(:func:`models.core.jit.cache_dir`, keyed on every project source), and imports
it under a module name of its own (registered in ``sys.modules``, which
Numba's cache needs to load the compiled code back).  A copy is written
once (created next to its final name and hard-linked into place, so
concurrent ranks never see a partial file or change its timestamp) and
named after the digest of its text.
"""
from __future__ import annotations

import functools
import glob
import hashlib
import importlib.util
import os
import re
import sys
import tempfile
from pathlib import Path

from models.core.jit import cache_dir

TEMPLATE = Path(__file__).with_name("routed.py")
MARK = "# routing import"


def kernel_source(kernel) -> str:
    """The text of the router stage for ``kernel`` (a ``RoutingKernel``)."""
    return _source(kernel.module, kernel.hop, kernel.source)


@functools.lru_cache(maxsize=None)
def _source(module: str, hop: str, source: str | None) -> str:
    """The router stage's text, made once per process and routing kernel (like the cache
    directory's digest, from the sources as the process found them): every point of a
    study asks for it."""
    text = TEMPLATE.read_text()
    lines = [i for i, line in enumerate(text.splitlines()) if line.rstrip().endswith(MARK)]
    if len(lines) != 2:
        raise RuntimeError(f"{TEMPLATE.name}: expected two lines marked '{MARK}'")
    if source:
        imp = f"from {module} import {hop} as route_hop, {source} as route_source"
    else:
        imp = (f"from {module} import {hop} as route_hop\n"
               "from pdes.kernels.no_route import source as route_source")
    out = text.splitlines()
    out[lines[0]] = f"{imp}  {MARK}"
    out[lines[1]] = f"HAS_SOURCE = {source is not None}  {MARK}"
    return "\n".join(out) + "\n"


def _directory() -> str:
    for d in (os.path.join(cache_dir(), "generated"),
              os.path.join(tempfile.gettempdir(), f"pdes-{os.getuid()}", os.path.basename(cache_dir()))):
        try:
            os.makedirs(d, exist_ok=True)
            if os.access(d, os.W_OK):
                return d
        except OSError:
            continue
    raise RuntimeError("no writable directory for the generated kernels")


def _write_once(path: str, text: str) -> None:
    if os.path.exists(path):
        return
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)


def module_name(kernel) -> str:
    """The module name of a routing kernel's router stage (keyed on its text)."""
    return _module_name(kernel.module, kernel.hop, kernel.source)


@functools.lru_cache(maxsize=None)
def _module_name(module: str, hop: str, source: str | None) -> str:
    digest = hashlib.sha256(_source(module, hop, source).encode()).hexdigest()[:16]
    stem = re.sub(r"\W", "_", f"{module}_{hop}_{source}")
    return f"pdes.kernels.routed_{stem}_{digest}"


def compiled(kernel, booksim: bool = False) -> bool:
    """Whether the router stage of ``kernel`` is in the on-disk cache already (with BookSim's
    allocation: its ``advance_iq``)."""
    return cached(module_name(kernel), "advance_iq" if booksim else "advance")


def cached(name: str, function: str = "advance") -> bool:
    """Whether ``function`` (``advance`` or ``advance_iq``) of the router stage module named
    ``name`` is in the on-disk cache already."""
    leaf = name.rsplit(".", 1)[-1]
    return bool(glob.glob(os.path.join(cache_dir(), "**", f"{leaf}.{function}-*.nbi"),
                          recursive=True))


def kernel_module(kernel):
    """The compiled-on-demand router stage module of a routing kernel (imported once)."""
    name = module_name(kernel)
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    text = kernel_source(kernel)
    path = os.path.join(_directory(), name.rsplit(".", 1)[1] + ".py")
    _write_once(path, text)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    return mod
