"""HDF5 result files (schema in the README, "Output").

Written by one process to ``<name>.tmp-<pid>`` and renamed when complete, so
a file with the final name is always whole.  Everything that depends on the
wall clock or on the rank count (timings, window, lookahead, partition) lives
under ``/run``; all other groups and attributes are identical for the same
config on any number of ranks.
"""
from __future__ import annotations

import json

import numpy as np

from pdes.files import hdf5_written
from pdes.sizing import buffer_note

FORMAT = "pdes-results"
FORMAT_VERSION = 1

SERIES_COLUMNS = ("cycle", "delivered_flits", "injected_flits", "created_packets", "moves",
                  "in_flight_flits")



_DCPL = None


def put(group, name: str, value) -> None:
    """``group.create_dataset(name, data=value)``, through h5py's low-level calls: the same
    dataset (type, shape, layout, no time stamps) at a third of the cost, which counts for
    the ~130 small datasets of every point of a study."""
    global _DCPL
    import h5py
    from h5py import h5d, h5p, h5s, h5t
    if _DCPL is None:
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_obj_track_times(False)          # as h5py's default
        if h5py.get_config().track_order:
            dcpl.set_attr_creation_order(h5p.CRT_ORDER_TRACKED | h5p.CRT_ORDER_INDEXED)
        else:
            dcpl.set_attr_creation_order(0)
        _DCPL = dcpl
    if isinstance(value, str):
        data = np.array(value, dtype=h5py.string_dtype())
    elif isinstance(value, bytes):
        data = np.array(value, dtype=h5py.string_dtype("ascii"))
    else:
        data = np.asarray(value, order="C")
        if data.dtype.kind in "OUS":     # anything else: h5py's own rules
            group.create_dataset(name, data=value)
            return
    tid = h5t.py_create(data.dtype, logical=1)
    dset = h5d.create(group.id, name.encode(), tid, h5s.create_simple(data.shape), dcpl=_DCPL)
    dset.write(h5s.ALL, h5s.ALL, data)



def put_histogram(group, name: str, value) -> None:
    """A latency histogram (``latency_hist_max`` + 512 bins, nearly all zero) compressed
    with gzip level 1 and the shuffle filter: 135 KB -> about 4 KB each for +0.3 ms, so a
    study's points and its file stay small.  Any HDF5 reader decompresses it."""
    group.create_dataset(name, data=value, compression="gzip", compression_opts=1, shuffle=True)


def write_results(path: str, res: dict, cfg_toml: str, *, nranks: int, partition: dict | None,
                  version: str) -> None:
    """Write one run's results to ``path`` (through a temporary name, renamed when whole)."""
    with hdf5_written(path) as f:
        write_run(f, res, cfg_toml, nranks=nranks, partition=partition, version=version)


def run_image(res: dict, cfg_toml: str, *, nranks: int, partition: dict | None, version: str) -> bytes:
    """One run's result file, as the bytes of an HDF5 file held in memory."""
    import io

    import h5py
    buf = io.BytesIO()
    with h5py.File(buf, "w") as f:
        write_run(f, res, cfg_toml, nranks=nranks, partition=partition, version=version)
    return buf.getvalue()


class Shared:
    """What a study file already holds that the next point may hold too: its config
    sections and its network's arrays (the topology's links, routers and endpoints, link
    latencies and lengths, the histogram's bin edges), by content.

    A point whose section or array equals one written before gets an HDF5 hard link to it:
    the same object under a second name, read like any other (HDF5 counts its names).  A
    point of SF q=5 writes 129 datasets; in a sweep of routings and loads 75 of them are
    links after the first point of each network."""

    def __init__(self):
        self.groups: dict = {}        # (name, JSON text) -> path
        self.arrays: dict = {}        # name -> [(array, path)]

    def group(self, parent, name: str, text: str) -> bool:
        """Link ``parent[name]`` to the group written with the same ``text``, if any."""
        path = self.groups.get((name, text))
        if path is None:
            return False
        parent[name] = parent.file[path]
        return True

    def put(self, parent, name: str, value, writer=None) -> None:
        """``put(parent, name, value)`` (or ``writer``), or a link to an equal array."""
        value = np.asarray(value)
        seen = self.arrays.setdefault(name, [])
        for old, path in seen:
            if old.dtype == value.dtype and old.shape == value.shape and np.array_equal(old, value):
                parent[name] = parent.file[path]
                return
        (writer or put)(parent, name, value)
        if len(seen) < 4:            # a few networks per study; more are written, not linked
            seen.append((value, parent[name].name))


