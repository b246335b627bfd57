"""Comparison of kfuse's results with NumPy's, through the project's one tolerance table.

The table is :mod:`kfuse.testing` (the same one the tests use); this module adds the one rule
the table's helper does not check: a float zero must have NumPy's sign (``-0.0`` vs ``0.0``).
"""
from __future__ import annotations

import numpy as np

from .. import testing


def signed_zero_mismatch(actual, expected) -> str | None:
    """A message when some element is 0 in both but with different signs, else None."""
    a, e = np.asarray(actual), np.asarray(expected)
    if e.dtype.kind != "f" or a.shape != e.shape or a.dtype != e.dtype:
        return None
    both = (a == 0) & (e == 0)
    bad = both & (np.signbit(a) != np.signbit(e))
    if not bad.any():
        return None
    idx = tuple(int(i[0]) for i in np.nonzero(bad)) if bad.ndim else ()
    return f"signed zero differs at {idx}: kfuse {a[idx]!r}, numpy {e[idx]!r}"


# NumPy leaves the sign of a zero unspecified where these meet +0.0 and -0.0: fmax/fmin of
# opposite zeros follow C's fmax in the scalar loop and the SIMD max in the vector loop (both
# within one array: the head/tail elements differ from the rest), and max/min reductions of
# zeros of both signs depend on the loop too (NumPy 2.4.6, x86-64). Elementwise maximum/minimum
# are consistent (float32/64: the second operand on ties, float16: the first) and stay checked.
# A product's zero sign depends on the BLAS (cuBLAS gives alpha*a*b + 0 as -0.0 where NumPy's
# loop starts from +0.0): the zeros of every contraction are compared by value only.
# np.fmax.at / np.fmin.at meet zeros of both signs as fmax/fmin do.
CONTRACTIONS = frozenset({"matmul", "dot", "inner", "tensordot", "vecdot", "matvec", "vecmat", "einsum"})
ZERO_SIGN_UNSPECIFIED = frozenset({"fmax", "fmin", "max", "min", "fmax.at", "fmin.at"}) | CONTRACTIONS

# On a GPU a ufunc.at combines a repeated position's values atomically, in whatever order the
# threads ran (kfuse/testing.py): float sums and products round in that order (compared as a sum's
# there), and maximum/minimum of +0.0 and -0.0 keep whichever came last (zeros compared by value).
# The CPU backend applies them in C order, NumPy's values bit for bit: no allowance there.
ATOMIC_ROUNDING = frozenset({"add.at", "subtract.at", "multiply.at"})
ATOMIC_ZERO_SIGN = frozenset({"maximum.at", "minimum.at"})


def compare(actual, expected, *, reductions: bool = False, zero_sign: bool = True) -> str | None:
    """None when ``actual`` matches ``expected`` (dtype, shape, values, and signed zeros unless
    ``zero_sign`` is False); else why."""
    try:
        testing.assert_matches_numpy(actual, expected, reductions=reductions)
    except AssertionError as e:
        return str(e).strip()
    return signed_zero_mismatch(actual, expected) if zero_sign else None


def flatten_outputs(value) -> list:
    if isinstance(value, (tuple, list)):
        out = []
        for v in value:
            out.extend(flatten_outputs(v))
        return out
    return [value]
