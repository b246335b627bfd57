"""The tracer: wires Python operators, ndarray-style methods and NumPy's ``__array_ufunc__`` /
``__array_function__`` protocols onto :class:`~kfuse.trace.core.Tracer`, and
:func:`trace_function`, which calls a function once on tracers and returns its ``ir.Graph``.
"""
from __future__ import annotations

import inspect
import weakref
from typing import Any, Callable

import numpy as np

from ..errors import UnsupportedError
from ..ir.dtypes import check_supported, is_float
from ..ir.graph import Graph, Node, python_leaf, toposort
from ..ir.ops import Op
from ..ir.specs import ArgSpec, ArraySpec, GeneratorSpec, ScalarSpec, StaticSpec
from . import composite as cm
from . import elementwise as ew
from . import floatparts as fp
from . import indexing as ix
from . import linalg as la
from . import movement as mv
from . import mutation as mut
from . import random as rnd
from . import writes
from . import numpy_api
from .size_reads import note as note_size_read
from . import reductions as rd
from . import scans as sc
from . import scatter as st
from . import searching as se
from .core import (GraphBreak, Tracer, as_break, break_or_eager, collecting_checks, collecting_constants,
                   graph_break, mk, numpy_scalar, operand, unsupported)
from .selection import Selection, install_operators

__all__ = ["TracedCall", "Tracer", "trace_function"]

# --- operators --------------------------------------------------------------------------------
_BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "and": "bitwise_and",
    "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift", "rshift": "right_shift",
}
_COMPARE = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
            "gt": "greater", "ge": "greater_equal"}
_UNARY = {"neg": "negative", "pos": "positive", "abs": "absolute", "invert": "invert"}


def _breaking(ufunc: str, build: Callable, *operands):
    """``build()``, or where it refuses the operands (a complex scalar...) a graph break: a
    segmented run applies ``np.<ufunc>`` to the concrete operands instead."""
    try:
        return build()
    except GraphBreak:
        raise
    except UnsupportedError as e:
        return break_or_eager(getattr(np, ufunc), operands, {}, as_break(e, f"np.{ufunc}"))


def _binary(ufunc: str, reflected: bool):
    def op(self, other):
        if getattr(type(other), "__array_ufunc__", 0) is None or isinstance(other, Selection):
            return NotImplemented               # it opted out of NumPy ops / handles the mix
        a, b = (other, self) if reflected else (self, other)
        return _breaking(ufunc, lambda: ew.apply_ufunc(ufunc, a, b, python_op=True), a, b)
    return op


def _unary(ufunc: str):
    def op(self):
        return _breaking(ufunc, lambda: ew.apply_ufunc(ufunc, self, python_op=True), self)
    return op


_COMPLEX_FAST = {(int, 2): "square", (int, -1): "reciprocal", (float, 0.5): "sqrt"}


def _pow(self, other):
    """``x ** e``: NumPy's ndarray.__pow__ fast path computes ``x ** 2`` of bool as np.square
    (int8 result) and ``x ** 0.5`` of floats as np.sqrt (``-0.0``/``-inf`` differ from power).
    A NumPy scalar takes no fast path (``np.True_ ** 2`` is int64: seed 32 #9697). Of complex
    arrays a Python int 2 is np.square, -1 np.reciprocal and a float 0.5 np.sqrt (infinities
    differ from npy_cpow's)."""
    if self.weak is None and not numpy_scalar(self):
        if self.dtype.kind == "c" and type(other) in (int, float) and (type(other), other) in _COMPLEX_FAST:
            return ew.apply_ufunc(_COMPLEX_FAST[type(other), other], self)
        if type(other) is int and other == 2 and self.dtype == np.bool_:
            return ew.apply_ufunc("square", self)
        if type(other) is float and other == 0.5 and is_float(self.dtype):
            return ew.apply_ufunc("sqrt", self)
    return _breaking("power", lambda: ew.apply_ufunc("power", self, other, python_op=True), self, other)


