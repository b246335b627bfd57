"""Fixtures shared across the test directories, and the parallel run.

With pytest-xdist installed (the ``test`` extra) and no ``-n`` given, the suite runs on every core
(``-n auto``), each test file whole on one worker (``--dist loadfile``: a file's tests keep their
order and share their module fixtures). Without xdist, or with ``-n 0`` / ``-p no:xdist``, it runs
in one process as before. kfuse's disk cache is safe under concurrent processes; tests that need
an empty one make their own (``tests/cache/conftest.py``).
"""
import os

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return
    opt = config.option
    if (getattr(opt, "numprocesses", 0) is not None or getattr(opt, "dist", "no") != "no"
            or opt.collectonly or opt.usepdb or os.environ.get("PYTEST_XDIST_WORKER")):
        return
    opt.numprocesses, opt.dist = "auto", "loadfile"


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
