"""Every float32/float64 add, subtract and multiply reaches PTX rounded on its own (``.rn``, which
ptxas may not fuse) and no ``fma`` stands for ``a * b + c``, on both GPU backends (no GPU needed).

NumPy rounds each ufunc's result; an fma rounds ``a * b + c`` once. With contraction on (NVRTC's
``--fmad=true``, NVVM's default ``-fma=1``) ptxas fused ``x * x`` into a later subtraction of its own
rounded value: ``std(x * x)`` of one element was > 0 and ``where(std > 0, ...)`` took the wrong
side (fuzz seed 41 #3720, H200 2026-11-25). The values are checked on the GPU by
``tests/regressions/test_fuzz_gpu_fma_contraction.py``."""
import re

import numpy as np
import pytest

import kfuse

pytest.importorskip("cuda.bindings.nvrtc")

CONTRACTABLE = re.compile(r"^\s*(add|sub|mul)\.(f32|f64)\b", re.M)   # no rounding modifier
FMA = re.compile(r"^\s*fma\.rn\.(f32|f64)\b", re.M)


def multiply_add(a, b, c):
    return a * b + c, a * b - c * b


def std_of_square(a0, a1):
    return np.where(np.square(a0).std(keepdims=True) > 0, a1, -2)


@pytest.mark.backends("cuda", "numba-cuda", emit_only=True)
@pytest.mark.parametrize("fn, specs", [
    (multiply_add, ("f32[64,256]",) * 3),
    (multiply_add, ("f64[64,256]",) * 3),
    (std_of_square, ("f64[]", "u16[1]")),
    (std_of_square, ("f32[8,128]", "u16[1]")),
])
def test_float_arithmetic_rounds_each_op(fn, specs, backend):
    ptx = kfuse.jit(fn, backend=backend).lower(*specs).ptx("sm_90")
    assert ".entry" in ptx
    body = "\n".join(line for line in ptx.splitlines() if not line.lstrip().startswith("//"))
    assert not CONTRACTABLE.findall(body), f"{fn.__name__} on {backend}: ptxas may fuse these"
    if fn is multiply_add:
        assert not FMA.findall(body), f"{fn.__name__} on {backend}: a * b + c as one fma"
