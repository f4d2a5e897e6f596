"""run_scripts/booksim_parity.py with a stand-in for BookSim (a script printing BookSim's
statistics lines): BookSim's output is parsed (its last, overall lines), pdes runs the same
file, a config pdes refuses is reported with pdes's error line, saturation is found; with
--speed both are timed alternately and the table gives their rates and ratios."""
import os
import re
import shutil
import textwrap

from tests.helpers import ROOT, run_python, stand_in

SCRIPT = ROOT / "run_scripts" / "booksim_parity.py"

FAKE = textwrap.dedent("""\
    import re, sys
    text = open(sys.argv[1]).read()
    rate = float(re.findall(r"injection_rate\\s*=\\s*([0-9.]+)", text)[-1])
    print("Network latency average = 99.0 (1 samples)")        # a sample period's line
    print("Accepted flit rate average= 0.001")
    if rate > 0.2:
        print("Simulation unstable, ending ...")
        sys.exit(0)
    print("====== Overall Traffic Statistics ======")
    print("Packet latency average = 13.0 (1 samples)")
    print("Network latency average = 12.5 (1 samples)")
    print("Accepted packet rate average = %g (1 samples)" % rate)
    print("Accepted flit rate average = %g (1 samples)" % rate)
    sys.exit(255)                     # BookSim's status after a completed run
    """)


def fake_booksim(tmp_path) -> str:
    return stand_in(tmp_path, "fakebooksim", FAKE)


def test_without_booksim_prints_how_to_build_it():
    """No --booksim: how to build BookSim2 (its repository, make, the tools), exit status 2."""
    r = run_python(SCRIPT, cwd=ROOT)
    assert r.returncode == 2
    assert "github.com/booksim/booksim2" in r.stderr and "cd booksim2/src && make" in r.stderr
    assert "bison" in r.stderr and "flex" in r.stderr


def test_table_with_a_stand_in_booksim(tmp_path):
    """One Slim Fly case at two loads and an example pdes refuses: BookSim's overall
    latency and accepted rate, pdes's own, their difference, BookSim's instability, the
    refusal line, and each side's saturation throughput."""
    src = tmp_path / "bs" / "src" / "examples"
    src.mkdir(parents=True)
    (src / "mesh88_lat").write_text("topology = anynet;\nrouting_function = min;\n")   # no file
    r = run_python(SCRIPT, "--booksim", fake_booksim(tmp_path), "--booksim-src", str(tmp_path / "bs"),
                   "--configs", "sf5_p1_s2,mesh88_lat", "--loads", "0.1,0.3", "--quick",
                   "--workdir", str(tmp_path / "work"), cwd=ROOT, timeout=900)
    assert r.returncode == 0, r.stderr
    rows = {tuple(ln.split()[:2]): ln.split() for ln in r.stdout.splitlines()
            if ln.startswith("sf5_p1_s2 ")}
    low, high = rows[("sf5_p1_s2", "0.1")], rows[("sf5_p1_s2", "0.3")]
    assert low[2] == "12.50" and 8 < float(low[3]) < 20
    assert float(low[4]) == round(float(low[3]) - 12.5, 2)
    assert float(low[6]) == 0.1 and abs(float(low[7]) - 0.1) < 0.01
    assert high[2] == "unstable" and high[4] == "-" and abs(float(high[7]) - 0.3) < 0.02
    refusal = [ln for ln in r.stdout.splitlines() if "pdes (every load): pdes refuses:" in ln]
    assert len(refusal) == 1 and "pdes: error: booksim.network_file:" in refusal[0]
    sat = [ln.split() for ln in r.stdout.splitlines() if ln.startswith("sf5_p1_s2") and "BookSim" in ln]
    assert sat == [["sf5_p1_s2", "BookSim", "0.1", "pdes", "0.3"]]
    assert os.path.isfile(tmp_path / "work" / "sf5.anynet")


SPEED_FAKE = textwrap.dedent("""\
    import os, re, sys, time
    text = open(sys.argv[1]).read()
    keys = {k: v for k, v in re.findall(r"^(\\w+) = ([^;]+);", text, flags=re.M)}
    with open("fake_calls.txt", "a") as log:      # the config read and the CPUs it may run on
        log.write(f"{keys['sample_period']} {keys['warmup_periods']} {keys['max_samples']} "
                  f"{keys['packet_size']} {sorted(os.sched_getaffinity(0))}\\n")
    t = time.process_time()
    while time.process_time() - t < 0.05:        # some CPU time to measure
        pass
    print("Warmed up ...Time used is 100 cycles")
    print("====== Overall Traffic Statistics ======")
    print("Network latency average = 12.5 (1 samples)")
    print("Accepted flit rate average = %s (1 samples)" % keys["injection_rate"])
    print("Time taken is %d cycles" % (int(keys["sample_period"]) * int(keys["max_samples"]) + 20))
    print("Total run time 0.04")
    sys.exit(255)
    """)


