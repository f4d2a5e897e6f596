"""The memory a network needs is refused from its parameters, before anything is built: `pdes
run`, `sweep`, `check`, `topo` and `analyze`, on one rank and on every rank under MPI."""
import gc
import os
import tracemalloc

import pytest

import models.topologies  # noqa: F401  (registers every family)
from models.core.errors import ParameterError
from models.core.registry import TOPOLOGIES
from tests.helpers import cli_sets, make_cfg, run_pdes

FAST = cli_sets(preset="cli")
DRAGONFLY_60 = ["--set", "topology.name=dragonfly", "--set", "topology.h=60"]
TABLE_747 = ("pdes: error: topology: its all-pairs distance table (864,120 x 864,120 bytes) needs "
             "747 GB, more than 20 GB (run.max_memory_gb)")

ABSURD = [   # (family, parameters): each needs more than 20 GB, distances or arrays
    ("dragonfly", {"h": 60}),
    ("slimfly", {"q": 401}),
    ("hyperx", {"sizes": [16000]}),
    ("fattree", {"k": 400}),
    ("torus", {"dims": [512, 512, 64]}),
    ("random_regular", {"routers": 10 ** 6, "degree": 16}),
]


@pytest.fixture
def no_builds(monkeypatch):
    """Every registered family's generator raises when called: what passes built nothing."""
    def never(*args, **kwargs):
        raise AssertionError("a generator was called")
    for entry in TOPOLOGIES:
        monkeypatch.setattr(entry, "func", never)


def _sets(name, params):
    return [f"topology.name={name}"] + [f"topology.{k}={v}" for k, v in params.items()]


@pytest.mark.parametrize("name,params", ABSURD, ids=[n for n, _ in ABSURD])
def test_run_and_check_refuse_before_building(name, params, no_builds):
    """prepare (run, sweep) and plan_routing (check) refuse an absurd network with the memory
    check's message before calling the family's generator."""
    from pdes.build import plan_routing, prepare
    cfg = make_cfg(*_sets(name, params), "run.max_memory_gb=20", preset="plan")
    for step in (prepare, plan_routing):
        with pytest.raises(ParameterError, match=r"^topology: .* needs .* GB, more than 20 GB "
                                                 r"\(run\.max_memory_gb\)$"):
            step(cfg)


def test_distance_table_message_is_unchanged(no_builds):
    """A table that cannot fit gives the message the check after building gave."""
    from pdes.build import prepare
    with pytest.raises(ParameterError) as exc:
        prepare(make_cfg("topology.name=dragonfly", "topology.h=60", "run.max_memory_gb=20",
                         preset="plan"))
    assert f"pdes: error: {exc.value}" == TABLE_747


def test_dense_network_is_refused_for_its_arrays(no_builds):
    """A network whose distance table fits but whose links do not is refused for building it."""
    from pdes.build import prepare
    with pytest.raises(ParameterError, match=r"^topology: building it \(16,000 routers, "
                                             r"127,992,000 links, .* with its all-pairs distance"):
        prepare(make_cfg("topology.name=hyperx", "topology.sizes=[16000]",
                         "run.max_memory_gb=20", preset="plan"))


@pytest.mark.parametrize("command", ["topo", "analyze"])
def test_topo_and_analyze_refuse_before_building(command, no_builds, monkeypatch, capsys):
    """`pdes topo` and `pdes analyze` refuse the arrays of a network that cannot fit in the
    node's memory (no distance table: they do not build one), and all-pairs metrics above
    20,000 routers without --sample, before building."""
    from pdes import sizing
    from pdes.cli import main
    monkeypatch.setattr(sizing, "memory_limit", lambda cfg: 10e9)     # a node of 10 GB
    base = [command, "dragonfly", "--set", "topology.h=60"]
    assert main(base + ["--sample", "5"] + (["--only", "paths"] if command == "analyze" else [])) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pdes: error: topology: building it (864,120 "
                                               "routers, 77,338,740 links"), err
    assert err[0].endswith("more than 10 GB (the memory available on this machine)"), err
    monkeypatch.setattr(sizing, "memory_limit", lambda cfg: 1e12)
    assert main(base) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("pdes: error: 864120 routers: exact all-pairs metrics are limited to 20000 "
                   "routers; give a number of sample source routers (--sample N)")


