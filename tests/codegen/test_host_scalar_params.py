"""Host scalars (Python and NumPy scalar arguments) are by-value kernel parameters of their dtype on
both GPU backends, not pointers to device buffers (``Buffer.host``): the CUDA C source declares a
``KfHost<T>`` and its PTX a by-value parameter of the scalar's size; Numba-CUDA's signature has the
scalar type. Every kernel shape compiles with one (row, column, scan, tile, split, scatter). A
complex scalar, or one a product reads, keeps its device buffer. No GPU needed (NVRTC, libNVVM)."""
import dataclasses
import re

import numpy as np
import pytest

import kfuse
from kfuse.codegen import cuda, nvrtc
from kfuse.errors import CompileError
from kfuse.runtime.gpu_launch import host_inputs

from tests.codegen.ptx_backends import compile_to_ptx
from tests.scalar_workloads import adam, kv

pytest.importorskip("cuda.bindings.nvrtc")


def softmax_t(x, temp):
    e = np.exp((x - x.max(axis=-1, keepdims=True)) / temp)
    return e / e.sum(axis=-1, keepdims=True)


def layernorm_eps(x, eps):
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps)


def col_scaled(x, s):
    return x.sum(axis=0) * s


def cumsum_scaled(x, s):
    return np.cumsum(x * s, axis=-1)


def transposed(x, s):
    return x.T * s + 1.0


def masked(x, flag):
    return np.where(flag, x, -x)


def scaled(x, s):
    return x * s


def cscaled(x, c):
    return x * c


def gemm_scaled(a, b, s):
    return (a @ b) * s


def _lowered(fn, *specs, backend="cuda"):
    return kfuse.jit(fn, backend=backend).lower(*specs)


def _host(fn, *specs):
    low = _lowered(fn, *specs)
    kernels = low.kernels(for_gpu=True)
    return low, kernels, host_inputs(low.plan, kernels)


def test_adam_scalars_are_by_value_parameters():
    low, kernels, host = _host(adam, *["f32[4096]"] * 4, "float", "int")
    assert host == {4, 5}
    (kir,) = kernels
    assert [b.host for b in kir.inputs] == [False] * 4 + [True, True]
    src = cuda.emit(kir)
    assert "const KfHost<double> in4" in src and "const KfHost<long long> in5" in src
    assert "const double* __restrict__ in4" not in src
    ptx = nvrtc.compile(src, "sm_90").ptx
    params = re.findall(r"\.param (.*?)_param_(\d+)(\[\d+\])?", ptx)
    by_value = [p for p in params if p[2] == "[8]"]
    assert len(by_value) == 2, params     # .param .align 8 .b8 name[8]: the value, not a pointer
    assert "host scalar" in kir.as_text()


@pytest.mark.parametrize("spec,ctype,size", [(np.float16(1.5), "unsigned short", 2), ("bool", "unsigned char", 1),
                                             (np.float32(0.5), "float", 4), (np.int8(3), "signed char", 1),
                                             (np.uint32(7), "unsigned int", 4)])
def test_narrow_scalars_by_value(spec, ctype, size):
    fn = masked if isinstance(spec, str) else scaled
    low, (kir,), host = _host(fn, "f32[64]" if isinstance(spec, str) else "f16[64]", spec)
    assert host == {1}
    src = cuda.emit(kir)
    assert f"const KfHost<{ctype}> in1" in src
    ptx = nvrtc.compile(src, "sm_90").ptx
    assert re.search(rf"\.param \.align {size} \.b8 \w+_param_\d+\[{size}\]", ptx), ptx[:3000]


def test_complex_and_product_scalars_keep_their_buffer():
    _, (kir,), host = _host(cscaled, "c64[64]", "complex")
    assert host == frozenset() and not kir.inputs[1].host
    assert "KfHost" not in cuda.emit(kir).split("extern \"C\"")[1]
    low, kernels, host = _host(gemm_scaled, "f32[64,32]", "f32[32,16]", "float")
    reads = [k for k in kernels if any(b.ndim == 0 for b in k.inputs)]
    if any(k.contraction is not None for k in reads):
        assert host == frozenset()


def test_kv_cache_index_by_value_base_by_pointer():
    low, (kir,), host = _host(kv, "f32[8,64,16]", "f32[8,16]", "int")
    assert host == {2}
    assert [b.host for b in kir.inputs] == [False, False, True]
    nvrtc.compile(cuda.emit(kir), "sm_90")


def rowsum_scaled(x, s):
    return (x * s).sum(axis=-1)


