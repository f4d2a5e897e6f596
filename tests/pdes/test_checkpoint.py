"""Checkpoint and restart: a run stopped at a sample boundary and continued from its checkpoint,
on any number of parts or ranks, gives the result file of the uninterrupted run.

In-process tests continue golden configs (tests/test_golden.py) and compare with their stored
digests; CLI tests checkpoint under ``mpiexec -n 2`` and restart on 1, 3 and 4 ranks; the MPI
tier (``--with-mpi``) restarts on the world communicator.
"""
import json
import os
import shutil
import signal
import subprocess

import h5py
import numpy as np
import pytest

from models.core.errors import ParameterError
from models.core.record import F_HOPS, F_SRC, F_VC
from pdes import checkpoint as K
from pdes.build import prepare
from pdes.engine import run_local
from pdes.loopstate import EXIT_STOPPED, CheckpointPlan, CheckpointStop
from pdes.kernels import cycle
from tests.golden import golden_cfg, result_digest, stored
from tests.helpers import (assert_same_results, cli_sets, descendants, file_content,
                           first_difference, python_argv, run_pdes, subprocess_env)

CONFIGS = ("min", "ugal_l", "exchange")       # minimal, adaptive, a finite exchange


def stop_at(cfg, prep, cycle_, path, owner=None):
    """Run until the checkpoint at ``cycle_`` and return it opened."""
    with pytest.raises(CheckpointStop) as exc:
        run_local(cfg, owner=owner, prep=prep, checkpoint=CheckpointPlan(str(path), stop_at=cycle_))
    assert exc.value.cycle == cycle_ and exc.value.signum == 0
    return K.open_checkpoint(str(path))


def parts(n, n_routers, shift=0):
    return ((np.arange(n_routers) + shift) % n).astype(np.int32)


@pytest.mark.parametrize("name", CONFIGS)
def test_restart_on_other_part_counts_equals_uninterrupted_run(name, tmp_path):
    """Checkpoints at several cycles (warm-up, window, drain) written on 1 and 2 parts continue on
    1, 2 and 3 parts to the golden digest of the uninterrupted run."""
    cfg = golden_cfg(name)
    prep = prepare(cfg)
    R = prep.topo.n_routers
    want = stored()[name]
    for T, write, read in ((200, None, parts(3, R)), (300, parts(2, R), None),
                           (500, parts(2, R), parts(2, R, shift=1))):
        ck = stop_at(cfg, prep, T, tmp_path / f"{T}.ckpt.h5", owner=write)
        res = run_local(cfg, owner=read, prep=prep, restart=ck)
        assert res["restarted_from_cycle"] == T
        assert result_digest(res, cfg) == want, (name, T)


def test_checkpoint_file_does_not_depend_on_the_partition(tmp_path):
    """The checkpoint of one cycle written by 1 part and by 3 parts is the same file, dataset by
    dataset and attribute by attribute, outside /run (the digests, which cover /run, agree on
    every other item)."""
    cfg = golden_cfg("ugal_l")
    prep = prepare(cfg)
    a = stop_at(cfg, prep, 300, tmp_path / "a.h5")
    b = stop_at(cfg, prep, 300, tmp_path / "b.h5", owner=parts(3, prep.topo.n_routers))
    digests = (K.MANIFEST, K.DIGEST)
    x, y = (file_content(c.path, output_name=True) for c in (a, b))
    for content in (x, y):
        for k in digests:
            del content[f"@{k}"]
    assert first_difference(x, y) is None, first_difference(x, y)
    with h5py.File(a.path) as f, h5py.File(b.path) as g:
        assert ({k: v for k, v in f.attrs.items() if k not in digests}
                == {k: v for k, v in g.attrs.items() if k not in digests})
        ma, mb = (json.loads(h.attrs[K.MANIFEST]) for h in (f, g))
        assert ({k: v for k, v in ma.items() if not k.startswith("/run")}
                == {k: v for k, v in mb.items() if not k.startswith("/run")})
        assert f["run"].attrs["parts"] == 1 and g["run"].attrs["parts"] == 3


def test_periodic_checkpoints_leave_results_unchanged(tmp_path):
    """--checkpoint-every writes at every multiple and does not change the results."""
    cfg = golden_cfg("min")
    seen = []
    plan = CheckpointPlan(str(tmp_path / "c.h5"), every=200, on_write=seen.append)
    res = run_local(cfg, owner=parts(2, 50), checkpoint=plan)
    assert seen == list(range(200, res["summary"]["cycles"], 200))
    assert result_digest(res, cfg) == stored()["min"]
    assert K.open_checkpoint(plan.path).cycle == seen[-1]


