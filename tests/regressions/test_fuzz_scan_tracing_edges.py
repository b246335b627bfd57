"""Found while writing the fuzzer's ``scan`` kind (kfuse/fuzz/gen_scan.py; docs/FUZZING.md 35):
NumPy scans a 0-d array as one of shape (1,) (``np.cumulative_sum(np.array(2.0))`` is ``[2.]``,
``np.cumsum(x, axis=0)`` and ``x.cumprod(-1)`` of a 0-d ``x`` too), and ``ufunc.accumulate`` takes
``axis=None`` (of a 1-D array) and a one-axis tuple. kfuse raised IndexError, AxisError and
TypeError (kfuse/trace/scans.py ``_flat_or_axis``, ``ufunc_accumulate``)."""
import numpy as np
import pytest

import kfuse

CASES = [
    ("np.cumulative_sum(x)", np.array(2.0)), ("np.cumulative_prod(x, include_initial=True)", np.array(2.0)),
    ("np.cumsum(x, axis=0)", np.array(2.0)), ("x.cumprod(-1)", np.array(2.0)),
    ("np.nancumsum(x, axis=0)", np.array(np.nan)), ("np.cumulative_sum(x, axis=0)", np.array(3)),
    ("np.add.accumulate(x, axis=None)", np.arange(3.0)),
    ("np.maximum.accumulate(x, axis=(1,))", np.arange(6.0).reshape(2, 3)),
]


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu),
                                     pytest.param("numba-cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("expr,arg", CASES, ids=[c[0] for c in CASES])
def test_scan_tracing_edges(expr, arg, backend, run_jit):
    fn = eval(f"lambda x: {expr}", {"np": np})
    want = fn(arg)
    got = run_jit(fn, backend, arg)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_numpy_errors_stay_numpy_errors():
    with pytest.raises(np.exceptions.AxisError, match="axis 1 is out of bounds"):
        kfuse.jit(lambda x: np.cumsum(x, axis=1))(np.array(2.0))
    with pytest.raises(ValueError, match="multiple axes"):
        kfuse.jit(lambda x: np.add.accumulate(x, axis=None))(np.zeros((2, 3)))
