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
state.  The file format is described in docs/checkpoint.md.

A checkpoint verifies itself (docs/checkpoint.md): every non-empty dataset carries
Fletcher-32 checksums, and the file ends with a manifest of the SHA-256 of every
attribute and dataset and the SHA-256 of that manifest (:func:`seal`), checked when it is
opened (:func:`verify_digests`); a restart then checks every value against the config
and the network (:func:`verify_state`) and audits flit conservation on the restored parts
(:func:`audit_restored`) before the first cycle.
"""
from __future__ import annotations

import hashlib
import json
import os

import numpy as np

from models.core.errors import ParameterError
from models.core import params as prm_slots
from models.core.params import IV_DISCARD, NEVER
from models.schedule import OP_RECV, OP_SEND
from models.core.record import (F_AUX, F_CTIME, F_DST, F_DSTR, F_FLIT, F_HOPS, F_ITIME, F_MID,
    F_SEQ, F_SRC, F_VC, HIST_OCTAVES, HIST_SUB, NF_HOT, NF_USED, NSTAT, S_CREATED_MEAS,
    S_DROPPED_FLITS,
    S_CREATED_PKTS, S_DELIVERED_FLITS, S_DELIVERED_MEAS, S_DELIVERED_WIN, S_INFLIGHT,
    S_INJECTED_FLITS, S_INJECTED_WIN, S_LAST_MOVE, STAT_MAX)
from pdes import reduce
from pdes.files import new_hdf5
from pdes.kernels import state_table as ST
from pdes.loopstate import INT32_MAX, LoopState, SimulationError
from pdes.state import ring_positions
from pdes.workload import is_finite

FORMAT = "pdes-checkpoint"
FORMAT_VERSION = 3
"""Version 2: the file carries its digests (:func:`seal`) and Fletcher-32 checksums.
Version 3: the switch allocator's state is per switch input (``router.input_speedup``), in
``/input_vcs`` (``rr_sw_in``, ``hold_vc``, ``hold_out``, ``sw_rr``)."""

MANIFEST = "state_manifest"
DIGEST = "state_sha256"
"""The root attributes of the digests (:func:`seal`): the SHA-256 of every other attribute
and of every dataset, by name (JSON), and the SHA-256 of that manifest."""

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
            "n_channels": 2 * topo.n_links, "n_messages": _n_messages(prep), "n_ops": _n_ops(prep),
            "vc_flits": prep.rp.vc_flits, "output_flits": prep.rp.output_flits,
            "vc": n_ports * nv, "port": n_ports, "key": (n_ports + E) * nv, "ep": E}


def _n_messages(prep) -> int:
    return int(prep.traffic.msg_pkts.size) if is_finite(prep.traffic) else 0


def _n_ops(prep) -> int:
    return int(prep.traffic.msg_pkts.size) if prep.traffic.kind == "schedule" else 0


SCHEDULE = tuple(r.name for r in ST.with_policy("network") if r.checkpoint.group.startswith("schedule/"))
"""A schedule's per-operation state (``schedule/<name>``), written by the part of the
operation's endpoint (:mod:`pdes.kernels.schedule`)."""


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


def _unrouted_heads(part, ring, j, rec) -> np.ndarray:
    """Of the flits in input VCs (``ring``: the VC, ``j``: the position from the front), the
    heads on network ports whose link is not counted in their hops yet: every one but a
    front that has been routed (``iv_out`` set; the kernel counts a head's link when it
    routes it, :func:`pdes.kernels.cycle.output_stage`)."""
    a = part.arrays
    routed = (j == 0) & (a["iv_out"][ring] >= 0)
    return (rec[:, F_FLIT] == 0) & part.is_net[ring // part.nv] & ~routed


def _records_out(part, group: str, ring, j, slot, rec) -> None:
    """The kernel's records of one ring group as a checkpoint stores them: every flit with
    the VC it sits in (an output queue keeps it in ``oq_vc``) and the links it crossed."""
    if group == "input_vcs":
        rec[:, F_VC] = ring % part.nv
        rec[_unrouted_heads(part, ring, j, rec), F_HOPS] += 1
    elif group == "ports":
        rec[:, F_VC] = part.arrays["oq_vc"][slot] >> 1


def _records_in(part, group: str, ring, j, slot, rec) -> None:
    """The inverse of :func:`_records_out` on restored records (``iv_out`` restored)."""
    if group == "input_vcs":
        rec[_unrouted_heads(part, ring, j, rec), F_HOPS] -= 1
    elif group == "ports":
        part.arrays["oq_vc"][slot] = 2 * rec[:, F_VC] + (rec[:, F_FLIT] == 0)


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
                v = np.where(v >= 0, idx["port"][np.maximum(v, 0)], v).astype(v.dtype)
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
            _records_out(part, group, ring, j, slot, rec)
            out[f"{group}/record"] = rec
    # message progress: msg_left is written by the source's part, msg_recv by the destination's
    msg_off = a["msg_off"].astype(np.int64)
    local = np.zeros(n_endpoints, dtype=bool)
    local[idx["ep"]] = True
    src = np.repeat(np.arange(n_endpoints, dtype=np.int64), np.diff(msg_off))
    sched = a["op_wait"].size > 0      # a schedule: every operation is its endpoint's
    for name, mine in (("msg_left", local[src]),
                       ("msg_recv", local[src] if sched else local[a["msg_dst"]])):
        k = np.nonzero(mine)[0]
        out[f"messages/{name}/index"] = k
        out[f"messages/{name}"] = a[name][k]
    if sched:
        k = np.nonzero(local[src])[0]
        for name in SCHEDULE:
            out[f"schedule/{name}/index"] = k
            out[f"schedule/{name}"] = a[name][k]
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
    names = [("messages", n) for n in ("msg_left", "msg_recv")]
    if sizes["n_ops"]:
        names += [("schedule", n) for n in SCHEDULE]
    for grp, name in names:
        first = caps[0][f"{grp}/{name}"]
        arr = np.zeros(sizes["n_messages"], dtype=first.dtype)
        seen = np.zeros(sizes["n_messages"], dtype=np.int64)
        for c in caps:
            arr[c[f"{grp}/{name}/index"]] = c[f"{grp}/{name}"]
            seen[c[f"{grp}/{name}/index"]] += 1
        if grp == "schedule" and not np.all(seen == 1):
            raise CheckpointError("checkpoint: the parts do not cover every operation once (engine bug)")
        G[f"{grp}/{name}"] = arr
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
    from pdes import config as C
    tmp = f"{path}.tmp-{os.getpid()}"
    version, digest = code_version()
    try:
        with new_hdf5(tmp) as f:
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
                      "vc_flits", "output_flits", "n_ops"):
                f.attrs[k] = int(sizes[k])
            for name, arr in G.items():
                _dataset(f, name, arr)
            e = f.create_group("engine")
            e.attrs["phase"] = state.phase
            e.attrs["m0"] = int(state.m0)
            e.attrs["m1"] = int(state.m1)
            e.attrs["has_prev_rate"] = state.prev_rate is not None
            e.attrs["prev_rate"] = float(state.prev_rate) if state.prev_rate is not None else 0.0
            e.attrs["saturated"] = bool(state.saturated)
            e.attrs["reason"] = state.reason
            _dataset(e, "series", np.array(state.series, dtype=np.int64).reshape(-1, 6))
            r = f.create_group("run")
            r.attrs["nranks"] = int(nranks)
            r.attrs["parts"] = int(nparts)
            for k, v in state.phase_wall.items():
                r.attrs[f"wall_{k}_s"] = float(v)
            r.attrs["kernel_s"] = float(state.kernel_s)
            r.attrs["exchange_s"] = float(state.exchange_s)
            f.attrs["complete"] = True
            seal(f)             # last: every attribute and dataset written above is covered
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


