"""Reductions against NumPy: every function and method x dtypes x shapes x axis forms, dtype
arguments, ddof, keepdims, empty-reduction errors and AxisError."""
import numpy as np
import pytest
from numpy.exceptions import AxisError

from trace_checks import DTYPES, check, rand

SHAPES = [(), (0,), (3, 0), (0, 3), (5,), (2, 3), (2, 3, 4)]
AXES = [None, 0, -1, (0, 1), (), (-1, 0), 2, (0, 2)]
FUNCS = ["sum", "prod", "mean", "max", "min", "any", "all", "var", "std", "amax", "amin"]


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_reductions(name, dtype):
    fn = getattr(np, name)
    for shape in SHAPES:
        x = rand(shape, dtype, 4)
        for axis in AXES:
            for kd in (False, True):
                check(lambda a: fn(a, axis=axis, keepdims=kd), x, reductions=True)


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "max", "min", "any", "all", "var",
                                  "std", "argmax", "argmin"])
def test_methods(name):
    x = rand((3, 4), "f4", 1)
    check(lambda a: getattr(a, name)(), x, reductions=True)
    check(lambda a: getattr(a, name)(1), x, reductions=True)
    check(lambda a: getattr(a, name)(axis=0, keepdims=True), x, reductions=True)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_arg_reductions(name, dtype):
    fn = getattr(np, name)
    for shape in SHAPES:
        x = rand(shape, dtype, 6)
        for axis in (None, 0, -1, 1, 3):
            for kd in (False, True):
                check(lambda a: fn(a, axis=axis, keepdims=kd), x)


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "var", "std"])
@pytest.mark.parametrize("dtype", ["?", "i1", "u4", "f2", "f4"])
@pytest.mark.parametrize("out", ["f2", "f4", "f8", "i8", "u2"])
def test_dtype_argument(name, dtype, out):
    fn = getattr(np, name)
    check(lambda a: fn(a, axis=1, dtype=out), rand((3, 5), dtype, 7), reductions=True)


def test_ddof():
    x = rand((4, 5), "f8", 2)
    for ddof in (0, 1, 2, 5, 7, 1.5):
        check(lambda a: np.var(a, axis=1, ddof=ddof), x)
        check(lambda a: a.std(ddof=ddof), x)
    check(lambda a: np.std(a, correction=1), x)


def test_ufunc_reduce():
    x = rand((3, 4), "i2", 2)
    for uf in (np.add, np.multiply, np.maximum, np.minimum):
        check(lambda a: uf.reduce(a), x)
        check(lambda a: uf.reduce(a, axis=None, keepdims=True), x)
    check(lambda a: np.logical_and.reduce(a > 0, axis=1), x)


def test_empty_max_raises_like_numpy():
    for shape, axis in (((0,), None), ((3, 0), 1), ((3, 0), None), ((0, 3), 0)):
        x = np.zeros(shape, np.float32)
        for f in (np.max, np.min, np.argmax, np.argmin):
            check(lambda a: f(a, axis=axis), x)   # check() requires NumPy's ValueError
    with pytest.raises(ValueError, match=r"zero-size.*test_trace_reductions.py:\d+"):
        from kfuse.trace import trace_function
        from kfuse.ir.specs import ArraySpec
        trace_function(lambda a: a.max(), {"a": ArraySpec(np.dtype("f4"), (0,))})


def test_axis_errors():
    from kfuse.ir.specs import ArraySpec
    from kfuse.trace import trace_function
    for f in (lambda a: a.sum(axis=2), lambda a: np.mean(a, axis=-3), lambda a: a.argmax(axis=5),
              lambda a: a.squeeze(axis=4), lambda a: np.swapaxes(a, 0, 9)):
        with pytest.raises(AxisError, match="test_trace_reductions.py"):
            trace_function(f, {"a": ArraySpec(np.dtype("f4"), (2, 3))})
    with pytest.raises(ValueError, match="repeated axis"):
        trace_function(lambda a: a.sum(axis=(0, 0)), {"a": ArraySpec(np.dtype("f4"), (2, 3))})


def test_layernorm_softmax():
    def layernorm(x, g, b):
        mu = x.mean(axis=-1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * g + b

    def softmax(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    for dt in ("f2", "f4", "f8"):
        check(layernorm, rand((4, 16), dt, 1), rand((16,), dt, 2), rand((16,), dt, 3))
        check(softmax, rand((3, 7), dt, 1))


MASK = np.array([[True, False, True, True], [False, False, False, False], [True, True, False, True]])
WHERE_INITIAL = [
    lambda x: np.sum(x, axis=1, where=MASK), lambda x: np.sum(x, initial=3),
    lambda x: x.sum(0, where=MASK[0], initial=1.5), lambda x: np.prod(x, axis=1, where=MASK),
    lambda x: np.max(x, axis=1, initial=-100, where=MASK), lambda x: np.min(x, initial=0),
    lambda x: x.max(axis=0, initial=2), lambda x: np.mean(x, axis=1, where=MASK),
    lambda x: np.mean(x, where=MASK), lambda x: np.var(x, axis=1, where=MASK, ddof=1),
    lambda x: np.std(x, axis=0, where=MASK, keepdims=True), lambda x: np.any(x > 3, axis=1, where=MASK),
    lambda x: np.all(x, axis=1, where=MASK), lambda x: np.add.reduce(x, axis=1, where=MASK, initial=2),
    lambda x: np.maximum.reduce(x, axis=0, initial=0, where=MASK), lambda x: np.max(x[:0], axis=0, initial=7),
    lambda x: np.sum(-np.abs(x) * 0, axis=1, where=MASK),          # masked float sums start from +0.0
    lambda x: np.sum(x, where=x > 0),                               # a traced mask
    lambda x: np.max(x, axis=1, where=False, initial=5), lambda x: np.var(x, where=MASK, ddof=5),
    lambda x: np.max(x, where=MASK),                                # ValueError: no identity
    lambda x: np.max(x, initial=-1),                                # OverflowError for unsigned
    lambda x: np.sum(x, where=np.ones((2, 3), bool)),               # a mask that does not broadcast
]


@pytest.mark.parametrize("dtype", ["f4", "f8", "f2", "i2", "u1", "?"])
@pytest.mark.parametrize("i", range(len(WHERE_INITIAL)))
def test_where_and_initial_like_numpy(i, dtype):
    x = rand((3, 4), dtype, i)
    if dtype[0] == "f":
        x[0, 0] = -0.0
    check(WHERE_INITIAL[i], x, reductions=True)
