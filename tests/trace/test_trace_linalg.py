"""matmul / @ / dot / inner / outer / tensordot / vecdot / matvec / vecmat against NumPy: vector
cases, batch broadcasting, N-D dot and inner, dtypes, errors of NumPy's types."""
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
        check(lambda a, b: np.dot(a, b), x, y, reductions=True)    # N-D: NumPy's own rules
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


# (function, shape of a, shape of b): each also run with the operands' dtypes below
CONTRACTIONS = [
    (lambda a, b: np.dot(a, b), (2, 3, 4), (5, 4, 2)),
    (lambda a, b: np.dot(a, b), (4,), (5, 4, 2)),
    (lambda a, b: np.dot(a, b), (2, 3, 4), (4,)),
    (lambda a, b: np.dot(a, b), (3, 4), (2, 4, 6)),
    (lambda a, b: np.dot(a, b), (2, 0, 4), (5, 4, 2)),
    (lambda a, b: np.dot(a, b), (2, 3, 0), (5, 0, 2)),
    (lambda a, b: np.inner(a, b), (2, 3, 4), (5, 4)),
    (lambda a, b: np.inner(a, b), (3, 4), (4,)),
    (lambda a, b: np.inner(a, b), (4,), (2, 3, 4)),
    (lambda a, b: np.tensordot(a, b), (2, 3, 4), (3, 4, 5)),
    (lambda a, b: np.tensordot(a, b, 0), (2, 3), (4,)),
    (lambda a, b: np.tensordot(a, b, -1), (2, 3), (4,)),
    (lambda a, b: np.tensordot(a, b, 0), (), (3,)),
    (lambda a, b: np.tensordot(a, b, ([0, 2], [2, 0])), (2, 3, 4), (4, 5, 2)),
    (lambda a, b: np.tensordot(a, b, axes=(1, 0)), (2, 3), (3, 4)),
    (lambda a, b: np.tensordot(a.T, b[::-1], 1), (4, 3, 2), (4, 5)),
    (lambda a, b: np.vecdot(a, b), (2, 3, 4), (3, 4)),
    (lambda a, b: np.vecdot(a, b, axis=0), (4, 3), (4, 1)),
    (lambda a, b: np.matvec(a, b), (2, 3, 4), (4,)),
    (lambda a, b: np.matvec(a, b), (3, 4), (5, 1, 4)),
    (lambda a, b: np.vecmat(a, b), (3,), (2, 3, 4)),
    (lambda a, b: np.vecmat(a, b), (2, 1, 3), (3, 4)),
]


@pytest.mark.parametrize("dta,dtb", [("f8", "f8"), ("f4", "f4"), ("i2", "i2"), ("u1", "i1"), ("i1", "f2")])
@pytest.mark.parametrize("i", range(len(CONTRACTIONS)))
def test_contractions(i, dta, dtb):
    fn, sa, sb = CONTRACTIONS[i]
    check(fn, rand(sa, dta, 1), rand(sb, dtb, 2), reductions=True)


@pytest.mark.parametrize("fn,sa,sb", [
    (lambda a, b: np.dot(a, b), (2, 3, 4), (5, 3, 2)),
    (lambda a, b: np.inner(a, b), (2, 3), (2, 4, 5)),
    (lambda a, b: np.tensordot(a, b), (2, 3), (4, 3)),
    (lambda a, b: np.tensordot(a, b, 3), (2, 3), (2, 3)),           # IndexError, as NumPy's
    (lambda a, b: np.tensordot(a, b, ([5], [0])), (2, 3), (2, 2)),
    (lambda a, b: np.tensordot(a, b, ([0, 0], [0, 1])), (2, 3), (2, 2)),
    (lambda a, b: np.tensordot(a, b, 1.5), (2, 3), (3, 2)),
    (lambda a, b: np.vecdot(a, b), (3,), (4,)),
    (lambda a, b: np.vecdot(a, b, axis=2), (2, 3), (2, 3)),
    (lambda a, b: np.matvec(a, b), (3,), (3,)),
    (lambda a, b: np.matvec(a, b), (3, 4), (3,)),
    (lambda a, b: np.vecmat(a, b), (3,), (4, 3)),
])
def test_contraction_errors_like_numpy(fn, sa, sb):
    with pytest.raises(Exception):     # the case must be one NumPy refuses
        fn(rand(sa, "f4"), rand(sb, "f4"))
    check(fn, rand(sa, "f4"), rand(sb, "f4"))
