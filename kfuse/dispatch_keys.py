"""Dispatch keys of a jitted function's call: per argument its type, dtype, shape, strides and
device (static arguments by value, Python scalars by type), as one flat tuple, the hot path's one
dictionary lookup (``api.JitFunction.__call__``); and the shape-class key, the same without sizes
and strides (``runtime.shape_class``). A key function is chosen once per argument type."""
from __future__ import annotations

import functools
import sys
import types
from typing import Any, Callable

import numpy as np


@functools.cache
def _family(t: type) -> str | None:
    """'numpy', 'cupy' or 'torch' for an array type, None for anything else (decided once a type)."""
    if t is np.ndarray:
        return "numpy"
    mod = t.__module__
    if mod.startswith("cupy"):
        return "cupy"
    if mod.startswith("torch") and hasattr(t, "is_cuda"):
        return "torch"
    return None


def array_kind(a: Any) -> str | None:
    """'numpy', 'cupy', 'torch', 'torch-cpu', or None for non-arrays (Python/NumPy scalars count
    as scalars)."""
    family = _family(type(a))
    if family == "torch" and not a.is_cuda:
        return "torch-cpu"
    return family


UNCACHEABLE = object()  # an argument whose key can't be formed cheaply (lists, unknown types)


def _key_numpy(a):
    return (np.ndarray, a.dtype, a.shape, a.strides)


def _key_cupy(a):
    return (type(a), a.dtype, a.shape, a.strides, a.data.device_id)


def _key_torch(a):
    if a.is_cuda:       # (a lazy conjugate or negative holds other values than its memory's)
        return (type(a), a.dtype, a.shape, a.stride(), a.get_device(), a.is_conj() or a.is_neg())   # (a
        # torch.Size hashes and compares as the tuple it is)
    return UNCACHEABLE


def _key_numpy_scalar(a):
    return (type(a), a.dtype)


def _key_uncacheable(a):
    return UNCACHEABLE


def class_key(a):
    """An argument's part of the shape-class key: ``arg_key`` without sizes and strides (an
    array's type, dtype, rank, which dims are 1, device)."""
    family = _family(type(a))
    if family is None:
        return arg_key(a)
    if family == "torch" and not a.is_cuda:
        return UNCACHEABLE
    dev = a.data.device_id if family == "cupy" else (a.get_device() if family == "torch" else None)
    return (type(a), a.dtype, tuple(d == 1 for d in a.shape), dev)


def _key_static(a):
    return (type(a), a)


def static_type(t: type) -> bool:
    """Arguments of type ``t`` are passed to the traced function as they are (as if named in
    ``static_argnames``): a module (``xp=np``), None, a function or ufunc, a type or dtype, a
    string (``mode="clip"``; in ``lower()`` a string is an argument spec instead)."""
    return (t is type(None) or issubclass(t, (types.ModuleType, type, np.dtype, str, types.FunctionType,
                                              types.BuiltinFunctionType, types.MethodType, np.ufunc,
                                              functools.partial)))


_KEY_OF_FAMILY = {"numpy": _key_numpy, "cupy": _key_cupy, "torch": _key_torch}


def _is_generator(t: type) -> bool:
    """Whether ``t`` is a ``np.random.Generator`` (without importing ``numpy.random`` where it is
    not yet: no argument can be one then, and the import costs ~5 ms of a warm first call)."""
    rnd = sys.modules.get("numpy.random")
    return rnd is not None and issubclass(t, rnd.Generator)


@functools.cache
def keyer(t: type) -> Callable[[Any], Any]:
    """The dispatch-key function for arguments of type ``t`` (decided once per type: the hot
    path then costs one cached lookup and the attribute reads)."""
    if t is float or t is int or t is bool or _is_generator(t):
        return type     # (a Generator by its type: its state is read, a seed drawn, every call)
    family = _family(t)
    if family is not None:
        return _KEY_OF_FAMILY[family]
    if issubclass(t, np.generic):
        return _key_numpy_scalar
    if static_type(t):
        return _key_static
    return _key_uncacheable


def arg_key(a: Any):
    return keyer(type(a))(a)


def flat_key(args: tuple) -> tuple:
    """The dispatch key of arguments none of which is static, flat (the hot path: one tuple, no
    tuple per array): a NumPy array adds its dtype, shape and strides, any other argument its
    ``arg_key``, never a bare dtype, so the sequence reads back one way."""
    key = []
    for a in args:
        if type(a) is np.ndarray:
            key += (a.dtype, a.shape, a.strides)
        else:
            key.append(keyer(type(a))(a))
    return tuple(key)
