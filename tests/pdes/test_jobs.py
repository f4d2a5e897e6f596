"""Several jobs sharing the network ([[jobs]], models.jobs): config, placement, results."""
import h5py
import numpy as np
import pytest

from models.core.errors import ParameterError
from pdes import config as C
from pdes.build import prepare
from pdes.engine import run_local
from tests.helpers import assert_same_results, cli_sets, make_cfg, run_pdes

CANARY = ["jobs.0.name=canary", "jobs.0.pattern=allreduce", "jobs.0.procs=8",
          "jobs.0.placement=random", "jobs.0.bytes=512", "jobs.0.iterations=3"]
CONGESTOR = ["jobs.1.name=congestor", "jobs.1.pattern=alltoall_collective", "jobs.1.procs=40",
             "jobs.1.bytes=2048", "jobs.1.algorithm=posted"]


def cfg_of(*sets):
    return make_cfg(*sets, preset="exchange")


def test_jobs_resolve_print_and_read_back():
    """[[jobs]] entries resolve with their pattern's defaults, print as [[jobs]] tables and
    resolve again from that text to the same config."""
    import tomllib
    cfg = cfg_of(*CANARY, *CONGESTOR)
    assert [j["name"] for j in cfg["jobs"]] == ["canary", "congestor"]
    assert cfg["jobs"][0]["algorithm"] == "ring" and cfg["jobs"][1]["placement"] == "linear"
    text = C.to_toml(cfg)
    assert text.count("[[jobs]]") == 2
    assert C.resolve(tomllib.loads(text)) == cfg


@pytest.mark.parametrize("sets, err", [
    (["jobs.0.pattern=allreduce", "jobs.2.pattern=barrier"], r"jobs\.2\.pattern=barrier: job 2 given before job 1"),
    (["jobs.0.pattern=nosuch"], r"jobs\.0\.pattern: unknown traffic 'nosuch'"),
    (["jobs.0.procs=4"], r"jobs\.0\.pattern: required"),
    (["jobs.0.pattern=allreduce", "jobs.0.bytes=-1"], r"jobs\.0\.bytes"),
    (["jobs.0.pattern=allreduce", "jobs.0.color=red"], r"jobs\.0\.color: unknown parameter"),
    (["jobs.0.pattern=allreduce", "jobs.1.pattern=barrier", "jobs.1.name=job0"],
     r"jobs\.1\.name: 'job0' names an earlier job"),
    (["jobs.0.pattern=allreduce", "jobs.0.name=a/b"], r"jobs\.0\.name: 'a/b' cannot name a group"),
    (["jobs.0.pattern=allreduce", "jobs.0.name=/summary"], r"jobs\.0\.name: '/summary' cannot"),
    (["jobs.0.pattern=allreduce", "jobs.0.name=."], r"jobs\.0\.name: '\.' cannot name a group"),
    (["jobs.0.pattern=allreduce", "traffic.pattern=shift"], r"traffic\.pattern: a config with \[\[jobs\]\]"),
    (["jobs.0.pattern=allreduce", "traffic.load=0.5"], r"traffic\.load: a config with \[\[jobs\]\]"),
    (["jobs.0.pattern=allreduce", "traffic.injection=on_off"], r"traffic\.injection: a config with"),
    (["jobs.0.pattern=allreduce", "jobs.0.placement=list"], r"jobs\.0\.endpoints: placement 'list'"),
    (["jobs.x.pattern=allreduce"], r"a job's key is jobs\.N\.key"),
])
def test_bad_jobs_are_refused_naming_the_key(sets, err):
    """A malformed job is refused with one line naming jobs.N.key."""
    with pytest.raises(ParameterError, match=err):
        cfg_of(*sets)


@pytest.mark.parametrize("sets, err", [
    (["jobs.0.pattern=uniform"], r"jobs\.0\.pattern: 'uniform' is not a schedule"),
    (["jobs.0.pattern=allreduce", "jobs.0.procs=150", "jobs.1.pattern=barrier", "jobs.1.procs=60"],
     r"jobs\.1\.procs: 60 processes, but only 50 endpoints are free"),
    (["jobs.0.pattern=allreduce", "jobs.0.procs=4", "jobs.1.pattern=barrier", "jobs.1.procs=2",
      "jobs.1.placement=list", "jobs.1.endpoints=[5, 2]"],
     r"jobs\.1\.endpoints: endpoint 2 belongs to an earlier job"),
])
def test_impossible_jobs_are_refused_before_the_run(sets, err):
    """A load pattern as a job, more processes than free endpoints, or an endpoint an earlier
    job holds is refused when the run is prepared."""
    with pytest.raises(ParameterError, match=err):
        prepare(cfg_of(*sets))


