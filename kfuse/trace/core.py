"""Core of the tracer: the :class:`Tracer` proxy's data, node creation stamped with the user's
``file.py:line``, operand normalisation (tracers, Python/NumPy scalars, 0-d arrays) and the
explicit CAST/BROADCAST helpers every builder uses.

Operators and NumPy protocols are wired onto :class:`Tracer` by :mod:`kfuse.trace.tracer`; the
builder modules (elementwise, reductions, movement, linalg) only use what is defined here.

A tracer is *weak* (``weak`` is ``bool``/``int``/``float``/``complex``) when it stands for a Python scalar
(a :class:`~kfuse.ir.specs.ScalarSpec` argument, or Python arithmetic on one): NumPy 2 promotes
it like a Python scalar (NEP 50). Everything else is strong (its node's dtype).
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Iterator

import numpy as np

from ..errors import KfuseError, UnsupportedError, at, user_location
from ..ir.dtypes import SUPPORTED
from ..ir.graph import Node, toposort
from ..ir.ops import MOVEMENT, Op
from ..records import record
from .size_reads import note as _note_size_read

PYTYPES = (bool, int, float, complex)


class ConstantInputs:
    """The array constants one trace meets (``np.arange(n)``, a global lookup table): each becomes
    an INPUT node numbered after the function's own arguments, its value copied at trace time
    (later changes to a global array are not seen, as in jax.jit) and fed to every call."""

    def __init__(self, first_index: int):
        self.first_index = first_index
        self.values: list[np.ndarray] = []
        self.nodes: list[Node] = []
        self._seen: dict[int, tuple[np.ndarray, Node]] = {}     # id -> (the array kept alive, node)

    def node_for(self, x: np.ndarray) -> Node:
        hit = self._seen.get(id(x))
        if hit is not None:
            return hit[1]
        k = len(self.nodes)
        node = mk(Op.INPUT, x.dtype, x.shape, attrs={"index": self.first_index + k, "name": f"const{k}"})
        self.values.append(np.array(x, copy=True, order="C"))
        self.nodes.append(node)
        self._seen[id(x)] = (x, node)
        return node

    def per_call_input(self, key, dtype, name: str, attrs: dict) -> Node:
        """A 0-d INPUT numbered as the constants are, whose value the call supplies anew (a
        random op's seed, ``trace/random.py``); ``values`` holds a zero in its place."""
        hit = self._seen.get(key)
        if hit is not None:
            return hit[1]
        node = mk(Op.INPUT, dtype, (), attrs={"index": self.first_index + len(self.nodes), "name": name, **attrs})
        self.values.append(np.zeros((), dtype))
        self.nodes.append(node)
        self._seen[key] = (None, node)
        return node


_CONSTANTS: contextvars.ContextVar[ConstantInputs | None] = contextvars.ContextVar("kfuse_constants", default=None)


@contextlib.contextmanager
def collecting_constants(first_index: int) -> Iterator[ConstantInputs]:
    """Array constants met inside the block become inputs of the trace (``trace_function``)."""
    consts = ConstantInputs(first_index)
    token = _CONSTANTS.set(consts)
    try:
        yield consts
    finally:
        _CONSTANTS.reset(token)


def constant_inputs() -> ConstantInputs:
    """The constants of the trace under way (``collecting_constants``)."""
    consts = _CONSTANTS.get()
    if consts is None:
        raise KfuseError("kfuse: an input made outside kfuse.trace_function")
    return consts


class GraphBreak(UnsupportedError):
    """What a whole-function trace cannot follow (``what``: ``bool()``, ``np.sort``, ...; at the
    user's ``location``): ``kfuse.jit`` then runs the function in segments (``kfuse.breaks``),
    unless ``fullgraph=True``, where it is the UnsupportedError it always was. ``library`` names
    the library function (``numpy.sort``) when the break is a library call."""

    def __init__(self, message: str, what: str, location: str | None, library: str | None = None):
        super().__init__(message)
        self.what, self.location, self.library = what, location, library


class Segments:
    """The protocol of a segmented run (``kfuse.breaks.session.Session``), set while the traced
    function runs in segments: concrete values of tracers on demand, eager calls, constants."""

    def value(self, t: "Tracer", what: str):            # the tracer's concrete array
        raise NotImplementedError

    def host_value(self, t: "Tracer", what: str) -> np.ndarray:     # ... as a NumPy array
        raise NotImplementedError

    def eager(self, func, args, kwargs, what: str, library: str | None = None):
        raise NotImplementedError

    def node_for(self, x: np.ndarray) -> Node:          # ConstantInputs.node_for
        raise NotImplementedError


_SEGMENTS: contextvars.ContextVar[Segments | None] = contextvars.ContextVar("kfuse_segments", default=None)


def segments() -> Segments | None:
    """The segmented run under way, or None (a whole-function trace, or no trace)."""
    return _SEGMENTS.get()


@contextlib.contextmanager
def running_segments(run: Segments, checks: "IndexChecks") -> Iterator[None]:
    """The block is a segmented run: ``run`` gives values and takes the constants and checks."""
    tokens = (_SEGMENTS.set(run), _CONSTANTS.set(run), _CHECKS.set(checks))
    try:
        yield
    finally:
        for var, token in zip((_SEGMENTS, _CONSTANTS, _CHECKS), tokens):
            var.reset(token)


def graph_break(what: str, detail: str, library: str | None = None) -> GraphBreak:
    """The break of ``what`` at the user's line, worded as ``unsupported`` words its errors."""
    where = loc()
    return GraphBreak(f"kfuse: {what} is not supported{(': ' + detail) if detail else ''}{at(where)}",
                      what, where, library)


def as_break(error: UnsupportedError, what: str) -> GraphBreak:
    """``error`` (raised by a builder while tracing ``what``) as a break with the same message."""
    if isinstance(error, GraphBreak):
        return error
    return GraphBreak(str(error), what, loc())


def break_or_eager(func, args, kwargs, brk: GraphBreak):
    """``func(*args, **kwargs)`` run eagerly on concrete values in a segmented run; else raise ``brk``."""
    run = _SEGMENTS.get()
    if run is None:
        raise brk
    return run.eager(func, args, kwargs, brk.what, brk.library)


def tracing() -> bool:
    """Whether a trace is under way (``trace_function`` is running a function on tracers)."""
    return _CONSTANTS.get() is not None


class IndexChecks:
    """The run-time checks one trace adds (``Graph.checks``): a bool scalar node that is True when
    the call must raise ``error(message)`` (an index array's value out of range: IndexError; the
    max of an empty selection: ValueError)."""

    def __init__(self):
        self.items: list[tuple[Node, str, str]] = []


_CHECKS: contextvars.ContextVar[IndexChecks | None] = contextvars.ContextVar("kfuse_checks", default=None)


@contextlib.contextmanager
def collecting_checks() -> Iterator[IndexChecks]:
    """Index checks made inside the block become outputs of the trace (``trace_function``)."""
    checks = IndexChecks()
    token = _CHECKS.set(checks)
    try:
        yield checks
    finally:
        _CHECKS.reset(token)


def add_check(node: Node, message: str, error: str = "IndexError") -> None:
    checks = _CHECKS.get()
    if checks is None:
        raise KfuseError("kfuse: a run-time check made outside kfuse.trace_function")
    checks.items.append((node, message, error))


def loc() -> str | None:
    """The user's ``file.py:line`` (innermost frame outside kfuse and NumPy)."""
    return user_location()


def unsupported(what: str, detail: str = "") -> UnsupportedError:
    return UnsupportedError(f"kfuse: {what} is not supported{(': ' + detail) if detail else ''}"
                            f"{at(loc())}")


def mk(op: Op, dtype, shape, inputs=(), attrs=None) -> Node:
    """A new (interned) node whose ``loc`` is the user's current line."""
    if _SEGMENTS.get() is None:
        return Node(op, dtype, shape, inputs, attrs or {}, loc=loc())
    # a segmented run records the same nodes every call: the stack is walked for new ones only
    # (``loc`` is not part of a node's identity, so it is set once the node exists)
    n = Node(op, dtype, shape, inputs, attrs or {}, loc=None)
    if n.loc is None:
        object.__setattr__(n, "loc", loc())
    return n


def pytype_of(dtype: np.dtype) -> type:
    return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[np.dtype(dtype).kind]


class Tracer:
    """Stands for one array (or weak scalar) value of the traced function: wraps an IR node.

    Item assignment and in-place operators (:mod:`kfuse.trace.mutation`) give a tracer a new node.
    A *view* (``x[1:]``, ``x.T``: a tracer made by a NumPy function that returns a view) keeps
    its ``base`` (the tracer owning the data), the movement nodes ``chain`` leading from the base's
    node to its own, and the base node it was derived from: when the base has been written since,
    ``node`` re-derives the view from the base's new node, as NumPy's view would show the write.
    ``exact`` is False for a reshape, which NumPy makes a view or a copy depending on memory
    layout: such a tracer refuses to be read once its base changed (the answer would depend on
    strides kfuse does not model). ``argument`` names the caller's argument the tracer stands for
    (a write to it is written back into the caller's array after the call, ``trace_function``)."""

    __slots__ = ("_node", "weak", "base", "chain", "_from", "exact", "argument")
    __array_priority__ = 1000.0
    __hash__ = None  # like ndarray: value equality is elementwise, so not hashable

    def __init__(self, node: Node, weak: type | None = None, argument: str | None = None):
        self._node = node
        self.weak = weak
        self.base: Tracer | None = None
        self.chain: tuple[Node, ...] = ()
        self._from: Node | None = None
        self.exact = True
        self.argument = argument

    @property
    def node(self) -> Node:
        base = self.base
        if base is not None and base.node is not self._from:
            if not self.exact:
                raise unsupported("reading a reshaped array after the array it was reshaped from "
                                  "was written", "NumPy makes the reshape a view or a copy "
                                  "depending on memory layout; reshape after the writes, or copy")
            n = base.node
            for m in self.chain:
                n = m.replace(inputs=(n,) + m.inputs[1:])
            self._node, self._from = n, base.node
        return self._node

    # --- static properties (shapes are static while tracing) -------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        _note_size_read()
        return self.node.shape

    @property
    def dtype(self) -> np.dtype:
        return self.node.dtype

    @property
    def ndim(self) -> int:
        return len(self.node.shape)

    @property
    def size(self) -> int:
        _note_size_read()
        return int(np.prod(self.node.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        return self.node.dtype.itemsize

    @property
    def nbytes(self) -> int:
        _note_size_read()
        return int(np.prod(self.node.shape, dtype=np.int64)) * self.itemsize

    def __len__(self) -> int:
        _note_size_read()
        if not self.node.shape:
            raise TypeError("len() of unsized object")
        return self.node.shape[0]

    def __repr__(self) -> str:
        kind = f" weak {self.weak.__name__}" if self.weak else ""
        return f"Tracer({self.node!r}{kind})"

    # --- Python control flow on values cannot be traced --------------------------------------
    def _control_flow(self, what: str, hint: str = ""):
        where = loc()
        raise GraphBreak(
            f"kfuse: {what} of a traced array{at(where)}: the value is not known while tracing "
            "(Python control flow such as `if`/`while`/`and`/`or` on array values cannot be "
            "compiled). Use np.where(cond, a, b) for a data-dependent choice, or pass the argument "
            "through static_argnames if it is a compile-time constant." + hint, what, where)

    def _value(self, what: str):
        """The concrete value in a segmented run (the pending ops run first), else the break."""
        run = _SEGMENTS.get()
        if run is None:
            self._control_flow(what)
        return run.value(self, what)

    def __bool__(self):
        if _SEGMENTS.get() is None:     # `if n > 0:` on a Python int argument: specialise on it
            specialise(self, "in bool() (Python control flow)")
        return bool(self._value("bool()"))

    def __int__(self):
        if _SEGMENTS.get() is None:
            specialise(self, "in int()")
        return int(self._value("int()"))

    def __float__(self):
        if _SEGMENTS.get() is None:
            specialise(self, "in float()")
        return float(self._value("float()"))

    def __complex__(self):
        return complex(self._value("complex()"))

    def __index__(self):
        if self.dtype.kind in "iu" and _SEGMENTS.get() is None:
            specialise(self, "as an index or size")
        return self._value("use as an index/int (__index__)").__index__()

    def __array__(self, dtype=None, copy=None):
        run = _SEGMENTS.get()
        if run is not None:
            return np.asarray(run.host_value(self, "np.asarray()"), dtype=dtype)
        specialise(self, "as a NumPy value (np.arange(n), np.full(shape, n))")
        self._control_flow("np.asarray()/conversion to a NumPy array", hint=(
            " An assignment into a NumPy array (a[...] = x, with a from np.zeros/np.empty) "
            "converts x too: make that array a traced one instead (np.zeros_like(x, shape=...), "
            "np.full_like(x, value, shape=...))."))

    def item(self, *args):
        return self._value(".item()").item(*args)

    def tolist(self):
        return self._value(".tolist()").tolist()


class SizeArgument(KfuseError):
    """A value computed from Python int arguments alone (``names``) was needed as a concrete int
    (a slice bound, a shape, ``range(n)``): ``kfuse.api`` traces again with those arguments
    specialised on their values, as ``torch.compile`` does; an int used only in arithmetic stays
    a run-time scalar (one compile for every value). Not a TypeError, so that NumPy's shape
    converters (``np.zeros(n)``) pass it on instead of raising their own TypeError."""

    def __init__(self, message: str, names: frozenset):
        super().__init__(message)
        self.names = names


def specialise(t: "Tracer", use: str) -> None:
    """Raise :class:`SizeArgument` when ``t`` is computed from Python int arguments alone."""
    leaves = [n for n in toposort((t.node,)) if not n.inputs]
    args = [n for n in leaves if n.op is Op.INPUT]
    if args and all(n.attr("weak") == "int" for n in args) and all(
            n.op in (Op.INPUT, Op.CONST) for n in leaves):
        names = frozenset(n.attr("name") for n in args)
        raise SizeArgument(f"kfuse: the int argument(s) {', '.join(sorted(names))} used {use}{at(loc())} "
                           "need a value when tracing: pass ints (not specs), or list them in "
                           "static_argnames", names)


def numpy_scalar(t) -> bool:
    """Whether eager NumPy holds this value as a NumPy scalar rather than an ndarray: a 0-d result
    of a reduction or a ufunc is a scalar there, and so is a NumPy scalar argument; an array
    argument, a constant and what a reshape, broadcast or slice gives stay arrays (a cast keeps
    what its input is)."""
    return not t.ndim and numpy_scalar_node(t.node)


def numpy_scalar_node(n: Node) -> bool:
    """:func:`numpy_scalar` of the value node ``n`` computes, given that it is 0-d."""
    while n.op is Op.CAST:
        n = n.inputs[0]
    if n.op is Op.INPUT:
        return bool(n.attr("numpy_scalar"))
    return n.op is Op.GATHER or n.op not in MOVEMENT and n.op is not Op.CONST


@record
class Operand:
    """A normalised argument of an op: a node (from a tracer) or a constant scalar."""

    node: Node | None
    value: Any            # constant's Python value (None for nodes)
    dtype: np.dtype       # the node's / constant's dtype (weak Python scalars: default dtype)
    weak: type | None     # bool/int/float for weak (Python) scalars, else None

    @property
    def key(self):
        """What ``np.<ufunc>.resolve_dtypes`` takes: the dtype, or the Python type if weak."""
        if self.weak is None or self.weak is bool:   # Python bool behaves as np.bool_
            return self.dtype
        return self.weak

    @property
    def shape(self) -> tuple[int, ...]:
        return self.node.shape if self.node is not None else ()

    @property
    def is_const(self) -> bool:
        return self.node is None


_DEFAULT = {bool: np.dtype(np.bool_), int: np.dtype(np.int64), float: np.dtype(np.float64),
            complex: np.dtype(np.complex128)}


def operand(x: Any, what: str = "operand") -> Operand:
    """Normalise a tracer / Python scalar / NumPy scalar / 0-d array, or raise UnsupportedError."""
    if isinstance(x, Tracer):
        return Operand(x.node, None, x.node.dtype, x.weak)
    if isinstance(x, PYTYPES) and not isinstance(x, np.generic):
        t = bool if isinstance(x, bool) else int if isinstance(x, int) else \
            float if isinstance(x, float) else complex
        return Operand(None, t(x), _DEFAULT[t], t)
    if isinstance(x, (np.generic, np.ndarray)):
        if x.dtype not in SUPPORTED:
            raise unsupported(f"dtype {x.dtype} (a constant used as {what})",
                              "supported: bool, int8-int64, uint8-uint64, float16/32/64, bfloat16, "
                              "complex64/128")
        if np.ndim(x) != 0:
            if _uniform(x):          # np.zeros/ones/full: a broadcast scalar, nothing to read
                value = x.flat[0].item() if x.size else 0
                return Operand(broadcast(const_node(value, x.dtype), x.shape), None, x.dtype, None)
            consts = _CONSTANTS.get()
            if consts is None:
                raise unsupported(f"a NumPy array constant of shape {np.shape(x)} (used as {what})",
                                  "pass the array as an argument")
            return Operand(consts.node_for(x), None, x.dtype, None)
        return Operand(None, np.asarray(x).item(), x.dtype, None)
    if isinstance(x, (list, tuple)):          # an array-like: NumPy converts it with np.asarray
        if _holds_tracer(x):
            raise unsupported(f"a {type(x).__name__} holding traced values (used as {what})",
                              "build the array with np.stack or np.array of it first")
        try:
            arr = np.asarray(x)
        except ValueError as e:                 # NumPy's own, for a ragged list
            e.add_note(f"kfuse: a {type(x).__name__} used as {what}{at(loc())}")
            raise
        if arr.dtype == object:
            raise unsupported(f"a {type(x).__name__} NumPy makes an object array of (used as {what})")
        return operand(arr, what)
    raise unsupported(f"a value of type {type(x).__name__} (used as {what})")


def _holds_tracer(x) -> bool:
    return any(isinstance(v, Tracer) or isinstance(v, (list, tuple)) and _holds_tracer(v) for v in x)


def _uniform(x: np.ndarray) -> bool:
    """Every element has the bits of the first (-0.0 is not 0.0; one NaN payload)."""
    if x.size == 0:
        return True
    bits = np.ascontiguousarray(x).view(np.dtype(f"u{x.dtype.itemsize}")) if x.dtype.itemsize in (1, 2, 4, 8) else None
    return bits is not None and bool(np.all(bits == bits.flat[0]))


def const_value(op: Operand, dtype: np.dtype, casting: str = "weak") -> Any:
    """The constant converted to ``dtype`` as NumPy would: a weak Python int that does not fit
    an integer dtype raises OverflowError (``casting="weak"``), else the cast is unsafe."""
    dtype = np.dtype(dtype)
    with np.errstate(all="ignore"):
        if op.weak is not None and casting == "weak":
            return np.array(op.value, dtype=dtype).item()
        src = np.array(op.value, dtype=op.dtype)
        return src.astype(dtype).item()


def const_node(value: Any, dtype) -> Node:
    dtype = np.dtype(dtype)
    with np.errstate(all="ignore"):
        value = np.array(value).astype(dtype).item()
    return mk(Op.CONST, dtype, (), attrs={"value": value})


def cast(node: Node, dtype) -> Node:
    dtype = np.dtype(dtype)
    if node.dtype == dtype:
        return node
    if node.op is Op.CONST:
        return const_node(node.attr("value"), dtype)
    return mk(Op.CAST, dtype, node.shape, [node])


def broadcast(node: Node, shape) -> Node:
    shape = tuple(shape)
    if node.shape == shape:
        return node
    return mk(Op.BROADCAST, node.dtype, shape, [node])


def materialize(op: Operand, dtype, shape, casting: str = "weak") -> Node:
    """The operand as a node of exactly ``dtype`` and ``shape`` (explicit CAST and BROADCAST)."""
    if op.node is None:
        node = mk(Op.CONST, np.dtype(dtype), (), attrs={"value": const_value(op, dtype, casting)})
    else:
        node = cast(op.node, dtype)
    return broadcast(node, shape)


def shape_text(shape) -> str:
    """A shape as NumPy's broadcasting and casting messages print it: ``(2,3)``, ``(7,)``."""
    return "(" + ",".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """np.broadcast_shapes, with NumPy's operand message naming every shape on failure."""
    if shapes and all(s == shapes[0] for s in shapes):
        return tuple(shapes[0])
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        text = " ".join(shape_text(sh) for sh in shapes)
        raise ValueError(f"operands could not be broadcast together with shapes {text} "
                         f"{at(loc()).strip()}") from None


def as_node(x: Any, what: str = "operand") -> Node:
    """A node for a tracer or constant (constants keep their own/default dtype)."""
    o = operand(x, what)
    return o.node if o.node is not None else materialize(o, o.dtype, ())
