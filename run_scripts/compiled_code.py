"""Where a run's compiled code lies: the object code of every function Numba loads or
compiles in a process, the address it was loaded at, and which of the window loop's stages
it belongs to; used by ``bench_perf.py`` (clock samples) and ``bench_cachegrind.py --stages``
(Valgrind's counts per instruction) to map an instruction address to a stage and to an
offset in an object file that ``objdump`` disassembles.
"""
from __future__ import annotations

import bisect
import os
import re
import subprocess
import sys

STAGES = ("endpoint_stage", "router_stage", "output_stage")
OTHER = "other compiled code"
OUTSIDE = "outside the compiled code"


def stage_of(name: str) -> str:
    """The window loop's stage a compiled function's symbol belongs to, else :data:`OTHER`."""
    for s in STAGES:
        if s in name:
            return s
    return OTHER


def short_name(symbol: str) -> str:
    """A compiled function's mangled name cut to its module path and name (Numba mangles
    ``pdes.kernels.cycle.move_flit`` as ``_ZN4pdes7kernels5cycle9move_flit...``)."""
    parts, i = [], 0
    m = re.match(r"_ZN(.*)", symbol)
    rest = m.group(1) if m else symbol
    while True:
        d = re.match(r"(\d+)", rest[i:])
        if not d:
            break
        n = int(d.group(1))
        start = i + len(d.group(1))
        parts.append(rest[start:start + n])
        i = start + n
        if i < len(rest) and rest[i] == "B":     # Numba's ABI tags end the name
            break
    return ".".join(parts) if parts else symbol[:80]


def capture() -> list:
    """Keep ``(library, object code)`` of every compiled library from now on, in the list
    returned (filled as the process loads or compiles kernels)."""
    from numba.core import codegen
    captured = []
    keep = codegen.CPUCodeLibrary._set_compiled_object

    def hook(self, value):
        captured.append((self, value))
        return keep(self, value)
    codegen.CPUCodeLibrary._set_compiled_object = hook
    return captured


def symbols(captured, outdir: str) -> list:
    """[address, size, name, object file, offset] of the functions defined in the object
    code of each compiled library: the object is written to ``outdir``, its symbols read with
    ``nm``, and its load address found from a symbol the JIT resolves by name."""
    out = []
    for i, (lib, obj) in enumerate(captured):
        path = os.path.join(outdir, f"lib{i}.o")
        with open(path, "wb") as f:
            f.write(obj)
        nm = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True,
                            text=True, check=True).stdout
        rows = []
        for line in nm.splitlines():
            p = line.split()
            if len(p) == 4 and p[2] in "TtWw":
                rows.append((int(p[0], 16), int(p[1], 16), p[2], p[3]))
        base = None
        for value, _, kind, name in rows:
            if kind != "T":
                continue
            try:
                addr = lib._codegen._engine.get_function_address(name)
            except Exception:      # noqa: BLE001 - a symbol the engine does not know
                addr = 0
            if addr:
                base = addr - value
                break
        if base is None:
            continue
        out += [[base + value, size, name, path, value] for value, size, _, name in rows]
    return out


def locator(syms):
    """A function of an instruction address: ``(symbol name, offset in its object file)``
    of the compiled function holding it, or None (``syms`` from :func:`symbols`)."""
    rng = sorted((int(a), int(a) + int(s), n, int(off)) for a, s, n, _, off in syms)
    starts = [r[0] for r in rng]

    def where(ip: int):
        i = bisect.bisect_right(starts, ip) - 1
        if i >= 0 and ip < rng[i][1]:
            lo, _, name, off = rng[i]
            return name, off + ip - lo
        return None
    return where


def disassemble(objdump: str | None, path: str, lo: int, hi: int) -> dict:
    """{offset: instruction text} of ``path`` between two offsets (empty without objdump)."""
    if objdump is None:
        return {}
    r = subprocess.run([objdump, "-d", "--no-show-raw-insn", f"--start-address={lo}",
                        f"--stop-address={hi}", path], capture_output=True, text=True)
    out = {}
    for line in r.stdout.splitlines():
        head, sep, text = line.partition(":\t")
        if sep and head.strip() and all(c in "0123456789abcdef" for c in head.strip()):
            text = text.split(" <", 1)[0]          # drop the (long, mangled) target names
            out[int(head.strip(), 16)] = " ".join(text.split())
    return out


if __name__ == "__main__":
    print("compiled_code.py: a module of bench_perf.py and bench_cachegrind.py, not a script: "
          "run one of those", file=sys.stderr)
    sys.exit(2)
