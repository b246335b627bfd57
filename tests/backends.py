"""The backends a test runs on, and moving its arrays to and from a backend's device.

``tests/conftest.py`` turns :func:`params` into the ``backend`` fixture: every test that takes
``backend`` runs once per backend (cpu, cuda, numba-cuda), the GPU ones marked ``gpu`` and skipped
cleanly where this machine cannot run them. A test or module narrows the list with
``@pytest.mark.backends("cuda", "numba-cuda")``; ``emit_only=True`` says the test only generates and
compiles code (PTX through NVRTC or libNVVM), so it needs no GPU and is not marked ``gpu``."""
from __future__ import annotations

import sys

import numpy as np
import pytest

NAMES = ("cpu", "cuda", "numba-cuda")


def numba_cuda_missing() -> str | None:
    """Why numba-cuda cannot compile here, or None."""
    from kfuse.codegen.numba_cuda import numba_cuda_available
    ok, why = numba_cuda_available()
    return None if ok else f"no numba-cuda: {why}"


def gpu_missing(backend: str) -> str | None:
    """Why ``backend`` cannot run on this machine, or None (the CPU always can)."""
    if backend == "cpu":
        return None
    from kfuse.runtime import device
    if not device.has_gpu():
        return "no GPU"
    return numba_cuda_missing() if backend == "numba-cuda" else None


def params(names=NAMES, *, emit_only: bool = False) -> list:
    """``pytest.param`` per backend name: ``gpu``-marked for a GPU backend that runs kernels; for
    ``emit_only`` tests, numba-cuda is skipped where it does not import (its PTX needs libNVVM)."""
    out = []
    for name in names:
        if name not in NAMES:
            raise ValueError(f"unknown backend {name!r}; expected one of {NAMES}")
        if emit_only:
            marks = [pytest.mark.skipif(name == "numba-cuda" and numba_cuda_missing() is not None,
                                        reason="numba-cuda does not import")]
        else:
            marks = [] if name == "cpu" else [pytest.mark.gpu]
        out.append(pytest.param(name, id=name, marks=marks))
    return out


def to_device(backend: str, *arrays):
    """``arrays`` on ``backend``'s device (CuPy arrays for a GPU backend; NumPy ones as they are
    on the CPU): a tuple, one per array."""
    if backend == "cpu":
        return arrays
    import cupy
    return tuple(cupy.asarray(a) for a in arrays)


def to_host(out):
    """``out`` (an array, a scalar, or a tuple/list of them) as NumPy arrays: a CuPy array is copied
    back, a tuple stays a tuple."""
    if isinstance(out, (tuple, list)):
        return type(out)(to_host(o) for o in out)
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(out, cupy.ndarray):
        return cupy.asnumpy(out)
    return np.asarray(out)


def jit_on(fn, backend: str, *arrays):
    """``kfuse.jit(fn, backend=backend)`` called on ``arrays`` moved to the backend's device, its
    results back on the host (:func:`to_host`)."""
    import kfuse
    return to_host(kfuse.jit(fn, backend=backend)(*to_device(backend, *arrays)))


def jit_and_numpy(fn, backend: str, *arrays):
    """(kfuse's results on ``backend``, NumPy's), NumPy's with its floating-point warnings off."""
    got = jit_on(fn, backend, *arrays)
    with np.errstate(all="ignore"):
        return got, fn(*arrays)
