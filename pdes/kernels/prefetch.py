"""``prefetch(array, i)``: a software prefetch of the cache line holding ``array[i]``
(its first element for a 2-D array row), and ``prefetch2(array, i, j)`` of
``array[i, j]``; both compile to LLVM's ``llvm.prefetch``.

The cycle kernel is bound by memory latency: the records and VC state a flit
needs were written one or more cycles earlier and have left the caches, and
each is reached through a chain of dependent loads.  Asking for them a few
routers or ports ahead lets the misses overlap with useful work.  A prefetch
is a hint: it never faults and never changes a result.
"""
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from models.core.jit import njit_inline


def _emit(context, builder, aryty, ary_val, idx_vals, idx_tys):
    ary = context.make_array(aryty)(context, builder, ary_val)
    idx = [context.cast(builder, v, ty, types.intp) for v, ty in zip(idx_vals, idx_tys)]
    zero = ir.Constant(ir.IntType(64), 0)
    ptr = cgutils.get_item_pointer2(
        context, builder, ary.data, cgutils.unpack_tuple(builder, ary.shape, aryty.ndim),
        cgutils.unpack_tuple(builder, ary.strides, aryty.ndim), aryty.layout,
        idx + [zero] * (aryty.ndim - len(idx)), wraparound=False, boundscheck=False)
    i32 = ir.IntType(32)
    # one declaration for every element type: the intrinsic takes a byte pointer
    ptr = builder.bitcast(ptr, ir.IntType(8).as_pointer())
    fnty = ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32])
    fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
    # read access, high temporal locality, data cache
    builder.call(fn, [ptr, i32(0), i32(3), i32(1)])
    return context.get_dummy_value()


@intrinsic
def prefetch(typingctx, arr, idx):
    if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer):
        return None
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        return _emit(context, builder, signature.args[0], args[0], args[1:], signature.args[1:])

    return sig, codegen


@intrinsic
def prefetch2(typingctx, arr, i, j):
    if not isinstance(arr, types.Array) or arr.ndim != 2 or not isinstance(i, types.Integer) \
            or not isinstance(j, types.Integer):
        return None
    sig = types.void(arr, i, j)

    def codegen(context, builder, signature, args):
        return _emit(context, builder, signature.args[0], args[0], args[1:], signature.args[1:])

    return sig, codegen


@njit_inline
def prefetch_span(arr, lo, hi):
    """Prefetch the cache lines holding ``arr[lo:hi]`` (a 1-D array)."""
    if hi > lo:
        step = 64 // arr.itemsize
        i = lo
        while i < hi:
            prefetch(arr, i)
            i += step
        prefetch(arr, hi - 1)
