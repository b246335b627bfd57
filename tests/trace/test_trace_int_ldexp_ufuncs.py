"""Tracing np.gcd/lcm/bitwise_count and np.ldexp: dtype resolution through ``resolve_dtypes``
(gcd/lcm: integer loops only, bool with bool refused; bitwise_count: bool counts as int8, result
uint8; ldexp: a float loop with an int32 or int64 exponent, so int8/uint16/bool exponents become
int32, uint32 int64, uint64 and floats are refused, a Python int exponent is int32 (int64 when the
mantissa is a Python scalar too), an integer mantissa picks float16/32/64 by its width), weak
scalars, integer extremes and float special values, against NumPy through the reference
interpreter."""
import numpy as np
import pytest

from kfuse.ir.ops import BINARY, BY_UFUNC, FLOP_WEIGHT, UNARY, Op
from trace_checks import DTYPES, check, rand
from ufunc_cases import EXPONENTS, INTS, float_specials, int_edges

def test_ops_are_registered():
    assert BY_UFUNC["bitwise_count"] is Op.BITWISE_COUNT and Op.BITWISE_COUNT in UNARY
    for name in ("gcd", "lcm", "ldexp"):
        assert BY_UFUNC[name].value == name and BY_UFUNC[name] in BINARY
    assert FLOP_WEIGHT[Op.GCD] == FLOP_WEIGHT[Op.LCM] == FLOP_WEIGHT[Op.REMAINDER]
    assert FLOP_WEIGHT[Op.BITWISE_COUNT] == FLOP_WEIGHT[Op.BITWISE_AND]


@pytest.mark.parametrize("dtype", INTS)
def test_gcd_lcm_extremes(dtype):
    x, y = (a.ravel() for a in np.meshgrid(int_edges(dtype), int_edges(dtype)))
    # gcd(MIN, 0) and gcd(MIN, MIN) are MIN (|MIN| wraps), lcm wraps, lcm(x, 0) is 0
    check(lambda a, b: (np.gcd(a, b), np.lcm(a, b)), x, y)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_bitwise_count(dtype):
    x = int_edges(dtype) if dtype.kind in "iu" else rand((2, 3), dtype)
    check(lambda a: np.bitwise_count(a), x)    # negatives count |x|'s bits; floats are refused
    check(lambda a: np.bitwise_count(a), rand((), dtype))


@pytest.mark.parametrize("dta,dtb", [("i1", "u1"), ("i8", "u8"), ("u8", "u1"), ("?", "?"), ("?", "i1"),
                                     ("i2", "f4"), ("u4", "i4"), ("f2", "f2")])
def test_gcd_lcm_mixed_dtypes(dta, dtb):
    for uf in (np.gcd, np.lcm):
        check(lambda x, y: uf(x, y), rand((2, 3), dta, 1), rand((3,), dtb, 2))


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("scalar", [4, -6, 0, 300, True, 2.0, np.int16(-4), np.uint8(6)], ids=repr)
def test_gcd_lcm_scalars(dtype, scalar):
    x = rand((4,), dtype, 3)
    for uf in (np.gcd, np.lcm):              # a Python int out of the dtype's range: OverflowError
        check(lambda x, s: uf(x, s), x, scalar, static=("s",))
        check(lambda x, s: uf(s, x), x, scalar, static=("s",))


@pytest.mark.parametrize("ftype", ["f2", "f4", "f8"])
@pytest.mark.parametrize("etype", ["?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4"])
def test_ldexp_special_values(ftype, etype):
    x, e = (a.ravel() for a in np.meshgrid(float_specials(ftype), np.array(EXPONENTS)))
    # every exponent wraps into etype as astype does; int64 ones beyond int saturate in NumPy
    check(lambda a, b: np.ldexp(a, b), x, e.astype(etype))


@pytest.mark.parametrize("mtype", ["?", "i1", "u1", "i2", "u2", "i4", "u8"])
def test_ldexp_integerfloat_specials(mtype):
    # int8/uint8/bool -> float16, int16/uint16 -> float32, wider -> float64
    check(lambda a, b: np.ldexp(a, b), rand((2, 3), mtype, 1), rand((3,), "i4", 2))


@pytest.mark.parametrize("ftype", ["f2", "f4", "f8"])
@pytest.mark.parametrize("scalar", [3, -1074, -149, 40, 2 ** 31 - 1, -2 ** 31, 2 ** 31, True,
                                    np.int64(2 ** 40), np.uint8(7), np.int8(-3), 2.0], ids=repr)
def test_ldexp_scalar_exponents(ftype, scalar):
    # a Python int is an int32 exponent (2**31 raises OverflowError, as NumPy)
    check(lambda a, s: np.ldexp(a, s), float_specials(ftype), scalar, static=("s",))


@pytest.mark.parametrize("etype", ["i1", "i4", "i8", "u4"])
@pytest.mark.parametrize("scalar", [3, -2, 1.5, -0.0, True, np.float32(0.75), np.float16(2.0)],
                         ids=repr)
def test_ldexp_scalarfloat_specials(etype, scalar):
    # a Python int mantissa with an int32 exponent array is float16 (NumPy's weak int), with an
    # int64 one float16 too; a Python float is float64
    e = np.array([-30, -1, 0, 1, 5, 20], etype) if etype != "u4" else np.array([0, 1, 5, 20], etype)
    check(lambda s, b: np.ldexp(s, b), scalar, e, static=("s",))


def test_ldexp_broadcasting():
    check(lambda a, b: np.ldexp(a, b), rand((3, 1), "f4", 1), np.arange(-3, 4, dtype=np.int64))
    check(lambda a, b: np.ldexp(a, b), rand((0, 2), "f8", 1), np.array([1, 2], np.int32))
