"""Found by `kfuse fuzz --seed 11` (program 5370, backend cpu): CompileError "output <cast f16[4, 1, 3]>
of matmul kernel 2 does not have the kernel's domain shape". An operand cast of a matmul that is
also returned to the caller was folded into the matmul kernel (``fusion/gemm_epilogue.py`` checked
its users, not whether it is a graph output); it now stays in a kernel of its own shape."""
import numpy as np
import pytest

import kfuse


@pytest.mark.parametrize("fn", [
    lambda a: (np.rad2deg(a.astype(bool)) @ np.swapaxes(a.astype(bool), -1, -2), np.rad2deg(a.astype(bool))),
    lambda a: ((a * 3).astype(np.float32) @ np.swapaxes((a * 3).astype(np.float32), -1, -2),
               (a * 3).astype(np.float32)),
])
def test_operand_cast_also_returned(fn):
    a = np.array([-2.5, -1.75, 1.5, 0.0, 0.5, -2.0, 5.0, -1.75, 3.0, -1.0, 2.0, 4.0]).reshape(4, 1, 3)
    for got, exp in zip(kfuse.jit(fn, backend="cpu")(a), fn(a)):
        assert got.dtype == exp.dtype and got.shape == exp.shape
        np.testing.assert_allclose(got, exp, rtol=5e-3)
