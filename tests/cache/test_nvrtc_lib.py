"""NVRTC's version without loading libnvrtc (runtime/nvrtc_lib.py): a record in the disk cache per
library file, used only for that file (path, size, times, inode), written only where the library
that answered is the file the lookup named; a CUBIN is never filed under, nor read for, another
NVRTC version (runtime/gpu_store.py)."""
import json
import os
import subprocess
import sys

import pytest

from kfuse.runtime import gpu_store, nvrtc_lib
from kfuse.runtime.cache import CacheStore

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def _fresh():
    """``nvrtc_lib.version`` is memoised per process: forgotten around each test, and after every
    call here (each stands for a new process)."""
    nvrtc_lib.version.cache_clear()
    yield
    nvrtc_lib.version.cache_clear()


def version():
    v = nvrtc_lib.version()
    nvrtc_lib.version.cache_clear()
    return v


@pytest.fixture
def fake_lib(tmp_path, monkeypatch):
    """A stand-in library file the lookup finds, not loaded, the loaded one where asked."""
    path = tmp_path / "libnvrtc.so.13"
    path.write_bytes(b"\x7fELF one")
    monkeypatch.setattr(nvrtc_lib, "locate", lambda: str(path))
    monkeypatch.setattr(nvrtc_lib, "_loaded", lambda: False)
    monkeypatch.setattr(nvrtc_lib, "_loaded_from", lambda p: p == str(path))
    return path


def _asks(monkeypatch, answer):
    asked = []
    monkeypatch.setattr(nvrtc_lib, "ask", lambda: asked.append(1) or answer)
    return asked


def test_the_record_answers_for_the_same_file(cache_dir, fake_lib, monkeypatch):
    asked = _asks(monkeypatch, "12.3")
    assert version() == "12.3" and asked == [1]      # asked once, recorded
    asked = _asks(monkeypatch, "never asked")
    assert version() == "12.3" and asked == []       # the record, the library not loaded


def test_a_replaced_library_is_asked_again(cache_dir, fake_lib, monkeypatch):
    _asks(monkeypatch, "12.3")
    version()
    os.remove(fake_lib)
    fake_lib.write_bytes(b"\x7fELF two, longer")               # another file at the same path
    asked = _asks(monkeypatch, "12.4")
    assert version() == "12.4" and asked == [1]


def test_no_record_where_another_file_answered(cache_dir, fake_lib, monkeypatch):
    monkeypatch.setattr(nvrtc_lib, "_loaded_from", lambda p: False)   # the loader took another one
    _asks(monkeypatch, "12.3")
    version()
    asked = _asks(monkeypatch, "12.4")
    assert version() == "12.4" and asked == [1]


def test_a_loaded_library_is_asked(cache_dir, fake_lib, monkeypatch):
    _asks(monkeypatch, "12.3")
    version()                                        # recorded
    monkeypatch.setattr(nvrtc_lib, "_loaded", lambda: True)
    asked = _asks(monkeypatch, "12.4")
    assert version() == "12.4" and asked == [1]


def test_no_cache_asks_the_library(fake_lib, monkeypatch):
    monkeypatch.setattr(nvrtc_lib, "_store", lambda: None)
    for _ in range(2):
        asked = _asks(monkeypatch, "12.3")
        assert version() == "12.3" and asked == [1]


_WARM = r'''
import json, sys
from kfuse.runtime import nvrtc_lib
v = nvrtc_lib.version()
maps = [l.split()[-1] for l in open("/proc/self/maps") if "libnvrtc" in l]
print(json.dumps({"version": v, "loaded": sorted(set(maps)), "located": nvrtc_lib.locate()}))
'''


def _child(cache, code=_WARM) -> dict:
    env = dict(os.environ, KFUSE_CACHE_DIR=str(cache), PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_warm_process_reads_the_version_without_loading_libnvrtc(tmp_path):
    if not sys.platform.startswith("linux") or nvrtc_lib.locate() is None:
        pytest.skip("no libnvrtc that cuda.pathfinder finds in site-packages or conda")
    cold = _child(tmp_path / "c")
    assert cold["version"] == nvrtc_lib.ask() and cold["loaded"]   # asked (loaded) and recorded
    warm = _child(tmp_path / "c")
    assert warm["version"] == cold["version"] and warm["loaded"] == []


SRC = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }'


def _compiled(version):
    from kfuse.codegen.nvrtc import CompiledCuda
    return CompiledCuda(ptx=".version 9.0", cubin=b"cubin", log="", options=(), nvrtc_version=version)


def test_a_cubin_of_another_nvrtc_is_neither_stored_nor_read(cache_dir, monkeypatch):
    monkeypatch.setattr(nvrtc_lib, "version", lambda: "13.5")
    st = CacheStore.open()
    gpu_store.save_cubin(st, SRC, "sm_90", _compiled((13, 4)))    # compiled by another NVRTC
    assert gpu_store.load_cubin(st, SRC, "sm_90") is None
    assert not list(st.entries("kernels"))
    # an entry filed under this version's key that says another NVRTC made it is not used
    key = gpu_store._key(gpu_store._CUBIN, gpu_store.NVRTC_TOOLS, SRC, "sm_90")
    info = {"log": "", "options": [], "nvrtc_version": [13, 4], "arch": "sm_90"}
    st.put("kernels", key, {"kernel.cu": SRC.encode(), "kernel.ptx": b"", "kernel.cubin": b"cubin",
                            "nvrtc.json": json.dumps(info).encode()})
    assert gpu_store.load_cubin(st, SRC, "sm_90") is None
    gpu_store.save_cubin(st, SRC + " ", "sm_90", _compiled((13, 5)))
    assert gpu_store.load_cubin(st, SRC + " ", "sm_90").cubin == b"cubin"
    monkeypatch.setattr(nvrtc_lib, "version", lambda: "13.6")     # another NVRTC now: a miss
    assert gpu_store.load_cubin(st, SRC + " ", "sm_90") is None


_CUBIN = r'''
import json
import kfuse
from kfuse.codegen import nvrtc
from kfuse.runtime import cuda
from kfuse.runtime.cache import CacheStore
compiles = []
real = nvrtc.compile
nvrtc.compile = lambda *a, **k: compiles.append(1) or real(*a, **k)

def softmax(x):
    import numpy as np
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

plan = kfuse.jit(softmax, backend="cuda").lower("f32[64,512]").plan
ptx = cuda.compile_plan(plan, cache=CacheStore.open()).stages["ptx"]
maps = [l.split()[-1] for l in open("/proc/self/maps") if "libnvrtc" in l]
print(json.dumps({"ptx": ".entry" in ptx, "compiles": len(compiles), "loaded": sorted(set(maps))}))
'''


def test_a_warm_process_reads_cubins_without_loading_libnvrtc(tmp_path):
    """The CUBIN's key names NVRTC's version: a warm process reads it from the record, so it
    finds the CUBIN with libnvrtc never loaded (~6 ms on the H200 host)."""
    if not sys.platform.startswith("linux") or nvrtc_lib.locate() is None:
        pytest.skip("no libnvrtc that cuda.pathfinder finds in site-packages or conda")
    cold = _child(tmp_path / "c", _CUBIN)
    assert cold["ptx"] and cold["compiles"] >= 1 and cold["loaded"]
    warm = _child(tmp_path / "c", _CUBIN)
    assert warm["ptx"] and warm["compiles"] == 0 and warm["loaded"] == []
