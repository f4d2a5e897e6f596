"""Router graphs read from a file (edge list, BookSim anynet, GraphML), and written back.

Registered as topology ``file`` with parameters ``path``, ``format`` and ``p``.
The format is guessed from the extension when ``format`` is not given:
``.txt``, ``.edges``, ``.edgelist`` -> edgelist; ``.anynet`` -> anynet;
``.graphml``, ``.xml`` -> graphml.

Edge list (``edgelist``)
    One item per line; ``#`` starts a comment; tokens are separated by blanks
    or commas.  Three kinds of lines:

    * ``U V [anything...]`` -- a link between routers ``U`` and ``V``
      (non-negative integers).  A ``{...}`` column is the link's data as
      ``networkx.read_edgelist`` reads it (a Python dict literal); its keys
      ``latency`` (cycles, integer >= 1) and ``cable_m`` (metres) are used,
      other keys and other columns (plain weights) are ignored.  A link may be
      listed from both sides; it is stored once (with the same data).
    * ``router R [endpoints P] [group G]`` -- the router table: endpoints
      and group of router ``R`` (keys in any order, each optional).
    * ``routers N`` -- the number of routers (optional; lets trailing
      routers without links exist).

    The two structure lines may also be written as comments (``# routers
    N``, ``# router R endpoints P group G``), which is how
    :func:`export_topology` writes them so that ``networkx.read_edgelist``
    reads the file too; a comment is a structure line only when it matches
    that grammar exactly.  When some links carry a ``latency``, every link
    must; the file then carries its own link latencies (see below).

    Routers are ``0 .. N-1`` with ``N`` = ``routers`` or one more than the
    largest id in the file.  A router without ``endpoints`` gets ``p``.  If
    any router line gives a ``group``, every router needs one; without groups
    each router is its own group.  Example::

        # two racks of two routers
        routers 4
        router 0 endpoints 2 group 0
        router 1 endpoints 2 group 0
        router 2 endpoints 2 group 1
        router 3 endpoints 2 group 1
        0 1
        2 3
        0 2
        1 3

Anynet (``anynet``, the BookSim2 ``anynet`` network file)
    Each line starts with a head ``router R`` (or ``node N``) followed by the
    things attached to it: ``node N`` (an endpoint of R) or ``router S`` (a
    link R--S), each optionally followed by an integer link weight.  BookSim
    reads the weight after ``router S`` as the latency in cycles of the
    channel R -> S (1 when absent); a weight after ``node N`` is ignored
    (BookSim's own reader stores it on a wrong table).  If any router-router
    link has a weight, the file carries link latencies: a link gets its
    weight (the same weight from both sides, or one side's; two different
    weights are refused because a pdes link has one latency both ways), and
    a link without weight gets 1 cycle as in BookSim.  Links may be
    listed from both sides.  A router's endpoint count is the number of
    distinct nodes attached to it; if the file names no node at all, every
    router gets ``p``.  Endpoints are renumbered router by router (0.. on
    router 0 first), as everywhere in pdes; ``topo.meta["node_ids_kept"]``
    says whether that kept the file's node ids.  Anynet has no groups: they are
    read from an optional side file ``PATH.groups`` with lines
    ``router R group G`` (written by :func:`export_topology`, so that the
    anynet file itself stays readable by BookSim); otherwise each router is
    its own group.  Lines starting with ``#`` are comments (an extension).

GraphML (``graphml``, read with networkx)
    Nodes are routers; their ids must all be integers (then they are the
    router ids) or are otherwise numbered in file order.  Optional node
    attributes ``endpoints`` and ``group`` (integers) play the role of the
    router table above.  Edge direction and parallel edges are ignored.

Link latencies carried by a file
    are kept in ``topo.meta["link_latency"]`` (cycles per link, in the order
    of ``topo.links``) and, from an edge list, ``topo.meta["cable_m"]``.
    The engine uses them instead of the layout's when ``router.link_latency``
    is 0 (:func:`file_link_latency`).

Groups are renumbered ``0..G-1`` in increasing order of the file's group ids.
Errors (missing file, malformed line, self-loop, a node on two routers) raise a
:class:`~models.core.errors.ParameterError` naming ``topology.path`` and the line.
"""
from __future__ import annotations

