"""codegen.accs: the accumulators' combine written once. The rule's values on NumPy's edge values
(NaN sticks, equal values keep the running one), the Numba-CUDA and CPU renderings evaluated as
Python, and the CPU backend against NumPy's float16 reduce loop bit for bit (its scalar loop keeps
the running value on equal values, as the rule does)."""
import itertools

import numpy as np
import pytest

import kfuse
from kfuse.codegen import accs
from kfuse.codegen.cpu import CpuOps
from kfuse.codegen.numba_cuda_ops import CudaOps
from kfuse.codegen.py_ops import literal

VALUES = (-0.0, 0.0, 1.0, -1.0, float("inf"), float("nan"))
FLOATS = ("float16", "float32", "float64")


def _eval(ops_cls, kind, dt, running, value):
    """The combine as the dialect renders it, evaluated on NumPy scalars (float16 in float32)."""
    helpers = {}
    expr = accs.nested(accs.combine_ops(kind, dt, "r", "v", dt), ops_cls(lambda h: helpers.setdefault(h, h)).op_expr,
                       literal)
    vt = np.float32 if dt == "float16" else np.dtype(dt).type
    assert not helpers or set(helpers) <= {"_rf16f"}
    env = {"np": np, "r": vt(running), "v": vt(value), "_rf16f": lambda x: np.float32(np.float16(x))}
    with np.errstate(all="ignore"):
        return np.dtype(dt).type(eval(expr, env))


@pytest.mark.parametrize("ops_cls", [CpuOps, CudaOps])
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("kind", ["max", "min"])
def test_max_min_rule(ops_cls, dt, kind):
    for r, v in itertools.product(VALUES, VALUES):
        got = _eval(ops_cls, kind, dt, r, v)
        if np.isnan(r) or np.isnan(v):
            assert np.isnan(got), (kind, dt, r, v)
        elif r == v:
            assert np.signbit(got) == np.signbit(r), (kind, dt, r, v)     # the running value stays
        else:
            assert got == (max if kind == "max" else min)(r, v), (kind, dt, r, v)


@pytest.mark.parametrize("ops_cls", [CpuOps, CudaOps])
def test_sum_prod_wrap_and_any_all(ops_cls):
    big = np.iinfo(np.int64).max
    assert _eval(ops_cls, "sum", "int64", big, 1) == np.iinfo(np.int64).min
    assert _eval(ops_cls, "prod", "int64", 2 ** 62, 4) == 0
    assert _eval(ops_cls, "sum", "float64", 0.5, 0.25) == 0.75


def test_cpu_float16_reduce_matches_numpy_bit_for_bit():
    rows = [[-0.0, 0.0, -1.0], [0.0, -0.0, -2.0], [1.0, np.nan, 2.0], [-np.inf, -0.0, -0.0],
            [3.0, 3.0, -np.inf], [np.nan, 1.0, 0.0]]
    x = np.array(rows, np.float16)
    got = kfuse.jit(lambda a: (a.max(axis=1), a.min(axis=1)), backend="cpu")(x)
    for g, w in zip(got, (x.max(axis=1), x.min(axis=1))):
        assert np.array_equal(g.view(np.uint16), w.view(np.uint16)), (g, w)
