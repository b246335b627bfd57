"""The NumPy protocol tables: which ``np.*`` functions (``__array_function__``) and ufunc calls
(``__array_ufunc__``) the tracer handles, and by which builder.

Anything not listed (and anything a builder refuses) is a graph break
(:class:`~kfuse.trace.core.GraphBreak`, an ``UnsupportedError`` naming the function and the user's
``file.py:line``): a segmented run calls the function eagerly on concrete arrays instead
(``kfuse.breaks``). :data:`LIBRARY` names the functions whose eager call is the library's kernel
(sorting, FFTs): ``explain`` says so. CuPy: ``cupy.*`` functions do not go through NumPy's protocols; calling them on
a tracer is not supported (write the function with ``np.*``; kfuse runs it on CuPy arrays).
"""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedError

from . import assemble as asm
from . import composite as cm
from . import einsum as es
from . import elementwise as ew
from . import floatparts as fp
from . import indexing as ix
from . import linalg as la
from . import movement as mv
from . import nanstats as ns
from . import norms as nm
from . import reductions as rd
from . import scans as sc
from . import scatter as st
from . import searching as se
from . import splitting as sp
from . import windows as wn
from .mutation import unit_dims_only, viewing
from .selection import Selection
from .core import GraphBreak, Tracer, as_break, as_node, break_or_eager, graph_break, unsupported
from .writes import copyto, write_out
from .size_reads import GENERIC_FUNCTIONS, note as note_size_read


def _shape(a):
    note_size_read(0)
    return as_node(a).shape


def _ndim(a):
    return as_node(a).ndim


def _size(a, axis=None):
    note_size_read(0)
    shape = as_node(a).shape
    if axis is None:
        return int(np.prod(shape, dtype=np.int64))
    return shape[axis]


def _copy(a, order="K", subok=False):
    return Tracer(as_node(a, "argument of np.copy"))


def _asarray_like(a, dtype=None, *args, **kwargs):
    # np.ascontiguousarray / np.asfortranarray on a tracer: layout is the compiler's business.
    return ew.astype(a, dtype) if dtype is not None else Tracer(as_node(a))


def _atleast(n):
    def f(*arys):
        res = [mv.atleast_nd(a, n) for a in arys]
        return res[0] if len(res) == 1 else tuple(res)
    return f