import ast
import json
import os
import re
from typing import NamedTuple

import numpy as np

from models.core.errors import ParameterError
from models.core.registry import REQUIRED, Param, TOPOLOGIES
from ..topology import MAX_ENDPOINTS_PER_ROUTER, MAX_ROUTERS, Topology, from_edges

FORMATS = ("edgelist", "anynet", "graphml")
EXTENSIONS = {".txt": "edgelist", ".edges": "edgelist", ".edgelist": "edgelist",
              ".anynet": "anynet", ".graphml": "graphml", ".xml": "graphml"}
GROUPS_SUFFIX = ".groups"
"""Side file of an anynet export holding ``router R group G`` lines."""


def guess_format(path: str) -> str:
    """File format from the extension of ``path`` (see the module docstring)."""
    ext = os.path.splitext(str(path))[1].lower()
    try:
        return EXTENSIONS[ext]
    except KeyError:
        raise ParameterError(
            f"topology.format: cannot guess the format of {path!r} from its extension "
            f"(known: {', '.join(sorted(EXTENSIONS))}); set topology.format to one of "
            f"{', '.join(FORMATS)}") from None


class _Where:
    """Builds error messages naming ``topology.path`` and a line."""

    def __init__(self, path):
        self.path = path

    def __call__(self, msg: str, line: int | None = None) -> ParameterError:
        at = f" line {line}:" if line is not None else ""
        return ParameterError(f"topology.path: {self.path}:{at} {msg}")


def _read_lines(path: str, where: _Where) -> list[str]:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().splitlines()
    except FileNotFoundError:
        raise where("file not found") from None
    except IsADirectoryError:
        raise where("is a directory, not a topology file") from None
    except UnicodeDecodeError:
        raise where("not a text file (cannot decode as UTF-8)") from None
    except OSError as exc:
        raise where(f"cannot read ({exc.strerror})") from None


def _parse_int(token: str, what: str, where: _Where, line: int, lo: int = 0, hi: int = MAX_ROUTERS) -> int:
    """An integer of the file in [lo, hi] (ids and counts: at most the engine's router limit)."""
    try:
        value = int(token)
    except ValueError:
        raise where(f"{what} must be an integer, got {token!r}", line) from None
    if value < lo:
        raise where(f"{what} must be >= {lo}, got {value}", line)
    if value > hi:
        raise where(f"{what} must be <= {hi:,}, got {value:,}", line)
    return value


class _RouterTable:
    """Per-router ``endpoints`` / ``group`` collected while parsing."""

    def __init__(self, where: _Where):
        self.where = where
        self.endpoints: dict[int, int] = {}
        self.group: dict[int, int] = {}
        self.seen: dict[int, int] = {}

    def parse(self, tok: list[str], line: int, keys=("endpoints", "group")) -> int:
        where = self.where
        if len(tok) < 2:
            raise where("expected 'router <id> [endpoints <p>] [group <g>]'", line)
        r = _parse_int(tok[1], "router id", where, line)
        if r in self.seen:
            raise where(f"router {r} is described twice (first on line {self.seen[r]})", line)
        self.seen[r] = line
        rest = tok[2:]
        if len(rest) % 2:
            raise where(f"expected key/value pairs after 'router {r}' (keys: {', '.join(keys)})", line)
        for key, val in zip(rest[::2], rest[1::2]):
            if key not in keys:
                raise where(f"unknown router key {key!r} (known: {', '.join(keys)})", line)
            table = self.endpoints if key == "endpoints" else self.group
            if r in table:
                raise where(f"router {r}: {key} given twice", line)
            table[r] = _parse_int(val, key, where, line,
                            hi=MAX_ENDPOINTS_PER_ROUTER if key == "endpoints" else MAX_ROUTERS)
        return r