def test_every_kernel_array_is_saved_or_rebuilt():
    """Every array of the kernel's mutable state groups is in the checkpoint or is listed as
    rebuilt/empty with a reason (a new state array must be added to the checkpoint)."""
    static = set(cycle.Ports._fields) | set(cycle.Tables._fields) - {"snap"} | \
        {"msg_off", "msg_dst", "msg_pkts", "op_kind", "op_match", "op_soff", "op_succ"}
    saved = {n for _, names in K.TABLES.values() for n in names}
    saved |= {x for ring in K.RINGS.values() for x in ring[1:] if x is not None}
    saved |= set(K.SHARED)
    for G in cycle.GROUPS:
        for f in G._fields:
            assert f in static or f in saved or f in K.NOT_SAVED, f"{G.__name__}.{f}"


def test_other_config_or_code_is_refused(tmp_path):
    """A restart with a config that differs in a result-changing key names the key; keys that
    change no result may differ; a checkpoint of other code is refused."""
    cfg = golden_cfg("min")
    prep = prepare(cfg)
    ck = stop_at(cfg, prep, 200, tmp_path / "c.h5")
    with pytest.raises(ParameterError, match=r"^restart: .*traffic\.load \(checkpoint 0\.5, given 0\.6\)"):
        K.restart_config(ck, None, ["traffic.load=0.6"])
    with pytest.raises(ParameterError, match=r"^restart: .*routing\.algorithm \(checkpoint \"min\""):
        K.restart_config(ck, None, ["routing.algorithm=ugal_l"])
    ok = K.restart_config(ck, None, ["run.partition=block", "output.file=x.h5"])
    assert ok["run"]["partition"] == "block"
    other = tmp_path / "other.h5"
    shutil.copy(ck.path, other)
    with h5py.File(other, "r+") as f:        # as other code would write it: sealed
        f.attrs["source_digest"] = "0123456789abcdef"
        K.seal(f)
    with pytest.raises(ParameterError, match="another code version"):
        K.open_checkpoint(str(other))


# --------------------------------------------------------------------------- CLI
FAST = cli_sets(preset="restart")
CLI = {
    "min": ["--set", "traffic.load=0.5"],
    "ugal_l": ["--set", "routing.algorithm=ugal_l", "--set", "traffic.load=0.8"],
    "exchange": ["--set", "traffic.pattern=alltoall", "--set", "traffic.message_packets=1",
                 "--set", "routing.algorithm=ugal_l"],
}


def pdes(nranks, *args, cwd):
    """`pdes run --quiet ARGS` on ``nranks`` ranks in ``cwd``."""
    return run_pdes("run", "--quiet", *args, nranks=nranks, cwd=cwd, timeout=600)


def assert_restart_equals(ref, other):
    """The restarted run's file ``other`` has the results of the uninterrupted run's ``ref``,
    dataset by dataset and in every attribute, except /run and the output file name."""
    assert_same_results(ref, other)
    with h5py.File(ref) as f, h5py.File(other) as g:
        assert g["run"].attrs["restarted_from_cycle"] > 0 and "restarted_from_cycle" not in f["run"].attrs


