"""The plain-array router graph every topology generator returns.

Conventions (see the README, "Topology arrays"):

* Routers have ids ``0..n_routers-1``.  Each undirected link is stored once
  as ``links[l] = (u, v)`` with ``u < v``; links are sorted lexicographically,
  so the link id ``l`` is a pure function of the edge set.  A family may ask
  for parallel links (``from_edges(..., parallel=True)``): the ``m`` links
  between two routers are then ``m`` consecutive equal rows, each its own
  link, channels and ports.
* Network ports of router ``r`` are numbered in increasing neighbour id:
  ``port_neighbor[port_offsets[r] + i]`` is the router behind network port
  ``i``.  On the router itself endpoint ports come first, so network port
  ``i`` is physical port ``endpoints[r] + i``.
* Directed channels: channel ``2*l`` goes ``links[l,0] -> links[l,1]`` and
  channel ``2*l+1`` the other way.
* Endpoints are numbered router by router: router ``r`` owns endpoints
  ``endpoint_offsets[r] .. endpoint_offsets[r+1]-1``.
* ``group[r]`` is the natural rack/group of the topology (its meaning is in
  ``group_kind``); ``link_class[l]`` indexes ``link_class_names``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np

from models.core.errors import ParameterError


@dataclass(eq=False)
class Topology:
    """A router graph with endpoints, groups and link classes (plain arrays)."""

    name: str
    params: dict
    n_routers: int
    links: np.ndarray          # (L, 2) int32, u < v, lexicographically sorted
    endpoints: np.ndarray      # (R,) int32 endpoints per router
    group: np.ndarray          # (R,) int32 rack / group id
    link_class: np.ndarray     # (L,) int8 index into link_class_names
    link_class_names: tuple = ("local", "global")
    group_kind: str = "group"
    meta: dict = field(default_factory=dict)
    router_up: np.ndarray | None = None
    """(R,) bool on a degraded network (:mod:`models.faults`): False for a failed router and for
    a router cut off from the network's largest connected part; None when nothing failed."""

    # ------------------------------------------------------------------ sizes
    @property
    def n_links(self) -> int:
        return int(self.links.shape[0])

    @property
    def n_endpoints(self) -> int:
        return int(self.endpoints.sum())

    @property
    def n_groups(self) -> int:
        return int(self.group.max()) + 1 if self.n_routers else 0

    @property
    def is_degraded(self) -> bool:
        """True when links or routers of the network failed (:mod:`models.faults`)."""
        return self.router_up is not None

    @cached_property
    def up(self) -> np.ndarray:
        """(R,) bool: the routers that work and reach the network's largest part."""
        if self.router_up is None:
            return np.ones(self.n_routers, dtype=bool)
        return np.asarray(self.router_up, dtype=bool)

    @cached_property
    def serving(self) -> np.ndarray:
        """(R,) bool: the routers whose endpoints take part in traffic (endpoints on a router
        that is :attr:`up`); the sources and destinations every routing must connect."""
        return (self.endpoints > 0) & self.up

    @property
    def is_direct(self) -> bool:
        """True when every router has at least one endpoint."""
        return bool(np.all(self.endpoints > 0))

    # ------------------------------------------------------------ CSR arrays
    @cached_property
    def degree(self) -> np.ndarray:
        return np.diff(self.port_offsets).astype(np.int32)

    @cached_property
    def port_offsets(self) -> np.ndarray:
        deg = np.bincount(self.links.ravel(), minlength=self.n_routers)
        off = np.zeros(self.n_routers + 1, dtype=np.int64)
        np.cumsum(deg, out=off[1:])
        return off

    @cached_property
    def _csr(self):
        L = self.n_links
        u = self.links[:, 0].astype(np.int64)
        v = self.links[:, 1].astype(np.int64)
        src = np.concatenate([u, v])
        dst = np.concatenate([v, u])
        lid = np.concatenate([np.arange(L), np.arange(L)])
        chan = np.concatenate([2 * np.arange(L), 2 * np.arange(L) + 1])
        order = np.lexsort((dst, src))  # by source router, then neighbour id
        return (dst[order].astype(np.int32), lid[order].astype(np.int32),
                chan[order].astype(np.int64), order)

    @cached_property
    def port_neighbor(self) -> np.ndarray:
        """(2L,) router behind each network port (CSR over ``port_offsets``)."""
        return self._csr[0]

    @cached_property
    def port_link(self) -> np.ndarray:
        """(2L,) link id of each network port."""
        return self._csr[1]

    @cached_property
    def port_out_channel(self) -> np.ndarray:
        """(2L,) directed channel leaving through each network port."""
        return self._csr[2]

    @cached_property
    def channel_port(self) -> np.ndarray:
        """(2L,) CSR index of the port a channel leaves from (inverse of port_out_channel)."""
        out = np.empty(2 * self.n_links, dtype=np.int64)
        out[self.port_out_channel] = np.arange(2 * self.n_links)
        return out

    @cached_property
    def port_peer(self) -> np.ndarray:
        """(2L,) CSR index of the port at the other end of the same link."""
        return self.channel_port[self.port_out_channel ^ 1]

    @cached_property
    def endpoint_offsets(self) -> np.ndarray:
        off = np.zeros(self.n_routers + 1, dtype=np.int64)
        np.cumsum(self.endpoints, out=off[1:])
        return off

    @cached_property
    def endpoint_router(self) -> np.ndarray:
        """(E,) router of each endpoint."""
        return np.repeat(np.arange(self.n_routers, dtype=np.int32), self.endpoints)

    @cached_property
    def endpoint_up(self) -> np.ndarray:
        """(E,) bool: the endpoints whose router is up (:attr:`up`): the active ones, which
        may send, receive and run a schedule's processes."""
        return self.up[self.endpoint_router]

    def neighbors(self, r: int) -> np.ndarray:
        return self.port_neighbor[self.port_offsets[r]:self.port_offsets[r + 1]]

    def to_networkx(self):
        """The router graph as a ``networkx.Graph`` (attributes: endpoints, group)."""
        import networkx as nx
        g = nx.Graph()
        for r in range(self.n_routers):
            g.add_node(r, endpoints=int(self.endpoints[r]), group=int(self.group[r]))
        g.add_edges_from(map(tuple, self.links.tolist()))
        return g

    def summary(self) -> dict:
        deg = self.degree
        return {
            "topology": self.name,
            "params": dict(self.params),
            "routers": self.n_routers,
            "endpoints": self.n_endpoints,
            "links": self.n_links,
            "network_radix_min": int(deg.min()) if self.n_routers else 0,
            "network_radix_max": int(deg.max()) if self.n_routers else 0,
            "router_radix_max": int((deg + self.endpoints).max()) if self.n_routers else 0,
            "groups": self.n_groups,
            "group_kind": self.group_kind,
        }


