"""The one policy for a power with a constant exponent: when ``x ** e`` may be computed as a
product of copies of ``x`` and still give NumPy's bits. ``fusion.simplify`` rewrites by it and
every emitter renders a constant-exponent power by it, so no backend strays from NumPy.

NumPy computes ``x ** e`` of a float array through libm's ``pow`` (its ndarray fast path turns
only exponents 2 and 0.5 into ``np.square``/``np.sqrt``, the latter a separate op in the trace);
``pow`` is correctly rounded where a product of copies of ``x`` is exact, which for a float holds
at ``e`` = 1 (``x``) and 2 (one rounding, ``x * x``). ``x ** 3`` as ``x * x * x`` rounds twice and
differs from ``pow`` in about a quarter of float32 and float64 values, so it stays a power (the GPU
emitters' pow computes a cube rounded once from its exact value, as libm's is everywhere but a few
near-ties, where CUDA's own pow is within 2 ulp). Integer
powers wrap, and wrapping multiplication is associative: any positive exponent is exact as
products; 3 and 4 are the ones worth the code size.
"""
from __future__ import annotations

import numpy as np

from .dtypes import BF16, is_float

FLOAT_PRODUCT_EXPONENTS = (1, 2)
INT_PRODUCT_EXPONENTS = (1, 2, 3, 4)


def product_exponent(exponent, dtype) -> int | None:
    """The number of copies of the base whose product is NumPy's ``base ** exponent`` of ``dtype``
    bit for bit (1: the base itself), or None where the power must be computed as a power.
    ``exponent`` is a constant's value (bools are not exponents: NumPy promotes them)."""
    if exponent is None or isinstance(exponent, (bool, np.bool_)):
        return None
    dt = BF16 if str(dtype) == "bfloat16" else np.dtype(dtype)
    kind = "f" if is_float(dt) else dt.kind
    try:
        e = float(exponent)
    except (TypeError, ValueError):
        return None
    if not e.is_integer():
        return None
    allowed = FLOAT_PRODUCT_EXPONENTS if kind == "f" else INT_PRODUCT_EXPONENTS if kind in "iu" else ()
    return int(e) if int(e) in allowed else None
