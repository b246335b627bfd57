"""Row argmax/argmin in blocks on the CPU (codegen.cpu_argblocks): each block's best value through
vectorised integer keys, and only a block that beats the running value searched for its first
element of that value. The results must be NumPy's first-occurrence ones on rows built to tell the
two apart: ties across and within blocks, -0.0 against +0.0, NaN anywhere (the first NaN wins),
infinities, sorted rows (every block improves), a last partial block."""
import numpy as np
import pytest

import kfuse
from kfuse.codegen.cpu_argblocks import BLOCK


def _rows(dtype):
    rng = np.random.default_rng(5)
    n = 2 * BLOCK + 89
    x = rng.random((24, n)).astype(dtype)
    x[0] = np.sort(x[0])                                    # every block improves
    x[1] = -np.sort(x[1])
    x[2, :] = -1; x[2, 10] = -0.0; x[2, BLOCK + 3] = 0.0     # -0.0 first: +0.0 later does not beat it
    x[3, :] = 0.0; x[3, 5] = -0.0
    x[4, :BLOCK] = -0.0; x[4, BLOCK:] = 0.0
    x[5, :BLOCK] = 0.0; x[5, BLOCK:] = -0.0
    x[6, BLOCK - 1] = 5.0; x[6, BLOCK] = 5.0                # a tie across two blocks
    x[7, 3] = np.nan; x[7, 2 * BLOCK + 1] = np.nan           # the first NaN wins
    x[8, -1] = np.nan
    x[9, :] = np.nan
    x[10, :] = -np.inf
    x[11, :] = np.inf
    x[12, :] = -np.inf; x[12, -1] = np.nan
    x[13, BLOCK + 7] = np.inf; x[13, 2 * BLOCK + 7] = np.inf
    x[14, :] = 3.0
    x[15] = np.rint(x[15] * 3)                              # many exact ties
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("which", ["argmax", "argmin"])
def test_blocked_arg_reductions_are_numpys(dtype, which):
    fn = (lambda x: np.argmax(x, axis=1)) if which == "argmax" else (lambda x: np.argmin(x, axis=-1))
    f = kfuse.jit(fn, backend="cpu")
    for x in (_rows(dtype), -_rows(dtype), _rows(dtype)[:, :BLOCK], _rows(dtype)[:, :7]):
        np.testing.assert_array_equal(f(x), fn(x))
    src = f.lower(_rows(dtype)).as_text("cpu")
    assert "bk_" in src and "f_" in src and "break" not in src   # the blocked form, its find a least index (no early exit)


def test_other_arg_reductions():
    """A column argmax (blocked along its own reduced dim where the rows order runs it) and an
    integer one (the scan: integers have no NaN, LLVM compares them as they are) stay NumPy's."""
    x = _rows(np.float32)
    col = kfuse.jit(lambda x: np.argmax(x, axis=0), backend="cpu")
    np.testing.assert_array_equal(col(x), np.argmax(x, axis=0))
    xi = np.rint(x[:, 1:] * 4).astype(np.int32)
    f = kfuse.jit(lambda x: np.argmax(x, axis=1), backend="cpu")
    np.testing.assert_array_equal(f(xi), np.argmax(xi, axis=1))
    assert "bk_" not in f.lower(xi).as_text("cpu")
