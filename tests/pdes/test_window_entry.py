"""A part calls its window loop's compiled code directly (``PartState._window_call``): the code
Numba picks for the arguments, found again after the record pool grows, and the same
results as calls through the dispatcher."""
import numpy as np
import pytest

from pdes import state as S
from pdes.build import prepare
from tests.helpers import make_cfg, one_part


def test_type_key_follows_what_numba_types():
    a = np.zeros(8, np.int64)
    assert S.type_key(a) == S.type_key(np.ones(3, np.int64))          # length is not typed
    assert S.type_key(a) != S.type_key(np.zeros(8, np.int32))           # dtype
    assert S.type_key(a) != S.type_key(np.zeros((2, 4), np.int64))     # dimensions
    assert S.type_key(np.zeros((2, 4))) != S.type_key(np.zeros((2, 4), order="F"))
    assert S.type_key(a) != S.type_key(np.zeros(16, np.int64)[::2])     # layout
    ro = np.zeros(8, np.int64)
    ro.flags.writeable = False
    assert S.type_key(a) != S.type_key(ro)
    assert S.type_key((a, 1, 2.0)) == S.type_key((np.ones(2, np.int64), 5, 7.5))
    assert S.type_key((a, 1)) != S.type_key((a, 1.0))
    assert S.type_key(np.int64(3)) != S.type_key(np.int32(3))
    assert S.type_key(True) != S.type_key(1)
    for other in (np.ma.zeros(3), "text", [1, 2], None, 2 ** 64, (a, "x")):
        assert S.type_key(other) is None


def _part(alg):
    cfg = make_cfg(f"routing.algorithm={alg}", "traffic.load=0.5", preset="short")
    return one_part(prepare(cfg))


@pytest.mark.parametrize("alg", ["min", "ugal_g"])
def test_direct_calls_equal_dispatcher_calls_across_pool_growth(alg):
    direct, through = _part(alg), _part(alg)
    through._window_call = lambda: through.kernel_advance       # always the dispatcher
    grown = 0
    for t in range(0, 600, 10):
        n = direct.sizes["n_rec"]
        assert direct.advance(t, t + 10) == 0
        assert through.advance(t, t + 10) == 0
        grown += direct.sizes["n_rec"] > n
        if t == 0:       # the first call may load the code through the dispatcher
            continue
        disp = direct._window.disp
        args, _, entry = direct._window.held
        args = args[2:]                    # after t0 and t1, made anew each window
        assert disp is direct.kernel_advance
        assert args[0] is direct.prm and args[1] is direct._args[0] and args[2] is direct._args[1]
        sig = tuple(disp.typeof_pyval(x) for x in (np.int64(0), np.int64(0), *args))
        assert entry is disp.overloads[sig].entry_point
    assert grown >= 1                      # the pool grew: new arrays, the same code
    for name, arr in direct.arrays.items():
        np.testing.assert_array_equal(arr, through.arrays[name], err_msg=name)


def test_direct_call_keeps_its_code_while_the_arguments_stay_and_looks_again_when_not():
    """``DirectCall`` (the exchange's pack and unpack calls): the dispatcher's result; its compiled code held while the arguments are
    the same objects (the ``fresh`` ones: of the same type), found again for new objects or
    a fresh argument of another type, and the dispatcher called for types it has no code
    for yet."""
    calls = []

    class Disp:          # the real dispatcher, counting the calls that go through it
        def __init__(self, d):
            self.d, self.overloads, self.typeof_pyval = d, d.overloads, d.typeof_pyval

        def __call__(self, *args):
            calls.append(1)
            return self.d(*args)

    import numba

    @numba.njit
    def scaled(a, k, b):
        s = 0.0
        for i in range(a.shape[0]):
            s += a[i] * k + b[i]
        return s

    d = Disp(scaled)
    call = S.DirectCall(d, fresh=(1,))
    a, b = np.arange(4.0), np.ones(4)
    assert call(a, np.int64(2), b) == scaled(a, 2, b) and len(calls) == 1   # compiles
    calls.clear()
    assert call(a, np.int64(3), b) == 22.0 and not calls       # held: fresh scalar, same type
    assert call(a, np.int64(3), b) == 22.0 and call.held is not None
    b2 = np.full(4, 2.0)
    assert call(a, np.int64(3), b2) == 26.0 and not calls       # a new object: looked up again
    assert call.held[0][2] is b2
    assert call(a, 1.5, b2) == scaled(a, 1.5, b2) and len(calls) == 1    # a float: compiles
    calls.clear()
    assert call(a, 1.5, b2) == 17.0 and not calls
    assert call(a.astype(np.int64), 1.5, b2) == 17.0 and len(calls) == 1  # another array type
    plain = S.DirectCall(lambda x, y: x + y)     # not a dispatcher (a test's spy): called
    assert plain(1, 2) == 3 and plain.held is None


@pytest.mark.parametrize("alloc", ["vct", "booksim"])
def test_one_part_takes_the_routings_snapshots_in_its_window_loop(monkeypatch, alloc):
    """UGAL-G reads the network's port backlogs every ``routing.epoch`` cycles.  A part that
    holds the whole network takes them in its window loop (``PR_SNAP``), so its windows run
    from one sample boundary to the next; parts that share the network end a window at every
    snapshot and sum theirs between windows.  The results are the same."""
    from pdes import loop as L
    from pdes.engine import run_local
    from tests.helpers import assert_same_results
    cfg = make_cfg("routing.algorithm=ugal_g", "routing.epoch=20", "traffic.load=0.6",
                   f"router.allocation={alloc}", preset="short")
    windows, snapshots = [], []
    advance, snapshot = L.Engine._advance, L.Engine._snapshot
    monkeypatch.setattr(L.Engine, "_advance", lambda self, s, step: (windows.append(step),
                                                                   advance(self, s, step)))
    monkeypatch.setattr(L.Engine, "_snapshot", lambda self, T: (snapshots.append(T),
                                                               snapshot(self, T)))
    one = run_local(cfg)
    sp = cfg["measure"]["sample_period"]
    assert snapshots == [] and set(windows) == {sp}
    windows.clear()
    n = prepare(cfg).topo.n_routers
    two = run_local(cfg, owner=(np.arange(n) * 2 // n).astype(np.int32))
    assert snapshots and all(T % 20 == 0 for T in snapshots) and max(windows) <= 20
    assert_same_results(one, two)
