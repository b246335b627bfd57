"""Dtypes kfuse supports, their short names, spec strings, and NumPy's promotion (not rebuilt).

Promotion is NumPy's own: ``np.<ufunc>.resolve_dtypes`` with Python ``int``/``float``/``bool``
standing for weak scalars (NEP 50), and ``np.result_type`` elsewhere.

bfloat16 (``ml_dtypes.bfloat16``, torch's ``bfloat16``; the CUDA backends only) has no NumPy
promotion of its own (ml_dtypes turns ``bf16 * 0.5`` into float32 and refuses ``bf16 + f16``), so
it promotes as NumPy's other 16-bit float, float16, does (:func:`resolve`, :func:`result_type`):
bf16 with Python scalars, bool, int8/uint8 or bf16 stays bf16; with int16+ or float32 it is
float32 or float64 as float16 would be; bf16 with float16 is float32 (as in torch).

complex64/complex128 (``c64``/``c128``) promote by NumPy's rules too (a Python ``complex`` is a weak
scalar: ``f32_array * 1j`` is complex64).
"""
from __future__ import annotations

import functools
import re

import ml_dtypes
import numpy as np

from ..errors import UnsupportedError, at

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
SHORT_NAMES: dict[str, np.dtype] = {
    "b1": np.dtype(np.bool_),
    "i8": np.dtype(np.int8), "i16": np.dtype(np.int16), "i32": np.dtype(np.int32), "i64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16), "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64),
    "f16": F16, "bf16": BF16, "f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
    "c64": np.dtype(np.complex64), "c128": np.dtype(np.complex128),
}
_BY_DTYPE = {v: k for k, v in SHORT_NAMES.items()}
SUPPORTED = frozenset(SHORT_NAMES.values())


def is_float(dt) -> bool:
    """float16/32/64 or bfloat16 (whose NumPy kind is 'V')."""
    dt = np.dtype(dt)
    return dt.kind == "f" or dt == BF16


def is_complex(dt) -> bool:
    """complex64 or complex128."""
    return np.dtype(dt).kind == "c"


def real_dtype(dt) -> np.dtype:
    """The dtype of a complex dtype's parts (complex64 -> float32); other dtypes are their own."""
    dt = np.dtype(dt)
    return np.dtype(np.float32 if dt == np.complex64 else np.float64) if dt.kind == "c" else dt


def _as_f16(keys, f32_if_mixed: bool = True):
    """``keys`` with bfloat16 read as float16 (float32 where float16 is there too), and whether
    any was replaced."""
    bf = any(isinstance(k, np.dtype) and k == BF16 for k in keys)
    if not bf:
        return list(keys), False
    sub = np.dtype(np.float32) if f32_if_mixed and any(isinstance(k, np.dtype) and k == F16 for k in keys) else F16
    return [sub if isinstance(k, np.dtype) and k == BF16 else k for k in keys], sub == F16


def _back(dt, replaced: bool):
    return BF16 if replaced and dt == F16 else dt


def resolve(ufunc: np.ufunc, keys) -> tuple:
    """``ufunc.resolve_dtypes`` over operand keys (dtypes, or Python types for weak scalars), with
    bfloat16 promoted as float16 (module docstring)."""
    return _resolved(ufunc, tuple(keys))


@functools.lru_cache(maxsize=4096)          # (a trace asks again at every size)
def _resolved(ufunc: np.ufunc, keys: tuple) -> tuple:
    keys, replaced = _as_f16(keys)
    loop = ufunc.resolve_dtypes(tuple(keys) + (None,) * ufunc.nout)
    return tuple(_back(d, replaced) for d in loop)


def result_type(*args) -> np.dtype:
    """``np.result_type`` with bfloat16 promoted as float16 (module docstring)."""
    keys, replaced = _as_f16(args)
    return _back(np.result_type(*keys), replaced)


def short_name(dt) -> str:
    dt = np.dtype(dt)
    return _BY_DTYPE.get(dt, dt.name)


def check_supported(dt, what: str = "array", loc: str | None = None) -> np.dtype:
    """Return ``np.dtype(dt)`` or raise :class:`UnsupportedError` (complex, object, strings...)."""
    try:
        dt = np.dtype(dt)
    except TypeError as e:
        raise UnsupportedError(f"kfuse: unsupported dtype {dt!r} for {what}{at(loc)}") from e
    if dt not in SUPPORTED:
        raise UnsupportedError(
            f"kfuse: dtype {dt} of {what} is not supported{at(loc)}; supported: bool, int8-int64, "
            "uint8-uint64, float16/32/64, bfloat16, complex64/128")
    return dt


_SPEC = re.compile(r"^\s*([a-z]+\d*)\s*\[\s*([0-9,\s]*)\]\s*$")


def parse_spec(spec: str):
    """Parse an argument spec: ``"f32[4096,4096]"`` -> ``(dtype, shape)``; ``"f32[]"`` is 0-d;
    ``"float"``/``"int"``/``"bool"``/``"complex"`` -> the Python type (a weak scalar argument)."""
    s = spec.strip()
    if s in ("float", "int", "bool", "complex"):
        return {"float": float, "int": int, "bool": bool, "complex": complex}[s]
    m = _SPEC.match(s)
    if not m or m.group(1) not in SHORT_NAMES:
        raise ValueError(f"bad argument spec {spec!r}: expected e.g. 'f32[1024,1024]', 'i64[]', float "
                         f"(dtypes: {' '.join(SHORT_NAMES)})")
    dims = [d for d in m.group(2).replace(" ", "").split(",") if d]
    return SHORT_NAMES[m.group(1)], tuple(int(d) for d in dims)


def format_spec(dtype, shape) -> str:
    return f"{short_name(dtype)}[{','.join(str(s) for s in shape)}]"
