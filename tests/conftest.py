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


@pytest.fixture
def run_jit(cupy_for):
    """``run_jit(fn, backend, *arrays)``: ``kfuse.jit(fn, backend=backend)`` called on ``arrays``
    (copied to the GPU for a GPU backend, a skip where ``backend`` cannot run), its results as NumPy
    arrays (a tuple stays a tuple)."""
    def run(fn, backend, *arrays):
        import kfuse
        import numpy as np
        f = kfuse.jit(fn, backend=backend)
        if backend == "cpu":
            out, host = f(*arrays), np.asarray
        else:
            cp = cupy_for(backend)
            out, host = f(*(cp.asarray(a) for a in arrays)), cp.asnumpy
        return tuple(host(o) for o in out) if isinstance(out, tuple) else host(out)
    return run
