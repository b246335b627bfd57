"""Found by `kfuse fuzz --seed 11` (program 3227, backend cpu): ``np.clip(uint64, -4, -3)`` raises
OverflowError in NumPy; kfuse clamped both bounds into the dtype and returned 0. NumPy accepts a
Python-int bound outside the dtype only where clipping to it is a no-op (a_min below the range,
a_max above it); kfuse/trace/elementwise.py ``clip`` now raises otherwise, like NumPy."""
import numpy as np
import pytest

import kfuse

A = np.array([2, 200], np.uint8)


@pytest.mark.parametrize("lo,hi", [(-4, 300), (-4, -3), (0, 300), (-4, 5), (300, 400), (5, -4),
                                   (None, -3), (-3, None)])
def test_clip_python_int_bounds_like_numpy(lo, hi):
    fn = lambda x: np.clip(x, lo, hi)  # noqa: E731
    try:
        expected = fn(A)
    except OverflowError as e:
        with pytest.raises(OverflowError, match=str(e)):
            kfuse.jit(fn, backend="cpu")(A)
        return
    np.testing.assert_array_equal(kfuse.jit(fn, backend="cpu")(A), expected)
