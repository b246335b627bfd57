"""The GPU backends whose PTX the no-GPU codegen tests check: CUDA C always (NVRTC), Numba-CUDA
where numba-cuda imports (its PTX needs libNVVM, not a GPU)."""
import pytest

from kfuse.codegen.numba_cuda import numba_cuda_available

BACKENDS = ["cuda", pytest.param("numba-cuda", marks=pytest.mark.skipif(
    not numba_cuda_available()[0], reason="numba-cuda does not import"))]
