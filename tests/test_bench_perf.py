"""run_scripts/bench_perf.py with a stand-in for perf: samples are mapped to the compiled
stages by the addresses the measured run reports, counted per stage and per instruction."""
import json
import re
import shutil
import textwrap

import pytest

from tests.helpers import ROOT, run_python, stand_in

# A stand-in 'perf': ``record ... -o DATA -- CMD`` runs CMD natively and writes as DATA the
# addresses of its samples: three at the start of the router stage, one at the second byte
# of the output stage, one in the window loop (other compiled code), two outside every
# compiled function; ``script -i DATA -F ip`` prints
# them as perf does (hexadecimal, one per line).
FAKE = textwrap.dedent("""\
    import json, subprocess, sys
    args = sys.argv[1:]
    data = args[args.index("-i" if args[0] == "script" else "-o") + 1]
    if args[0] == "script":
        assert args[args.index("-F") + 1] == "ip"
        sys.stdout.write("".join(f"{ip:16x}\\n" for ip in json.load(open(data))))
        sys.exit(0)
    assert args[0] == "record" and args[args.index("-e") + 1] == "cpu-clock"
    r = subprocess.run(args[args.index("--") + 1:], capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    syms = json.loads(r.stdout.strip().splitlines()[-1])["symbols"]
    at = {n: a for a, s, n, p, o in syms}
    router = next(a for n, a in at.items() if "router_stage" in n)
    output = next(a for n, a in at.items() if "output_stage" in n)
    loop = next(a for n, a in at.items() if n.startswith("_ZN4pdes") and "7advance" in n)
    json.dump([router] * 3 + [output + 1] + [loop] + [16, 16], open(data, "w"))
    sys.exit(r.returncode)
    """)


def test_samples_are_counted_per_stage_and_instruction(tmp_path):
    if shutil.which("nm") is None:
        pytest.skip("nm (binutils) is not installed")
    fake = stand_in(tmp_path, "perf", FAKE)
    out = tmp_path / "perf.json"
    r = run_python(ROOT / "run_scripts" / "bench_perf.py", "--q", "5", "--p", "4",
                   "--warmup", "20", "--cycles", "40", "--top", "2", "--perf", str(fake),
                   "--json", str(out), cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["samples"] == 7 and res["kernel_samples"] == 4
    assert res["stages"] == {"endpoint_stage": 0, "router_stage": 3, "output_stage": 1,
                             "other compiled code": 1, "outside the compiled code": 2}
    # the functions of "other compiled code" by samples: a helper LLVM left a call shows here
    [other] = res["other"]
    assert other["samples"] == 1 and "7advance" in other["symbol"]
    assert re.search(r"other compiled code: its 1 functions with the most samples\n +1 +"
                     r"pdes\.kernels\.routed_\w+\.advance\n", r.stdout)
    assert [(t["offset"], t["samples"]) for t in res["top"]["router_stage"]] == [(0, 3)]
    assert [(t["offset"], t["samples"]) for t in res["top"]["output_stage"]] == [(1, 1)]
    if shutil.which("objdump"):     # the first instruction of the stage, nothing before it
        first = res["top"]["router_stage"][0]
        assert first["instruction"] and first["before"] == ""
    assert re.search(r"router_stage +3 +75\.0% of the stages, +42\.9% of all", r.stdout)


def test_a_missing_perf_is_refused(tmp_path):
    r = run_python(ROOT / "run_scripts" / "bench_perf.py", "--perf", str(tmp_path / "none"),
                   cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and "--perf" in r.stderr and "not found" in r.stderr


def test_short_name_cuts_a_mangled_name_to_its_module_and_function(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "run_scripts"))
    import compiled_code as cc
    assert cc.short_name("_ZN4pdes7kernels5cycle17switch_allocationB4v126B62c8tJTIeFIj") == \
        "pdes.kernels.cycle.switch_allocation"
    assert cc.short_name("_ZN7cpython4pdes7kernels5cycle5stageB2v1Ex") == \
        "cpython.pdes.kernels.cycle.stage"
    assert cc.short_name("NRT_decref") == "NRT_decref"