MAX_ROUTERS = 2 ** 26
"""Largest router count the engine accepts (router ids are int32; memory grows with it)."""
MAX_ENDPOINTS = 2 ** 31 - 1
"""Largest endpoint count (endpoint ids are int32)."""
MAX_ENDPOINTS_PER_ROUTER = 2 ** 16


MAX_LINKS = 2 ** 28
"""Largest link count accepted (channel ids are int32; the edge arrays alone take ~10 GB)."""


def check_build(n_routers: int, n_links: int, key: str) -> None:
    """Refuse, before building anything, a network whose router or link count cannot fit.

    Each family calls this with the counts its parameters imply, naming the
    parameter that sets the size, so a huge instance is refused at once
    instead of failing with ``MemoryError`` after minutes of work.
    """
    if n_routers > MAX_ROUTERS:
        raise ParameterError(f"{key}: gives {n_routers:,} routers, more than the {MAX_ROUTERS:,} "
                             "the engine supports")
    if n_links > MAX_LINKS:
        raise ParameterError(f"{key}: gives about {n_links:,} links, more than the {MAX_LINKS:,} "
                             "the engine supports")


class TopologySize(NamedTuple):
    """The counts a family's parameters give, computed without building the network (the
    ``size`` hook every family registers, :func:`size_of`).

    ``links`` is exact when ``exact`` is true, else an upper bound (a random construction
    may miss a few pairings).  ``work_bytes`` is the memory the family's construction
    takes beyond the generic edge arrays (:func:`from_edges`) and the network's own arrays:
    Python lists of a random repair, a dense complement's R x R mask.
    """

    routers: int
    links: int
    endpoints: int
    exact: bool = True
    work_bytes: int = 0


def size_of(name: str, params: dict | None = None) -> TopologySize | None:
    """The counts of the registered topology ``name`` with (untyped) ``params``, from its
    ``size`` hook, without building it; ``None`` for a family without one (its counts are
    known only once built, as a file's once read).  The parameters are resolved and
    checked as :func:`build` does, and a size beyond the engine's limits is refused
    (:func:`check_build`) as the generator would refuse it."""
    from models.core.registry import TOPOLOGIES
    from . import topologies  # noqa: F401  (registers every family)
    entry = TOPOLOGIES.get(name)
    resolved = entry.resolve(dict(params or {}), "topology")
    size = entry.extra.get("size")
    return None if size is None else size(**resolved)