# --------------------------------------------------------------------------- integrity
def _dataset(parent, name: str, arr) -> None:
    """A dataset with a Fletcher-32 checksum on every chunk (HDF5 filters need chunks, which
    need data: an empty array is stored contiguous, covered by the digest alone)."""
    arr = np.asarray(arr)
    if arr.size and arr.ndim:
        parent.create_dataset(name, data=arr, fletcher32=True)
    else:
        parent.create_dataset(name, data=arr)


def _value_digest(value) -> str:
    """SHA-256 of an attribute's or dataset's value: its type, shape and bytes."""
    h = hashlib.sha256()
    if isinstance(value, str):
        h.update(b"str\0")
        h.update(value.encode("utf-8", "surrogatepass"))
    elif isinstance(value, bytes):
        h.update(b"bytes\0")
        h.update(value)
    else:
        a = np.asarray(value)
        if a.dtype.kind == "O":          # arrays of strings
            h.update(b"object\0" + json.dumps([str(x) for x in a.ravel()]).encode())
            h.update(repr(a.shape).encode())
        else:
            a = np.ascontiguousarray(a)
            h.update(f"{a.dtype.str}\0{a.shape}\0".encode())
            h.update(a.tobytes())
    return h.hexdigest()


class _Unreadable(Exception):
    """An object of the file could not be read (a failed checksum, damaged metadata)."""

    def __init__(self, what: str, exc: BaseException):
        super().__init__(what)
        self.what, self.exc = what, exc


def _item_name(obj_name: str, attr: str | None) -> str:
    """``/group/dataset`` for a dataset, ``/group@attr`` (``/@attr`` at the top) for an attribute."""
    base = "/" + obj_name if obj_name else ""
    return f"{base or '/'}@{attr}" if attr is not None else base


def manifest(f) -> dict:
    """``{item: SHA-256}`` of every attribute (but the two of the digests) and every dataset of
    an open checkpoint, in name order; a dataset that fails its Fletcher-32 checksum, or an
    object that cannot be read, raises :class:`_Unreadable` naming it."""
    import h5py
    names = [""]
    f.visit(names.append)
    out = {}
    for name in sorted(names):
        what = _item_name(name, None) or "/"
        try:
            obj = f[name] if name else f
            for key in sorted(obj.attrs):
                if not name and key in (MANIFEST, DIGEST):
                    continue
                item = _item_name(name, key)
                what = f"attribute {item}"
                out[item] = _value_digest(obj.attrs[key])
            if isinstance(obj, h5py.Dataset):
                what = f"dataset /{name}"
                out[f"/{name}"] = _value_digest(obj[()])
        except (OSError, KeyError, TypeError, ValueError, RuntimeError) as exc:
            raise _Unreadable(what, exc) from None
    return out


def seal(f) -> None:
    """Write the digests of an open checkpoint: the manifest of every attribute and dataset
    (:func:`manifest`) and its SHA-256.  Called last: anything written afterwards is
    reported as not covered by :func:`verify_digests`."""
    text = json.dumps(manifest(f), sort_keys=True)
    f.attrs[MANIFEST] = text
    f.attrs[DIGEST] = hashlib.sha256(text.encode()).hexdigest()


