"""``popcount(x)`` and ``trailing_zeros(x)`` of a 64-bit integer as single instructions.

They compile to LLVM's ``llvm.ctpop`` and ``llvm.cttz``; written as loops
(``x &= x - 1``), the count would be a data-dependent loop whose exit
mispredicts on the random next-hop masks of minimal routing.
``trailing_zeros(0)`` is 64.
"""
from llvmlite import ir
from numba import types
from numba.extending import intrinsic


def _as_i64(context, builder, ty, val):
    return context.cast(builder, val, ty, types.int64)


@intrinsic
def popcount(typingctx, x):
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(_as_i64(context, builder, signature.args[0], args[0]))

    return types.int64(x), codegen


@intrinsic
def trailing_zeros(typingctx, x):
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        v = _as_i64(context, builder, signature.args[0], args[0])
        return builder.cttz(v, ir.Constant(ir.IntType(1), 0))

    return types.int64(x), codegen