def _link_data(key, values, lines, uniq, name: str, where: _Where, default=None):
    """Per-link value (in the order of ``uniq``) from per-listing values (NaN = not given).

    A link listed twice must carry the same value; a link without a value
    gets ``default`` (``None``: refused).
    """
    order = np.argsort(key, kind="stable")
    k, val, ln = key[order], values[order], lines[order]
    start = np.searchsorted(k, uniq)
    lo = np.fmin.reduceat(val, start) if val.size else val
    hi = np.fmax.reduceat(val, start) if val.size else val
    bad = np.nonzero(lo != hi)[0]
    bad = bad[~np.isnan(lo[bad])]
    if bad.size:
        i = int(bad[0])
        rows = np.nonzero(k == uniq[i])[0]
        raise where(f"link has two different {name} values ({lo[i]:g} and {hi[i]:g}); "
                    "a link has one value for both directions", int(ln[rows[-1]]) or None)
    missing = np.isnan(hi)
    if missing.any():
        if default is None:
            i = int(np.nonzero(missing)[0][0])
            raise where(f"this link has no {name} but other links do (give every link one, or none)",
                        int(ln[start[i]]) or None)
        hi = np.where(missing, default, hi)
    return hi


class _Links(NamedTuple):
    """Link listings of a file: endpoints ``u``/``v`` and line of each (0 = no line).

    ``latency`` and ``cable_m`` are per-listing values (NaN where a listing
    gives none) or ``None`` when the file gives none at all; a link without a
    latency gets ``latency_default`` (``None``: refused).
    """

    u: list
    v: list
    lines: list
    latency: list | None = None
    cable_m: list | None = None
    latency_default: float | None = None


def _finish(path, fmt, p, n_routers, links: _Links, table: _RouterTable,
            extra_meta=None) -> Topology:
    """Check, de-duplicate and normalise the parsed links into a Topology
    (errors name the file through ``table.where``)."""
    where = table.where
    latency, cable_m = links.latency, links.cable_m
    u = np.asarray(links.u, dtype=np.int64)
    v = np.asarray(links.v, dtype=np.int64)
    lines = np.asarray(links.lines, dtype=np.int64)
    if n_routers < 1:
        raise where("the file describes no router")
    if n_routers > MAX_ROUTERS:
        raise where(f"{n_routers:,} routers is more than the {MAX_ROUTERS:,} the engine supports")
    big = [r for r, e in table.endpoints.items() if e > MAX_ENDPOINTS_PER_ROUTER]
    if big:
        raise where(f"router {big[0]}: {table.endpoints[big[0]]:,} endpoints is more than "
                    f"{MAX_ENDPOINTS_PER_ROUTER:,}", table.seen.get(big[0]))
    loop = np.nonzero(u == v)[0]
    if loop.size:
        i = int(loop[0])
        raise where(f"self-loop on router {int(u[i])}", int(lines[i]) if lines[i] > 0 else None)
    # one link per unordered pair
    all_keys = np.minimum(u, v) * n_routers + np.maximum(u, v)
    key = np.unique(all_keys)
    a, b = key // n_routers, key % n_routers
    data = {}
    if latency is not None:
        lat = _link_data(all_keys, np.asarray(latency, dtype=np.float64), lines, key, "latency",
                         where, links.latency_default)
        data["link_latency"] = lat.astype(np.int64)
    if cable_m is not None:
        data["cable_m"] = _link_data(all_keys, np.asarray(cable_m, dtype=np.float64), lines, key,
                                     "cable_m", where)
    endpoints = np.full(n_routers, p, dtype=np.int64)
    for r, e in table.endpoints.items():
        endpoints[r] = e
    if table.group:
        missing = np.setdiff1d(np.arange(n_routers), np.fromiter(table.group, np.int64))
        if missing.size:
            r = int(missing[0])
            raise where(f"router {r} has no group, but other routers do (give every router "
                        "a group, or none)", table.seen.get(r))
        raw = np.empty(n_routers, dtype=np.int64)
        for r, g in table.group.items():
            raw[r] = g
        _, group = np.unique(raw, return_inverse=True)
        kind = "group"
    else:
        group = np.arange(n_routers)
        kind = "router"
    meta = {"source": str(path), "format": fmt}
    meta.update(extra_meta or {})
    meta.update(data)
    return from_edges("file", {"path": str(path), "format": fmt, "p": p}, n_routers, a, b,
                      endpoints, group, group_kind=kind, meta=meta, what=f"topology.path: {path}")


