"""np.arcsinh/arccosh/arctanh/signbit and np.copysign/logaddexp/logaddexp2/heaviside/fmod through
``kfuse.jit`` end to end on every backend, against NumPy: all float dtypes on a grid of special
values (+-0.0, +-inf, NaNs of both signs, huge/tiny/subnormal magnitudes), zero signs where NumPy
defines them, integer fmod of every width (INT_MIN % -1, a zero divisor), and the dtype promotions
of ints and bools. The GPU rows run where there is a GPU (the ``backend`` fixture)."""
import numpy as np
import pytest

from backends import jit_and_numpy
from tolerance import assert_matches_numpy

SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 0.5, -0.5, 2.5, -7.25, 3.0,
            0.999, 1.001, 1e-3, 6e-8, 65504.0, 1e30, -1e-40, 1e300, -5e-324]


def float_ops(x, y):
    return (np.arcsinh(x), np.arccosh(x), np.arctanh(x), np.signbit(x), np.copysign(x, y),
            np.logaddexp(x, y), np.logaddexp2(x, y), np.heaviside(x, y), np.fmod(x, y))


def promoted(i8, u16, b, f32):
    return (np.signbit(i8), np.copysign(u16, i8), np.arcsinh(b), np.fmod(b, b), np.fmod(i8, 3),
            np.fmod(f32, i8), np.heaviside(i8, 0.5), np.logaddexp(u16, 1.5), np.logaddexp2(f32, 2),
            np.arctanh(i8), np.arccosh(u16), np.fmod(u16, i8), np.fmod(i8, -1))


def _check(got, want, name):
    assert_matches_numpy(got, want, err_msg=name)
    if want.dtype.kind == "f":                 # every op here defines its zeros' signs
        zero = (want == 0) & (got == 0)
        np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]), err_msg=name)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_float_special_values(backend, dtype):
    vals = SPECIALS
    if backend != "cpu" and dtype == "float16":
        vals = [v for v in vals if not (np.isnan(v) and np.signbit(v))]   # a GPU cvt may drop it
    with np.errstate(over="ignore"):
        v = np.array(vals).astype(dtype)
    x, y = (a.ravel() for a in np.meshgrid(v, v))
    got, want = jit_and_numpy(float_ops, backend, x, y)
    for g, w, name in zip(got, want, ("arcsinh", "arccosh", "arctanh", "signbit", "copysign",
                                      "logaddexp", "logaddexp2", "heaviside", "fmod")):
        _check(g, w, f"{name} {dtype}")


def test_nan_signs_from_inputs_are_kept():
    """signbit and copysign read the sign of a NaN that comes from the inputs (CPU: float16 too,
    through its float16 rounding)."""
    for dtype in ("float16", "float32", "float64"):
        x = np.array([np.nan, -np.nan, -0.0, 0.0], dtype)
        got, want = jit_and_numpy(lambda a: (np.signbit(a), np.copysign(np.ones_like(a), a),
                                             np.signbit(-a), np.signbit(np.copysign(a, -1.0))), "cpu", x)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g if g.dtype == bool else np.signbit(g),
                                          w if w.dtype == bool else np.signbit(w), err_msg=dtype)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                   "uint64"])
def test_integer_fmod(backend, dtype):
    info = np.iinfo(dtype)
    vals = np.array([v for v in (info.min, info.min + 1, -7, -3, -1, 0, 1, 2, 3, 7, info.max - 1,
                                 info.max) if info.min <= v <= info.max], dtype)
    x, y = (a.ravel() for a in np.meshgrid(vals, vals))
    got, want = jit_and_numpy(lambda a, b: np.fmod(a, b), backend, x, y)
    assert_matches_numpy(got, want)             # exact: truncating, 0 for b == 0 and MIN % -1


def test_promotions(backend):
    rng = np.random.default_rng(0)
    i8 = np.array([-128, -7, -1, 0, 1, 5, 127, 3], np.int8)
    u16 = np.array([0, 1, 2, 7, 65535, 300, 9, 1], np.uint16)
    b = rng.random(8) < 0.5
    f32 = np.array([-0.0, 0.0, 1.5, -2.5, np.inf, np.nan, 1e-40, 7.0], np.float32)
    got, want = jit_and_numpy(promoted, backend, i8, u16, b, f32)
    for k, (g, w) in enumerate(zip(got, want)):
        _check(g, w, f"output {k}")
