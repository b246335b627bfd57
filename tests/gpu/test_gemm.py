"""GPU correctness of the generated GEMM + fused epilogue and of the cuBLAS + epilogue candidate,
against a float64 NumPy reference (relative Frobenius error: <= 1e-2 for f16/bf16, <= 1e-5 for
f32 without TF32). Skips itself without CuPy or a GPU."""
from __future__ import annotations

import numpy as np
import pytest

cp = pytest.importorskip("cupy")
try:
    if cp.cuda.runtime.getDeviceCount() < 1:
        pytest.skip("no CUDA device", allow_module_level=True)
except Exception as e:  # pragma: no cover
    pytest.skip(f"no CUDA device ({e})", allow_module_level=True)

from kfuse.codegen.gemm_cuda import EpInput, EpStep, GemmEpilogue, GemmSpec, GemmTile
from kfuse.runtime.gemm import GemmRunner

pytestmark = pytest.mark.gpu
RUNNER = GemmRunner()
RNG = np.random.default_rng(1234)


def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(u: np.ndarray) -> np.ndarray:
    return (np.asarray(u).astype(np.uint32) << 16).view(np.float32)


def operand(shape, dtype, transposed=False):
    """(device array, float64 host copy of exactly its values); transposed = a .T view."""
    full = shape[:-2] + (shape[-1], shape[-2]) if transposed else shape
    x = RNG.standard_normal(full).astype(np.float32)
    if dtype == "bf16":
        bits = to_bf16_bits(x)
        host, dev = from_bf16_bits(bits).astype(np.float64), cp.asarray(bits)
    else:
        npd = {"f16": np.float16, "f32": np.float32}[dtype]
        host = x.astype(npd).astype(np.float64)
        dev = cp.asarray(x.astype(npd))
    if transposed:
        host, dev = np.swapaxes(host, -1, -2), cp.swapaxes(dev, -1, -2)
    return dev, host


def ref_epilogue(ep: GemmEpilogue, acc, inputs, params):
    from math import erf
    v = [acc]
    for s in ep.steps:
        xs = []
        for tag, k in s.args:
            xs.append(v[k] if tag == "v" else inputs[k] if tag == "in" else params[k] if tag == "p" else k)
        x = xs[0]
        f = {"relu": lambda: np.maximum(x, 0), "gelu_tanh": lambda: 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3))),
             "gelu_erf": lambda: 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2))), "silu": lambda: x / (1 + np.exp(-x)),
             "tanh": lambda: np.tanh(x), "add": lambda: x + xs[1], "mul": lambda: x * xs[1], "sub": lambda: x - xs[1],
             "max": lambda: np.maximum(x, xs[1])}[s.op]
        v.append(f())
    return v[-1]


def rel_err(got, ref):
    return float(np.linalg.norm((got - ref).ravel()) / max(np.linalg.norm(ref.ravel()), 1e-30))


def check(M, N, K, dtype="f16", ep=None, batch=None, ta=False, tb=False, backend="generated",
          tile=None, out_dtype=None, params=()):
    out_dtype = out_dtype or ("f32" if dtype == "f32" else "f16")
    ep = ep or GemmEpilogue(out_dtype=out_dtype)
    pre = (batch,) if batch else ()
    a, ah = operand(pre + (M, K), dtype, ta)
    b, bh = operand(pre + (K, N), dtype, tb)
    ins, ins_h = [], []
    for inp in ep.inputs:
        shape = {"row": (N,), "col": (M, 1), "full": pre + (M, N), "scalar": ()}[inp.kind]
        d, h = operand(shape + (1, 1), inp.dtype)  # operand() wants >= 2 dims
        d, h = d.reshape(shape), h.reshape(shape)
        ins.append(d)
        ins_h.append(h)
    spec = GemmSpec(dtype, ep)
    out = RUNNER.run(a, b, ins, spec, tile, params=params, backend=backend)
    cp.cuda.runtime.deviceSynchronize()
    got = out.get()
    got = from_bf16_bits(got) if ep.out_dtype == "bf16" else got
    ref = ref_epilogue(ep, np.matmul(ah, bh), ins_h, params)
    assert got.shape == ref.shape
    assert np.isfinite(got).all()
    err = rel_err(got.astype(np.float64), ref)
    tol = 1e-5 if dtype == "f32" else 1e-2
    assert err <= tol, (M, N, K, dtype, err)
    return err


BIAS_GELU = GemmEpilogue.chain(("add", ("in", 0)), "gelu_tanh", inputs=(EpInput("f16", "row"),))


@pytest.mark.parametrize("M,N,K", [(1, 7, 33), (1, 8, 64), (37, 61, 45), (130, 257, 100),
                                   (128, 128, 128), (200, 136, 264)])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_f16_layouts_edges(M, N, K, ta, tb):
    check(M, N, K, "f16", BIAS_GELU, ta=ta, tb=tb)


@pytest.mark.parametrize("tile", [GemmTile(128, 128, 32, 2, 2, 4), GemmTile(128, 256, 32, 2, 4, 3),
                                  GemmTile(128, 128, 64, 2, 2, 3), GemmTile(64, 64, 32, 2, 2, 4)])
def test_tiles_1024(tile):
    err = check(1024, 1024, 1024, "f16", BIAS_GELU, tile=tile)
    assert err < 2e-3


def test_bf16_residual_relu():
    ep = GemmEpilogue.chain(("add", ("in", 0)), "relu", inputs=(EpInput("bf16", "full"),), out_dtype="bf16")
    check(300, 200, 130, "bf16", ep)
    check(1, 7, 33, "bf16", ep, tb=True)


def test_batched_col_bias_silu_scale():
    ep = GemmEpilogue.chain(("mul", ("p", 0)), ("add", ("in", 0)), "silu",
                            inputs=(EpInput("f16", "col"),), n_params=1, out_dtype="f32")
    check(65, 70, 40, "f16", ep, batch=3, params=(0.5,))
    check(65, 72, 48, "f16", ep, batch=3, params=(0.5,), ta=True)


def test_gelu_erf_and_dag():
    # x*0.5 then max with the accumulator itself (an SSA DAG, not a chain)
    ep = GemmEpilogue((EpStep("gelu_erf", (("v", 0),)), EpStep("max", (("v", 1), ("v", 0)))), (), 0, "f16")
    check(96, 80, 72, "f16", ep)


@pytest.mark.parametrize("M,N,K", [(1, 7, 33), (70, 33, 129), (256, 256, 256)])
def test_f32_fma(M, N, K):
    ep = GemmEpilogue.chain(("add", ("in", 0)), "tanh", inputs=(EpInput("f32", "row"),), out_dtype="f32")
    check(M, N, K, "f32", ep, tb=True)
    check(M, N, K, "f32", ep, batch=2)


@pytest.mark.parametrize("M,N,K", [(1, 7, 33), (130, 256, 100), (1024, 1024, 1024)])
def test_cublas_candidate(M, N, K):
    check(M, N, K, "f16", BIAS_GELU, backend="cublas")


def test_auto_records_choice():
    check(512, 512, 512, "f16", BIAS_GELU, backend="auto")
    assert RUNNER.last_choice in ("generated", "cublas")
    assert "bucket" in RUNNER.describe_choices()
