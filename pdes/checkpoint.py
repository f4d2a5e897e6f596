"""Checkpoints: the whole simulation state at a sample boundary, in global ids.

A checkpoint is taken only at a sample boundary, after the window's exchange:
every window of every partition ends there (windows divide the sample
period), the outboxes are empty, every flit in flight already sits in its
receiving input VC with its ready cycle and every credit in its sender's FIFO.
The state is then the same for any partition, and it is written in the
numbering of a one-part run, so the file does not depend on the rank count
that wrote it and loads onto any other:

* **global port** ``g``: the ports of router ``r`` are ``port_off[r] ..
  port_off[r+1]-1`` with ``port_off`` the running sum of ``endpoints +
  degree`` over the routers, endpoint ports first, then network ports in the
  topology's neighbour order (the local numbering of :mod:`pdes.state`);
* **global VC** ``g * num_vcs + vc`` (input VCs, and output VCs of port ``g``);
* **credit key** ``s * num_vcs + vc`` for sender ``s``: global ports, then
  ``n_ports + e`` for endpoint ``e``;
* endpoints and messages by their global ids.

Ring buffers (input VCs, output queues, credit FIFOs) are stored as their
contents, front first, concatenated in key order; the flit records behind
them are stored with them (the record pool is rebuilt on restore, records
taken anew from the pool).  Counters reduced over ranks (``st``, histograms)
are stored reduced; on restore the sums go to the part that owns router 0
and the maxima to every part, so any partition reduces to the same totals.
The random draws are keyed by (seed, entity, cycle, purpose) and need no
state.  The file format is described in docs/parallel.md.
"""
from __future__ import annotations

import json
import os

import numpy as np

from models.core.errors import ParameterError
from models.core import params as prm_slots
from models.core.record import NF_HOT, NF_USED, NSTAT, STAT_MAX
from pdes import reduce
from pdes.kernels import state_table as ST
from pdes.loopstate import LoopState
from pdes.state import ring_positions

FORMAT = "pdes-checkpoint"
FORMAT_VERSION = 1

EXIT_STOPPED = 75
"""Exit status of a run that stopped after writing a checkpoint (sysexits' EX_TEMPFAIL:
"try again later", here with ``--restart``)."""

MAY_DIFFER = ("output.file", "output.per_link", "output.per_endpoint", "run.partition",
              "run.max_imbalance", "run.max_memory_gb")
"""Config keys a restart may change: none of them changes a simulated result."""

def _tables() -> dict:
    """The per-entity arrays of the state table by file group (in :data:`pdes.kernels.state_table.SPACES` order)."""
    out = {}
    for r in ST.ROWS:
        p = r.checkpoint
        if p.kind == "saved" or (p.kind == "ring" and p.role == "count"):
            out.setdefault(p.group, []).append(r.name)
    return {g: (ST.SPACES[g], tuple(out[g])) for g in ST.SPACES if g in out}


def _rings() -> dict:
    """The ring buffers of the state table by file group: their arrays by role."""
    roles = {}
    for r in ST.with_policy("ring"):
        roles.setdefault(r.checkpoint.group, {})[r.checkpoint.role] = r.name
    return {g: (ST.SPACES[g], roles[g].get("ids"), roles[g]["ready"], roles[g]["head"],
                roles[g]["count"]) for g in ST.SPACES if g in roles}


TABLES = _tables()
"""Per-entity kernel arrays: file group -> (index space, arrays), from the kernel state table
(:mod:`pdes.kernels.state_table`).  ``iv_out`` holds a global port, ``ov_owner`` a global VC
(both local indices in the kernel)."""

RINGS = _rings()
"""Ring buffers: file group -> (index space, record ids (None: no records), ready/arrival
cycles, head, count).  Stored as ``<group>/ready`` (and ``<group>/record``), front first."""

REDUCED = tuple(r.name for r in ST.with_policy("reduced") if r.name != "st")
"""Histograms, stored summed over the parts (``stats/<name>``), as is ``stats/st`` (sums, and
maxima for :data:`models.core.record.STAT_MAX`)."""

