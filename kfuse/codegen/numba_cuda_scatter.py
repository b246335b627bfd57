"""Scatter stores of the Numba-CUDA emitter (:mod:`kfuse.codegen.numba_cuda`).

A scatter kernel (``KernelIR.kind == "scatter"``) is the elementwise kernel (a grid-stride loop,
``ilp`` elements a thread) whose one :class:`~kfuse.codegen.kernel_ir.Store` writes at positions
read from index arrays, into an output the runtime filled with a copy of the base first. A plain
store is ``out[offset] = v`` (where two elements hit one position one of the writes lands). A
combining store (``ufunc.at``) is one of numba's atomics where a hardware atomic computes it
exactly (``loop`` the output's dtype): ``cuda.atomic.add`` on int32, int64, uint32, uint64,
float32 and float64 (float adds land in the order the atomics run, and float32's flush subnormals
to zero: PTX's ``atom.add.f32``), ``cuda.atomic.max``/``min`` for ``maximum``/``minimum`` (and
``fmax``/``fmin``, the same on integers) of those integers. Every other combine (float max/min,
which must propagate NaN, bool, 8- and 16-bit integers, float16, a cast through ``loop``, any other
op) is refused when the program is compiled (:func:`refuse_unsupported`): the CUDA C backend runs
them through compare-and-swap loops (:mod:`kfuse.codegen.cuda_scatter`).

numba's atomics take an array and an index, the kernels raw pointers: the generated kernel views
the element as a 1-element array with :func:`element_array`, an intrinsic made when a generated
kernel imports it (so this module imports numba-cuda only then, as ``numba_cuda_narrow`` is).
"""
from __future__ import annotations

import functools

from ..errors import UnsupportedError
from . import kernel_ir as K

IMPORT = "from kfuse.codegen.numba_cuda_scatter import element_array"
_ATOMIC = {"add": "add", "maximum": "max", "fmax": "max", "minimum": "min", "fmin": "min"}
_TYPES = {"add": ("int32", "int64", "uint32", "uint64", "float32", "float64"),
          "max": ("int32", "int64", "uint32", "uint64"), "min": ("int32", "int64", "uint32", "uint64")}


def atomic_for(st: K.Store, out_dtype: str) -> str | None:
    """The ``cuda.atomic`` function computing combining store ``st`` into an ``out_dtype``
    buffer exactly, or None."""
    fn = _ATOMIC.get(st.combine)
    return fn if fn and st.loop == out_dtype and out_dtype in _TYPES[fn] else None


def combining_stores(kir: K.KernelIR) -> list[K.Store]:
    """The stores of ``kir`` with a combine (a scatter's ``ufunc.at``)."""
    return [s for ph in kir.phases for s in ph.pre + ph.body if isinstance(s, K.Store) and s.combine]


def refuse_unsupported(kir: K.KernelIR) -> None:
    """An :class:`UnsupportedError` naming the op and dtypes of a combine no numba atomic computes."""
    for st in combining_stores(kir):
        dt = kir.outputs[st.buf].dtype
        if atomic_for(st, dt) is None:
            loop = "" if st.loop == dt else f" computed in {st.loop}"
            raise UnsupportedError(f"kfuse: np.{st.combine}.at into a {dt} array{loop} has no exact atomic "
                                   "on the numba-cuda backend; use backend='cuda'")


def combine_store(st: K.Store, out_dtype: str, offset: str, value: str) -> str:
    """The Python statement of combining store ``st`` at element ``offset`` of ``out<buf>``."""
    return f"cuda.atomic.{atomic_for(st, out_dtype)}(element_array(out{st.buf}, {offset}), 0, {value})"


def __getattr__(name: str):
    """``element_array``, made at first import (by a generated kernel)."""
    if name == "element_array":
        return _element_array()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _element_array():
    from numba.core import types
    from numba.cuda.extending import intrinsic
    from numba.cuda.np.arrayobj import populate_array

    @intrinsic
    def element_array(typingctx, ptr, offset):
        """``ptr[offset]`` as a 1-element C array (what ``cuda.atomic`` functions take)."""
        if not isinstance(ptr, types.CPointer) or not isinstance(offset, types.Integer):
            return None
        aryty = types.Array(ptr.dtype, 1, "C")

        def codegen(context, builder, sig, args):
            p, off = args
            size = context.get_constant(types.intp, context.get_abi_sizeof(context.get_data_type(ptr.dtype)))
            ary = context.make_array(aryty)(context, builder)
            populate_array(ary, data=builder.gep(p, [off]), shape=[context.get_constant(types.intp, 1)],
                           strides=[size], itemsize=size, meminfo=None)
            return ary._getvalue()
        return aryty(ptr, offset), codegen
    return element_array