def test_jobs_hold_disjoint_endpoints_in_order():
    """Linear jobs take the first free endpoints one after the other; a random job draws
    among the endpoints the earlier jobs left; every process has an endpoint of its own."""
    cfg = cfg_of("jobs.0.pattern=barrier", "jobs.0.procs=10", *CONGESTOR[1:3],
                 "jobs.1.procs=20", "jobs.2.pattern=allreduce", "jobs.2.procs=30",
                 "jobs.2.placement=random")
    tr = prepare(cfg).traffic
    ep, off = tr.ops.proc_ep, tr.job_proc_off
    assert list(off) == [0, 10, 30, 60]
    assert list(ep[:30]) == list(range(30))
    assert np.unique(ep).size == 60 and ep[30:].min() >= 30


def test_one_job_runs_as_its_pattern_does():
    """A single linear job gives the same per-operation cycles as its pattern run as
    [traffic]: the job layer adds nothing."""
    sets = ["router.packet_size=2"]
    job = run_local(cfg_of("jobs.0.pattern=allreduce", "jobs.0.procs=12",
                           "jobs.0.algorithm=rabenseifner", "jobs.0.bytes=6000", *sets))
    plain = run_local(cfg_of("traffic.pattern=allreduce", "traffic.procs=12",
                             "traffic.algorithm=rabenseifner", "traffic.bytes=6000", *sets))
    for k in ("op_start", "op_end", "proc_finish", "proc_endpoint"):
        assert np.array_equal(job["workload"][k], plain["workload"][k]), k
    j = job["jobs"]["job0"]
    assert j["cycles"] == plain["summary"]["completion_cycles"]
    assert j["bytes_sent"] == plain["summary"]["bytes_sent"]


def test_start_cycle_delays_a_job():
    """A job with start_cycle T alone finishes T cycles later than at 0, takes as many
    cycles from T, and none of its operations completes before T."""
    base = ["jobs.0.pattern=allgather", "jobs.0.procs=6", "jobs.0.bytes=640"]
    at0 = run_local(cfg_of(*base))["jobs"]["job0"]
    later = run_local(cfg_of(*base, "jobs.0.start_cycle=100"))
    j = later["jobs"]["job0"]
    assert j["completion_cycle"] == at0["completion_cycle"] + 100
    assert (j["start_cycle"], j["cycles"]) == (100, at0["cycles"])
    assert (later["workload"]["op_end"] >= 100).all()


def test_a_jobs_pattern_errors_name_the_job():
    """A job's pattern refusing its parameters names jobs.N.key, not traffic.key."""
    with pytest.raises(ParameterError, match=r"^jobs\.1\.root: "):
        prepare(cfg_of("jobs.0.pattern=barrier", "jobs.0.procs=4", "jobs.1.pattern=broadcast",
                       "jobs.1.procs=8", "jobs.1.root=9"))


