"""Fault injection where the compiler touches the outside world: NVRTC rejecting a source,
out-of-memory at allocation, KeyboardInterrupt during compilation. Each checks the error is clear
and the disk cache holds no partial entry (CPU-runnable; NVRTC needs no GPU)."""
import os

import numpy as np
import pytest

import kfuse
from kfuse import config
from kfuse.errors import CompileError, KfuseError
from kfuse.runtime import cpu as cpu_rt


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("KFUSE_CACHE_DIR", str(d))
    monkeypatch.setenv("KFUSE_CACHE", "1")
    monkeypatch.setenv("KFUSE_DUMP_DIR", str(tmp_path / "dump"))
    config.reload()
    monkeypatch.setattr(cpu_rt, "_COMPILED", {})     # a fresh memo: this test really compiles
    yield d
    monkeypatch.undo()
    config.reload()


def _entries(d):
    """(complete entries, problems): every entry folder under kernels/ must verify, tmp/ empty."""
    from kfuse.runtime.cache import CacheStore
    if not d.exists():
        return [], []
    store = CacheStore.open(config.get())
    infos = list(store.entries("kernels", verify=True))
    bad = [f"{i.path}: {i.error}" for i in infos if i.error]
    tmp = d / "tmp"
    if tmp.exists():
        bad += [f"left in tmp: {n}" for n in os.listdir(tmp)]
    return [i for i in infos if not i.error], bad


def test_nvrtc_rejects_source(cache_dir):
    pytest.importorskip("cuda.bindings.nvrtc")
    from kfuse.codegen import nvrtc
    bad = 'extern "C" __global__ void k(float* x) { x[0] = undefined_name + ; }\n'
    with pytest.raises(KfuseError) as ei:
        nvrtc.compile(bad, name="fuzz_bad")
    assert isinstance(ei.value, CompileError)
    msg = str(ei.value)
    assert "undefined_name" in msg or "error" in msg.lower()      # the NVRTC log
    path = next((w for w in msg.replace("\n", " ").split() if w.endswith(".cu")), None)
    assert path and os.path.exists(path), f"no saved source path in: {msg}"
    with open(path) as f:
        assert f.read() == bad


class _NumpyWithoutMemory:
    """numpy, except that ``empty`` fails like an allocation that does not fit."""

    def __getattr__(self, name):
        if name == "empty":
            def empty(*a, **k):
                raise MemoryError("injected: cannot allocate")
            return empty
        return getattr(np, name)


def test_out_of_memory_at_allocation(cache_dir, monkeypatch):
    def f(x):
        return np.hypot(x, 3.5) - np.arctan(x) * 0.75

    x = np.linspace(-2, 2, 64).reshape(8, 8)
    monkeypatch.setattr(cpu_rt, "np", _NumpyWithoutMemory())
    with pytest.raises(MemoryError):
        kfuse.jit(f, backend="cpu")(x)
    entries, bad = _entries(cache_dir)
    assert not bad
    assert entries == [], "a kernel entry was written although nothing ran"
    monkeypatch.setattr(cpu_rt, "np", np)
    np.testing.assert_allclose(kfuse.jit(f, backend="cpu")(x), f(x), rtol=1e-12)
    assert _entries(cache_dir)[0], "the cache should hold the kernel once it ran"


def _interrupt_once(monkeypatch, module, name):
    real = getattr(module, name)
    calls = []

    def wrapper(*a, **k):
        if not calls:
            calls.append(1)
            raise KeyboardInterrupt
        return real(*a, **k)
    monkeypatch.setattr(module, name, wrapper)
    return calls


def test_keyboard_interrupt_before_compile(cache_dir, monkeypatch):
    def f(x):
        return np.cbrt(x) * np.arctan(x) - x * 0.125

    x = np.linspace(-3, 3, 30).reshape(5, 6)
    calls = _interrupt_once(monkeypatch, cpu_rt, "_build")
    with pytest.raises(KeyboardInterrupt):
        kfuse.jit(f, backend="cpu")(x)
    assert calls
    entries, bad = _entries(cache_dir)
    assert not bad and entries == []
    np.testing.assert_allclose(kfuse.jit(f, backend="cpu")(x), f(x), rtol=1e-12)
    entries, bad = _entries(cache_dir)
    assert not bad and entries, "the next call should compile and store the kernel"


def test_keyboard_interrupt_while_saving_compiled_code(cache_dir, monkeypatch):
    from kfuse.runtime import cpu_persist

    def f(x):
        return np.expm1(x) + np.log1p(np.abs(x)) * 0.375

    x = np.linspace(-1, 1, 24).reshape(4, 6).astype(np.float32)
    calls = _interrupt_once(monkeypatch, cpu_persist, "_serialize")
    with pytest.raises(KeyboardInterrupt):
        kfuse.jit(f, backend="cpu")(x)
    assert calls, "the compiled code was never saved: the injection point moved"
    entries, bad = _entries(cache_dir)
    assert not bad, bad
    got = kfuse.jit(f, backend="cpu")(x)
    np.testing.assert_allclose(got, f(x), rtol=2e-5, atol=1e-6)
    assert got.dtype == np.float32
    # the dispatcher keeps the machine code it compiled before the interrupt, so this call may
    # not save it again: an entry is optional, a partial one is a bug
    entries, bad = _entries(cache_dir)
    assert not bad, bad
