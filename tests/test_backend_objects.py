"""The backend registry and objects (kfuse/backends): names, stages, arrays accepted, toolchains
for cache keys, and a capability a backend lacks recorded as a refusal in the plan (shown by
``kfuse.explain``) and raised before anything compiles."""
from __future__ import annotations

import numpy as np
import pytest

import kfuse
from kfuse import backends
from kfuse.backends import CapabilityRefusal, Feature
from kfuse.errors import DeviceError, UnsupportedError
from kfuse.runtime import keys


def _matmul_bias(a, b):
    return a @ b + 1.0


def _multiply_at(x, i):
    np.multiply.at(x, i, 2.0)
    return x


def test_registry_names_and_lookup():
    assert backends.names() == ("cpu", "cuda", "numba-cuda")
    assert all(backends.get(n).name == n for n in backends.names())
    assert backends.get(backends.CUDA) is backends.CUDA
    with pytest.raises(ValueError, match="unknown backend 'tpu'"):
        backends.get("tpu")
    with pytest.raises(ValueError):
        backends.register(backends.CPU)             # a name is registered once
    assert backends.default() is backends.CPU


def test_stages_and_features():
    assert backends.for_stage("cuda") is backends.CUDA and backends.for_stage("ptx") is backends.CUDA
    assert backends.for_stage("numba") is backends.NUMBA_CUDA and backends.for_stage("kernel") is None
    assert backends.stages() == ("cpu", "cuda", "numba", "ptx")
    assert backends.with_feature(Feature.AUTOTUNE) == (backends.CPU, backends.CUDA)
    assert backends.with_feature(Feature.BFLOAT16) == (backends.CUDA,)
    assert Feature.MATMUL not in backends.NUMBA_CUDA.features
    with pytest.raises(AttributeError):
        backends.CPU.name = "other"                   # immutable


def test_arrays_choose_the_backend():
    assert backends.for_arrays("auto", {"numpy"}, "f") is backends.CPU
    assert backends.for_arrays("auto", set(), "f") is backends.CPU
    assert backends.for_arrays("auto", {"cupy"}, "f") is backends.CUDA
    assert backends.for_arrays("auto", {"torch"}, "f") is backends.CUDA
    assert backends.for_arrays("cuda", {"cupy", "torch"}, "f") is backends.CUDA
    with pytest.raises(DeviceError, match="mixed"):
        backends.for_arrays("auto", {"numpy", "cupy"}, "f")
    with pytest.raises(DeviceError, match="backend='cpu' was requested"):
        backends.for_arrays("cpu", {"cupy"}, "f")
    with pytest.raises(DeviceError, match="needs device arrays"):
        backends.for_arrays("cuda", {"numpy"}, "f")


def test_toolchains_key_the_cache():
    assert set(backends.CPU.toolchain()) >= {"numba", "llvmlite"}
    assert "nvrtc" not in backends.CPU.toolchain()
    assert backends.CUDA.toolchain() == keys.toolchain_versions(("nvrtc",))
    assert "numba_cuda" in backends.NUMBA_CUDA.toolchain()
    with pytest.raises(TypeError):
        keys.toolchain_versions("cpu")              # tool names, not a backend name


def test_lowered_renders_each_backends_source():
    low = kfuse.jit(lambda x: np.exp(x) + 1.0).lower("f32[8]")
    assert low.backend is backends.CPU
    assert low.as_text("cpu") == backends.CPU.render(low.kernels()[0])
    assert low.as_text("cuda") == backends.CUDA.render(low.kernels()[0])
    with pytest.raises(ValueError, match="unknown stage"):
        low.as_text("llvm")


def test_missing_matmul_is_a_refusal_in_the_plan():
    plan = kfuse.explain(kfuse.jit(_matmul_bias, backend="numba-cuda"), "f32[64,64]", "f32[64,64]")
    (r,) = [r for r in plan.refused if isinstance(r, CapabilityRefusal)]
    assert r.backend == "numba-cuda" and "matmul is not supported by the numba-cuda backend" in r.reason
    assert "kernel 0 [matmul] on the numba-cuda backend" in str(plan)
    for name in ("cpu", "cuda"):                    # they have the feature: no refusal
        p = kfuse.explain(kfuse.jit(_matmul_bias, backend=name), "f32[64,64]", "f32[64,64]")
        assert not [r for r in p.refused if isinstance(r, CapabilityRefusal)]


def test_missing_scatter_atomic_is_a_refusal_in_the_plan():
    plan = kfuse.jit(_multiply_at, backend="numba-cuda").lower("f32[16]", "i64[4]").plan
    (r,) = [r for r in plan.refused if isinstance(r, CapabilityRefusal)]
    assert "np.multiply.at into a float32 array has no exact atomic" in r.reason
    assert "[scatter]" in r.what


def test_a_refused_plan_raises_before_anything_compiles(monkeypatch):
    from kfuse.backends.numba_cuda import NumbaCudaBackend
    from kfuse.runtime import numba_cuda
    monkeypatch.setattr(NumbaCudaBackend, "check_available", lambda self: None)   # no numba.cuda needed

    def compiled(*a, **k):
        raise AssertionError("the runtime was asked to compile a refused plan")
    monkeypatch.setattr(numba_cuda, "compile_plan", compiled)
    low = kfuse.jit(_matmul_bias, backend="numba-cuda").lower("f32[64,64]", "f32[64,64]")
    with pytest.raises(UnsupportedError, match="^kfuse: matmul is not supported by the numba-cuda backend"):
        low.compile()


def test_tuning_knobs_are_the_spaces_kinds():
    from kfuse.autotune import prune, space
    assert set(backends.CPU.tile_kinds) | set(backends.CUDA.tile_kinds) == set(space.KINDS)
    assert not set(backends.CPU.tile_kinds) & set(backends.CUDA.tile_kinds)
    plan = kfuse.explain(lambda x: np.exp(x).sum(axis=1), "f32[64,256]")
    for b in backends.with_feature(Feature.AUTOTUNE):
        for g in plan.groups:
            kinds = {c.kind for c in space.space_for(g, b, max_threads=4)} | {prune.heuristic(g, b, threads=2).kind}
            assert kinds <= set(b.tile_kinds), (b, kinds)
