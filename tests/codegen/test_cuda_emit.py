"""CUDA emitter + NVRTC, without a GPU: generate CUDA C for hand-built kernels, compile it to PTX
and CUBIN for sm_80 and sm_90, and assemble the PTX with ptxas where it is installed.

NVRTC 13.5 emits PTX ISA 9.5, which ptxas 13.0 rejects; the PTX is validated as written for the
machine's toolchain (``nvrtc.for_installed``, the ISA ``dump-ptx`` writes); the CUBIN is NVRTC's
own assembly of it.
"""
import dataclasses
import os
import re
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "gpu"))
pytest.importorskip("cuda.bindings.nvrtc")

from handplan import one_group_plan, trace  # noqa: E402
from kfuse.codegen import cuda, nvrtc  # noqa: E402
from kfuse.codegen.lower import lower_group  # noqa: E402
from kfuse.errors import CompileError  # noqa: E402

from tests.codegen.ptx_backends import PTXAS  # noqa: E402


def gelu(x, w, b):
    y = x * w + b
    return 0.5 * y * (1 + np.tanh(0.7978845608 * (y + 0.044715 * y ** 3)))


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def intops(a, b):
    return a // b, a % b, a << 3, a >> 2, np.maximum(a, b), a * b - a


def floatops(a, b):
    return (np.fmax(a, b), np.minimum(a, b), a // b, np.remainder(a, b), np.where(a > b, a, -b),
            np.isnan(a), np.sign(b), np.hypot(a, b))


def colsum(x):
    return x.sum(axis=0), x.argmax(axis=0)


def half(x, y):
    return (x * y + 1).astype(np.float16)


CASES = {
    "gelu": (gelu, [("f32", (64, 128)), ("f32", (128,)), ("f32", (128,))]),
    "softmax": (softmax, [("f32", (64, 128))]),
    "layernorm": (layernorm, [("f32", (64, 128)), ("f32", (128,)), ("f32", (128,))]),
    "intops": (intops, [("i32", (16, 8)), ("i32", (16, 8))]),
    "int8ops": (intops, [("i8", (16, 8)), ("i8", (8,))]),
    "floatops": (floatops, [("f64", (16, 8)), ("f64", (16, 8))]),
    "colsum": (colsum, [("f32", (64, 32))]),
    "half": (half, [("f16", (32, 32)), ("f16", (32, 32))]),
    "transposed": (lambda x: np.exp(x.T) + x[::2, ::2].T.sum(), [("f32", (16, 16))]),
}


def _kir(name):
    fn, specs = CASES[name]
    return lower_group(one_group_plan(trace(fn, *specs)).groups[0])


@pytest.fixture(scope="module")
def compiled():
    out = {}
    for name in CASES:
        kir = _kir(name)
        for variant in _variants(kir):
            src = cuda.emit(kir, variant)
            for arch in ("sm_80", "sm_90"):
                out[(name, variant.tag, arch)] = (src, nvrtc.compile(src, arch))
    return out


def _variants(kir):
    v = cuda.default_variant(kir)
    vs = [v, cuda.Variant(v.mode, 1, True, 0, v.block)]
    if kir.kind == "reduce":
        vs += [cuda.Variant("col", 1, False, 0, 128), cuda.Variant("row", 1, False, 0, 1024)]
        if v.vec > 1 and cuda.rereads_rows(kir):
            vs.append(cuda.Variant("row", v.vec, False, 1, 32, reload=True))
            vs.append(cuda.Variant("row", v.vec, False, 1, 32, reload=True, exact=True))
    vs.append(dataclasses.replace(v, exact=True))
    if kir.kind == "elementwise":      # several units a thread: vector and scalar, looped and exact
        vs += [dataclasses.replace(v, ept=2), dataclasses.replace(v, ept=3, vec=1),
               dataclasses.replace(v, ept=2, exact=True)]
    return vs


def test_every_case_compiles(compiled):
    assert len(compiled) >= len(CASES) * 4
    for key, (src, res) in compiled.items():
        assert res.cubin[:4] == b"\x7fELF", key
        assert ".entry kfuse_" in res.ptx, key
        assert res.nvrtc_version >= (12, 0)


