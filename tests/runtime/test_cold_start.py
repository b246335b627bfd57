"""Cold start without timings: what a first call imports, starts and compiles.

* ``import kfuse`` loads no Numba (nor any GPU stack: tests/test_imports.py);
* a CPU call loads no GPU stack, and a small kernel neither starts Numba's thread pool nor
  compiles the parallel variant; a kernel's first call compiles only the sequential one;
* the CUDA C path (lowering, NVRTC, the tuner's lookup) imports no Numba, llvmlite, torch or JAX;
* a warm disk cache means no compiler runs: Numba's loads the CPU kernel's machine code (and its
  runtime's, the NRT, stored with it), the CUDA
  runtime reads the CUBIN before NVRTC could be called;
* a warm CUDA C first call renders nothing and imports no renderer (``codegen.cuda`` and its
  emitter classes): its kernels' sources come from the kernel store (``runtime.rendered``).

Timings are in ``benchmarks/cold_start.py`` and ``benchmarks/hot_call.py``, never here.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPU_STACK = ("cupy", "torch", "jax", "numba.cuda", "cuda.bindings.driver")


def _child(code: str, cache_dir, extra_env=None) -> dict:
    env = dict(os.environ, KFUSE_CACHE_DIR=str(cache_dir), PYTHONPATH=ROOT)
    env.pop("KFUSE_CPU_THREADS", None)
    env.update(extra_env or {})
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


_COUNT = r'''
import json, sys
import numpy as np
import kfuse
after_import = sorted(m for m in ("numba", "llvmlite") if m in sys.modules)
CALLS = {}
def count_calls(module, name):
    """Count the calls of ``module.name`` in CALLS[name]."""
    real = getattr(module, name)
    CALLS[name] = 0
    def counted(*a, **k):
        CALLS[name] += 1
        return real(*a, **k)
    setattr(module, name, counted)
'''

_CPU_CALL = _COUNT + r'''
import numba.core.compiler as nc            # every Numba compile (kernel and helpers) goes here
count_calls(nc, "compile_extra")
from numba.core.runtime import nrtdynmod    # Numba's runtime (NRT), compiled or loaded once a process
count_calls(nrtdynmod, "create_nrt_module")

@kfuse.jit(backend="cpu")
def f(x, y):
    return np.exp(x) * 2.0 + y

x = np.linspace(0, 1, 64, dtype=np.float32)
out = f(x, x)
ok = bool(np.allclose(out, np.exp(x) * 2.0 + x, rtol=1e-5))
from numba.np.ufunc import parallel
from kfuse.runtime import cpu as rt
(seq, par), = rt._COMPILED.values()
loads = seq._cache.loads + par._cache.loads
print(json.dumps({"after_import": after_import, "ok": ok, "pool": bool(parallel._is_initialized),
                  "seq": len(seq.overloads), "par": len(par.overloads), "loads": loads,
                  "compiles": CALLS["compile_extra"], "nrt": CALLS["create_nrt_module"],
                  "gpu": sorted(m for m in %r if m in sys.modules)}))
''' % (GPU_STACK,)


def test_cpu_call_cold_then_warm(tmp_path):
    cold = _child(_CPU_CALL, tmp_path / "c")
    assert cold["ok"] and cold["after_import"] == []        # import kfuse: no Numba yet
    assert cold["gpu"] == []                                # a CPU call: no GPU stack
    assert not cold["pool"]                                 # tiny: Numba's threads never started
    assert (cold["seq"], cold["par"]) == (1, 0)             # only the variant the call used
    assert cold["compiles"] > 0 and cold["loads"] == 0 and cold["nrt"] == 1
    warm = _child(_CPU_CALL, tmp_path / "c")                # a new process, the same cache
    assert warm["ok"] and not warm["pool"] and warm["gpu"] == []
    assert warm["loads"] == 1 and warm["compiles"] == 0     # machine code loaded, nothing compiled
    assert warm["nrt"] == 0                                 # the NRT too, with the kernel


def test_first_call_runs_the_sequential_variant(monkeypatch):
    from kfuse.runtime import cpu as rt
    import kfuse
    monkeypatch.setattr(rt, "machine_busy", lambda: False)
    monkeypatch.setattr(rt, "thread_cap", lambda: 4)

    def rowsum(x):
        return np.exp(x).sum(axis=-1)

    x = np.random.default_rng(1).random((256, 1024), dtype=np.float32)
    f = kfuse.jit(rowsum, backend="cpu")
    want = np.exp(x).sum(axis=-1)
    np.testing.assert_allclose(f(x), want, rtol=1e-5)
    (entry,) = f._programs.values()
    (k,) = entry.program.kernels
    from kfuse.runtime.cpu_par_policy import first_call_parallel
    assert rt.PAR_MIN_WORK <= k.work and not first_call_parallel(k.work, 4)
    assert not k.tuned                                      # the heuristic is not applied as tuned
    assert rt.auto_threads(k) > 1                           # later calls may share it ...
    par = [fns[2] for fns in k.variants.by_sched.values()]
    assert all(len(p.overloads) == 0 for p in par)          # ... the first one ran sequentially


def test_small_kernels_take_one_thread_without_asking_the_pool(monkeypatch):
    from kfuse.runtime import cpu as rt

    def no_pool():
        raise AssertionError("the thread pool was consulted for a small kernel")
    monkeypatch.setattr(rt, "thread_cap", no_pool)

    class _K:
        parallel_ok = True
        work = rt.PAR_MIN_WORK - 1
    assert rt.auto_threads(_K()) == 1


def test_runnable_count_reads_proc_loadavg():
    from kfuse.runtime import cpu_load
    assert cpu_load.runnable() >= 1


_CUDA_PATH = r'''
import json, sys
import kfuse
from kfuse.autotune import tuner            # the tuner's lookup runs after every GPU compile
import kfuse.runtime.cuda                   # the CUDA C runtime (CuPy is imported at launch)

def softmax(x):
    import numpy as np
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)

lo = kfuse.jit(softmax, backend="cuda").lower("f32[64,512]")
ptx = lo.as_text("ptx")
print(json.dumps({"ptx": ".entry" in ptx,
                  "loaded": sorted(m for m in ("numba", "llvmlite", "torch", "jax", "networkx",
                                               "kfuse.runtime.cpu") if m in sys.modules)}))
'''


def test_cuda_c_path_imports_no_numba(tmp_path):
    pytest.importorskip("cuda.bindings.nvrtc")
    r = _child(_CUDA_PATH, tmp_path / "c")
    assert r["ptx"] and r["loaded"] == []


def test_warm_cubin_is_read_before_nvrtc(tmp_path, monkeypatch):
    pytest.importorskip("cuda.bindings.nvrtc")
    from kfuse import config
    from kfuse.codegen import nvrtc
    from kfuse.runtime import cuda as rc
    from kfuse.runtime.cache import CacheStore
    monkeypatch.setenv("KFUSE_CACHE_DIR", str(tmp_path / "c"))
    config.reload()
    try:
        src = 'extern "C" __global__ void cold_k(float* x) { x[threadIdx.x] += 1.0f; }'
        first = rc.compile_source(src, "sm_90", CacheStore.open())     # compiled and stored
        rc._COMPILED.clear()                                           # as a new process

        def no_compile(*a, **k):
            raise AssertionError("NVRTC ran on a warm cache")
        monkeypatch.setattr(nvrtc, "compile", no_compile)
        again = rc.compile_source(src, "sm_90", CacheStore.open())
        assert again.cubin == first.cubin
    finally:
        rc._COMPILED.clear()
        monkeypatch.undo()
        config.reload()


# the CUDA C renderer: the emitter and its mixin modules (a warm first call imports none of them)
RENDERER = ("kfuse.codegen.cuda", "kfuse.codegen.cuda_accs", "kfuse.codegen.cuda_rows",
            "kfuse.codegen.cuda_cols", "kfuse.codegen.cuda_peel", "kfuse.codegen.cuda_scan",
            "kfuse.codegen.cuda_scatter", "kfuse.codegen.cuda_branches", "kfuse.codegen.cuda_lowp")

_GPU_CALL = _COUNT + r'''
import cupy as cp
from kfuse.codegen import nvrtc
count_calls(nvrtc, "compile")

@kfuse.jit(backend="cuda")
def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)

x = np.random.default_rng(0).random((64, 512), dtype=np.float32)
y = cp.asnumpy(softmax(cp.asarray(x)))
ok = bool(np.allclose(y, np.exp(x - x.max(-1, keepdims=True)) / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True), rtol=1e-5))
print(json.dumps({"ok": ok, "nvrtc": CALLS["compile"],
                  "loaded": sorted(m for m in ("numba", "llvmlite", "torch", "jax", "networkx")
                                   if m in sys.modules),
                  "renderer": sorted(m for m in %r if m in sys.modules)}))
''' % (RENDERER,)


@pytest.mark.gpu
def test_gpu_first_call_cold_then_warm(tmp_path):
    from backends import gpu_missing
    why = gpu_missing("cuda")
    if why:
        pytest.skip(why)
    cold = _child(_GPU_CALL, tmp_path / "c")
    assert cold["ok"] and cold["nvrtc"] >= 1 and cold["loaded"] == [] and cold["renderer"]
    warm = _child(_GPU_CALL, tmp_path / "c")
    assert warm["ok"] and warm["nvrtc"] == 0 and warm["loaded"] == [] and warm["renderer"] == []


_FAKE_GPU_CALL = r'''
import json, sys
sys.path.insert(0, %r)                      # (tests/: fake_gpu)
import numpy as np
import pytest
import kfuse
from fake_gpu import FakeCupy, fake_gpu

def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)

x = FakeCupy(np.random.default_rng(0).random((64, 512), dtype=np.float32))
with pytest.MonkeyPatch.context() as mp:
    with fake_gpu(mp) as log:
        before = sorted(m for m in %r if m in sys.modules)
        kfuse.jit(softmax, backend="cuda")(x)
        launched = [name for name, *_ in log.take()]
print(json.dumps({"before": before, "launched": launched,
                  "renderer": sorted(m for m in %r if m in sys.modules)}))
''' % (os.path.dirname(os.path.dirname(os.path.abspath(__file__))), RENDERER, RENDERER)


def test_warm_fake_gpu_first_call_imports_no_renderer(tmp_path):
    """The CUDA C path's first call in a fresh process (the fake GPU: tests/fake_gpu.py) renders
    and imports the renderer with an empty cache, and with a warm one launches the same kernels
    with neither: codegen.cuda and its emitter mixins stay unimported (issue 33)."""
    cold = _child(_FAKE_GPU_CALL, tmp_path / "c")
    assert cold["before"] == [] and cold["launched"] and "kfuse.codegen.cuda" in cold["renderer"]
    warm = _child(_FAKE_GPU_CALL, tmp_path / "c")
    assert warm["launched"] == cold["launched"] and warm["renderer"] == []
