"""004 Fig. 12c: the cable cost of ~30K-endpoint networks in cabinets of about one Dragonfly group.

    python run_scripts/reproduce_cable_cost.py                 # the table (ten networks, ~15 s)
    python run_scripts/reproduce_cable_cost.py --markdown      # the same as a docs table
    python run_scripts/reproduce_cable_cost.py --tiny          # small networks, same packaging rules
    python run_scripts/reproduce_cable_cost.py --layout overhead_m=4 --layout intra_rack_m=1.5

For each network of 004 Table 6 (DF, FT, FB, SF and five Galaxyflies) and the random regular
network (RR) of 004 Fig. 12c, runs

    python -m pdes analyze NAME --set ... --only cables,cost --json

in a subprocess (the command is printed with each row, so every number can be reproduced
alone) and tabulates the cabinets, the electric (intra-cabinet) and optical (inter-cabinet)
cable counts and dollars, and the cable cost in total and per endpoint.  The cabinets hold
about the terminals of one DF group (004 Sec. 6.1), each network with 004's number of
cabinets where the packaging allows it:

* DF ``a=19 p=9 h=9 g=172`` (29,412 terminals, radix 36): a group per cabinet, 172 cabinets
  (004: 13 x 13 + 3);
* FT: 31 pods of the 62-port 3-level fat tree (29,791 terminals, 2,883 routers, radix 62 as in
  Table 6), ``layout.cabinets=156`` (004: 9 x 16 + 12).  pdes cuts the routers in pod order
  (a pod's edge and aggregation routers, then the core planes) into 156 runs; 004 puts the
  leaves with their terminals in 124 cabinets and the other routers in the remaining 32;
* FB: ``hyperx sizes=13,13,13 p=13`` (28,561 terminals, radix 49), 169 cabinets of 13
  routers (004: 13 x 13);
* SF: ``slimfly q=27 p=20`` (29,160 terminals, radix 61), 162 cabinets of 9 routers
  (004: 13 x 12 + 6);
* RR: ``random_regular`` with DF's routers, radix and cabinets (004: "the same as those of
  DF"): 3,268 routers of network degree 27, 9 terminals each, 19 per cabinet;
* GF(25,49,a,p) for (a, p) = (8,3), (3,8), (4,6), (6,4), (1,24) (29,400 terminals):
  cabinets of 7 supernodes (``layout.cabinet_routers=7a``), 175 cabinets of 168 terminals
  (004: 13 x 13 + 7 = 176; 1,225 supernodes do not fill 176 cabinets evenly).

The floor is the layout preset ``slimfly`` (racks 1 x 1 x 2 m on a near-square grid, 1 m
intra-cabinet cables, Manhattan distance + 2 m between cabinets) and the cables are priced
with the ``fdr10`` model (000 Sec. VI-B), the model ``pdes analyze`` uses by default: 004
prices with the cables of its [36], [37], whose coefficients it draws (Fig. 12a) but does not
print.  The comparisons printed at the end are the ones 004's text makes about Fig. 12c.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _gf(a: int, p: int, n: int = 25, q: int = 49, per_cabinet: int = 7):
    return ("galaxyfly", {"n": n, "q": q, "a": a, "p": p},
            {"cabinet_routers": per_cabinet * a})


PAPER = {  # label: (topology, params, layout, 004's terminals, routers, radix, cabinets)
    "DF": ("dragonfly", {"a": 19, "p": 9, "h": 9, "g": 172}, {},
           (29412, 3268, 36, "13x13+3")),
    "FT": ("fattree", {"k": 62, "levels": 3, "pods": 31}, {"cabinets": 156},
           (29791, 2883, 62, "9x16+12")),
    "FB": ("hyperx", {"sizes": "13,13,13", "p": 13}, {"cabinets": 169},
           (28561, 2197, 49, "13x13")),
    "SF": ("slimfly", {"q": 27, "p": 20}, {"cabinets": 162},
           (29160, 1458, 61, "13x12+6")),
    "RR": ("random_regular", {"routers": 3268, "degree": 27, "p": 9, "group_size": 19}, {},
           (None, None, None, "13x13+3")),
    "GF(25,49,8,3)": (*_gf(8, 3), (29400, 9800, 16, "13x13+7")),
    "GF(25,49,3,8)": (*_gf(3, 8), (29400, 3675, 26, "13x13+7")),
    "GF(25,49,4,6)": (*_gf(4, 6), (29400, 4900, 21, "13x13+7")),
    "GF(25,49,6,4)": (*_gf(6, 4), (29400, 7350, 17, "13x13+7")),
    "GF(25,49,1,24)": (*_gf(1, 24), (29400, 1225, 72, "13x13+7")),
}
"""The ~30K networks of 004 Table 6 and Fig. 12c with pdes's parameters and cabinets."""