def _library_method(func, in_place: bool):
    """``x.sort()``/``x.partition(k)`` (in place) and ``x.argsort()``/``x.argpartition(k)``: the
    library call ``func(x, ...)`` (a graph break), its result written back into ``x`` if in place."""
    lib = numpy_api.library_name(func)

    def m(self, *args, **kwargs):
        brk = graph_break(f"ndarray.{func.__name__}", f"a library call ({lib}), run between fused segments "
                          "unless fullgraph=True", lib)
        res = break_or_eager(func, (self, *args), kwargs, brk)
        if not in_place:
            return res
        mut.setitem(self, Ellipsis, res)
    m.__name__ = func.__name__
    return m


def _divmod(self, other):
    return (ew.apply_ufunc("floor_divide", self, other, python_op=True),
            ew.apply_ufunc("remainder", self, other, python_op=True))


def _rdivmod(self, other):
    return (ew.apply_ufunc("floor_divide", other, self, python_op=True),
            ew.apply_ufunc("remainder", other, self, python_op=True))


def _inplace(operator_fn, ufunc: str):
    """``x op= y``: NumPy's ``op(x, y, out=x)`` (:func:`kfuse.trace.mutation.update`)."""
    def op(self, other):
        try:
            result = operator_fn(self, other)
        except ValueError:          # NumPy resolves the loop and its cast to x before the shapes
            if ufunc != "matmul":
                _check_out_cast(self, other, ufunc)
            raise
        if result is NotImplemented:
            return result
        return mut.update(self, result, ufunc)
    return op


def _check_out_cast(x, other, ufunc: str) -> None:
    """Raise NumPy's casting error of ``x op= other`` if its result dtype cannot be cast to ``x``'s
    (``same_kind``), which NumPy reports before operands of mismatched shapes."""
    try:
        key = operand(other).key
        loop = getattr(np, ufunc).resolve_dtypes((x.dtype if x.weak is None else x.weak, key, None))
    except Exception:           # noqa: BLE001 (no loop for these types: the shape error stands)
        return
    writes.check_same_kind(ufunc, loop[-1], x.dtype)


def _conj(self):
    """``x.conj()`` / ``x.conjugate()``: ``np.conjugate(x)`` of a complex array; a real one is
    returned as it is (NumPy's method calls no ufunc: a bool array stays bool)."""
    return ew.apply_ufunc("conjugate", self) if self.dtype.kind == "c" else self


def _iter(self):
    note_size_read(0)               # (the number of items is a size)
    if not self.shape:
        raise TypeError("iteration over a 0-d array")
    return (mv.getitem(self, i) for i in range(self.shape[0]))


