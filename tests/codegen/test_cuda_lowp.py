"""16-bit float values on their bits in the CUDA C emitter (``codegen.cuda_lowp``): the rounding
argument the bits ops rest on, what a float16/bfloat16 chain renders, and every kernel the runtime
launches for the corpus's 16-bit workloads compiling (a value's bits exist only in its declaration's
scope, so a consumer in another scope would be a compile error)."""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import kfuse
from fake_gpu import FakeCupy, FakeTensor, fake_gpu

BF16 = np.dtype(ml_dtypes.bfloat16)


def _sample(dtype, n, rng):
    """``n`` values of 16-bit ``dtype`` over every bit pattern class: normals, subnormals, zeros,
    infinities, NaNs."""
    return rng.integers(0, 1 << 16, n, dtype=np.uint32).astype(np.uint16).view(dtype)


@pytest.mark.parametrize("dtype", [np.dtype(np.float16), BF16], ids=["float16", "bfloat16"])
def test_float32_then_round_is_the_exact_result_rounded_once(dtype):
    """NumPy's (and ml_dtypes') 16-bit add/subtract/multiply compute in float32 and round; the
    hardware's bits ops round the exact result once. They agree (float32 holds 2p+2 bits of a p-bit
    format): the float64 result is exact for both formats' sums and products, rounded once here."""
    rng = np.random.default_rng(7)
    a, b = _sample(dtype, 200_000, rng), _sample(dtype, 200_000, rng)
    with np.errstate(all="ignore"):
        for op in (np.add, np.subtract, np.multiply):
            numpy_way = op(a, b)
            exact_once = op(a.astype(np.float64), b.astype(np.float64)).astype(dtype)
            same = (numpy_way.view(np.uint16) == exact_once.view(np.uint16)) | (
                np.isnan(numpy_way.astype(np.float32)) & np.isnan(exact_once.astype(np.float32)))
            assert same.all(), (op.__name__, a[~same][:4], b[~same][:4])


C_GELU = 0.7978845608028654


def _geglu(x):
    n = x.shape[-1] // 2
    y = x[:, :n]
    return 0.5 * y * (1.0 + np.tanh(C_GELU * (y + 0.044715 * (y * y * y)))) * x[:, n:]


def _kernel_body(src: str) -> str:
    return src[src.index('extern "C" __global__'):]


def test_float16_chain_runs_on_the_bits():
    body = _kernel_body(kfuse.jit(_geglu).lower("f16[64,256]", backend="cuda").as_text("cuda"))
    assert body.count("kf_hmul(") == 7 and body.count("kf_hadd(") == 2, body
    assert "kf_h2f(kf_f2h(" not in body                    # no float32 op rounded through a conversion pair
    assert re.search(r"const unsigned short v\d+_h = kf_f2h\(tanhf\(v\d+\)\);", body)   # tanh: float32, rounded once
    assert re.search(r"o_0\.v\[e_\] = v\d+_h;", body)      # stored as its bits


def test_bfloat16_chain_runs_on_the_bits_and_compiles():
    pytest.importorskip("cuda.bindings.nvrtc")
    lowered = kfuse.jit(lambda x, y: (x * y + x) - y * 0.5).lower("bf16[64,128]", "bf16[64,128]", backend="cuda")
    body = _kernel_body(lowered.as_text("cuda"))
    assert "kf_bfmul(" in body and "kf_bfadd(" in body and "kf_bfsub(" in body, body
    assert "kf_f2bf(" not in body                          # loads, ops and the store all on the bits
    for arch in ("sm_80", "sm_90"):
        assert "fma.rn.bf16" in lowered.ptx(arch)


def test_a_cast_out_of_a_rounded_value_converts_once():
    body = _kernel_body(kfuse.jit(lambda h, g: (h + h).astype(np.float32) * g).lower(
        "f16[64,256]", "f32[256]", backend="cuda").as_text("cuda"))
    assert re.search(r"const float (v\d+) = (v\d+);", body), body      # float16 -> float32: the value itself
    assert "kf_f2h(v" not in body


def _bits_entries():
    from kfuse.bench.corpus import ENTRIES
    return [e for e in ENTRIES if {"float16", "bfloat16"} & set(e.dtypes) and "cpu" in e.sizes]


@pytest.mark.parametrize("entry", _bits_entries(), ids=lambda e: e.name)
def test_every_launched_16_bit_kernel_compiles(entry, monkeypatch):
    """Each kernel the CUDA C runtime launches for the entry (at its CPU and tiny sizes: row kernels
    held in registers or re-read, peeled and packed rows, elementwise vectors) compiles with NVRTC."""
    pytest.importorskip("cuda.bindings.nvrtc")
    from kfuse.codegen import nvrtc
    sources = {}
    with fake_gpu(monkeypatch) as log:
        for size in ("cpu", "tiny"):
            if size not in entry.sizes:
                continue
            case = entry.case(size)
            args = [FakeTensor(a) if a.dtype == BF16 else FakeCupy(a) for a in case.make_inputs()]
            kfuse.jit(case.body(np))(*args)
        for name, source, *_ in log.take():
            sources[name] = source
    assert sources
    for name, source in sources.items():
        assert nvrtc.compile(source, "sm_90").ptx, name