def write_run(f, res: dict, cfg_toml: str, *, nranks: int, partition: dict | None,
              version: str, shared: Shared | None = None) -> None:
    """Write one run's results into the HDF5 group (or file) ``f``: the schema of a run file.
    ``shared``: the config sections and network arrays already in the file (a study's)."""
    prep = res["prepared"]
    sput = shared.put if shared is not None else (lambda g, n, v, writer=None: (writer or put)(g, n, v))
    topo = prep.topo
    f.attrs["format"] = FORMAT
    f.attrs["format_version"] = FORMAT_VERSION
    f.attrs["pdes_version"] = version
    f.attrs["config_toml"] = cfg_toml
    f.attrs["seed"] = int(prep.cfg["measure"]["seed"])
    f.attrs["num_vcs"] = int(prep.rp.num_vcs)
    f.attrs["routing_vc_scheme"] = prep.plan.vc_scheme
    f.attrs["routing_max_hops"] = int(prep.plan.max_hops)
    f.attrs["traffic"] = prep.traffic.description
    f.attrs["topology_params"] = json.dumps(_jsonable(topo.params), sort_keys=True)
    f.attrs["buffer_note"] = buffer_note(prep)
    if prep.deadlock_warning:      # routing.vcs = "any" on a routing that can deadlock
        f.attrs["deadlock_warning"] = prep.deadlock_warning
    for k, v in prep.provenance.items():     # the input files' digests (pdes.provenance)
        f.attrs[k] = v
    write_config(f.create_group("config"), prep.cfg, shared)
    if prep.failure is not None:              # a failure during the run (pdes.failure)
        write_failure(f.create_group("faults"), prep.failure)
    elif topo.is_degraded:
        write_faults(f.create_group("faults"), topo)
    s = f.create_group("summary")
    for k, v in res["summary"].items():
        put(s, k, v)
    c = f.create_group("counters")
    for k, v in res["counters"].items():
        put(c, k, np.int64(v))
    h = f.create_group("hist")
    put_histogram(h, "packet_latency", res["hist_packet_latency"])
    put_histogram(h, "network_latency", res["hist_network_latency"])
    put(h, "hops", res["hist_hops"])
    sput(h, "latency_edges", res["hist_latency_edges"], put_histogram)
    if res.get("hist_message_latency") is not None:
        put_histogram(h, "message_latency", res["hist_message_latency"])
    if res.get("workload") is not None:        # a schedule (docs/workloads.md#results)
        w = f.create_group("workload")
        for k, v in res["workload"].items():
            put(w, k, v)
    if res.get("jobs"):            # several jobs (docs/workloads.md#several-jobs)
        jg = f.create_group("jobs")
        jg.attrs["names"] = json.dumps(list(res["jobs"]))
        for name, vals in res["jobs"].items():
            g = jg.create_group(name)
            for k, v in vals.items():
                put(g, k, v)
    ln = f.create_group("links")
    sput(ln, "routers", topo.links.astype(np.int32))
    sput(ln, "latency_cycles", np.asarray(prep.link_latency, np.int64))
    if prep.cable_m is not None:
        sput(ln, "cable_m", np.asarray(prep.cable_m, np.float64))
    sput(ln, "link_class", topo.link_class)
    ln.attrs["link_class_names"] = json.dumps(list(topo.link_class_names))
    if prep.cfg["output"]["per_link"]:
        put(ln, "channel_flits", res["link_flits"])
    ep = f.create_group("endpoints")
    sput(ep, "router", topo.endpoint_router)
    if prep.cfg["output"]["per_endpoint"]:
        put(ep, "injected_flits", res["endpoint_injected"])
        put(ep, "delivered_flits", res["endpoint_delivered"])
    sr = f.create_group("series")
    sr.attrs["sample_period"] = int(prep.cfg["measure"]["sample_period"])
    for i, name in enumerate(SERIES_COLUMNS):
        put(sr, name, res["series"][:, i])
    rt = f.create_group("routers")
    sput(rt, "endpoints", topo.endpoints)
    sput(rt, "group", topo.group)
    tm = f.create_group("run")
    for k, v in res["timing"].items():
        tm.attrs[k] = float(v)
    tm.attrs["nranks"] = int(nranks)
    tm.attrs["window"] = int(res["window"])
    tm.attrs["lookahead"] = int(res["lookahead"])
    if res.get("peak_rss_mb") is not None:
        tm.attrs["peak_rss_mb"] = float(res["peak_rss_mb"])
    if res.get("next_hops") is not None:
        tm.attrs["next_hop_table"] = res["next_hops"]["kind"]
        tm.attrs["next_hop_bytes"] = int(res["next_hops"]["bytes"])
    if res.get("restarted_from_cycle") is not None:
        tm.attrs["restarted_from_cycle"] = int(res["restarted_from_cycle"])
    if partition is not None:
        pg = tm.create_group("partition")
        for k, v in partition.items():
            if isinstance(v, np.ndarray):
                put(pg, k, v)
            else:
                pg.attrs[k] = v
    f.attrs["complete"] = True


