"""The kernels are compiled without negative-index wraparound (models.core.jit): check the hook
and the premise it rests on, that no kernel ever indexes an array with a negative value."""
import os
import textwrap

import pytest

from models.core import jit
from tests.helpers import ROOT, run_python


def run_py(code, tmp_path, cwd=ROOT, **env):
    """Run ``code`` in a child Python with its own Numba cache under ``tmp_path``
    (``$NUMBA_CACHE_DIR``; a ``$PDES_CACHE_DIR`` of the caller's, which would win, is
    emptied: an empty value is unset for the project's cache)."""
    return run_python("-c", textwrap.dedent(code), cwd=cwd, timeout=900,
                      env=dict(NUMBA_CACHE_DIR=str(tmp_path / "cache"), PDES_CACHE_DIR="",
                               **env))


def test_hook_is_installed():
    assert jit.no_wraparound() and jit.NO_WRAPAROUND


def test_hook_applies_to_kernel_modules_only(tmp_path):
    """Under NUMBA_BOUNDSCHECK=1 a negative index is out of bounds in a pdes.kernels
    function compiled by the project's wrapper, and still means "from the end" in the
    wrapper's other functions and in functions compiled by Numba directly (even one
    that claims to live in pdes.kernels)."""
    (tmp_path / "probe.py").write_text(textwrap.dedent("""
        import numba
        from models.core import jit

        def get(a, i):
            return a[i]

        def get_k(a, i):
            return a[i]

        def get_plain(a, i):
            return a[i]
        get_k.__module__ = "pdes.kernels.probe"
        get_plain.__module__ = "pdes.kernels.probe"
        get, get_k, get_plain = jit.njit(get), jit.njit(get_k), numba.njit(get_plain)
        """))
    r = run_py("""
        import numpy as np
        from numba.np import arrayobj
        orig = arrayobj.fix_integer_index
        from probe import get, get_k, get_plain
        a = np.arange(5)
        assert get(a, -1) == 4 and get_k(a, 3) == 3 and get_plain(a, -1) == 4
        assert arrayobj.fix_integer_index is orig      # restored after each compilation
        try:
            get_k(a, -1)
        except IndexError:
            print("kernel: out of bounds")
        """, tmp_path, cwd=tmp_path, NUMBA_BOUNDSCHECK="1")      # probe.py is in the child's cwd
    assert r.returncode == 0, r.stderr
    assert "kernel: out of bounds" in r.stdout