def _method(fn: Callable) -> Callable:
    def m(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    m.__name__ = fn.__name__
    return m


def _reshape_method(self, *shape, order="C", copy=None):
    if len(shape) == 1 and (isinstance(shape[0], (tuple, list)) or shape[0] is None):
        shape = shape[0]
    return mv.reshape(self, shape, order)


def _transpose_method(self, *axes):
    if not axes or (len(axes) == 1 and axes[0] is None):
        return mv.transpose(self)
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = axes[0]
    return mv.transpose(self, tuple(axes))


def _clip_method(self, min=None, max=None, out=None, **kwargs):
    return ew.clip(self, min, max, out, **kwargs)


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    return numpy_api.array_ufunc(ufunc, method, *inputs, **kwargs)


def _array_function(self, func, types, args, kwargs):
    return numpy_api.array_function(func, types, args, kwargs)


def _install() -> None:
    T = Tracer
    for name, uf in _BINARY.items():
        setattr(T, f"__{name}__", _binary(uf, False))
        setattr(T, f"__r{name}__", _binary(uf, True))
        setattr(T, f"__i{name}__", _inplace(getattr(T, f"__{name}__"), uf))
    for name, uf in _COMPARE.items():
        setattr(T, f"__{name}__", _binary(uf, False))
    for name, uf in _UNARY.items():
        setattr(T, f"__{name}__", _unary(uf))
    T.__pow__ = _pow
    T.__ipow__ = _inplace(_pow, "power")
    T.__matmul__ = lambda self, other: la.matmul(self, other)
    T.__rmatmul__ = lambda self, other: la.matmul(other, self)
    T.__imatmul__ = _inplace(T.__matmul__, "matmul")
    T.__divmod__, T.__rdivmod__ = _divmod, _rdivmod
    T.__getitem__ = mut.getitem
    T.__setitem__ = mut.setitem
    T.__iter__ = _iter
    T.__array_ufunc__ = _array_ufunc
    T.__array_function__ = _array_function
    for name, fn in (("sum", rd.sum), ("prod", rd.prod), ("mean", rd.mean), ("max", rd.max),
                     ("min", rd.min), ("any", rd.any), ("all", rd.all), ("var", rd.var),
                     ("std", rd.std), ("argmax", rd.argmax), ("argmin", rd.argmin),
                     ("astype", ew.astype), ("swapaxes", mut.viewing(mv.swapaxes)),
                     ("squeeze", mut.viewing(mv.squeeze)), ("dot", la.dot),
                     ("ravel", mut.viewing(mv.ravel, mut.unit_dims_only)), ("flatten", mv.ravel),
                     ("round", ew.round_), ("copy", numpy_api._copy), ("take", ix.take), ("put", st.put), ("searchsorted", se.searchsorted),
                     ("diagonal", cm.diagonal), ("trace", cm.trace), ("repeat", cm.repeat),
                     ("cumsum", sc.cumsum), ("cumprod", sc.cumprod), ("conj", _conj), ("conjugate", _conj)):
        setattr(T, name, _method(fn))
    for func, in_place in ((np.sort, True), (np.partition, True), (np.argsort, False),
                           (np.argpartition, False)):
        setattr(T, func.__name__, _library_method(func, in_place))
    T.reshape = mut.viewing(_reshape_method, mut.unit_dims_only)
    T.transpose = mut.viewing(_transpose_method)
    T.clip = _clip_method
    T.real = property(fp.real, fp.set_real)
    T.imag = property(fp.imag, fp.set_imag)
    T.T = property(mut.viewing(mv.transpose))
    T.mT = property(mut.viewing(mv.matrix_transpose))
    install_operators(_BINARY, _COMPARE, _UNARY)
    for name in _SIZED_METHODS:         # builders that may decide by a size (trace.size_reads)
        setattr(T, name, _reads_sizes(getattr(T, name)))


# the tracer's methods whose builders may decide by a size (a slice clamped to its dim, a
# reshape's -1, an index's range): a trace calling one is not reused at other sizes
_SIZED_METHODS = ("__getitem__", "__setitem__", "__matmul__", "__rmatmul__", "__imatmul__", "reshape",
                  "ravel", "flatten", "squeeze", "swapaxes", "take", "put", "searchsorted", "diagonal",
                  "trace", "repeat", "dot", "sort", "partition", "argsort", "argpartition")


def _reads_sizes(fn: Callable) -> Callable:
    def method(*args, **kwargs):
        note_size_read(0)
        return fn(*args, **kwargs)
    method.__name__ = getattr(fn, "__name__", "method")
    return method


_install()


# --- tracing a function -----------------------------------------------------------------------
def _input(spec: ArgSpec, index: int, pname: str) -> Tracer:
    if isinstance(spec, ArraySpec):
        dt = check_supported(spec.dtype, f"argument {pname!r}")
        attrs = {"index": index, "name": pname} | ({"numpy_scalar": True} if spec.numpy_scalar else {})
        node = Node(Op.INPUT, dt, tuple(spec.shape), (), attrs, loc=None)
        return Tracer(node, argument=pname)
    if isinstance(spec, ScalarSpec):
        if spec.pytype not in (bool, int, float, complex):
            raise unsupported(f"scalar argument {pname!r} of type {spec.pytype.__name__}")
        node = Node(Op.INPUT, spec.dtype, (), (), {"index": index, "name": pname, "weak": spec.pytype.__name__},
                    loc=None)
        return Tracer(node, weak=spec.pytype)
    raise TypeError(f"bad spec for argument {pname!r}: {spec!r}")


def _flatten(value: Any, outputs: list[Node], path: str, written: dict[int, int], arguments: set[int]):
    """The return structure's leaves appended to ``outputs``; an argument the function wrote into
    (``written``: its tracer's id to its input index) is a ("written", k) leaf, ``None`` a
    ("none", ()) leaf, and a new array holding an argument's value (``x.copy()``, ``x.astype(x.dtype)``:
    not the argument itself, ``arguments`` the ids of theirs, nor a view of one) a ("copy", o) leaf."""
    def inner(v, where):
        return _flatten(v, outputs, where, written, arguments)
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return ("tuple", tuple(inner(v, f"{path}[{i}]") for i, v in enumerate(value)))
    if isinstance(value, list):
        return ("list", tuple(inner(v, f"{path}[{i}]") for i, v in enumerate(value)))
    if isinstance(value, dict):
        return ("dict", tuple((k, inner(v, f"{path}[{k!r}]")) for k, v in value.items()))
    if value is None:               # a function that only writes into its arguments, or a None leaf
        return ("none", ())
    if type(value) in (bool, int, float):       # a Python number returned as it is (x.shape[0], n)
        return python_leaf(value)
    if id(value) in written:
        return ("written", written[id(value)])
    if isinstance(value, Selection):            # its eager value in a segmented run, else the break
        value = value._dynamic(f"returning ({path})")
    if isinstance(value, Tracer):
        node = value.node
        if value.weak in (bool, int, float) and not node.shape:    # Python arithmetic on Python numbers
            outputs.append(node)
            return ("python", (len(outputs) - 1, value.weak.__name__))
        if (node.op is Op.INPUT and value.weak is None and not node.attr("weak") and id(value) not in arguments
                and value.base is None and not node.attr("fresh")):
            outputs.append(node)
            return ("copy", len(outputs) - 1)
    elif isinstance(value, (bool, int, float, np.generic, np.ndarray)):
        o = operand(value, f"return value {path}")
        node = o.node if o.node is not None else mk(Op.CONST, o.dtype, (), attrs={"value": o.value})
    else:
        raise UnsupportedError(f"kfuse: the traced function returned {type(value).__name__} at {path}; "
                               "return arrays, scalars, None, or tuples/lists/dicts of them")
    outputs.append(node)
    return len(outputs) - 1


def _host_values_only(node: Node) -> bool:
    """Whether ``node`` reads only arguments the caller passes as host scalars (Python or NumPy
    scalars, whatever the backend): a check of it can run on the host before the call."""
    return all(n.attr("weak") or n.attr("numpy_scalar") for n in toposort((node,)) if n.op is Op.INPUT)


def _returned_arguments(tree, leaf: Callable[[int], Any]):
    """``tree`` with each ("written", k) leaf replaced by ``leaf(k)``."""
    if isinstance(tree, int):
        return tree
    kind, items = tree
    if kind == "written":
        return leaf(items)
    if kind in ("none", "copy", "value", "python"):
        return tree
    if kind == "dict":
        return kind, tuple((k, _returned_arguments(t, leaf)) for k, t in items)
    return kind, tuple(_returned_arguments(t, leaf) for t in items)


def trace_function(fn: Callable, specs: dict[str, ArgSpec], name: str | None = None) -> Graph:
    """Trace ``fn`` once on abstract arguments and return its :class:`~kfuse.ir.Graph`.

    ``specs`` maps every parameter name of ``fn``, in order, to an ArraySpec (an INPUT node), a
    ScalarSpec (an INPUT node of shape () promoted weakly) or a StaticSpec (its value is passed).
    """
    call = TracedCall(fn, specs)
    with np.errstate(all="ignore"), collecting_constants(len(call.inputs)) as consts, \
            collecting_checks() as checks, rnd.intercepting():
        result = fn(*call.args, **call.kwargs)
        return call.graph(result, name or getattr(fn, "__name__", "fn"), consts.nodes, consts.values,
                          checks.items)


# function -> its parameters' kinds (``inspect.signature`` costs as much as a few traced ops;
# a function is traced again at every new size)
_KINDS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _parameter_kinds(fn: Callable) -> dict:
    try:
        return _KINDS[fn]
    except (KeyError, TypeError):       # (TypeError: not weakly referable)
        pass
    try:
        kinds = {p.name: p.kind for p in inspect.signature(fn).parameters.values()}
    except (TypeError, ValueError):
        kinds = {}
    try:
        _KINDS[fn] = kinds
    except TypeError:
        pass
    return kinds


class TracedCall:
    """One call of ``fn`` on tracers: the arguments (``args``/``kwargs``) made from ``specs``, and
    :meth:`graph`, the graph of what it returned. ``trace_function`` makes one; a segmented run
    (``kfuse.breaks``) one per call."""

    def __init__(self, fn: Callable, specs: dict[str, ArgSpec]):
        kinds = _parameter_kinds(fn)
        self.args: list[Any] = []
        self.kwargs: dict[str, Any] = {}
        self.inputs: list[Node] = []
        self.written: list[tuple[Tracer, int]] = []      # array arguments, to see which were written
        for pname, spec in specs.items():
            if isinstance(spec, StaticSpec):
                value = spec.value
            elif isinstance(spec, GeneratorSpec):
                value = rnd.TracedGenerator(pname)
            else:
                value = _input(spec, len(self.inputs), pname)
                if value.weak is None:
                    self.written.append((value, len(self.inputs)))
                self.inputs.append(value.node)
            if kinds.get(pname) == inspect.Parameter.KEYWORD_ONLY:
                self.kwargs[pname] = value
            else:
                self.args.append(value)

    def graph(self, result: Any, gname: str, extra_inputs, constants: tuple, check_items,
              writebacks: bool = True) -> Graph:
        """The graph returning ``result``: inputs the arguments' then ``extra_inputs`` (the array
        constants, whose values are ``constants``; or a segmented run's concrete values, with
        ``constants`` empty); ``check_items`` the run-time checks made (``IndexChecks.items``);
        without ``writebacks`` (a segment before the function returns) no argument is written."""
        inputs, written = self.inputs, self.written if writebacks else []
        outputs: list[Node] = []
        changed = {id(t): k for t, k in written if t.node is not inputs[k]}
        tree = _flatten(result, outputs, "return", changed, {id(t) for t, _ in written})
        writebacks = []         # arguments the function wrote into: their final values, copied back
        for t, k in written:
            if id(t) in changed:
                writebacks.append((k, len(outputs)))
                outputs.append(t.node)
        if writebacks:          # a returned argument written into: the caller's array itself
            final = dict(writebacks)
            tree = _returned_arguments(tree, lambda k: ("arg", (k, final[k])))
        index_checks, host_checks = [], []      # checked at run time: raise if an index is out of range, ...
        for node, message, error in check_items:
            if _host_values_only(node):         # x[i] of a Python int i: before any kernel, no flag read back
                host_checks.append((node, message, error))
            else:
                index_checks.append((len(outputs), message, error))
                outputs.append(node)
        return Graph(gname, tuple(inputs) + tuple(extra_inputs), tuple(outputs), tree,
                     constants=tuple(constants), writebacks=tuple(writebacks),
                     checks=tuple(index_checks), host_checks=tuple(host_checks))
