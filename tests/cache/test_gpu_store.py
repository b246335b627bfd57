"""The GPU runtimes' disk persistence (runtime/gpu_store.py) without a GPU: an NVRTC result and a
Numba-CUDA PTX round-trip through the store, keyed by source and arch; corrupt entries are misses."""
import pytest

from kfuse.runtime.cache import CacheStore
from kfuse.runtime.gpu_store import open_gpu_store

SRC = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }'


def test_nvrtc_result_round_trip(cache_dir):
    nvrtc = pytest.importorskip("kfuse.codegen.nvrtc")
    pytest.importorskip("cuda.bindings.nvrtc")
    st = open_gpu_store(CacheStore.open())
    assert st.get((SRC, "sm_90")) is None
    compiled = nvrtc.compile(SRC, "sm_90")
    st[(SRC, "sm_90")] = compiled
    again = open_gpu_store(CacheStore.open()).get((SRC, "sm_90"))
    assert again.cubin == compiled.cubin and again.ptx == compiled.ptx
    assert again.nvrtc_version == compiled.nvrtc_version
    assert st.get((SRC, "sm_80")) is None                  # arch is part of the key
    assert st.get((SRC + " ", "sm_90")) is None            # so is the source


def test_numba_ptx_round_trip_and_corruption(cache_dir):
    st = open_gpu_store(CacheStore.open())
    st[("numba-cuda", SRC, "sm_90")] = ".version 9.0\n.target sm_90\n"
    assert st.get(("numba-cuda", SRC, "sm_90")).startswith(".version 9.0")
    import glob
    import os
    (ptx,) = glob.glob(os.path.join(cache_dir, "kernels", "*", "kernel.ptx"))
    with open(ptx, "w") as f:
        f.write("garbage")
    with pytest.warns(Warning):
        assert st.get(("numba-cuda", SRC, "sm_90")) is None   # checksum mismatch: a miss
