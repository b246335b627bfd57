"""Held rows whose passes share a costly value (codegen.cuda_rows value slots; skipped without a
GPU): a softcapped softmax, a log1p-standardised row and a plain softmax against NumPy, at rows
held in vectors, peeled (odd lengths) and element by element, with special values."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)

import cupy as cp  # noqa: E402

import kfuse  # noqa: E402
from tests.codegen.test_held_values import log1p_standardize, plain_softmax, softcap_softmax  # noqa: E402
from tolerance import assert_matches_numpy  # noqa: E402

RNG = np.random.default_rng(23)


@pytest.mark.parametrize("length", [2048, 2047, 1001, 4096])
@pytest.mark.parametrize("fn", [softcap_softmax, log1p_standardize, plain_softmax])
def test_held_values_match_numpy(fn, length):
    x = (RNG.standard_normal((67, length)) * 3).astype(np.float32)
    if fn is log1p_standardize:
        x = np.abs(x)
    x[3, 5] = np.nan
    x[4, 7] = np.inf
    f = kfuse.jit(fn, backend="cuda")
    with np.errstate(all="ignore"):
        want = fn(x)
        got = cp.asnumpy(f(cp.asarray(x)))
    entry = f._programs[f._key((cp.asarray(x),))]
    variants = [h[0].variant for lau in entry.program.launchers for h in lau._variants.values()]
    assert any(v.mode == "row" and v.cache_k for v in variants), variants
    assert_matches_numpy(got, want, reductions=True)