def check_size(n_routers: int, endpoints, what: str) -> None:
    """Refuse networks whose ids or counts do not fit the engine's integer types."""
    if n_routers > MAX_ROUTERS:
        raise ParameterError(f"{what}: {n_routers:,} routers is more than the {MAX_ROUTERS:,} "
                             "the engine supports")
    e = np.asarray(endpoints, dtype=np.int64)
    if e.size and int(e.max()) > MAX_ENDPOINTS_PER_ROUTER:
        raise ParameterError(f"{what}: {int(e.max()):,} endpoints on one router is more than "
                             f"{MAX_ENDPOINTS_PER_ROUTER:,}")
    total = int(e.sum()) if e.ndim else int(e) * n_routers
    if total > MAX_ENDPOINTS:
        raise ParameterError(f"{what}: {total:,} endpoints is more than the {MAX_ENDPOINTS:,} "
                             "the engine supports")


def from_edges(name: str, params: dict, n_routers: int, u, v, endpoints, group, *,
               link_class=None, link_class_names=("local", "global"), group_kind="group",
               meta=None, what: str | None = None, parallel: bool = False) -> Topology:
    """Normalise an edge list into a :class:`Topology` (vectorised).

    ``u, v`` are arrays of router ids (either orientation).  ``endpoints``
    and ``group`` are per-router arrays or scalars.  Without ``link_class``,
    a link is ``local`` (0) inside a group and ``global`` (1) between groups.
    Self-loops, duplicate links and out-of-range ids raise
    :class:`ParameterError` (prefixed with ``what``, default the name).
    With ``parallel=True`` a pair given ``m`` times is ``m`` parallel links
    (a multigraph): each has its own link id, two channels and a port on each
    router; the ports of parallel links are adjacent, in the order the pair
    was given.
    """
    what = what or name
    n_routers = int(n_routers)
    u = np.asarray(u, dtype=np.int64).ravel()
    v = np.asarray(v, dtype=np.int64).ravel()
    if u.shape != v.shape:
        raise ValueError("u and v must have the same length")
    if n_routers < 1:
        raise ParameterError(f"{what}: the network has no routers")
    check_size(n_routers, endpoints, what)
    if u.size and (min(u.min(), v.min()) < 0 or max(u.max(), v.max()) >= n_routers):
        raise ParameterError(f"{what}: a link names a router outside 0..{n_routers - 1}")
    if np.any(u == v):
        i = int(np.nonzero(u == v)[0][0])
        raise ParameterError(f"{what}: self-loop on router {int(u[i])}")
    a = np.minimum(u, v)
    b = np.maximum(u, v)
    key = a * n_routers + b
    order = np.argsort(key, kind="stable")
    key_sorted = key[order]
    dup = np.nonzero(key_sorted[1:] == key_sorted[:-1])[0]
    if dup.size and not parallel:
        k = int(key_sorted[dup[0]])
        raise ParameterError(f"{what}: duplicate link ({k // n_routers}, {k % n_routers})")
    links = np.stack([a[order], b[order]], axis=1).astype(np.int32)
    endpoints = np.broadcast_to(np.asarray(endpoints, dtype=np.int32), (n_routers,)).copy()
    group = np.broadcast_to(np.asarray(group, dtype=np.int32), (n_routers,)).copy()
    if np.any(endpoints < 0):
        raise ParameterError(f"{what}: negative endpoint count")
    if link_class is None:
        link_class = (group[links[:, 0]] != group[links[:, 1]]).astype(np.int8)
        link_class_names = ("local", "global")
    else:
        link_class = np.asarray(link_class, dtype=np.int8).ravel()[order]
    return Topology(name=name, params=dict(params), n_routers=n_routers, links=links,
                    endpoints=endpoints, group=group, link_class=link_class,
                    link_class_names=tuple(link_class_names), group_kind=group_kind,
                    meta=dict(meta or {}))


def build(name: str, params: dict | None = None) -> Topology:
    """Build a registered topology by name from (untyped) parameters."""
    from models.core.registry import TOPOLOGIES
    from . import topologies  # noqa: F401  (registers every family)
    entry = TOPOLOGIES.get(name)
    resolved = entry.resolve(dict(params or {}), "topology")
    return entry.func(**resolved)
