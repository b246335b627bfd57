"""One call of a function in segments: the tracer's :class:`~kfuse.trace.core.Segments` protocol
over concrete arrays.

The function runs on tracers as in a whole-function trace, its ops recorded into pending nodes.
Where Python needs a value (``bool()``, ``.item()``, an unsupported or library function), the
pending nodes that value needs are one *segment*: a graph planned and compiled once (memoised by
its nodes, which are interned, so the key is built as the ops are recorded) and run; the value
becomes a new INPUT node of the run (``fresh``: an array of kfuse's own, bound by its index) and
the tracer that held it is rebound to it, so later segments read it instead of recomputing it.
An eager call gets concrete arrays of the arguments' module (NumPy, CuPy; torch tensors as CuPy
or NumPy views) and its array results come back as tracers of new INPUT nodes. When the function
returns, the last segment is the graph of its result, with the write-backs into arguments: no
argument is written before the function returns (an error in any segment writes nothing).

``values is None`` is an *abstract* run (``explain`` with argument specs): segments are planned
and not run, a library call with a known result shape (``library.result_spec``) gives a tracer of
that shape, and anything that needs a value ends the run (:class:`Stop`).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..ir.dtypes import SUPPORTED
from ..ir.graph import Node
from ..ir.ops import Op
from ..ir.specs import ArraySpec, spec_of_value
from ..runtime.interop import copy_array
from ..runtime.library import call
from ..trace.core import IndexChecks, Segments, Tracer, loc, unsupported
from ..trace.writes import store
from . import library
from .tape import Source, Tape, put_numbers, take_numbers


@dataclasses.dataclass(frozen=True)
class Break:
    """A graph break met by a run: what (``bool()``, ``np.sort``), where, and the library called."""
    what: str
    location: str | None
    library: str | None = None
    kind: str = "eager"         # "eager": a call run eagerly; "value": Python reads the value

    def describe(self) -> str:
        where = f" at {self.location}" if self.location else ""
        if self.kind == "value":
            return f"graph break: {self.what}{where} - Python needs the value: the kernels before it run"
        how = f"library call ({self.library})" if self.library else "not supported by kfuse"
        return f"graph break: {self.what}{where} - {how}; runs eagerly"


class Stop(Exception):
    """An abstract run needs a value it does not have (the break that stops it)."""

    def __init__(self, brk: Break):
        super().__init__(brk.describe())
        self.brk = brk


class Session(Segments):
    """The state of one segmented call (see the module docstring). ``owner`` is the
    ``entry.SegmentedEntry`` (memo, compiler, break log); ``values`` the concrete values of the
    call's INPUT nodes, arguments first, or None for an abstract run; ``transcript`` (explain)
    collects ("segment", plan) and ("break", Break) in order when not None."""

    def __init__(self, owner, call, values: list | None, specs: list, transcript: list | None = None,
                 tape: Tape | None = None):
        self.owner = owner
        self.call = call
        self.nodes: list[Node] = list(call.inputs)     # INPUT nodes by index: arguments, then bound values
        self.values = values
        self.specs = list(specs)
        self.checks = IndexChecks()
        self.transcript = transcript
        self.tape = tape                # records the call's steps (``tape``), or None
        self.segments = 0

    # ---- the Segments protocol ------------------------------------------------------------
    def value(self, t: Tracer, what: str):
        if self.tape is not None:
            self.tape.spoil()           # Python saw a value: the next call may go another way
        v = self._materialise([t])[0][0]
        brk = Break(what, loc(), kind="value")
        self._record(brk)
        if self.values is None:
            raise Stop(brk)
        return np.asarray(v) if isinstance(v, (bool, int, float)) else v

    def host_value(self, t: Tracer, what: str) -> np.ndarray:
        return library.to_host(self.value(t, what))

    def eager(self, func, args, kwargs, what: str, lib: str | None = None):
        tracers = list(_tracers(args)) + list(_tracers(kwargs))
        if self.tape is not None and lib is None:
            self.tape.spoil()           # an unknown function: what it does may depend on values
        got = self._materialise(tracers, private=lib is None)
        brk = Break(what, loc(), lib)
        self._record(brk)
        if self.values is None:
            spec = library.result_spec(func, args, kwargs)
            if spec is None:
                raise Stop(brk)
            return Tracer(self._bind(None, spec))
        arrays = {id(t): library.for_eager(v) for t, (v, _) in zip(tracers, got)}
        step = None
        if self.tape is not None:
            sources = {id(t): Source(src) for t, (_, src) in zip(tracers, got)}
            step = self.tape.library(func, _replace(args, sources), _replace(kwargs, sources))
        views = [(t, v) for t, (v, _) in zip(tracers, got)      # (a broadcast is read-only in NumPy)
                 if lib is None and t.base is not None and library.writeable(v)
                 and not any(m.op is Op.BROADCAST for m in t.chain)]
        before = [None if t.exact else copy_array(v) for t, v in views]
        try:
            result = call(func, _replace(args, arrays), _replace(kwargs, arrays))
        except TypeError as e:      # the device's array library has no such function (CuPy's ufunc.at)
            if "returned NotImplemented from __array_" not in str(e):
                raise
            lib_name = next((type(a).__module__.split(".")[0] for a in arrays.values()), "the array library")
            raise unsupported(f"{what} on {lib_name} arrays at a graph break",
                              f"{lib_name} does not implement it") from None
        for (t, v), old in zip(views, before):
            self._write_through(t, v, old, what)
        return self._wrap(result, step, ())

    def _write_through(self, t: Tracer, v, old, what: str) -> None:
        """An unknown function got view ``t``'s value ``v`` and may have written into it: the
        values go to its base through the view, as NumPy's write would (``np.add.at(x[::2], ...)``
        run eagerly). Through a reshape (``old``: its value before the call) NumPy writes the base
        or a copy depending on memory layout: refused if the function wrote."""
        if old is not None:
            if library.same(old, v):
                return
            raise unsupported(f"{what} writing into a reshape of an array", "NumPy writes the "
                              "original array or a copy depending on memory layout; reshape a copy")
        store(t, self._bind(v, ArraySpec(t.dtype, t.shape)))

    def node_for(self, x: np.ndarray) -> Node:
        """An array constant of the function (``np.arange(n)``...): a copy, bound as an input."""
        if self.tape is not None:
            self.tape.spoil()           # (its value is the caller's, read each call)
        return self._bind(np.array(x, copy=True, order="C"), spec_of_value(x), "const")

    # ---- segments -------------------------------------------------------------------------
    def finish(self, result: Any):
        """The function returned ``result``: run its graph (the last segment) and return its value.
        A Python number in it (``int(x.argmax())``, a value Python read) comes back as it is."""
        numbers: list = []
        marked = take_numbers(result, numbers)
        graph = self.call.graph(take_numbers(result, [], None) if numbers else result,
                                self.owner.name, _Extra(self.nodes, len(self.call.inputs)), (),
                                self._take_checks())     # (returned NumPy arrays bind inputs as it runs)
        key = ("return", graph.inputs, graph.outputs, graph.out_tree, graph.writebacks, graph.checks,
               graph.host_checks)
        entry = self._entry(key, lambda: graph)
        if entry is None:
            return None
        if self.tape is not None:
            self.tape.result(entry, marked, numbers)
        got = entry.run(self.values)
        return put_numbers(marked, got, iter(numbers)) if numbers else got

    def _materialise(self, tracers: list[Tracer], private: bool = False) -> list:
        """(value, source) of each of ``tracers`` (one segment computes those not bound yet; the
        source says where a tape finds the value: ``tape.Source``); each tracer that owns its data
        is rebound to its value's new INPUT node. ``private``: an unknown function gets them, which
        may write into them, so a writeable value already bound (an argument, an earlier value that
        pending ops read) is copied first: NumPy's order of writes and reads holds, and an argument
        is written (back) only when the function returns."""
        nodes = [t.node for t in tracers]
        todo = tuple(dict.fromkeys(n for n in nodes if not self._bound(n)))
        got = self._run(todo) if todo else {}
        out = []
        for t, n in zip(tracers, nodes):
            if n in got:
                v, src = got[n]
            else:
                src = ("in", n.attr("index"))
                v = None if self.values is None else self.values[src[1]]
            if private and src is not None and src[0] == "in" and library.writeable(v):
                v, src = copy_array(v), None
            if src is not None and src[0] == "in" or t.base is not None or t.weak is not None or t.node is not n:
                out.append((v, src))
                continue
            t._node = self._bind(v, ArraySpec(n.dtype, n.shape), source=src)
            out.append((v, ("in", t._node.attr("index"))))
        return out

    def _run(self, outputs: tuple[Node, ...]) -> dict:
        """Run the segment computing ``outputs`` from the bound inputs: node -> (value, source)."""
        checks = self._take_checks()
        self.segments += 1
        entry = self._entry((tuple(self.nodes), outputs, checks), lambda: self.call.graph(
            tuple(Tracer(n) for n in outputs), f"{self.owner.name}_{self.segments}",
            self.nodes[len(self.call.inputs):], (), checks, writebacks=False))
        if entry is None:
            return {n: (None, None) for n in outputs}
        step = self.tape.segment(entry) if self.tape is not None else None
        values = entry.run(self.values)
        return {n: (np.asarray(v) if isinstance(v, np.generic) else v, ("out", step, j))
                for j, (n, v) in enumerate(zip(outputs, values))}

    def _entry(self, key, make_graph):
        """The memoised program of a segment (compiled once); None in an abstract run, which plans
        the segment only. ``key`` holds the segment's nodes (interned: equal means identical)."""
        entry = self.owner.memo.get(key)
        if entry is None and self.values is None:
            plan = self.owner.compiler.plan(make_graph())
        else:
            if entry is None:
                entry = self.owner.compiler.entry(make_graph(), list(self.specs))
                self.owner.memo[key] = entry
            plan = entry.program.plan
        if self.transcript is not None:
            self.transcript.append(("segment", plan))
        return entry if self.values is not None else None

    def _record(self, brk: Break) -> None:
        self.owner.log_break(brk)
        if self.transcript is not None:
            self.transcript.append(("break", brk))

    def _take_checks(self) -> tuple:
        """The run-time checks made since the last segment: that segment raises them."""
        items = tuple(self.checks.items)
        self.checks.items.clear()
        return items

    def _bound(self, n: Node) -> bool:
        if n.op is not Op.INPUT:
            return False
        i = n.attr("index")
        return i < len(self.nodes) and self.nodes[i] is n

    def _bind(self, value, spec: ArraySpec, kind: str = "value", source: tuple | None = None) -> Node:
        """A new INPUT node of this run holding ``value`` (kfuse's own array: never copied back);
        ``source``: where a tape finds it (None: nowhere, the tape cannot replay)."""
        i = len(self.nodes)
        attrs = {"index": i, "name": f"{kind}{i}", "fresh": True}
        if spec.numpy_scalar:
            attrs["numpy_scalar"] = True
        node = Node(Op.INPUT, spec.dtype, spec.shape, (), attrs, loc=None)
        self.nodes.append(node)
        self.specs.append(spec)
        if self.values is not None:
            self.values.append(value)
        if self.tape is not None:
            self.tape.bind(source)
        return node

    def _wrap(self, result, step, path: tuple):
        """An eager call's result with each array of a dtype kfuse traces as a tracer (``step``,
        ``path``: where the tape finds it)."""
        if isinstance(result, (list, tuple)):
            items = [self._wrap(r, step, path + (i,)) for i, r in enumerate(result)]
            if isinstance(result, list):
                return items
            return type(result)._make(items) if hasattr(result, "_fields") else tuple(items)
        if library.is_array(result) and np.dtype(result.dtype) in SUPPORTED:
            spec = spec_of_value(result)
            value = np.asarray(result) if isinstance(result, np.generic) else result
            return Tracer(self._bind(value, spec, source=None if step is None else ("res", step, path)))
        if self.tape is not None:
            self.tape.spoil()       # a Python value (a list, a complex array) Python may look at
        return result


class _Extra:
    """The INPUT nodes after the arguments', read when the graph is made (after its outputs)."""

    def __init__(self, nodes: list, start: int):
        self.nodes, self.start = nodes, start

    def __iter__(self):
        return iter(self.nodes[self.start:])


def _tracers(tree):
    """The tracers in nested lists, tuples and dicts of arguments."""
    if isinstance(tree, Tracer):
        yield tree
    elif isinstance(tree, (list, tuple)):
        for v in tree:
            yield from _tracers(v)
    elif isinstance(tree, dict):
        for v in tree.values():
            yield from _tracers(v)


def _replace(tree, arrays: dict):
    """``tree`` with each tracer replaced by its concrete array (``arrays``: by tracer id)."""
    if isinstance(tree, Tracer):
        return arrays[id(tree)]
    if isinstance(tree, list):
        return [_replace(v, arrays) for v in tree]
    if isinstance(tree, tuple):
        items = [_replace(v, arrays) for v in tree]
        return type(tree)._make(items) if hasattr(tree, "_fields") else tuple(items)
    if isinstance(tree, dict):
        return {k: _replace(v, arrays) for k, v in tree.items()}
    return tree
