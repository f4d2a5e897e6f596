"""The GPCNeT-style congestion script (run_scripts/congestion.py): its tables, CSV and the rule
that every congestor runs for the whole of the canaries' run."""
import csv
import re

import pytest

from tests.helpers import ROOT, run_python

SCRIPT = ROOT / "run_scripts" / "congestion.py"


def test_congestion_script_covers_the_canaries(tmp_path):
    """A tiny study (Slim Fly q=5, min): one row per canary whose impact factors are congested /
    alone; congestors guessed too short are lengthened until each ends after the canaries."""
    out = tmp_path / "c.csv"
    r = run_python(SCRIPT, "--networks", "sf", "--routings", "min", "--ring-iterations", "6",
                   "--allreduce-iterations", "3", "--canary-start", "100",
                   "--congestor-bytes", "64", "--cover", "0.05", "--out", str(out),
                   cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "shared run 2" in r.stderr and "warning" not in r.stderr, r.stderr
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(row["network"], row["routing"], row["canary"]) for row in rows] == [
        ("Slim Fly q=5, p=4", "min", "ring"), ("Slim Fly q=5, p=4", "min", "allreduce")]
    assert [int(row["processes"]) for row in rows] == [20, 20]        # 20% of 200, half each
    for row in rows:
        v = {k: float(x) for k, x in row.items() if k not in ("network", "routing", "canary")}
        assert v["impact_mean"] == pytest.approx(v["mean_congested"] / v["mean_alone"])
        assert v["impact_p99"] == pytest.approx(v["p99_congested"] / v["p99_alone"])
        assert v["slowdown"] == pytest.approx(v["cycles_congested"] / v["cycles_alone"])
        assert v["mean_alone"] > 0 and v["cycles_alone"] > 0
    # second table: canaries' end, then per congestor "processes, iterations, end"
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("| Slim Fly") and ", " in
               ln.split("|")[4]]
    cells = [c.strip() for c in line.strip("|").split("|")]
    canaries_end = int(cells[2])
    congestors = [tuple(map(int, re.split(r",\s*", c))) for c in cells[3:]]
    assert [p for p, _, _ in congestors] == [54, 53, 53]             # 80% of 200, a third each
    assert all(end > canaries_end for _, _, end in congestors), line


@pytest.mark.parametrize("args, err", [
    (["--networks", "sf,nosuch"], "--networks: unknown 'nosuch'"),
    (["--canary-share", "1.5"], "--canary-share: must be in (0, 1)"),
    (["--ring-iterations", "0"], "--ring-iterations: must be >= 1"),
])
def test_congestion_script_refuses_bad_options(args, err):
    """A bad option ends the script with status 2 and one error line naming it, before any run."""
    r = run_python(SCRIPT, *args, cwd=ROOT, timeout=120)
    assert r.returncode == 2
    assert err in r.stderr.strip().splitlines()[-1]
    assert "shared run" not in r.stderr
