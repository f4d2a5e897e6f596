"""GOAL traces (models/traffic/goal.py): the reader, the writer, the `goal` pattern and its
refusals (one `traffic.file: <path>:<line>:` line for a malformed file)."""
import re

import numpy as np
import pytest

from models.core.errors import ParameterError
from models.core.registry import TRAFFIC
from models.placement import place
from models.schedule import (DEP_DONE, DEP_START, MAX_CYCLES, OP_COMPUTE, OP_RECV, OP_SEND,
                             ScheduleBuilder, check)
from models.topology import build
from models.traffic.goal import calc_to_cycles, read_goal, write_goal
from tests.helpers import ROOT, assert_refused_on_every_rank, cli_sets, run_pdes, run_python

ARRAYS = ("proc_ep", "op_off", "op_kind", "op_peer", "op_size", "op_tag", "dep_off", "dep",
          "dep_kind")
FAST = cli_sets(preset="cli")


def assert_same_schedule(a, b):
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), (name, x, y)


def goal_file(tmp_path, text, name="t.goal"):
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(p)


def builder_schedule():
    """Three processes, ops added out of process order, tags, both dependency kinds."""
    b = ScheduleBuilder(3)
    c0 = b.compute(0, 40)
    s0 = b.send(0, 1, 100, tag=7, after=[c0])
    r1 = b.recv(1, 0, 100, tag=7)
    s2 = b.send(2, 1, 0, tag=2**31 - 1)
    s0b = b.send(0, 1, 5, tag=7, start_after=[s0])       # second message on the same channel
    r1b = b.recv(1, 0, 5, tag=7, after=[r1])
    c1 = b.compute(1, 3, after=[r1b], start_after=[r1])
    r1c = b.recv(1, 2, 0, tag=2**31 - 1, start_after=[c1])
    b.compute(2, 0, after=[s2])
    del s0b, r1c
    return b.build(np.arange(3))


def test_round_trip_keeps_every_array(tmp_path):
    """write_goal then read_goal gives back a builder's schedule exactly (order, tags, both
    dependency kinds), and the text is LogGOPSim's: l<k> labels, then the dependencies."""
    s = check(builder_schedule())
    path = tmp_path / "rt.goal"
    write_goal(s, path)
    back = read_goal(path)
    assert_same_schedule(s, back)
    assert np.array_equal(check(back).match, s.match)
    text = path.read_text()
    assert text.startswith("num_ranks 3\n\nrank 0 {\nl0: calc 40\nl1: send 100b to 1 tag 7\n"
                           "l2: send 5b to 1 tag 7\nl1 requires l0\nl2 irequires l1\n}\n")
    assert "l0: send 0b to 1 tag 2147483647\n" in text


HAND = """\
// a hand-written trace: comments, blank lines, unlabelled ops, cpu/nic, blocks out of order
num_ranks 3

rank 2 {
\tsend 0 b to 0 tag 0 cpu 1 nic 0     // no label, tab, '0 b'
}
rank 0 {
first:recv 10b from 2            /* tag defaults to 0 */
x_1 : send 8b to 1 tag 9 nic 1
c: calc 250 cpu 3
c requires first
x_1 irequires c   /* a comment
   over two lines */ last: send 4b to 1 tag 9
last requires x_1
}

rank 1 {
r1: recv 8b from 0 tag 9\r
r2: recv 4b from 0 tag 9
r2 irequires r1
}
"""


