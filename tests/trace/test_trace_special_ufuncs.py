"""Tracing np.arcsinh/arccosh/arctanh/signbit and np.copysign/logaddexp/logaddexp2/heaviside/fmod:
every dtype (dtype resolution through ``resolve_dtypes``: ints and bool promote to the float loops,
fmod keeps its integer loops), broadcasting, weak scalars, special values, against NumPy through
the reference interpreter."""
import numpy as np
import pytest

from kfuse.ir.ops import BINARY, BY_UFUNC, FLOP_WEIGHT, UNARY, Op
from trace_checks import DTYPES, check, rand

NEW_UNARY = ["arcsinh", "arccosh", "arctanh", "signbit"]
NEW_BINARY = ["copysign", "logaddexp", "logaddexp2", "heaviside", "fmod"]
SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 0.5, -2.5, 7.0,
                     1e300, -5e-324, 1e-40, 65504.0])


def test_ops_are_registered():
    for name in NEW_UNARY + NEW_BINARY:
        op = BY_UFUNC[name]
        assert op.value == name and (op in UNARY) == (name in NEW_UNARY) and op in UNARY | BINARY
    assert FLOP_WEIGHT[Op.LOGADDEXP] == FLOP_WEIGHT[Op.ARCTAN2] == 8.0
    assert FLOP_WEIGHT[Op.FMOD] == FLOP_WEIGHT[Op.REMAINDER]


@pytest.mark.parametrize("name", NEW_UNARY)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_unary(name, dtype):
    uf = getattr(np, name)
    for shape in [(), (0,), (2, 3)]:
        check(lambda x: uf(x), rand(shape, dtype))


@pytest.mark.parametrize("name", NEW_BINARY)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_binary(name, dtype):
    uf = getattr(np, name)
    for sa, sb in [((), ()), ((3, 0), (0,)), ((2, 3), (3,)), ((3, 1), (1, 4))]:
        check(lambda x, y: uf(x, y), rand(sa, dtype, 1), rand(sb, dtype, 2))


@pytest.mark.parametrize("dta,dtb", [("i1", "u1"), ("i8", "u8"), ("f2", "i2"), ("?", "?"),
                                     ("u4", "f2"), ("?", "i1"), ("f2", "f8"), ("i2", "f4")])
def test_mixed_dtypes(dta, dtb):
    for name in NEW_BINARY:
        uf = getattr(np, name)
        check(lambda x, y: uf(x, y), rand((2, 3), dta, 1), rand((3,), dtb, 2))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("scalar", [3, 0.5, True, np.float32(-2.0), np.int16(-3), np.uint8(2)],
                         ids=repr)
def test_scalar_operands(dtype, scalar):
    x = rand((4,), dtype, 3)
    for name in NEW_BINARY:
        uf = getattr(np, name)
        check(lambda x, s: uf(x, s), x, scalar, static=("s",))
        check(lambda x, s: uf(s, x), x, scalar, static=("s",))


@pytest.mark.parametrize("dtype", ["f2", "f4", "f8"])
def test_special_values(dtype):
    with np.errstate(over="ignore"):                   # 1e300 is inf in float16/32
        v = SPECIALS.astype(dtype)
    x, y = (a.ravel() for a in np.meshgrid(v, v))
    for name in NEW_UNARY:
        check(lambda a: getattr(np, name)(a), x)
    for name in NEW_BINARY:
        check(lambda a, b: getattr(np, name)(a, b), x, y)


@pytest.mark.parametrize("dtype", ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"])
def test_integer_fmod_edges(dtype):
    info = np.iinfo(dtype)
    vals = np.array([v for v in (info.min, info.min + 1, -7, -1, 0, 1, 3, 7, info.max)
                     if info.min <= v <= info.max], dtype)
    x, y = (a.ravel() for a in np.meshgrid(vals, vals))
    check(lambda a, b: np.fmod(a, b), x, y)           # x % 0 and MIN % -1 give 0, as NumPy
