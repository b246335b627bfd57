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

from kfuse.codegen import kernel_ir as K
from kfuse.codegen.gemm_cuda import GemmTile
from kfuse.codegen.gemm_spec import EpInput, GemmEpilogue, GemmSpec
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
    """The epilogue's statements evaluated in float64 by NumPy (a cast rounds to its dtype)."""
    env = {ep.product: acc, **{f"p{j}": p for j, p in enumerate(params)}}
    for s in ep.body:
        if isinstance(s, K.Load):
            env[s.dst] = inputs[s.buf]
        elif isinstance(s, K.Const):
            env[s.dst] = s.value
        elif s.op == "cast":
            env[s.dst] = np.asarray(env[s.args[0]]).astype(s.dtype).astype(np.float64)
        else:
            env[s.dst] = getattr(np, s.op)(*(env[a] for a in s.args))
    return env[ep.result]


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
    ep = GemmEpilogue.chain(("multiply", ("p", 0)), ("add", ("in", 0)), "silu",
                            inputs=(EpInput("f16", "col"),), n_params=1, out_dtype="f32")
    check(65, 70, 40, "f16", ep, batch=3, params=(0.5,))
    check(65, 72, 48, "f16", ep, batch=3, params=(0.5,), ta=True)


def test_dag():
    # tanh of the accumulator, then max with the accumulator itself (an SSA DAG, not a chain)
    f32 = ("float32", "float32")
    ep = GemmEpilogue((K.Op("v0", "tanh", "float32", ("acc",), f32[:1]),
                       K.Op("v1", "maximum", "float32", ("v0", "acc"), f32)), "v1", out_dtype="f16")
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


# ---------------------------------------------------------------- the jit path (planner's pick)
def _p5(a, w, bias):
    y = a @ w + bias
    return 0.5 * y * (1.0 + np.tanh(0.7978845608028654 * (y + 0.044715 * (y * y * y))))


def _jit_program(f, *args):
    f(*args)
    (entry,) = f._programs.values()
    return entry.program


def _ref_p5(a, w, bias):
    return _p5(*(x.get().astype(np.float64) for x in (a, w, bias)))


@pytest.mark.parametrize("M,N,K", [(1, 7, 33), (37, 61, 45), (256, 512, 128), (1024, 1024, 1024)])
def test_jit_p5_f16_follows_plan(M, N, K):
    """kfuse.jit of GEMM + bias + GELU runs the implementation the plan shows and matches a
    float64 reference (the cuBLAS path writes its epilogue in place into the product)."""
    import kfuse
    a = cp.asarray(RNG.standard_normal((M, K)).astype(np.float16))
    w = cp.asarray(RNG.standard_normal((K, N)).astype(np.float16))
    bias = cp.asarray(RNG.standard_normal((N,)).astype(np.float16))
    f = kfuse.jit(_p5)
    prog = _jit_program(f, a, w, bias)
    (g,) = prog.plan.groups
    assert g.cost.impl in ("generated", "cublas+epilogue")
    assert f"impl:   {g.cost.impl}" in str(prog.plan)
    got = f(a, w, bias)
    cp.cuda.runtime.deviceSynchronize()
    gen, donor, epi = prog._mm_info[g.id]
    assert (gen is not None) == (g.cost.impl == "generated")
    if g.cost.impl == "cublas+epilogue":
        assert donor == 0 and epi is not None
    assert rel_err(got.get().astype(np.float64), _ref_p5(a, w, bias)) <= 1e-2


@pytest.mark.parametrize("impl", ["generated", "cublas+epilogue", "cublas+group-epilogue"])
@pytest.mark.parametrize("dtype,tol", [("float16", 1e-2), ("float32", 1e-5)])
def test_jit_both_impls_forced(impl, dtype, tol, monkeypatch):
    """Either implementation through the jit runtime (the plan's pick overridden), incl. a
    transposed weight (a view: no copy) and batched 3-D operands; the cuBLAS path with the GEMM
    epilogue kernel in place (default) and with the group's own elementwise kernel in place."""
    import dataclasses
    import kfuse
    from kfuse.runtime import gpu_launch
    if impl == "cublas+group-epilogue":
        monkeypatch.setattr(gpu_launch, "CUBLAS_EPILOGUE", "group")
        impl = "cublas+epilogue"
    def fn_t(a, w, bias):
        return _p5(a, w.T, bias)
    for shapes, tw in ((((70, 33), (129, 33), (129,)), True), (((3, 65, 40), (3, 40, 72), (72,)), False)):
        xs = [cp.asarray(RNG.standard_normal(s).astype(dtype)) for s in shapes]
        f = kfuse.jit(fn_t if tw else _p5)
        prog = _jit_program(f, *xs)
        (g,) = prog.plan.groups
        object.__setattr__(g, "cost", dataclasses.replace(g.cost, impl=impl))
        prog._mm_info.clear()
        got = f(*xs)
        gen, donor, epi = prog._mm_info[g.id]
        assert (gen is not None) == (impl == "generated")
        assert (epi is not None) == (impl != "generated" and gpu_launch.CUBLAS_EPILOGUE == "gemm")
        hs = [x.get().astype(np.float64) for x in xs]
        ref = _p5(hs[0], hs[1].T if tw else hs[1], hs[2])
        assert rel_err(got.get().astype(np.float64), ref) <= tol, (impl, dtype, shapes)