# =========================================================================== readers
_STRUCTURE_COMMENT = re.compile(r"#\s*(routers\s+\d+|router\s+\d+(\s+(endpoints|group)\s+\d+)*)\s*$")


def _edge_data(text: str, where: _Where, line: int) -> tuple[float, float]:
    """(latency, cable_m) of a ``{...}`` edge-data column (NaN where absent)."""
    try:
        data = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise where(f"edge data {text!r} is not a dict literal", line) from None
    if not isinstance(data, dict):
        raise where(f"edge data {text!r} is not a dict literal", line)
    lat = cab = np.nan
    if "latency" in data:
        v = data["latency"]
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 10 ** 6:
            raise where(f"latency must be an integer in 1..1000000 (cycles), got {v!r}", line)
        lat = float(v)
    if "cable_m" in data:
        v = data["cable_m"]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1e6:
            raise where(f"cable_m must be a number in 0..1e6 (metres), got {v!r}", line)
        cab = float(v)
    return lat, cab


def _read_edgelist(path, p, where):
    table = _RouterTable(where)
    us, vs, ls, lats, cabs = [], [], [], [], []
    declared = None
    top = -1
    for n, text in enumerate(_read_lines(path, where), start=1):
        m = _STRUCTURE_COMMENT.match(text.strip())
        text = m.group(1) if m else text.split("#", 1)[0]
        lat = cab = np.nan
        if "{" in text:
            text, _, data = text.partition("{")
            lat, cab = _edge_data("{" + data.strip(), where, n)
        if "," in text:
            text = text.replace(",", " ")
        tok = text.split()
        if not tok:
            continue
        head = tok[0]
        if head == "router":
            r = table.parse(tok, n)
            top = max(top, r)
        elif head == "routers":
            if len(tok) != 2 or declared is not None:
                raise where("expected a single 'routers <count>' line", n)
            declared = _parse_int(tok[1], "router count", where, n, lo=1)
        else:
            if len(tok) < 2:
                raise where(f"expected 'u v' (two router ids), got {text.strip()!r}", n)
            a = _parse_int(tok[0], "router id", where, n)
            b = _parse_int(tok[1], "router id", where, n)
            us.append(a)
            vs.append(b)
            ls.append(n)
            lats.append(lat)
            cabs.append(cab)
            top = max(top, a, b)
    n_routers = top + 1
    if declared is not None:
        if declared < n_routers:
            raise where(f"'routers {declared}' but router {top} appears in the file")
        n_routers = declared
    lat = lats if any(x == x for x in lats) else None
    cab = cabs if any(x == x for x in cabs) else None
    return _finish(path, "edgelist", p, n_routers, _Links(us, vs, ls, latency=lat, cable_m=cab),
                   table)