def test_jobs_are_exact_on_any_part_count():
    """Per-job and per-operation results of two jobs are identical on 1 and 3 parts."""
    cfg = cfg_of(*CANARY, *CONGESTOR, "routing.algorithm=ugal_l")
    whole = run_local(cfg)
    R = whole["prepared"].topo.n_routers
    part = run_local(cfg, owner=((np.arange(R) * 3) // R).astype(np.int32), prep=whole["prepared"])
    assert_same_results(whole, part)
    assert whole["jobs"] == part["jobs"]


def test_cli_alone_reports_slowdown(tmp_path):
    """`pdes run --alone` runs each job alone on its endpoints and writes its slowdown; the
    congested canary is slower than alone."""
    out = tmp_path / "jobs.h5"
    r = run_pdes("run", *cli_sets(*CANARY, *CONGESTOR, preset="exchange"), "--alone", "-o", str(out),
                 "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "job canary" in r.stdout and "slowdown" in r.stdout
    with h5py.File(out) as f:
        names = [n for n in ("canary", "congestor")]
        for n in names:
            g = f[f"jobs/{n}"]
            assert g["slowdown"][()] == pytest.approx(g["cycles"][()] / g["alone_cycles"][()])
        assert f["jobs/canary/slowdown"][()] > 1.0
        assert f["config/jobs/0/pattern"][()].decode() == "allreduce"
    shown = run_pdes("show", str(out), cwd=tmp_path)
    assert shown.returncode == 0 and "\njobs:" in shown.stdout
    rows = [ln.split() for ln in shown.stdout.split("\njobs:")[1].strip().splitlines()[1:]]
    assert [r[0] for r in rows] == ["canary", "congestor"]
    # --csv is one table: the summary alone, or the jobs with --table jobs
    import csv
    import io
    summary = run_pdes("show", str(out), "--csv", cwd=tmp_path)
    rows = list(csv.reader(io.StringIO(summary.stdout)))
    assert summary.returncode == 0 and rows[0] == ["key", "value"]
    assert all(len(r) == 2 for r in rows)
    jobs = run_pdes("show", str(out), "--csv", "--table", "jobs", cwd=tmp_path)
    rows = list(csv.DictReader(io.StringIO(jobs.stdout)))
    assert jobs.returncode == 0 and [r["job"] for r in rows] == ["canary", "congestor"]
    assert float(rows[0]["slowdown"]) > 1.0
    terminal = run_pdes("show", str(out), "--table", "jobs", cwd=tmp_path)
    assert terminal.returncode == 0 and terminal.stdout.split()[0] == "job"
    bad = run_pdes("show", str(out), "--table", "table_mean", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "pdes: error: --table: a run file has no table_mean; its tables are summary and jobs")


def test_cli_alone_without_jobs_is_refused(tmp_path):
    """--alone without [[jobs]] exits 2 with one line."""
    r = run_pdes("run", "--alone", "--set", "traffic.pattern=allreduce", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == "pdes: error: --alone: only with [[jobs]] (it runs each job alone)"


def test_racks_placement_fills_whole_racks():
    """A job placed by racks takes the free endpoints rack by rack: all of a rack before the
    next one, starting with the lowest rack that has a free endpoint."""
    cfg = cfg_of("topology.name=dragonfly", "topology.h=2", "jobs.0.pattern=barrier",
                 "jobs.0.procs=3", "jobs.1.pattern=barrier", "jobs.1.procs=20",
                 "jobs.1.placement=racks")
    prep = prepare(cfg)
    topo, tr = prep.topo, prep.traffic
    rack = np.asarray(topo.group)[topo.endpoint_router]
    eps = tr.ops.proc_ep[3:23]
    free = np.setdiff1d(np.arange(topo.n_endpoints), tr.ops.proc_ep[:3])
    want = free[np.lexsort((free, rack[free]))][:20]
    assert list(eps) == list(want)
    assert (np.diff(rack[eps]) >= 0).all()


def test_sweep_varies_a_job_key(tmp_path):
    """`pdes sweep --vary jobs.N.key` gives one point per value (jobs are finite: no load
    axis), each equal to `pdes run` of its config; explicit loads are refused."""
    from pdes.study import make_spec
    sets = ["jobs.0.pattern=allreduce", "jobs.0.procs=6", "jobs.1.pattern=barrier",
            "jobs.1.procs=4"]
    spec = make_spec({}, sets, ["jobs.0.bytes=64,4096"], None, None, None, None)
    assert spec.finite and len(spec.series) == 2 and len(spec.loads) == 1
    assert spec.config_of(1, spec.loads[0])["jobs"][0]["bytes"] == 4096
    with pytest.raises(ParameterError, match=r"--loads: \[\[jobs\]\] are finite workloads"):
        make_spec({}, sets, ["jobs.0.bytes=64,4096"], "0.1,0.2", None, None, None)
    with pytest.raises(ParameterError, match=r"--vary jobs\.0: a job's key is jobs\.N\.key"):
        make_spec({}, sets, ["jobs.0=1,2"], None, None, None, None)
    # a job the config does not give is named, not left to a point's config to refuse
    with pytest.raises(ParameterError, match=r"--vary jobs\.2\.bytes: the config has no job 2 "
                       r"\(its \[\[jobs\]\] are numbered 0 to 1\)"):
        make_spec({}, sets, ["jobs.2.bytes=64,4096"], None, None, None, None)
    with pytest.raises(ParameterError, match=r"--vary jobs\.0\.procs: the config has no job 0 "
                       r"\(it has no \[\[jobs\]\]\)"):
        make_spec({}, [], ["jobs.0.procs=4,8"], None, None, None, None)