def test_speed_alternates_and_prints_ratios(tmp_path):
    """--speed runs BookSim and pdes alternately on one pinned CPU with the same fixed-length
    config, and prints per pair each side's cycles, times and router-cycles rates, the
    pdes/BookSim ratios (process and loop) and per load their medians."""
    fake = stand_in(tmp_path, "fakebooksim", SPEED_FAKE)
    work = tmp_path / "work"
    r = run_python(SCRIPT, "--speed", "--booksim", str(fake), "--q", "5", "--p", "4", "--loads",
                   "0.2", "--repeats", "2", "--cycles", "400", "--workdir", str(work), cwd=ROOT,
                   timeout=900)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0].startswith("machine: ") and "CPUs" in out[0]
    assert out[1].startswith("load average at start: ")
    assert any(ln.startswith("load average at end: ") for ln in out)
    pinned = shutil.which("taskset") is not None
    if pinned:
        assert re.fullmatch(r"pinned to CPU \d+ with taskset", out[2]), out[2]
    else:
        assert out[2] == "taskset not found: the runs are NOT pinned to a core"
    # the run lines, in the order the runs ended: BookSim, pdes, BookSim, pdes
    runs = [ln.split() for ln in out if ln[:4].strip().isdigit()]
    assert [(x[0], x[1], x[5]) for x in runs] == [("1", "BookSim", "1:"), ("2", "pdes", "1:"),
                                                  ("3", "BookSim", "2:"), ("4", "pdes", "2:")]
    assert all(x[6] == "420" for x in runs if x[1] == "BookSim")
    assert all(int(x[6]) >= 400 and int(x[6]) % 100 == 0 for x in runs if x[1] == "pdes")
    calls = (work / "fake_calls.txt").read_text().splitlines()
    cpu = int(out[2].split()[3]) if pinned else None
    assert len(calls) == 2 and all(c.startswith("100 1 4 1 ") for c in calls)
    if pinned:
        assert all(c.endswith(f"[{cpu}]") for c in calls)
    rows = {tuple(ln.split()[:2]): ln.split() for ln in out if ln.startswith("  0.2 ")}
    assert set(rows) == {("0.2", "1"), ("0.2", "2"), ("0.2", "median")}
    ratios = []
    for pair in ("1", "2"):
        row = [x for x in rows[("0.2", pair)] if x != "|"]
        # load pair | cycles CPU wall /CPU-s /run-s | cycles CPU wall kernel /CPU-s /kernel-s | ratios
        b_cpu_rate = float(row[5].replace(",", ""))          # 50 routers x 420 cycles / CPU s
        assert abs(b_cpu_rate * float(row[3]) - 50 * 420) <= 0.005 * b_cpu_rate + 1
        assert float(row[6].replace(",", "")) == 50 * 420 / 0.04
        p_cpu_rate = float(row[11].replace(",", ""))
        assert abs(p_cpu_rate * float(row[8]) - 50 * int(row[7])) <= 0.005 * p_cpu_rate + 1
        assert abs(float(row[13]) / (p_cpu_rate / b_cpu_rate) - 1) < 0.01
        p_kernel_rate = float(row[12].replace(",", ""))
        assert abs(float(row[14]) / (p_kernel_rate / (50 * 420 / 0.04)) - 1) < 0.01
        ratios.append(float(row[13]))
    med = [x for x in rows[("0.2", "median")] if x != "|"]
    assert abs(float(med[-2]) / (sum(ratios) / 2) - 1) < 0.01


def test_speed_options_checked_first(tmp_path):
    """A --speed option without --speed, a parity option with it, or a --cycles that is not a
    multiple of 4 is refused with one line and status 2, before any run."""
    fake = fake_booksim(tmp_path)
    for args, msg in ((["--q", "5"], "--q: only with --speed"),
                      (["--speed", "--quick"], "--quick: not used with --speed"),
                      (["--speed", "--cycles", "402"], "--cycles: must be a multiple of 4")):
        r = run_python(SCRIPT, "--booksim", fake, "--workdir", str(tmp_path / "w"), *args, cwd=ROOT)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and r.stdout == "", r
        assert len(lines) == 1 and lines[0].startswith(f"booksim_parity: {msg}"), lines
    assert not (tmp_path / "w").exists()


SEEDED_FAKE = FAKE.replace('print("Network latency average = 12.5 (1 samples)")',
                           'seed = int(re.findall(r"^seed\\s*=\\s*(\\d+)", text, flags=re.M)[-1])\n'
                           'print("Network latency average = %g (1 samples)" % (10 + seed))')


def test_seeds_give_means_and_ranges(tmp_path):
    """--seeds 2 runs every (config, load) with seed = 1 and seed = 2 on each side: the
    latency column is the mean over the seeds, two more columns give each side's range, a
    load is unstable when a seed's run is; --seeds 0 is refused before any run."""
    assert SEEDED_FAKE != FAKE
    fake = stand_in(tmp_path, "seededbooksim", SEEDED_FAKE)
    r = run_python(SCRIPT, "--booksim", str(fake), "--configs", "sf5_p1_s2", "--loads", "0.1,0.3",
                   "--seeds", "2", "--quick", "--workdir", str(tmp_path / "work"), cwd=ROOT,
                   timeout=900)
    assert r.returncode == 0, r.stderr
    head = r.stdout.splitlines()[0]
    assert head.split()[-4:] == ["BookSim", "seeds", "pdes", "seeds"]
    rows = {ln.split()[1]: ln.split() for ln in r.stdout.splitlines() if ln.startswith("sf5_p1_s2 ")
            and "BookSim" not in ln}
    low = rows["0.1"]
    assert low[2] == "11.50" and low[8] == "11.00..12.00"
    lo, hi = (float(x) for x in low[9].split(".."))
    assert lo <= float(low[3]) <= hi
    assert rows["0.3"][2] == "unstable" and rows["0.3"][8] == "-"
    for seed in (1, 2):
        text = (tmp_path / "work" / f"sf5_p1_s2_0.1_s{seed}.cfg").read_text()
        assert text.rstrip().endswith(f"seed = {seed};")
    bad = run_python(SCRIPT, "--booksim", str(fake), "--seeds", "0", "--workdir",
                     str(tmp_path / "w2"), cwd=ROOT)
    assert bad.returncode == 2 and bad.stderr.strip() == "booksim_parity: --seeds: must be in 1..100"
    assert not (tmp_path / "w2").exists()
