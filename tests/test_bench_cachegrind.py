"""run_scripts/bench_cachegrind.py with a stand-in for Valgrind: the difference of two runs
per flit-hop, the agreement check of the runs with and without it, the JSON."""
import json
import sys
import textwrap

from tests.helpers import ROOT, run_python

# A stand-in 'valgrind': runs the command after its options natively and writes a cachegrind
# file whose totals are 1,000,000 plus a known multiple of the run's link counter.
FAKE = textwrap.dedent("""\
    #!{python}
    import json, os, subprocess, sys
    if not os.environ.get("NUMBA_CPU_NAME") or not os.environ.get("NUMBA_CPU_FEATURES"):
        sys.exit("the CPU to compile for was not given")
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
    fake = tmp_path / "valgrind"
    fake.write_text(FAKE.format(python=sys.executable))
    fake.chmod(0o755)
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
