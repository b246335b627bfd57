"""Chained float32 helpers on the CPU (codegen/cpu.py's ``_CHAIN``): an elementwise loop whose
vectorised float32 helpers feed one another (mish: exp -> log1p -> tanh) runs in chunks, a loop a
link, the links' values kept in chunk rows. The chained kernel gives the fused loop's results bit for
bit (same ops, same order per element) at sizes that end in a partial chunk, in its sequential and
parallel forms; a loop with one helper, or helpers that do not feed one another, is left fused."""
from __future__ import annotations

import numpy as np
import pytest

import kfuse
from kfuse.codegen import cpu
from kfuse.testing import assert_matches_numpy

pytest.importorskip("numba")


def mish(x):
    return x * np.tanh(np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0))


def crossing(x):
    """A float32 op and a bool read by two links (kept in rows), two outputs, one stored early."""
    y = x * 0.5
    m = x > 0.25
    e = np.exp(np.where(m, y, -y))
    return e, np.where(m, np.tanh(e * y) + y, np.float32(0.0))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def side_by_side(x):
    return np.tanh(x) + np.exp(x * 0.1)


def _kernel(fn, spec, chained=True, monkeypatch=None):
    (kir,) = kfuse.jit(fn, backend="cpu").lower(spec).kernels()
    if not chained:
        monkeypatch.setattr(cpu._Emitter, "chain_levels", lambda self, order: None)
    src = cpu.emit(kir)
    if not chained:
        monkeypatch.undo()
    ns: dict = {}
    exec(compile(src, "<kernel>", "exec"), ns)
    return ns, kir, src


def _run(ns, kir, form, x):
    outs = [np.empty(x.shape, np.dtype(b.dtype)) for b in kir.outputs]
    ns[f"kfuse_kernel_{form}"](x, *outs, *[p.value for p in kir.sizes])
    return outs


@pytest.mark.parametrize("fn", [mish, crossing])
@pytest.mark.parametrize("shape", [(40_000,), (3, 2500), (5, 7)])
def test_chained_equals_fused_bit_for_bit(fn, shape, monkeypatch):
    x = (np.random.default_rng(3).standard_normal(shape) * 4).astype(np.float32)
    x.flat[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 90.0]
    spec = f"f32[{','.join(map(str, shape))}]"
    ns, kir, src = _kernel(fn, spec)
    assert "ch_" in src and src.count(" in range(n") >= 2        # chunk rows, a loop a link
    fused, fkir, fsrc = _kernel(fn, spec, chained=False, monkeypatch=monkeypatch)
    assert "ch_" not in fsrc
    want = _run(fused, fkir, "seq", x)
    for form in ("seq", "par"):
        got = _run(ns, kir, form, x)
        for g, w in zip(got, want):
            assert np.array_equal(g.view(np.uint32), w.view(np.uint32)) if g.dtype == np.float32 else np.array_equal(g, w)


def test_mish_matches_numpy_and_has_three_links():
    x = (np.random.default_rng(4).standard_normal((64, 3000)) * 3).astype(np.float32)
    assert_matches_numpy(kfuse.jit(mish, backend="cpu")(x), mish(x))
    _, _, src = _kernel(mish, "f32[64,3000]")
    assert src.count(" in range(n") == 3 and src.count("np.empty(1024") == 2    # exp, log1p kept


@pytest.mark.parametrize("fn", [gelu_tanh, side_by_side])
def test_others_stay_fused(fn):
    _, _, src = _kernel(fn, "f32[64,3000]")
    assert "ch_" not in src
