"""The GEMM epilogue is the matmul group's own kernel-IR statements, rendered by the CUDA C rules
of every kernel (``cuda_ops``) after the one CUDA prelude: checked on traced groups, without a GPU
(NVRTC compiles the sources where it is installed)."""
from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

from kfuse.codegen import kernel_ir as K
from kfuse.codegen.cuda_ops import PRELUDE, op_expr
from kfuse.codegen.gemm_cuda import emit_epilogue_kernel, emit_gemm
from kfuse.codegen.gemm_spec import EpInput, GemmSpec, epilogue_of_kernel
from kfuse.codegen.lower import lower_group
from kfuse.fusion import pipeline
from kfuse.fusion.gemm_registers import epilogue_in_registers
from kfuse.ir.specs import spec_from_string
from kfuse.runtime.gemm import group_epilogue_spec
from kfuse.trace.tracer import trace_function


def _matmul_group(fn, *specs):
    names = list(inspect.signature(fn).parameters)
    graph = pipeline.optimize(trace_function(fn, {n: spec_from_string(s) for n, s in zip(names, specs)}))
    (g,) = [g for g in pipeline.plan(graph, "h100").groups if g.kind == "matmul"]
    return g, lower_group(g)


def _bias_gelu(a, w, bias):
    y = a @ w + bias
    return 0.5 * y * (1.0 + np.tanh(0.7978845608028654 * (y + 0.044715 * (y * y * y))))


def _col_scale(a, w, s):
    return np.exp(a @ w) / s


def _residual_relu(a, w, r):
    return np.maximum(a @ w + r, 0).astype(np.float32)


def _sliced_bias(a, w, bias):
    return a @ w + bias[1:]


def _transposed_product(a, w):
    y = a @ w
    return y + y.T


def _sine(a, w):
    return np.sin(a @ w)


ACCEPTED = [
    (_bias_gelu, ("f16[256,128]", "f16[128,512]", "f16[512]"), {"row"}),
    (_bias_gelu, ("f32[256,128]", "f32[128,512]", "f32[512]"), {"row"}),
    (_col_scale, ("f16[3,64,128]", "f16[3,128,64]", "f16[3,64,1]"), {"col"}),
    (_residual_relu, ("f16[64,32]", "f16[32,48]", "f16[64,48]"), {"full"}),
]


@pytest.mark.parametrize("case", range(len(ACCEPTED)))
def test_epilogue_is_the_groups_kernel_ir(case):
    """What the planner lets the generated GEMM take, the GEMM takes from the group's KernelIR:
    the same op statements, in order, each rendered as ``cuda_ops.op_expr`` renders it."""
    fn, specs, kinds = ACCEPTED[case]
    g, kir = _matmul_group(fn, *specs)
    assert epilogue_in_registers(g)
    ep, slots = group_epilogue_spec(g, kir)
    kir_ops = [s for s in kir.phases[0].pre if isinstance(s, K.Op)]
    assert [s for s in ep.body if isinstance(s, K.Op)] == kir_ops
    assert {i.kind for i in ep.inputs} == kinds and len(slots) == len(ep.inputs)
    assert ep.product_dtype == kir.contraction.dtype
    src = emit_gemm(GemmSpec(specs[0][:3], ep))
    for s in kir_ops:
        if s.op != "tanh":          # 16-bit outputs take the hardware tanh
            assert f"{s.dst} = {op_expr(s.op, s.dtype, list(s.args), s.arg_dtypes)};" in src


@pytest.mark.parametrize("fn,specs", [
    (_sliced_bias, ("f16[64,32]", "f16[32,48]", "f16[49]")),
    (_transposed_product, ("f16[48,32]", "f16[32,48]")),
    (_sine, ("f16[64,32]", "f16[32,48]")),
])
def test_refused(fn, specs):
    g, kir = _matmul_group(fn, *specs)
    assert group_epilogue_spec(g, kir) is None


def test_kernel_reads_only_broadcast_inputs():
    """Without the planner's rule, the KernelIR translation itself refuses a product read at
    another element (a transpose) and an input read other than broadcast (a slice's offset)."""
    for fn, specs in ((_transposed_product, ("f16[48,32]", "f16[32,48]")),
                      (_sliced_bias, ("f16[64,32]", "f16[32,48]", "f16[49]"))):
        assert epilogue_of_kernel(_matmul_group(fn, *specs)[1]) is None
    ep, slots = epilogue_of_kernel(_matmul_group(_bias_gelu, "f16[64,32]", "f16[32,48]", "f16[48]")[1])
    assert ep.inputs == (EpInput("f16", "row"),) and slots == (2,)


def _defined(src: str) -> set[str]:
    return set(re.findall(r"__device__ __forceinline__ [\w<>, ]+? (kf_\w+)\(", src))


@pytest.mark.parametrize("which", ["gemm", "fma", "epilogue"])
def test_one_prelude(which):
    """Every GEMM source starts with the CUDA prelude every kernel has and defines none of its
    helpers again."""
    specs = ("f32[64,32]", "f32[32,48]", "f32[48]") if which == "fma" else ("f16[64,32]", "f16[32,48]", "f16[48]")
    g, kir = _matmul_group(_bias_gelu, *specs)
    ep, _ = group_epilogue_spec(g, kir)
    spec = GemmSpec(specs[0][:3], ep)
    src = emit_epilogue_kernel(spec) if which == "epilogue" else emit_gemm(spec)
    assert src.count(PRELUDE) == 1
    assert not _defined(src.replace(PRELUDE, "")) & _defined(PRELUDE)


@pytest.mark.parametrize("case", range(len(ACCEPTED)))
def test_traced_epilogues_compile(case):
    nvrtc = pytest.importorskip("kfuse.codegen.nvrtc")
    pytest.importorskip("cuda.bindings.nvrtc")
    fn, specs, _ = ACCEPTED[case]
    g, kir = _matmul_group(fn, *specs)
    ep, _ = group_epilogue_spec(g, kir)
    spec = GemmSpec(specs[0][:3], ep)
    for src in (emit_gemm(spec), emit_epilogue_kernel(spec, vec=8)):
        try:
            res = nvrtc.compile(src, "sm_90", name="gemm_epilogue_ir_test")
        except Exception as e:
            if "NVRTC is not available" in str(e):
                pytest.skip(str(e))
            raise
        assert "kfuse_gemm" in res.ptx
