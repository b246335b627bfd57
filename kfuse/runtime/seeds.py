"""The seeds of a graph's random ops, drawn on the host once per call (``trace/random.py``): a
seed input (an INPUT with ``attrs["seed"]``, among the graph's constants) of source ``""`` takes
one 64-bit draw from NumPy's global state (so ``np.random.seed(0)`` before a call makes it
reproducible), one of a parameter name a draw from that ``np.random.Generator`` argument
(advancing it). The value reaches the kernels as the 0-d input it is, as a Python int argument
does; nothing is recompiled. Under ``kfuse.capture`` (:func:`capturing`) a call with random ops
raises: every replay of the graph would repeat the captured call's values."""
from __future__ import annotations

import contextlib
import contextvars

import numpy as np

from ..errors import UnsupportedError

_HIGH = 2 ** 64
_CAPTURING: contextvars.ContextVar[bool] = contextvars.ContextVar("kfuse_capturing", default=False)


@contextlib.contextmanager
def capturing():
    """Calls inside the block are being captured as a CUDA graph (``runtime.cuda_graph``)."""
    token = _CAPTURING.set(True)
    try:
        yield
    finally:
        _CAPTURING.reset(token)


class Seeds:
    """Where a graph's seed inputs sit among its constants, and what each draws from."""

    __slots__ = ("slots",)

    def __init__(self, graph, params: list[str]):
        first = len(graph.inputs) - len(graph.constants)
        # (position among the constants, argument position of its Generator or None: global)
        self.slots = tuple((k - first, params.index(n.attr("seed")) if n.attr("seed") else None)
                           for k, n in enumerate(graph.inputs) if n.attr("seed") is not None)

    def __bool__(self) -> bool:
        return bool(self.slots)

    def draw(self, args: tuple) -> list:
        """One 0-d uint64 array per seed input, in slot order (a call's draws)."""
        if _CAPTURING.get():
            raise UnsupportedError("kfuse.capture: a step with random numbers (np.random, a Generator) "
                                   "cannot be captured: every replay would repeat the captured values")
        return [np.array(np.random.randint(0, _HIGH, dtype=np.uint64) if pos is None
                         else args[pos].integers(0, _HIGH, dtype=np.uint64), dtype=np.uint64)
                for _, pos in self.slots]

    def place(self, constants: list, values: list, convert=None) -> list:
        """``constants`` with each seed slot holding its drawn value (``convert``: to the device)."""
        out = list(constants)
        for (k, _), v in zip(self.slots, values):
            out[k] = convert(v) if convert is not None else v
        return out