def _read_anynet(path, p, where):
    table = _RouterTable(where)
    us, vs, ls, ws = [], [], [], []
    node_router: dict[int, int] = {}
    top = -1
    for n, text in enumerate(_read_lines(path, where), start=1):
        if text.lstrip().startswith("#"):
            continue
        tok = text.split()
        if not tok:
            continue
        if tok[0] not in ("router", "node"):
            raise where(f"a line must start with 'router <id>' or 'node <id>', got {tok[0]!r}", n)
        if len(tok) < 2:
            raise where(f"'{tok[0]}' without an id", n)
        head_type = tok[0]
        head = _parse_int(tok[1], f"{head_type} id", where, n)
        if head_type == "router":
            top = max(top, head)
        i = 2
        last_was_id = last_was_node = False
        while i < len(tok):
            t = tok[i]
            if t in ("router", "node"):
                if i + 1 >= len(tok):
                    raise where(f"'{t}' without an id at the end of the line", n)
                body = _parse_int(tok[i + 1], f"{t} id", where, n)
                if head_type == "node" and t == "node":
                    raise where(f"cannot connect node {head} to node {body}", n)
                if t == "router" and head_type == "router":
                    us.append(head)
                    vs.append(body)
                    ls.append(n)
                    ws.append(np.nan)
                    top = max(top, body)
                else:
                    node, router = (body, head) if t == "node" else (head, body)
                    top = max(top, router)
                    prev = node_router.setdefault(node, router)
                    if prev != router:
                        raise where(f"node {node} is attached to routers {prev} and {router}", n)
                i += 2
                last_was_id = t == "router" and head_type == "router"
                last_was_node = not last_was_id
            elif last_was_id:
                ws[-1] = _parse_int(t, "link weight (latency in cycles)", where, n, lo=1, hi=10 ** 6)
                i += 1
                last_was_id = False
            elif last_was_node:
                _parse_int(t, "link weight", where, n, hi=2 ** 62)  # BookSim misplaces it: ignored
                i += 1
                last_was_node = False
            else:
                raise where(f"expected 'router <id>' or 'node <id>', got {t!r}", n)
    n_routers = top + 1
    if node_router:
        counts = np.bincount(np.fromiter(node_router.values(), np.int64, len(node_router)),
                             minlength=max(n_routers, 1))
        for r in range(n_routers):
            table.endpoints[r] = int(counts[r])
    side = str(path) + GROUPS_SUFFIX
    ids = sorted(node_router)
    routers = [node_router[x] for x in ids]
    # whether endpoint e is the file's node e (nodes 0..N-1 numbered router by router)
    extra = {"node_ids_kept": ids == list(range(len(ids))) and routers == sorted(routers)}
    if os.path.exists(side):
        swhere = _Where(side)
        stable = _RouterTable(swhere)
        for n, text in enumerate(_read_lines(side, swhere), start=1):
            tok = text.split("#", 1)[0].split()
            if not tok:
                continue
            if tok[0] != "router":
                raise swhere("expected 'router <id> group <g>'", n)
            r = stable.parse(tok, n, keys=("group",))
            if r >= n_routers:
                raise swhere(f"router {r} is not in {path} (routers 0..{n_routers - 1})", n)
        missing = sorted(set(range(n_routers)) - set(stable.group))
        if missing:
            raise swhere(f"router {missing[0]} has no 'router <id> group <g>' line")
        table.group = stable.group
        extra["groups_file"] = side
    weighted = any(w == w for w in ws)
    links = _Links(us, vs, ls, latency=ws if weighted else None, latency_default=1)
    return _finish(path, "anynet", p, n_routers, links, table, extra)


