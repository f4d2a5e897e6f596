"""``python -m pdes plot FILE.h5 [--kind latency|throughput|hops|links|series] [-o fig.png|fig.pdf]``.

Saves a figure of a run or study file (see :mod:`pdes.plot`).  The default
output is ``<FILE stem>-<kind>.png`` next to FILE.
"""
from __future__ import annotations

import os

from models.core.errors import ParameterError

HELP = "plot a run or study file: latency/throughput vs load, hops, link load, time series"


def add_arguments(p):
    from pdes.plot import KINDS
    p.add_argument("file", help="HDF5 file written by 'pdes run' or 'pdes sweep'")
    p.add_argument("--kind", choices=KINDS, default=None,
                   help="what to plot (default: latency for a study, series for a run)")
    p.add_argument("-o", "--output", help="figure file, .png, .pdf or .svg (default: FILE-KIND.png)")
    p.add_argument("--point", help="a study's point (its name in 'pdes show --wide') for hops, "
                   "links and series (default: each series at its lowest load)")
    p.add_argument("--logy", action="store_true", help="latency on a logarithmic axis")
    p.add_argument("--ymax", type=float, metavar="CYCLES",
                   help="latency axis limit (default: 4x the lowest latency, when points exceed it)")
    p.add_argument("--network", action="store_true",
                   help="network latency (from injection into the network) instead of packet latency")


def main(args) -> int:
    from pdes.cli.common import check_output
    from pdes.plot import figure
    from pdes.results import open_results
    with open_results(args.file) as res:
        kind = args.kind or ("latency" if res.kind == "study" else "series")
        out = args.output or f"{os.path.splitext(args.file)[0]}-{kind}.png"
        ext = os.path.splitext(out)[1].lower()
        if ext not in (".png", ".pdf", ".svg"):
            raise ParameterError(f"-o: the figure file must end in .png, .pdf or .svg (got {out})")
        check_output(out, "-o")
        if args.ymax is not None and not (args.ymax > 0 and args.ymax < float("inf")):
            raise ParameterError(f"--ymax: must be a positive number of cycles (got {args.ymax})")
        fig = figure(res, kind, point=args.point, logy=args.logy, network=args.network,
                     ymax=args.ymax)
    tmp = f"{out}.tmp-{os.getpid()}{ext}"
    try:
        fig.savefig(tmp, dpi=150)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    print(out)
    return 0
