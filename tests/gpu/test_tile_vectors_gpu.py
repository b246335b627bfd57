"""Transposed operands through shared-memory tiles with vector accesses (codegen.cuda_tile2d
``tile2d_vec``; skipped without a GPU): whole-vector extents in float32, float16 and int8, a 3-D
permute, and views whose offsets or extents are not whole vectors (the scalar tiles), against
NumPy; the vector width the launcher chose."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = [pytest.mark.gpu, pytest.mark.backends("cuda", "numba-cuda")]   # the same schedule, both emitters
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)

import cupy as cp  # noqa: E402

import kfuse  # noqa: E402
from tolerance import assert_matches_numpy  # noqa: E402

RNG = np.random.default_rng(37)


def exp_t(x, y):
    return np.exp(x.T) + y


def add_t(x, y):
    return x.T + y * 2


def _vec(f, *args) -> int:
    entry = f._programs[f._key(args)]
    infos = [getattr(h[0], "variant", h[0]) for lau in entry.program.launchers for h in lau._variants.values()]
    assert any(v.mode == "tile" for v in infos), infos
    return max(v.vec for v in infos)


@pytest.mark.parametrize("dtype,fn,vec", [(np.float32, exp_t, 4), (np.float16, exp_t, 8), (np.int8, add_t, 16)])
@pytest.mark.parametrize("shape", [(512, 256), (320, 192)])
def test_vector_tiles_match_numpy(dtype, fn, vec, shape, backend):
    x = (RNG.standard_normal(shape) * 3).astype(dtype)
    y = (RNG.standard_normal(shape[::-1]) * 3).astype(dtype)
    f = kfuse.jit(fn, backend=backend)
    args = (cp.asarray(x), cp.asarray(y))
    with np.errstate(all="ignore"):
        want = fn(x, y)
    assert_matches_numpy(cp.asnumpy(f(*args)), want)
    assert _vec(f, *args) == vec


def test_permute_3d_matches_numpy(backend):
    x = RNG.standard_normal((4, 96, 128)).astype(np.float32)
    y = RNG.standard_normal((4, 128, 96)).astype(np.float32)
    f = kfuse.jit(lambda a, b: np.transpose(a, (0, 2, 1)) * 0.5 + b, backend=backend)
    assert_matches_numpy(cp.asnumpy(f(cp.asarray(x), cp.asarray(y))), np.transpose(x, (0, 2, 1)) * 0.5 + y)


@pytest.mark.parametrize("sl", [(slice(1, None), slice(None)), (slice(None), slice(2, 258)), (slice(None, 510), slice(None, 255))])
def test_views_match_numpy(sl, backend):
    x = RNG.standard_normal((512, 260)).astype(np.float32)
    xs = x[sl]
    y = RNG.standard_normal(xs.shape[::-1]).astype(np.float32)
    f = kfuse.jit(exp_t, backend=backend)
    assert_matches_numpy(cp.asnumpy(f(cp.asarray(x)[sl], cp.asarray(y))), exp_t(xs, y))