def _read_graphml(path, p, where):
    import xml.etree.ElementTree as ET
    import networkx as nx

    if not os.path.exists(path):
        raise where("file not found")
    try:
        g = nx.read_graphml(path)
    except ET.ParseError as exc:
        line = exc.position[0] if getattr(exc, "position", None) else None
        raise where(f"not valid GraphML/XML ({exc.msg if hasattr(exc, 'msg') else exc})",
                    line) from None
    except (nx.NetworkXError, KeyError, ValueError, TypeError) as exc:
        raise where(f"not valid GraphML ({exc})") from None
    except OSError as exc:
        raise where(f"cannot read ({exc.strerror})") from None
    nodes = list(g.nodes)
    try:
        ids = [int(x) for x in nodes]
        if min(ids, default=0) < 0:
            raise ValueError
        relabel = False
    except (ValueError, TypeError):
        ids = list(range(len(nodes)))
        relabel = True
    index = dict(zip(nodes, ids))
    table = _RouterTable(where)

    def attr(x, key, value):
        try:
            if isinstance(value, bool):
                raise ValueError
            out = int(value)
            if out != float(value) or out < 0:
                raise ValueError
            return out
        except (ValueError, TypeError):
            raise where(f"node {x!r}: {key} must be an integer >= 0, got {value!r}") from None

    for x, data in g.nodes(data=True):
        r = index[x]
        if "endpoints" in data:
            table.endpoints[r] = attr(x, "endpoints", data["endpoints"])
        if "group" in data:
            table.group[r] = attr(x, "group", data["group"])
    edges = list(g.edges())
    us = [index[a] for a, _ in edges]
    vs = [index[b] for _, b in edges]
    for a, b in zip(us, vs):
        if a == b:
            raise where(f"self-loop on node {nodes[ids.index(a)]!r}")
    n_routers = max(ids) + 1 if ids else 0
    extra = {"labels": [str(x) for x in nodes]} if relabel else {}
    return _finish(path, "graphml", p, n_routers, _Links(us, vs, [0] * len(us)), table, extra)


_READERS = {"edgelist": _read_edgelist, "anynet": _read_anynet, "graphml": _read_graphml}


def from_file(path: str, format: str | None = None, p: int = 1) -> Topology:  # noqa: A002
    """Router graph read from a file.

    Parameters
    ----------
    path : str
        File to read (relative paths are relative to the working directory).
    format : {"edgelist", "anynet", "graphml"}, optional
        File format; default: guessed from the extension.
    p : int
        Endpoints of every router the file gives no endpoint count for.

    Returns
    -------
    Topology
        ``group`` is the file's group (``group_kind="group"``) or one group
        per router (``group_kind="router"``); links are ``local`` inside a
        group and ``global`` between groups.

    Raises
    ------
    ParameterError
        Unreadable or malformed file (naming ``topology.path`` and the line),
        unknown format, ``p < 0``.

    References
    ----------
    BookSim2 ``anynet`` network files (Jiang et al., ISPASS 2013); GraphML.
    """
    if not path:
        raise ParameterError("topology.path: required for topology 'file' (the file to read)")
    fmt = format or guess_format(path)
    return _READERS[fmt](str(path), p, _Where(path))


# =========================================================================== writers
def _header(topo) -> list[str]:
    params = json.dumps(topo.params, sort_keys=True, default=str)
    return [f"# pdes router graph: topology {topo.name} {params}",
            f"# {topo.n_routers} routers, {topo.n_endpoints} endpoints, {topo.n_links} links, "
            f"{topo.n_groups} groups ({topo.group_kind})"]


def _fmt_m(x: float) -> str:
    return repr(round(float(x), 6))


def _write_edgelist(topo, fh, latency=None, cable_m=None):
    lines = _header(topo)
    lines.append("# structure lines (read by pdes, comments to networkx):")
    lines.append(f"# routers {topo.n_routers}")
    r = np.arange(topo.n_routers)
    lines.extend(f"# router {a} endpoints {b} group {c}"
                 for a, b, c in zip(r.tolist(), topo.endpoints.tolist(), topo.group.tolist()))
    links = topo.links.tolist()
    if latency is None and cable_m is None:
        lines.append("# one 'u v' line per link")
        lines.extend(f"{a} {b}" for a, b in links)
    else:
        lines.append("# one 'u v {data}' line per link: latency in cycles, cable_m in metres")
        lat = [None] * len(links) if latency is None else np.asarray(latency).tolist()
        cab = [None] * len(links) if cable_m is None else np.asarray(cable_m).tolist()
        for (a, b), la, cm in zip(links, lat, cab):
            items = ([f"'latency': {int(la)}"] if la is not None else []) + \
                    ([f"'cable_m': {_fmt_m(cm)}"] if cm is not None else [])
            lines.append(f"{a} {b} {{{', '.join(items)}}}")
    fh.write("\n".join(lines) + "\n")


