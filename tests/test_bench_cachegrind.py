"""run_scripts/bench_cachegrind.py with a stand-in for Valgrind: the difference of two runs
per flit-hop, the agreement check of the runs with and without it, the JSON."""
import json
import shutil
import textwrap

import pytest

from tests.helpers import ROOT, run_python, stand_in

# A stand-in 'valgrind': runs the command after its options natively and writes a cachegrind
# file whose totals are 1,000,000 plus a known multiple of the run's link counter.
FAKE = textwrap.dedent("""\
    import json, os, subprocess, sys
    if not os.environ.get("NUMBA_CPU_NAME") or not os.environ.get("NUMBA_CPU_FEATURES"):
        sys.exit("the CPU to compile for was not given")
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1" or os.environ.get("PYTHONHASHSEED") != "0":
        sys.exit("the runs may differ outside the cycles: BLAS threads or hash seeds")
    args = sys.argv[1:]
    out = next(a.split("=", 1)[1] for a in args if a.startswith("--cachegrind-out-file="))
    i = next(i for i, a in enumerate(args) if not a.startswith("--"))
    r = subprocess.run(args[i:], capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    flits = json.loads(r.stdout.strip().splitlines()[-1])["link_flits"]
    per = [7, 3, 2, 5, 1, 4, 0]
    with open(out, "w") as f:
        f.write("desc: stand-in\\ncmd: x\\nevents: Ir Dr Dw D1mr D1mw DLmr DLmw\\n")
        f.write("summary: " + " ".join(str(1000000 + k * flits) for k in per) + "\\n")
    sys.exit(r.returncode)
    """)


def host_cpu() -> tuple[str, str]:
    """The CPU name and features Numba compiles for on this machine: given to the script as
    ``--cpu``/``--cpu-features`` (the stand-in runs natively), its runs load the kernels
    the rest of the suite compiled instead of compiling them all for ``x86-64-v3``."""
    import llvmlite.binding as ll
    from numba.core.codegen import get_host_cpu_features
    return ll.get_host_cpu_name(), get_host_cpu_features()