NOT_SAVED = {**{r.name: r.checkpoint.reason for r in ST.with_policy("rebuilt")},
             **{ring[3]: "rings restart at slot 0" for ring in RINGS.values()}}
"""Kernel state that a checkpoint does not store, and why."""

SHARED = tuple(r.name for r in ST.with_policy("reduced") + ST.with_policy("network"))
"""Kernel state stored once for the whole network (``stats/``, ``routing/snap``, ``messages/``)."""


class CheckpointError(RuntimeError):
    """A checkpoint could not be written."""


# --------------------------------------------------------------------------- numbering
def port_offsets(topo) -> np.ndarray:
    """First global port of every router (and the port count at the end)."""
    off = np.zeros(topo.n_routers + 1, dtype=np.int64)
    np.cumsum(topo.endpoints.astype(np.int64) + topo.degree.astype(np.int64), out=off[1:])
    return off


def sizes_of(prep) -> dict:
    """The sizes of the index spaces of a prepared run."""
    topo = prep.topo
    n_ports = int(port_offsets(topo)[-1])
    nv = prep.rp.num_vcs
    E = topo.n_endpoints
    return {"n_ports": n_ports, "n_endpoints": E, "num_vcs": nv, "n_routers": topo.n_routers,
            "n_channels": 2 * topo.n_links, "n_messages": _n_messages(prep),
            "vc_flits": prep.rp.vc_flits, "output_flits": prep.rp.output_flits,
            "vc": n_ports * nv, "port": n_ports, "key": (n_ports + E) * nv, "ep": E}


def _n_messages(prep) -> int:
    return int(prep.traffic.msg_pkts.size) if prep.traffic.kind == "messages" else 0


def global_index(part, port_off) -> dict:
    """Global ids of a part's local ports, VCs, credit keys and endpoints."""
    a = part.arrays
    nv = part.nv
    pr = a["port_router"].astype(np.int64)
    gport = (port_off[part.router_gid.astype(np.int64)[pr]] + np.arange(part.nP, dtype=np.int64)
             - a["port_off"].astype(np.int64)[pr])
    vcs = np.arange(nv, dtype=np.int64)
    sender = np.concatenate([gport, int(port_off[-1]) + part.ep_gid.astype(np.int64)])
    return {"port": gport, "vc": (gport[:, None] * nv + vcs).ravel(),
            "key": (sender[:, None] * nv + vcs).ravel(), "ep": part.ep_gid.astype(np.int64)}


