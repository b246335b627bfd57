"""A row kernel's shared-memory carve-out on the GPU (runtime.carveout; skipped
without a GPU): the carve-out the CUDA C launcher sets on a loaded kernel leaves room for the blocks
an SM holds by threads, and the result is NumPy's."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)

import cupy as cp  # noqa: E402

import kfuse  # noqa: E402
from kfuse.runtime import carveout, cuda as rc  # noqa: E402
from tolerance import assert_matches_numpy  # noqa: E402

CARVEOUT, SHARED = carveout.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, carveout.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES


def masked_softmax(x, mask):
    y = x * 0.125 + mask
    e = np.exp(y - y.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_row_kernel_carveout_holds_its_blocks():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 1024, 1024)).astype(np.float32)
    mask = rng.standard_normal((1024, 1024)).astype(np.float32)
    before = set(rc._LOADED)
    got = kfuse.jit(masked_softmax, backend="cuda")(cp.asarray(x), cp.asarray(mask))
    assert_matches_numpy(cp.asnumpy(got), masked_softmax(x, mask))
    props = device.device_properties()
    from kfuse.fusion import cost
    known = cost.known_device(props.get("name", ""))
    if not (known and known.row_carveout):
        pytest.skip("no tuned row carve-out for this GPU: the launcher leaves the driver's")
    drv = cp.cuda.driver
    loaded = set(rc._LOADED) - before
    assert loaded
    for key in loaded:
        func = rc._LOADED[key][1]
        block = int(drv.funcGetAttribute(0, func.ptr))          # CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
        static = int(drv.funcGetAttribute(SHARED, func.ptr))
        want = carveout.carveout_for_occupancy(0, min(block, 1024), static, props)
        assert want >= 25 and int(drv.funcGetAttribute(CARVEOUT, func.ptr)) >= want    # 64-thread blocks: 32 an SM
