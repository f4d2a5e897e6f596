"""The one jit wrapper used by every kernel in the project.

Kernels take numpy arrays with explicit dtypes and scalars, and are compiled
with Numba's on-disk cache so a second run does not pay the compile time again.

Everything this module configures applies to the functions decorated with
:data:`njit` / :data:`njit_inline` only; importing it changes nothing in
Numba's process-wide state, and the first compilation of a project function
only the time it takes to load Numba's array functions
(:func:`_import_arraymath_without_blas_probe`: the same state without importing
SciPy's BLAS).  A process that only loads cached functions loads neither those
nor the rest of Numba's compiler registries (:class:`_ProjectCache`):

* **Cache location.**  Compiled code of the project's functions is cached in
  a directory keyed on the digest of all project sources
  (:func:`source_digest`, :func:`cache_dir`), so an edit anywhere never runs
  stale code.  The wrapper gives each function its own cache object with that
  location (``numba.config.CACHE_DIR`` stays as the user set it; an
  unwritable directory falls back to Numba's usual places, except that the
  command line refuses an unwritable ``$PDES_CACHE_DIR``: ``pdes.compiling``).
* **No negative-index wraparound in the kernels.**  The cycle kernels
  (``pdes.kernels``) index arrays with non-negative integers only.  Numba
  would give every access with a signed index Python's negative index
  semantics (a compare and a conditional add per access, with the array
  length kept live); across the thousands of accesses per simulated router
  cycle that costs about a fifth of the run time.  While one of the
  project's functions compiles, the wrapper turns that fix-up off for
  functions whose mangled name starts with one of :data:`NO_WRAPAROUND_PREFIX`
  (the modules of ``pdes.kernels`` and the functions decorated with
  :func:`njit_kernel`, such as the routing kernels) and restores Numba's own routine when
  the compilation ends; every other compiled function keeps Numba's
  semantics.  Running with ``NUMBA_BOUNDSCHECK=1`` still catches a negative
  index there (as out of bounds), which is how the test suite checks the
  premise.
* **Inlining without quadratic copies.**  While one of the project's functions
  compiles, Numba's inliner copies a callee's blocks with one memo per IR
  (:class:`_BlockCopier`) instead of one per block: the same IR, a quarter less
  compile time for the cycle kernels.
* **Helpers inlined by LLVM.**  The functions decorated with :func:`njit_llvm_inline`
  are given LLVM's ``alwaysinline`` attribute when they compile: Numba compiles them
  once, and LLVM inlines them into each routing's router stage.
* **No Python wrappers for what only compiled code calls.**  Numba gives every compiled
  function a CPython wrapper (which unboxes each argument: for a stage that takes the
  state's named tuples, several hundred arrays) and a C wrapper, and optimizes both.  The
  functions decorated with :func:`njit_borrow` (the stages, their helpers, the routing
  kernels) are called from compiled code only and are compiled without them
  (``no_cpython_wrapper``, ``no_cfunc_wrapper``, as Numba compiles its own ``@overload``
  functions): a first compilation of the kernels takes about a sixth less CPU, the
  compiled kernels are the same.  Called from Python (a test of one kernel), such a
  function goes through a small compiled function that has the wrapper.
"""
import contextlib
import copy
import functools
import hashlib
import os
import threading
from pathlib import Path

import numba
from numba.core.caching import (CompileResultCacheImpl, FunctionCache, _CacheLocator,
                                _SourceFileBackedLocatorMixin)
from numba.core.registry import CPUDispatcher

_ROOT = Path(__file__).resolve().parents[2]


def source_digest(root: Path = _ROOT) -> str:
    """Digest of every Python source of the ``models`` and ``pdes`` packages under ``root``
    (and of the Numba version).

    Numba's on-disk cache checks only the source file of the cached function:
    a kernel whose inlined helpers (routing, RNG, bit counts) or whose compile
    hooks (this module) changed would be loaded from the cache as it was.
    Keying the cache directory on all sources makes any change recompile.
    """
    h = hashlib.sha256(numba.__version__.encode())
    for pkg in ("models", "pdes"):
        for f in sorted((root / pkg).rglob("*.py")):
            h.update(f.relative_to(root).as_posix().encode() + b"\0")
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