def write_faults(g, topo) -> None:
    """The fault set of a degraded network (``/faults``, ids of the intact network)."""
    fs = topo.meta["fault_set"]
    put(g, "failed_links", np.asarray(fs.link_pairs, dtype=np.int32).reshape(-1, 2))
    put(g, "failed_routers", np.asarray(fs.routers, dtype=np.int32))
    put(g, "cut_off_routers", np.asarray(fs.cut_off, dtype=np.int32))
    for k, v in topo.meta["faults"].items():
        g.attrs[k] = int(v)
    g.attrs["description"] = fs.description


def write_failure(g, failure) -> None:
    """The fault set of a failure during the run (``/faults``), with its cycle."""
    fs = failure.fs
    put(g, "failed_links", np.asarray(fs.link_pairs, dtype=np.int32).reshape(-1, 2))
    put(g, "failed_routers", np.asarray(fs.routers, dtype=np.int32))
    put(g, "cut_off_routers", np.asarray(fs.cut_off, dtype=np.int32))
    for k, v in failure.attrs().items():
        g.attrs[k] = int(v)
    g.attrs["description"] = fs.description


def write_config(g, cfg: dict, shared: Shared | None = None) -> None:
    """The resolved config as datasets ``<section>/<key>`` (``None`` values omitted).

    Strings are string datasets, numbers and booleans scalars, lists arrays (a
    list that numpy cannot make a plain array of is stored as its JSON text).
    With ``shared``, a section equal to one already in the file is a link to it.
    """
    for section, body in cfg.items():
        text = None
        if shared is not None:
            text = json.dumps(body, sort_keys=True, default=repr)
            if shared.group(g, section, text):
                continue
        sg = g.create_group(section)
        if text is not None:
            shared.groups[(section, text)] = sg.name
        if section == "jobs":          # one group per job: jobs/<N>/<key>
            for i, job in enumerate(body):
                jg = sg.create_group(str(i))
                for key, value in job.items():
                    if value is not None:
                        put(jg, key, config_value(value))
            continue
        for key, value in body.items():
            if value is None:
                continue
            put(sg, key, config_value(value))


def config_value(value):
    """A config value as something h5py stores: scalar, string or array."""
    if isinstance(value, (list, tuple)):
        arr = np.asarray(value)
        if arr.dtype.kind in "biuf" and arr.size:
            return arr
        return json.dumps(value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return value


def _jsonable(obj):
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return obj
