"""Topology families, one module each; importing this package registers them all.

Each module defines its generator function and registers it at the bottom
with :data:`models.core.registry.TOPOLOGIES`.  Modules are discovered in sorted
order, so adding a family means adding one file here.
"""
import importlib
import pkgutil

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")