def test_hand_written_trace_parses_to_the_expected_arrays(tmp_path):
    """Comments (// and multi-line /* */), blank lines, CRLF, tabs, optional labels and tags,
    cpu/nic suffixes and blocks out of rank order give the expected arrays; each rank keeps
    its file order, which is the matching order."""
    s = read_goal(goal_file(tmp_path, HAND))
    assert s.n_procs == 3 and np.array_equal(s.proc_ep, [0, 1, 2])
    assert s.op_off.tolist() == [0, 4, 6, 7]
    assert s.op_kind.tolist() == [OP_RECV, OP_SEND, OP_COMPUTE, OP_SEND, OP_RECV, OP_RECV, OP_SEND]
    assert s.op_peer.tolist() == [2, 1, -1, 1, 0, 0, 0]
    assert s.op_size.tolist() == [10, 8, 250, 4, 8, 4, 0]
    assert s.op_tag.tolist() == [0, 9, 0, 9, 9, 9, 0]
    # (op, depends on, kind): c requires first, x_1 irequires c, last requires x_1, r2 irequires r1
    deps = sorted(zip(np.repeat(np.arange(7), np.diff(s.dep_off)).tolist(), s.dep.tolist(),
                      s.dep_kind.tolist()))
    assert deps == [(1, 2, DEP_START), (2, 0, DEP_DONE), (3, 1, DEP_DONE), (5, 4, DEP_START)]
    assert check(s).match.tolist() == [6, 4, -1, 5, 1, 3, 0]


def _rank_block(body, n=3):
    return f"num_ranks {n}\nrank 0 {{\n{body}\n}}\nrank 1 {{\n}}\nrank 2 {{\n}}\n"


MALFORMED = [   # (id, text, line, rank or None, rule (regex))
    ("unknown keyword", _rank_block("l1: put 8b to 1"), 3, 0, r"cannot parse 'l1: put 8b to 1'"),
    ("hash comment", "# a comment\nnum_ranks 1\nrank 0 {\n}\n", 1, None, r"cannot parse '# a"),
    ("any source", _rank_block("recv 8b from -1"), 3, 0, r"recv from -1: any-source \(-1\)"),
    ("negative rank", _rank_block("send 8b to -2 tag 1"), 3, 0, r"send to -2: any-source"),
    ("any tag", _rank_block("recv 8b from 1 tag -1"), 3, 0, r"tag -1: any-tag"),
    ("peer out of range", _rank_block("send 8b to 3"), 3, 0, r"peer 3 is not a rank 0\.\.2"),
    ("self message", _rank_block("send 8b to 0"), 3, 0, r"a rank cannot send to or receive from"),
    ("wrong direction", _rank_block("send 8b from 1"), 3, 0, r"'send' takes 'to', not 'from'"),
    ("tag too large", _rank_block("send 8b to 1 tag 2147483648"), 3, 0, r"tag 2147483648 is outside"),
    ("size too large", _rank_block("calc 9223372036854775808"), 3, 0, r"calc time \d+ is outside"),
    ("duplicate label", _rank_block("a: calc 1\nb: calc 2\na: calc 3"), 5, 0,
     r"label 'a' is defined twice"),
    ("unknown label", _rank_block("a: calc 1\na requires zz"), 4, 0, r"requires: unknown label 'zz'"),
    ("label defined later", _rank_block("a: calc 1\nb irequires a\nb: calc 2"), 4, 0,
     r"irequires: unknown label 'b'"),
    ("self dependency", _rank_block("a: calc 1\na requires a"), 4, 0,
     r"'a requires a': an operation cannot depend on itself"),
    ("labels are rank-local", "num_ranks 2\nrank 0 {\na: calc 1\n}\nrank 1 {\nb: calc 1\n"
     "b requires a\n}\n", 7, 1, r"requires: unknown label 'a'"),
    ("block not closed", "num_ranks 2\nrank 0 {\ncalc 1\nrank 1 {\n}\n", 4, 0,
     r"'rank' inside the block of rank 0 \(opened at line 2; a '}' is missing\)"),
    ("block not closed at the end", "num_ranks 1\nrank 0 {\ncalc 1\n", 2, 0,
     r"the block is not closed"),
    ("rank twice", "num_ranks 2\nrank 0 {\n}\nrank 1 {\n}\nrank 0 {\n}\n", 6, None,
     r"rank 0 has a second block"),
    ("rank out of range", "num_ranks 2\nrank 2 {\n}\n", 2, None, r"rank 2 is not a rank 0\.\.1"),
    ("rank missing", "num_ranks 3\nrank 0 {\n}\nrank 2 {\n}\n", 5, None, r"rank 1 has no block"),
    ("missing num_ranks", "rank 0 {\n}\n", 1, None, r"'num_ranks N' must come before"),
    ("empty file", "// nothing\n", 1, None, r"no 'num_ranks N' line"),
    ("num_ranks twice", "num_ranks 1\nnum_ranks 1\n", 2, None, r"'num_ranks' must be given once"),
    ("num_ranks zero", "num_ranks 0\n", 1, None, r"num_ranks must be in 1\.\."),
    ("op outside a block", "num_ranks 1\ncalc 5\n", 2, None, r"an operation outside a rank block"),
    ("stray brace", "num_ranks 1\n}\n", 2, None, r"'}' without an open rank block"),
    ("comment not closed", "num_ranks 1\nrank 0 {\n/* open\n}\n", 3, 0,
     r"a '/\*' comment is not closed"),
]


