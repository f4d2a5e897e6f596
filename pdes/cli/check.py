"""``python -m pdes check [CONFIG] [--set k=v ...]``: static deadlock check of a routing.

Builds the channel dependency graph of the configured topology, routing
algorithm and VC scheme (every path the routing can produce) and reports a
cycle with the channels on it.  Exit status 0 = deadlock-free, 1 = deadlock
possible (a cycle), 2 = bad input: a config error, a routing that needs more
VCs than configured, or a disconnected network (no routing can serve it).
"""
from __future__ import annotations

import json

HELP = "static deadlock check: channel dependency graph of topology + routing + VC scheme"


def add_arguments(p):
    p.add_argument("config", nargs="?", help="TOML config file (default: built-in example)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a config value (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def main(args) -> int:
    from models.routing.cdg import check
    from pdes import config as C
    from pdes.build import plan_routing

    raw = C.load_toml(args.config) if args.config else {}
    cfg = C.resolve(raw, args.sets)
    topo, dist, plan, nv = plan_routing(cfg)
    res = check(topo, dist, plan, nv, vcs=cfg["routing"]["vcs"])
    res["topology"] = topo.name
    res["routing"] = cfg["routing"]["algorithm"]
    if plan.info:
        res["routing_info"] = plan.info
    if args.json:
        print(json.dumps(res))
    else:
        print(f"{topo.name} ({topo.n_routers} routers, {2 * topo.n_links} channels), routing "
              f"{res['routing']}, VC scheme {res['scheme']}: {res['classes']} "
              f"class{'es' * (res['classes'] != 1)}, num_vcs {nv}, longest path {plan.max_hops} "
              f"hop{'s' * (plan.max_hops != 1)}")
        print(("deadlock-free: " if res["ok"] else "DEADLOCK POSSIBLE: ") + res["reason"])
        if plan.note:
            print(plan.note)
        if "almost_minimal_fraction" in plan.info:
            print(f"layers: {len(plan.info['layers']) + 1}, pairs with an almost-minimal path "
                  f"per layer >= 1: {100 * plan.info['almost_minimal_fraction']:.1f}%, built in "
                  f"{plan.info['construction_s']:.2f} s")
    return 0 if res["ok"] else 1
