"""Cache-line helpers: a software prefetch of one table row (``llvm.prefetch``), for compiled
code that knows which row it will touch next, and line-aligned tables.

The emulator's loop knows which port and packet the next event touches
before it handles the current one (the event word carries them,
`emulator.events.event_pkt`; `emulator.engine._prefetch_next`), and an MRC
endpoint knows, once it has sent, the EV row, TX slot and work request its
next packet will use (`emulator.transports.mrcqp._note_next`). Asking the
memory system for those rows early hides most of the miss. A prefetch never
changes a result; without the JIT (``NUMBA_DISABLE_JIT=1``) it does nothing.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload
from numba.np.numpy_support import as_dtype


def prefetch(arr, i):
    """Hint that row `i` of `arr` is needed soon: of a 1-d array, the element's every cache line;
    of a 2-d (C-contiguous) array, every line of ``arr[i, :]``. No effect on results."""


def prefetch_line(arr, i):
    """Hint that the cache line holding (the first byte of) element `i` of the 1-d array `arr` is
    needed soon."""


def prefetch_lines(arr, i, first, n):
    """Hint that lines ``first .. first + n - 1`` of element `i` of the 1-d array `arr` are needed
    soon (the element's own lines, counted from its first byte: meant for line-aligned tables of
    line-sized rows whose fields are grouped by line, like `mrc.core.dtypes.QP_LINES`)."""


def _prefetch_call(builder, ptr, offsets):
    i8p = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
    fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
    base = builder.bitcast(ptr, i8p)
    for off in offsets:
        # read, high temporal locality, data cache
        at = builder.gep(base, [off if isinstance(off, ir.Value) else i32(off)])  # a constant or a compiled value
        builder.call(fn, [at, i32(0), i32(3), i32(1)])


def _row_offsets(size):
    """Byte offsets that touch every line of a `size`-byte row, wherever it starts."""
    offsets = list(range(0, size, 64))
    if size - 1 - offsets[-1] > 0:
        offsets.append(size - 1)  # a row that straddles one more line than its size suggests
    return offsets


def _element_ptr(context, builder, sig, args):
    """Pointer to element ``args[1]`` of the 1-d array ``args[0]`` (no bounds or wraparound)."""
    aryty = sig.args[0]
    ary = context.make_array(aryty)(context, builder, args[0])
    return cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)


def _prefetch_intrinsic(name, whole_row):
    """An intrinsic ``(arr, idx)`` for a 1-d array: prefetch every line of element `idx`
    (`whole_row`), or only the line holding its first byte."""

    def typer(typingctx, arr, idx):
        if not isinstance(arr, types.Array) or arr.ndim != 1 or not isinstance(idx, types.Integer):
            return None

        def codegen(context, builder, sig, args):
            aryty = sig.args[0]
            size = context.get_abi_sizeof(context.get_data_type(aryty.dtype))
            _prefetch_call(builder, _element_ptr(context, builder, sig, args), _row_offsets(size) if whole_row else [0])
            return context.get_dummy_value()

        return types.void(arr, idx), codegen

    typer.__name__ = typer.__qualname__ = name
    return intrinsic(typer)


@intrinsic
def _prefetch_byte(typingctx, arr, idx, off):
    """Prefetch the line holding byte `off` of element `idx` of a 1-d array."""
    if not isinstance(arr, types.Array) or arr.ndim != 1 or not isinstance(idx, types.Integer) \
            or not isinstance(off, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        _prefetch_call(builder, _element_ptr(context, builder, sig, args), [args[2]])
        return context.get_dummy_value()

    return types.void(arr, idx, off), codegen


_prefetch_row = _prefetch_intrinsic("_prefetch_row", True)
_prefetch_line = _prefetch_intrinsic("_prefetch_line", False)


@overload(prefetch_line, inline="always")
def _prefetch_line_impl(arr, i):
    if isinstance(arr, types.Array) and arr.ndim == 1:
        def impl(arr, i):
            _prefetch_line(arr, i)
        return impl
    return None


@overload(prefetch_lines, inline="always")
def _prefetch_lines_impl(arr, i, first, n):
    if isinstance(arr, types.Array) and arr.ndim == 1:
        def impl(arr, i, first, n):
            for k in range(n):
                _prefetch_byte(arr, i, (first + k) * 64)
        return impl
    return None


@overload(prefetch, inline="always")
def _prefetch_impl(arr, i):
    if isinstance(arr, types.Array) and arr.ndim == 1:
        def impl(arr, i):
            _prefetch_row(arr, i)
        return impl
    if isinstance(arr, types.Array) and arr.ndim == 2:
        step = max(1, 64 // as_dtype(arr.dtype).itemsize)  # elements per line

        def impl2(arr, i):
            row = arr[i]
            n = row.shape[0]
            for k in range(0, n, step):
                _prefetch_line(row, k)
            _prefetch_line(row, n - 1)
        return impl2
    return None


HUGE_PAGE = 2 << 20  # bytes of a transparent huge page (x86-64, arm64 with 4 KB base pages)
HUGE_FROM = 64 << 20  # tables at least this large ask for huge pages


def aligned_zeros(shape, dtype, align: int = 64) -> np.ndarray:
    """A zeroed array whose first element starts on an `align`-byte boundary (rows of 64 bytes
    are then one cache line each, rows of 208 straddle as few lines as they can).

    A table of `HUGE_FROM` bytes or more starts on a huge-page boundary and asks the kernel for
    transparent huge pages (Linux ``madvise(MADV_HUGEPAGE)``, which the default ``madvise`` mode
    honours; elsewhere nothing happens): 2 MB pages instead of 4 KB ones take 512 times fewer page
    faults when the table is first written (the 131k fabric's MRC EV table is 4.3 GB) and far fewer
    TLB misses when packets touch rows at random. The contents are the same zeros either way."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) * dtype.itemsize
    if n >= HUGE_FROM:
        align = max(align, HUGE_PAGE)
    raw = np.zeros(n + align, np.uint8)
    off = (-raw.ctypes.data) % align
    out = raw[off: off + n].view(dtype).reshape(shape)
    if n >= HUGE_FROM:
        _advise_huge(raw.ctypes.data + off, n - n % HUGE_PAGE)
    return out


def fill_rows(table: np.ndarray, row: np.ndarray) -> None:
    """Every row of the 1-d structured `table` set to the one-row array `row`, as ``table[:] = row`` but a
    byte copy: numpy assigns structured rows field by field (2 s for the 131k fabric's 4.2 M ports, 0.3 s
    this way). Same dtype required: the bytes are copied as they are."""
    if table.dtype != row.dtype or row.shape != (1,) or table.ndim != 1:
        raise ValueError(f"fill_rows: a 1-d table and one row of its dtype, got {table.dtype} {table.shape} and "
                         f"{row.dtype} {row.shape}")
    if len(table):
        table.view(np.uint8).reshape(len(table), table.dtype.itemsize)[:] = row.view(np.uint8)


def _advise_huge(addr: int, length: int) -> None:
    import ctypes
    import sys

    if not sys.platform.startswith("linux") or length <= 0:
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise(ctypes.c_void_p(addr), ctypes.c_size_t(length), 14)  # MADV_HUGEPAGE; a refusal changes nothing
    except (OSError, AttributeError):
        return