def test_source_is_readable_and_size_free():
    kir = _kir("gelu")
    src = cuda.emit(kir)
    assert "KfVec<float, 4>" in src        # 16-byte vector accesses for contiguous f32
    assert "tanhf" in src
    assert "8192" not in src and "128" not in src.split("kfuse kernel")[1].replace("__launch_bounds__", "")
    big = cuda.emit(kir, cuda.Variant("elementwise", 4, True, 0, 256))
    assert "typedef long long IDX" in big


def test_units_of_a_thread_load_before_any_arithmetic():
    """With several vector units a thread, every unit's loads come first (ptxas does not hoist
    the next unit's loads above the IEEE slow-path calls of the one before: P6 ran with half its
    bytes in flight); then one loop computes and stores each unit."""
    kir = _kir("gelu")
    src = cuda.emit(kir, dataclasses.replace(cuda.default_variant(kir), ept=2))
    body = src.split("kfuse kernel")[-1]
    assert body.count("for (int k_ = 0; k_ < 2; ++k_)") == 2
    loads = [i for i, line in enumerate(body.splitlines()) if "_[k_] = *reinterpret_cast" in line]
    first_use = next(i for i, line in enumerate(body.splitlines()) if "= w_v1_[k_];" in line)
    assert len(loads) == 3 and max(loads) < first_use < body.splitlines().index(
        next(line for line in body.splitlines() if "tanhf" in line))
    assert "if (u < n_units)" in body                        # the looped kernel guards each unit
    exact = cuda.emit(kir, dataclasses.replace(cuda.default_variant(kir), ept=2, exact=True))
    assert "if (u < n_units)" not in exact.split("kfuse kernel")[-1]


def test_reduction_uses_warp_shuffle_and_registers():
    src = cuda.emit(_kir("softmax"))
    assert "__shfl_xor_sync" in src and "__syncthreads" in src
    assert "c0_[k_]" in src            # the row is cached in registers across phases
    assert src.count("in0 + (") == 1   # one global (16-byte) load site: the row is read once
    scalar = cuda.emit(_kir("softmax"), cuda.Variant("row", 1, False, 8, 512))
    assert scalar.count("in0[") == 1
    ln = cuda.emit(_kir("layernorm"))
    assert "sqrtf" in ln


def test_reload_variant_rereads_rows_through_l1_and_sums_in_float32():
    kir = _kir("layernorm")
    assert cuda.rereads_rows(kir) and cuda.rereads_rows(_kir("softmax"))
    assert cuda.reload_pays(kir) and not cuda.reload_pays(_kir("softmax"))   # a max pass: held rows
    assert not cuda.rereads_rows(lower_group(one_group_plan(trace(
        lambda x: np.sqrt((x * x).sum(axis=1)), ("f32", (64, 128)))).groups[0]))
    src = cuda.emit(kir, cuda.Variant("row", 4, False, 2, 512, reload=True))
    body = src.split("// kfuse kernel")[1]
    # every pass loads the row again (predicated, before its compute loop), nothing held across phases
    assert body.count("c0_[k_] = kf_ldlast<float, 4>(in0") == 2   # the mean's and the variance's passes
    assert body.count("kf_ldfirst<float, 4>(in0") == 1        # the output pass: the row's last read
    assert "if (j_ < row_units) {\n      IDX r_ = j_;\n      const IDX i1 = r_ * 4;\n      c0_" not in body
    assert "kf_ldlast<float, 4>(in1" in body and "kf_ldlast<float, 4>(in2" in body   # gamma, beta: every row
    assert "float Av" in body and "double Av" not in body     # float32 sums in float32
    assert "nwarps_ / 2" in body                              # pairwise over the warps' partials
    # the division by the row's sqrt: a float64 reciprocal once a row, one multiply an element
    assert "const double rd_v" in body and "(float)((double)v" in body and " / v17" not in body
    held = cuda.emit(kir, cuda.Variant("row", 4, False, 4, 256))
    assert "double Av" in held and "c0_[k_]" in held and "kf_ldlast" not in held.split("// kfuse kernel")[1]


