"""Two GPU mismatches from `kfuse fuzz --backend cuda --n 300 --seed 1` (H200, 2026-11-21).

* program 3: ``np.arctan2(f16, f16).astype(np.float64)`` was off by ~3e-4. Both GPU emitters keep
  float16 values unrounded in float32 registers; an explicit CAST to float64 widened the
  unrounded float32 value, so the float16 rounding NumPy does was lost (not a libm ulp issue).
  Fix: a CAST out of float16 rounds to float16 first (codegen/cuda.py ``cast_expr``,
  codegen/numba_cuda.py ``cast``).
* program 12: ``np.any(v, axis=0)`` over a (0,)-shaped domain returned garbage: the runtimes
  skipped the launch when *any* output was empty (here the full-level output of shape (0,)), so
  the reduction's identity (False) was never written to the 0-d output.
  Fix: launch unless *every* output is empty (runtime/cuda.py, runtime/numba_cuda.py).

The text/launch checks run on the CPU; the numeric checks are marked ``gpu``.
"""
import re

import numpy as np
import pytest

import kfuse
from kfuse.ir.specs import ArraySpec


def prog3(a0):
    v0 = np.fabs(a0)
    v1 = v0 == a0
    v3 = np.arctan2(v0, v0).astype(np.float64)
    return np.where(v1, v3, v3), v1


def prog12(a0, a1):
    v0 = np.where(a0 > 0, a0, a1)
    v2 = np.float_power(v0, a1) < v0
    return np.any(v2, axis=0), v0


def f16_widen(h):
    return np.arctan2(h, h + 1).astype(np.float64) + h.astype(np.float32)


def test_cuda_cast_out_of_f16_rounds_first():
    src = kfuse.jit(prog3).lower(ArraySpec(np.uint8, ()), backend="cuda").as_text("cuda")
    _widened_values_are_rounded(src)
    _widened_values_are_rounded(kfuse.jit(f16_widen).lower(ArraySpec(np.float16, (8,)), backend="cuda").as_text("cuda"))


def _widened_values_are_rounded(src):
    """Each float16 value widened to float64 is rounded: ``(double)`` of a rounding expression, or
    of a value declared from its float16 bits (``const float v = kf_h2f(v_h)``, codegen.cuda_lowp)."""
    body = src[src.index("extern \"C\" __global__"):]          # (the prelude's own doubles aside)
    widened = re.findall(r"\(\(double\)(kf_h2f\(kf_f2h\(|v\d+\))", body)
    assert widened, body
    for w in widened:
        assert w.startswith("kf_h2f") or f"const float {w[:-1]} = kf_h2f({w[:-1]}_h);" in body, (w, body)


def test_numba_cuda_cast_out_of_f16_rounds_first():
    from kfuse.codegen import numba_cuda as nc
    ok, why = nc.numba_cuda_available()
    if not ok:
        pytest.skip(why)
    src = kfuse.jit(prog3).lower(ArraySpec(np.uint8, ()), backend="numba-cuda").as_text("numba")
    assert "np.float64(np.float32(np.float16(" in src


class _Arr:
    def __init__(self, shape):
        self.shape, self.size, self.strides, self.itemsize = shape, int(np.prod(shape)), (), 1


@pytest.mark.parametrize("rt", ["cuda", "numba_cuda"])
def test_reduction_over_empty_axis_still_launches(rt, monkeypatch):
    import importlib
    import types
    mod = importlib.import_module(f"kfuse.runtime.{rt}")
    calls = []
    launcher = object.__new__(mod._Launcher)
    launcher.sizes = ()
    launcher.kir = types.SimpleNamespace(init_from=())  # (no scatter: no base to start from)
    func = lambda grid, block, args: calls.append(grid)  # noqa: E731
    stub = (None, func, (1,), (32,), (), None)     # both runtimes share LauncherBase.__call__
    monkeypatch.setattr(launcher, "choose", lambda i, o, p: stub, raising=False)
    launcher([_Arr((0,))], [_Arr((0,)), _Arr(())], {})          # the 0-d any() output is not empty
    assert len(calls) == 1
    launcher([_Arr((0,))], [_Arr((0,))], {})                    # every output empty: no launch
    assert len(calls) == 1


def _gpu_check(backend, fn, *arrays):
    from kfuse.runtime import device
    if not device.has_gpu():
        pytest.skip("no CUDA GPU / CuPy")
    if backend == "numba-cuda":
        from kfuse.codegen import numba_cuda as nc
        ok, why = nc.numba_cuda_available()
        if not ok:
            pytest.skip(why)
    import cupy as cp
    import sys, os
    sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
    from tolerance import assert_matches_numpy
    got = kfuse.jit(fn, backend=backend)(*(cp.asarray(a) for a in arrays))
    with np.errstate(all="ignore"):
        exp = fn(*arrays)
    return [cp.asnumpy(g) for g in got], exp, assert_matches_numpy


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "numba-cuda"])
def test_gpu_numeric(backend):
    for fn, args in ((prog3, [np.array(33, dtype=np.uint8)]),
                     (prog12, [np.zeros((0,), np.float16), np.zeros((0,), np.bool_)])):
        got, exp, check = _gpu_check(backend, fn, *args)
        for g, e in zip(got, exp):
            check(g, np.asarray(e))             # exact here: atan2(33, 33) is pi/4 in any libm
    h = np.linspace(-3, 3, 64).astype(np.float16)
    (got,), _, check = _gpu_check(backend, lambda h: (f16_widen(h),), h)
    # f16 chains run in f32 on the GPU (h + 1 unrounded): float16-level agreement, and the
    # widened arctan2 term is exactly a float16 value
    g2, _, _ = _gpu_check(backend, lambda h: (np.arctan2(h, h + 1).astype(np.float64),), h)
    np.testing.assert_array_equal(g2[0], g2[0].astype(np.float16).astype(np.float64))
    check(got.astype(np.float16), f16_widen(h).astype(np.float16))
