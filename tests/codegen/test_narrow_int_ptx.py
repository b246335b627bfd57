"""Wrapping int8/int16/uint8/uint16 arithmetic reaches PTX as 32-bit arithmetic plus a bit-field
extract, never as 8/16-bit PTX arithmetic (no GPU needed).

With ``neg.s16`` or ``add.s16`` in the PTX, ptxas took the 16-bit result as already sign-extended,
and the next op read a wrapped value unwrapped: int16 ``(-x) // x`` at -32768 gave -1 on both GPU
backends (fuzz seed 35 #3382, H100 2026-11-24). Both emitters now narrow through asm ``bfe``
(``kf_narrow`` in CUDA C, :mod:`kfuse.codegen.numba_cuda_narrow`). The values themselves are checked
on the GPU by ``tests/regressions/test_gpu_narrow_int_wrap.py``."""
import re

import numpy as np
import pytest

import kfuse
from tests.regressions.test_gpu_narrow_int_wrap import PRODUCERS

pytest.importorskip("cuda.bindings.nvrtc")

NARROW_ARITH = re.compile(r"^\s*(neg|add|sub|mul\.lo|mad\.lo|shl)\.[sub](8|16)\b", re.M)


@pytest.mark.backends("cuda", "numba-cuda", emit_only=True)
@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8", "uint16"])
@pytest.mark.parametrize("producer", sorted(PRODUCERS))
def test_wrapping_ops_are_not_narrow_ptx_arithmetic(producer, dtype, backend):
    p = PRODUCERS[producer]

    def fn(x):                        # the wrapped value is widened and compared by the next ops
        y = p(x)
        return y.astype(np.int32), y > 0

    spec = {"int8": "i8", "int16": "i16", "uint8": "u8", "uint16": "u16"}[dtype] + "[4096]"
    ptx = kfuse.jit(fn, backend=backend).lower(spec).ptx("sm_90")
    assert ".entry" in ptx
    found = NARROW_ARITH.findall(ptx)
    assert not found, f"{producer}({dtype}) on {backend}: 8/16-bit PTX arithmetic {found[:4]}"