def _write_anynet(topo, fh, latency=None, cable_m=None):
    off = topo.endpoint_offsets.tolist()
    nbr = topo.port_neighbor.tolist()
    poff = topo.port_offsets.tolist()
    weight = None
    if latency is not None:
        # latency of each port's link: both directions get the link's latency
        lat = np.asarray(latency, dtype=np.int64)
        weight = lat[np.asarray(topo.port_link)].tolist()
    out = []
    for r in range(topo.n_routers):
        parts = [f"router {r}"]
        parts.extend(f"node {e}" for e in range(off[r], off[r + 1]))
        if weight is None:
            parts.extend(f"router {s}" for s in nbr[poff[r]:poff[r + 1]])
        else:
            parts.extend(f"router {s} {w}" for s, w in zip(nbr[poff[r]:poff[r + 1]],
                                                           weight[poff[r]:poff[r + 1]]))
        out.append(" ".join(parts))
    fh.write("\n".join(out) + "\n")


def _write_graphml(topo, fh, latency=None, cable_m=None):
    # imported here: the module pulls in urllib.request and http.client, 10-25 ms of the
    # start of every pdes command
    from xml.sax.saxutils import escape
    names = [str(n) for n in topo.link_class_names]
    params = json.dumps(topo.params, sort_keys=True, default=str)
    out = ["<?xml version='1.0' encoding='utf-8'?>",
           '<graphml xmlns="http://graphml.graphdrawing.org/xmlns" '
           'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
           'xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns '
           'http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">',
           '  <key id="topology" for="graph" attr.name="topology" attr.type="string"/>',
           '  <key id="params" for="graph" attr.name="params" attr.type="string"/>',
           '  <key id="endpoints" for="node" attr.name="endpoints" attr.type="int"/>',
           '  <key id="group" for="node" attr.name="group" attr.type="int"/>',
           '  <key id="class" for="edge" attr.name="class" attr.type="string"/>',
           '  <graph edgedefault="undirected">',
           f'    <data key="topology">{escape(topo.name)}</data>',
           f'    <data key="params">{escape(params)}</data>']
    out.extend(f'    <node id="{r}"><data key="endpoints">{e}</data><data key="group">{g}</data></node>'
               for r, e, g in zip(range(topo.n_routers), topo.endpoints.tolist(), topo.group.tolist()))
    cls = [escape(n) for n in names]
    out.extend(f'    <edge source="{a}" target="{b}"><data key="class">{cls[c]}</data></edge>'
               for (a, b), c in zip(topo.links.tolist(), topo.link_class.tolist()))
    out += ["  </graph>", "</graphml>"]
    fh.write("\n".join(out) + "\n")


