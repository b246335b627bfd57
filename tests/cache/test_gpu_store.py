"""The GPU runtimes' disk persistence (runtime/gpu_store.py) without a GPU: an NVRTC result and a
Numba-CUDA PTX round-trip through the store, keyed by source and arch; corrupt entries are misses."""
import pytest

from kfuse.runtime import gpu_store
from kfuse.runtime.cache import CacheStore

SRC = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }'


def test_nvrtc_result_round_trip(cache_dir):
    nvrtc = pytest.importorskip("kfuse.codegen.nvrtc")
    pytest.importorskip("cuda.bindings.nvrtc")
    st = CacheStore.open()
    assert gpu_store.load_cubin(st, SRC, "sm_90") is None
    compiled = nvrtc.compile(SRC, "sm_90")
    gpu_store.save_cubin(st, SRC, "sm_90", compiled)
    again = gpu_store.load_cubin(CacheStore.open(), SRC, "sm_90")
    assert again.cubin == compiled.cubin and again.ptx == compiled.ptx
    assert again.nvrtc_version == compiled.nvrtc_version
    assert gpu_store.load_cubin(st, SRC, "sm_80") is None          # arch is part of the key
    assert gpu_store.load_cubin(st, SRC + " ", "sm_90") is None    # so is the source
    assert gpu_store.load_ptx(st, SRC, "sm_90") is None            # and the kind of entry


def test_numba_ptx_round_trip_and_corruption(cache_dir):
    st = CacheStore.open()
    gpu_store.save_ptx(st, SRC, "sm_90", ".version 9.0\n.target sm_90\n")
    assert gpu_store.load_ptx(st, SRC, "sm_90").startswith(".version 9.0")
    import glob
    import os
    (ptx,) = glob.glob(os.path.join(cache_dir, "kernels", "*", "kernel.ptx"))
    with open(ptx, "w") as f:
        f.write("garbage")
    with pytest.warns(Warning):
        assert gpu_store.load_ptx(st, SRC, "sm_90") is None   # checksum mismatch: a miss
