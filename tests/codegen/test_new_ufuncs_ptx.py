"""np.arcsinh/arccosh/arctanh/signbit/copysign/logaddexp/logaddexp2/heaviside/fmod compile on both
GPU backends without a GPU: each kernel's CUDA C (NVRTC) or Numba-CUDA source becomes PTX that
ptxas accepts for sm_90, for every register type (float16/bfloat16 in float32, float32, float64)
and integer fmod of signed, unsigned, narrow and 64-bit ints. The values are checked on a GPU by
``tests/runtime/test_new_ufuncs_jit.py``."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import kfuse
from tests.codegen.ptx_backends import BACKENDS

PTXAS = shutil.which("ptxas") or ("/usr/local/bin/ptxas" if os.path.exists("/usr/local/bin/ptxas") else None)


def new_ufuncs(x, y, i, j):
    return (np.arcsinh(x), np.arccosh(x), np.arctanh(x), np.signbit(x), np.copysign(x, y),
            np.logaddexp(x, y), np.logaddexp2(x, y), np.heaviside(x, y), np.fmod(x, y),
            np.fmod(i, j), np.signbit(i))


SPECS = {      # float operands, integer operands
    "f16-i8": ("f16[256]", "i8[256]"),
    "f32-u16": ("f32[256]", "u16[256]"),
    "f64-i64": ("f64[256]", "i64[256]"),
    "f32-u64": ("f32[256]", "u64[256]"),
    "bf16-i32": ("bf16[256]", "i32[256]"),      # bfloat16: the CUDA C backend only
}


def _ptxas(ptx: str, path) -> None:
    from kfuse.codegen.nvrtc import ptx_for_ptxas
    path.write_text(ptx_for_ptxas(ptx))
    r = subprocess.run([PTXAS, "-arch=sm_90", str(path), "-o", os.devnull], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", SPECS)
def test_new_ufuncs_compile_to_ptx(case, backend, tmp_path):
    pytest.importorskip("cuda.bindings.nvrtc")
    if backend == "numba-cuda" and case.startswith("bf16"):
        pytest.skip("bfloat16 runs on the CUDA C backend only")
    f, i = SPECS[case]
    lowered = kfuse.jit(new_ufuncs, backend=backend).lower(f, f, i, i)
    kernels = lowered.kernels(for_gpu=True)
    if backend == "cuda":
        from kfuse.codegen import cuda, nvrtc
        src = "\n".join(cuda.emit(k) for k in kernels)
        assert "asinh" in src and "kf_logaddexp2<" in src and "kf_fmod_i<" in src
        ptxs = [nvrtc.compile(cuda.emit(k), arch="sm_90").ptx for k in kernels]
    else:
        from kfuse.codegen import numba_cuda
        src = "\n".join(numba_cuda.emit(k) for k in kernels)
        assert "ld.asinh" in src and "_logaddexp2_" in src and "ld.signbit" in src
        assert ("_uremainder(" if i.startswith("u") else "_sfmod(") in src
        ptxs = [numba_cuda.compile_ptx(numba_cuda.emit(k), arch="sm_90") for k in kernels]
    for k, ptx in enumerate(ptxs):
        assert ".entry" in ptx
        if PTXAS:
            _ptxas(ptx, tmp_path / f"{case}_{k}.ptx")
