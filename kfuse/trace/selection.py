"""Boolean-mask selections: ``x[mask]`` while tracing.

NumPy's ``x[mask]`` has ``mask.sum()`` rows, a length known only at run time, so kfuse cannot
make it an array. What code does with one is usually static, and that is what a
:class:`Selection` supports: it holds ``x`` at full shape and the mask, and

* elementwise ops (operators, ufuncs, ``np.where``/``np.clip``/``np.round``, ``astype``) with
  scalars, with arrays shaped like the rows' trailing dims and with selections under the same
  mask run on the full shape and stay selections;
* reductions over the selected rows (``x[m].sum()``, ``.mean(axis=0)``, ``np.max(x[m])``...)
  become masked reductions (``where=``); an empty selection's ``max``/``min`` raises NumPy's
  ValueError after the call (a run-time check, ``Graph.checks``; with ``KFUSE_INDEX_CHECKS=0`` it
  gives the identity, -inf or the integer minimum, and no flag is read back);
* ``y[mask] = selection`` and ``x[mask] += 1`` write back through the same mask.

Anything needing the length (returning it, ``len``, ``.shape``, indexing, concatenating it)
raises UnsupportedError naming the line.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from ..errors import UnsupportedError, at
from ..ir.graph import Node
from . import elementwise as ew
from . import movement as mv
from . import reductions as rd
from .core import (GraphBreak, Tracer, add_check, as_break, broadcast, cast, loc, operand, segments,
                   unsupported)
from .writes import check_same_kind

_WHY = ("its length (the mask's count) is known only at run time; kfuse supports elementwise "
        "ops on it, reductions of it and assigning it back under the same mask")


class Selection:
    """``x[mask]`` at full shape: ``values`` (mask.shape + the rows' trailing shape), ``mask``."""

    __array_priority__ = 2000.0          # above Tracer: mixed operators come here
    __hash__ = None

    def __init__(self, values: Node, mask: Node):
        self.values, self.mask = values, mask
        self.loc = loc()                    # where x[mask] was written, for errors raised later
        self._array = None                  # ((values, mask), its eager selection) in a segmented run

    # -- what is static
    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def trailing(self) -> tuple[int, ...]:
        return self.values.shape[self.mask.ndim:]

    @property
    def ndim(self) -> int:
        return 1 + len(self.trailing)

    def _dynamic(self, what: str):
        """``x[mask]`` used as an array of its own (``what``: its shape, indexing...): in a segmented
        run the eager selection, whose shape is data-dependent (a graph break); else the break."""
        run = segments()
        if run is None:
            made = f" made at {self.loc}" if self.loc else ""
            raise as_break(unsupported(f"{what} of a boolean-indexed array (x[mask]){made}", _WHY), "x[mask]")
        if self._array is None or self._array[0] != (self.values, self.mask):
            arr = run.eager(_select, (Tracer(self.values), Tracer(self.mask)), {}, "x[mask] (data-dependent shape)")
            self._array = ((self.values, self.mask), arr)
        return self._array[1]

    shape = property(lambda self: self._dynamic("the shape").shape)
    size = property(lambda self: self._dynamic("the size").size)

    def __len__(self):
        return len(self._dynamic("len()"))

    def __getitem__(self, key):
        return self._dynamic("indexing")[key]

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._dynamic("conversion to a NumPy array"), dtype=dtype)

    def __iter__(self):
        return iter(self._dynamic("iteration"))

    def _or_concrete(self, error: UnsupportedError, what: str, call, args, kwargs):
        """What the traced path refused: in a segmented run ``call`` on the eager selections."""
        if segments() is None:
            raise as_break(error, what)
        conv = [x._dynamic(what) if isinstance(x, Selection) else x for x in args]
        return call(*conv, **kwargs)

    # -- elementwise
    def full_mask(self) -> Node:
        return spread_mask(self.mask, self.values.shape)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        try:
            return self._traced_ufunc(ufunc, method, *inputs, **kwargs)
        except GraphBreak:
            raise
        except UnsupportedError as e:
            call = ufunc if method == "__call__" else getattr(ufunc, method)
            return self._or_concrete(e, f"np.{ufunc.__name__} of x[mask]", call, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        try:
            return self._traced_function(func, args, kwargs)
        except GraphBreak:
            raise
        except UnsupportedError as e:
            return self._or_concrete(e, f"np.{getattr(func, '__name__', '?')} of x[mask]", func, args, kwargs)

    def _traced_ufunc(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__":
            raise unsupported(f"np.{ufunc.__name__}.{method} of a boolean-indexed array", _WHY)
        return _elementwise(lambda *args: ufunc(*args, **kwargs), inputs, ufunc.__name__)

    def _traced_function(self, func, args, kwargs):
        name = getattr(func, "__name__", "?")
        if func in REDUCTIONS:
            a, *rest = args
            if not isinstance(a, Selection):
                raise unsupported(f"np.{name} with a boolean-indexed array as a later argument", _WHY)
            return a._reduce(name, REDUCTIONS[func], *rest, **kwargs)
        if func in ELEMENTWISE_FUNCTIONS:
            return _elementwise(lambda *a: func(*a, **kwargs), args, name)
        raise unsupported(f"np.{name} of a boolean-indexed array (x[mask])", _WHY)

    def astype(self, dtype, *args, **kwargs):
        return Selection(ew.astype(Tracer(self.values), dtype, *args, **kwargs).node, self.mask)

    # -- reductions over the selected rows
    def _reduce(self, fname: str, fn, *args, **kwargs):
        try:
            return self._traced_reduce(fname, fn, *args, **kwargs)
        except GraphBreak:
            raise
        except UnsupportedError as e:
            return self._or_concrete(e, f"{fname} of x[mask]", fn, (self, *args), kwargs)

    def _traced_reduce(self, fname: str, fn, axis=None, *args, keepdims=False, where=np._NoValue, **kwargs):
        if where is not np._NoValue:
            raise unsupported(f"{fname} of a boolean-indexed array with where=", _WHY)
        t = len(self.trailing)
        axes = tuple(range(1 + t)) if axis is None else normalize_axis_tuple(axis, 1 + t)
        if 0 not in axes:
            raise unsupported(f"{fname} of x[mask] along its trailing axes only", _WHY)
        k = self.mask.ndim
        full_axes = tuple(range(k)) + tuple(k - 1 + a for a in axes if a > 0)
        if fname in ("max", "amax", "min", "amin") and "initial" not in kwargs:
            is_max = fname.endswith("max")
            kwargs["initial"] = _identity(self.dtype, is_max)
            if all(n for a, n in enumerate(self.trailing) if a + 1 not in axes):    # a non-empty result
                empty = ew.apply_ufunc("logical_not", rd.any(Tracer(self.mask)))
                add_check(empty.node, f"zero-size array to reduction operation {'maximum' if is_max else 'minimum'}"
                          f" which has no identity{at(loc())}", "ValueError")
        res = fn(Tracer(self.values), full_axes, *args, where=Tracer(self.full_mask()), **kwargs)
        if keepdims:
            kept = (1,) + tuple(1 if a + 1 in axes else n for a, n in enumerate(self.trailing))
            res = mv.reshape(res, kept)
        return res


def spread_mask(mask: Node, shape) -> Node:
    """A boolean mask over the leading dims of ``shape``, broadcast over its trailing dims."""
    return broadcast(mv.reshape_node(mask, mask.shape + (1,) * (len(shape) - mask.ndim)), shape)


def _identity(dtype: np.dtype, is_max: bool):
    if dtype.kind == "f":
        return -np.inf if is_max else np.inf
    if dtype.kind == "b":
        return not is_max
    info = np.iinfo(dtype)
    return info.min if is_max else info.max


def _elementwise(call, inputs, name: str):
    """``call`` on the selections' full values (and the other operands as they are), the
    result(s) selections under the common mask."""
    sels = [x for x in inputs if isinstance(x, Selection)]
    mask = sels[0].mask
    if any(s.mask is not mask for s in sels):
        raise unsupported(f"np.{name} of boolean-indexed arrays under different masks", _WHY)
    trailing = max((len(s.trailing) for s in sels), default=0)
    args = []
    for x in inputs:
        if isinstance(x, Selection):
            args.append(Tracer(x.values))
            continue
        if x is not None and not isinstance(x, (str, type, np.dtype)):
            if isinstance(x, (list, tuple)):
                x = np.asarray(x)
            if len(operand(x, f"operand of np.{name}").shape) > trailing:
                raise unsupported(f"np.{name} of a boolean-indexed array (x[mask]) and an array "
                                  "with as many dims", _WHY)
        args.append(x)
    res = call(*args)
    return tuple(_wrap(r, mask) for r in res) if isinstance(res, tuple) else _wrap(res, mask)


def _wrap(res, mask: Node):
    node = res.node if isinstance(res, Tracer) else operand(res).node
    if node is None or node.shape[:mask.ndim] != mask.shape:
        raise unsupported("an op on a boolean-indexed array that drops its rows", _WHY)
    return Selection(node, mask)


def _select(values, mask):
    """``x[mask]`` on concrete arrays (``values``: x broadcast to the mask's shape + trailing)."""
    return values[mask]


REDUCTIONS = {np.sum: rd.sum, np.prod: rd.prod, np.mean: rd.mean, np.max: rd.max,
              np.amax: rd.max, np.min: rd.min, np.amin: rd.min, np.any: rd.any, np.all: rd.all,
              np.var: rd.var, np.std: rd.std}
ELEMENTWISE_FUNCTIONS = (np.where, np.clip, np.round, np.around)


def install_operators(binary: dict, compare: dict, unary: dict) -> None:
    """Python operators on :class:`Selection` (the tracer's tables: operator name -> ufunc)."""
    S = Selection
    for name, uf in {**binary, "pow": "power"}.items():
        fn = getattr(np, uf)
        setattr(S, f"__{name}__", lambda self, other, fn=fn: fn(self, other))
        setattr(S, f"__r{name}__", lambda self, other, fn=fn: fn(other, self))
        setattr(S, f"__i{name}__", lambda self, other, fn=fn: _assign(self, fn(self, other), fn.__name__))
    for name, uf in compare.items():
        setattr(S, f"__{name}__", lambda self, other, fn=getattr(np, uf): fn(self, other))
    for name, uf in unary.items():
        setattr(S, f"__{name}__", lambda self, fn=getattr(np, uf): fn(self))
    for name, fn in REDUCTIONS.items():
        if name.__name__ in ("sum", "prod", "mean", "max", "min", "any", "all", "var", "std"):
            setattr(S, name.__name__, lambda self, *a, fname=name.__name__, fn=fn, **k:
                    self._reduce(fname, fn, *a, **k))


def _assign(sel: Selection, new: Selection, ufunc: str) -> Selection:
    """``s op= y`` on a selection (a copy in NumPy): the selection object takes the new values,
    so an alias of it sees them, as an alias of NumPy's copy would."""
    if new.values.shape != sel.values.shape:
        raise unsupported("an in-place op that broadcasts a boolean-indexed array", _WHY)
    check_same_kind(ufunc, new.dtype, sel.dtype)
    sel.values = cast(new.values, sel.dtype)
    return sel
