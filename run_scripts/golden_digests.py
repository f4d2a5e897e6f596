"""Regenerate ``tests/golden_digests.json``, the stored results of the golden configs.

    python run_scripts/golden_digests.py [--check]

The digests pin the exact results (every dataset of the result file outside
``/run``) of the configs listed in ``tests/golden.py``.  They change
only when a commit MEANS to change results (a model fix, a new statistic):
regenerate them in that commit and say in its message which results changed
and why.  A refactor, a speed-up or a new plug-in must leave them unchanged;
``--check`` compares without writing.  Each config is also run on a two-part
split, which must give the same digest.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import golden as G  # noqa: E402

from pdes.build import prepare  # noqa: E402
from pdes.engine import run_local  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the stored file, write nothing")
    args = ap.parse_args(argv)
    out = {}
    for name in sorted(G.GOLDEN):
        cfg = G.golden_cfg(name)
        prep = prepare(cfg)
        one = G.result_digest(run_local(cfg, prep=prep), cfg)
        two = G.result_digest(run_local(cfg, owner=G.split_owner(prep.topo.n_routers), prep=prep), cfg)
        if one != two:
            print(f"{name}: 1 part and 2 parts differ ({one[:12]} vs {two[:12]})", file=sys.stderr)
            return 1
        out[name] = one
        print(f"{name:24s} {one}")
    if args.check:
        old = G.stored()
        bad = sorted(k for k in set(old) | set(out) if old.get(k) != out.get(k))
        print("differ: " + ", ".join(bad) if bad else "all digests equal")
        return 1 if bad else 0
    G.DIGESTS.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {G.DIGESTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