def test_jit_in_place_not_used_when_product_is_an_output():
    import kfuse

    def fn(a, w, bias):
        y = a @ w
        return y, np.maximum(y + bias, 0)
    xs = [cp.asarray(RNG.standard_normal(s).astype(np.float16)) for s in ((64, 32), (32, 48), (48,))]
    f = kfuse.jit(fn)
    prog = _jit_program(f, *xs)
    y, z = f(*xs)
    hs = [x.get().astype(np.float64) for x in xs]
    ref_y = hs[0] @ hs[1]
    assert rel_err(y.get().astype(np.float64), ref_y) <= 1e-2
    assert rel_err(z.get().astype(np.float64), np.maximum(ref_y + hs[2], 0)) <= 1e-2
    for g in prog.plan.groups:
        if g.kind == "matmul" and g.anchor in g.outputs:
            assert prog._mm_info[g.id][1] is None


def test_allow_tf32_cublas_and_exact_f32_default():
    """f32 without TF32 stays within 1e-5 (cuBLAS SGEMM / FMA); with allow_tf32 the cuBLAS
    candidate runs TF32 (error ~1e-4..1e-3, still << f16's) and CuPy's compute type is restored."""
    from cupy._core import _routines_linalg as L
    from kfuse.codegen.kernel_ir import Contraction
    from kfuse.runtime.gpu_launch import contract
    a = cp.asarray(RNG.standard_normal((512, 1024)).astype(np.float32))
    b = cp.asarray(RNG.standard_normal((1024, 256)).astype(np.float32))
    ref = a.get().astype(np.float64) @ b.get().astype(np.float64)
    c = Contraction(0, 1, "float32", 2)
    before = L.get_compute_type(np.float32)
    exact = rel_err(contract(c, [a, b]).get().astype(np.float64), ref)
    tf32 = rel_err(contract(c, [a, b], allow_tf32=True).get().astype(np.float64), ref)
    assert L.get_compute_type(np.float32) == before
    assert exact <= 1e-5, exact
    assert tf32 <= 1e-2, tf32
    ep = GemmEpilogue.chain(("add", ("in", 0)), "relu", inputs=(EpInput("f32", "row"),), out_dtype="f32")
    check(130, 256, 100, "f32", ep, backend="cublas")          # exact f32 via cuBLAS: <= 1e-5


def test_batched_f16_contract_no_f32_detour():
    """3-D f16 products go through one strided-batched cuBLAS call (CuPy's matmul would copy the
    operands to f32), for row- and column-major operands."""
    from kfuse.codegen.kernel_ir import Contraction
    from kfuse.runtime.gpu_launch import contract
    for ta, tb in ((False, False), (True, False), (False, True)):
        a, ah = operand((4, 33, 70), "f16", ta)
        b, bh = operand((4, 70, 45), "f16", tb)
        got = contract(Contraction(0, 1, "float16", 2), [a, b])
        assert got.dtype == np.float16 and got.shape == (4, 33, 45)
        assert rel_err(got.get().astype(np.float64), np.matmul(ah, bh)) <= 1e-2


def test_cublas_candidate_in_place_and_reverse():
    """The runner's cuBLAS candidate: in place (no out), rows either order, or into a given out."""
    M, N, K = 300, 264, 96
    a, ah = operand((M, K), "f16")
    b, bh = operand((K, N), "f16")
    bias, biash = operand((N, 1), "f16")
    bias, biash = bias.reshape(N), biash.reshape(N)
    ref = ref_epilogue(BIAS_GELU, ah @ bh, [biash], ())
    for rev in (False, True):
        got = RUNNER.run(a, b, [bias], GemmSpec("f16", BIAS_GELU), backend="cublas", reverse=rev)
        assert rel_err(got.get().astype(np.float64), ref) <= 1e-2
    out = cp.empty((M, N), cp.float16)
    got = RUNNER.run(a, b, [bias], GemmSpec("f16", BIAS_GELU), backend="cublas", out=out)
    assert got.data.ptr == out.data.ptr
    assert rel_err(out.get().astype(np.float64), ref) <= 1e-2
