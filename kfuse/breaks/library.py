"""Library calls and eager values at a graph break: which module's arrays an eager call gets, and
the result shape of a library function without running it (``explain`` with argument specs).

An eager call runs the NumPy function itself on concrete arrays: NumPy arrays on the CPU, CuPy
arrays on the GPU (NumPy's ``__array_function__`` dispatch sends ``np.sort`` to ``cupy.sort``,
CUB's segmented sort; ``np.fft.*`` to cuFFT); torch tensors are viewed as CuPy (CUDA) or NumPy
(CPU) arrays, no copy.
"""
from __future__ import annotations

import numpy as np

from ..ir.specs import ArraySpec
from ..trace.core import Tracer

# result dtype (None: the input's) of the library functions whose result shape is the input's
# (axis=None: flattened)
_SHAPE_KEEPING = {np.sort: None, np.partition: None, np.argsort: np.dtype(np.intp),
                  np.argpartition: np.dtype(np.intp)}


def is_array(a) -> bool:
    """A NumPy/CuPy array or NumPy scalar (what an eager call's result is bound as)."""
    return isinstance(a, (np.ndarray, np.generic)) or type(a).__module__.startswith("cupy") and hasattr(a, "dtype")


def for_eager(a):
    """The value an eager call gets for a concrete kfuse value: torch tensors as CuPy/NumPy views."""
    mod = type(a).__module__
    if mod.startswith("torch") and hasattr(a, "is_cuda"):
        if a.is_cuda:
            import cupy
            return cupy.asarray(a)
        return a.detach().numpy()
    return a


def writeable(a) -> bool:
    """An array an eager call could write into (not a scalar, not a read-only NumPy array)."""
    if isinstance(a, np.ndarray):
        return a.flags.writeable
    return is_array(a) and not isinstance(a, np.generic) or hasattr(a, "clone")


def same(a, b) -> bool:
    """Whether two concrete arrays of one module hold the same values (NaNs equal); torch tensors
    are compared as the CuPy/NumPy views an eager call gets (torch has no ``array_equal``)."""
    a, b = for_eager(a), for_eager(b)
    xp = np if isinstance(a, (np.ndarray, np.generic)) else __import__(type(a).__module__.split(".")[0])
    return bool(xp.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def to_host(a) -> np.ndarray:
    """A concrete value as a NumPy array (``np.asarray(tracer)`` in a segmented run)."""
    a = for_eager(a)
    if hasattr(a, "get") and not isinstance(a, (np.ndarray, np.generic)):
        return a.get()
    return np.asarray(a)


def result_spec(func, args, kwargs) -> ArraySpec | None:
    """The dtype and shape of ``func(*args, **kwargs)`` for the sorting functions on one tracer
    (NumPy's rules: the input's shape, flattened for ``axis=None``; indices are ``intp``), else
    None (the result's shape is known only by running it)."""
    if func not in _SHAPE_KEEPING or not args or not isinstance(args[0], Tracer):
        return None
    x = args[0]
    axis = kwargs.get("axis", args[2] if len(args) > 2 and func in (np.partition, np.argpartition)
                      else args[1] if len(args) > 1 and func in (np.sort, np.argsort) else -1)
    shape = (x.size,) if axis is None else x.shape
    return ArraySpec(_SHAPE_KEEPING[func] or x.dtype, tuple(shape))