def test_exact_variants_have_no_loop_guards_or_trailing_barriers():
    ew = cuda.emit(_kir("gelu"), cuda.Variant("elementwise", 4, False, 0, 128, ept=2, exact=True))
    assert "t_ < n_units" not in ew and "u < n_units" not in ew and "step" not in ew.split("kfuse kernel")[1]
    ln = cuda.emit(_kir("layernorm"), cuda.Variant("row", 4, False, 2, 512, reload=True, exact=True))
    body = ln.split("// kfuse kernel")[1]
    assert "row_ += gridDim.x" not in body and "j_ < row_units" not in body
    assert body.count("__syncthreads();") == 2                 # one a reduction: each has its own slot
    assert "red_smem_ + 0" in body and "red_smem_ + 64" in body
    assert "kf_ldlast<float, 4>(in0 + (i0 * (IDX)st_in0_0 + i1));" in body   # unpredicated, unit inner stride
    looped = cuda.emit(_kir("layernorm"), cuda.Variant("row", 4, False, 2, 512, reload=True))
    assert "row_ += gridDim.x" in looped and looped[looped.index("extern \"C\""):].count("__syncthreads();") == 4


def test_same_structure_same_source():
    a = cuda.emit(lower_group(one_group_plan(trace(gelu, ("f32", (64, 128)), ("f32", (128,)),
                                                           ("f32", (128,)))).groups[0]))
    b = cuda.emit(lower_group(one_group_plan(trace(gelu, ("f32", (32, 256)), ("f32", (256,)),
                                                           ("f32", (256,)))).groups[0]))
    assert a == b                      # sizes are run-time parameters: no recompile


@pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")
def test_ptxas_accepts_ptx(compiled, tmp_path):
    for (name, tag, arch), (src, res) in compiled.items():
        p = tmp_path / f"{name}-{tag}-{arch}.ptx"
        p.write_text(nvrtc.for_installed(res.ptx))
        r = subprocess.run([PTXAS, f"-arch={arch}", str(p), "-o", str(p) + ".o"],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"{name} {tag} {arch}: {r.stderr}"


def test_compile_error_saves_source(tmp_path, monkeypatch):
    from kfuse import config
    monkeypatch.setenv("KFUSE_DUMP_DIR", str(tmp_path))
    config.reload()
    try:
        with pytest.raises(CompileError) as e:
            nvrtc.compile("this is not cuda", "sm_90", name="bad")
        assert "source saved to" in str(e.value) and str(tmp_path) in str(e.value)
        assert any(f.endswith(".cu") for f in os.listdir(tmp_path))
    finally:
        monkeypatch.delenv("KFUSE_DUMP_DIR")
        config.reload()


def test_ptx_version_rewrite():
    ptx = ".version 9.5\n.target sm_90\n"
    assert nvrtc.with_ptx_isa(ptx, "9.0").startswith(".version 9.0")
    assert nvrtc.with_ptx_isa(".version 8.0\n", (8, 0)) == ".version 8.0\n"
    assert nvrtc.normalize_arch((9, 0)) == "sm_90" and nvrtc.normalize_arch("80") == "sm_80"


def test_index_divisions_by_a_size_are_multiply_high():
    """A concatenation's piece tests and offsets divide by sizes: with 32-bit index math each is a
    kf_udiv by a host-computed (multiplier, shift) pair, not a C division (idx64 keeps '/', '%')."""
    kir = lower_group(one_group_plan(trace(lambda x, z: np.concatenate([x, x * x, np.sin(z)], axis=1),
                                           ("f32", (64, 96)), ("f32", (64, 40)))).groups[0])
    k32 = cuda.emit_kernel(kir, cuda.Variant("elementwise", 1, False, 0, 128))
    sizes = {s.name for s in kir.sizes}
    plain = re.compile(r"[/%] (" + "|".join(sorted(sizes)) + r")\b")
    assert any(isinstance(d, str) for d, _ in k32.divisors) and not plain.search(k32.source)
    assert ".entry" in nvrtc.compile(k32.source, arch="sm_90").ptx
    k64 = cuda.emit_kernel(kir, cuda.Variant("elementwise", 1, True, 0, 128))
    assert plain.search(k64.source) and not any(isinstance(d, str) for d, _ in k64.divisors)