def test_per_flit_hop_is_the_difference_of_two_runs(tmp_path):
    fake = stand_in(tmp_path, "valgrind", FAKE)
    out = tmp_path / "cg.json"
    cpu, features = host_cpu()
    r = run_python(ROOT / "run_scripts" / "bench_cachegrind.py", "--q", "5", "--p", "4",
                   "--warmup", "30", "--short", "20", "--long", "60", "--valgrind", str(fake),
                   "--cpu", cpu, "--cpu-features", features,
                   "--json", str(out), cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["routers"] == 50 and res["cycles"] == 40 and res["flit_hops"] > 0
    assert res["per_flit_hop"] == {"Ir": 7, "Dr": 3, "Dw": 2, "D1mr": 5, "D1mw": 1, "DLmr": 4,
                                   "DLmw": 0}
    assert res["bytes_per_flit_hop_into_l1"] == 64 * 6
    assert res["bytes_per_flit_hop_past_ll"] == 64 * 4
    assert res["per_router_cycle"]["Ir"] == 7 * res["flit_hops"] / (50 * 40)
    assert "per flit-hop" in r.stdout and "bytes per flit-hop: 384 into L1d" in r.stdout


def test_bad_lengths_and_missing_valgrind_are_refused(tmp_path):
    script = ROOT / "run_scripts" / "bench_cachegrind.py"
    r = run_python(script, "--short", "50", "--long", "50", cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and "--short must be positive and less than --long" in r.stderr
    r = run_python(script, "--valgrind", str(tmp_path / "nope"), cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and "not found" in r.stderr


# A stand-in 'valgrind --tool=callgrind': runs the command natively and writes a callgrind
# file (absolute addresses, a call's inclusive line after 'calls=') with counts per
# instruction, known multiples of the run's link counter: Ir 3 and DLmr 2 at the router
# stage's first byte, Ir 3 at its second and 1 at its third, Ir 1 and DLmw 1 at the output
# stage's second byte, Ir 5 outside every compiled function; the summary is those plus
# 1,000,000 (which the difference cancels).
FAKE_CALLGRIND = textwrap.dedent("""\
    import json, os, subprocess, sys
    args = sys.argv[1:]
    assert "--tool=callgrind" in args and "--dump-instr=yes" in args
    assert "--compress-pos=no" in args
    out = next(a.split("=", 1)[1] for a in args if a.startswith("--callgrind-out-file="))
    i = next(i for i, a in enumerate(args) if not a.startswith("--"))
    r = subprocess.run(args[i:], capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    run = json.loads(r.stdout.strip().splitlines()[-1])
    n = run["link_flits"]
    at = {name: a for a, s, name, p, o in run["symbols"]}
    router = next(a for name, a in at.items() if "router_stage" in name)
    output = next(a for name, a in at.items() if "output_stage" in name)
    ev = ["Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw"]
    rows = [(router, dict(Ir=3 * n, DLmr=2 * n)), (router + 1, dict(Ir=3 * n)),
            (router + 2, dict(Ir=n)), (output + 1, dict(Ir=n, DLmw=n)), (16, dict(Ir=5 * n))]
    if "--branch-sim=yes" in args:
        # a conditional branch at the router stage's third byte, mispredicted every time,
        # and an indirect one at the output stage's second, mispredicted every other time
        ev += ["Bc", "Bcm", "Bi", "Bim"]
        rows[2][1].update(Bc=n, Bcm=n)
        rows[3][1].update(Bi=2 * n, Bim=n)
    tot = {e: 1000000 + sum(c.get(e, 0) for _, c in rows) for e in ev}
    with open(out, "w") as f:
        f.write("# callgrind format\\nversion: 1\\npositions: instr\\n")
        f.write("events: " + " ".join(ev) + "\\n")
        f.write("summary: " + " ".join(str(tot[e]) for e in ev) + "\\n")
        f.write("ob=???\\nfl=???\\nfn=0x10\\n")
        for a, c in rows:
            f.write(f"0x{a:x} " + " ".join(str(c.get(e, 0)) for e in ev) + "\\n")
        f.write(f"cfn=elsewhere\\ncalls=1 0x20\\n0x{router:x} 999999999 1 1 1 1 1 1 1 1\\n")
    sys.exit(r.returncode)
    """)


def run_stages(tmp_path, *extra):
    """The script with ``--stages 3`` (and ``extra``) under the stand-in callgrind: the
    finished process and its JSON."""
    if shutil.which("nm") is None:
        pytest.skip("nm (binutils) is not installed")
    fake = stand_in(tmp_path, "valgrind", FAKE_CALLGRIND)
    out = tmp_path / "cg.json"
    cpu, features = host_cpu()
    r = run_python(ROOT / "run_scripts" / "bench_cachegrind.py", "--q", "5", "--p", "4",
                   "--warmup", "30", "--short", "20", "--long", "60", "--valgrind", str(fake),
                   "--cpu", cpu, "--cpu-features", features, "--stages", "3", *extra,
                   "--json", str(out), cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    return r, json.loads(out.read_text())


def test_stages_split_the_counts_by_the_compiled_functions_they_ran_in(tmp_path):
    """--stages: callgrind's counts per address go to the stage of the compiled function
    holding it, the rest is outside, a call's inclusive line counts nowhere; instructions
    executed equally often in a row make one run."""
    r, res = run_stages(tmp_path)
    assert res["per_flit_hop"]["Ir"] == 13 and res["per_flit_hop"]["DLmr"] == 2
    st = res["stages"]
    assert st["router_stage"] == {"Ir": 7, "Dr": 0, "Dw": 0, "D1mr": 0, "D1mw": 0, "DLmr": 2,
                                  "DLmw": 0}
    assert st["output_stage"]["Ir"] == 1 and st["output_stage"]["DLmw"] == 1
    assert st["endpoint_stage"]["Ir"] == 0 and st["other compiled code"]["Ir"] == 0
    assert st["outside the compiled code"]["Ir"] == 5
    top = res["top"]
    assert [(t["offset"], t["DLmr"], t["Ir"]) for t in top["router_stage"]] == \
        [(0, 2, 3), (1, 0, 3), (2, 0, 1)]
    assert [(t["offset"], t["DLmw"]) for t in top["output_stage"]] == [(1, 1)]
    assert top["endpoint_stage"] == []
    # runs: the first two bytes of the router stage ran equally often, the third less
    runs = res["runs"]
    assert [(r["offset"], r["end"], r["instructions"], r["executions"], r["Ir"], r["L2_misses"])
            for r in runs["router_stage"]] == [(0, 1, 2, 3, 6, 2), (2, 2, 1, 1, 1, 0)]
    assert [(r["offset"], r["Ir"]) for r in runs["output_stage"]] == [(1, 1)]
    assert runs["endpoint_stage"] == []
    if shutil.which("objdump"):     # the router stage's first instruction, disassembled
        assert top["router_stage"][0]["instruction"]
        assert set(res["frame"]) == {"endpoint_stage", "router_stage", "output_stage"}
        assert all(v >= 0 for f in res["frame"].values() for v in f.values())
        assert "instructions with an operand in the stack frame" in r.stdout
    assert "per flit-hop by stage:" in r.stdout
    assert "router_stage: its 3 instructions with the most last-level misses" in r.stdout
    assert "router_stage: its 3 costliest runs of instructions" in r.stdout


def test_branches_count_the_mispredictions_per_stage_and_branch(tmp_path):
    """--branches: Valgrind simulates branch prediction; the branches and their
    mispredictions per flit-hop go with the other counts, and each stage's branches with
    the most mispredictions are listed."""
    r, res = run_stages(tmp_path, "--branches")
    assert res["per_flit_hop"]["Bc"] == 1 and res["per_flit_hop"]["Bcm"] == 1
    assert res["per_flit_hop"]["Bi"] == 2 and res["per_flit_hop"]["Bim"] == 1
    st = res["stages"]
    assert (st["router_stage"]["Bc"], st["router_stage"]["Bcm"]) == (1, 1)
    assert (st["output_stage"]["Bi"], st["output_stage"]["Bim"]) == (2, 1)
    mis = res["mispredicts"]
    assert [(m["offset"], m["Bcm"]) for m in mis["router_stage"]] == [(2, 1)]
    assert [(m["offset"], m["Bim"], m["Bi"]) for m in mis["output_stage"]] == [(1, 1, 2)]
    assert mis["endpoint_stage"] == []
    assert "router_stage: its 3 branches with the most mispredictions" in r.stdout


def test_negative_stages_are_refused(tmp_path):
    """--stages below 0 is refused before any run."""
    r = run_python(ROOT / "run_scripts" / "bench_cachegrind.py", "--stages", "-1",
                   cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and "--stages must not be negative" in r.stderr


def test_frame_traffic_counts_the_moves_to_and_from_the_stack_frame(monkeypatch):
    """--stages: a stage's instructions with an operand in the stack frame, per flit-hop, as
    moves from it (reloads), moves into it (spills) and other uses; pushes and calls are not
    counted."""
    monkeypatch.syspath_prepend(str(ROOT / "run_scripts"))
    import bench_cachegrind as bc
    assert bc.frame_kind("mov 0x1928(%rsp),%rax") == "load"
    assert bc.frame_kind("vmovups -0x40(%rsp),%ymm0") == "load"
    assert bc.frame_kind("mov %rax,-0x8(%rsp)") == "store"
    assert bc.frame_kind("movl $0xffffffff,0x10(%rsp)") == "store"
    assert bc.frame_kind("cmp %rdi,-0x78(%rsp)") == "use"
    assert bc.frame_kind("mov (%r8,%rdx,4),%eax") is None
    assert bc.frame_kind("push %rbp") is None
    text = {("f", 1): "mov 0x8(%rsp),%rax", ("f", 2): "mov %rax,0x8(%rsp)",
            ("f", 3): "add 0x10(%rsp),%rcx", ("f", 4): "inc %rcx"}
    rows = [("f", a, {"Ir": 10 * a}) for a in (1, 2, 3, 4)]
    got = bc.frame_traffic(rows, lambda name, off: text[(name, off)], hops=5)
    assert got == {"load": 2.0, "store": 4.0, "use": 6.0}
