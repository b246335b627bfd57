"""The IR: a frozen, hash-consed :class:`Node` and the :class:`Graph` of a traced function.

Nodes are interned: building a node equal to a live one returns that object, so equal subgraphs
are one object, ``==`` is identity and common-subexpression elimination is free (tinygrad's UOp
habit). The intern table holds nodes weakly; it is the only module-level state of the IR.
Equality of attrs uses ``repr`` so that ``-0.0``/``0.0`` and NaN constants stay distinct.
:meth:`Graph.as_text` (:func:`format_graph`) is the text form, one line per node.
"""
from __future__ import annotations

import dataclasses
import math
import weakref
from _weakref import _remove_dead_weakref
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from .dtypes import short_name
from .ops import Op

Shape = tuple[int, ...]

# key -> a weak reference to the live node (a plain dict: WeakValueDictionary's Python-level
# get and set cost more than the rest of making a node, and tracing makes every node anew)
_INTERN: "dict[tuple, weakref.ref]" = {}


class _Ref(weakref.ref):
    """A weak reference to an interned node that knows its key."""
    __slots__ = ("key",)


def _forget(ref: _Ref) -> None:
    """Drop a dead node's entry (unless a live node took the key since: ``_remove_dead_weakref``,
    WeakValueDictionary's own, removes a dead reference only)."""
    _remove_dead_weakref(_INTERN, ref.key)


class Node:
    """One value of the program: ``op`` applied to ``inputs`` giving ``dtype[shape]``.

    ``attrs`` is a tuple of ``(name, value)`` pairs sorted by name (read with :meth:`attr`).
    ``loc`` is the user's ``file.py:line`` that created it (not part of identity).
    """

    __slots__ = ("op", "dtype", "shape", "inputs", "attrs", "loc", "_key", "__weakref__")

    op: Op
    dtype: np.dtype
    shape: Shape
    inputs: tuple["Node", ...]
    attrs: tuple[tuple[str, Any], ...]
    loc: str | None

    def __new__(cls, op: Op, dtype, shape: Iterable[int], inputs: Iterable["Node"] = (),
                attrs: dict | tuple = (), loc: str | None = None) -> "Node":
        dtype = np.dtype(dtype)
        shape = tuple(map(int, shape))
        inputs = tuple(inputs)
        if attrs:
            items = attrs.items() if isinstance(attrs, dict) else attrs
            attrs = tuple(sorted((str(k), _freeze(v)) for k, v in items))
        else:
            attrs = ()
        key = (op, dtype.str, shape, tuple(map(id, inputs)), repr(attrs))
        return cls._interned(key, op, dtype, shape, inputs, attrs, loc)

    @classmethod
    def normal(cls, op: Op, dtype: np.dtype, dstr: str, shape: Shape, inputs: tuple, attrs: tuple,
               arepr: str, loc: str | None) -> "Node":
        """``Node(op, dtype, shape, inputs, attrs, loc)`` for arguments already in a node's normal
        form (``dtype`` an ``np.dtype``, ``dstr`` its ``str``, ``shape`` a tuple of ints,
        ``inputs`` a tuple, ``attrs`` sorted and frozen, ``arepr`` its ``repr``): a node rebuilt
        from one seen before (``ir.size_forms``). Why: normalising the arguments again was about
        half of a size-generic build's 24-node graph (~60 us)."""
        key = (op, dstr, shape, tuple([id(i) for i in inputs]), arepr)
        return cls._interned(key, op, dtype, shape, inputs, attrs, loc)

    @classmethod
    def _interned(cls, key: tuple, op, dtype, shape, inputs, attrs, loc) -> "Node":
        """The live node of ``key``, or a new one of these fields, interned under it."""
        ref = _INTERN.get(key)
        if ref is not None:
            found = ref()
            if found is not None:
                return found
        self = object.__new__(cls)
        put = object.__setattr__
        put(self, "op", op)
        put(self, "dtype", dtype)
        put(self, "shape", shape)
        put(self, "inputs", inputs)
        put(self, "attrs", attrs)
        put(self, "loc", loc)
        put(self, "_key", key)
        ref = _INTERN[key] = _Ref(self, _forget)
        ref.key = key
        return self

    def __setattr__(self, name, value):
        raise dataclasses.FrozenInstanceError(f"Node is immutable (tried to set {name})")

    def __reduce__(self):
        raise TypeError("kfuse IR nodes are not picklable")

    __hash__ = object.__hash__  # interned: identity is structural equality

    def __eq__(self, other) -> bool:
        return self is other

    def attr(self, name: str, default: Any = None) -> Any:
        for k, v in self.attrs:
            if k == name:
                return v
        return default

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def replace(self, **changes) -> "Node":
        """A node like this one with some fields changed (interned like any other)."""
        fields = dict(op=self.op, dtype=self.dtype, shape=self.shape, inputs=self.inputs,
                      attrs=self.attrs, loc=self.loc)
        fields.update(changes)
        return Node(**fields)

    def __repr__(self) -> str:
        return f"<{self.op.value} {short_name(self.dtype)}{list(self.shape)}>"


