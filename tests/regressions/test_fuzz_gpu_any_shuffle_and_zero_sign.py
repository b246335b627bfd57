"""Found by `kfuse fuzz --backend cuda --seed 21` (programs 59, 159) and `--backend numba-cuda
--seed 22` (programs 958, 1775) on an H200, 2026-11-22.

1. any/all reductions hung the GPU: the CUDA C warp reduce was ``A = (A || kf_shfl(A, m))``; a
   lane whose A was already true skipped ``__shfl_xor_sync`` (short-circuit), and a full-mask
   shuffle that not every lane reaches never completes. kfuse/codegen/cuda.py now shuffles into a
   temporary first.
2. A 0-d -0.0 reached the GPU as +0.0: ``cupy.asarray`` of a 0-d array fills it, and CuPy's fill
   uses memset for any value == 0. kfuse.runtime.interop.host_to_device (used for scalars and
   constant outputs) and the fuzzer's inputs copy through a one-element 1-D array instead."""
import numpy as np
import pytest

import kfuse
from kfuse.codegen import cuda as cuda_emit
from kfuse.codegen.lower import lower_group


def test_cuda_warp_reduce_shuffles_before_combining():
    jf = kfuse.jit(lambda x: (x > 0).any(axis=-1), backend="cuda")
    plan = jf.lower(np.zeros((4, 64), np.float32)).plan
    src = cuda_emit.emit(lower_group(plan.groups[0]))
    assert "kf_shfl" in src
    assert "|| kf_shfl" not in src and "&& kf_shfl" not in src


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "numba-cuda"])
def test_gpu_any_all_with_mixed_lanes(backend, cupy_for):
    cupy = cupy_for(backend)
    x = (np.arange(3 * 100).reshape(3, 100) % 7 == 0).astype(np.float32)
    fn = lambda a: ((a > 0).any(axis=-1), (a > 0).all(axis=-1), (a == 0).any(), np.any(a, axis=0))  # noqa: E731
    for got, exp in zip(kfuse.jit(fn, backend=backend)(cupy.asarray(x)), fn(x)):
        np.testing.assert_array_equal(cupy.asnumpy(got), exp)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "numba-cuda"])
def test_gpu_negative_zero_scalars_keep_their_sign(backend, cupy_for):
    cupy = cupy_for(backend)
    from kfuse.runtime.interop import host_to_device
    for dt in (np.float16, np.float32, np.float64):
        assert np.signbit(cupy.asnumpy(host_to_device(np.array(-0.0, dt))))
        got = kfuse.jit(lambda a, s: a * s, backend=backend)(cupy.ones(3, dt), -0.0)
        assert np.signbit(cupy.asnumpy(got)).all()