FUNCTIONS = {
    np.sum: rd.sum, np.prod: rd.prod, np.mean: rd.mean,
    np.max: rd.max, np.amax: rd.max, np.min: rd.min, np.amin: rd.min,
    np.any: rd.any, np.all: rd.all, np.var: rd.var, np.std: rd.std,
    np.argmax: rd.argmax, np.argmin: rd.argmin,
    np.dot: la.dot, np.inner: la.inner, np.vdot: la.vdot, np.outer: la.outer,
    np.tensordot: la.tensordot, np.einsum: es.einsum,
    np.reshape: viewing(mv.reshape, unit_dims_only),
    np.ravel: viewing(mv.ravel, unit_dims_only), np.transpose: viewing(mv.transpose),
    np.swapaxes: viewing(mv.swapaxes), np.moveaxis: viewing(mv.moveaxis), np.expand_dims: viewing(mv.expand_dims),
    np.squeeze: viewing(mv.squeeze), np.broadcast_to: viewing(mv.broadcast_to),
    np.broadcast_arrays: viewing(mv.broadcast_arrays),
    np.where: ew.where, np.clip: ew.clip, np.round: ew.round_, np.around: ew.round_,
    np.zeros_like: ew.zeros_like, np.ones_like: ew.ones_like, np.full_like: ew.full_like,
    np.empty_like: ew.zeros_like,                   # (NumPy leaves the values open: zeros)
    np.shape: _shape, np.ndim: _ndim, np.size: _size, np.copy: _copy,
    np.ascontiguousarray: viewing(_asarray_like, False),
    np.asfortranarray: viewing(_asarray_like, False),
    np.atleast_1d: viewing(_atleast(1)), np.atleast_2d: viewing(_atleast(2)),
    np.atleast_3d: viewing(_atleast(3)),
    np.concatenate: asm.concatenate, np.stack: asm.stack, np.hstack: asm.hstack,
    np.vstack: asm.vstack, np.dstack: asm.dstack, np.column_stack: asm.column_stack,
    np.append: asm.append, np.pad: asm.pad, np.roll: asm.roll, np.flip: viewing(asm.flip),
    np.fliplr: viewing(asm.fliplr), np.flipud: viewing(asm.flipud), np.diff: asm.diff,
    np.tril: asm.tril, np.triu: asm.triu,
    np.take: ix.take, np.take_along_axis: ix.take_along_axis,
    np.put: st.put, np.put_along_axis: st.put_along_axis,
    np.searchsorted: se.searchsorted, np.digitize: se.digitize, np.interp: se.interp,
    np.isclose: cm.isclose, np.allclose: cm.allclose, np.nan_to_num: cm.nan_to_num,
    np.nansum: cm.nansum, np.nanmean: cm.nanmean, np.nanmax: cm.nanmax, np.nanmin: cm.nanmin,
    np.ptp: cm.ptp, np.count_nonzero: cm.count_nonzero, np.diagonal: cm.diagonal, np.trace: cm.trace,
    np.tile: cm.tile, np.repeat: cm.repeat, np.diag: wn.diag,
    np.lib.stride_tricks.sliding_window_view: wn.sliding_window_view,
    np.linalg.norm: nm.norm, np.average: cm.average,
    np.select: cm.select, np.sinc: cm.sinc, np.polyval: cm.polyval, np.fix: cm.fix, np.isposinf: cm.isposinf,
    np.isneginf: cm.isneginf, np.split: sp.split, np.array_split: sp.array_split, np.hsplit: sp.hsplit,
    np.vsplit: sp.vsplit, np.dsplit: sp.dsplit, np.rot90: sp.rot90, np.meshgrid: sp.meshgrid,
    np.real: fp.real, np.imag: fp.imag, np.angle: fp.angle, np.i0: fp.i0, np.copyto: copyto,
    np.isreal: fp.isreal, np.iscomplex: fp.iscomplex, np.iscomplexobj: fp.iscomplexobj,
    np.isrealobj: fp.isrealobj,
    np.nanprod: ns.nanprod, np.nanvar: ns.nanvar, np.nanstd: ns.nanstd,
    np.cumsum: sc.cumsum, np.cumprod: sc.cumprod, np.nancumsum: sc.nancumsum, np.nancumprod: sc.nancumprod,
}
if hasattr(np, "concat"):                       # NumPy >= 2.0 array-API name
    FUNCTIONS[np.concat] = asm.concatenate
for _name, _fn in (("vector_norm", nm.vector_norm), ("matrix_norm", nm.matrix_norm)):
    if hasattr(np.linalg, _name):       # NumPy >= 2.0 array-API names
        FUNCTIONS[getattr(np.linalg, _name)] = _fn
if hasattr(np, "trapezoid"):                    # NumPy >= 2.0
    FUNCTIONS[np.trapezoid] = cm.trapezoid
for _name, _fn in (("cumulative_sum", sc.cumulative_sum), ("cumulative_prod", sc.cumulative_prod),
                   ("astype", ew.astype), ("permute_dims", viewing(mv.permute_dims)),
                   ("matrix_transpose", viewing(mv.matrix_transpose))):
    if hasattr(np, _name):           # NumPy >= 2.0 array-API names
        FUNCTIONS[getattr(np, _name)] = _fn


def _name(func) -> str:
    mod = getattr(func, "__module__", "") or ""
    prefix = "np.linalg." if "linalg" in mod else "np.fft." if "fft" in mod else "np."
    return prefix + getattr(func, "__name__", repr(func))


LIBRARY = {np.sort: "numpy.sort", np.argsort: "numpy.argsort", np.partition: "numpy.partition",
           np.argpartition: "numpy.argpartition"}