def _freeze(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, np.dtype):
        return v.str
    if isinstance(v, np.generic):
        return v.item()
    return v


def toposort(outputs: Iterable[Node]) -> list[Node]:
    """Every node reachable from ``outputs``, each after its inputs (iterative, deterministic)."""
    order: list[Node] = []
    seen: set[int] = set()
    for root in outputs:
        if id(root) in seen:
            continue
        stack: list[tuple[Node, int]] = [(root, 0)]
        while stack:
            node, i = stack.pop()
            if i < len(node.inputs):
                stack.append((node, i + 1))
                child = node.inputs[i]
                if id(child) not in seen:
                    stack.append((child, 0))
            elif id(node) not in seen:
                seen.add(id(node))
                order.append(node)
    return order


# the exceptions a run-time check (``Graph.checks``) raises, by name
CHECK_ERRORS = {"IndexError": IndexError, "ValueError": ValueError}

# The user's return structure: an int leaf indexes ``Graph.outputs``; ("arg", (k, o)) is the
# caller's array of input k itself, an argument the function wrote into and returned (NumPy returns
# the same object), whose final value is output o (written back into it); containers are
# ("tuple", items), ("list", items) or ("dict", ((key, item), ...)); ("none", ()) is None (a function
# that only writes); ("copy", o) is output o, an argument's value returned as a new array (``x.copy()``),
# copied by the call before any argument is written (:func:`copied_outputs`); ("value", (type name,
# text)) is a Python bool, int or float the function returned as it is (``x.shape[0]``), kept as
# text so that the tree stays JSON (a cache key) with infinities and NaN too (:func:`python_leaf`);
# ("python", (o, type name)) is output o as a Python bool, int or float (a Python number argument
# returned, or Python arithmetic on one: NumPy gives the Python number).
OutTree = Any
_PYTHON_TYPES = {"bool": lambda s: s == "True", "int": int, "float": float}
_PYTHON_NUMBER = {"bool": bool, "int": int, "float": float}


def python_leaf(value) -> tuple:
    """The ("value", ...) leaf of a Python bool, int or float."""
    return ("value", (type(value).__name__, repr(value)))


