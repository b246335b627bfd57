"""The one per-dtype tolerance table, and the comparison every test (and `kfuse fuzz`, and the
autotuner's result check) uses against NumPy.

float16: elementwise and reduction kernels round every float16 op result to float16, as NumPy's
loops do (all backends). The GEMM epilogue kernels (the generated fused GEMM and the kernel that
follows cuBLAS) read the float16 product rounded to float16 (as NumPy's matmul gives it: an entry
past 65504 is inf), keep the rest of the epilogue in float32 registers, round once on store and use
the hardware ``tanh.approx`` for 16-bit outputs: results can differ from NumPy by a few float16
ulps, inside the float16 row below. bfloat16 (torch tensors on the CUDA C backend) is computed the
same way: each op in float32, its result rounded to bfloat16, as ml_dtypes' NumPy loops and torch's
eager ops do; its sums accumulate in float64 and round once (a mean divides the sum in float32, as
float16's does; ml_dtypes' NumPy sums in bfloat16 itself, so tests take a float32 or float64
reference for them, rounded once). Against a reference computed in float32 and rounded once at the
end (torch's ``.float()`` then ``.to(torch.bfloat16)``) a chain of n ops differs by up to ~n
roundings of 2^-9: the GPU tests compare such chains at 2x the bfloat16 row. Conversions to
bfloat16 round once to nearest even from float64 and 64-bit ints too (round-to-odd through
float64/float32), where ml_dtypes and torch round twice through float32 (``1 + 2**-8 + 2**-40`` is
``1 + 2**-7`` in kfuse, ``1.0`` in ml_dtypes): those can differ by one ulp. Promotion:
:mod:`kfuse.ir.dtypes`.

Both GPU backends round each float add, subtract and multiply on its own, as NumPy's loops do
(NVRTC ``--fmad=false``, NVVM ``-fma=0``: PTX ``.rn``, which ptxas neither fuses into an FMA nor
folds into a neighbouring multiply). Until 2026-11-25 they contracted ``a * b + c`` into one FMA
(as Triton and XLA do) and ptxas folded ``x * 3 / 4`` into one ``FMUL.D4``: ``std(x * x)`` of a
constant came out > 0 (docs/FUZZING.md bug 25). libdevice's functions (exp, tanh, pow...) are
within a few ulp of NumPy's libm, inside the float rows below.

NaN signs: ``np.signbit`` and ``np.copysign`` (its second operand) read a NaN's sign bit, which IEEE
leaves unspecified for a NaN an op creates (``inf - inf``, ``log(-1)``, a math function of a NaN):
x86 makes a negative NaN (NumPy, the CPU backend, mostly), the GPUs a positive canonical one,
and libms differ. So signbit/copysign of such a NaN may differ from NumPy, on the GPU backends
above all. A NaN that comes from the inputs keeps its sign through loads, stores, ``where`` and
``negative``/``absolute``/``copysign`` on every backend, and through float conversions on the CPU
backend (its float16 rounding included, as NumPy's conversion does); on a GPU a ``cvt`` (float16
loads and roundings, float widenings) may not keep it. ``assert_matches_numpy`` compares NaNs by
position, never by sign; the fuzz generator replaces NaNs with 0.0 in signbit's and copysign's
sign operands (``_Gen._sign_operand``). ``heaviside``, ``fmod`` and ``logaddexp``/``logaddexp2``
have NumPy's exact special values on every backend: heaviside gives a positive NaN for a NaN,
fmod C's exact result (sign of the dividend; integers: 0 for a zero divisor and for
``INT_MIN % -1``), logaddexp NumPy's own steps (equal infinities give that infinity).
``gcd``/``lcm``/``bitwise_count`` and ``ldexp`` are exact on every backend: gcd/lcm/popcount of a
signed int take its magnitude in the unsigned type as NumPy's loops do (``gcd(INT_MIN, 0)`` is
INT_MIN, lcm wraps), ldexp rounds once (float16 via float32, as NumPy) and saturates an int64
exponent to C int's range (NumPy's int64 loop) instead of wrapping it.

np.einsum: a contracted subscript of size 1 in one of two operands is broadcast, ``sum(x * y)``, as
NumPy's einsum of three operands and np.matmul do; NumPy's two-operand loops sometimes factor it
instead, ``x * sum(y)``, depending on strides (``einsum('ij,jk', [[inf]], [[1], [-1], [2]])`` is inf
there, with a second row of x nan). The two agree on finite values up to rounding; where
infinities of both signs meet, kfuse gives nan and NumPy may give inf. A complex contraction over
an infinite or NaN part has implementation-defined NaN parts: NumPy's ``np.dot`` (its BLAS) gives
``nan+nanj`` where its ``np.einsum`` gives ``inf+nanj`` for the same operands, and cuBLAS may give
either; finite values agree up to rounding.

Writes and selections (``kfuse/trace/mutation.py``, ``selection.py``): ``x[mask].max()`` and
``.min()`` of an empty selection raise NumPy's ValueError (a run-time check read back after the
call); with ``KFUSE_INDEX_CHECKS=0`` they give the identity (-inf, +inf, the integer limits)
instead, and ``np.average`` with weights summing to zero gives inf/NaN where NumPy raises ZeroDivisionError. A traced float
written into an integer array casts as ``astype`` does: values out of the integer's range are
undefined in NumPy (x86 wraps, the GPUs saturate), as for any float-to-int cast. ``x += 1`` on a
0-d value that is not a view rebinds it, as on a NumPy scalar (a 0-d array aliased elsewhere would
see the update in NumPy). A function that writes into an argument and returns it returns a new
array equal to the updated argument, not the argument object itself, unless its last write was a
scatter made in place (``np.add.at(t, ids, g); return t`` returns ``t``, as NumPy does).

Scans (``np.cumsum``, ``np.maximum.accumulate``...; ``kfuse/trace/scans.py``): on the CPU and
Numba-CUDA, and down columns on CUDA C, a scan runs in order in the result dtype as NumPy's
accumulate loop does: NumPy's values bit for bit. CUDA C scans contiguous rows as a tree over a
warp's lanes and the row's chunks (``codegen/cuda_scan.py``, as CUB, Triton and torch do): integer,
boolean, max and min scans are still exact; float sums and products round in another order, within
the float rows below, and closer to the exact result than NumPy's loop, which drifts over long rows
(a million float32 terms in [0.1, 1): NumPy 8e-4 from the float64 sums, kfuse within 1e-6).
Complex products are not associative past an infinite or NaN factor (which parts are NaN follows
the order of the products), nor does a tree of complex max/min combines keep NumPy's first NaN: on
the GPU backends a row reduction (prod, max, min) whose tree value is non-finite (prod) or NaN
(max/min), and a CUDA C cumprod segment holding a non-finite value, are redone in NumPy's order
(``codegen/accs.redo_ops``), so their NaN and infinite parts are NumPy's (a finite complex product
rounds in the tree's order; one that overflows only in NumPy's order is not redone).

Scatters (``x[idx] = v``, ``np.add.at`` and the other ``ufunc.at``, ``np.put``,
``np.put_along_axis``; ``kfuse/trace/scatter.py``): the CPU runs a scatter's elements in C order,
one at a time: NumPy's values bit for bit, repeated positions included (the last assignment lands,
``ufunc.at`` applies every one in order) where NumPy meets them in C order too: it iterates index
arrays in their memory order, so a transposed index array lands another repeated value last. The GPU backends run the elements in parallel: an
assignment to a repeated position lands one of its values (NumPy does not specify which either);
``ufunc.at`` combines atomically, so integer, boolean, max and min results are exact, while float
sums and products (``np.add.at`` of floats) round in the order the atomics ran, which may change
from run to run: within the float rows below, compared as a sum's.
"""
from __future__ import annotations

