"""matmul / @ / dot / inner / outer against NumPy: vector cases, batch broadcasting, dtypes."""
import numpy as np
import pytest

from trace_checks import DTYPES, check, rand

CASES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
         ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)), ((1, 2, 3), (4, 3, 2)), ((0, 3), (3, 2)),
         ((2, 0), (0, 3)), ((4,), (2, 4, 3)), ((2, 1, 2, 3), (3, 3, 2))]


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != np.bool_], ids=str)
def test_matmul(dtype):
    for sa, sb in CASES:
        x, y = rand(sa, dtype, 1), rand(sb, dtype, 2)
        check(lambda a, b: a @ b, x, y, reductions=True)
        check(lambda a, b: np.matmul(a, b), x, y, reductions=True)
        if len(sa) <= 2 and len(sb) <= 2:
            check(lambda a, b: np.dot(a, b), x, y, reductions=True)
            check(lambda a, b: a.dot(b), x, y, reductions=True)


@pytest.mark.parametrize("dta,dtb", [("f4", "f8"), ("i1", "f2"), ("u1", "i1"), ("f2", "f4")])
def test_matmul_mixed_dtypes(dta, dtb):
    check(lambda a, b: a @ b, rand((2, 3), dta), rand((3, 4), dtb), reductions=True)


def test_matmul_errors_like_numpy():
    for sa, sb in (((2, 3), (4, 2)), ((3,), (4,)), ((2, 2, 3), (3, 3, 2)), ((), (3,))):
        check(lambda a, b: a @ b, rand(sa, "f4"), rand(sb, "f4"))
    check(lambda a, b: np.dot(a, b), rand((2, 3), "f4"), rand((2, 3), "f4"))


def test_dot_inner_outer_vdot():
    x, y = rand((4,), "f8", 1), rand((4,), "f8", 2)
    for f in (np.dot, np.inner, np.outer, np.vdot):
        check(lambda a, b: f(a, b), x, y)
    check(lambda a, b: np.dot(a, 2.0), x, y)
    check(lambda a, b: np.dot(3, b), x, y)


def test_mlp_like():
    def mlp(x, w1, b1, w2):
        h = np.maximum(x @ w1 + b1, 0)
        return np.tanh(h) @ w2
    check(mlp, rand((5, 8), "f4"), rand((8, 16), "f4"), rand((16,), "f4"), rand((16, 3), "f4"),
          reductions=True)
