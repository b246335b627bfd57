"""Numba-CUDA emitter without a GPU: emit numba.cuda source for hand-built plans, compile it to PTX for
sm_90 with numba.cuda.compile_ptx (libNVVM; skipped when numba-cuda or libNVVM is missing) and
assemble the PTX with ptxas where it is installed."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "gpu"))

from handplan import one_group_plan, trace  # noqa: E402
from kfuse.codegen import kernel_ir as K  # noqa: E402
from kfuse.codegen import numba_cuda as nc  # noqa: E402
from kfuse.codegen.lower import lower_group  # noqa: E402
from kfuse.errors import DeviceError  # noqa: E402

from tests.codegen.ptx_backends import PTXAS  # noqa: E402


def gelu(x, w, b):
    y = x * w + b
    return 0.5 * y * (1 + np.tanh(0.7978845608 * (y + 0.044715 * y ** 3)))


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def mixed(a, b):
    return a // b, a % b, a << 3, a >> 2, np.maximum(a, b), (a * b - a).astype(np.float16)


def argred(x):
    return x.argmax(axis=1), x.min(axis=1), (x > 0).any(axis=1)


CASES = {
    "gelu": (gelu, [("f32", (64, 128)), ("f32", (128,)), ("f32", (128,))]),
    "softmax": (softmax, [("f32", (64, 128))]),
    "int8": (mixed, [("i8", (16, 8)), ("i8", (8,))]),
    "argred": (argred, [("f16", (16, 40))]),
}


def _kir(name, shapes=None):
    fn, specs = CASES[name]
    return lower_group(one_group_plan(trace(fn, *specs)).groups[0])


def _variants(kir):
    v = nc.default_variant(kir)
    return [v, nc.NVariant("col", 1, 0, 128)] if kir.kind == "reduce" else [v]


def test_source_is_valid_python_and_size_free():
    for name in CASES:
        kir = _kir(name)
        for v in _variants(kir):
            src = nc.emit(kir, v)
            compile(src, name, "exec")
            assert "def kfuse_kernel(" in src and "SIG = (" in src
            body = src.split("def kfuse_kernel")[1]
            body = re.sub(r"bdim_ = np\.int64\(\d+\)", "", body)     # (the variant's block: a launch shape, not a size)
            for s in kir.sizes:                     # no extent is baked into the kernel
                if s.value > 40:
                    assert not re.search(rf"(?<![\w.]){s.value}(?![\w.])", body), (name, s)
    a = nc.emit(_kir("gelu"))
    fn, _ = CASES["gelu"]
    b = nc.emit(lower_group(one_group_plan(trace(fn, ("f32", (32, 256)), ("f32", (256,)),
                                                    ("f32", (256,)))).groups[0]))
    assert a == b                                   # a new size reuses the compiled kernel


def test_fastdiv_unravels_by_multiply_high():
    """A multi-dim elementwise kernel under 2^31 elements divides by multiply-high with host
    divisors (two int32 parameters a divided dim, after the strides): no remainder and one
    division (the grid-stride loop's trip count) left in its PTX, where the plain variant
    divides and takes a remainder per element; the launcher passes the pairs."""
    kir = _kir("gelu")
    fast = nc.default_variant(kir)
    assert fast.fastdiv and fast.tag.endswith("f") and nc.fast_div_dims(kir) == [1]
    src = nc.emit(kir, fast)
    assert "dv1_m, dv1_s)" in src and "ld.umulhi(" in src and " % " not in src.split("def kfuse_kernel")[1]
    ptx = nc.compile_ptx(src)
    def count(pattern, text):
        return len(re.findall(pattern, text))
    assert count(r"mul\.hi\.u32", ptx) >= 5 and count(r"\brem\.[su]64", ptx) == 0
    assert count(r"\bdiv\.[su]64", ptx) <= 1     # at most the trip count (gelu's y ** 3 is a pow call)
    plain = nc.compile_ptx(nc.emit(kir, nc.NVariant("elementwise", 4, 0, 256)))
    assert count(r"\brem\.[su]64", plain) >= 5 and count(r"\bdiv\.[su]64", plain) >= 5

    from kfuse.runtime.gpu_launch import fast_divisor
    from kfuse.runtime.numba_cuda import _Launcher
    launcher = _Launcher(None, kir, "sm_90", None)
    assert launcher.extra_args(fast) == [np.uint32(x) for x in fast_divisor(128)]
    assert launcher.extra_args(nc.NVariant("elementwise", 4, 0, 256)) == []


def test_one_pass_row_loads_issue_before_arithmetic():
    """A one-pass row reduction (a norm) loads all its register slots back to back, ahead of the
    first multiply (a slot past the row's end reads its first element); a multi-pass kernel
    (softmax) keeps each slot's load in its bounds branch (hoisted there, they cost registers)."""
    kir = lower_group(one_group_plan(trace(lambda x: np.sqrt(np.sum(x * x, axis=1)),
                                              ("f32", (64, 4096)))).groups[0])
    v = nc.default_variant(kir)
    assert v.mode == "row" and v.cache_k > 1
    src = nc.emit(kir, v)
    assert "if row_len_ > 0:" in src and "j_0 = j_0 if j_0 < units_ else 0 * j_0" in src
    ops = re.findall(r"^\s+(ld\.global\S*|mul\.rn\.f32)", nc.compile_ptx(src), re.M)    # .rn: no FMA
    assert ops[:v.cache_k] == ["ld.global.f32"] * v.cache_k and "mul.rn.f32" in ops
    assert "if row_len_ > 0:" not in nc.emit(_kir("softmax"))


def test_vector_units_render_as_16_byte_accesses():
    """The CUDA C backend's vector width, rendered: a row held in register slots and an
    elementwise kernel read and write 16 bytes at a time (ld/st.global.v4.f32), a flattened
    domain's last elements one by one (its tail loop)."""
    kir = _kir("softmax")
    ptx = nc.compile_ptx(nc.emit(kir, nc.NVariant("row", 1, 2, 256, vec=4)))
    assert ptx.count("ld.global.v4.f32") == 2 and "st.global.v4.f32" in ptx and "ld.global.f32" not in ptx
    ew = lower_group(one_group_plan(trace(lambda x, b: np.tanh(x + b) * 0.5 + x,
                                          ("f32", (64, 4096)), ("f32", (4096,)))).groups[0])
    src = nc.emit(ew, nc.NVariant("elementwise", 1, 0, 128, vec=4, tail=True))
    assert "while u_ < n_el_:" in src
    ptx = nc.compile_ptx(src)
    assert "ld.global.v4.f32" in ptx and "st.global.v4.f32" in ptx


def test_chunked_reductions_take_a_workspace():
    """Two stages (the chunks' accumulators to a workspace, then a block a row combining them) and
    one grid-synchronised launch (its barrier an acquire-load spin on the workspace's counter)."""
    kir = lower_group(one_group_plan(trace(lambda x: x.argmax(axis=1), ("f32", (4, 1 << 20)))).groups[0])
    one = nc.emit(kir, nc.NVariant("row", 1, 0, 256, split=64, stage=1))
    two = nc.emit(kir, nc.NVariant("row", 1, 0, 128, split=64, stage=2))
    assert "ws_" in one and "at(ws_" in one and "c_ = np.int64(cuda.blockIdx.x) % 64" in one
    assert "while s_ < 64:" in two and "j_" not in two.split("def kfuse_kernel")[1]
    for src in (one, two):
        nc.compile_ptx(src)
    scale = lower_group(one_group_plan(trace(lambda x: x / np.abs(x).max(), ("f32", (512, 4096)))).groups[0])
    ptx = nc.compile_ptx(nc.emit(scale, nc.NVariant("row", 1, 0, 256, split=16, grid_sync=True, min_blocks=8)))
    assert "ld.acquire.gpu.global.u32" in ptx and "red.release.gpu.global.add.u32" in ptx


def test_reduction_shapes():
    src = nc.emit(_kir("softmax"))
    assert "cuda.shfl_xor_sync" in src and "cuda.syncthreads()" in src and "cuda.shared.array" in src
    kir = _kir("softmax")
    kc = nc.default_variant(kir).cache_k
    assert kc > 0 and src.count("in0[") == kc       # row cached in registers: one load per slot, 3 phases
    assert src.count("c0_") >= 2 * nc.default_variant(kir).cache_k
    col = nc.emit(kir, nc.NVariant("col", 1, 0, 128))
    assert "shfl" not in col.split("def kfuse_kernel")[1]
    assert "_argmax" in nc.emit(_kir("argred"))


def test_hand_built_kernel_ir():
    kir = K.KernelIR(
        name="k0", kind="elementwise",
        inputs=(K.Buffer("in0", "float32", 1, (10,)),), outputs=(K.Buffer("out0", "float16", 1, (10,)),),
        sizes=(K.SizeParam("s0", 10, "extent of i0"),), domain=(K.IVar("s0"),), outer=(0,), inner=(),
        phases=(K.Phase(pre=(K.Load("v0", "float32", 0, (K.IVar("i0"),)), K.Const("v1", "float32", float("nan")),
                             K.Op("v2", "maximum", "float32", ("v0", "v1"), ("float32", "float32")),
                             K.Op("v3", "cast", "float16", ("v2",), ("float32",)),
                             K.Store(0, (K.IVar("i0"),), "v3"))),))
    src = nc.emit(kir, nc.NVariant("elementwise", 1, 0, 64))
    assert "np.float32(np.nan)" in src and "np.float16(" in src and "T.CPointer(T.float16)" in src
    assert "LAUNCH_BOUNDS = 64" in src


def test_import_failure_is_one_clear_error(monkeypatch):
    def broken():
        return None, "kfuse: the numba-cuda backend cannot import numba.cuda (AttributeError: row_stack); Fix: pip install 'numpy<2.5'"
    monkeypatch.setattr(nc, "_import", broken)
    ok, why = nc.numba_cuda_available()
    assert not ok and "numpy<2.5" in why
    with pytest.raises(DeviceError, match="numpy<2.5"):
        nc.import_numba_cuda()
    from kfuse.runtime import numba_cuda as rt
    with pytest.raises(DeviceError):
        rt.compile_plan(one_group_plan(trace(gelu, *CASES["gelu"][1])))


def _nvvm_or_skip():
    ok, why = nc.numba_cuda_available()
    if not ok:
        pytest.skip(why)
    try:
        nc.compile_ptx(nc.emit(_kir("gelu")), arch="sm_90")
    except Exception as e:  # noqa: BLE001
        if "NVVM" in str(e) or "nvvm" in str(e):
            pytest.skip(f"libNVVM not found: {e}")
        raise


@pytest.fixture(scope="module")
def ptxs():
    _nvvm_or_skip()
    out = {}
    for name in CASES:
        kir = _kir(name)
        for v in _variants(kir):
            out[(name, v.tag)] = nc.compile_ptx(nc.emit(kir, v), arch="sm_90")
    return out


def test_compile_ptx_sm90(ptxs):
    for key, ptx in ptxs.items():
        assert ".target sm_90" in ptx and nc.entry_name(ptx), key
        assert ".version 9.0" in ptx or ".version 8" in ptx, key   # a CUDA 13.0 driver can JIT it


@pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")
def test_ptxas_accepts_ptx(ptxs, tmp_path):
    for (name, tag), ptx in ptxs.items():
        p = tmp_path / f"{name}-{tag}.ptx"
        p.write_text(ptx)
        r = subprocess.run([PTXAS, "-arch=sm_90", str(p), "-o", str(p) + ".o"], capture_output=True, text=True)
        assert r.returncode == 0, f"{name} {tag}: {r.stderr}"