def python_number(name: str, value):
    """A ("python", ...) leaf's value: a host (NumPy) result as the Python number NumPy gives; a
    device array (CuPy, torch) stays as it is, as CuPy's own functions return 0-d arrays (and a
    conversion would wait for the device)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return _PYTHON_NUMBER[name](value)
    return value


def _python_value(items):
    name, text = items
    return _PYTHON_TYPES[name](text)


def copied_outputs(out_tree: OutTree) -> frozenset:
    """The outputs of ("copy", o) leaves."""
    if isinstance(out_tree, int):
        return frozenset()
    kind, items = out_tree
    if kind == "copy":
        return frozenset({items})
    if kind in ("tuple", "list"):
        return frozenset().union(*(copied_outputs(t) for t in items))
    if kind == "dict":
        return frozenset().union(*(copied_outputs(t) for _, t in items))
    return frozenset()


@dataclasses.dataclass(frozen=True, eq=False)
class Graph:
    """A traced function: its array inputs, its outputs, and how to rebuild the return value."""

    name: str
    inputs: tuple[Node, ...]
    outputs: tuple[Node, ...]
    out_tree: OutTree = 0
    # the values of the last len(constants) inputs: array constants of the traced function
    constants: tuple = dataclasses.field(default=(), repr=False)
    # (input index, output index): an argument the function wrote into, and the output holding its
    # final value, which the call copies into the caller's array (after the user's outputs)
    writebacks: tuple[tuple[int, int], ...] = ()
    # (output index, message, error): a bool scalar output that is True when the call must raise
    # error(message) instead of returning (CHECK_ERRORS: an index out of range, IndexError; the max
    # of an empty selection, ValueError), after the writebacks
    checks: tuple[tuple[int, str, str], ...] = ()
    # (node, message, error): a check reading only arguments passed as host scalars (``x[i]`` of a
    # Python int i), evaluated on the host before any kernel runs; not an output
    host_checks: tuple[tuple[Node, str, str], ...] = ()
    # nodes() once computed (the graph is immutable; passes and the shape-class check ask often)
    _order: tuple | None = dataclasses.field(default=None, init=False, repr=False, compare=False)
    _ops: frozenset | None = dataclasses.field(default=None, init=False, repr=False, compare=False)

    def nodes(self) -> list[Node]:
        """All nodes in topological order (inputs first, in argument order)."""
        order = self._order
        if order is None:
            order = tuple(toposort(tuple(self.inputs) + tuple(self.outputs)))
            object.__setattr__(self, "_order", order)
        return list(order)

    def ops(self) -> frozenset:
        """The ops of its nodes."""
        ops = self._ops
        if ops is None:
            ops = frozenset(n.op for n in self.nodes())
            object.__setattr__(self, "_ops", ops)
        return ops

    def users(self) -> dict[Node, list[Node]]:
        out: dict[Node, list[Node]] = {n: [] for n in self.nodes()}
        for n in out:
            for i in n.inputs:
                if n not in out[i]:
                    out[i].append(n)
        return out

    def raise_failed_checks(self, failed: Callable[[int], bool]) -> None:
        """Raise the error of the first check whose output ``failed(output index)``."""
        for k, message, error in self.checks:
            if failed(k):
                raise CHECK_ERRORS[error](message)

    def raise_failed_host_checks(self, values: list) -> None:
        """Raise the error of the first host check whose value (``values``, in order) is True."""
        for (_, message, error), v in zip(self.host_checks, values):
            if bool(v):
                raise CHECK_ERRORS[error](message)

    def without_checks(self) -> "Graph":
        """This graph with its run-time checks dropped (they are its last outputs): a gather then
        reads an index out of range at the nearest end, as ``jax.jit`` does, an empty selection's
        max gives the identity, and no call waits for a flag (``KFUSE_INDEX_CHECKS=0``)."""
        if not self.checks:
            return dataclasses.replace(self, host_checks=())
        return dataclasses.replace(self, outputs=self.outputs[:-len(self.checks)], checks=(), host_checks=())

    def with_host_checks_on_device(self) -> "Graph":
        """This graph with its host checks computed by the kernels as its other checks are (the
        CPU backend: no read-back to save there, and a check in a kernel costs less than
        evaluating it on the host each call); checks stay the last outputs."""
        if not self.host_checks:
            return self
        n = len(self.outputs)
        moved = tuple((n + k, message, error) for k, (_, message, error) in enumerate(self.host_checks))
        return dataclasses.replace(self, outputs=self.outputs + tuple(c for c, *_ in self.host_checks),
                                   checks=self.checks + moved, host_checks=())

    def with_outputs(self, outputs: Iterable[Node]) -> "Graph":
        return dataclasses.replace(self, outputs=tuple(outputs))

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes())

    def as_text(self) -> str:
        return format_graph(self)

    __str__ = as_text


# the text form: one line per node, ``%id = op inputs {attrs} : dtype[shape]``

def format_node(node: Node, names: dict[Node, str]) -> str:
    args = ", ".join(names[i] for i in node.inputs)
    attrs = ", ".join(f"{k}={v!r}" for k, v in node.attrs if k != "name")
    if node.op is Op.INPUT:
        head = f"input {node.attr('name')!s}"
    else:
        head = node.op.value + (" " + args if args else "")
    if attrs:
        head += " {" + attrs + "}"
    return f"{names[node]} = {head} : {short_name(node.dtype)}[{','.join(map(str, node.shape))}]"


def format_graph(graph: Graph) -> str:
    nodes = toposort(tuple(graph.inputs) + tuple(graph.outputs) + tuple(n for n, *_ in graph.host_checks))
    names = {n: f"%{i}" for i, n in enumerate(nodes)}
    lines = [f"graph {graph.name}:"]
    lines += ["  " + format_node(n, names) for n in nodes]
    lines.append("  return " + ", ".join(names[o] for o in graph.outputs))
    lines += [f"  write back {names[graph.outputs[o]]} into {names[graph.inputs[i]]}"
              for i, o in graph.writebacks]
    lines += [f"  check {names[graph.outputs[o]]}: {error} {msg!r}" for o, msg, error in graph.checks]
    lines += [f"  host check {names[n]}: {error} {msg!r}" for n, msg, error in graph.host_checks]
    return "\n".join(lines)


def unflatten(out_tree: OutTree, values: list, argument: Callable[[int], Any] | None = None) -> Any:
    """Rebuild the user's return structure from the flat list of output values; ``argument(k)`` is
    the caller's array of input k (an ("arg", (k, o)) leaf; without it, output o's value)."""
    if isinstance(out_tree, int):
        return values[out_tree]
    kind, items = out_tree
    if kind == "arg":
        return argument(items[0]) if argument is not None else values[items[1]]
    if kind == "none":
        return None
    if kind == "value":
        return _python_value(items)
    if kind == "python":
        return python_number(items[1], values[items[0]])
    if kind == "copy":
        return values[items]
    if kind == "tuple":
        return tuple(unflatten(t, values, argument) for t in items)
    if kind == "list":
        return [unflatten(t, values, argument) for t in items]
    if kind == "dict":
        return {k: unflatten(t, values, argument) for k, t in items}
    raise ValueError(f"bad output tree {out_tree!r}")


def unflatten_source(out_tree: OutTree, results: list[str], argument: Callable[[int], str], ns: dict) -> str | None:
    """:func:`unflatten` over source text, for the generated hot paths: the expression of the
    user's return structure given each output's expression (``results``) and, for an ("arg",
    (k, o)) leaf, ``argument(k)``; a dict's keys go into ``ns["KEYS"]``. None for a leaf a hot
    path does not build (a copy)."""
    keys = ns.setdefault("KEYS", [])

    def expr(tree) -> str | None:
        if isinstance(tree, int):
            return results[tree]
        kind, items = tree
        if kind == "arg":
            return argument(items[0])
        if kind == "none":
            return "None"
        if kind == "value":
            values = ns.setdefault("VALUES", [])
            values.append(_python_value(items))
            return f"VALUES[{len(values) - 1}]"
        if kind == "python":
            ns["python_number"] = python_number
            return f"python_number({items[1]!r}, {results[items[0]]})"
        if kind not in ("tuple", "list", "dict"):
            return None
        parts = [expr(t) for t in ([t for _, t in items] if kind == "dict" else items)]
        if any(p is None for p in parts):
            return None
        if kind == "tuple":
            return f"({', '.join(parts)},)" if parts else "()"
        if kind == "list":
            return f"[{', '.join(parts)}]"
        start = len(keys)
        keys.extend(key for key, _ in items)
        return "{" + ", ".join(f"KEYS[{start + j}]: {p}" for j, p in enumerate(parts)) + "}"
    return expr(out_tree)