CACHE_ENV = ("PDES_CACHE_DIR", "NUMBA_CACHE_DIR")
"""The environment variables that set the cache's base directory, the first set one wins."""


def cache_base() -> tuple[str, str]:
    """(base directory, what set it): ``$PDES_CACHE_DIR``, else ``$NUMBA_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/pdes`` or ``~/.cache/pdes`` (``"default"``)."""
    for var in CACHE_ENV:
        if os.environ.get(var):
            return os.environ[var], var
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache"), "pdes"), "default"


@functools.lru_cache(maxsize=None)
def cache_dir() -> str:
    """The base directory of :func:`cache_base` + ``/numba-<source digest>``: where the
    project's compiled functions are cached (read once per process)."""
    return os.path.join(cache_base()[0], "numba-" + source_digest())


class _ProjectLocator(_SourceFileBackedLocatorMixin, _CacheLocator):
    """Numba cache locator: the source-keyed :func:`cache_dir` (mirroring the source tree)."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.join(cache_dir(), self.get_suitable_cache_subpath(py_file))

    def get_cache_path(self):
        return self._cache_path


_LINK_LATER = "object, module for linking parsed when asked"
"""The kind of a cached library saved by :class:`_ProjectCacheImpl`: Numba's ``"object"``
(the object code and the LLVM bitcode other functions link in) with the names the
library defines and whether it reads the hash secret."""

HASH_SECRET_PREFIX = "_numba_hashsecret_"
"""Symbols of the hash secret, which :mod:`numba.cpython.hashing` adds when imported."""


def _import_hash_secret() -> None:
    """Add the hash secret's symbols (a cached function that hashes a string links
    against them) by importing :mod:`numba.cpython.hashing`: 30 ms, most of it the first
    ``isinstance`` test against Numba's type classes, which a process loading only
    functions that hash no string does not pay."""
    import numba.cpython.hashing  # noqa: F401


class _ProjectCacheImpl(CompileResultCacheImpl):
    """Numba's cache of compile results, with the module for linking parsed when used.

    A cached function is its object code, which is what runs, and its LLVM bitcode,
    which Numba parses at every load so that later compilations can link it in.  The
    kernels a run calls from Python (each routing's cycle kernel, the exchange's pack and
    unpack) are linked into nothing, and parsing their bitcode was two thirds of loading
    them (about 40 ms each on SF q=5).  The cache saves the names the library defines
    beside it (what Numba's engine otherwise reads off the parsed module), and the
    library parses its bitcode when a compilation first links it in
    (:func:`_linked_when_asked`)."""
    _locator_classes = [_ProjectLocator, *CompileResultCacheImpl._locator_classes]

    def reduce(self, cres):
        libdata, *rest = super().reduce(cres)
        name, kind, data = libdata
        if kind == "object":
            mod = cres.library._get_module_for_linking()
            names = sorted({gv.name for gsets in (mod.functions, mod.global_variables)
                            for gv in gsets if not gv.is_declaration})
            hashed = any(gv.is_declaration and gv.name.startswith(HASH_SECRET_PREFIX)
                         for gv in mod.global_variables)
            libdata = (name, _LINK_LATER, (*data, tuple(names), hashed))
        return (libdata, *rest)

    def rebuild(self, target_context, payload):
        codegen = target_context.codegen()
        plain = codegen.unserialize_library

        def unserialize(state):
            name, kind, data = state
            if kind != _LINK_LATER:
                _import_hash_secret()
                return plain(state)
            object_code, bitcode, names, hashed = data
            if hashed:
                _import_hash_secret()
            lib = _linked_when_asked()(codegen, name)
            lib.enable_object_caching()
            lib._set_compiled_object(object_code)
            lib._bitcode = bitcode
            lib._finalize_final_module()
            codegen._engine._defined_symbols.update(names)
            return lib

        with _replaced(codegen, "unserialize_library", unserialize):   # under Numba's lock
            return super().rebuild(target_context, payload)


@contextlib.contextmanager
def _replaced(obj, name: str, value):
    """``obj.<name>`` is ``value`` while the block runs, then as it was (an attribute the
    object did not hold itself, such as a method of its class, is removed again)."""
    own = vars(obj)
    had, old = name in own, own.get(name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        if had:
            setattr(obj, name, old)
        else:
            delattr(obj, name)


@functools.lru_cache(maxsize=None)
def _linked_when_asked():
    """Numba's JIT code library, loaded from the cache with its LLVM bitcode unparsed until
    a compilation links it in (made when first needed: the class derives from Numba's)."""
    from llvmlite import binding as ll
    from numba.core.codegen import JITCodeLibrary

    class LinkedWhenAsked(JITCodeLibrary):
        _bitcode = None

        def _get_module_for_linking(self):
            if self._shared_module is None and self._bitcode is not None:
                self._shared_module = ll.parse_bitcode(self._bitcode)
                self._bitcode = None
            return super()._get_module_for_linking()

    return LinkedWhenAsked


class _ProjectCache(FunctionCache):
    """Numba's function cache, in the project's place, loading without the context refresh.

    Numba's ``load_overload`` first refreshes the target context: it imports and installs
    every typing and lowering registry of Numba (NumPy's array functions, typed containers,
    random generators, ...; 55 modules) before it loads a compiled function.  Loading needs
    none of it: a cached function is object code linked against the symbols the context's
    creation, the runtime (NRT) and, if it hashes a string, :mod:`numba.cpython.hashing`
    add, and calling it from
    Python goes through its own compiled wrapper.  The registries are for compiling, and
    Numba refreshes the context itself before any compilation, so a process that then
    compiles something loads them there.  With the lazy caches and hooks below, a process
    that only loads kernels starts about 0.15 s sooner (docs/performance.md).
    """
    _impl_class = _ProjectCacheImpl

    def load_overload(self, sig, target_context):
        _link_prerequisites(target_context)
        with self._guard_against_spurious_io_errors(), _blas_probe_answered(), \
                _numba_environments_unimported():
            return self._load_overload(sig, target_context)


class _LazyCache:
    """A dispatcher's :class:`_ProjectCache`, made when it is first used (a compilation, a
    load, the dispatcher's ``stats``): making one finds the function's source file and cache
    place, about 0.07 ms, which the ~185 functions pdes's modules define paid at every
    import, though a run uses a few dozen of them."""

    def __init__(self, py_func):
        self._py_func = py_func
        self._cache = None

    def __getattr__(self, name):
        if self._cache is None:
            self._cache = _ProjectCache(self._py_func)
        return getattr(self._cache, name)


@contextlib.contextmanager
def _numba_environments_unimported():
    """While the block runs, the environment of a Numba function whose module is not
    imported is rebuilt without importing it.

    A cached function comes with the environments of the functions compiled into it
    (``NumbaEnv`` globals: the constants its exceptions raise, and its module's globals),
    and Numba rebuilds each by importing the module.  A kernel that allocates an array or
    indexes one names Numba's array implementations (``numba.np.arrayobj``, with
    ``numba.np.arraymath``, the unicode and character-sequence types): importing them took
    50 ms of each process that loaded a kernel.  Numba reads a module's globals only to run
    object-mode code, which Numba's own implementations are not (they compile in nopython
    mode), so the environment of a function from a ``numba.`` module not imported yet gets a
    globals dict holding the module's name only (what saving it again reads), and its
    constants as Numba would."""
    import sys

    from numba.core import environment
    rebuild = environment._rebuild_env

    def unimported(modname, consts, env_name):
        if (not modname or not modname.startswith("numba.") or modname in sys.modules
                or environment.lookup_environment(env_name) is not None):
            return rebuild(modname, consts, env_name)
        env = environment.Environment({"__name__": modname})
        env.consts[:] = consts
        env.env_name = env_name
        environment.Environment._memo[env_name] = env
        return env

    with _replaced(environment, "_rebuild_env", unimported):   # what unpickling calls
        yield


def _link_prerequisites(target_context) -> None:
    """What a cached function's object code needs to link: the runtime's symbols (NRT); the
    C helpers and math functions were added when the context was created, and the hash
    secret's are added when a function that reads it loads (:func:`_import_hash_secret`)."""
    from numba.core.runtime import nrtdynmod, rtsys
    if getattr(rtsys, "_init", None) is False and hasattr(nrtdynmod, "create_nrt_module"):
        _initialize_runtime(rtsys, target_context)
    else:                     # initialized, or a Numba version without these internals
        rtsys.initialize(target_context)


def _initialize_runtime(rtsys, ctx) -> None:
    """Numba's ``rtsys.initialize`` with the runtime's compiled functions from the cache.

    Numba builds its runtime's functions (reference counts, the atomic operations, the
    abort of an unresolved symbol) as LLVM IR and compiles them in every process that
    loads or compiles a function: 40–50 ms of each start.  They are the same for a Numba
    version and a CPU, so the first process compiles them as Numba does and saves their
    object code in the cache directory (named after the CPU's triple, name and features);
    later processes load it.  Where the directory cannot be written, each process compiles
    them (as Numba does)."""
    import pickle

    from llvmlite import binding as ll
    from numba.core import config
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.runtime import _nrt_python as _nrt
    from numba.core.runtime import nrtdynmod

    with global_compiler_lock:
        if rtsys._init:
            return
        if config.NRT_STATS:
            _nrt.memsys_enable_stats()
        for py_name, c_address in _nrt.c_helpers.items():       # as Numba registers them
            ll.add_symbol(py_name if py_name.startswith("_") else "NRT_" + py_name, c_address)
        codegen = ctx.codegen()
        key = hashlib.sha256(repr(codegen.magic_tuple()).encode()).hexdigest()[:16]
        path = os.path.join(cache_dir(), "runtime", f"nrt-{key}.pkl")
        library = None
        try:
            with open(path, "rb") as fh:
                library = codegen.unserialize_library(pickle.load(fh))
        except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError, RuntimeError):
            library = None                  # none yet, or unreadable: compiled (and saved) anew
        if library is None:
            ir_mod, library = nrtdynmod.create_nrt_module(ctx)
            library.enable_object_caching()
            library.add_ir_module(ir_mod)
            library.finalize()
            _save_atomically(path, pickle.dumps(library.serialize_using_object_code()))
        rtsys._library = library
        rtsys._init = True


def _save_atomically(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` whole (:func:`models.core.files.replaced_when_whole`), or
    nothing if the directory cannot be written: the next process compiles again."""
    from models.core.files import replaced_when_whole
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with replaced_when_whole(path) as tmp, open(tmp, "wb") as fh:
            fh.write(data)
    except OSError:
        pass


# mangled-name prefixes of the functions compiled without negative-index wraparound: the
# modules of pdes.kernels and the functions decorated with njit_kernel
NO_WRAPAROUND_PREFIX = ("_ZN4pdes7kernels",)


def mangled_prefix(func) -> str:
    """Start of the mangled symbol name Numba gives a function (module and qualified name)."""
    parts = func.__module__.split(".") + func.__qualname__.split(".")
    return "_ZN" + "".join(f"{len(p)}{p}" for p in parts)

_hook_lock = threading.RLock()
_hook_depth = 0
_hook_orig = None


def _no_wraparound_available() -> bool:
    try:
        from numba.np import arrayobj
    except ImportError:   # pragma: no cover - depends on the Numba version
        return False
    return callable(getattr(arrayobj, "fix_integer_index", None))


@functools.lru_cache(maxsize=None)
def no_wraparound() -> bool:
    """Whether this Numba version has the hook (if not, the kernels stay correct, only
    slower); asked when a project function first compiles (importing Numba's array lowering
    takes 20 ms, which a process that only loads cached kernels does not need)."""
    return _no_wraparound_available()


def __getattr__(name):
    if name == "NO_WRAPAROUND":         # the old constant, now asked when first needed
        return no_wraparound()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.lru_cache(maxsize=None)
def _have_scipy() -> bool:
    import importlib.util
    return importlib.util.find_spec("scipy") is not None


class _ArraymathFinder:
    """A meta-path entry that, when ``numba.np.arraymath`` is about to be imported, imports
    ``numba.np.linalg`` (which it imports first) and answers its BLAS probe; it finds no
    module itself, so the import goes on as usual."""

    def __init__(self):
        self.probe = None       # Numba's probe, once replaced

    def find_spec(self, name, path=None, target=None):
        if name == "numba.np.arraymath" and self.probe is None:
            try:
                from numba.np import linalg
            except ImportError:   # pragma: no cover - depends on the Numba version
                return None
            probe = getattr(linalg, "ensure_blas", None)
            if callable(probe):
                self.probe = probe
                linalg.ensure_blas = lambda: None
        return None

    def restore(self) -> None:
        if self.probe is not None:
            from numba.np import linalg
            linalg.ensure_blas = self.probe


@contextlib.contextmanager
def _blas_probe_answered():
    """While the block runs, an import of ``numba.np.arraymath`` finds its BLAS probe
    answered without importing SciPy's BLAS.

    Numba imports that module with its lowering registry when a process first compiles
    (loading a cached function whose code used NumPy's array functions no longer imports
    it: :func:`_numba_environments_unimported`).  The module probes for a BLAS by importing
    ``scipy.linalg.cython_blas`` (with ``scipy.linalg`` and, through it, ``numpy.f2py``):
    0.14 s of a process's start on the AMD EPYC, more from a shared file system.  SciPy is
    one of pdes's dependencies, so the probe's answer is known (a BLAS is there) as long as
    SciPy is installed; the module then records that answer.  Numba's linear algebra still
    imports SciPy's BLAS, and checks its integer width, when code using it compiles.
    Without SciPy, or with Numba's module imported already, nothing changes.  The probe is
    replaced only if the module is imported in the block (:class:`_ArraymathFinder`):
    importing ``numba.np.linalg`` takes 30 ms, which loading a kernel that used none of
    NumPy's array functions does not need."""
    import sys
    if "numba.np.arraymath" in sys.modules or not _have_scipy():
        yield
        return
    finder = _ArraymathFinder()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        finder.restore()


def _import_arraymath_without_blas_probe() -> None:
    """Import ``numba.np.arraymath`` with its BLAS probe answered (:func:`_blas_probe_answered`).

    Called when a project function first compiles, before Numba loads its registries; a
    process that only loads cached kernels never loads them (:class:`_ProjectCache`), and
    imports this module only if a kernel's code used NumPy's array functions."""
    with _blas_probe_answered():
        import numba.np.arraymath  # noqa: F401 - records the probe's answer


class _BlockCopier:
    """Stands in for the ``copy`` module in Numba's inliner while a project function compiles.

    To inline a function, Numba copies the callee's IR block by block, each block with
    ``copy.deepcopy`` and a memo of its own; every block refers to the function's one scope,
    so each block copies the whole scope (every variable of the callee) again: the cost
    grows with blocks x variables, and copying took 40% of the compile time of a routing's
    kernels.  This copier gives the consecutive blocks of one IR (same scope object, each
    block seen once) one memo, as one ``copy.deepcopy`` of the whole block map would:
    the copies share one scope copy, as the blocks of the original share one scope.  The
    inliner points every inlined block at the caller's scope afterwards, so the IR it
    produces is the same.  A block seen before, or another scope, starts a new memo."""

    def __init__(self):
        self._scope = None
        self._memo = None

    def deepcopy(self, x, memo=None):
        from numba.core import ir
        if memo is not None or not isinstance(x, ir.Block):
            return copy.deepcopy(x, memo)
        if self._memo is None or x.scope is not self._scope or id(x) in self._memo:
            self._scope, self._memo = x.scope, {}
        return copy.deepcopy(x, self._memo)

    def release(self) -> None:
        self._scope = self._memo = None


_copier = _BlockCopier()
_copy_orig = None


def _copy_hook(install: bool) -> None:
    """Swap the inliner's ``copy`` for :data:`_copier` (and back); under ``_hook_lock``."""
    global _copy_orig
    try:
        from numba.core import inline_closurecall as icc
    except ImportError:   # pragma: no cover - depends on the Numba version
        return
    if install:
        if getattr(icc, "copy", None) is copy:
            _copy_orig = icc.copy
            icc.copy = _copier
    elif _copy_orig is not None:
        icc.copy = _copy_orig
        _copy_orig = None
        _copier.release()


_decorate_orig = None


def _always_inline_hook(install: bool) -> None:
    """Give the functions of :data:`ALWAYS_INLINE_PREFIX` LLVM's ``alwaysinline`` attribute
    when Numba lowers them (Numba's calling convention names and decorates every function
    it defines); and back.  Under ``_hook_lock``."""
    global _decorate_orig
    try:
        from numba.core.callconv import CPUCallConv
    except ImportError:   # pragma: no cover - depends on the Numba version
        return
    if install:
        if _decorate_orig is not None:
            return
        orig = _decorate_orig = CPUCallConv.decorate_function

        def decorate_function(self, fn, *args, **kwargs):
            if ALWAYS_INLINE_PREFIX and fn.name.startswith(ALWAYS_INLINE_PREFIX):
                fn.attributes.add("alwaysinline")
            return orig(self, fn, *args, **kwargs)
        CPUCallConv.decorate_function = decorate_function
    elif _decorate_orig is not None:
        CPUCallConv.decorate_function = _decorate_orig
        _decorate_orig = None


_gc_paused = False


def _pause_gc(on: bool) -> None:
    """No garbage collection while Numba compiles: a compilation allocates millions of
    objects (IR, types, LLVM values), and the collector's passes walked them and every other
    object of the process again and again, a tenth of the compile time or more (a
    further routing with BookSim's allocation compiled in 0.87 of the CPU without them;
    what a compilation leaves is collected after it, its peak memory 2% higher).  Nothing
    changes where the collector was off already."""
    global _gc_paused
    import gc
    if on and gc.isenabled():
        gc.disable()
        _gc_paused = True
    elif not on and _gc_paused:
        gc.enable()
        _gc_paused = False


def _hook_enter() -> None:
    """Install the no-wraparound index fix-up and the inliner's block copier, and pause the
    garbage collector (nested compilations count)."""
    global _hook_depth, _hook_orig
    with _hook_lock:
        _hook_depth += 1
        if _hook_depth > 1:
            return
        _pause_gc(True)
        _import_arraymath_without_blas_probe()     # (nothing once it is imported)
        _copy_hook(True)
        _always_inline_hook(True)
        if not no_wraparound():
            return
        from numba.core import types
        from numba.np import arrayobj
        orig = _hook_orig = arrayobj.fix_integer_index

        def fix_integer_index(context, builder, idxty, idx, size):
            if idxty.signed and builder.function.name.startswith(NO_WRAPAROUND_PREFIX):
                return context.cast(builder, idx, idxty, types.intp)
            return orig(context, builder, idxty, idx, size)

        fix_integer_index._pdes_hook = True
        arrayobj.fix_integer_index = fix_integer_index


def _hook_exit() -> None:
    global _hook_depth, _hook_orig
    with _hook_lock:
        _hook_depth -= 1
        if _hook_depth == 0:
            _pause_gc(False)
            _copy_hook(False)
            _always_inline_hook(False)
            if no_wraparound():
                from numba.np import arrayobj
                arrayobj.fix_integer_index = _hook_orig
                _hook_orig = None


class _InternalDispatcher(CPUDispatcher):
    """A dispatcher compiled without the CPython wrapper (:func:`njit_borrow`).  Compiled
    callers do not go through ``__call__``; a call from Python (a test of a kernel) goes
    through a small compiled function that calls it and has the wrapper
    (:func:`_from_python`, compiled on the first such call, not cached): Numba would
    otherwise call through a null pointer."""

    def __call__(self, *args, **kwargs):
        call = self.__dict__.get("_pdes_from_python")
        if call is None:
            call = self._pdes_from_python = _from_python(self)
        return call(*args, **kwargs)


def _from_python(disp):
    """A jitted function with ``disp``'s parameters (and defaults) that returns ``disp``
    called with them."""
    import inspect
    ns = {"_callee": disp}
    params, names = [], []
    for i, p in enumerate(inspect.signature(disp.py_func).parameters.values()):
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise TypeError(f"{disp.py_func.__qualname__}: only positional parameters can "
                            "be passed from Python")
        names.append(p.name)
        if p.default is p.empty:
            params.append(p.name)
        else:
            ns[f"_default{i}"] = p.default
            params.append(f"{p.name}=_default{i}")
    exec(f"def from_python({', '.join(params)}):\n"
         f"    return _callee({', '.join(names)})\n", ns)
    return numba.njit(nogil=True)(ns["from_python"])


def _project_jit(func, internal=False, **options):
    """Compile ``func`` lazily with the project's options, cache and compile hook."""
    if internal:
        options.update(no_cpython_wrapper=True, no_cfunc_wrapper=True)
    disp = numba.njit(**{"nogil": True, **options})(func)
    if internal:
        disp.__class__ = _InternalDispatcher
    disp._cache = _LazyCache(disp.py_func)        # what cache=True does, with our location
    # the hooks are on while Numba compiles (a signature the cache does not hold), not while
    # it loads from the cache: a process that only loads imports none of what they need
    compile_ = disp._compiler.compile

    def compile(args, return_type):
        with _hook_lock:      # the hook must not be removed while another thread compiles
            _hook_enter()
            try:
                return compile_(args, return_type)
            finally:
                _hook_exit()
    disp._compiler.compile = compile
    return disp


def njit(func):
    """Decorator: ``@njit`` compiles a function with the project's options."""
    return _project_jit(func)


def njit_inline(func):
    """Decorator for small helpers that are always inlined into their callers."""
    return _project_jit(func, inline="always")


def njit_kernel(func):
    """:func:`njit_borrow` for kernel functions outside ``pdes.kernels`` (a routing kernel's
    ``source`` and ``hop``): also compiled without negative-index wraparound."""
    global NO_WRAPAROUND_PREFIX
    with _hook_lock:
        NO_WRAPAROUND_PREFIX = _with_prefix(NO_WRAPAROUND_PREFIX, func)
    return njit_borrow(func)


def _with_prefix(prefixes: tuple, func) -> tuple:
    """``prefixes`` with ``func``'s mangled-name prefix (:func:`mangled_prefix`) added."""
    prefix = mangled_prefix(func)
    return prefixes if prefix in prefixes else prefixes + (prefix,)


ALWAYS_INLINE_PREFIX: tuple = ()
"""Mangled-name prefixes of the functions decorated with :func:`njit_llvm_inline`."""


def njit_llvm_inline(func):
    """:func:`njit_borrow` for a helper of the router stages that LLVM inlines into every
    caller (the ``alwaysinline`` attribute), so that Numba compiles it once per process
    (and caches it) instead of once per caller as :func:`njit_inline` does: a routing's
    router stage is a template compiled once per routing (:mod:`pdes.kernels.generate`),
    and the helpers that do not depend on the routing cost each routing's compilation
    their typing, SSA and lowering again.  The machine code is the same: LLVM inlines the
    helper where Numba did (``tests/pdes/kernels/test_inlined.py`` checks that no stage
    calls one)."""
    global ALWAYS_INLINE_PREFIX
    with _hook_lock:
        ALWAYS_INLINE_PREFIX = _with_prefix(ALWAYS_INLINE_PREFIX, func)
    return njit_borrow(func)


def njit_holding(func):
    """Decorator for short functions called from Python many times per run: compiled to keep
    the interpreter lock.  The other functions release it while they run (a study writes its
    finished points on another thread meanwhile), and taking it back waits for that thread
    to let go of it, which would cost such a function more than its own work."""
    return _project_jit(func, nogil=False)


def njit_borrow(func):
    """Decorator for small helpers on arrays called inside hot loops: compiled without
    reference counting (they borrow their caller's arrays and allocate nothing), so a
    call costs no atomic operations and LLVM can inline it; and without the CPython and C
    wrappers, since only compiled code calls them in a run (a call from Python goes through
    :func:`_from_python`)."""
    return _project_jit(func, internal=True, _nrt=False)


def njit_window(func):
    """Decorator for a window loop (called from Python, calling the stages): compiled
    without reference counting, as the stages are (it allocates nothing), so that its
    passing of the state's several hundred arrays to each stage is not wrapped in as many
    reference count updates, which Numba would emit, optimize and then prune."""
    return _project_jit(func, _nrt=False)
