"""Open bug (fuzz seed 35 #3382; H100/H200, 2026-11-24): a wrapped int8/int16 value is read back
unwrapped on the GPU when a later op widens or compares it. ``-x`` of int16 -32768 is -32768 in
NumPy, and ``(-x) // x`` is 1; both GPU backends give -1 (ptxas negates the sign-extended value in
32 bits). Details: ``benchmarks/gpu-2026-11-24/seventh/fuzz/int16_negation_probe.md``. The CPU
case must pass; the GPU cases are strict xfails, so a fix (or a toolchain that gets it right)
shows up as XPASS and the marks come off."""
import numpy as np
import pytest

import kfuse


def neg_then_divide(x):
    return (-x) // np.where(x == 0, np.array(3, x.dtype), x), (-x) > 0


def _check(backend, xp=np, to_host=np.asarray):
    x = np.array([-32768, -32767, -1, 0, 1, 32767], np.int16)
    want = neg_then_divide(x)
    got = kfuse.jit(neg_then_divide, backend=backend)(xp.asarray(x))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(to_host(g), w)


def test_cpu():
    _check("cpu")


@pytest.mark.gpu
@pytest.mark.xfail(strict=True, reason="open: GPU int16 wrap-around read back unwrapped (seed 35 #3382)")
@pytest.mark.parametrize("backend", ["cuda", "numba-cuda"])
def test_gpu(backend, cupy_for):
    cupy = cupy_for(backend)
    _check(backend, cupy, cupy.asnumpy)
