"""Synthetic GOAL trace (a ring halo exchange) and the time and memory of reading one.

Writes a GOAL file (docs/traces.md) of ``--ranks`` ranks and about ``--ops``
operations: each rank runs iterations of ``calc``, then sends ``--bytes`` to
both ring neighbours (each send ``requires`` the calc) and receives from both
(each receive ``irequires`` the calc, i.e. is posted when it starts); the next
calc ``requires`` both receives.  Per iteration and rank: 5 operations and 6
dependency lines.

``--read FILE`` instead reads a GOAL file with models.traffic.goal.read_goal and
prints its operations, the read time and the peak resident memory of the process
(before and after reading), so the replay's speed and memory per million
operations can be measured:

    python run_scripts/goal_trace.py --ranks 64 --ops 1000000 -o ring.goal
    python run_scripts/goal_trace.py --read ring.goal
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from models.core.errors import ParameterError  # noqa: E402


def write_ring(path: str, ranks: int, ops: int, nbytes: int, calc: int) -> int:
    """Write the ring halo exchange; returns the number of operations written."""
    from pdes.files import replaced_when_whole
    iters = max(1, round(ops / (5 * ranks)))
    with replaced_when_whole(path) as tmp, open(tmp, "w", encoding="ascii", newline="\n") as fh:
        fh.write(f"// ring halo exchange: {ranks} ranks, {iters} iterations, {nbytes} B "
                 f"messages, calc {calc}\nnum_ranks {ranks}\n")
        for r in range(ranks):
            left, right = (r - 1) % ranks, (r + 1) % ranks
            lines = [f"\nrank {r} {{\n"]
            for k in range(iters):
                lines.append(
                    f"c{k}: calc {calc}\n"
                    f"sl{k}: send {nbytes}b to {left} tag {2 * k}\n"
                    f"sr{k}: send {nbytes}b to {right} tag {2 * k + 1}\n"
                    f"rl{k}: recv {nbytes}b from {left} tag {2 * k + 1}\n"
                    f"rr{k}: recv {nbytes}b from {right} tag {2 * k}\n"
                    + (f"c{k} requires rl{k - 1}\nc{k} requires rr{k - 1}\n" if k else "")
                    + f"sl{k} requires c{k}\nsr{k} requires c{k}\n"
                    f"rl{k} irequires c{k}\nrr{k} irequires c{k}\n")
                if len(lines) >= 4096:
                    fh.write("".join(lines))
                    lines = []
            lines.append("}\n")
            fh.write("".join(lines))
    return 5 * iters * ranks


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, MB (Linux reports KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def read(path: str, check: bool) -> None:
    import numpy as np

    from models.schedule import check as check_schedule
    from models.traffic.goal import read_goal
    before = peak_rss_mb()
    t = time.perf_counter()
    s = read_goal(path, "file")
    dt = time.perf_counter() - t
    after = peak_rss_mb()
    nbytes = sum(a.nbytes for a in (s.op_off, s.op_kind, s.op_peer, s.op_size, s.op_tag,
                                    s.dep_off, s.dep, s.dep_kind))
    print(f"{path}: {s.n_procs} ranks, {s.n_ops} operations, {s.dep.size} dependencies")
    print(f"read: {dt:.2f} s ({dt / max(s.n_ops, 1) * 1e6:.2f} us per operation)")
    print(f"peak RSS: {before:.0f} MB before reading, {after:.0f} MB after "
          f"({(after - before) * 2**20 / max(s.n_ops, 1):.0f} B per operation); "
          f"schedule arrays {nbytes / 2**20:.0f} MB")
    if check:
        t = time.perf_counter()
        check_schedule(s, "file")
        print(f"check: {time.perf_counter() - t:.2f} s (matching and completability), peak RSS "
              f"{peak_rss_mb():.0f} MB")
    del np


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=64, help="ranks (>= 2)")
    ap.add_argument("--ops", type=int, default=1_000_000, help="operations, about (5 per "
                    "iteration and rank)")
    ap.add_argument("--bytes", type=int, default=4096, help="bytes per message")
    ap.add_argument("--calc", type=int, default=1000, help="time units per calc")
    ap.add_argument("-o", "--output", help="GOAL file to write")
    ap.add_argument("--read", metavar="FILE", help="read FILE and report time and memory "
                    "instead of writing")
    ap.add_argument("--check", action="store_true", help="with --read: also run the "
                    "schedule check (matching, dependency cycles)")
    args = ap.parse_args(argv)
    if args.check and not args.read:
        ap.error("--check: only with --read FILE")
    if args.read:
        read(args.read, args.check)
        return 0
    if not args.output:
        ap.error("give -o FILE (or --read FILE)")
    if args.ranks < 2 or args.ops < 1 or args.bytes < 0 or args.calc < 0:
        ap.error("need --ranks >= 2, --ops >= 1, --bytes >= 0, --calc >= 0")
    t = time.perf_counter()
    n = write_ring(args.output, args.ranks, args.ops, args.bytes, args.calc)
    print(f"{args.output}: {args.ranks} ranks, {n} operations, written in "
          f"{time.perf_counter() - t:.1f} s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ParameterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
