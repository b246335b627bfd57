"""The index of rendered CUDA C kernels (runtime/rendered.py): a warm process finds a kernel's
source by its kernel IR and variant without rendering it; another kernel, variant or code
generator is a miss; the canonical text tells apart what the code tells apart."""
import numpy as np
import pytest

import kfuse
from fake_gpu import FakeCupy, count_renders, fake_gpu
from kfuse.codegen import cuda as cuda_emit
from kfuse.codegen import kernel_ir as K
from kfuse.runtime import keys, rendered
from kfuse.runtime.cache import CacheStore


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


@pytest.fixture
def store(tmp_path, monkeypatch):
    from kfuse import config
    monkeypatch.setenv("KFUSE_CACHE_DIR", str(tmp_path / "c"))
    config.reload()
    yield CacheStore.open()
    monkeypatch.undo()
    config.reload()


@pytest.fixture
def renders(monkeypatch):
    """The kernels rendered (by name) while the test runs."""
    return count_renders(monkeypatch)


def _kir(fn=softmax, spec="f32[64,512]"):
    (kir,) = kfuse.jit(fn, backend="cuda").lower(spec).kernels()
    return kir


def test_a_filed_kernel_is_read_back_without_rendering(store, renders):
    kir = _kir()
    v = cuda_emit.default_variant(kir)
    made = rendered.kernel(store, kir, v)
    assert renders == [made.name]
    rendered._IR_TEXT.clear()                               # (as a new process)
    again = rendered.kernel(CacheStore.open(), kir, v)
    assert again == made and renders == [made.name]         # source, name, divisors, scalars
    other = cuda_emit.Variant("row", 1, False, 0, 128)
    assert rendered.kernel(store, kir, other).source == cuda_emit.emit_kernel(kir, other).source
    assert len(renders) == 3                                 # another variant: rendered


def test_another_kernel_or_code_generator_is_a_miss(store, renders, monkeypatch):
    kir = _kir()
    v = cuda_emit.default_variant(kir)
    rendered.kernel(store, kir, v)
    neg = _kir(lambda x: x / -0.0, "f32[64]")
    pos = _kir(lambda x: x / 0.0, "f32[64]")
    vn = cuda_emit.default_variant(neg)
    assert rendered.kernel(store, pos, vn).source != rendered.kernel(store, neg, vn).source
    assert len(renders) == 3
    monkeypatch.setattr(keys, "emitter_hash", lambda store=None: "other code")
    assert rendered.kernel(store, kir, v) == cuda_emit.emit_kernel(kir, v)
    assert len(renders) == 5                                 # (and the reference rendering)


def test_sizes_are_not_in_the_key():
    a, b = _kir(spec="f32[64,512]"), _kir(spec="f32[100,300]")
    v = cuda_emit.default_variant(a)
    assert a != b and rendered.index_key(a, v) == rendered.index_key(b, v)


def test_canonical_text_tells_values_apart():
    c = rendered.canonical
    assert len({c(0.0), c(-0.0), c(0), c(False), c(float("nan")), c("0.0"), c(None)}) == 7
    assert c(K.Const("v", "float32", 1.0)) != c(K.Const("v", "float32", 1))
    assert c(K.ILit(1)) != c(K.IVar("1"))
    assert c(frozenset({"a", "b", "c"})) == c(frozenset({"c", "b", "a"}))
    assert c((1, 2)) != c([1, 2]) and c(((1,), 2)) != c((1, (2,)))
    with pytest.raises(TypeError):
        c(object())
    with pytest.raises(TypeError):
        c(np.float32(1.0))                                   # (no loose key for other types)


def test_warm_first_call_renders_nothing(store, renders, monkeypatch):
    """A new process with a warm cache (the process memos emptied) launches the same kernels
    without rendering any: the launch variant's source and the tuning key's come from the index."""
    from kfuse.autotune import tuner
    from kfuse.runtime import cuda
    x = FakeCupy(np.random.default_rng(0).random((64, 512), dtype=np.float32))
    with fake_gpu(monkeypatch) as log:
        monkeypatch.setattr(cuda, "_EMITTED", {})
        tuner.reset()
        kfuse.jit(softmax, backend="cuda")(x)
        first = log.take()
        assert renders                                       # (rendered and filed)
        renders.clear()
        monkeypatch.setattr(cuda, "_EMITTED", {})
        rendered._IR_TEXT.clear()
        tuner.reset()
        kfuse.jit(softmax, backend="cuda")(x)
        assert log.take() == first and renders == []
    tuner.reset()