@pytest.mark.parametrize("text,line,rank,rule", [m[1:] for m in MALFORMED],
                         ids=[m[0] for m in MALFORMED])
def test_malformed_trace_is_refused_with_path_and_line(tmp_path, text, line, rank, rule):
    """Every malformed construct is one ParameterError `traffic.file: <path>:<line>: [rank R: ]
    <rule>`."""
    path = goal_file(tmp_path, text)
    where = re.escape(f"traffic.file: {path}:{line}: ") + ("" if rank is None else f"rank {rank}: ")
    with pytest.raises(ParameterError, match="^" + where + rule):
        read_goal(path)


SF3 = {"q": 3}      # 54 endpoints


def goal_plan(path, **kw):
    return TRAFFIC.get("goal").func(build("slimfly", SF3), 5, file=path, **kw)


def test_cycle_and_unmatched_receive_name_the_process_and_operation(tmp_path):
    """A dependency cycle and a receive without a send are refused by the schedule check,
    naming the file, the process (rank) and the operation (its index in the block)."""
    cycle = goal_file(tmp_path, "num_ranks 2\nrank 0 {\nsend 1b to 1\n}\nrank 1 {\n"
                      "a: recv 1b from 0\nb: calc 5\nc: calc 6\nb requires c\nc requires b\n}\n",
                      "cycle.goal")
    with pytest.raises(ParameterError, match=re.escape(
            f"traffic.file: {cycle}: process 1 op 1 (compute 5 cycles): is on a dependency cycle")):
        goal_plan(cycle)
    lost = goal_file(tmp_path, "num_ranks 2\nrank 0 {\nsend 1b to 1 tag 3\n}\nrank 1 {\n"
                     "recv 1b from 0 tag 3\nrecv 2b from 0 tag 3\n}\n", "lost.goal")
    with pytest.raises(ParameterError, match=re.escape(
            f"traffic.file: {lost}: process 1 op 1 (recv 2 B from 0 tag 3): no send matches")):
        goal_plan(lost)


def test_computes_that_add_up_beyond_the_engines_cycles_are_refused(tmp_path):
    """Each compute within MAX_CYCLES but a chain of them (through a start dependency and a
    message too) ending beyond it is refused, naming the operation; it used to wrap to a
    negative end and post the send after it at cycle 0."""
    half = MAX_CYCLES // 2 + 1
    chain = goal_file(tmp_path, f"num_ranks 2\nrank 0 {{\na: calc {half}\nb: send 1b to 1\n"
                      "b requires a\n}\nrank 1 {\nc: recv 1b from 0\nd: calc 1\n"
                      f"e: calc {half}\nd irequires c\ne requires c\n}}\n", "chain.goal")
    with pytest.raises(ParameterError, match=re.escape(
            f"traffic.file: {chain}: process 1 op 2 (compute {half} cycles): ends after cycle "
            f"{MAX_CYCLES} at the earliest")):
        goal_plan(chain)
    ok = goal_file(tmp_path, f"num_ranks 2\nrank 0 {{\na: calc {half}\nb: send 1b to 1\n"
                   f"b requires a\n}}\nrank 1 {{\nc: recv 1b from 0\nd: calc {half}\n}}\n",
                   "ok.goal")
    assert goal_plan(ok).ops.n_ops == 4            # independent: they overlap


