"""The Numba-CUDA backend end to end on a GPU: results equal NumPy's (skipped without a GPU, CuPy or
an importable numba-cuda). Numba-CUDA specifics; the shared cases are in tests/gpu/test_backends.py."""
import numpy as np
import pytest

from kfuse.codegen import numba_cuda as nc
from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)
_ok, _why = nc.numba_cuda_available()
if not _ok:
    pytest.skip(_why, allow_module_level=True)

import handplan  # noqa: E402
from handplan import gelu  # noqa: E402

RNG = np.random.default_rng(0)


def run(fn, *arrays, reductions=False, views=None):
    return handplan.run("numba-cuda", fn, *arrays, reductions=reductions, views=views)


def test_stages_and_launch():
    x = RNG.standard_normal((64, 128), dtype=np.float32)
    w = RNG.standard_normal((128,), dtype=np.float32)
    b = RNG.standard_normal((128,), dtype=np.float32)
    prog, _ = run(gelu, x, w, b)
    assert "def kfuse_kernel" in prog.stages["numba"] and ".entry" in prog.stages["ptx"]


# elementwise/broadcast, views, softmax/layernorm, column/arg reductions with NaN, integer and float
# NaN rules, float16: tests/gpu/test_backends.py (the same cases on the CPU, CUDA C and Numba-CUDA
# backends). The former test_column_and_arg_reductions_nan here put any(axis=1) and all(axis=0)
# in ONE hand-built reduce group, which fusion/plan.py forbids (one domain, one axes tuple per
# group): lower.py rightly refused it. The cases are now separate programs there.


def test_empty_and_new_size_reuses_kernel():
    run(lambda x: x * 2, np.zeros((0, 5), np.float32))
    from kfuse.runtime import numba_cuda as rt
    before = len(rt._LOADED)
    run(gelu, *(RNG.standard_normal(s, dtype=np.float32) for s in ((16, 32), (32,), (32,))))
    mid = len(rt._LOADED)
    run(gelu, *(RNG.standard_normal(s, dtype=np.float32) for s in ((48, 96), (96,), (96,))))
    assert len(rt._LOADED) == mid >= before
