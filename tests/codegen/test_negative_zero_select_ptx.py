"""No float select reaches ptxas with an immediate -0.0, on either GPU backend (no GPU needed).

ptxas (13.0, NVRTC 13.5's, the 580 driver's JIT) compiles ``selp.f32 d, 1.0, -0.0, p`` as
``FSET.BF`` (1.0 or +0.0) and ``selp.f32 d, -1.0, -0.0, p`` as the code of ``-1.0, +0.0``: the
zero loses its sign where NumPy keeps it (fuzz seed 43 #1602 on numba-cuda, H100 2026-11-25;
``np.where(x < 2, 1.0, -0.0)`` on both backends; docs/FUZZING.md bug 26). The CUDA C backend
reads -0.0 from constant memory; the Numba-CUDA backend's PTX selects it bitwise (``selp.b32``).
The values are checked on the GPU by ``tests/regressions/test_fuzz_gpu_negative_zero_select.py``."""
import re

import numpy as np
import pytest

import kfuse
from kfuse.codegen.numba_cuda import keep_negative_zero_selects

NEG_ZERO_FLOAT_SELECT = re.compile(r"^\s*selp\.f(32|64)\b[^;]*\b(0f80000000|0d8000000000000000)\b", re.M)


def where_one_or_negative_zero(x):
    return np.where(x < 2, np.float32(1.0), np.float32(-0.0))


def where_minus_one_or_negative_zero(x):
    return np.where(x < 2, np.float32(-1.0), np.float32(-0.0))


def where_one_or_negative_zero_f64(x):
    return np.where(x < 2, 1.0, -0.0)


def maximum_of_bool_and_negative_zero(a0, a1):      # the fuzz program (NVVM folds it to a select)
    return np.maximum((a1 < a0).astype(np.float32), -0.0)


@pytest.mark.backends("cuda", "numba-cuda", emit_only=True)
@pytest.mark.parametrize("fn, specs", [
    (where_one_or_negative_zero, ("f32[1024]",)),
    (where_minus_one_or_negative_zero, ("f32[1024]",)),
    (where_one_or_negative_zero_f64, ("f32[1024]",)),
    (maximum_of_bool_and_negative_zero, ("u16[]", "f16[3,2]")),
])
def test_no_float_select_of_an_immediate_negative_zero(fn, specs, backend):
    pytest.importorskip("cuda.bindings.nvrtc")
    ptx = kfuse.jit(fn, backend=backend).lower(*specs).ptx("sm_90")
    assert ".entry" in ptx
    assert not NEG_ZERO_FLOAT_SELECT.findall(ptx), f"{fn.__name__} on {backend}: ptxas drops the sign"


def test_negative_zero_selects_become_bitwise():
    ptx = "\n".join([
        "\tselp.f32 \t%f14, 0f3F800000, 0f80000000, %p2;",
        "\tselp.f32 \t%f3, 0f80000000, %f1, %p1;",
        "\tselp.f64 \t%fd2, 0d3FF0000000000000, 0d8000000000000000, %p4;",
        "\tselp.f32 \t%f9, 0f3F800000, 0f00000000, %p3;",        # +0.0: FSET.BF gives it right
        "\tselp.f32 \t%f5, %f1, %f2, %p2;",
        "\tsetp.gt.f32 \t%p4, %f1, 0f80000000;",
    ])
    got = keep_negative_zero_selects(ptx).splitlines()
    assert got[0] == "\tselp.b32 \t%f14, 0f3F800000, 0f80000000, %p2;"
    assert got[1] == "\tselp.b32 \t%f3, 0f80000000, %f1, %p1;"
    assert got[2] == "\tselp.b64 \t%fd2, 0d3FF0000000000000, 0d8000000000000000, %p4;"
    assert got[3:] == ptx.splitlines()[3:]


def test_negative_zero_literals_read_constant_memory():
    """Every CUDA C literal -0.0 (elementwise/row kernels and GEMM epilogues) names the
    ``__constant__`` -0.0 its prelude defines; +0.0 stays an immediate."""
    from kfuse.codegen.gemm_cuda import emit_gemm
    from kfuse.codegen.gemm_spec import GemmEpilogue, GemmSpec
    from kfuse.codegen.cuda_ops import PRELUDE, const_literal
    assert [const_literal(-0.0, dt) for dt in ("float16", "float32", "float64")] == \
        ["kf_negzero_f", "kf_negzero_f", "kf_negzero_d"]
    assert const_literal(0.0, "float32") == "0x0.0p+0f"
    assert "__constant__ float kf_negzero_f = -0.0f;" in PRELUDE
    gemm = emit_gemm(GemmSpec("f32", GemmEpilogue.chain(("maximum", ("c", -0.0)), out_dtype="f32")))
    assert "= kf_negzero_f;" in gemm and "__constant__ float kf_negzero_f = -0.0f;" in gemm
