"""Reshaped inputs read contiguously on the GPU (codegen.reshape_index; skipped without one):
GroupNorm over NCHW and a heads split, whose row kernels then take vector loads with their
per-channel weights read once a vector unit, against NumPy, at sizes where the weights' blocks
are and are not whole vectors, on contiguous inputs and on views where the run is not contiguous
(the decomposition kept)."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)

import cupy as cp  # noqa: E402

import kfuse  # noqa: E402
from tolerance import assert_matches_numpy  # noqa: E402

RNG = np.random.default_rng(5)


def groupnorm(x, g, b):
    n, c, h, w = x.shape
    xg = x.reshape(n, 8, c // 8 * h * w)
    mu = xg.mean(axis=-1, keepdims=True)
    var = xg.var(axis=-1, keepdims=True)
    y = ((xg - mu) / np.sqrt(var + 1e-5)).reshape(n, c, h, w)
    return y * g.reshape(1, c, 1, 1) + b.reshape(1, c, 1, 1)


def _vec(f, *args) -> int:
    """The widest vector width among the variants run for these arguments."""
    entry = f._programs[f._key(args)]
    ws = [h[0].variant.vec for lau in entry.program.launchers
          for child in [lau, *getattr(lau, "_children", {}).values()] for h in child._variants.values()]
    return max(ws + [1])


@pytest.mark.parametrize("shape,vectorised", [((4, 32, 16, 16), True), ((2, 64, 32, 32), True),
                                              ((3, 16, 5, 7), False), ((2, 24, 3, 2), False)])
def test_groupnorm(shape, vectorised):
    x = RNG.standard_normal(shape).astype(np.float32) * 3 + 1
    g, b = (RNG.standard_normal(shape[1]).astype(np.float32) for _ in range(2))
    f = kfuse.jit(groupnorm, backend="cuda")
    args = tuple(map(cp.asarray, (x, g, b)))
    got = f(*args)
    assert_matches_numpy(cp.asnumpy(got), groupnorm(x, g, b), reductions=True)
    assert (_vec(f, *args) > 1) == vectorised        # h * w a multiple of 4: whole vectors


def test_groupnorm_of_a_permuted_view_keeps_the_decomposition():
    base = RNG.standard_normal((2, 16, 8, 32)).astype(np.float32)
    x = np.swapaxes(base, 2, 3)                     # (h, w) not contiguous as a run
    g, b = np.ones(16, np.float32), np.zeros(16, np.float32)
    f = kfuse.jit(groupnorm, backend="cuda")
    xd = cp.swapaxes(cp.asarray(base), 2, 3)
    got = f(xd, cp.asarray(g), cp.asarray(b))
    assert_matches_numpy(cp.asnumpy(got), groupnorm(x, g, b), reductions=True)


def test_heads_split_and_offset_rows():
    def heads(x):
        b, t, hd = x.shape
        return np.exp(x.reshape(b * t, 4, hd // 4) - 1.0).sum(axis=-1)
    for shape in [(3, 7, 64), (2, 5, 36)]:
        x = RNG.standard_normal(shape).astype(np.float32)
        f = kfuse.jit(heads, backend="cuda")
        assert_matches_numpy(cp.asnumpy(f(cp.asarray(x))), heads(x), reductions=True)
        xs = RNG.standard_normal((shape[0], shape[1] + 1, shape[2])).astype(np.float32)
        view = cp.asarray(xs)[:, 1:]                # rows start one row in: the run still contiguous
        assert_matches_numpy(cp.asnumpy(f(view)), heads(xs[:, 1:]), reductions=True)