def export_topology(topo, fmt: str, path: str, latency=None, cable_m=None) -> list[str]:
    """Write ``topo`` to ``path`` in ``fmt`` so that :func:`from_file` reads it back.

    The round trip keeps the links, the endpoints per router and the groups
    (renumbered 0..G-1).  ``anynet`` also writes ``path + ".groups"``.
    ``latency`` (cycles per link, in the order of ``topo.links``) is written
    as anynet link weights (from both sides, so that BookSim gives both
    directions that latency) and as edge-list edge data, together with
    ``cable_m`` (metres per link); :func:`from_file` reads them back.
    GraphML carries neither.  Returns the files written.

    Raises
    ------
    ParameterError
        Unknown format or a file that cannot be written.
    """
    writers = {"edgelist": _write_edgelist, "anynet": _write_anynet, "graphml": _write_graphml}
    if fmt not in writers:
        raise ParameterError(f"export: unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    for name, arr in (("latency", latency), ("cable_m", cable_m)):
        if arr is not None and np.asarray(arr).shape != (topo.n_links,):
            raise ValueError(f"{name}: expected one value per link ({topo.n_links})")
    written = [str(path)]
    try:
        with open(path, "w", encoding="utf-8") as fh:
            writers[fmt](topo, fh, latency=latency, cable_m=cable_m)
        if fmt == "anynet":
            side = str(path) + GROUPS_SUFFIX
            with open(side, "w", encoding="utf-8") as fh:
                fh.write("\n".join(_header(topo) + ["# router <id> group <g>"] + [
                    f"router {r} group {g}" for r, g in enumerate(topo.group.tolist())]) + "\n")
            written.append(side)
    except OSError as exc:
        raise ParameterError(f"export: cannot write {path} ({exc.strerror})") from None
    return written


def link_latency_of(topo, layout, fixed: int = 0):
    """(latency in cycles, cable metres) per link as a run uses them.

    ``fixed`` (``router.link_latency``) when > 0; else the layout's latency keys
    (``layout.class_cycles``, ``electric_cycles``, ``optical_cycles``) on the links they
    set (``layout.latency_set``); else the latencies the topology carries
    (:func:`file_link_latency`), if any; else the layout's cable latencies.
    Cable lengths are the file's when it gives them, else the layout's.
    """
    carried = file_link_latency(topo)
    if fixed > 0:
        lat = np.full(topo.n_links, fixed, np.int64)
    elif carried is not None:
        lat = np.array(carried[0], dtype=np.int64)
        keyed = layout.latency_set
        if keyed is not None and keyed.any():
            lat[keyed] = layout.latency[keyed]
    else:
        lat = np.asarray(layout.latency, dtype=np.int64)
    cable = layout.cable_m if carried is None or carried[1] is None else np.asarray(carried[1])
    return lat, cable


def file_link_latency(topo):
    """(latency per link, cable metres per link or None) carried by a file topology, or None.

    A file carries latencies when its links have anynet weights or edge-list
    ``latency`` data (see the module docstring).
    """
    lat = topo.meta.get("link_latency")
    if lat is None:
        return None
    return np.asarray(lat, dtype=np.int64), topo.meta.get("cable_m")


def file_size(path: str, format: str | None = None, p: int = 1) -> None:  # noqa: A002
    """None: a file's counts are known only once it is read (reading it is building it).  Its
    arrays grow with the file (ids and counts are bounded by the engine's limits as they
    are parsed), and the distance table is checked right after reading."""
    return None


def file_inputs(path: str, section: dict) -> dict:
    """The files topology ``file`` reads for ``topology.path = path`` (``Param.files``): the
    file, and for an anynet file its optional groups side file ``PATH.groups``."""
    if not path:
        return {}
    try:
        fmt = section.get("format") or guess_format(path)
    except ParameterError:          # reported by the reader itself
        return {"": path}
    out = {"": path}
    if fmt == "anynet":
        out["groups file"] = str(path) + GROUPS_SUFFIX
    return out


from_file = TOPOLOGIES.register(
    "file", from_file,
    params=[
        Param("path", str, REQUIRED, "router graph file to read", files=file_inputs),
        Param("format", str, None, "file format (default: from the extension: .txt/.edges "
              "edgelist, .anynet anynet, .graphml/.xml graphml)", choices=FORMATS),
        Param("p", int, 1, "endpoints of each router the file gives no count for", lo=0),
    ],
    summary="router graph imported from a file (edge list with router table, BookSim anynet, GraphML)",
    reference="BookSim2 anynet network file; GraphML; edge list format in the module docstring",
    size=file_size,
)