def _ring_slots(head, cnt, layout):
    """(ring, position from the front, array index) of every element of the rings of one
    group (``layout``: capacity per ring, hot slots, deep offsets; see
    :func:`pdes.state.ring_layout`)."""
    cap, hot, deep = layout
    n = cnt.shape[0]
    cnt = cnt.astype(np.int64)
    ring = np.repeat(np.arange(n, dtype=np.int64), cnt)
    j = np.arange(int(cnt.sum()), dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    w = (head.astype(np.int64)[ring] + j) % cap[ring]
    return ring, j, ring_positions(w, ring, n, hot, deep)


def _layouts(part) -> dict:
    """Per ring group: (capacity of every ring, hot slots, deep offsets).  Input VCs and
    credit FIFOs have their port's capacity; output queues are all alike."""
    a = part.arrays
    nv, hot = part.nv, int(part.prm[prm_slots.PR_HOT])
    oq = part.rp.output_flits
    return {"input_vcs": (np.repeat(a["in_cap"].astype(np.int64), nv), hot, a["iv_deep"]),
            "ports": (np.full(part.nP, oq, dtype=np.int64), oq, np.zeros(part.nP, np.int64)),
            "credits": (np.repeat(a["cr_cap"].astype(np.int64), nv), hot, a["cr_deep"])}


# --------------------------------------------------------------------------- capture
def capture(part, port_off, n_endpoints: int) -> dict:
    """A part's dynamic state in global ids (its share of the checkpoint)."""
    a = part.arrays
    idx = global_index(part, port_off)
    out = {"index": idx}
    for group, (_, names) in TABLES.items():
        for name in names:
            v = np.array(a[name])
            if name == "iv_out":
                v = np.where(v >= 0, idx["port"][np.maximum(v, 0)], -1).astype(v.dtype)
            elif name == "ov_owner":
                # negative: free (-1) or draining (pdes.kernels.iq.OV_DRAINING), kept as is
                v = np.where(v >= 0, idx["vc"][np.maximum(v, 0)], v).astype(v.dtype)
            out[f"{group}/{name}"] = v
    layouts = _layouts(part)
    for group, (space, ids, rdy, head, cnt) in RINGS.items():
        ring, j, slot = _ring_slots(a[head], a[cnt], layouts[group])
        out[f"{group}/gid"] = idx[space][ring]
        out[f"{group}/j"] = j
        out[f"{group}/ready"] = a[rdy][slot]
        if ids is not None:
            fid = a[ids][slot].astype(np.int64)
            rec = np.empty((fid.size, NF_USED), dtype=np.int32)
            rec[:, :NF_HOT] = a["rec"][fid]
            rec[:, NF_HOT:] = a["rec_c"][fid, :NF_USED - NF_HOT]
            out[f"{group}/record"] = rec
    # message progress: msg_left is written by the source's part, msg_recv by the destination's
    msg_off = a["msg_off"].astype(np.int64)
    local = np.zeros(n_endpoints, dtype=bool)
    local[idx["ep"]] = True
    src = np.repeat(np.arange(n_endpoints, dtype=np.int64), np.diff(msg_off))
    for name, mine in (("msg_left", local[src]), ("msg_recv", local[a["msg_dst"]])):
        k = np.nonzero(mine)[0]
        out[f"messages/{name}/index"] = k
        out[f"messages/{name}"] = a[name][k]
    return out


def combine(caps: list, sizes: dict) -> dict:
    """The checkpoint datasets (global arrays) from every part's capture."""
    G = {}
    for group, (space, names) in TABLES.items():
        n = sizes[space]
        seen = np.zeros(n, dtype=np.int64)
        for c in caps:
            seen[c["index"][space]] += 1
        if not np.all(seen == 1):
            raise CheckpointError(f"checkpoint: the parts do not cover every {space} once (engine bug)")
        for name in names:
            first = caps[0][f"{group}/{name}"]
            arr = np.zeros((n,) + first.shape[1:], dtype=first.dtype)
            for c in caps:
                arr[c["index"][space]] = c[f"{group}/{name}"]
            G[f"{group}/{name}"] = arr
    for group, (space, ids, _, _, cnt) in RINGS.items():
        gid = np.concatenate([c[f"{group}/gid"] for c in caps])
        j = np.concatenate([c[f"{group}/j"] for c in caps])
        order = np.lexsort((j, gid))
        if not np.array_equal(np.bincount(gid, minlength=sizes[space]),
                              G[f"{group}/{cnt}"].astype(np.int64)):
            raise CheckpointError(f"checkpoint: {group} ring contents do not match their counts (engine bug)")
        G[f"{group}/ready"] = np.concatenate([c[f"{group}/ready"] for c in caps])[order]
        if ids is not None:
            G[f"{group}/record"] = np.concatenate([c[f"{group}/record"] for c in caps])[order]
    for name in ("msg_left", "msg_recv"):
        first = caps[0][f"messages/{name}"]
        arr = np.zeros(sizes["n_messages"], dtype=first.dtype)
        for c in caps:
            arr[c[f"messages/{name}/index"]] = c[f"messages/{name}"]
        G[f"messages/{name}"] = arr
    return G


# --------------------------------------------------------------------------- write
def save(prep, group, state: LoopState, path: str) -> None:
    """Write the checkpoint of the parts of ``group`` (a run of ``prep``) at ``state.cycle``
    to ``path`` (collective).

    Every rank captures its parts; rank 0 gathers, writes ``<path>.tmp-<pid>``,
    syncs it to disk and renames it over ``path``.  A write failure raises
    :class:`CheckpointError` on every rank.
    """
    parts = group.parts
    for p in parts:
        a = p.arrays
        if a["fo_cnt"].any() or a["co_cnt"].any() or a["smp"].any():
            raise CheckpointError("checkpoint: outboxes or sample counters not empty at a sample "
                                  "boundary (engine bug)")
    st = reduce.stats(group)
    hists = {n: reduce.summed(group, n) for n in REDUCED}
    port_off = port_offsets(prep.topo)
    caps = group.gather([capture(p, port_off, prep.topo.n_endpoints) for p in parts])
    err = ""
    if group.rank == 0:
        caps = [c for rank_caps in caps for c in rank_caps]
        sizes = sizes_of(prep)
        G = combine(caps, sizes)
        G["stats/st"] = st
        for n, h in hists.items():
            G[f"stats/{n}"] = h
        G["routing/snap"] = parts[0].arrays["snap"]
        try:
            _write(path, prep, state, G, sizes, nranks=group.size, nparts=len(caps))
        except OSError as exc:
            err = f"checkpoint: cannot write {path}: {exc.strerror or exc}"
    err = group.bcast(err)
    if err:
        raise CheckpointError(err)


def code_version() -> tuple[str, str]:
    """(package version, digest of every source of ``models`` and ``pdes``)."""
    from models.core.jit import source_digest
    from pdes import __version__
    return __version__, source_digest()


def _write(path, prep, state: LoopState, G: dict, sizes: dict, *, nranks: int, nparts: int) -> None:
    import h5py

    from pdes import config as C
    tmp = f"{path}.tmp-{os.getpid()}"
    version, digest = code_version()
    try:
        with h5py.File(tmp, "w") as f:
            f.attrs["format"] = FORMAT
            f.attrs["format_version"] = FORMAT_VERSION
            f.attrs["pdes_version"] = version
            f.attrs["source_digest"] = digest
            f.attrs["config_json"] = json.dumps(prep.cfg, sort_keys=True)
            f.attrs["config_toml"] = C.to_toml(prep.cfg)
            f.attrs["cycle"] = int(state.cycle)
            for k, v in prep.provenance.items():     # the input files' digests (pdes.provenance)
                f.attrs[k] = v
            for k in ("n_routers", "n_ports", "n_endpoints", "n_channels", "n_messages", "num_vcs",
                      "vc_flits", "output_flits"):
                f.attrs[k] = int(sizes[k])
            for name, arr in G.items():
                f.create_dataset(name, data=arr)
            e = f.create_group("engine")
            e.attrs["phase"] = state.phase
            e.attrs["m0"] = int(state.m0)
            e.attrs["m1"] = int(state.m1)
            e.attrs["has_prev_rate"] = state.prev_rate is not None
            e.attrs["prev_rate"] = float(state.prev_rate) if state.prev_rate is not None else 0.0
            e.attrs["saturated"] = bool(state.saturated)
            e.attrs["reason"] = state.reason
            e.create_dataset("series", data=np.array(state.series, dtype=np.int64).reshape(-1, 6))
            r = f.create_group("run")
            r.attrs["nranks"] = int(nranks)
            r.attrs["parts"] = int(nparts)
            for k, v in state.phase_wall.items():
                r.attrs[f"wall_{k}_s"] = float(v)
            r.attrs["kernel_s"] = float(state.kernel_s)
            r.attrs["exchange_s"] = float(state.exchange_s)
            f.attrs["complete"] = True
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        try:
            fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
        except OSError:         # pragma: no cover - a directory that cannot be opened
            return
        try:
            os.fsync(fd)
        except OSError:         # pragma: no cover - file systems without directory sync
            pass
        finally:
            os.close(fd)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


# --------------------------------------------------------------------------- read
def expected_datasets(attrs) -> dict:
    """Dataset name -> shape of a checkpoint with these size attributes (the first dimension
    of the ring contents is free: ``None``)."""
    nv = int(attrs["num_vcs"])
    n_ports, E = int(attrs["n_ports"]), int(attrs["n_endpoints"])
    space = {"vc": n_ports * nv, "port": n_ports, "key": (n_ports + E) * nv, "ep": E}
    out = {}
    for group, (sp, names) in TABLES.items():
        for name in names:
            out[f"{group}/{name}"] = (space[sp], *ST.trailing_shape(ST.BY_NAME[name]))
    for group, (_, ids, _, _, _) in RINGS.items():
        out[f"{group}/ready"] = (None,)
        if ids is not None:
            out[f"{group}/record"] = (None, NF_USED)
    for name in ("msg_left", "msg_recv"):
        out[f"messages/{name}"] = (int(attrs["n_messages"]),)
    out["stats/st"] = (NSTAT,)
    for name in REDUCED:
        out[f"stats/{name}"] = (None,)
    out["routing/snap"] = (None,)     # per channel with a routing snapshot, else 1 entry
    out["engine/series"] = (None, 6)
    return out


class Checkpoint:
    """An opened checkpoint file: its config, cycle and (on demand) its arrays.

    Opening checks everything that can be checked without building the network:
    that the file is a whole checkpoint of this format, written by this code
    (package version and source digest), with every dataset in its shape.  Any
    failure raises :class:`ParameterError` ``restart: ...``.
    """

    def __init__(self, path: str):
        import h5py
        self.path = path
        if not os.path.exists(path):
            raise ParameterError(f"restart: file not found: {path}")
        if not os.path.isfile(path):
            raise ParameterError(f"restart: {path} is not a regular file")
        try:
            f = h5py.File(path, "r")
        except OSError:
            raise ParameterError(f"restart: {path} is not an HDF5 file (or is damaged)") from None
        with f:
            attrs = dict(f.attrs)
            fmt = attrs.get("format")
            if fmt != FORMAT:
                what = "a result file" if fmt == "pdes-results" else \
                    "a study file" if fmt == "pdes-study" else "not a pdes file"
                raise ParameterError(f"restart: {path} is not a checkpoint ({what})")
            if attrs.get("format_version") != FORMAT_VERSION:
                raise ParameterError(f"restart: {path} has checkpoint format version "
                                     f"{attrs.get('format_version')}; this pdes reads version {FORMAT_VERSION}")
            if not attrs.get("complete", False):
                raise ParameterError(f"restart: {path} is incomplete")
            version, digest = code_version()
            if (attrs.get("pdes_version"), attrs.get("source_digest")) != (version, digest):
                raise ParameterError(
                    f"restart: {path} was written by another code version (pdes "
                    f"{attrs.get('pdes_version')}, sources {attrs.get('source_digest')}); this is pdes "
                    f"{version}, sources {digest}: a checkpoint continues only on the code that wrote it")
            try:
                self.cfg = json.loads(attrs["config_json"])
                self.cycle = int(attrs["cycle"])
                want = expected_datasets(attrs)
            except (KeyError, TypeError, ValueError) as exc:
                raise ParameterError(f"restart: {path} is damaged ({type(exc).__name__}: {exc})") from None
            for name, shape in want.items():
                if name not in f or not isinstance(f[name], h5py.Dataset):
                    raise ParameterError(f"restart: {path} is damaged: dataset /{name} is missing")
                have = f[name].shape
                if len(have) != len(shape) or any(w is not None and w != h for w, h in zip(shape, have)):
                    raise ParameterError(f"restart: {path} is damaged: dataset /{name} has shape "
                                         f"{have}, expected {tuple('n' if w is None else w for w in shape)}")
            for group, (_, ids, _, _, cnt) in RINGS.items():
                n = int(np.asarray(f[f"{group}/{cnt}"][()], dtype=np.int64).sum())
                for name in ("ready", "record") if ids is not None else ("ready",):
                    if f[f"{group}/{name}"].shape[0] != n:
                        raise ParameterError(f"restart: {path} is damaged: /{group}/{name} holds "
                                             f"{f[f'{group}/{name}'].shape[0]} entries, its counts {n}")
            self.attrs = attrs
            e = f["engine"].attrs
            try:
                self.state = LoopState(
                    cycle=self.cycle, phase=str(e["phase"]), m0=int(e["m0"]), m1=int(e["m1"]),
                    prev_rate=float(e["prev_rate"]) if bool(e["has_prev_rate"]) else None,
                    series=[tuple(int(x) for x in row) for row in f["engine/series"][()]],
                    saturated=bool(e["saturated"]), reason=str(e["reason"]),
                    phase_wall={k: float(f["run"].attrs.get(f"wall_{k}_s", 0.0))
                                for k in ("warmup", "measure", "drain", "exchange")},
                    kernel_s=float(f["run"].attrs.get("kernel_s", 0.0)),
                    exchange_s=float(f["run"].attrs.get("exchange_s", 0.0)))
            except (KeyError, TypeError, ValueError) as exc:
                raise ParameterError(f"restart: {path} is damaged: /engine ({exc})") from None

    def arrays(self) -> dict:
        """Every dataset of the state (not ``/engine`` and ``/run``)."""
        import h5py
        out = {}
        with h5py.File(self.path, "r") as f:
            for name in expected_datasets(self.attrs):
                if not name.startswith("engine/"):
                    out[name] = f[name][()]
        return out

    def check_network(self, prep) -> None:
        """Refuse a prepared run whose network or router does not match the checkpoint's."""
        sizes = sizes_of(prep)
        bad = [f"{k} {int(self.attrs[k])} != {sizes[k]}" for k in (
            "n_routers", "n_ports", "n_endpoints", "n_channels", "n_messages", "num_vcs", "vc_flits",
            "output_flits") if int(self.attrs[k]) != sizes[k]]
        if bad:
            raise ParameterError(f"restart: {self.path} does not match the network of its config "
                                 f"({', '.join(bad)})")


def open_checkpoint(path: str) -> Checkpoint:
    return Checkpoint(path)


# --------------------------------------------------------------------------- config
def _plain(cfg: dict) -> dict:
    return json.loads(json.dumps(cfg, sort_keys=True))


def config_differences(saved: dict, given: dict) -> list[str]:
    """``section.key (checkpoint X, given Y)`` for every key that differs, except
    :data:`MAY_DIFFER`; a section whose model name differs is reported by that key alone."""
    from pdes.config import CHOSEN
    a, b = _plain(saved), _plain(given)

    def text(v):
        return "unset" if v is None else json.dumps(v)
    out = []
    for section in sorted(set(a) | set(b)):
        sa, sb = a.get(section, {}), b.get(section, {})
        keys = sorted(set(sa) | set(sb))
        selector = CHOSEN.get(section, (None,))[0]
        if selector is not None and sa.get(selector) != sb.get(selector):
            keys = [selector]
        for key in keys:
            name = f"{section}.{key}"
            if name in MAY_DIFFER or sa.get(key) == sb.get(key):
                continue
            out.append(f"{name} (checkpoint {text(sa.get(key))}, given {text(sb.get(key))})")
    return out


def restart_config(ck: Checkpoint, raw: dict | None, sets: list[str]) -> dict:
    """The config of a restart: the checkpoint's, with ``--set`` on top, or the given config
    file's (``raw``), which must equal the checkpoint's but for :data:`MAY_DIFFER`."""
    from pdes import config as C
    base = raw if raw is not None else {s: {k: v for k, v in body.items() if v is not None}
                                         for s, body in ck.cfg.items()}
    cfg = C.resolve(base, sets)
    diff = config_differences(ck.cfg, cfg)
    if diff:
        raise ParameterError(f"restart: the config differs from the checkpoint's in "
                             f"{'; '.join(diff)} (only {', '.join(MAY_DIFFER)} may change)")
    return cfg


# --------------------------------------------------------------------------- restore
def restore(ck: Checkpoint, prep, parts) -> LoopState:
    """Set freshly built ``parts`` (any partition) to the checkpoint's state; its loop state."""
    ck.check_network(prep)
    G = ck.arrays()
    port_off = port_offsets(prep.topo)
    nv = prep.rp.num_vcs
    starts = {}
    for group, (_, _, _, _, cnt) in RINGS.items():
        c = G[f"{group}/{cnt}"].astype(np.int64)
        starts[group] = np.cumsum(c) - c
    for p in parts:
        _restore_part(p, G, port_off, nv, starts)
    return ck.state


def _restore_part(part, G: dict, port_off, nv: int, starts: dict) -> None:
    a = part.arrays
    if a["ib_cnt"].any() or a["oq_cnt"].any() or a["cr_cnt"].any():
        raise ValueError("restore: the part is not freshly built")
    idx = global_index(part, port_off)
    port_local = np.full(int(port_off[-1]), -1, dtype=np.int64)
    port_local[idx["port"]] = np.arange(part.nP, dtype=np.int64)
    for group, (space, names) in TABLES.items():
        for name in names:
            v = G[f"{group}/{name}"][idx[space]].astype(np.int64)
            if name == "ov_owner" and np.any(v < -2):
                raise ParameterError("restart: ov_owner holds a value below -2 (damaged file)")
            if name in ("iv_out", "ov_owner"):     # a port, or a VC, of the same router
                g = np.maximum(v, 0) if name == "iv_out" else np.maximum(v, 0) // nv
                loc = port_local[g]
                if np.any((v >= 0) & (loc < 0)):
                    raise ParameterError(f"restart: {name} names a port of another router "
                                         "(damaged file)")
                v = np.where(v >= 0, loc if name == "iv_out" else loc * nv + np.maximum(v, 0) % nv,
                             v if name == "ov_owner" else -1)
            a[name][...] = v
    layouts = _layouts(part)
    for group, (space, ids, rdy, head, cnt) in RINGS.items():
        n = a[cnt].shape[0]
        c = a[cnt].astype(np.int64)
        ring = np.repeat(np.arange(n, dtype=np.int64), c)
        j = np.arange(int(c.sum()), dtype=np.int64) - np.repeat(np.cumsum(c) - c, c)
        cap, hot, deep = layouts[group]
        if np.any(c > cap):
            raise ParameterError(f"restart: /{group} holds more entries than a ring's capacity")
        src = starts[group][idx[space]][ring] + j
        slot = ring_positions(j, ring, n, hot, deep)     # rings restart at slot 0
        a[head][...] = 0
        a[rdy][slot] = G[f"{group}/ready"][src]
        if ids is not None:
            k = src.size
            part.reserve_records(k)
            a = part.arrays                       # the pool may have grown
            nxt = int(a["rec_next"][0])
            fid = np.arange(nxt, nxt + k, dtype=np.int64)
            a["rec_next"][0] = nxt + k
            rec = G[f"{group}/record"][src]
            a["rec"][fid] = rec[:, :NF_HOT]
            a["rec_c"][fid, :NF_USED - NF_HOT] = rec[:, NF_HOT:]
            a[ids][slot] = fid
    first = bool(np.any(part.router_gid == 0))     # this part holds the sums
    st = G["stats/st"]
    a["st"][...] = st if first else 0
    mx = list(STAT_MAX)
    a["st"][mx] = st[mx]
    for name in REDUCED:
        a[name][...] = G[f"stats/{name}"] if first else 0
    a["smp"][...] = 0
    a["snap"][...] = G["routing/snap"]
    a["msg_left"][...] = G["messages/msg_left"]
    a["msg_recv"][...] = G["messages/msg_recv"]