TINY = {  # the same families and packaging rules on ~100 endpoints (seconds in all)
    "DF": ("dragonfly", {"h": 2}, {}, (None,) * 4),
    "FT": ("fattree", {"k": 4, "levels": 3, "pods": 4}, {"cabinets": 2}, (None,) * 4),
    "FB": ("hyperx", {"sizes": "3,3,3", "p": 3}, {"cabinets": 9}, (None,) * 4),
    "SF": ("slimfly", {"q": 5, "p": 2}, {"cabinets": 10}, (None,) * 4),
    "RR": ("random_regular", {"routers": 36, "degree": 5, "p": 2, "group_size": 4}, {},
           (None,) * 4),
    "GF(3,5,2,2)": (*_gf(2, 2, n=3, q=5, per_cabinet=2), (None,) * 4),
    "GF(3,5,1,4)": (*_gf(1, 4, n=3, q=5, per_cabinet=2), (None,) * 4),
}
"""Small stand-ins (tests and a quick check of the script)."""

DIRECT = ("DF", "FB", "SF")
"""The direct topologies besides RR and the Galaxyflies (004: RR costs more than they do)."""


def command(name: str, params: dict, layout: dict) -> list[str]:
    """The ``pdes analyze`` arguments of one network (after ``python -m pdes``)."""
    args = ["analyze", name]
    for key, value in params.items():
        args += ["--set", f"topology.{key}={value}"]
    for key, value in layout.items():
        args += ["--set", f"layout.{key}={value}"]
    return args + ["--only", "cables,cost", "--json"]


def measure(name: str, params: dict, layout: dict) -> dict:
    """Run ``pdes analyze`` on one network; its report and the wall-clock seconds."""
    args = command(name, params, layout)
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pdes", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"reproduce_cable_cost: {' '.join(args)} failed:\n{proc.stderr}")
    rep = json.loads(proc.stdout)
    return {"command": "python -m pdes " + " ".join(shlex.quote(a) for a in args[:-1]),
            "seconds": time.perf_counter() - t0, "report": rep}


def row(label: str, m: dict, paper: tuple) -> dict:
    """The table row of one measured network."""
    rep = m["report"]
    s, cab, cost = rep["summary"], rep["cables"], rep["cost"]["cables"]
    return {"network": label, "endpoints": s["endpoints"], "routers": s["routers"],
            "radix": s["router_radix_max"], "cabinets": cab["racks"],
            "cabinet_endpoints": [cab["rack_endpoints"]["min"], cab["rack_endpoints"]["max"]],
            "electric_cables": cost["electric"]["count"],
            "electric_dollars": cost["electric"]["dollars"],
            "optical_cables": cost["optical"]["count"],
            "optical_dollars": cost["optical"]["dollars"],
            "cable_dollars": cost["dollars"], "cable_per_endpoint": cost["per_endpoint"],
            "paper": dict(zip(("endpoints", "routers", "radix", "cabinets"), paper)),
            "command": m["command"], "seconds": m["seconds"]}


