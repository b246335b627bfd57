"""np.arcsinh/arccosh/arctanh/signbit/copysign/logaddexp/logaddexp2/heaviside/fmod compile on both
GPU backends without a GPU: each kernel's CUDA C (NVRTC) or Numba-CUDA source becomes PTX that
ptxas accepts for sm_90, for every register type (float16/bfloat16 in float32, float32, float64)
and integer fmod of signed, unsigned, narrow and 64-bit ints. The values are checked on a GPU by
``tests/ops/test_ufunc_special_values.py``."""
import numpy as np
import pytest

from tests.codegen.ptx_backends import compile_to_ptx


def special_ufuncs(x, y, i, j):
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


@pytest.mark.backends("cuda", "numba-cuda", emit_only=True)
@pytest.mark.parametrize("case", SPECS)
def test_special_ufuncs_compile_to_ptx(case, backend, tmp_path):
    f, i = SPECS[case]
    src = compile_to_ptx(special_ufuncs, backend, (f, f, i, i), tmp_path, case)
    if backend == "cuda":
        assert "asinh" in src and "kf_logaddexp2<" in src and "kf_fmod_i<" in src
    else:
        assert "ld.asinh" in src and "_logaddexp2_" in src and "ld.signbit" in src
        assert ("_uremainder(" if i.startswith("u") else "_sfmod(") in src