def test_cli_refusal_is_one_line_exit_2(tmp_path):
    """`pdes run` and `pdes check` on Dragonfly h = 60: exit 2, the one line, no output file."""
    for args in (["run", *FAST, "-o", "out.h5"], ["check"]):
        r = run_pdes(*args, *DRAGONFLY_60, "--set", "run.max_memory_gb=20", cwd=tmp_path)
        assert r.returncode == 2, r.stderr
        lines = [ln for ln in r.stderr.strip().splitlines() if not ln.startswith("[pdes]")]
        assert lines == [TABLE_747] and "Traceback" not in r.stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.mpi(min_size=2)
def test_refusal_under_mpi_exits_2_on_every_rank(tmp_path, capfd, no_builds):
    """Under MPI every rank returns 2 before building, rank 0 prints the one line, nothing is
    written."""
    from mpi4py import MPI

    from pdes.cli import main
    comm = MPI.COMM_WORLD
    out = os.path.join(comm.bcast(str(tmp_path), root=0), "out.h5")
    status = main(["run", *FAST, *DRAGONFLY_60, "--set", "run.max_memory_gb=20", "-o", out])
    assert comm.allgather(status) == [2] * comm.Get_size()
    lines = [ln for ln in capfd.readouterr().err.strip().splitlines() if ln and not ln.startswith("[pdes]")]
    assert lines == ([TABLE_747] if comm.Get_rank() == 0 else [])
    assert not os.path.exists(out)


PEAK = [   # (family, parameters): some ten thousand links each
    ("bdf", {"u": 13}), ("delorme", {"v": 3}), ("dln", {"routers": 3000, "shortcuts": 6}),
    ("dln", {"routers": 300, "shortcuts": 250}), ("dragonfly", {"h": 6}),
    ("dragonfly_plus", {"h": 9}), ("fattree", {"k": 36, "levels": 2, "parallel": 3}),
    ("fattree", {"k": 24}), ("galaxyfly", {"n": 12, "q": 13, "a": 6}), ("hypercube", {"n": 12}),
    ("hyperx", {"sizes": [12, 12, 8]}), ("lhhc", {"n": 11}), ("mlfm", {"h": 24}), ("oft", {"k": 18}),
    ("random_regular", {"routers": 3000, "degree": 8}),
    ("random_regular", {"routers": 300, "degree": 250}),
    ("skywalk", {"z": 8, "c": 128, "d_i": 7, "d_o": 4, "tries": 2}), ("slimfly", {"q": 17}),
    ("torus", {"dims": [32, 32, 16]}),
]


def test_peak_cases_cover_every_sized_family():
    """The peak test below builds every family that has a size function."""
    assert {n for n, _ in PEAK} == set(TOPOLOGIES.names()) - {"file"}


@pytest.mark.parametrize("name,params", PEAK, ids=[f"{n}-{i}" for i, (n, _) in enumerate(PEAK)])
def test_estimate_covers_the_peak_of_building(name, params):
    """The estimate from the parameters is at least the peak memory (traced allocations) of
    building the network, its port tables and its layout's latencies."""
    from models.topology import build, size_of
    from pdes.build import TOPOLOGY_SHARED, link_latencies
    from pdes.sizing import network_bytes
    cfg = make_cfg(*_sets(name, params), preset="plan")
    build(name, {})                        # imports and caches outside the trace
    gc.collect()
    tracemalloc.start()
    try:
        topo = build(name, params)
        for attr in TOPOLOGY_SHARED:
            getattr(topo, attr)
        link_latencies(cfg, topo)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= network_bytes(size_of(name, params)), (peak, size_of(name, params))
