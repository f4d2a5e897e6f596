"""GPCNeT-style congestion impact: canaries' message latency with and without congestors.

For each network (``--networks``: by default Slim Fly q=5, a Dragonfly h=3 and a Galaxyfly of
200 to 350 endpoints) and each routing (``--routings``, default min and ugal_l), the
endpoints are shuffled (``--seed``) and split as GPCNeT does (Chunduri et al., SC19): the
last 20% (``--canary-share``) run two canary jobs, a ``random_ring`` of 8-byte messages and
an 8-byte ``allreduce`` (recursive doubling, MPICH's choice for short vectors), half of them
each; the other 80% run three congestor jobs, a third each: ``alltoall_collective``
(pairwise), ``incast`` and ``outcast`` (``--congestor-bytes`` per message, GPCNeT's 4 KiB by
default).  The canaries start at ``--canary-start`` so that the congestors load the network
first.  Each canary also runs alone on the same endpoints (``pdes run --alone`` semantics:
same endpoints, same start cycle, nothing else in the network).

The congestors' iterations are first set from the canaries' time alone (``--cover`` times
it, divided by a lower bound of a congestor round's cycles).  When a congestor finishes
before the canaries do, the canaries' end under congestion is projected from the share of
their operations done by then, every congestor that would end before ``--margin`` times that is
lengthened in proportion and the shared run repeated (at most ``--max-tries`` runs, then a
warning), so that every congestor runs for the whole of the canaries' run.

Prints a markdown table per canary: message latency mean and 99th percentile alone and with
the congestors, the congestion impact factors (congested / alone, GPCNeT's definition for the
average and the 99th percentile) and the canary's slowdown (its cycles with the congestors /
alone, both from ``--canary-start``); then the congestors' processes, iterations and
completion cycles against the canaries' end.
``--out FILE`` also writes the first table as CSV.

    python run_scripts/congestion.py [--networks sf,df,gf] [--routings min,ugal_l]
        [--ring-iterations 200] [--allreduce-iterations 100] [--congestor-bytes 4096]
        [--ranks 1] [--quick] [--out congestion.csv]
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from models.core.errors import ParameterError  # noqa: E402

NETWORKS = {
    "sf": ("Slim Fly q=5, p=4", ["topology.name=slimfly", "topology.q=5"]),
    "sf7": ("Slim Fly q=7, p=6", ["topology.name=slimfly", "topology.q=7"]),
    "df": ("Dragonfly h=3 (a=6, p=3, g=19)", ["topology.name=dragonfly", "topology.h=3"]),
    "gf": ("Galaxyfly n=5, q=7, a=4, p=2", ["topology.name=galaxyfly", "topology.n=5",
                                            "topology.q=7", "topology.a=4", "topology.p=2"]),
}
ROUTER = ["router.link_latency=1", "router.num_vcs=0"]
CANARIES = ("ring", "allreduce")
CONGESTORS = ("alltoall", "incast", "outcast")

from resiliency_perf import pdes, sets  # noqa: E402  (run as a script: run_scripts/ is on the path)


def n_endpoints(net, extra):
    from pdes import config as C
    from models.topology import build
    cfg = C.resolve({}, NETWORKS[net][1] + extra)
    topo = cfg["topology"]
    return build(topo["name"], {k: v for k, v in topo.items() if k != "name"}).n_endpoints, cfg


def split(E, seed, canary_share):
    """{job: endpoints}: a seeded shuffle of the endpoints; the first floor((1-share) E) are
    the congestors' (a third each, the first ones one more), the rest the canaries' (half each,
    the ring one more)."""
    import numpy as np
    perm = np.random.default_rng(seed).permutation(E)
    n_cong = int(math.floor((1 - canary_share) * E))
    out = {}
    for name, part in zip(CONGESTORS, np.array_split(perm[:n_cong], 3)):
        out[name] = [int(e) for e in part]
    for name, part in zip(CANARIES, np.array_split(perm[n_cong:], 2)):
        out[name] = [int(e) for e in part]
    return out


def job_toml(name, pattern, eps, **kw):
    lines = ["[[jobs]]", f'name = "{name}"', f'pattern = "{pattern}"', 'placement = "list"',
             f"endpoints = [{', '.join(map(str, eps))}]", f"procs = {len(eps)}"]
    for k, v in kw.items():
        lines.append(f'{k} = "{v}"' if isinstance(v, str) else f"{k} = {v}")
    return "\n".join(lines) + "\n"


def canary_jobs(eps, a):
    return {
        "ring": job_toml("ring", "random_ring", eps["ring"], bytes=8,
                         iterations=a.ring_iterations, start_cycle=a.canary_start),
        "allreduce": job_toml("allreduce", "allreduce", eps["allreduce"],
                              algorithm="recursive_doubling", bytes=8,
                              iterations=a.allreduce_iterations, start_cycle=a.canary_start),
    }


def congestor_jobs(eps, iters, nbytes):
    return {
        "alltoall": job_toml("alltoall", "alltoall_collective", eps["alltoall"],
                             algorithm="pairwise", bytes=nbytes, iterations=iters["alltoall"]),
        "incast": job_toml("incast", "incast", eps["incast"], bytes=nbytes,
                           iterations=iters["incast"]),
        "outcast": job_toml("outcast", "outcast", eps["outcast"], bytes=nbytes,
                            iterations=iters["outcast"]),
    }


def run_jobs(text, base, ranks, workdir, tag):
    """{job: {key: value}} of a `pdes run` of the jobs in ``text``, with ``op_end``: the cycle
    each of the job's operations completed (/workload/op_end, jobs in order)."""
    import h5py
    cfg = os.path.join(workdir, f"{tag}.toml")
    out = os.path.join(workdir, f"{tag}.h5")
    with open(cfg, "w") as fh:
        fh.write(text)
    p = pdes(["run", cfg, *sets(base), "--quiet", "-o", out], ranks)
    if p.returncode != 0:
        raise SystemExit(f"{tag}: pdes run failed:\n{p.stderr}")
    with h5py.File(out) as f:
        res = {name: {k: f["jobs"][name][k][()] for k in f["jobs"][name]} for name in f["jobs"]}
        op_end, o = f["workload/op_end"][()], 0
        for name in json.loads(f["jobs"].attrs["names"]):
            k = int(res[name]["operations"])
            res[name]["op_end"] = op_end[o:o + k]
            o += k
    os.remove(out)
    return res


