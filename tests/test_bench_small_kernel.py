"""run_scripts/bench_small_kernel.py: the comparison kernel carries the offered load, its
three versions make the same choices, and bad arguments are refused."""
import json

from tests.helpers import ROOT, run_python

SCRIPT = ROOT / "run_scripts" / "bench_small_kernel.py"


def test_the_versions_make_the_same_choices_and_carry_the_load(tmp_path):
    r = run_python(SCRIPT, "--cycles", "400", "--warmup", "200", "--repeats", "1",
                   cwd=tmp_path, timeout=900)
    assert r.returncode == 0, r.stderr
    assert "the small kernel's versions made the same choices" in r.stdout
    for v in ("lists", "sa-masks", "masks"):
        assert any(line.startswith(v + " ") for line in r.stdout.splitlines())
    r = run_python(SCRIPT, "--child", "--version", "masks", "--cycles", "400", "--warmup",
                   "200", "--load", "0.3", cwd=tmp_path, timeout=900)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    # 200 endpoints x 400 cycles at 0.3: about 24,000 packets, each crossing 1 or 2 links
    assert abs(res["accepted"] - 0.3) < 0.02
    assert res["ejected"] <= res["flit_hops"] <= 2 * res["ejected"] + 200 * 64
    assert 3 < res["latency_mean"] < 30


def test_bad_arguments_are_refused(tmp_path):
    for args, msg in ((["--versions", "lists,fast"], "unknown version 'fast'"),
                      (["--load", "1.5"], "--load must be in (0, 1]"),
                      (["--cycles", "0"], "--cycles and --repeats must be positive")):
        r = run_python(SCRIPT, *args, cwd=tmp_path, timeout=120)
        assert r.returncode == 2 and msg in r.stderr, (args, r.stderr)
