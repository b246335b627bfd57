"""np.gcd/lcm/bitwise_count and np.ldexp through ``kfuse.jit`` end to end on every backend, against
NumPy, bit for bit (all four are exact): gcd/lcm of every integer width over its extremes (gcd(MIN,
0) is MIN, lcm wraps), popcounts of negatives (|x|'s bits), and ldexp of float16/32/64 with int8,
int32, int64 (saturating past int's range, never wrapping), uint32 and bool exponents over zeros
of both signs, infinities, NaN, subnormal and overflowing results. The GPU rows run where there is
a GPU (the ``backend`` fixture)."""
import numpy as np
import pytest

import kfuse
from backends import jit_and_numpy
from ufunc_cases import EXPONENTS, INTS, float_specials, int_edges

def int_ops(a, b):
    return np.gcd(a, b), np.lcm(a, b), np.bitwise_count(a), np.gcd(a, 6), np.lcm(a, 4)


def ldexp_ops(x, e64):
    # the int8/uint32 exponents wrap as astype does; the int64 ones saturate (NumPy's int64 loop)
    return (np.ldexp(x, e64), np.ldexp(x, e64.astype(np.int32)), np.ldexp(x, e64.astype(np.int8)),
            np.ldexp(x, e64.astype(np.uint32)), np.ldexp(x, e64 > 0), np.ldexp(x, -1074),
            np.ldexp(x, 2 ** 31 - 1), np.ldexp(x + x, 3) * 0.5)


def _exact(got, want, name):
    assert got.dtype == want.dtype and got.shape == want.shape, (name, got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want, err_msg=name)         # NaNs by position
    if want.dtype.kind == "f":
        zero = want == 0
        np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]), err_msg=name)


@pytest.mark.parametrize("dtype", INTS)
def test_gcd_lcm_bitwise_count(backend, dtype):
    x, y = (a.ravel() for a in np.meshgrid(int_edges(dtype), int_edges(dtype)))
    got, want = jit_and_numpy(int_ops, backend, x, y)
    for k, (g, w) in enumerate(zip(got, want)):
        _exact(g, w, f"{dtype} output {k}")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_ldexp(backend, dtype):
    x, e = (a.ravel() for a in np.meshgrid(float_specials(dtype), np.array(EXPONENTS, np.int64)))
    got, want = jit_and_numpy(ldexp_ops, backend, x, e)
    for k, (g, w) in enumerate(zip(got, want)):
        _exact(g, w, f"{dtype} output {k}")


def test_promotions(backend):
    b = np.array([True, False, True, True])
    i8 = np.array([-128, -1, 0, 127], np.int8)
    u16 = np.array([0, 65535, 12, 7], np.uint16)
    i64 = np.array([-(2 ** 63), 2 ** 40, -7, 1], np.int64)
    fn = lambda b, i8, u16, i64: (     # noqa: E731
        np.bitwise_count(b), np.gcd(i8, u16), np.lcm(b, i8), np.ldexp(i8, i8), np.ldexp(u16, b),
        np.ldexp(i64, i8), np.ldexp(3, i8), np.ldexp(1.5, i64), np.bitwise_count(i64))
    got, want = jit_and_numpy(fn, backend, b, i8, u16, i64)
    assert [w.dtype.name for w in want] == ["uint8", "int32", "int8", "float16", "float32", "float64",
                                            "float16", "float64", "uint8"]
    for k, (g, w) in enumerate(zip(got, want)):
        _exact(g, w, f"output {k}")


def test_ldexp_exponent_does_not_wrap():
    """The case a plain int64 -> int conversion gets wrong: 2**32 + 1 is not 1 (CPU; the GPU rows
    of test_ldexp cover it there)."""
    e = np.array([2 ** 32 + 1, -(2 ** 32) + 1, 2 ** 63 - 1, -(2 ** 63)], np.int64)
    out = kfuse.jit(lambda x, e: np.ldexp(x, e), backend="cpu")(np.ones(4, np.float32), e)
    np.testing.assert_array_equal(out, np.array([np.inf, 0.0, np.inf, 0.0], np.float32))
