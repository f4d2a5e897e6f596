"""run_scripts/booksim_parity.py with a stand-in for BookSim (a script printing BookSim's
statistics lines): BookSim's output is parsed (its last, overall lines), pdes runs the same
file, a config pdes refuses is reported with pdes's error line, saturation is found."""
import os
import sys
import textwrap

from tests.helpers import ROOT, run_python

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
    path = tmp_path / "fakebooksim"
    path.write_text(f"#!{sys.executable}\n" + FAKE)
    path.chmod(0o755)
    return str(path)


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
