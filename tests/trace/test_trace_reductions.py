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
