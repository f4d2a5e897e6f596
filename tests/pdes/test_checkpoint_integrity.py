"""Checkpoints that verify themselves: a damaged or inconsistent checkpoint is refused with
`restart: <path> is damaged: <what>`, naming the dataset or attribute, before any cycle runs
(exit 2 on every rank, no output file); an intact one passes every check.

One checkpoint of a small run (golden config ``min``: Slim Fly q=5, cycle 400, inside the
measurement window) is written once per module; every case damages a copy of it.  Most cases
call the checks in-process (:func:`pdes.checkpoint.open_checkpoint`,
:func:`pdes.checkpoint.verify_state`); a few run ``pdes run --restart`` on 1 rank, and the
MPI tier under ``mpiexec -n 2``.
"""
import os
import shutil

import h5py
import numpy as np
import pytest

from models.core.errors import ParameterError
from models.core.record import F_DSTR, F_SRC, F_VC, S_CREATED_PKTS, S_INFLIGHT
from pdes import checkpoint as K
from pdes.build import prepare
from pdes.engine import run_local
from pdes.loopstate import CheckpointPlan, CheckpointStop
from tests.golden import golden_cfg, result_digest, stored
from tests.helpers import run_pdes

CYCLE = 400


def write_checkpoint(directory) -> tuple:
    """(config, prepared run, path) of the checkpoint at cycle 400 of golden config ``min``."""
    cfg = golden_cfg("min")
    prep = prepare(cfg)
    path = os.path.join(str(directory), "c.h5")
    with pytest.raises(CheckpointStop):
        run_local(cfg, prep=prep, checkpoint=CheckpointPlan(path, stop_at=CYCLE))
    return cfg, prep, path


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    return write_checkpoint(tmp_path_factory.mktemp("ckpt"))


def copy(written, tmp_path, name: str) -> str:
    path = str(tmp_path / name)
    shutil.copy(written[2], path)
    return path


def datasets(path) -> list[str]:
    """The names of the file's datasets that hold data."""
    out = []
    with h5py.File(path) as f:
        f.visititems(lambda n, o: out.append(n) if isinstance(o, h5py.Dataset) and o.size else None)
    return out


def flip_bits(path, name: str, mask: int = 0x24) -> None:
    """Flip bits of one byte in the middle of the first stored chunk of dataset ``name``, in the
    file's raw bytes (HDF5 is not asked: its checksums stay as written)."""
    with h5py.File(path) as f:
        d = f[name]
        if d.chunks is not None:
            info = d.id.get_chunk_info(0)
            at = info.byte_offset + (info.size - 4) // 2      # the data, not the checksum
        else:
            at = d.id.get_offset() + d.id.get_storage_size() // 2
    with open(path, "r+b") as fh:
        fh.seek(at)
        b = fh.read(1)[0]
        fh.seek(at)
        fh.write(bytes([b ^ mask]))


def altered(v):
    """Another value of an attribute's type (one bit flipped for numbers)."""
    if isinstance(v, str):
        return v + " "
    if isinstance(v, (bool, np.bool_)):
        return not v
    if isinstance(v, (int, np.integer)):
        return type(v)(int(v) ^ 4)
    if isinstance(v, (float, np.floating)):
        return (np.array([v], np.float64).view(np.int64) ^ 1 << 20).view(np.float64)[0]
    raise AssertionError(f"attribute of type {type(v)}")


def refused(path, prep=None) -> str:
    """The message that refuses the checkpoint: on opening it, else (``prep``) on checking its
    values against the config."""
    with pytest.raises(ParameterError) as exc:
        ck = K.open_checkpoint(path)
        if prep is not None:
            K.verify_state(ck, prep, ck.arrays())
    msg = str(exc.value)
    assert msg.startswith(f"restart: {path} is damaged: "), msg
    return msg[len(f"restart: {path} is damaged: "):]


def test_intact_checkpoint_passes_every_check_and_restarts(written, tmp_path):
    """The checkpoint as written opens, passes the value checks and continues on 3 parts to the
    golden digest of the uninterrupted run."""
    cfg, prep, path = written
    ck = K.open_checkpoint(path)
    K.verify_state(ck, prep, ck.arrays())
    with h5py.File(path) as f:
        assert all(f[n].fletcher32 for n in datasets(path))
    owner = (np.arange(prep.topo.n_routers) % 3).astype(np.int32)
    res = run_local(cfg, owner=owner, prep=prep, restart=ck)
    assert result_digest(res, cfg) == stored()["min"]


