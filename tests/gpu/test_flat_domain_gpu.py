"""Elementwise kernels over a flattened domain on the GPU (codegen.flat_domain; skipped without
one): odd widths (a bias over 4097 columns, an RGB image's 3 channels), float16 and uint8 inputs,
totals that are and are not whole vectors (the tail), a 3-D broadcast, and views whose strides
keep the kernel's own indices, against NumPy; the flat variant is the one that ran."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)

import cupy as cp  # noqa: E402

import kfuse  # noqa: E402
from tests.codegen.test_flat_domain import normalize, tanh_bias  # noqa: E402
from tolerance import assert_matches_numpy  # noqa: E402

RNG = np.random.default_rng(31)


def _tails(f, *args) -> list:
    entry = f._programs[f._key(args)]
    return [h[0].variant.tail for lau in entry.program.launchers for h in lau._variants.values()]


@pytest.mark.parametrize("shape,dtype", [((37, 41), np.float32), ((1021, 1023), np.float32), ((3, 4), np.float32),
                                         ((33, 35), np.float16), ((5, 6, 7), np.float32)])
def test_odd_widths_match_numpy(shape, dtype):
    x = RNG.standard_normal(shape).astype(dtype)
    b = RNG.standard_normal(shape[-1]).astype(dtype)
    f = kfuse.jit(tanh_bias, backend="cuda")
    args = (cp.asarray(x), cp.asarray(b))
    assert_matches_numpy(cp.asnumpy(f(*args)), tanh_bias(x, b))
    assert _tails(f, *args) == [x.size % (16 // x.itemsize) > 0]


@pytest.mark.parametrize("n", [1, 2, 5])
def test_image_normalisation_matches_numpy(n):
    img = RNG.integers(0, 256, (n, 17, 19, 3)).astype(np.uint8)
    mean, std = np.array([0.485, 0.456, 0.406], np.float32), np.array([0.229, 0.224, 0.225], np.float32)
    f = kfuse.jit(normalize, backend="cuda")
    assert_matches_numpy(cp.asnumpy(f(cp.asarray(img), cp.asarray(mean), cp.asarray(std))), normalize(img, mean, std))


def test_views_keep_their_indices():
    x = RNG.standard_normal((40, 42)).astype(np.float32)
    b = RNG.standard_normal(41).astype(np.float32)
    f = kfuse.jit(tanh_bias, backend="cuda")
    for sl in ((slice(None), slice(1, None)), (slice(1, None), slice(None, 41)), (slice(None, None, 2), slice(None, 41))):
        assert_matches_numpy(cp.asnumpy(f(cp.asarray(x)[sl], cp.asarray(b))), tanh_bias(x[sl], b))
