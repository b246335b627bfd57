"""A float16 running product past an overflow stays infinite, as NumPy's does.

Found by `kfuse fuzz --seed 27` on an H200 (2026-11-28), cuda program 191:
``np.cumprod(a0 * 2, dtype=np.float16)[::-1]`` gave -2.923e+04 where NumPy gives -inf. NumPy
multiplies left to right rounding each step to float16: once a prefix overflows, every later one
is infinite. The CUDA C scan combined the row's lanes as a tree, whose grouping came back under
float16's maximum after a factor below one. Now a floating product segment with a non-finite lane
is scanned again in order (``codegen.cuda_shapes.ordered_product``), and such scans do not split
into chunks. The fix was compiled (NVRTC, ``tests/codegen/test_scan_ptx.py``) but, the session's
GPU time spent, not yet run on a GPU; the CPU backend runs in order already. Numba-CUDA's scan is
not changed: its row is not checked here yet."""
import numpy as np
import pytest

import kfuse
from backends import to_device, to_host
from tolerance import assert_matches_numpy

pytestmark = pytest.mark.backends("cpu", "cuda")


def test_fuzz_cuda_s27_p191(backend):
    a0 = np.array([0.9667326211929321, 1.9833706617355347, -1.0, 3.0, 0.144040048122406, -1.0,
                   2.5830676555633545, 1.0, -1.5, -2.0, 1.25, 2.0, -0.09003311395645142, -0.5,
                   -1.234739899635315, 2.96140718460083, 0.9870699644088745, 1.9022952318191528,
                   -0.44605764746665955, 2.434141159057617, -0.75, -1.320346713066101, -8.0,
                   2.8670477867126465], dtype=np.float32).reshape((3, 2, 4))

    def fn(a0):
        return np.cumprod(a0 * 2, dtype=np.float16)[::-1]
    with np.errstate(all="ignore"):
        want = fn(a0)
    got = to_host(kfuse.jit(fn, backend=backend)(*to_device(backend, a0)))
    assert np.isinf(want).sum() > 0
    assert_matches_numpy(got, want)
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
