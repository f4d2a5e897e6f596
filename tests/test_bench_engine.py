"""run_scripts/bench_engine.py --booksim with a stand-in for BookSim: both simulators run
alternately on one pinned core, BookSim on the Slim Fly the script exports with the
parity cases' keys and a fixed length, and the table gives each pair's rates, their ratio
and the medians."""
import re
import shutil
import textwrap

from tests.helpers import ROOT, run_python, stand_in

SCRIPT = ROOT / "run_scripts" / "bench_engine.py"

# A stand-in BookSim: logs the keys it read and its CPUs, spends a little CPU time and
# prints the lines run_scripts/booksim_parity.py parses (cycles, run time).
FAKE = textwrap.dedent("""\
    import os, re, sys, time
    text = open(sys.argv[1]).read()
    keys = {k: v for k, v in re.findall(r"^(\\w+) = ([^;]+);", text, flags=re.M)}
    with open(os.environ["FAKE_LOG"], "a") as log:
        log.write(f"{keys['topology']} {keys['num_vcs']} {keys['vc_buf_size']} "
                  f"{keys['internal_speedup']} {keys['injection_rate']} {keys['sample_period']} "
                  f"{keys['warmup_periods']} {keys['max_samples']} "
                  f"{sorted(os.sched_getaffinity(0))} {time.time()}\\n")
    print("====== Overall Traffic Statistics ======")
    print("Network latency average = 12.5 (1 samples)")
    print("Accepted flit rate average = %s (1 samples)" % keys["injection_rate"])
    print("Time taken is %d cycles" % (int(keys["sample_period"]) * int(keys["max_samples"]) + 20))
    print("Total run time 0.04")
    sys.exit(255)
    """)


def test_booksim_side_by_side_alternates_and_prints_ratios(tmp_path):
    fake = stand_in(tmp_path, "fakebooksim", FAKE)
    log = tmp_path / "calls.txt"
    r = run_python(SCRIPT, "--booksim", str(fake), "--q", "5", "--p", "4", "--loads", "0.2",
                   "--warmup", "100", "--measure", "300", "--repeats", "2", cwd=tmp_path,
                   timeout=900, env={"FAKE_LOG": str(log)})
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0].startswith("machine: ") and out[1].startswith("load average at start: ")
    pinned = shutil.which("taskset") is not None
    cpu = None
    if pinned:
        m = re.fullmatch(r"pinned to CPU (\d+) with taskset", out[2])
        assert m, out[2]
        cpu = int(m.group(1))
    # BookSim read the anynet Slim Fly, 2 VCs x 32 flits, speedup 2, the load, 4 periods of
    # (100 + 300) / 4 cycles, one of them warm-up; pinned to the CPU named
    calls = log.read_text().splitlines()
    assert len(calls) == 2
    for c in calls:
        assert c.startswith("anynet 2 32 2.0 0.2 100 1 4 "), c
        if pinned:
            assert f"[{cpu}]" in c
    pairs = [ln for ln in out if ln.startswith("load 0.2 pair ")]
    assert [ln.split(":")[0] for ln in pairs] == ["load 0.2 pair 1", "load 0.2 pair 2"]
    assert all("BookSim 420 cycles in 0.04 s, pdes " in ln for ln in pairs)
    rows = {ln.split()[1]: ln.split() for ln in out if ln.startswith("  0.2 ")}
    assert set(rows) == {"1", "2", "median"}
    ratios = []
    for pair in ("1", "2"):
        _, _, rb, rp, ratio = rows[pair]
        assert float(rb.replace(",", "")) == 50 * 420 / 0.04
        assert abs(float(ratio) - float(rp.replace(",", "")) / (50 * 420 / 0.04)) < 0.06
        ratios.append(float(ratio))
    med = rows["median"]
    assert float(med[2].replace(",", "")) == 50 * 420 / 0.04
    assert abs(float(med[4]) - sum(ratios) / 2) < 0.06


def test_side_by_side_options_are_checked(tmp_path):
    """--repeats or --cpu without --booksim, a --booksim that is not an executable file, and a
    load out of range are refused before any run."""
    r = run_python(SCRIPT, "--repeats", "2", cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and "--repeats, --cpu: only with --booksim" in r.stderr
    r = run_python(SCRIPT, "--booksim", str(tmp_path / "nope"), cwd=tmp_path, timeout=120)
    assert r.returncode == 1 and "is not an executable file" in r.stderr
    fake = stand_in(tmp_path, "fakebooksim", FAKE)
    r = run_python(SCRIPT, "--booksim", str(fake), "--loads", "1.5", cwd=tmp_path, timeout=120)
    assert r.returncode == 1 and "--loads: every load must be in (0, 1]" in r.stderr
