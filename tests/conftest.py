"""Fixtures shared across the test directories."""
import pytest


@pytest.fixture
def cupy_for():
    """``cupy_for(backend)`` -> the cupy module, or a skip when this machine cannot run ``backend``
    (no GPU / CuPy, or numba-cuda not importable)."""
    def need(backend: str):
        from kfuse.runtime import device
        if not device.has_gpu():
            pytest.skip("no GPU")
        if backend == "numba-cuda":
            from kfuse.codegen import numba_cuda as nc
            ok, why = nc.numba_cuda_available()
            if not ok:
                pytest.skip(f"no numba-cuda: {why}")
        import cupy
        return cupy
    return need