def round_bound(n, nbytes, cfg):
    """A lower bound of one congestor round's cycles: the flits one NIC must inject or eject
    in it (incast: the root's ejection, outcast: its injection, pairwise all-to-all: each
    process's n-1 messages), one flit per cycle."""
    r = cfg["router"]
    per = r["flit_bytes"] * r["packet_size"]
    flits = max(1, -(-nbytes // per)) * r["packet_size"]
    return max(1, (n - 1) * flits)


def study(net, routing, a, workdir):
    import numpy as np
    extra = [f"measure.seed={a.seed}", *a.set]
    E, cfg = n_endpoints(net, ROUTER + extra)
    base = NETWORKS[net][1] + ROUTER + [f"routing.algorithm={routing}"] + extra
    eps = split(E, a.seed, a.canary_share)
    canaries = canary_jobs(eps, a)
    tag = f"{net}-{routing}"
    alone = {c: run_jobs(canaries[c], base, a.ranks, workdir, f"{tag}-{c}-alone")[c]
             for c in CANARIES}
    alone_end = max(int(alone[c]["completion_cycle"]) for c in CANARIES)
    iters = {c: max(1, math.ceil(a.cover * alone_end
                                 / round_bound(len(eps[c]), a.congestor_bytes, cfg)))
             for c in CONGESTORS}
    for attempt in range(a.max_tries):
        text = "".join(canaries[c] for c in CANARIES) + "".join(
            congestor_jobs(eps, iters, a.congestor_bytes).values())
        t0 = time.time()
        res = run_jobs(text, base, a.ranks, workdir, f"{tag}-shared")
        end = max(int(res[c]["completion_cycle"]) for c in CANARIES)
        print(f"{tag}: shared run {attempt + 1} ({time.time() - t0:.0f} s): canaries end at cycle "
              f"{end}, congestors at " + ", ".join(f"{c} {int(res[c]['completion_cycle'])}"
                                                   for c in CONGESTORS), file=sys.stderr, flush=True)
        short = {c: int(res[c]["completion_cycle"]) for c in CONGESTORS
                 if int(res[c]["completion_cycle"]) <= end}
        if not short:
            break
        if attempt + 1 == a.max_tries:
            print(f"warning: {tag}: congestors {', '.join(short)} end before the canaries "
                  f"(cycle {end}) after {a.max_tries} runs", file=sys.stderr)
            break
        # the canaries progress slowly under congestion and speed up when it ends: project
        # their end from the share of their operations done when the first congestor ended,
        # and lengthen every congestor that ends before --margin times that
        first = min(short.values())
        done = min(float(np.mean((res[c]["op_end"] >= 0) & (res[c]["op_end"] < first)))
                   for c in CANARIES)
        need = a.canary_start + (first - a.canary_start) / max(done, 0.01)
        target = a.margin * max(need, end)
        for c in CONGESTORS:
            fin = int(res[c]["completion_cycle"])
            if fin < target:
                iters[c] = math.ceil(iters[c] * target / max(fin, 1)) + 1
    def span(r):
        """The canary's cycles from its start (--canary-start) to its completion."""
        return int(r["completion_cycle"]) - a.canary_start

    rows = []
    for c in CANARIES:
        j, s = res[c], alone[c]
        rows.append({
            "network": NETWORKS[net][0], "routing": routing, "canary": c,
            "processes": int(j["processes"]),
            "mean_alone": float(s["message_latency_mean"]),
            "mean_congested": float(j["message_latency_mean"]),
            "impact_mean": float(j["message_latency_mean"]) / float(s["message_latency_mean"]),
            "p99_alone": float(s["message_latency_p99"]),
            "p99_congested": float(j["message_latency_p99"]),
            "impact_p99": float(j["message_latency_p99"]) / float(s["message_latency_p99"]),
            "cycles_alone": span(s), "cycles_congested": span(j),
            "slowdown": span(j) / max(span(s), 1)})
    cong = {"network": NETWORKS[net][0], "routing": routing, "canaries_end": end,
            **{f"{c}_iterations": iters[c] for c in CONGESTORS},
            **{f"{c}_end": int(res[c]["completion_cycle"]) for c in CONGESTORS},
            **{f"{c}_processes": len(eps[c]) for c in CONGESTORS}}
    return rows, cong


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", default="sf,df,gf",
                    help=f"comma-separated, of {', '.join(NETWORKS)} (default sf,df,gf)")
    ap.add_argument("--routings", default="min,ugal_l", help="routing algorithms (default min,ugal_l)")
    ap.add_argument("--ring-iterations", type=int, default=None,
                    help="iterations of the random-ring canary (default 200, --quick 50)")
    ap.add_argument("--allreduce-iterations", type=int, default=None,
                    help="iterations of the allreduce canary (default 100, --quick 25)")
    ap.add_argument("--congestor-bytes", type=int, default=4096,
                    help="message size of the congestors (default 4096, GPCNeT's)")
    ap.add_argument("--canary-share", type=float, default=0.2,
                    help="share of the endpoints that run the canaries (default 0.2)")
    ap.add_argument("--canary-start", type=int, default=None,
                    help="cycle the canaries start at, after the congestors (default 1000, "
                    "--quick 500)")
    ap.add_argument("--cover", type=float, default=3.0,
                    help="first guess of the congestors' length, in canary run times alone "
                    "(default 3)")
    ap.add_argument("--margin", type=float, default=1.5,
                    help="lengthen congestors that end too early to this many times the "
                    "canaries' projected end (default 1.5)")
    ap.add_argument("--max-tries", type=int, default=4,
                    help="shared runs at most, scaling up congestors that end too early (default 4)")
    ap.add_argument("--seed", type=int, default=1,
                    help="seed of the endpoint split and of measure.seed (default 1)")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="extra config value for every run (repeatable)")
    ap.add_argument("--ranks", type=int, default=1, help="MPI ranks per pdes command (mpiexec -n)")
    ap.add_argument("--quick", action="store_true",
                    help="shorter canaries: the --quick defaults of the iterations and the start")
    ap.add_argument("--out", default="", help="also write the canary table to this CSV file")
    a = ap.parse_args(argv)
    nets = [n for n in a.networks.split(",") if n]
    bad = [n for n in nets if n not in NETWORKS]
    if bad:
        ap.error(f"--networks: unknown '{bad[0]}' (known: {', '.join(NETWORKS)})")
    routings = [r for r in a.routings.split(",") if r]
    if not routings:
        ap.error("--routings: give at least one routing algorithm")
    for opt, full, quick in (("ring_iterations", 200, 50), ("allreduce_iterations", 100, 25),
                             ("canary_start", 1000, 500)):
        if getattr(a, opt) is None:
            setattr(a, opt, quick if a.quick else full)
    for opt in ("ring_iterations", "allreduce_iterations", "max_tries", "ranks"):
        if getattr(a, opt) < 1:
            ap.error(f"--{opt.replace('_', '-')}: must be >= 1")
    for opt in ("congestor_bytes", "canary_start"):
        if getattr(a, opt) < 0:
            ap.error(f"--{opt.replace('_', '-')}: must be >= 0")
    if not 0 < a.canary_share < 1:
        ap.error("--canary-share: must be in (0, 1)")
    if not a.cover > 0:
        ap.error("--cover: must be > 0")
    if not a.margin >= 1:
        ap.error("--margin: must be >= 1")
    # SIGTERM ends the runs under way and removes their files, as Ctrl-C does
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    rows, congs = [], []
    with tempfile.TemporaryDirectory() as d:
        for net in nets:
            for routing in routings:
                r, c = study(net, routing, a, d)
                rows += r
                congs.append(c)
    head = ["network", "routing", "canary", "mean alone", "mean congested", "impact mean",
            "p99 alone", "p99 congested", "impact p99", "slowdown"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print(f"| {r['network']} | {r['routing']} | {r['canary']} ({r['processes']}) | "
              f"{r['mean_alone']:.1f} | {r['mean_congested']:.1f} | {r['impact_mean']:.2f} | "
              f"{r['p99_alone']:.0f} | {r['p99_congested']:.0f} | {r['impact_p99']:.2f} | "
              f"{r['slowdown']:.2f} |")
    print()
    head2 = ["network", "routing", "canaries end"] + [f"{c} (procs, iterations, end)"
                                                     for c in CONGESTORS]
    print("| " + " | ".join(head2) + " |")
    print("|" + "---|" * len(head2))
    for c in congs:
        print(f"| {c['network']} | {c['routing']} | {c['canaries_end']} | " + " | ".join(
            f"{c[f'{k}_processes']}, {c[f'{k}_iterations']}, {c[f'{k}_end']}"
            for k in CONGESTORS) + " |")
    if a.out:
        with open(a.out, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ParameterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