def verify_digests(f, path: str) -> None:
    """Refuse (:class:`ParameterError` ``restart: <path> is damaged: ...``) a checkpoint whose
    attributes or datasets are not those it was sealed with (:func:`seal`), naming the first
    that differs, is missing or was added."""
    def damaged(what):
        raise ParameterError(f"restart: {path} is damaged: {what}")
    try:
        text, digest = f.attrs.get(MANIFEST), f.attrs.get(DIGEST)
    except (OSError, KeyError, TypeError, ValueError, RuntimeError) as exc:
        damaged(f"its digest attributes cannot be read ({exc})")
    if not isinstance(text, str) or not isinstance(digest, str):
        damaged(f"attribute /@{DIGEST if isinstance(text, str) else MANIFEST} is missing")
    if hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest() != digest:
        damaged(f"attribute /@{MANIFEST} does not match /@{DIGEST}")
    try:
        want = json.loads(text)
    except ValueError:
        damaged(f"attribute /@{MANIFEST} is not JSON")
    try:
        have = manifest(f)
    except _Unreadable as exc:
        fletcher = "dataset" in exc.what and "filter" in str(exc.exc).lower()
        damaged(f"{exc.what} fails its Fletcher-32 checksum" if fletcher
                else f"{exc.what} cannot be read ({type(exc.exc).__name__}: {exc.exc})")
    for item in sorted(set(want) | set(have)):
        kind = "attribute" if "@" in item else "dataset"
        if item not in have:
            damaged(f"{kind} {item} is missing")
        if item not in want:
            damaged(f"{kind} {item} is not covered by the digest (added after writing)")
        if want[item] != have[item]:
            damaged(f"{kind} {item} does not match its digest")


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
    if int(attrs.get("n_ops", 0)):
        for name in SCHEDULE:
            out[f"schedule/{name}"] = (int(attrs["n_ops"]),)
    out["stats/st"] = (NSTAT,)
    for name in REDUCED:
        out[f"stats/{name}"] = (None,)
    out["routing/snap"] = (None,)     # per channel with a routing snapshot, else 1 entry
    out["engine/series"] = (None, 6)
    return out


