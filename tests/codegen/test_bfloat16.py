"""bfloat16 without a GPU: promotion (as NumPy's float16, kfuse.ir.dtypes), the CUDA C it becomes
(NVRTC for sm_80/sm_90, ptxas where installed), the CLI dumps, and the clear refusals of the
backends that have no bfloat16 arithmetic. The results on a GPU: tests/gpu/test_bfloat16_gpu.py."""
import os
import re
import shutil
import subprocess
import sys

import ml_dtypes

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "gpu"))

import kfuse  # noqa: E402
from kfuse.ir import dtypes  # noqa: E402
from kfuse.fusion.simplify import _lossless  # noqa: E402

BF, F16, F32, F64 = dtypes.BF16, np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
PTXAS = shutil.which("ptxas") or ("/usr/local/bin/ptxas" if os.path.exists("/usr/local/bin/ptxas") else None)


@pytest.mark.parametrize("keys, want", [
    ((BF, BF), BF), ((BF, float), BF), ((BF, int), BF), ((BF, np.dtype(np.int8)), BF),
    ((BF, np.dtype(np.uint8)), BF), ((BF, np.dtype(np.bool_)), BF), ((BF, np.dtype(np.int16)), F32),
    ((BF, F16), F32), ((F16, BF), F32), ((BF, F32), F32), ((BF, F64), F64), ((BF, np.dtype(np.int32)), F64),
])
def test_bfloat16_promotes_as_float16(keys, want):
    assert dtypes.resolve(np.add, keys)[-1] == want
    assert dtypes.resolve(np.greater, keys)[-1] == np.bool_
    assert dtypes.result_type(*[0.0 if k is float else 0 if k is int else k for k in keys]) == want


@pytest.mark.parametrize("other", sorted(dtypes.SUPPORTED, key=str))
def test_bfloat16_promotion_is_ml_dtypes_where_it_has_one(other):
    """Where ml_dtypes' NumPy promotes bfloat16 (bool, int8, uint8, bfloat16, float32, float64)
    kfuse agrees; elsewhere (int16+, float16) NumPy raises and kfuse's rule is the documented one."""
    try:
        want = np.result_type(BF, other)
    except TypeError:            # DTypePromotionError
        want = None
    for keys in ((BF, other), (other, BF)):
        got = dtypes.result_type(*keys)
        assert got == dtypes.resolve(np.multiply, keys)[-1] == dtypes.resolve(np.maximum, keys)[-1]
        if want is not None:
            assert got == want, keys
        else:
            assert got in (F32, F64)
    arr = kfuse.jit(lambda x, y: np.where(x > 0, x, y)).trace("bf16[4]", f"{dtypes.short_name(other)}[4]")
    assert arr.outputs[0].dtype == dtypes.result_type(BF, other)


def test_bfloat16_ufuncs_and_reductions_keep_their_dtype():
    f = kfuse.jit(lambda x: (np.exp(x), np.sqrt(x) * 0.5, x.sum(axis=1), x.mean(axis=1), x.max(axis=1),
                             x > 1, x.astype(np.float32)))
    dts = [o.dtype for o in f.trace("bf16[4,8]").outputs]
    assert dts == [BF, BF, BF, BF, BF, np.bool_, F32]
    g = kfuse.jit(lambda x: (np.round(x), np.rint(x), np.isnan(x), np.abs(x) ** 0.5, x.min(axis=0), x.argmax(axis=1)))
    dts = [o.dtype for o in g.trace("bf16[4,8]").outputs]
    assert dts == [BF, BF, np.bool_, BF, BF, np.int64]


def test_cost_model_computes_bfloat16_in_float32():
    from kfuse.fusion.cost import compute_dtype
    graph = kfuse.jit(lambda x: np.exp(x) * 2).trace("bf16[64]")
    assert compute_dtype(graph.nodes()) == F32


def test_lossless_casts_know_bfloat16():
    assert _lossless(BF, F32) and _lossless(BF, F64) and _lossless(np.dtype(np.int8), BF)
    assert not _lossless(BF, F16) and not _lossless(F16, BF) and not _lossless(F32, BF)
    assert not _lossless(np.dtype(np.int16), BF)


def test_cpu_backend_refuses_bfloat16_clearly():
    x = np.ones((4, 8), ml_dtypes.bfloat16)
    with pytest.raises(kfuse.UnsupportedError, match="argument 'x' of .* bfloat16.*CUDA C backend only"):
        kfuse.jit(lambda x: x * 2)(x)
    with pytest.raises(kfuse.UnsupportedError, match="bfloat16 runs on the CUDA C backend only"):
        kfuse.jit(lambda x: x.astype(ml_dtypes.bfloat16) * 2)(np.ones(8, np.float32))
    mm = kfuse.jit(lambda a, b: a @ b).trace("bf16[4,8]", "bf16[8,2]")   # NumPy's loop: float32
    (out,) = mm.outputs
    assert out.dtype == F32 and out.shape == (4, 2)


def test_torch_cpu_bfloat16_tensors_are_refused_clearly():
    torch = pytest.importorskip("torch")
    with pytest.raises(kfuse.UnsupportedError, match="argument 'x' of .* bfloat16.*CUDA C backend only"):
        kfuse.jit(lambda x: x * 2)(torch.ones(4, 8, dtype=torch.bfloat16))