@pytest.mark.parametrize("name", sorted(CLI))
def test_cli_checkpoint_on_2_ranks_restart_on_1_3_4(name, tmp_path):
    """`--stop-at` on 2 ranks exits 75 with a checkpoint; `--restart` on 1, 3 and 4 ranks writes
    the file of the uninterrupted 1-rank run."""
    args = FAST + CLI[name]
    r = pdes(1, *args, "-o", "ref.h5", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = pdes(2, *args, "-o", "a.h5", "--stop-at", "300", cwd=tmp_path)
    assert r.returncode == EXIT_STOPPED, r.stderr
    assert "checkpoint written to a.ckpt.h5" in r.stderr and not (tmp_path / "a.h5").exists()
    for n in (1, 3, 4):
        r = pdes(n, "--restart", "a.ckpt.h5", "-o", f"r{n}.h5", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert_restart_equals(tmp_path / "ref.h5", tmp_path / f"r{n}.h5")


def test_sigterm_leaves_a_checkpoint_that_restarts_to_the_same_file(tmp_path):
    """SIGTERM to one rank of a 2-rank run: exit 75, one message, a loadable checkpoint; its
    restart writes the file of the uninterrupted run."""
    args = [*FAST, "--set", "measure.measure_cycles=30000", "--set", "traffic.load=0.3"]
    cmd = python_argv("-m", "pdes", "run", *args, "-o", "s.h5", nranks=2)
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                           env=subprocess_env(), start_new_session=True)
    try:
        seen = []
        for line in job.stderr:          # the partition line: the window loop starts next
            seen.append(line)
            if "] partition " in line:
                break
        ranks = descendants(job.pid, "pdes run")
        assert len(ranks) == 2, (ranks, seen)
        os.kill(max(ranks), signal.SIGTERM)
        _, err = job.communicate(timeout=300)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
    assert job.returncode == EXIT_STOPPED, err
    msgs = [ln for ln in err.splitlines() if ln.startswith("pdes:")]
    assert len(msgs) == 1 and msgs[0].startswith("pdes: terminated by SIGTERM at cycle "), err
    assert not (tmp_path / "s.h5").exists()
    ck = K.open_checkpoint(str(tmp_path / "s.ckpt.h5"))
    assert 0 < ck.cycle < 30000
    r = pdes(1, "--restart", "s.ckpt.h5", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = pdes(1, *args, "-o", "ref.h5", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert_restart_equals(tmp_path / "ref.h5", tmp_path / "s.h5")


def test_bad_restart_and_checkpoint_options_are_one_line_exit_2(tmp_path):
    """Missing, malformed, truncated and foreign restart files, a restart into another config and
    bad checkpoint options: one `pdes: error:` line naming the option, exit 2, no file written."""
    r = pdes(1, *FAST, "-o", "res.h5", "--stop-at", "200", cwd=tmp_path)
    assert r.returncode == EXIT_STOPPED, r.stderr
    (tmp_path / "text.h5").write_text("not hdf5\n")
    (tmp_path / "cut.h5").write_bytes((tmp_path / "res.ckpt.h5").read_bytes()[:4000])
    with h5py.File(tmp_path / "res.ckpt.h5") as f, h5py.File(tmp_path / "part.h5", "w") as g:
        for k, v in f.attrs.items():
            g.attrs[k] = v
        g.create_dataset("input_vcs/ib_cnt", data=f["input_vcs/ib_cnt"][()])
    with h5py.File(tmp_path / "other.h5", "w") as g:
        g.attrs["format"] = "pdes-results"
    cases = [
        (["--restart", "missing.h5"], "restart: file not found"),
        (["--restart", "text.h5"], "restart: text.h5 is not an HDF5 file"),
        (["--restart", "cut.h5"], "restart: cut.h5 is not an HDF5 file"),
        (["--restart", "part.h5"], "restart: part.h5 is damaged: dataset /credits/cr_cnt is missing"),
        (["--restart", "other.h5"], "restart: other.h5 is not a checkpoint (a result file)"),
        (["--restart", "res.ckpt.h5", "--set", "traffic.load=0.7"], "restart: the config differs "
         "from the checkpoint's in traffic.load (checkpoint 0.4, given 0.7)"),
        (["--checkpoint-every", "0", "-o", "x.h5"], "checkpoint-every: must be in [1, "),
        (["--checkpoint-every", "ten", "-o", "x.h5"], "checkpoint-every: expected an integer"),
        (["--stop-at", "-1", "-o", "x.h5"], "stop-at: must be in [1, "),
        (["--checkpoint-every", "100"], "checkpoint: give --checkpoint FILE or an output file"),
        (["--checkpoint", "/dev/null"], "checkpoint: /dev/null exists and is not a regular file"),
        (["-o", "x.h5", "--checkpoint", "x.h5"], "checkpoint: x.h5 is also the output file"),
    ]
    before = sorted(p.name for p in tmp_path.iterdir())
    for args, msg in cases:
        r = pdes(1, *args, cwd=tmp_path)
        lines = [ln for ln in r.stderr.strip().splitlines() if not ln.startswith("[pdes]")]
        assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"pdes: error: {msg}"), \
            (args, r.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


# --------------------------------------------------------------------------- MPI tier
@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name", CONFIGS)
def test_checkpoint_on_the_world_restarts_anywhere(name, tmp_path):
    """A checkpoint written on the world's ranks continues in one process, and one written in one
    process continues on the world's ranks, both to the golden digest."""
    from mpi4py import MPI

    from pdes.engine import simulate
    comm = MPI.COMM_WORLD
    d = comm.bcast(str(tmp_path), root=0)
    cfg = golden_cfg(name)
    path = os.path.join(d, f"{name}.ckpt.h5")
    with pytest.raises(CheckpointStop):
        simulate(cfg, comm, checkpoint=CheckpointPlan(path, stop_at=300))
    ck = K.open_checkpoint(path)
    assert ck.cycle == 300
    res = run_local(cfg, restart=ck)
    assert result_digest(res, cfg) == stored()[name]
    comm.Barrier()
    path2 = os.path.join(d, f"{name}.one.h5")
    if comm.Get_rank() == 0:
        with pytest.raises(CheckpointStop):
            run_local(cfg, checkpoint=CheckpointPlan(path2, stop_at=400))
    comm.Barrier()
    res = simulate(cfg, comm, restart=K.open_checkpoint(path2))
    assert result_digest(res, cfg) == stored()[name]
    comm.Barrier()


def test_checkpoint_attrs_name_the_config_and_code(tmp_path):
    """The checkpoint carries its config (JSON and TOML), the code version and its cycle."""
    cfg = golden_cfg("min")
    ck = stop_at(cfg, prepare(cfg), 200, tmp_path / "c.h5")
    assert json.loads(ck.attrs["config_json"]) == json.loads(json.dumps(cfg))
    assert (ck.attrs["pdes_version"], ck.attrs["source_digest"]) == K.code_version()
    assert ck.cycle == 200 and ck.attrs["format"] == K.FORMAT


def _flit_routers(prep, G, group):
    """The router of every flit of a ring group of a checkpoint (its VC's, or its port's)."""
    nv = prep.rp.num_vcs
    cnt = G[f"{group}/{'ib_cnt' if group == 'input_vcs' else 'oq_cnt'}"].astype(np.int64)
    ring = np.repeat(np.arange(cnt.size), cnt)
    port = ring // nv if group == "input_vcs" else ring
    return ring, np.searchsorted(K.port_offsets(prep.topo), port, side="right") - 1


def test_a_checkpoint_holds_the_vc_and_the_links_of_every_buffered_flit(tmp_path):
    """Every flit of a checkpoint has the VC it sits in (an input VC's, or the one it leaves
    an output queue on) and, with minimal routing, as many hops as the distance from its
    source router to its router, routed or not (the kernel counts a head's last link when it
    routes it, and keeps the VC of a queued flit in the queue)."""
    cfg = golden_cfg("min-saturated")
    prep = prepare(cfg)
    ck = stop_at(cfg, prep, 300, tmp_path / "c.h5", owner=parts(2, prep.topo.n_routers))
    G = ck.arrays()
    nv = prep.rp.num_vcs
    src = np.asarray(prep.topo.endpoint_router)
    # heads not routed yet: behind another flit, or at the front of a VC without a route
    cnt = G["input_vcs/ib_cnt"].astype(np.int64)
    assert (cnt >= 2).sum() > 20 and ((cnt >= 1) & (G["input_vcs/iv_out"] < 0)).any()
    for group in ("input_vcs", "ports"):
        ring, router = _flit_routers(prep, G, group)
        rec = G[f"{group}/record"]
        assert rec.shape[0] > 100
        hops = prep.dist[src[rec[:, F_SRC]], router]
        np.testing.assert_array_equal(rec[:, F_HOPS], hops, err_msg=group)
        if group == "input_vcs":
            np.testing.assert_array_equal(rec[:, F_VC], ring % nv)
        else:
            assert 0 <= rec[:, F_VC].min() and rec[:, F_VC].max() == nv - 1


@pytest.mark.parametrize("name", ["min-saturated", "multiflit"])
def test_routing_a_head_again_uncounts_its_link(name, tmp_path):
    """A head routed but not allocated a VC, made to route again (a failure's reroute:
    pdes.failure.unroute), has the hops of a head not routed yet: the part's capture is
    unchanged."""
    from pdes import failure
    from tests.helpers import one_part
    cfg = golden_cfg(name)
    prep = prepare(cfg)
    ck = stop_at(cfg, prep, 300, tmp_path / "c.h5")
    part = one_part(prep)
    K.restore(ck, prep, [part])
    a = part.arrays
    port_off, E = K.port_offsets(prep.topo), prep.topo.n_endpoints
    before = K.capture(part, port_off, E)
    waiting = (a["iv_alloc"] == 0) & (a["iv_out"] >= 0)
    assert (waiting & np.repeat(part.is_net, prep.rp.num_vcs)).sum() > 5
    failure.unroute(part, waiting)
    after = K.capture(part, port_off, E)
    assert np.all(a["iv_out"][waiting] == -1)
    for key in ("input_vcs/record", "ports/record"):
        np.testing.assert_array_equal(before[key], after[key], err_msg=key)