class Checkpoint:
    """An opened checkpoint file: its config, cycle and (on demand) its arrays.

    Opening checks everything that can be checked without building the network:
    that the file is a checkpoint of this format whose every attribute and dataset
    matches the digests it was sealed with (:func:`verify_digests`; a dataset that
    fails its Fletcher-32 checksum is named too), written by this code (package
    version and source digest), with every dataset in its shape.  Any failure raises
    :class:`ParameterError` ``restart: ...``.  :func:`restore` then checks the values
    against the config (:func:`verify_state`) and audits the restored parts.
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
            try:
                attrs = dict(f.attrs)
            except (OSError, KeyError, TypeError, ValueError, RuntimeError) as exc:
                raise ParameterError(f"restart: {path} is damaged: its attributes cannot be read "
                                     f"({exc})") from None
            fmt = attrs.get("format")
            if DIGEST in attrs:
                verify_digests(f, path)      # first: what follows reads sealed values only
            if fmt != FORMAT:
                what = "a result file" if fmt == "pdes-results" else \
                    "a study file" if fmt == "pdes-study" else "not a pdes file"
                raise ParameterError(f"restart: {path} is not a checkpoint ({what})")
            if attrs.get("format_version") != FORMAT_VERSION:
                raise ParameterError(f"restart: {path} has checkpoint format version "
                                     f"{attrs.get('format_version')}; this pdes reads version {FORMAT_VERSION}")
            if not attrs.get("complete", False):
                raise ParameterError(f"restart: {path} is incomplete")
            if DIGEST not in attrs:
                raise ParameterError(f"restart: {path} is damaged: attribute /@{DIGEST} is missing")
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
                        raise ParameterError(f"restart: {path} is damaged: dataset /{group}/{name} holds "
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
            "output_flits", "n_ops") if int(self.attrs.get(k, 0)) != sizes[k]]
        if bad:
            raise ParameterError(f"restart: {self.path} does not match the network of its config "
                                 f"({', '.join(bad)})")


def open_checkpoint(path: str) -> Checkpoint:
    return Checkpoint(path)


# --------------------------------------------------------------------------- invariants
def _first(ok) -> int:
    """The flat index of the first False of a boolean array."""
    return int(np.argmin(np.asarray(ok).ravel()))


class _Checks:
    """Vectorized range checks of a checkpoint's values; the first failure raises
    :class:`ParameterError` ``restart: <path> is damaged: <item>: <what>``."""

    def __init__(self, path: str):
        self.path = path

    def fail(self, what: str):
        raise ParameterError(f"restart: {self.path} is damaged: {what}")

    def within(self, item: str, v, lo, hi, rows=None) -> None:
        """Every entry of ``v`` (of the rows ``rows`` of the dataset, if given) in
        ``[lo, hi]`` (numbers or arrays of ``v``'s shape)."""
        v = np.asarray(v, dtype=np.int64)
        lo_a, hi_a = np.broadcast_to(lo, v.shape), np.broadcast_to(hi, v.shape)
        ok = (v >= lo_a) & (v <= hi_a)
        if not ok.all():
            i = _first(ok)
            where = int(rows[i]) if rows is not None else (i if v.ndim <= 1 else
                                                            np.unravel_index(i, v.shape))
            self.fail(f"{item}: entry {where} is {int(v.ravel()[i])}, outside "
                      f"[{int(lo_a.ravel()[i])}, {int(hi_a.ravel()[i])}]")

    def holds(self, item: str, ok, what: str, rows=None) -> None:
        """Every entry of the boolean array ``ok``; ``what`` says what fails."""
        ok = np.asarray(ok, dtype=bool)
        if not ok.all():
            i = _first(ok)
            where = int(rows[i]) if rows is not None else i
            self.fail(f"{item}: entry {where} {what}")

    def equal(self, item: str, have, want, what: str) -> None:
        if int(have) != int(want):
            self.fail(f"{item} is {int(have)}, {what} {int(want)}")


def _geometry(prep) -> dict:
    """The network's global port numbering (:func:`port_offsets`): the router of every port,
    the ports of every router, the capacity (flits per VC) of every input port and of every
    credit sender (ports, then endpoints), as :func:`pdes.state._capacities` gives them."""
    topo, rp = prep.topo, prep.rp
    port_off = port_offsets(topo)
    n_ports = int(port_off[-1])
    n_epp = topo.endpoints.astype(np.int64)
    nports = n_epp + topo.degree.astype(np.int64)
    router = np.repeat(np.arange(topo.n_routers, dtype=np.int64), nports)
    idx = np.arange(n_ports, dtype=np.int64) - port_off[router]
    net = idx >= n_epp[router]
    ecap = rp.endpoint_capacity()
    in_cap = np.full(n_ports, ecap, dtype=np.int64)
    csr = np.asarray(topo.port_offsets, dtype=np.int64)[router[net]] + idx[net] - n_epp[router[net]]
    in_cap[net] = rp.link_capacity(topo.n_links)[np.asarray(topo.port_out_channel)[csr] // 2]
    return {"router": router, "nports": nports, "in_cap": in_cap,
            "cr_cap": np.concatenate([in_cap, np.full(topo.n_endpoints, ecap, np.int64)])}


def _last_boundary(m: dict, finite: bool, max_cycles: int) -> int:
    """The last cycle a run of this config can write a checkpoint at (it writes none at the
    boundary where it ends): before the end of the longest warm-up, window and drain."""
    sp = m["sample_period"]
    if finite:
        last = INT32_MAX - 1
    else:
        warm = m["warmup_cycles"] + (m["max_warmup_cycles"] if m["warmup"] != "fixed" else 0)
        last = _boundary_at(warm, sp) + m["measure_cycles"] + m["drain_cycles"] - 1
    return min(last, max_cycles - 1) if max_cycles else last


def _boundary_at(c: int, sp: int) -> int:
    """The first sample boundary (a positive multiple of ``sp``) at or after cycle ``c``."""
    return max(sp, -(-c // sp) * sp)


def verify_state(ck: Checkpoint, prep, G: dict) -> None:
    """Refuse a checkpoint (:class:`ParameterError` ``restart: <path> is damaged: ...``) whose
    values a run of ``prep`` cannot have reached at a sample boundary: its loop state (cycle,
    phase, window, series) against the config, every per-entity value and ring length against
    the network's ranges and capacities, the flit records, and the counters against each other
    (conservation).  ``G``: its arrays (:meth:`Checkpoint.arrays`).  Checks global values only,
    so every rank decides alike."""
    from pdes.kernels.iq import OV_DRAINING
    from pdes.state import HOP_BINS
    c = _Checks(ck.path)
    _verify_loop(c, ck, prep, G)
    geo = _geometry(prep)
    _verify_entities(c, ck, prep, G, geo)
    _verify_records(c, ck, prep, G, geo)
    _verify_owners(c, prep, G, geo, OV_DRAINING)
    _verify_counters(c, ck, prep, G, HOP_BINS)


def _verify_loop(c: _Checks, ck: Checkpoint, prep, G: dict) -> None:
    """The loop state: a sample boundary inside the run, the phase and window that cycle
    allows, the series of every sample so far, the last sample's rate."""
    cfg = prep.cfg
    m = cfg["measure"]
    sp = m["sample_period"]
    s = ck.state
    T = s.cycle
    finite = is_finite(prep.traffic)
    if T < sp or T % sp:
        c.fail(f"attribute /@cycle is {T}, not a sample boundary of its run (a positive "
               f"multiple of measure.sample_period = {sp})")
    last = _last_boundary(m, finite, cfg["run"]["max_cycles"])
    if T > last:
        c.fail(f"attribute /@cycle is {T}, past the last sample boundary its config can write a "
               f"checkpoint at ({last})")
    if finite:
        if s.phase != "exchange":
            c.fail(f"attribute /engine@phase is {s.phase!r}, a finite exchange's is 'exchange'")
        if (s.m0, s.m1) != (0, INT32_MAX):
            c.fail(f"attributes /engine@m0, m1 are {s.m0}, {s.m1}; a finite exchange's are 0, "
                   f"{INT32_MAX}")
    elif s.phase == "warmup":
        end = m["warmup_cycles"] + (m["max_warmup_cycles"] if m["warmup"] != "fixed" else 0)
        if T >= end:
            c.fail(f"attribute /engine@phase is 'warmup' at cycle {T}: the warm-up ends by "
                   f"cycle {_boundary_at(end, sp)}")
        if (s.m0, s.m1) != (INT32_MAX, INT32_MAX):
            c.fail(f"attributes /engine@m0, m1 are {s.m0}, {s.m1} in the warm-up ({INT32_MAX} "
                   "until the window starts)")
    elif s.phase in ("measure", "drain"):
        warm = m["warmup_cycles"] + (m["max_warmup_cycles"] if m["warmup"] != "fixed" else 0)
        lo, hi = _boundary_at(m["warmup_cycles"], sp), _boundary_at(warm, sp)
        if s.m0 % sp or not lo <= s.m0 <= hi:
            c.fail(f"attribute /engine@m0 is {s.m0}: the window starts at a sample boundary "
                   f"in [{lo}, {hi}]")
        if s.m1 != s.m0 + m["measure_cycles"]:
            c.fail(f"attribute /engine@m1 is {s.m1}, not m0 + measure.measure_cycles = "
                   f"{s.m0 + m['measure_cycles']}")
        if s.phase == "measure" and not s.m0 <= T < s.m1:
            c.fail(f"attribute /engine@phase is 'measure' at cycle {T}, outside the window "
                   f"[{s.m0}, {s.m1})")
        if s.phase == "drain" and not s.m1 <= T < s.m1 + m["drain_cycles"]:
            c.fail(f"attribute /engine@phase is 'drain' at cycle {T}, outside [{s.m1}, "
                   f"{s.m1 + m['drain_cycles']})")
    else:
        c.fail(f"attribute /engine@phase is {s.phase!r}, not warmup, measure or drain")
    if s.saturated or s.reason:
        c.fail("attributes /engine@saturated, reason say the run ended (a checkpoint is only "
               "written while it goes on)")
    series = np.array(ck.state.series, dtype=np.int64).reshape(-1, 6)
    n = T // sp
    if series.shape[0] != n:
        c.fail(f"dataset /engine/series has {series.shape[0]} rows, cycle {T} needs {n} (one "
               f"per sample of {sp} cycles)")
    c.holds("dataset /engine/series", series[:, 0] == sp * np.arange(1, n + 1, dtype=np.int64),
            "is not the cycle of its sample (rows must be contiguous)")
    c.within("dataset /engine/series (counts)", series[:, 1:5], 0, np.iinfo(np.int64).max)
    flow = np.cumsum(series[:, 2] - series[:, 1])
    if prep.failure is None:
        c.holds("dataset /engine/series", series[:, 5] == flow,
                "has flits in flight other than injected minus delivered so far")
    else:           # a failure drops flits: fewer in flight, never more
        c.holds("dataset /engine/series", (series[:, 5] <= flow) & (series[:, 5] >= 0),
                "has more flits in flight than injected minus delivered so far")
    rate = int(series[-1, 1]) / (sp * prep.active_endpoints)
    if s.prev_rate is None or s.prev_rate != rate:
        c.fail(f"attribute /engine@prev_rate is {s.prev_rate}, the last sample's rate is {rate}")
    for k, v in (*((f"wall_{k}_s", v) for k, v in s.phase_wall.items()),
                 ("kernel_s", s.kernel_s), ("exchange_s", s.exchange_s)):
        if not (np.isfinite(v) and v >= 0):
            c.fail(f"attribute /run@{k} is {v}, not a time in seconds")


def _verify_entities(c: _Checks, ck: Checkpoint, prep, G: dict, geo: dict) -> None:
    """Every per-entity value in its range: ring lengths within their capacities, VC and port
    indices within the router, cycles not past the checkpoint's, source queues and message
    pointers within what was created."""
    rp = prep.rp
    nv, pkt, T = rp.num_vcs, rp.packet_size, ck.cycle
    router, nports = geo["router"], geo["nports"]
    vc_port = np.repeat(np.arange(router.size, dtype=np.int64), nv)
    vc_cap = geo["in_cap"][vc_port]
    key_cap = np.repeat(geo["cr_cap"], nv)
    port_n = nports[router]                   # ports of each port's router
    never = int(NEVER)
    c.within("dataset /input_vcs/ib_cnt", G["input_vcs/ib_cnt"], 0, vc_cap)
    c.within("dataset /ports/oq_cnt", G["ports/oq_cnt"], 0, rp.output_flits)
    c.within("dataset /credits/cr_cnt", G["credits/cr_cnt"], 0, key_cap)
    c.within("dataset /credits/cred", G["credits/cred"], 0, key_cap)
    c.within("dataset /credits/cr_res", G["credits/cr_res"], 0, key_cap)
    for name in ("iv_ready", "iv_sa_ready"):
        c.within(f"dataset /input_vcs/{name}", G[f"input_vcs/{name}"], 0, never)
    for name in ("iv_sa_at", "iv_va_at"):
        c.within(f"dataset /input_vcs/{name}", G[f"input_vcs/{name}"], 0, never)
    c.within("dataset /input_vcs/iv_ovc", G["input_vcs/iv_ovc"], 0, nv - 1)
    c.within("dataset /input_vcs/iv_alloc", G["input_vcs/iv_alloc"], 0, 1)
    c.within("dataset /input_vcs/rr_va_in", G["input_vcs/rr_va_in"], 0,
             np.repeat(port_n, nv) * nv - 1)
    c.within("dataset /output_vcs/rr_va", G["output_vcs/rr_va"], 0, np.repeat(port_n, nv) * nv - 1)
    c.within("dataset /ports/oq_ready", G["ports/oq_ready"], 0, never)
    c.within("dataset /ports/rr_in", G["ports/rr_in"], 0, nv - 1)
    c.within("dataset /ports/rr_out", G["ports/rr_out"], 0, port_n * nv - 1)
    c.within("dataset /input_vcs/rr_sw_in", G["input_vcs/rr_sw_in"], 0,
             np.repeat(port_n, nv) - 1)
    c.within("dataset /ports/cr_next", G["ports/cr_next"], 0, never)
    c.within("dataset /ports/cr_step", G["ports/cr_step"], -1, never)
    c.within("dataset /input_vcs/hold_vc", G["input_vcs/hold_vc"], -1, nv - 1)
    c.within("dataset /input_vcs/sw_rr", G["input_vcs/sw_rr"], 0, nv - 1)
    c.within("dataset /input_vcs/hold_out", G["input_vcs/hold_out"], -1,
             np.repeat(port_n, nv) - 1)
    c.within("dataset /ports/held_by", G["ports/held_by"], -1, port_n * nv - 1)
    c.within("dataset /ports/link_flits", G["ports/link_flits"], 0, np.iinfo(np.int64).max)
    st = G["stats/st"]
    created = int(st[S_CREATED_PKTS])
    c.within("dataset /endpoints/ep_pending", G["endpoints/ep_pending"], 0, max(created, 0))
    c.within("dataset /endpoints/ep_cur_left", G["endpoints/ep_cur_left"], 0, pkt)
    c.within("dataset /endpoints/ep_cur_vc", G["endpoints/ep_cur_vc"], 0, nv - 1)
    c.within("dataset /endpoints/ep_next_gen", G["endpoints/ep_next_gen"], 0, T)
    c.within("dataset /endpoints/ep_seq", G["endpoints/ep_seq"], 0, max(created, 0))
    for name in ("ep_onoff", "ep_onoff_gen"):
        c.within(f"dataset /endpoints/{name}", G[f"endpoints/{name}"], -1, 1)
    c.within("dataset /endpoints/ep_last_vc", G["endpoints/ep_last_vc"], -1, nv - 1)
    for name in ("ep_inj", "ep_del"):
        c.within(f"dataset /endpoints/{name}", G[f"endpoints/{name}"], 0, np.iinfo(np.int64).max)
    tr = prep.traffic
    E = prep.topo.n_endpoints
    if tr.kind == "schedule":
        _verify_schedule(c, prep, G, created)
    elif tr.kind == "messages":
        off = np.asarray(tr.msg_off, dtype=np.int64)
        pk = np.asarray(tr.msg_pkts, dtype=np.int64)
        c.within("dataset /endpoints/ep_msg_ptr", G["endpoints/ep_msg_ptr"], off[:E], off[1:E + 1])
        c.within("dataset /endpoints/ep_cur_msg", G["endpoints/ep_cur_msg"], 0, max(pk.size - 1, 0))
        left = G["messages/msg_left"]
        c.within("dataset /messages/msg_left", left, 0, pk)
        c.within("dataset /messages/msg_recv", G["messages/msg_recv"], 0, pk - left)
        c.equal("the packets taken from messages (/messages/msg_left)", int((pk - left).sum()),
                created, "but /stats/st counts created packets:")
    else:
        c.within("dataset /endpoints/ep_msg_ptr", G["endpoints/ep_msg_ptr"], 0, 0)
        c.within("dataset /endpoints/ep_cur_msg", G["endpoints/ep_cur_msg"], 0, 0)
    for group in RINGS:
        c.within(f"dataset /{group}/ready", G[f"{group}/ready"], 0, never)


def _verify_schedule(c: _Checks, prep, G: dict, created: int) -> None:
    """A schedule's state: packets taken from sends and received within the messages', the
    sends being injected, dependencies met no more than there are, cycles within the run,
    and each endpoint's heap of posted sends a heap of its own posted sends."""
    tr, wl = prep.traffic, prep.workload
    E = prep.topo.n_endpoints
    off = np.asarray(tr.msg_off, dtype=np.int64)
    pk = np.asarray(tr.msg_pkts, dtype=np.int64)
    kind = wl["op_kind"]
    send, recv = kind == OP_SEND, kind == OP_RECV
    N = pk.size
    c.within("dataset /endpoints/ep_msg_ptr", G["endpoints/ep_msg_ptr"], off[:E], off[:E])
    c.within("dataset /endpoints/ep_cur_msg", G["endpoints/ep_cur_msg"], -1, N - 1)
    left = np.asarray(G["messages/msg_left"], dtype=np.int64)
    c.within("dataset /messages/msg_left", left, 0, np.where(send, pk, 0))
    c.within("dataset /messages/msg_recv", G["messages/msg_recv"], 0, np.where(recv, pk, 0))
    c.equal("the packets taken from sends (/messages/msg_left)", int((pk - left)[send].sum()),
            created, "but /stats/st counts created packets:")
    c.within("dataset /schedule/op_wait", G["schedule/op_wait"], 0, wl["op_wait0"])
    c.within("dataset /schedule/op_post", G["schedule/op_post"], 0, INT32_MAX - 1)
    c.within("dataset /schedule/op_done", G["schedule/op_done"], -1, INT32_MAX - 1)
    c.within("dataset /schedule/op_arr", G["schedule/op_arr"], -1, INT32_MAX - 1)
    n = np.asarray(G["endpoints/ep_heap_n"], dtype=np.int64)
    c.within("dataset /endpoints/ep_heap_n", n, 0, np.diff(off))
    heap = np.asarray(G["schedule/op_heap"], dtype=np.int64)
    idx = np.repeat(off[:E], n) + np.arange(int(n.sum()), dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
    owner = np.repeat(np.arange(E, dtype=np.int64), n)
    h = heap[idx]
    c.within("dataset /schedule/op_heap (entries in use)", h, off[owner], off[owner + 1] - 1)
    ok = (h >= 0) & (h < N)
    hh = np.where(ok, h, 0)
    c.holds("dataset /schedule/op_heap (entries in use)",
            ok & send[hh] & (np.asarray(G["schedule/op_wait"])[hh] == 0) & (left[hh] > 0),
            "is not a posted send with packets to start")


def _verify_records(c: _Checks, ck: Checkpoint, prep, G: dict, geo: dict) -> None:
    """The flit records in the rings and the packets being injected: endpoints, routers, VCs,
    flit indices, sequence numbers and cycles within their ranges, destinations' routers
    right, and a flit in an input VC carrying that VC."""
    topo, rp = prep.topo, prep.rp
    nv, pkt, T, E, R = rp.num_vcs, rp.packet_size, ck.cycle, topo.n_endpoints, topo.n_routers
    ep_router = np.asarray(topo.endpoint_router, dtype=np.int64)
    seq = np.asarray(G["endpoints/ep_seq"], dtype=np.int64)
    finite = is_finite(prep.traffic)
    n_msg = int(prep.traffic.msg_pkts.size) if finite else 0
    left = np.asarray(G["endpoints/ep_cur_left"], dtype=np.int64)
    busy = np.nonzero(left > 0)[0]
    cur = np.asarray(G["endpoints/ep_cur_rec"][busy, :NF_USED], dtype=np.int64)
    sets = [(group, G[f"{group}/record"], None)
            for group, ring in RINGS.items() if ring[1] is not None]
    sets.append(("endpoints", cur, busy))
    for group, rec, rows in sets:
        item = (f"dataset /{group}/record" if group != "endpoints"
                else "dataset /endpoints/ep_cur_rec")

        def col(k, rec=rec):
            """Field ``k`` of every record as int64: one column at a time, never the whole
            array widened (the records of a large checkpoint are hundreds of MB)."""
            return np.asarray(rec[:, k], dtype=np.int64)

        def field(name, k, lo, hi):
            c.within(f"{item} ({name})", col(k), lo, hi, rows=rows)
        field("source", F_SRC, 0, E - 1)
        field("destination", F_DST, 0, E - 1)
        c.holds(f"{item} (destination router)", col(F_DSTR) == ep_router[col(F_DST)],
                "is not its destination's router", rows=rows)
        field("sequence", F_SEQ, 0, np.maximum(seq[col(F_SRC)] - 1, -1))
        field("flit", F_FLIT, 0, pkt - 1)
        field("hops", F_HOPS, 0, T)
        field("vc", F_VC, 0, nv - 1)
        field("creation cycle", F_CTIME, 0, T - 1)
        field("injection cycle", F_ITIME, col(F_CTIME), T - 1)
        field("intermediate router", F_MID, -1, R - 1)
        field("message", F_AUX, 0, max(n_msg - 1, 0))
    c.holds("dataset /endpoints/ep_cur_rec (source)", cur[:, F_SRC] == busy,
            "is not its endpoint", rows=busy)
    c.holds("dataset /endpoints/ep_cur_rec (flit)", cur[:, F_FLIT] == pkt - left[busy],
            "is not the packet's next flit", rows=busy)
    cnt = np.asarray(G["input_vcs/ib_cnt"], dtype=np.int64)
    ring_vc = np.repeat(np.arange(cnt.size, dtype=np.int64) % nv, cnt)
    c.holds("dataset /input_vcs/record (vc)", G["input_vcs/record"][:, F_VC] == ring_vc,
            "is not the VC that holds it")


def _verify_owners(c: _Checks, prep, G: dict, geo: dict, draining: int) -> None:
    """Input VCs route to a port of their router; output VCs are free (-1), draining, or held
    by an input VC of their router."""
    nv = prep.rp.num_vcs
    router = geo["router"]
    n_ports = router.size
    vc_router = np.repeat(router, nv)
    out = np.asarray(G["input_vcs/iv_out"], dtype=np.int64)
    c.within("dataset /input_vcs/iv_out", out, IV_DISCARD, n_ports - 1)
    c.holds("dataset /input_vcs/iv_out", (out < 0) | (router[np.maximum(out, 0)] == vc_router),
            "names a port of another router")
    own = np.asarray(G["output_vcs/ov_owner"], dtype=np.int64)
    c.within("dataset /output_vcs/ov_owner", own, min(draining, -1), n_ports * nv - 1)
    c.holds("dataset /output_vcs/ov_owner", (own < 0) | (vc_router[np.maximum(own, 0)] == vc_router),
            "names an input VC of another router")


def _verify_counters(c: _Checks, ck: Checkpoint, prep, G: dict, hop_bins: int) -> None:
    """The counters against each other and the state: the series' sums, the histograms' and
    the per-endpoint counts' totals, and conservation (every flit created is delivered, in a
    source queue or in a buffer)."""
    T, pkt = ck.cycle, prep.rp.packet_size
    st = np.asarray(G["stats/st"], dtype=np.int64)
    low = np.zeros(NSTAT, dtype=np.int64)
    low[S_LAST_MOVE] = -1
    c.within("dataset /stats/st", st, low, np.iinfo(np.int64).max)
    c.within("dataset /stats/st (last move)", st[S_LAST_MOVE:S_LAST_MOVE + 1], -1, T - 1)
    series = np.array(ck.state.series, dtype=np.int64).reshape(-1, 6)
    for k, col, what in ((S_DELIVERED_FLITS, 1, "delivered flits"),
                         (S_INJECTED_FLITS, 2, "injected flits"),
                         (S_CREATED_PKTS, 3, "created packets")):
        c.equal(f"dataset /stats/st ({what})", st[k], series[:, col].sum(),
                "but the samples of /engine/series sum to")
    # flits a failure dropped after injection are neither delivered nor in flight
    lost = st[S_INJECTED_FLITS] - st[S_DELIVERED_FLITS] - st[S_INFLIGHT]
    if not 0 <= lost <= st[S_DROPPED_FLITS]:
        c.fail(f"dataset /stats/st (in flight) is {int(st[S_INFLIGHT])}, but injected minus "
               f"delivered is {int(st[S_INJECTED_FLITS] - st[S_DELIVERED_FLITS])} with "
               f"{int(st[S_DROPPED_FLITS])} flits dropped")
    for k, whole, what in ((S_INJECTED_WIN, S_INJECTED_FLITS, "injected in the window"),
                           (S_DELIVERED_WIN, S_DELIVERED_FLITS, "delivered in the window"),
                           (S_CREATED_MEAS, S_CREATED_PKTS, "measured packets created"),
                           (S_DELIVERED_MEAS, S_CREATED_MEAS, "measured packets delivered")):
        if st[k] > st[whole]:
            c.fail(f"dataset /stats/st ({what}) is {int(st[k])}, more than {int(st[whole])}")
    n_hist = prep.cfg["measure"]["latency_hist_max"] + HIST_SUB * HIST_OCTAVES
    for name in REDUCED:
        h = np.asarray(G[f"stats/{name}"], dtype=np.int64)
        want = hop_bins if name == "hist_hops" else n_hist
        if h.shape != (want,):
            c.fail(f"dataset /stats/{name} has shape {h.shape}, expected ({want},)")
        c.within(f"dataset /stats/{name}", h, 0, np.iinfo(np.int64).max)
        if name != "hist_msg":
            c.equal(f"dataset /stats/{name} (total)", h.sum(), st[S_DELIVERED_MEAS],
                    "but /stats/st counts measured packets delivered:")
    for name, k in (("ep_inj", S_INJECTED_WIN), ("ep_del", S_DELIVERED_WIN)):
        c.equal(f"dataset /endpoints/{name} (total)", np.asarray(G[f"endpoints/{name}"]).sum(),
                st[k], "but /stats/st counts")
    snap = np.asarray(G["routing/snap"])
    want = 2 * prep.topo.n_links if prep.plan.snapshot_every else 1
    if snap.shape != (want,):
        c.fail(f"dataset /routing/snap has shape {snap.shape}, expected ({want},)")
    c.within("dataset /routing/snap", snap, 0, np.iinfo(np.int32).max)
    held = int(np.asarray(G["input_vcs/ib_cnt"], np.int64).sum()
               + np.asarray(G["ports/oq_cnt"], np.int64).sum())
    queued = int(np.asarray(G["endpoints/ep_pending"], np.int64).sum() * pkt
                 + np.asarray(G["endpoints/ep_cur_left"], np.int64).sum())
    c.equal("dataset /stats/st (in flight)", st[S_INFLIGHT], held,
            "but the input VCs and output queues hold")
    dropped = int(st[S_DROPPED_FLITS])
    if int(st[S_CREATED_PKTS]) * pkt != int(st[S_DELIVERED_FLITS]) + dropped + queued + held:
        c.fail(f"conservation: created {int(st[S_CREATED_PKTS]) * pkt} flits (/stats/st) != "
               f"delivered {int(st[S_DELIVERED_FLITS])} + dropped {dropped} + source queues {queued} "
               "(/endpoints/ep_pending, ep_cur_left) + in flight "
               f"{held} (/input_vcs/ib_cnt, /ports/oq_cnt)")


# --------------------------------------------------------------------------- config
def _plain(cfg: dict) -> dict:
    return json.loads(json.dumps(cfg, sort_keys=True))


def config_differences(saved: dict, given: dict) -> list[str]:
    """``section.key (checkpoint X, given Y)`` for every key that differs, except
    :data:`MAY_DIFFER`; a section whose model name differs is reported by that key alone."""
    from pdes.config import CHOSEN

    def flat(c):        # [[jobs]] as one section of N.key entries
        c = dict(c)
        if "jobs" in c:
            c["jobs"] = {f"{i}.{k}": v for i, job in enumerate(c["jobs"]) for k, v in job.items()}
        return c
    a, b = flat(_plain(saved)), flat(_plain(given))

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
                                         for s, body in ck.cfg.items() if s != "jobs"}
    if raw is None and ck.cfg.get("jobs"):
        base["jobs"] = [{k: v for k, v in job.items() if v is not None} for job in ck.cfg["jobs"]]
    cfg = C.resolve(base, sets)
    diff = config_differences(ck.cfg, cfg)
    if diff:
        raise ParameterError(f"restart: the config differs from the checkpoint's in "
                             f"{'; '.join(diff)} (only {', '.join(MAY_DIFFER)} may change)")
    return cfg


# --------------------------------------------------------------------------- restore
def restore(ck: Checkpoint, prep, parts) -> LoopState:
    """Set freshly built ``parts`` (any partition) to the checkpoint's state; its loop state.

    The values are checked first (:func:`verify_state`, the same on every rank); the caller
    then audits the restored parts (:func:`audit_restored`)."""
    ck.check_network(prep)
    G = ck.arrays()
    verify_state(ck, prep, G)
    port_off = port_offsets(prep.topo)
    nv = prep.rp.num_vcs
    starts = {}
    for group, (_, _, _, _, cnt) in RINGS.items():
        c = G[f"{group}/{cnt}"].astype(np.int64)
        starts[group] = np.cumsum(c) - c
    for p in parts:
        _restore_part(p, G, port_off, nv, starts)
    return ck.state


def audit_restored(ck: Checkpoint, prep, group) -> None:
    """The conservation audit (:func:`pdes.reduce.audit`) of the parts of ``group`` restored
    from ``ck`` (collective; every rank gets the same totals): a failure is
    :class:`ParameterError` ``restart: <path> is damaged: conservation audit failed: ...``."""
    try:
        reduce.audit(prep, group)
    except SimulationError as exc:
        raise ParameterError(f"restart: {ck.path} is damaged: {exc}") from None


def _restore_part(part, G: dict, port_off, nv: int, starts: dict) -> None:
    a = part.arrays
    if a["ib_cnt"].any() or a["oq_cnt"].any() or a["cr_cnt"].any():
        raise ValueError("restore: the part is not freshly built")
    part.prm[prm_slots.PR_OCC] = 0      # the kernel builds the port occupancy from ib_cnt
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
                             v)
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
            rec = np.array(G[f"{group}/record"][src], dtype=np.int32)
            _records_in(part, group, ring, j, slot, rec)
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
    if a["op_wait"].size:
        for name in SCHEDULE:
            a[name][...] = G[f"schedule/{name}"]
