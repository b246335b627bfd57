"""NumPy arrays made inside a traced function (np.zeros, np.ones, np.full, or any array whose
elements all have one bit pattern) are embedded as a broadcast constant of their own dtype and
shape; any other array constant is refused with the user's line (test_trace_errors.py)."""
import numpy as np
import pytest

from trace_checks import check, rand

FNS = [
    lambda x: x + np.ones(x.shape[-1]),                      # float64 array: promotes like NumPy
    lambda x: np.zeros((3, 4), np.int8) * x,
    lambda x: x * np.full((2, 1, 4), -0.0),                  # the sign of a zero is kept
    lambda x: np.maximum(x, np.full(4, np.nan, np.float32)),
    lambda x: x + np.zeros((0, 1, 4)),                       # empty
    lambda x: np.ones(4, bool) & (x > 1),
    lambda x: np.where(x > 0, np.ones((3, 4)) * 7, x),
    lambda x: np.zeros_like(np.empty((3, 4))) - x,
    lambda x: x + np.float16(2) * np.ones((1, 4), np.float16),
]


@pytest.mark.parametrize("dtype", ["f4", "f2", "i4", "u1"])
@pytest.mark.parametrize("i", range(len(FNS)))
def test_uniform_array_constants_match_numpy(i, dtype):
    check(FNS[i], rand((3, 4), dtype, i))
