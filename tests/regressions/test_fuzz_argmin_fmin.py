"""Found by `kfuse fuzz --seed 2` (program 268): ``np.fmin`` of a float16 array with a broadcast
argmin result (int64 -> float16) gave 0.0 where NumPy gave the negative operand. Passed after the
concurrent lower.py changes of the same session; kept as a regression."""
import numpy as np

import kfuse
from tests.tolerance import assert_matches_numpy


def fuzz_fn(a0, a1, a2):
    v0 = a2.argmin(axis=0)
    v1 = np.isnan(v0)
    v3 = np.fmin(a1, v1)
    return (v3, v1)


def test_fmin_float16_with_broadcast_reduction_result():
    rng = np.random.default_rng(268)
    a0 = rng.integers(-127, 127, (5, 3)).astype(np.int8)
    a1 = np.round(rng.uniform(-8, 8, (5, 3)) * 4).astype(np.float16) / 4
    a2 = rng.integers(-127, 127, (5, 3)).astype(np.int8)
    expected = fuzz_fn(a0, a1, a2)
    actual = kfuse.jit(fuzz_fn, backend="cpu")(a0, a1, a2)
    for a, e in zip(actual, expected):
        assert_matches_numpy(a, e)
