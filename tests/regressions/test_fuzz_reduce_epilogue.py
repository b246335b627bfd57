"""Found by `kfuse fuzz --seed 1` (program 34): a full reduction (keepdims) whose result is
broadcast back over its own (cast) input wrote only element [0, 0]; the rest of the output was
uninitialised memory (kfuse/codegen/lower.py lowered the full-level tail of a reduce group with
outer=[] without its loops). Fixed in lower.py during the fuzzing session."""
import numpy as np

import kfuse
from tests.tolerance import assert_matches_numpy


def fuzz_fn(a0):
    v0 = a0.astype(np.uint8)
    v1 = a0.sum(keepdims=True)
    v2 = v1.clip(-4, None)
    return np.multiply(v0, v2)


def test_full_reduction_broadcast_back_over_cast_input():
    a0 = np.array([1] * 14 + [0] * 14, dtype=np.uint8).reshape((7, 4))
    expected = fuzz_fn(a0)
    for _ in range(2):
        assert_matches_numpy(kfuse.jit(fuzz_fn, backend="cpu")(a0), expected)