def test_pattern_places_ranks_and_scales_calc(tmp_path):
    """The `goal` pattern: rank r on the placement's r-th endpoint, calc units times
    calc_cycles rounded up (exactly: 10 x 0.3 = 3), a checked schedule plan."""
    path = goal_file(tmp_path, HAND)
    plan = goal_plan(path)
    assert plan.kind == "schedule" and plan.ops.match is not None
    assert np.array_equal(plan.ops.proc_ep, [0, 1, 2])
    assert plan.active.sum() == 3 and plan.ops.op_size[2] == 250
    rnd = goal_plan(path, placement="random", calc_cycles=0.3)
    assert np.array_equal(rnd.ops.proc_ep, place(build("slimfly", SF3), 3, "random", 5))
    assert rnd.ops.op_size[2] == 75 and rnd.ops.op_size[3] == 4     # bytes stay bytes
    assert calc_to_cycles(np.array([10, 7, 0, 1]), 0.3).tolist() == [3, 3, 0, 1]
    assert calc_to_cycles(np.array([3, 2**20, 2**40]), 2.5).tolist() == [8, 5 * 2**19,
                                                                       MAX_CYCLES + 1]
    assert goal_plan(path, procs=3).ops.n_procs == 3


def test_pattern_refuses_bad_parameters(tmp_path):
    """procs other than 0 or num_ranks, more ranks than endpoints (found on the num_ranks line),
    a missing file and a compute beyond the engine's cycles are refused, naming the key."""
    path = goal_file(tmp_path, HAND)
    with pytest.raises(ParameterError, match=r"^traffic\.procs: the trace .* has 3 ranks; "
                       r"procs must be 0 \(one process per rank\) or 3, got 2"):
        goal_plan(path, procs=2)
    big = goal_file(tmp_path, "num_ranks 55\nnot parsed\n", "big.goal")
    with pytest.raises(ParameterError, match=re.escape(
            f"traffic.file: {big}:1: the trace has 55 ranks, more than the 54 endpoints")):
        goal_plan(big)
    with pytest.raises(ParameterError, match=r"^traffic\.file: cannot read '.*nope\.goal' \("):
        goal_plan(str(tmp_path / "nope.goal"))
    with pytest.raises(ParameterError, match=r"^traffic\.file: .*: process 0 op 2 \(compute "
                       r"\d+ cycles\): size must be in"):
        goal_plan(path, calc_cycles=1e7)


def test_trace_is_an_input_file_of_the_config():
    """traffic.file (and a placement file under placement = file) are the config's input
    files, whose digests results and checkpoints record."""
    from pdes import config as C
    from pdes.provenance import input_files
    cfg = C.resolve({}, ["traffic.pattern=goal", "traffic.file=app.goal"])
    assert input_files(cfg) == {"traffic.file": "app.goal"}
    cfg = C.resolve({}, ["traffic.pattern=goal", "traffic.file=app.goal",
                         "traffic.placement=file", "traffic.placement_file=ep.txt"])
    assert input_files(cfg) == {"traffic.file": "app.goal", "traffic.placement_file": "ep.txt"}