def comparisons(rows: dict) -> list[tuple[str, str, str]]:
    """(004's statement about Fig. 12c, ours, 004's) where the rows hold the networks."""
    out = []
    gfs = [k for k in rows if k.startswith("GF")]
    if "SF" in rows and "GF(25,49,1,24)" in rows:
        ours = 100 * (rows["GF(25,49,1,24)"]["cable_dollars"] / rows["SF"]["cable_dollars"] - 1)
        out.append(("cable cost of GF(25,49,1,24) against SF", f"{ours:+.1f}%", "-5%"))
        ours = 100 * (rows["GF(25,49,1,24)"]["cable_per_endpoint"]
                      / rows["SF"]["cable_per_endpoint"] - 1)
        out.append(("  the same per endpoint", f"{ours:+.1f}%", "-"))
    if gfs:
        cheapest = min(rows, key=lambda k: rows[k]["cable_dollars"])
        out.append(("lowest cable cost of all", cheapest, "GF(25,49,1,24)"))
        opt = {round(rows[k]["optical_dollars"], 2) for k in gfs}
        out.append(("the five GFs have equal fiber (optical) cost",
                    "yes" if len(opt) == 1 else f"no ({len(opt)} values)", "yes"))
    if "FT" in rows:
        top = max(rows, key=lambda k: rows[k]["optical_dollars"])
        out.append(("highest fiber (optical) cost", top, "FT"))
    if "RR" in rows:
        direct = [k for k in rows if k in DIRECT or k.startswith("GF")]
        above = all(rows["RR"]["cable_dollars"] > rows[k]["cable_dollars"] for k in direct)
        out.append(("RR above the other direct topologies", "yes" if above else "no", "yes"))
    return out


def markdown(rows: dict) -> str:
    """The docs table of the rows."""
    lines = ["| network | endpoints | routers | radix | cabinets (004) | electric: cables, $ "
             "| optical: cables, $ | cable cost $ | $ per endpoint |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows.values():
        pap = r["paper"]["cabinets"]
        lines.append(f"| {r['network']} | {r['endpoints']:,} | {r['routers']:,} | {r['radix']} "
                     f"| {r['cabinets']}" + (f" ({pap})" if pap else "")
                     + f" | {r['electric_cables']:,}, {r['electric_dollars']:,.0f} "
                     f"| {r['optical_cables']:,}, {r['optical_dollars']:,.0f} "
                     f"| {r['cable_dollars']:,.0f} | {r['cable_per_endpoint']:.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tiny", action="store_true",
                    help="small networks of the same families instead of 004's ~30K ones")
    ap.add_argument("--networks", help="comma-separated labels (default: all of the set)")
    ap.add_argument("--layout", action="append", default=[], metavar="KEY=VALUE",
                    help="a [layout] key for every network (repeatable), e.g. overhead_m=4")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = ap.parse_args(argv)
    chosen = dict(TINY if args.tiny else PAPER)
    if args.networks:
        names = [n.strip() for n in args.networks.split(",") if n.strip()]
        unknown = [n for n in names if n not in chosen]
        if unknown:
            ap.error(f"unknown networks {unknown}; known: {', '.join(chosen)}")
        chosen = {n: chosen[n] for n in names}
    rows = {}
    extra = {}
    for item in args.layout:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            ap.error(f"--layout: expected KEY=VALUE, got {item!r}")
        extra[key.strip()] = value.strip()
    for label, (name, params, layout, paper) in chosen.items():
        rows[label] = row(label, measure(name, params, {**layout, **extra}), paper)
    if args.markdown:
        print(markdown(rows))
        print()
        for r in rows.values():
            print(f"{r['network']}: {r['command']}")
    else:
        print(f"{'network':<15} {'endpoints':>9} {'routers':>7} {'radix':>5} {'cabinets':>8} "
              f"{'electric $':>11} {'optical $':>11} {'cables $':>11} {'$/endpoint':>10} "
              f"{'seconds':>7}")
        for r in rows.values():
            print(f"{r['network']:<15} {r['endpoints']:>9,} {r['routers']:>7,} {r['radix']:>5} "
                  f"{r['cabinets']:>8} {r['electric_dollars']:>11,.0f} "
                  f"{r['optical_dollars']:>11,.0f} {r['cable_dollars']:>11,.0f} "
                  f"{r['cable_per_endpoint']:>10.1f} {r['seconds']:>7.1f}")
            print(f"    {r['command']}")
    cmp_rows = comparisons(rows)
    if cmp_rows:
        print("\n004's statements about Fig. 12c: ours (004)")
        for claim, ours, paper in cmp_rows:
            print(f"  {claim:<48} {ours:>16} ({paper})")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "comparisons": cmp_rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
