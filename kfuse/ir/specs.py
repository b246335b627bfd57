"""Abstract descriptions of a traced function's arguments (what tracing and planning need).

An argument is an array (:class:`ArraySpec`: dtype and shape), a weak Python scalar passed at run
time (:class:`ScalarSpec`: ``bool``/``int``/``float``/``complex``, promoted like NumPy's weak scalars), or a
static value baked into the trace (:class:`StaticSpec`, from ``static_argnames``), or a
``np.random.Generator`` (:class:`GeneratorSpec`). NumPy scalars
(``np.float32(2)``) and 0-d arrays are arrays of shape ``()``.
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..records import record
from .dtypes import format_spec, parse_spec


@record
class ArraySpec:
    """An array argument: its dtype and shape."""
    dtype: np.dtype
    shape: tuple[int, ...]
    numpy_scalar: bool = False      # a NumPy scalar (np.int64(3)): NumPy indexes with it as an int

    def __str__(self) -> str:
        return format_spec(self.dtype, self.shape)


@record
class ScalarSpec:
    """A Python scalar argument, by its type."""
    pytype: type  # bool, int, float or complex

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the run-time value (the promotion stays weak)."""
        return np.dtype({bool: np.bool_, int: np.int64, float: np.float64,
                         complex: np.complex128}[self.pytype])

    def __str__(self) -> str:
        return self.pytype.__name__


@record
class StaticSpec:
    """An argument compiled in as a constant (its value)."""
    value: Any

    def __str__(self) -> str:
        return f"static({self.value!r})"


@record
class GeneratorSpec:
    """A ``np.random.Generator`` argument: keyed by its type; the call draws a seed from it (its
    state read, and advanced, every call) for the random ops it feeds (``trace/random.py``)."""

    def __str__(self) -> str:
        return "Generator"


ArgSpec = ArraySpec | ScalarSpec | StaticSpec | GeneratorSpec


def spec_from_string(s: str) -> ArgSpec:
    if s == "Generator":        # a np.random.Generator argument (``kfuse explain f.py:fn ... Generator``)
        return GeneratorSpec()
    parsed = parse_spec(s)
    if isinstance(parsed, type):
        return ScalarSpec(parsed)
    return ArraySpec(*parsed)


def spec_of_value(v: Any) -> ArgSpec:
    """The spec of a concrete argument (array-likes by their dtype/shape; Python scalars weak)."""
    if isinstance(v, str):
        return spec_from_string(v)
    if isinstance(v, (bool, int, float, complex)) and not isinstance(v, np.generic):
        return ScalarSpec(bool if isinstance(v, bool) else int if isinstance(v, int) else
                          float if isinstance(v, float) else complex)
    if isinstance(v, (ArraySpec, ScalarSpec, StaticSpec, GeneratorSpec)):
        return v
    rnd = sys.modules.get("numpy.random")       # (not imported: no argument is a Generator)
    if rnd is not None and isinstance(v, rnd.Generator):
        return GeneratorSpec()
    if rnd is not None and isinstance(v, rnd.RandomState):
        from ..errors import UnsupportedError
        raise UnsupportedError("kfuse: a np.random.RandomState argument is not supported: pass a "
                               "np.random.Generator (np.random.default_rng(seed)), or nothing to use "
                               "NumPy's global state")
    if isinstance(v, np.generic):
        return ArraySpec(v.dtype, (), numpy_scalar=True)
    dtype = getattr(v, "dtype", None)
    shape = getattr(v, "shape", None)
    if dtype is None or shape is None:
        a = np.asarray(v)
        dtype, shape = a.dtype, a.shape
    return ArraySpec(np.dtype(str(dtype).replace("torch.", "")) if not isinstance(dtype, np.dtype) else dtype,
                     tuple(int(s) for s in shape))
