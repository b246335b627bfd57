"""Search kernels (``np.searchsorted``, ``np.digitize``, ``np.interp``) compile on both GPU backends
without a GPU: the binary search is a call on the table's buffer (CUDA C ``kf_search``, Numba-CUDA
``_search_left``/``_search_right``), and the PTX assembles with ptxas for sm_90, in elementwise,
row-reduction, scan and scatter kernels. Values are checked on a GPU by tests/ops/test_search.py."""
import numpy as np
import pytest

from tests.codegen.ptx_backends import compile_to_ptx


def left(a, v):
    return np.searchsorted(a, v * 2)


def right_rows(a, v):
    return (np.searchsorted(a, v, side="right") > 3).sum(axis=1)


def in_a_scan(a, v):
    return np.cumsum(np.searchsorted(a, v), axis=1)


def interp(a, v):
    return np.interp(v, a, np.cos(a))


def histogram(a, v):                # a search feeding a scatter's positions
    h = np.zeros_like(a, dtype=np.int64)
    np.add.at(h, np.minimum(np.searchsorted(a, v), 36), 1)
    return h


@pytest.mark.backends("cuda", "numba-cuda", emit_only=True)
@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "i8", "u32", "b1"])
@pytest.mark.parametrize("fn", [left, right_rows, in_a_scan, interp, histogram], ids=lambda f: f.__name__)
def test_search_kernels_compile_to_ptx(fn, dtype, backend, tmp_path):
    if dtype == "b1" and fn in (left, interp):
        pytest.skip("arithmetic on booleans is covered by i8")
    if backend == "numba-cuda" and fn in (interp, histogram) and dtype != "f32":
        pytest.skip("numba-cuda compiles these two in ~15-20 s each (CI time): f32 stands for the rest "
                    "(the CUDA C backend and the gpu-marked tests run every dtype)")
    src = compile_to_ptx(fn, backend, (f"{dtype}[37]", f"{dtype}[16,24]"), tmp_path, f"{fn.__name__}_{dtype}")
    assert ("kf_search<" in src) if backend == "cuda" else ("_search_" in src)
