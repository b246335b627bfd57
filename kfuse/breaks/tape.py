"""Replaying a segmented function without running its Python: a :class:`Tape` records the steps
of one call (segments run, values bound as inputs, library calls, the result's graph) and replays
them on the next call's arguments.

A call can be replayed when nothing in it depends on values Python saw: every break was a
library call (``np.sort``...: a pure function of its arrays, whose result's shape the signature
determines), and Python read no value (``bool()``, ``.item()``), called no unknown function and
made no array constant. Then the path through the function is the signature's alone, as in a
whole-function trace, and the tape is that path. Any other break spoils the tape and every call
runs the function (``session``).
"""
from __future__ import annotations

import numpy as np

from ..runtime.library import call
from . import library

_NUMBER = object()      # where a returned Python number stood


class Source:
    """Where a bound value comes from: ("in", index) a value bound before; ("out", step, j) the
    j-th output of a segment; ("res", step, path) a leaf of a library call's result."""

    __slots__ = ("where",)

    def __init__(self, where: tuple):
        self.where = where


class Tape:
    def __init__(self):
        self.steps: list[tuple] = []
        self.ok = True

    def spoil(self) -> None:
        self.ok = False

    def segment(self, entry) -> int:
        self.steps.append(("segment", entry))
        return len(self.steps) - 1

    def bind(self, source: tuple | None) -> None:
        if source is None:
            self.ok = False
        self.steps.append(("bind", source))

    def library(self, func, args, kwargs) -> int:
        """A library call, its arrays given as :class:`Source` objects."""
        self.steps.append(("call", func, args, kwargs))
        return len(self.steps) - 1

    def result(self, entry, marked, numbers: list) -> None:
        self.steps.append(("return", entry, marked, numbers))

    def replay(self, values: list):
        """The call on ``values`` (the function's array and scalar arguments, in input order)."""
        outs: dict[int, object] = {}
        for k, step in enumerate(self.steps):
            kind = step[0]
            if kind == "segment":
                outs[k] = step[1].run(values)
            elif kind == "bind":
                values.append(_get(step[1], values, outs))
            elif kind == "call":
                outs[k] = call(step[1], _fill(step[2], values, outs), _fill(step[3], values, outs))
            else:
                got = step[1].run(values)
                return put_numbers(step[2], got, iter(step[3])) if step[3] else got
        raise AssertionError("a tape without its result")


def _get(where: tuple, values: list, outs: dict):
    if where[0] == "in":
        v = values[where[1]]
    elif where[0] == "out":
        v = outs[where[1]][where[2]]
    else:
        v = outs[where[1]]
        for i in where[2]:
            v = v[i]
    return np.asarray(v) if isinstance(v, np.generic) else v


def _fill(tree, values: list, outs: dict):
    """Arguments of a recorded library call with each :class:`Source` replaced by its value."""
    if isinstance(tree, Source):
        return library.for_eager(_get(tree.where, values, outs))
    if isinstance(tree, list):
        return [_fill(v, values, outs) for v in tree]
    if isinstance(tree, tuple):
        items = [_fill(v, values, outs) for v in tree]
        return type(tree)._make(items) if hasattr(tree, "_fields") else tuple(items)
    if isinstance(tree, dict):
        return {k: _fill(v, values, outs) for k, v in tree.items()}
    return tree


def take_numbers(tree, numbers: list, mark=_NUMBER):
    """``tree`` with each Python bool/int/float replaced by ``mark``, the numbers appended in order."""
    if isinstance(tree, (bool, int, float)) and not isinstance(tree, np.generic):
        numbers.append(tree)
        return mark
    if isinstance(tree, list):
        return [take_numbers(v, numbers, mark) for v in tree]
    if isinstance(tree, tuple) and not hasattr(tree, "_fields"):
        return tuple(take_numbers(v, numbers, mark) for v in tree)
    if isinstance(tree, dict):
        return {k: take_numbers(v, numbers, mark) for k, v in tree.items()}
    return tree


def put_numbers(marked, got, numbers):
    """The call's result ``got`` with the numbers back where ``marked`` (the result with the marks
    of :func:`take_numbers`) has its marks; ``numbers`` an iterator."""
    if marked is _NUMBER:
        return next(numbers)
    if isinstance(marked, list):
        return [put_numbers(m, g, numbers) for m, g in zip(marked, got)]
    if isinstance(marked, tuple) and not hasattr(marked, "_fields"):
        return tuple(put_numbers(m, g, numbers) for m, g in zip(marked, got))
    if isinstance(marked, dict):
        return {k: put_numbers(m, got[k], numbers) for k, m in marked.items()}
    return got
