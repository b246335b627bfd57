"""np.gcd/lcm/bitwise_count and np.ldexp compile on both GPU backends without a GPU: each kernel's
CUDA C (NVRTC) or Numba-CUDA source becomes PTX that ptxas accepts for sm_90, for signed,
unsigned, narrow and 64-bit ints (gcd/lcm in 32-bit or 64-bit unsigned arithmetic, popcount), and
ldexp of every register type with int32 and int64 exponents (the int64 one clamped to int's range).
The values are checked on a GPU by ``tests/ops/test_exact_int_ufuncs.py``."""
import numpy as np
import pytest

from tests.codegen.ptx_backends import compile_to_ptx


def int_ldexp_ufuncs(x, i, j, e):
    return (np.gcd(i, j), np.lcm(i, j), np.bitwise_count(i), np.ldexp(x, e), np.ldexp(x, i))


def int_ldexp_ufuncs_u64(x, i, j, e):       # np.ldexp has no uint64-exponent loop
    return (np.gcd(i, j), np.lcm(i, j), np.bitwise_count(i), np.ldexp(x, e))


SPECS = {      # float operand, integer operands, exponent
    "f16-i8-i32": ("f16[256]", "i8[256]", "i32[256]"),
    "f32-u16-i64": ("f32[256]", "u16[256]", "i64[256]"),
    "f64-i64-i64": ("f64[256]", "i64[256]", "i64[256]"),
    "f32-u64-i8": ("f32[256]", "u64[256]", "i8[256]"),
    "bf16-i32-i32": ("bf16[256]", "i32[256]", "i32[256]"),  # bfloat16: the CUDA C backend only
}


@pytest.mark.backends("cuda", "numba-cuda", emit_only=True)
@pytest.mark.parametrize("case", SPECS)
def test_int_ldexp_ufuncs_compile_to_ptx(case, backend, tmp_path):
    f, i, e = SPECS[case]
    fn = int_ldexp_ufuncs_u64 if i.startswith("u64") else int_ldexp_ufuncs
    src = compile_to_ptx(fn, backend, (f, i, i, e), tmp_path, case)
    wide = i[1:3] == "64"
    if backend == "cuda":
        utype = "unsigned long long" if wide else "unsigned int"
        assert "kf_gcd<" in src and "kf_lcm<" in src and f", {utype}>(" in src
        assert "kf_bitcount<" in src and "ldexp" in src
        assert ("2147483647LL" in src) == ("i64" in (e[:3], i[:3]))     # int64-exponent loops
    else:
        assert "_gcd(" in src and "_lcm(" in src and "ld.popcll(" in src and "ld.ldexp" in src
        assert ("_uabs(" in src) == i.startswith("i")
