"""Short rows on the GPU (runtime.cuda: packed rows, a thread a row up to 8 vector units, a warp a
row from 33 to 128; skipped without a GPU): sums, a softmax and an argmax over rows of every width
class, odd and even, against NumPy."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = [pytest.mark.gpu, pytest.mark.backends("cuda", "numba-cuda")]   # the same schedule, both emitters
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)

import cupy as cp  # noqa: E402

import kfuse  # noqa: E402
from tolerance import assert_matches_numpy  # noqa: E402

RNG = np.random.default_rng(29)


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("width", [1, 3, 7, 8, 9, 16, 31, 33, 64, 100, 127, 129, 512, 515])
@pytest.mark.parametrize("fn", [lambda x: x.sum(-1), softmax, lambda x: np.argmax(x, -1)], ids=["sum", "softmax", "argmax"])
def test_short_rows_match_numpy(fn, width, backend):
    x = RNG.standard_normal((1531, width)).astype(np.float32)
    got = kfuse.jit(fn, backend=backend)(cp.asarray(x))
    assert_matches_numpy(cp.asnumpy(got), fn(x), reductions=True)
