"""The GEMM kernels' epilogue as CUDA C: ``kf_epi``, a device function computing one output
element from its accumulator, and the parameters, call arguments and stores around it. Shared by
the fused GEMMs (:mod:`kfuse.codegen.gemm_cuda`, :mod:`kfuse.codegen.gemm_wgmma`) and the cuBLAS candidate's epilogue kernel
(:mod:`kfuse.codegen.gemm_epi_kernel`). The statements are the matmul group's kernel IR rendered
by the rules of every CUDA C kernel (``cuda_ops``)."""
from __future__ import annotations

from . import kernel_ir as K
from .cuda_ops import LOWP, _STYPE, cast_expr, const_literal, ctype, load_expr, op_expr, round_lowp, store_value
from .gemm_spec import NP_DTYPE, GemmEpilogue


def stype(dt: str) -> str:
    """The C storage type of a short dtype name (``f16``, ``s8``, ``i32``...)."""
    return _STYPE[NP_DTYPE[dt]]


def epilogue_params(ep: GemmEpilogue) -> str:
    ps = [f"const {stype(i.dtype)}* __restrict__ e{k}, i64 e{k}_sb, i64 e{k}_sm, i64 e{k}_sn"
          for k, i in enumerate(ep.inputs)]
    ps += [f"float p{j}" for j in range(ep.n_params)]
    return "".join(", " + p for p in ps)


def acc_ctype(ep: GemmEpilogue) -> str:
    """The accumulator's register type: int for an int8 GEMM's sums, else float."""
    return "int" if ep.int_product else "float"


def result_ctype(ep: GemmEpilogue) -> str:
    return ctype(ep.result_dtype)


def epilogue_fn(ep: GemmEpilogue) -> str:
    """``kf_epi(acc_, b, m, n, ...)``: the epilogue of one element, as a device function: its
    statements rendered by the rules of every CUDA C kernel (``cuda_ops``), except that a
    16-bit output takes the hardware tanh (its error is below the output's rounding) and a
    loaded 16-bit value widens to float32 as it is (``cast_expr`` rounds it first, for values
    held unrounded: a loaded one is exact). An integer accumulator (int32 sums) is the product
    itself, or its wrap to a narrower product dtype (int16), as NumPy's sums of that dtype wrap."""
    lines = [f"__device__ __forceinline__ {result_ctype(ep)} kf_epi({acc_ctype(ep)} acc_, i64 b, int m, int n"
             f"{epilogue_params(ep)}) {{"]
    if ep.int_product:
        acc = cast_expr("acc_", "int32", ep.product_dtype)
    else:
        acc = round_lowp("acc_", ep.product_dtype) if ep.product_dtype in LOWP else "acc_"
    lines.append(f"  const {ctype(ep.product_dtype)} {ep.product} = {acc};")
    fast = ep.out_dtype in ("f16", "bf16")
    loaded = set()          # 16-bit values loaded from memory: exact in float32, nothing to round
    for s in ep.body:
        if isinstance(s, K.Load):
            off = " + ".join(f"{'' if c == 'b' else '(i64)'}{c} * e{s.buf}_s{c}"
                             for c, e in zip("bmn", s.index) if isinstance(e, K.IVar)) or "0"
            val = load_expr(f"e{s.buf}", off, s.dtype)
            loaded.add(s.dst)
        elif isinstance(s, K.Const):
            val = const_literal(s.value, s.dtype)
        elif s.op == "tanh" and fast and s.dtype != "float64":
            val = f"kf_tanh_fast({s.args[0]})"
        elif s.op == "cast" and s.dtype == "float32" and s.args[0] in loaded:
            val = s.args[0]
        else:
            val = op_expr(s.op, s.dtype, list(s.args), s.arg_dtypes)
        lines.append(f"  const {ctype(s.dtype)} {s.dst} = {val};")
    lines.append(f"  return {ep.result};\n}}")
    return "\n".join(lines)


def epi_call_args(ep: GemmEpilogue) -> str:
    a = [f"e{k}, e{k}_sb, e{k}_sm, e{k}_sn" for k in range(len(ep.inputs))]
    a += [f"p{j}" for j in range(ep.n_params)]
    return "".join(", " + x for x in a)


def store(v: str, ep: GemmEpilogue) -> str:
    """The storage value of ``v``, a ``kf_epi`` result, as an element of the epilogue's output."""
    return store_value(v, ep.result_dtype, NP_DTYPE[ep.out_dtype])


_PAIR = {"f32": "float2", "f64": "double2", "i32": "int2"}


def pair_store(ep: GemmEpilogue) -> str:
    """Two neighbouring outputs (n even) in one store."""
    out, y0, y1 = ep.out_dtype, store("y0", ep), store("y1", ep)
    if out in _PAIR:
        return f"            *({_PAIR[out]}*)dst = make_{_PAIR[out]}({y0}, {y1});"
    return (f"            *(unsigned*)dst = (unsigned)(unsigned short){y0} | "
            f"((unsigned)(unsigned short){y1} << 16);")