def test_import_changes_no_numba_state(tmp_path):
    """Importing the jit wrapper and the engine leaves Numba's process-wide settings alone;
    the project's functions are cached in the source-keyed directory all the same."""
    r = run_py("""
        import numba
        from numba.core import caching
        from numba.np import arrayobj
        before = (numba.config.CACHE_DIR, arrayobj.fix_integer_index,
                  list(caching.CacheImpl._locator_classes))
        import models.core.jit
        import pdes.engine  # noqa: F401
        from pdes.kernels import cycle
        assert before == (numba.config.CACHE_DIR, arrayobj.fix_integer_index,
                          list(caching.CacheImpl._locator_classes))
        print(cycle.endpoint_stage.stats.cache_path)
        """, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().startswith(os.path.join(str(tmp_path / "cache"), "numba-"))


def test_numba_array_functions_load_without_scipy_blas(tmp_path):
    """Importing the jit wrapper loads none of Numba's array lowering; the first compilation
    of a project function loads it (and Numba's other registries) without importing SciPy's
    BLAS, records a BLAS as present (SciPy is a dependency), and linear algebra in compiled
    code still works: it imports SciPy's BLAS when it compiles."""
    (tmp_path / "probe.py").write_text(textwrap.dedent("""
        from models.core import jit

        def total(a):
            return a.sum()
        total = jit.njit(total)
        """))
    r = run_py("""
        import sys
        import numpy as np
        import numba
        import models.core.jit  # noqa: F401
        print("at import:", "numba.np.arraymath" in sys.modules, "numba.np.arrayobj" in sys.modules)
        from probe import total
        assert total(np.arange(4.0)) == 6.0
        from numba.np import arraymath
        print("blas imported:", "scipy.linalg.cython_blas" in sys.modules, arraymath._HAVE_BLAS)

        @numba.njit
        def dot(a, b):
            return np.dot(a, b)
        a = np.arange(4.0)
        assert dot(a, a) == 14.0
        print("after dot:", "scipy.linalg.cython_blas" in sys.modules)
        """, tmp_path, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "at import: False False" in r.stdout
    assert "blas imported: False True" in r.stdout
    assert "after dot: True" in r.stdout


def test_kernel_package_import_writes_no_file(tmp_path):
    """Importing the kernels creates, deletes or rewrites no file next to the sources."""
    kdir = os.path.join(str(ROOT), "pdes", "kernels")

    def listing():
        out = {}
        for d, _, files in os.walk(kdir):
            for f in files:
                p = os.path.join(d, f)
                out[p] = os.stat(p).st_mtime_ns
        return out
    before = listing()
    r = run_py("import pdes.kernels.cycle, pdes.kernels.exchange", tmp_path,
               PYTHONDONTWRITEBYTECODE="1")
    assert r.returncode == 0, r.stderr
    assert listing() == before


@pytest.mark.slow     # compiles every kernel again with bounds checks: minutes, no cache
def test_engine_never_indexes_negatively(tmp_path):
    """Every kernel path (routings, VC schemes, multi-flit packets, finite exchanges, the
    exchange between parts) runs with bounds checks on and gives the unchecked result."""
    r = run_py("""
        import numpy as np
        from pdes import config as C
        from pdes.build import prepare
        from pdes.engine import run_local
        from pdes.kernels import cycle
        cycle.PF_MIN_FLITS = 0        # the stages' prefetch pipelines on in every cycle
        CASES = [
            ["traffic.load=0.9", "router.packet_size=3", "router.link_latency=2"],
            ["routing.algorithm=ugal_l", "router.num_vcs=4", "traffic.pattern=randperm"],
            ["routing.algorithm=valiant", "router.num_vcs=4", "router.packet_size=2"],
            ["topology.name=dragonfly", "topology.h=2", "routing.algorithm=dragonfly_ugal"],
            ["topology.name=galaxyfly", "topology.n=3", "topology.q=5", "topology.a=2",
             "topology.p=2", "routing.algorithm=nar"],
            ["routing.algorithm=layered", "routing.layers=3", "router.num_vcs=4"],
            ["routing.algorithm=ugal_g", "router.num_vcs=4"],
            ["traffic.pattern=alltoall", "traffic.message_packets=2"],
            ["router.buffer_flits=0", "router.vc_buffer_flits=0", "router.packet_size=2"],
        ]
        for sets in CASES:
            cfg = C.resolve({}, ["measure.warmup_cycles=200", "measure.measure_cycles=300",
                                 "measure.drain_cycles=2000", "traffic.load=0.5", *sets])
            prep = prepare(cfg)
            R = prep.topo.n_routers
            res = run_local(cfg, owner=np.arange(R) % 3, prep=prep)
            print("ok", sets[0], res["summary"]["accepted_load"])
        """, tmp_path, NUMBA_BOUNDSCHECK="1")
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count("ok ") == 9, r.stdout


def test_cache_directory_is_keyed_on_every_source(tmp_path):
    """An edit to any project source (here a helper inlined into the cycle kernel) moves
    the compiled-code cache to a new directory, so stale machine code is never loaded."""
    import shutil

    root = tmp_path / "tree"
    for pkg in ("models", "pdes"):
        shutil.copytree(ROOT / pkg, root / pkg,
                        ignore=shutil.ignore_patterns("__pycache__"))
    before = jit.source_digest(root)
    assert before == jit.source_digest(ROOT)
    bits = root / "models" / "core" / "bits.py"
    bits.write_text(bits.read_text() + "\n# an edit\n")
    assert jit.source_digest(root) != before
    r = run_py("""
        from models.core import jit
        print(jit.cache_dir())
    """, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == os.path.join(str(tmp_path / "cache"), "numba-" + before)


def test_block_copier_copies_an_ir_as_one_deepcopy_would():
    """The inliner's block copier: the copy of each block prints as the original, shares no
    statement or variable with it, and the blocks of one copy share one scope copy (as the
    original's blocks share one scope); copying the same IR again, or another IR, starts
    afresh; a non-block, or a call with its own memo, is an ordinary deepcopy."""
    import copy

    from numba.core import compiler, ir

    def f(a, n):
        s = 0
        for i in range(n):
            if a[i] > 0:
                s += a[i]
            else:
                s -= 1
        return s

    fir = compiler.run_frontend(f)
    c = jit._BlockCopier()

    def copy_blocks(blocks):
        return {label: c.deepcopy(b) for label, b in blocks.items()}

    one = copy_blocks(fir.blocks)
    two = copy_blocks(fir.blocks)
    assert len(fir.blocks) > 3
    assert len({id(b.scope) for b in fir.blocks.values()}) == 1
    for copies in (one, two):
        assert {id(b.scope) for b in copies.values()} == {id(copies[min(copies)].scope)}
        assert copies[min(copies)].scope is not fir.blocks[min(fir.blocks)].scope
        for label, b in fir.blocks.items():
            assert [str(x) for x in copies[label].body] == [str(x) for x in b.body]
            assert all(x is not y for x, y in zip(copies[label].body, b.body))
    assert one[min(one)].scope is not two[min(two)].scope
    assert one[min(one)].scope.localvars._con.keys() == fir.blocks[min(fir.blocks)].scope.localvars._con.keys()
    again = copy_blocks(one)             # a copy of the copy: a scope of its own
    assert again[min(again)].scope is not one[min(one)].scope
    loc = ir.Loc("x.py", 1)
    assert c.deepcopy([loc]) == [loc] and c.deepcopy([loc])[0] is not loc
    memo = {}
    b0 = fir.blocks[min(fir.blocks)]
    assert c.deepcopy(b0, memo).scope is memo[id(b0.scope)]
    c.release()
    assert copy.deepcopy(3) == 3


INLINE_PROBE = textwrap.dedent("""
    from models.core import jit

    @jit.njit_inline
    def helper(a, i):
        if a[i] > 0:
            return a[i] * 2
        return -1

    @jit.njit
    def outer(a):
        s = 0
        for i in range(a.shape[0]):
            s += helper(a, i)
        return s
    """)
"""A module of two project functions, one inlined into the other with several blocks:
``outer(a)`` is the sum over ``a`` of ``2 * x`` for positive ``x``, else -1."""


def test_block_copier_is_installed_only_while_the_project_compiles(tmp_path):
    """Numba's inliner uses the copy module, except while a project function compiles; a
    project function with inlined helpers of several blocks computes what Python does."""
    (tmp_path / "probe_inline.py").write_text(INLINE_PROBE)
    r = run_py("""
        import copy
        import sys
        import numpy as np
        from numba.core import inline_closurecall as icc
        from models.core import jit
        sys.path.insert(0, %r)
        import probe_inline

        orig = jit._BlockCopier.deepcopy
        calls = []
        def spy(self, x, memo=None):
            calls.append(icc.copy is jit._copier)
            return orig(self, x, memo)
        jit._BlockCopier.deepcopy = spy
        assert icc.copy is copy
        a = np.array([3, -1, 0, 5], dtype=np.int64)
        assert probe_inline.outer(a) == 3 * 2 - 1 - 1 + 5 * 2
        assert icc.copy is copy and calls and all(calls)
        print(len(calls))
        """ % str(tmp_path), tmp_path)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.strip()) > 0


def test_no_garbage_collection_while_the_project_compiles(tmp_path):
    """While a project function compiles (nested compilations included) the garbage
    collector is off, and on again after; a process that turned it off keeps it off."""
    (tmp_path / "probe_gc.py").write_text(INLINE_PROBE + textwrap.dedent("""

        @jit.njit
        def other(a):
            return a.sum()
        """))
    r = run_py("""
        import gc
        import sys
        import numpy as np
        from models.core import jit
        sys.path.insert(0, %r)
        import probe_gc

        seen = []
        orig = jit._copy_hook
        def spy(on):
            seen.append((on, gc.isenabled()))
            return orig(on)
        jit._copy_hook = spy
        a = np.array([3, -1, 0, 5], dtype=np.int64)
        assert gc.isenabled()
        assert probe_gc.outer(a) == 3 * 2 - 1 - 1 + 5 * 2
        assert gc.isenabled()
        assert seen == [(True, False), (False, True)], seen
        gc.disable()
        assert probe_gc.other(a) == 7
        assert not gc.isenabled()                # not turned on: it was not ours
        print(len(seen))
        """ % str(tmp_path), tmp_path)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.strip()) == 4


def test_cached_functions_load_without_numba_registries(tmp_path):
    """A project function loaded from the cache runs without the target context's refresh
    (Numba's registries: none of its 55 modules are imported) and without importing the
    Numba modules its environments name; a later compilation in the same process refreshes
    the context itself and compiles code that needs the registries."""
    (tmp_path / "probe.py").write_text(textwrap.dedent("""
        import numpy as np
        from models.core import jit

        def doubled(n):
            return np.arange(n) * 2          # allocates: needs the runtime (NRT)

        def keyed(a, s):
            return hash((a[0], 7)) == hash((a[0], 7)) and hash(s) != 0  # a string's: the secret

        def sorted_sum(a):
            return np.sort(a)[:2].sum()      # NumPy's array functions (numba.np.arraymath)

        def made(n):
            return np.empty(n).size          # raises from Numba's array code for n < 0
        doubled, keyed, sorted_sum = jit.njit(doubled), jit.njit(keyed), jit.njit(sorted_sum)
        made = jit.njit(made)
        """))
    first = run_py("""
        import numpy as np
        from probe import doubled, keyed, made, sorted_sum
        assert doubled(4).tolist() == [0, 2, 4, 6] and keyed(np.arange(3), "ab") and made(3) == 3
        assert sorted_sum(np.array([3.0, 1.0, 2.0])) == 3.0
        assert doubled.stats.cache_misses and keyed.stats.cache_misses
        """, tmp_path, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    r = run_py("""
        import sys
        import numpy as np
        from numba.core import base
        calls = []
        refresh = base.BaseContext.refresh
        base.BaseContext.refresh = lambda self: (calls.append(1), refresh(self))[1]
        from numba.core.runtime import nrtdynmod
        nrt_built = []
        create_nrt = nrtdynmod.create_nrt_module
        nrtdynmod.create_nrt_module = lambda ctx: (nrt_built.append(1), create_nrt(ctx))[1]
        from probe import doubled, keyed, sorted_sum
        assert doubled._cache._cache is None        # made when first used, not at import
        assert doubled(5).tolist() == [0, 2, 4, 6, 8]
        # the runtime's functions (NRT: the array's reference counts) loaded from the cache
        print("runtime compiled:", len(nrt_built))
        # loading code that used none of NumPy's array functions imports neither them nor
        # Numba's linear algebra (which their BLAS probe is in)
        print("plain:", "numba.np.arraymath" in sys.modules, "numba.np.linalg" in sys.modules,
              "numba.cpython.hashing" in sys.modules)
        assert keyed(np.arange(3), "ab")      # loading it adds the hash secret's symbols
        print("hash secret:", "numba.cpython.hashing" in sys.modules)
        assert sorted_sum(np.array([3.0, 1.0, 2.0])) == 3.0
        assert doubled.stats.cache_hits and keyed.stats.cache_hits and sorted_sum.stats.cache_hits
        print("loaded:", len(calls), "numba.typed.typedlist" in sys.modules)
        # nor does loading code that used them (its environments name Numba's array modules,
        # which are not imported to rebuild them), and the code runs
        from probe import made
        try:
            made(-1)
        except ValueError as e:
            print("raised:", e)
        print("arrays:", "numba.np.arraymath" in sys.modules, "numba.np.arrayobj" in sys.modules,
              "scipy.linalg.cython_blas" in sys.modules, bool(made.stats.cache_hits))

        import numba
        from numba.typed import List

        @numba.njit
        def total(xs):
            return np.sum(np.asarray([x for x in xs]))
        assert total(List([1.0, 2.0, 3.0])) == 6.0
        print("compiled:", len(calls) > 0)
        """, tmp_path, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "plain: False False False" in r.stdout
    assert "hash secret: True" in r.stdout
    assert "runtime compiled: 0" in r.stdout
    assert list((tmp_path / "cache").glob("numba-*/runtime/nrt-*.pkl"))
    assert "loaded: 0 False" in r.stdout
    assert "raised: negative dimensions not allowed" in r.stdout
    assert "arrays: False False False True" in r.stdout
    assert "compiled: True" in r.stdout


def test_llvm_inline_helpers_compile_once_and_leave_no_call(tmp_path):
    """A helper decorated with ``njit_llvm_inline`` is compiled by Numba once for two callers
    (``njit_inline`` would type and lower it inside each), carries LLVM's ``alwaysinline``
    attribute, and neither caller's optimized code calls it; the hook that adds the
    attribute is Numba's own again when no project function compiles."""
    (tmp_path / "probe.py").write_text(textwrap.dedent("""
        from models.core import jit

        def scaled_sum(a, k):
            s = 0
            for i in range(a.shape[0]):
                s += a[i] * k
            return s

        def first(a):
            return scaled_sum(a, a[2]) + 1

        def second(a):
            return scaled_sum(a, a[3]) - 1
        scaled_sum = jit.njit_llvm_inline(scaled_sum)
        first, second = jit.njit(first), jit.njit(second)
        """))
    r = run_py("""
        import re
        import numpy as np
        from numba.core.callconv import CPUCallConv
        orig = CPUCallConv.decorate_function
        from probe import first, second, scaled_sum
        a = np.arange(5)
        assert first(a) == 21 and second(a) == 29
        assert CPUCallConv.decorate_function is orig      # restored after each compilation
        print("helper overloads:", len(scaled_sum.overloads))
        helper_ir = next(iter(scaled_sum.inspect_llvm().values()))
        print("alwaysinline:", bool(re.search(r"define[^\\n]*scaled_sum[^\\n]*#", helper_ir))
              and "alwaysinline" in helper_ir)
        for f in (first, second):
            opt = next(iter(f.inspect_llvm().values()))
            calls = re.findall(r"call[^@\\n]*@\\"?([\\w.$]+)", opt)
            print(f.__name__, "calls helper:", any("scaled_sum" in c for c in calls))
        """, tmp_path, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "helper overloads: 1" in r.stdout
    assert "alwaysinline: True" in r.stdout
    assert "first calls helper: False" in r.stdout
    assert "second calls helper: False" in r.stdout


def test_borrowing_helpers_have_no_python_wrapper(tmp_path):
    """A function decorated with ``njit_borrow`` is compiled without the CPython and C
    wrappers (in a run only compiled code calls it): a caller compiled in one process and
    loaded from the cache in the next gives the right result, and the helper's library
    defines no wrapper.  A call from Python (as a test of a kernel makes) goes through a
    compiled function that calls it, with its defaults, instead of jumping to no code."""
    (tmp_path / "probe.py").write_text(textwrap.dedent("""
        from models.core import jit

        def doubled(a, k=2):
            s = 0
            for i in range(a.shape[0]):
                s += k * a[i]
            return s

        def caller(a):
            return doubled(a) + 1
        doubled, caller = jit.njit_borrow(doubled), jit.njit(caller)
        """))
    code = """
        import numpy as np
        from probe import caller, doubled
        assert caller(np.arange(4)) == 13
        print("cache:", "hit" if caller.stats.cache_hits else "miss")
        for sig, cres in doubled.overloads.items():      # compiled in this process
            names = [f.name for f in cres.library._final_module.functions]
            print("wrappers:", [n for n in names if n.startswith(("cpython.", "cfunc."))])
        print("from Python:", doubled(np.arange(4)), doubled(np.arange(4), 3),
              doubled(np.arange(4), k=1))
        """
    for run in ("miss", "hit"):
        r = run_py(code, tmp_path, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert f"cache: {run}" in r.stdout
        assert "from Python: 12 18 6" in r.stdout
        assert ("wrappers: []" in r.stdout) == (run == "miss"), r.stdout
    assert jit.njit_borrow(lambda a: a).targetoptions["no_cpython_wrapper"] is True
    assert "no_cpython_wrapper" not in jit.njit(lambda a: a).targetoptions


def test_cached_library_parses_its_bitcode_only_when_linked(tmp_path):
    """A function loaded from the cache runs without its LLVM bitcode parsed (the names it
    defines come with it); a later compilation that calls it parses the bitcode then, links
    it in, and gives the right result, in a process where nothing was compiled before."""
    (tmp_path / "probe.py").write_text(textwrap.dedent("""
        from models.core import jit

        def tripled(a):
            s = 0
            for i in range(a.shape[0]):
                s += 3 * a[i]
            return s

        def first(a):
            return tripled(a) + 1

        def second(a):                  # compiled by the second process only
            return tripled(a) - 1
        tripled, first, second = jit.njit(tripled), jit.njit(first), jit.njit(second)
        """))
    first = run_py("""
        import numpy as np
        from probe import first
        assert first(np.arange(4)) == 19 and first.stats.cache_misses
        """, tmp_path, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    r = run_py("""
        import numpy as np
        from probe import first, second, tripled
        a = np.arange(5)
        assert first(a) == 31 and tripled(a) == 30
        assert first.stats.cache_hits and tripled.stats.cache_hits
        libs = [first.overloads[first.signatures[0]].library,
                tripled.overloads[tripled.signatures[0]].library]
        print("parsed after load:", [lib._shared_module is not None for lib in libs])
        from numba.core import environment
        from numba.core.registry import cpu_target
        codegen = cpu_target.target_context.codegen()
        print("hooks restored:", "unserialize_library" not in vars(codegen),
              environment._rebuild_env.__module__ == "numba.core.environment")
        assert second(a) == 29 and second.stats.cache_misses
        print("parsed after linking:", [lib._shared_module is not None for lib in libs])
        """, tmp_path, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "parsed after load: [False, False]" in r.stdout
    assert "hooks restored: True True" in r.stdout
    assert "parsed after linking: [False, True]" in r.stdout


def test_kernels_release_the_interpreter_short_helpers_keep_it():
    """The window loop releases the interpreter lock while it runs (a study's writer thread
    works meanwhile); the short functions called between windows keep it, so that they do not
    wait to take it back from that thread."""
    from pdes.kernels import routed
    from pdes.state import _occupancy
    assert routed.advance.targetoptions["nogil"] is True
    assert _occupancy.targetoptions["nogil"] is False

    def twice(x):
        return 2 * x
    held = jit.njit_holding(twice)
    assert held.targetoptions["nogil"] is False and held(21) == 42
    assert jit.njit(twice).targetoptions["nogil"] is True