import numpy as np

TOLERANCE: dict[str, tuple[float, float]] = {   # dtype name -> (rtol, atol)
    "float16": (5e-3, 1e-3),
    # eps 2^-7 (8 significant bits; unit roundoff 2^-8): 2 ulps, as an op's float32 result that
    # lands near a rounding boundary can round either way against NumPy/ml_dtypes' loop (its
    # libm); float16's row is 5 of its ulps (2^-10) for its longer chains. CUDA C only.
    "bfloat16": (1.6e-2, 1e-3),
    "float32": (2e-5, 1e-6),
    "float64": (1e-12, 1e-14),
    # complex: the relative error of the complex value, |kfuse - numpy| <= atol + rtol * |numpy|
    # (a part may be far from NumPy's relative to itself where the other part dominates: the
    # real part of (1 + 1e-9j) * (1 - 1e-9j) cancels); infinities and NaN part by part
    "complex64": (2e-5, 1e-6),
    "complex128": (1e-12, 1e-14),
}


def tolerance(dtype) -> tuple[float, float]:
    dt = np.dtype(dtype)
    return TOLERANCE.get(dt.name, (0.0, 0.0))   # ints and bools are exact


def assert_matches_numpy(actual, expected, *, reductions: bool = False, err_msg: str = "") -> None:
    """dtype and shape exact; values within the dtype's tolerance (exact for ints/bools);
    NaN where NumPy has NaN, same-signed infinities. ``reductions`` loosens float tolerances
    by 10x for long sums whose summation order differs from NumPy's pairwise order."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != numpy's {expected.dtype} {err_msg}"
    assert actual.shape == expected.shape, f"shape {actual.shape} != numpy's {expected.shape} {err_msg}"
    rtol, atol = tolerance(expected.dtype)
    if reductions:
        rtol, atol = rtol * 10, atol * 10
    if expected.dtype.kind == "c":
        _assert_complex_close(actual, expected, rtol, atol, err_msg)
    elif expected.dtype.kind == "f" or expected.dtype.name == "bfloat16":
        if expected.dtype.name == "bfloat16":     # compared as the float32 values they are exactly
            actual, expected = actual.astype(np.float32), expected.astype(np.float32)
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=err_msg)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=err_msg)


def _assert_complex_close(actual, expected, rtol: float, atol: float, err_msg: str) -> None:
    """Complex values within ``atol + rtol * |expected|`` where NumPy's is finite; elsewhere each
    part as NumPy's: NaN where it has NaN, its infinities, its finite parts within the same bound
    (``inf + 1j``)."""
    with np.errstate(all="ignore"):
        close = np.abs(actual - expected) <= atol + rtol * np.abs(expected)
        parts = [(np.isnan(a) & np.isnan(e)) | (a == e) | (np.isfinite(e) & (np.abs(a - e) <= atol + rtol * np.abs(e)))
                 for a, e in ((actual.real, expected.real), (actual.imag, expected.imag))]
        ok = np.atleast_1d(np.where(np.isfinite(expected), close, parts[0] & parts[1]))
    if not ok.all():
        bad = [tuple(i) for i in np.argwhere(~ok)[:5].tolist()]
        a, e = np.atleast_1d(actual), np.atleast_1d(expected)
        raise AssertionError(f"complex values differ (rtol={rtol}, atol={atol}) at {bad}: kfuse "
                             f"{[a[i] for i in bad]}, numpy {[e[i] for i in bad]} {err_msg}")