def test_flipped_bits_in_any_dataset_are_refused_naming_it(written, tmp_path):
    """Bits flipped in the stored bytes of any dataset fail its Fletcher-32 checksum, and a value
    rewritten through HDF5 (checksums recomputed) fails the digest; both name the dataset."""
    names = datasets(written[2])
    assert len(names) > 40
    for i, name in enumerate(names):
        path = copy(written, tmp_path, f"flip{i}.h5")
        flip_bits(path, name)
        assert refused(path) == f"dataset /{name} fails its Fletcher-32 checksum"
        path = copy(written, tmp_path, f"edit{i}.h5")
        with h5py.File(path, "r+") as f:
            v = f[name][()]
            v.flat[v.size // 2] ^= 4
            f[name][...] = v
        assert refused(path) == f"dataset /{name} does not match its digest"


def test_any_attribute_changed_is_refused_naming_it(written, tmp_path):
    """Any attribute of any group changed (cycle to -200 or 10**9 among them), the digests
    themselves changed or removed, or an attribute added: refused, naming the attribute."""
    with h5py.File(written[2]) as f:
        items = [(k, "/", v) for k, v in f.attrs.items() if k not in (K.MANIFEST, K.DIGEST)]
        f.visititems(lambda n, o: items.extend((k, n, v) for k, v in o.attrs.items()))
    assert len(items) > 25
    cases = [(key, obj, altered(v), f"attribute {'/' if obj == '/' else '/' + obj}@{key} "
              "does not match its digest") for key, obj, v in items]
    cases += [("cycle", "/", -200, "attribute /@cycle does not match its digest"),
              ("cycle", "/", 10 ** 9, "attribute /@cycle does not match its digest"),
              (K.MANIFEST, "/", None, f"attribute /@{K.MANIFEST} does not match /@{K.DIGEST}"),
              (K.DIGEST, "/", "0" * 64, f"attribute /@{K.MANIFEST} does not match /@{K.DIGEST}"),
              ("extra", "engine", 1, "attribute /engine@extra is not covered by the digest "
               "(added after writing)")]
    for i, (key, obj, value, msg) in enumerate(cases):
        path = copy(written, tmp_path, f"a{i}.h5")
        with h5py.File(path, "r+") as f:
            attrs = f[obj].attrs
            attrs[key] = altered(attrs[key]) if value is None else value
        assert refused(path) == msg, (key, obj)
    path = copy(written, tmp_path, "nodigest.h5")
    with h5py.File(path, "r+") as f:
        del f.attrs[K.DIGEST]
    assert refused(path) == f"attribute /@{K.DIGEST} is missing"


# --------------------------------------------------------------------------- values
def set_attr(obj, key, value):
    def edit(f):
        f[obj].attrs[key] = value
    return edit


def set_entry(name, index, value=None, add=0):
    """Set (or add to) one entry of a dataset: ``index`` an int, a tuple, or a function of the
    file giving one."""
    def edit(f):
        v = f[name][()]
        i = index(f) if callable(index) else index
        v[i] = value(f) if callable(value) else (v[i] + add if value is None else value)
        f[name][...] = v
    return edit


def replace(name, fn):
    """Rewrite a dataset as ``fn`` of its value (its shape may change)."""
    def edit(f):
        v = fn(f[name][()], f)
        del f[name]
        f.create_dataset(name, data=v)
    return edit


def set_count(name, value):
    """Set the first ring of ``name`` that holds flits to ``value`` and give the difference to
    the next one (the total stays: the rings' contents still add up)."""
    def edit(f):
        c = f[name][()].astype(np.int64)
        first, second = np.nonzero(c)[0][:2]
        c[second] += c[first] - value
        c[first] = value
        f[name][...] = c
    return edit


def other_router_port(f):
    """A global port of router 1 (the network is regular: every router has n_ports / n_routers
    ports), which no input or output VC of router 0 may name."""
    return int(f.attrs["n_ports"] // f.attrs["n_routers"]) + 1


VALUES = [   # (case, edit of the file, the start of the message)
    ("cycle -200", set_attr("/", "cycle", -200), "attribute /@cycle is -200, not a sample boundary"),
    ("cycle 10**9", set_attr("/", "cycle", 10 ** 9), "attribute /@cycle is 1000000000, past the last"),
    ("cycle off a boundary", set_attr("/", "cycle", 450), "attribute /@cycle is 450, not a sample"),
    ("cycle of another sample", set_attr("/", "cycle", 300), "dataset /engine/series has 4 rows, "
     "cycle 300 needs 3"),
    ("m0", set_attr("engine", "m0", 300), "attribute /engine@m0 is 300: the window starts at a "
     "sample boundary in [200, 200]"),
    ("m1", set_attr("engine", "m1", 600), "attribute /engine@m1 is 600, not m0 + "
     "measure.measure_cycles = 500"),
    ("phase drain", set_attr("engine", "phase", "drain"), "attribute /engine@phase is 'drain' at "
     "cycle 400, outside [500, 800)"),
    ("phase warmup", set_attr("engine", "phase", "warmup"), "attribute /engine@phase is 'warmup' "
     "at cycle 400"),
    ("phase unknown", set_attr("engine", "phase", "cooldown"), "attribute /engine@phase is "
     "'cooldown', not warmup"),
    ("saturated", set_attr("engine", "saturated", True), "attributes /engine@saturated, reason"),
    ("prev_rate", set_attr("engine", "prev_rate", 0.4446), "attribute /engine@prev_rate is 0.4446"),
    ("series cut to 2 rows", replace("engine/series", lambda v, f: v[:2]),
     "dataset /engine/series has 2 rows, cycle 400 needs 4"),
    ("series with a gap", set_entry("engine/series", (2, 0), 350),
     "dataset /engine/series: entry 2 is not the cycle of its sample"),
    ("input VC over its capacity", set_count("input_vcs/ib_cnt", 1000),
     "dataset /input_vcs/ib_cnt: entry "),
    ("input VC count negative", set_count("input_vcs/ib_cnt", -1),
     "dataset /input_vcs/ib_cnt: entry "),
    ("ring count without its flits", set_entry("input_vcs/ib_cnt", 0, add=1),
     "dataset /input_vcs/ready holds "),
    ("output queue over its capacity", set_count("ports/oq_cnt", 1000),
     "dataset /ports/oq_cnt: entry "),
    ("credits over the capacity", set_entry("credits/cred", 0, 1000),
     "dataset /credits/cred: entry 0 is 1000, outside [0, "),
    ("ov_owner below OV_DRAINING", set_entry("output_vcs/ov_owner", 0, -3),
     "dataset /output_vcs/ov_owner: entry 0 is -3, outside [-2, "),
    ("ov_owner of another router", set_entry("output_vcs/ov_owner", 0,
                                             lambda f: other_router_port(f) * f.attrs["num_vcs"]),
     "dataset /output_vcs/ov_owner: entry 0 names an input VC of another router"),
    ("iv_out of another router", set_entry("input_vcs/iv_out", 0, other_router_port),
     "dataset /input_vcs/iv_out: entry 0 names a port of another router"),
    ("iv_out past the ports", set_entry("input_vcs/iv_out", 0, 10 ** 6),
     "dataset /input_vcs/iv_out: entry 0 is 1000000, outside "),
    ("ep_pending negative", set_entry("endpoints/ep_pending", 3, -1),
     "dataset /endpoints/ep_pending: entry 3 is -1, outside [0, "),
    ("ep_pending huge", set_entry("endpoints/ep_pending", 3, 2 ** 40),
     "dataset /endpoints/ep_pending: entry 3 is 1099511627776, outside [0, "),
    ("packet being injected", set_entry("endpoints/ep_cur_left", 5, 2),
     "dataset /endpoints/ep_cur_left: entry 5 is 2, outside [0, 1]"),
    ("record source", set_entry("input_vcs/record", (0, F_SRC), 10 ** 6),
     "dataset /input_vcs/record (source): entry 0 is 1000000, outside [0, "),
    ("record destination router", set_entry("input_vcs/record", (0, F_DSTR), add=1),
     "dataset /input_vcs/record (destination router): entry 0 is not its destination's router"),
    ("record VC", set_entry("input_vcs/record", (0, F_VC),
                            lambda f: (f["input_vcs/record"][0, F_VC] + 1) % f.attrs["num_vcs"]),
     "dataset /input_vcs/record (vc): entry 0 is not the VC that holds it"),
    ("flits in flight", set_entry("stats/st", S_INFLIGHT, add=1), "dataset /stats/st (in flight)"),
    ("created packets", set_entry("stats/st", S_CREATED_PKTS, add=1),
     "dataset /stats/st (created packets) is "),
    ("histogram total", set_entry("stats/hist_plat", 5, add=1), "dataset /stats/hist_plat (total) is "),
    ("snapshot length", replace("routing/snap", lambda v, f: np.zeros(7, np.int32)),
     "dataset /routing/snap has shape (7,), expected (1,)"),
    ("conservation", set_entry("endpoints/ep_pending", 3, add=1), "conservation: created "),
]


@pytest.mark.parametrize("case,edit,msg", VALUES, ids=[v[0] for v in VALUES])
def test_values_out_of_range_are_refused_naming_them(written, tmp_path, case, edit, msg):
    """A checkpoint sealed again after a change (so its digests match) is still refused when a
    value is out of its range or the counts do not add up; the message names the value."""
    path = copy(written, tmp_path, "v.h5")
    with h5py.File(path, "r+") as f:
        edit(f)
        K.seal(f)
    assert refused(path, written[1]).startswith(msg)


def test_restart_audits_conservation_after_restoring(written, tmp_path, monkeypatch):
    """Without the value checks, a restart still runs the conservation audit on the restored
    parts before the first cycle and refuses what does not add up."""
    cfg, prep, _ = written
    path = copy(written, tmp_path, "audit.h5")
    with h5py.File(path, "r+") as f:
        set_entry("endpoints/ep_pending", 3, add=1)(f)
        K.seal(f)
    monkeypatch.setattr(K, "verify_state", lambda ck, prep, G: None)
    with pytest.raises(ParameterError, match=rf"^restart: {path} is damaged: conservation audit "
                       r"failed: created \d+ flits != delivered"):
        run_local(cfg, prep=prep, restart=K.open_checkpoint(path))


# --------------------------------------------------------------------------- CLI
def damaged_copies(written, d) -> list:
    """(file, what the message names) of damaged copies written into directory ``d``."""
    out = []
    for name, ds in (("ready.h5", "input_vcs/ready"), ("pending.h5", "endpoints/ep_pending")):
        shutil.copy(written[2], os.path.join(d, name))
        flip_bits(os.path.join(d, name), ds)
        out.append((name, f"dataset /{ds} fails its Fletcher-32 checksum"))
    for name, edit, msg in (("cycle.h5", set_attr("/", "cycle", 10 ** 9), "attribute /@cycle is "
                                                                           "1000000000"),
                            ("series.h5", replace("engine/series", lambda v, f: v[:2]),
                             "dataset /engine/series has 2 rows")):
        shutil.copy(written[2], os.path.join(d, name))
        with h5py.File(os.path.join(d, name), "r+") as f:
            edit(f)
            K.seal(f)
        out.append((name, msg))
    return out


def test_cli_restart_of_a_damaged_checkpoint_is_one_line_exit_2(written, tmp_path):
    """`pdes run --restart` of a damaged checkpoint (flipped bits, or values out of range in a
    file sealed again): exit 2, one `pdes: error: restart: ... is damaged` line naming the
    dataset or attribute, no traceback, no file written."""
    cases = damaged_copies(written, str(tmp_path))
    before = sorted(os.listdir(tmp_path))
    for name, what in cases:
        r = run_pdes("run", "--quiet", "--restart", name, "-o", "out.h5", cwd=tmp_path)
        lines = [ln for ln in r.stderr.strip().splitlines() if not ln.startswith("[pdes]")]
        assert r.returncode == 2 and len(lines) == 1, (name, r.stderr)
        assert lines[0].startswith(f"pdes: error: restart: {name} is damaged: {what}"), r.stderr
        assert sorted(os.listdir(tmp_path)) == before
        assert r.stdout == ""


@pytest.mark.mpi(min_size=2)
def test_damaged_checkpoint_under_mpi_is_exit_2_on_every_rank(tmp_path, capfd):
    """Under MPI a damaged checkpoint (a failed checksum found on opening, a value out of range
    found after building the network) gives status 2 on every rank, one error line (rank 0)
    and no file written."""
    from mpi4py import MPI

    from pdes.cli import main
    comm = MPI.COMM_WORLD
    d = comm.bcast(str(tmp_path), root=0)
    cases = None
    if comm.Get_rank() == 0:
        written = write_checkpoint(d)
        cases = [c for c in damaged_copies(written, d) if c[0] in ("pending.h5", "cycle.h5")]
    cases = comm.bcast(cases, root=0)
    here = os.getcwd()
    os.chdir(d)
    try:
        before = sorted(os.listdir(d))
        for name, what in cases:
            capfd.readouterr()
            status = main(["run", "--quiet", "--restart", name, "-o", "out.h5"])
            err = capfd.readouterr().err
            assert comm.allgather(status) == [2] * comm.Get_size(), (name, err)
            lines = [ln for ln in err.strip().splitlines() if ln and not ln.startswith("[pdes]")]
            if comm.Get_rank() == 0:
                assert len(lines) == 1, err
                assert lines[0].startswith(f"pdes: error: restart: {name} is damaged: {what}"), err
            else:
                assert lines == [], err
            comm.Barrier()
            assert sorted(os.listdir(d)) == before
    finally:
        os.chdir(here)
        comm.Barrier()