def test_cli_refuses_a_bad_trace_with_one_line(tmp_path):
    """`pdes run` with traffic.pattern=goal: no file given (config), a missing file and a
    malformed one each end with exit 2 and one `pdes: error: traffic.file: ...` line, no
    traceback, no file written."""
    from pdes import config as C
    with pytest.raises(ParameterError, match=r"^traffic\.file: required for traffic 'goal'"):
        C.resolve({}, ["traffic.pattern=goal"])
    (tmp_path / "bad.goal").write_text("num_ranks 2\nrank 0 {\nsend 8b to 1 tag -1\n}\n")
    cases = [("missing.goal", r"cannot read 'missing\.goal' \(No such file or directory\)$"),
             ("bad.goal", r"bad\.goal:3: rank 0: tag -1: any-tag")]
    for name, rule in cases:
        r = run_pdes("run", *FAST, "--set", "traffic.pattern=goal", "--set",
                     f"traffic.file={name}", cwd=tmp_path)
        lines = [ln for ln in r.stderr.strip().splitlines() if not ln.startswith("[pdes]")]
        assert r.returncode == 2 and len(lines) == 1, (name, r.stderr)
        assert re.match(r"pdes: error: traffic\.file: " + rule, lines[0]), (name, r.stderr)
        assert "Traceback" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.goal"]


@pytest.mark.mpi(min_size=2)
def test_cli_refuses_a_bad_trace_on_every_rank(tmp_path, capfd):
    """Under MPI a malformed trace gives status 2 on every rank and one error line (rank 0)."""
    from mpi4py import MPI

    from pdes.cli import main
    comm = MPI.COMM_WORLD
    d = comm.bcast(str(tmp_path), root=0)
    if comm.Get_rank() == 0:
        with open(f"{d}/bad.goal", "w") as fh:
            fh.write("num_ranks 2\nrank 0 {\nrecv 8b from -1\n}\n")
    comm.Barrier()
    capfd.readouterr()
    status = main(["run", *FAST, "--set", "traffic.pattern=goal", "--set",
                   f"traffic.file={d}/bad.goal"])
    err = capfd.readouterr().err
    assert_refused_on_every_rank(
        comm, status, err,
        lambda line: line.startswith(f"pdes: error: traffic.file: {d}/bad.goal:3: rank 0: recv "
                                     "from -1: any-source"), "bad.goal")


def test_generator_writes_a_valid_ring_trace(tmp_path):
    """run_scripts/goal_trace.py writes a ring halo exchange that reads back with the stated
    operation count and passes the schedule check."""
    out = tmp_path / "ring.goal"
    r = run_python(ROOT / "run_scripts" / "goal_trace.py", "--ranks", "4", "--ops", "40",
                   "--bytes", "64", "-o", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    s = check(read_goal(out))
    assert s.n_procs == 4 and s.n_ops == 40 and np.all(np.diff(s.op_off) == 10)
    assert np.all(s.op_size[s.op_kind != OP_COMPUTE] == 64)
    assert s.dep.size == 4 * (4 + 6)     # 2 iterations: 6 dependencies each, the first lacks 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ring.goal"]


def test_a_long_stuck_chain_is_reported():
    """The report of a schedule that cannot complete walks back through each stuck op's own
    dependencies (the walk scanned every dependency per step: about a minute for a chain of
    400,000 computes, hours at 10^7 operations) and names the op on the cycle."""
    from models.schedule import check, make_schedule
    k = 20_000
    # process 0: recv from 1, send to 1 after it; process 1: recv from 0, k computes in a
    # chain after it, send to 0 after the last
    kind = np.r_[OP_RECV, OP_SEND, OP_RECV, np.full(k, OP_COMPUTE), OP_SEND]
    peer = np.r_[1, 1, 0, np.full(k, -1), 0]
    size = np.r_[8, 8, 8, np.ones(k, np.int64), 8]
    ops = np.arange(k + 4)
    dep_op, dep_on = np.r_[1, ops[3:k + 4]], np.r_[0, ops[2:k + 3]]
    s = make_schedule(np.arange(2), [0, 2, k + 4], kind, peer, size, np.zeros(k + 4, np.int64),
                      dep_op, dep_on, np.full(dep_op.size, DEP_DONE))
    with pytest.raises(ParameterError, match=r"process 0 op 0 \(recv 8 B from 1 tag 0\): can "
                       r"never complete: it waits, through messages, on itself"):
        check(s)
