"""Helpers of the BookSim and export tests: run the CLI, write a small anynet ring."""
import subprocess
import sys


def pdes_cmd(*args, cwd=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "pdes", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def ring(tmp_path, weights=None, name="net.anynet"):
    """An anynet ring of 6 routers with 2 nodes each (weights per link or none)."""
    lines = []
    for r in range(6):
        w = f" {weights[r]}" if weights else ""
        lines.append(f"router {r} node {2 * r} node {2 * r + 1} router {(r + 1) % 6}{w}")
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return str(path)
