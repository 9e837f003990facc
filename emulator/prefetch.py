"""A software prefetch of one table row, for the event loop (``llvm.prefetch``).

The loop knows which packet the next event will touch before it handles the
current one (the event word carries it, `events.event_pkt`); asking the
memory system for that row now hides most of the miss, since a packet's
row has usually left the caches while the packet crossed a wire. Without
the JIT (``NUMBA_DISABLE_JIT=1``) `prefetch` does nothing.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload


def prefetch(arr, i):
    """Hint that row `i` of the 1-d array `arr` is needed soon (every cache line of the row; no
    effect on results)."""


@intrinsic
def _prefetch(typingctx, arr, idx):
    if not isinstance(arr, types.Array) or arr.ndim != 1 or not isinstance(idx, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        base = builder.bitcast(ptr, i8p)
        size = context.get_abi_sizeof(context.get_data_type(aryty.dtype))
        offsets = list(range(0, size, 64))
        if size - 1 - offsets[-1] > 0:
            offsets.append(size - 1)  # a row that straddles one more line than its size suggests
        for off in offsets:
            # read, high temporal locality, data cache
            builder.call(fn, [builder.gep(base, [i32(off)]), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(arr, idx), codegen


@overload(prefetch, inline="always")
def _prefetch_impl(arr, i):
    def impl(arr, i):
        _prefetch(arr, i)
    return impl
