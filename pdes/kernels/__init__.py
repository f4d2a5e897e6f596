"""Numba kernels of the engine: arrays and scalars in, no MPI/h5py/registries inside.

Numba's on-disk cache is keyed on the source file of each cached function
only, but :func:`pdes.kernels.cycle.advance` inlines functions from the other
kernel modules.  So that an edit to, say, ``routing.py`` can never leave a
stale compiled kernel behind, importing this package compares a hash of all
kernel sources with the one stored next to the cache and drops the cached
kernels when it differs (best effort: nothing happens on a read-only install,
whose sources do not change).
"""
import hashlib
import pathlib


def _refresh_cache() -> None:
    here = pathlib.Path(__file__).parent
    models = here.parent.parent / "models"
    sources = sorted(here.glob("*.py")) + [models / "jit.py", models / "vcseq.py", models / "rng.py"]
    digest = hashlib.sha1()
    for f in sources:
        try:
            digest.update(f.read_bytes())
        except OSError:
            return
    stamp = digest.hexdigest()
    cache = here / "__pycache__"
    marker = cache / "kernels.sources.sha1"
    try:
        if marker.exists() and marker.read_text() == stamp:
            return
        for f in list(cache.glob("*.nbi")) + list(cache.glob("*.nbc")):
            try:
                f.unlink()
            except FileNotFoundError:      # another rank removed it first
                pass
        cache.mkdir(exist_ok=True)
        tmp = cache / f"kernels.sources.sha1.{id(stamp)}"
        tmp.write_text(stamp)
        tmp.replace(marker)
    except OSError:
        pass


_refresh_cache()
