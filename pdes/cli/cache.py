"""``python -m pdes cache [--prune] [--json]``: where the compiled kernels are cached, how
much this version and other pdes versions take there, and (``--prune``) delete the other
versions' kernels.

Each source version of pdes compiles its kernels into its own directory of the cache base
(``numba-<digest of every source file>``, :mod:`models.core.jit`), so an update or an edit
never loads stale machine code, and the directories of earlier versions stay until deleted.
Run it once, not under ``mpiexec``; a job of another version that is running when its
directory is deleted compiles again what it still has to load.
"""
from __future__ import annotations

import json

HELP = "show the compiled-code cache (this and other pdes versions); --prune deletes the others"


def add_arguments(p):
    p.add_argument("--prune", action="store_true",
                   help="delete the compiled kernels of every other pdes version")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def main(args) -> int:
    from models.core.errors import ParameterError
    from models.core.jit import cache_base, cache_dir
    from pdes.compiling import cache_versions, prune_cache, size_text
    base, what = cache_base()
    try:
        gone = prune_cache() if args.prune else []
    except OSError as exc:
        raise ParameterError(f"--prune: cannot delete {exc.filename or base} "
                             f"({exc.strerror or exc})") from None
    versions = cache_versions()
    mine = [v for v in versions if v.current]
    others = [v for v in versions if not v.current]
    if args.json:
        print(json.dumps({
            "base": base, "set_by": what, "current": cache_dir(),
            "current_bytes": mine[0].bytes if mine else 0,
            "others": [{"path": v.path, "bytes": v.bytes} for v in others],
            "deleted": [{"path": v.path, "bytes": v.bytes} for v in gone]}, sort_keys=True))
        return 0
    print(f"compiled-code cache: {base} ({'default' if what == 'default' else '$' + what})")
    print(f"  this version: {cache_dir()}, "
          + (size_text(mine[0].bytes) if mine else "empty (nothing compiled yet)"))
    if gone:
        print(f"  deleted the kernels of {len(gone)} other version(s): "
              f"{size_text(sum(v.bytes for v in gone))}")
    if others:
        print(f"  other versions: {len(others)}, {size_text(sum(v.bytes for v in others))} "
              "('python -m pdes cache --prune' deletes them)")
    elif not gone:
        print("  other versions: none")
    return 0
