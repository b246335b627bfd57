"""Row argmax/argmin in chunks on the CPU (codegen.cpu_argblocks): each chunk's best key through
a vectorised integer max, the first chunk of the best key searched for its first element of it,
the elements after the last whole chunk one by one. The results must be NumPy's first-occurrence
ones on rows built to tell the two apart: ties across and within chunks and with the last
elements, -0.0 against +0.0, NaN anywhere (the first NaN wins, either sign), infinities, sorted
rows (every chunk improves), rows shorter than a chunk; and the chunk loop vectorised."""
import platform

import numpy as np
import pytest

import kfuse
from kfuse.codegen.cpu_argblocks import CHUNK as BLOCK


def _rows(dtype):
    rng = np.random.default_rng(5)
    n = 8 * BLOCK + 13
    x = rng.random((28, n)).astype(dtype)
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
    x[16, -3] = 7.0; x[16, 3 * BLOCK + 5] = 7.0             # a chunk's tie with a last element
    x[17, -2] = 7.0; x[17, -1] = 7.0                        # two last elements tie
    x[18, 2 * BLOCK + 9] = -np.nan; x[18, 4 * BLOCK] = np.nan   # a NaN of either sign
    x[19, -5] = np.nan
    x[20, :] = -0.0; x[20, -1] = 0.0                        # zeros of both signs tie
    x[21, 40] = np.finfo(dtype).max; x[21, 41] = np.inf
    x[22, :] = np.finfo(dtype).tiny * -1; x[22, 77] = -np.finfo(dtype).smallest_subnormal
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("which", ["argmax", "argmin"])
def test_blocked_arg_reductions_are_numpys(dtype, which):
    fn = (lambda x: np.argmax(x, axis=1)) if which == "argmax" else (lambda x: np.argmin(x, axis=-1))
    f = kfuse.jit(fn, backend="cpu")
    for x in (_rows(dtype), -_rows(dtype), _rows(dtype)[:, :BLOCK], _rows(dtype)[:, :7],
              _rows(dtype)[:, :3 * BLOCK], _rows(dtype)[:, ::-1], np.ascontiguousarray(_rows(dtype)[:, ::-1])):
        np.testing.assert_array_equal(f(x), fn(x))
    src = f.lower(_rows(dtype)).as_text("cpu")
    assert "bk_" in src and "f_" in src and "break" not in src   # the chunked form, its find a least index (no early exit)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86 assembly")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_chunk_loop_vectorises(dtype):
    """The chunk's key max is a vector max (vpmaxs*), not unrolled scalar code, and the row is
    read by whole vectors, not gathered (a signed index Numba may wrap)."""
    from kfuse.runtime import cpu_persist
    f = kfuse.jit(lambda x: np.argmax(x, axis=1), backend="cpu")
    x = _rows(dtype)
    glb = cpu_persist.exec_module(f.lower(x).as_text("cpu"))
    seq = glb["kfuse_kernel_seq"]
    out = np.empty(x.shape[0], np.int64)
    seq(x, out, np.int64(x.shape[0]), np.int64(x.shape[1]))
    np.testing.assert_array_equal(out, np.argmax(x, axis=1))
    asm = next(iter(seq.inspect_asm().values()))
    assert any(v in asm for v in ("vpmaxs", "vpcmpgt")) and "gather" not in asm


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