def test_device_storage_of_bfloat16_is_its_bits():
    """What the GPU runtime relies on without a GPU: CuPy holds bfloat16 as uint16, and a CuPy
    caller whose function returns bfloat16 is told why before anything runs."""
    from kfuse.runtime import interop
    assert interop.storage_dtype(BF) == np.uint16 and interop.storage_dtype(F16) == F16
    g = kfuse.jit(lambda x: (x * 2, x.astype(ml_dtypes.bfloat16))).trace("f32[8]")
    with pytest.raises(kfuse.UnsupportedError, match=r"bfloat16 result needs torch tensors.*cast bf16\[8\]"):
        interop.refuse_bf16_results_for_cupy(g.outputs)
    interop.refuse_bf16_results_for_cupy(g.outputs[:1])


def _layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def _casts(x, d, h, i, q, u):
    return (x.astype(np.float32) * 2, d.astype(ml_dtypes.bfloat16), h.astype(ml_dtypes.bfloat16),
            i.astype(ml_dtypes.bfloat16), q.astype(ml_dtypes.bfloat16), x.astype(np.float16), x + h,
            u.astype(ml_dtypes.bfloat16), x.astype(np.int32), x.astype(np.float64), x.astype(np.uint8))


CASES = {
    "layernorm": (_layernorm, ("bf16[64,128]", "bf16[128]", "bf16[128]")),
    "softmax": (lambda x: np.exp(x - x.max(axis=-1, keepdims=True)) / np.exp(x - x.max(axis=-1, keepdims=True)).sum(
        axis=-1, keepdims=True), ("bf16[64,128]",)),
    "mixed": (lambda x, y: np.tanh(x * 0.5 + y) * y, ("bf16[64,128]", "f32[128]")),
    "casts": (_casts, ("bf16[256]", "f64[256]", "f16[256]", "i32[256]", "i64[256]", "u64[256]")),
    "chain": (lambda x, y: np.maximum(x * y + 1.5, 0) - np.sqrt(np.abs(y)), ("bf16[64,128]", "bf16[64,128]")),
}


@pytest.mark.parametrize("name", CASES)
def test_bfloat16_cuda_c_compiles(name, tmp_path):
    pytest.importorskip("cuda.bindings.nvrtc")
    fn, specs = CASES[name]
    lowered = kfuse.jit(fn).lower(*specs, backend="cuda", device="h100")
    src = lowered.as_text("cuda")
    assert "unsigned short* __restrict__ out" in src or name == "mixed"
    assert "kf_bf2f(" in src and "kf_f2bf(" in src
    from kfuse.codegen import cuda, nvrtc
    for arch in ("sm_80", "sm_90"):
        ptx = lowered.ptx(arch)     # kf_f2bf: the packed conversion; kf_bfadd and kf_bfmul: fma on the bits
        assert "cvt.rn.bf16x2.f32" in ptx or "fma.rn.bf16" in ptx
        for k, kir in enumerate(lowered.kernels(for_gpu=True)):
            ptx = nvrtc.compile(cuda.emit(kir), arch).ptx
            if PTXAS:
                p = tmp_path / f"{name}_{k}_{arch}.ptx"
                p.write_text(nvrtc.for_installed(ptx))
                r = subprocess.run([PTXAS, f"-arch={arch}", str(p), "-o", str(p) + ".o"], capture_output=True, text=True)
                assert r.returncode == 0, r.stderr


def test_bfloat16_casts_round_once():
    src = kfuse.jit(_casts).lower(*CASES["casts"][1], backend="cuda").as_text("cuda")
    assert "kf_d2bf(v" in src                      # float64 -> bfloat16: one rounding (round-to-odd first)
    assert "kf_d2bf((double)v" in src              # int32 -> bfloat16 through float64 (exact there)
    assert "kf_ll2bf(v" in src and "kf_ull2bf(v" in src   # int64/uint64: round-to-odd float64 first
    # float16 -> bfloat16: the float16 value (a load's, declared from its bits), rounded once
    h = re.search(r"const unsigned short (v\d+)_h = kf_f2bf\((v\d+)\);", src)
    assert h and f"const float {h[2]} = kf_h2f({h[2]}_h);" in src, src


def test_bfloat16_elementwise_loads_8_lanes_a_vector():
    src = kfuse.jit(CASES["chain"][0]).lower(*CASES["chain"][1], backend="cuda").as_text("cuda")
    assert "KfVec<unsigned short, 8>" in src        # 16-byte vector loads/stores, as float16's


def test_dump_cuda_cli_takes_bf16_specs(tmp_path):
    pytest.importorskip("cuda.bindings.nvrtc")
    from kfuse import cli
    f = tmp_path / "m.py"
    f.write_text("import numpy as np\ndef f(x, y):\n    return np.exp(x) + y\n")
    out = tmp_path / "k.cu"
    assert cli.main(["dump-cuda", f"{f}:f", "bf16[32,64]", "bf16[64]", "-o", str(out)]) == 0
    assert "kf_bf2f(" in out.read_text()
    ptx = tmp_path / "k.ptx"
    assert cli.main(["dump-ptx", f"{f}:f", "bf16[32,64]", "bf16[64]", "--arch", "sm_80", "-o", str(ptx)]) == 0
    assert "cvt.rn.bf16x2.f32" in ptx.read_text()