def _variants(kir) -> list:
    """The kernel's default variant, 64-bit index math, and for a reduction every row and column
    shape (register-cached, re-read, packed, two-stage, grid-synchronised), for a scan its chunks."""
    v = cuda.default_variant(kir)
    out = [v, dataclasses.replace(v, idx64=True)]
    if kir.kind == "reduce":
        out += [cuda.Variant("col", 1, False, 0, 128), cuda.Variant("row", 1, False, 0, 1024),
                cuda.Variant("row", 2, False, 4, 256), cuda.Variant("row", 2, False, 1, 32, reload=True),
                cuda.Variant("row", 2, False, 0, 256, 2, split=4, stage=1),
                cuda.Variant("col", 1, False, 0, 128, split=4, stage=1),
                cuda.Variant("row", 2, False, 0, 256, 2, split=4, grid_sync=True, min_blocks=4),
                cuda.Variant("row", 1, False, 0, 128, 2, lanes=8, packed=True)]
    if kir.kind == "scan":
        out += [cuda.Variant("col", 1, False, 0, 128), cuda.Variant("scan", 1, False, 0, 128, split=4, stage=1, lanes=32)]
    if kir.kind == "elementwise" and len(kir.loop_dims(range(len(kir.domain)))) == 2 and cuda.tile_loads(kir):
        out.append(cuda.Variant("tile", 1, False, 0, 256, tile_t=0, staged=tuple(s.dst for s in cuda.tile_loads(kir))))
    return out


@pytest.mark.parametrize("fn,specs", [(softmax_t, ("f32[64,1000]", "float")), (softmax_t, ("f64[64,1024]", "float")),
                                      (layernorm_eps, ("f32[64,1024]", "float")), (rowsum_scaled, ("f64[64,1024]", "float")),
                                      (col_scaled, ("f32[4096,64]", "float")), (col_scaled, ("f64[4096,64]", "float")),
                                      (cumsum_scaled, ("f32[64,512]", "float")), (cumsum_scaled, ("f64[64,512]", "float")),
                                      (transposed, ("f32[128,96]", "float"))])
def test_every_kernel_shape_compiles_with_a_host_scalar(fn, specs):
    low, kernels, host = _host(fn, *specs)
    assert host == {1}
    compiled = 0
    for kir in kernels:
        if not any(b.host for b in kir.inputs):
            continue
        for variant in _variants(kir):
            if variant.split and not (cuda.split_ok(kir) if kir.kind != "scan" else cuda.scan_split_ok(kir)):
                continue
            try:
                src = cuda.emit(kir, variant)
            except CompileError:            # a shape this kernel does not take (a row scan, ...)
                continue
            assert re.search(r"KfHost<double> in\d", src)
            assert ".entry" in nvrtc.compile(src, "sm_90").ptx, variant
            compiled += 1
    assert compiled >= 2


@pytest.mark.backends("cuda", "numba-cuda", emit_only=True)
@pytest.mark.parametrize("fn,specs", [(adam, ("f32[1000]",) * 4 + ("float", "int")), (kv, ("f32[8,64,16]", "f32[8,16]", "int")),
                                      (softmax_t, ("f32[64,1000]", "float")), (masked, ("f32[64]", "bool")),
                                      (rowsum_scaled, ("f64[64,1024]", "float")), (cumsum_scaled, ("f64[64,512]", "int"))])
def test_both_backends_compile(backend, fn, specs, tmp_path):
    src = compile_to_ptx(fn, backend, specs, tmp_path, fn.__name__)
    if backend == "numba-cuda":         # each host scalar's parameter is its value's type, no pointer
        kernels = src.split('"""kfuse Numba-CUDA kernel')[1:]
        for k in kernels:
            types = re.search(r"SIG = \((.*)\)", k).group(1).rstrip(",").split(", ")
            names = re.search(r"def kfuse_kernel\((.*)\):", k).group(1).split(", ")
            host = re.findall(r"(in\d+): \w+ \(host scalar\)", k)
            assert all(not dict(zip(names, types))[n].startswith("T.CPointer") for n in host)
        assert any("(host scalar)" in k for k in kernels)
    else:
        assert "KfHost<" in src


def test_old_abi_sources_cannot_match():
    # the disk cache keys a GPU kernel by its source text: a 0-d array argument (a device buffer)
    # and a host scalar give different kernels, so no stored kernel of the other ABI is served
    _, (by_value,), _ = _host(scaled, "f32[64]", "float")
    _, (by_pointer,), host = _host(scaled, "f32[64]", "f64[]")
    assert host == frozenset()
    assert cuda.emit(by_value) != cuda.emit(by_pointer)
    assert "const double* __restrict__ in1" in cuda.emit(by_pointer)


def test_numba_cuda_float16_scalar():
    from kfuse.codegen import numba_cuda
    if not numba_cuda.numba_cuda_available()[0]:
        pytest.skip("numba-cuda does not import")
    (kir,) = _lowered(scaled, "f16[64]", np.float16(2.5), backend="numba-cuda").kernels(for_gpu=True)
    src = numba_cuda.emit(kir)
    assert re.search(r"SIG = \(.*T\.float16[,)]", src) and "in1[" not in src
    assert ".entry" in numba_cuda.compile_ptx(src, arch="sm_90")