def library_name(func) -> str | None:
    """``numpy.sort``, ``numpy.fft.rfft``: the library function whose kernel a call runs, or None."""
    name = LIBRARY.get(func)
    if name is None and (getattr(func, "__module__", "") or "").startswith("numpy.fft"):
        name = "numpy.fft." + func.__name__
    return name


def array_function(func, types, args, kwargs):
    """``Tracer.__array_function__``."""
    if not all(issubclass(t, (Tracer, np.ndarray)) for t in types):
        return NotImplemented
    if getattr(func, "__name__", "") not in GENERIC_FUNCTIONS:
        note_size_read(0)                       # (a builder that may decide by a size)
    handler = FUNCTIONS.get(func)
    if handler is None:
        lib = library_name(func)
        detail = (f"a library call ({lib}), run between fused segments unless fullgraph=True" if lib else
                  "kfuse traces elementwise ufuncs, reductions, matmul/dot and movement functions "
                  "(see kfuse.trace.numpy_api.FUNCTIONS)")
        return break_or_eager(func, args, kwargs, graph_break(_name(func), detail, lib))
    try:
        return handler(*args, **kwargs)
    except GraphBreak:
        raise
    except UnsupportedError as e:
        return break_or_eager(func, args, kwargs, as_break(e, _name(func)))


VECTOR_GUFUNCS = frozenset({"vecdot", "matvec", "vecmat"})    # NumPy >= 2.2 contraction gufuncs


def array_ufunc(ufunc, method, *inputs, **kwargs):
    """``Tracer.__array_ufunc__``; what the builders refuse is a graph break (run eagerly)."""
    if any(isinstance(x, Selection) for x in inputs):
        return NotImplemented                   # Selection.__array_ufunc__ takes the mix
    if method != "__call__":                   # (reduce, accumulate, outer, at: not all generic)
        note_size_read(0)
    try:
        return _traced_ufunc(ufunc, method, *inputs, **dict(kwargs))
    except GraphBreak:
        raise
    except UnsupportedError as e:
        what = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
        return break_or_eager(ufunc if method == "__call__" else getattr(ufunc, method), inputs, kwargs,
                              as_break(e, what))


def _traced_ufunc(ufunc, method, *inputs, **kwargs):
    name = ufunc.__name__
    out = kwargs.pop("out", None)
    outs = out if isinstance(out, tuple) else (out,)
    if any(o is not None for o in outs):
        if method != "__call__" or len(outs) != ufunc.nout:
            raise unsupported(f"np.{name}{'' if method == '__call__' else '.' + method} with out=",
                              "return the result instead")
        where = kwargs.pop("where", True)
        casting = kwargs.pop("casting", "same_kind")
        res = _traced_ufunc(ufunc, method, *inputs, **kwargs)
        res = res if isinstance(res, tuple) else (res,)
        done = tuple(r if o is None else write_out(o, r, name, casting, where)
                     for o, r in zip(outs, res))
        return done if ufunc.nout > 1 else done[0]
    if method == "reduce":
        return rd.ufunc_reduce(ufunc, *inputs, **kwargs)
    if method == "accumulate":
        return sc.ufunc_accumulate(ufunc, *inputs, **kwargs)
    if method == "at":
        return st.ufunc_at(ufunc, *inputs, **kwargs)
    if method != "__call__":
        raise unsupported(f"np.{name}.{method}")
    if name in VECTOR_GUFUNCS and set(kwargs) <= {"axes", "axis"}:
        return la.vector_gufunc(name, *inputs, **kwargs)
    if kwargs:
        raise unsupported(f"np.{name} with {', '.join(k + '=' for k in kwargs)}")
    if name == "matmul":
        return la.matmul(*inputs)
    if name in fp.UFUNCS:                       # composed of traced ufuncs
        return fp.UFUNCS[name](*inputs)
    if name == "divmod":
        return ew.apply_ufunc("floor_divide", *inputs), ew.apply_ufunc("remainder", *inputs)
    if not ew.supports_ufunc(name):
        raise unsupported(f"np.{name}")
    return ew.apply_ufunc(name, *inputs)
