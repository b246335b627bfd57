"""The attention kernel's CUDA C (``codegen.attention_cuda``) compiles with NVRTC and assembles
with ptxas for sm_80 and sm_90 (no spills on sm_90), for every head dim, both operand dtypes, a float32 output, causal
skipping and a score reading an array; no GPU needed (its results: tests/gpu/test_attention_gpu.py)."""
import math
import os
import subprocess

import numpy as np
import pytest

import kfuse
from kfuse.codegen import kernel_ir as K
from kfuse.codegen import nvrtc
from kfuse.codegen.attention_cuda import HEAD_DIMS, AttentionSpec, ScoreFn, emit_attention

from ptx_backends import PTXAS

SCALE = ScoreFn((K.Op("v0", "multiply", "float32", ("acc", "p0"), ("float32", "float32")),), "v0", (), 1)
BIAS = ScoreFn((K.Load("v0", "float16", 0, (K.lit(0), K.IVar("m"), K.IVar("n"))),
                K.Op("v1", "add", "float16", ("acc", "v0"), ("float16", "float16")),
                K.Op("v2", "tanh", "float16", ("v1",), ("float16",))), "v2", ("float16",))


def _compile(src, arch):
    try:
        return nvrtc.compile(src, arch, name="attention_test")
    except Exception as e:
        if "NVRTC is not available" in str(e):
            pytest.skip(str(e))
        raise


def _ptxas(ptx, arch, tmp_path) -> str:
    if PTXAS is None:
        return ""
    p = tmp_path / "k.ptx"
    p.write_text(nvrtc.for_installed(ptx))
    r = subprocess.run([PTXAS, f"-arch={arch}", "-v", str(p), "-o", os.devnull], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stderr


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("spec", [
    AttentionSpec("f16", 64, SCALE), AttentionSpec("bf16", 128, SCALE, True),
    AttentionSpec("f16", 256, BIAS, True), AttentionSpec("bf16", 96, BIAS, False, "f32"),
])
def test_attention_kernel_assembles_without_spills(spec, arch, tmp_path):
    src = emit_attention(spec)
    assert "mma.sync.aligned.m16n8k16.row.col.f32." + spec.dtype in src
    assert ("#define CAUSAL 1" in src) == spec.causal
    res = _compile(src, arch)
    assert "kfuse_attention" in res.ptx
    log = _ptxas(res.ptx, arch, tmp_path)
    if arch == "sm_90":         # the tiles are chosen for sm_90 (on sm_80 head dim 64 spills 8 bytes)
        assert "0 bytes spill stores" in log or not log


def test_bad_specs_are_refused():
    with pytest.raises(ValueError):
        AttentionSpec("f32", 64)
    with pytest.raises(ValueError):
        AttentionSpec("f16", 72)
    assert 72 not in HEAD_DIMS


def test_dump_cuda_and_ptx_of_an_attention_function():
    def attn(q, k, v):
        s = q @ np.swapaxes(k, -1, -2) * (1.0 / math.sqrt(q.shape[-1]))
        s = np.exp(s - s.max(-1, keepdims=True))
        return (s / s.sum(-1, keepdims=True)) @ v
    low = kfuse.jit(attn).lower("f16[2,128,64]", "f16[2,128,64]", "f16[2,128,64]", device="h100", backend="cuda")
    cuda = low.as_text("cuda")
    assert cuda.count("extern \"C\" __global__") == 1 and "kfuse_attention" in cuda
    assert "wgmma.mma_async" in cuda          # h100: the sm_90a kernel is the one that runs
    try:
        ptx = low.as_text("ptx")
    except Exception as e:
        if "NVRTC is not available" in str(e):
            pytest.skip(str(e))
        raise
    assert ptx.count(".entry kfuse_attention") == 1 and "wgmma.mma_async" in ptx


@pytest.mark.parametrize("spec", [
    AttentionSpec("f16", 64, SCALE), AttentionSpec("bf16", 128, SCALE, True),
    AttentionSpec("f16", 128, BIAS), AttentionSpec("f16", 192, SCALE),
    AttentionSpec("f16", 256, BIAS, True), AttentionSpec("bf16", 256, SCALE, False, "f32"),
], ids=lambda s: s.key()[:28])
def test_wgmma_attention_assembles_pipelined_without_spills(spec, tmp_path):
    """sm_90a: both products on wgmma (P from registers, V transposed), no spills, and no wgmma
    ptxas had to serialise or fence (a register written between two of them would)."""
    from kfuse.codegen import attention_wgmma as W
    tile = W.default_tile(spec.head_dim)
    src = W.emit_attention_wgmma(spec, tile)
    res = _compile(src, W.ARCH)
    t = spec.dtype
    assert f"wgmma.mma_async.sync.aligned.m64n{tile.block_n}k16.f32.{t}.{t}" in res.ptx
    assert f"wgmma.mma_async.sync.aligned.m64n{spec.head_dim}k16.f32.{t}.{t}" in res.ptx
    log = _ptxas(res.ptx, "sm_90a", tmp_path)
    assert "0 bytes spill stores" in log or not log
    assert "serialized" not in log and "injected" not in log


def test_kernel_choice_by_arch_and_head_dim():
    from kfuse.runtime.attention import kernel_for
    for d, cc, wgmma in ((128, 90, True), (64, 90, True), (96, 90, False), (32, 90, False), (128, 80, False)):
        src, tile, arch = kernel_for(AttentionSpec("f16", d, SCALE), cc)
        assert ("wgmma" in src) == wgmma and arch == ("sm_90a" if wgmma else f"sm_{cc}")
        assert tile.smem_bytes(d) <= 227 * 1024
    with pytest.raises(ValueError):
        from kfuse.codegen.attention_wgmma import emit_attention_wgmma
        emit_attention_wgmma(AttentionSpec("f16", 96, SCALE))
