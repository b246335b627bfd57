"""The cuBLAS candidate's second half: ``kfuse_gemm_epilogue``, the GEMM epilogue
(:mod:`kfuse.codegen.gemm_render`) as its own elementwise kernel over a product cuBLAS computed,
rows of 16-byte accesses where the layout allows, in place when the output is the product's
buffer. Parameters: ``X, C, M, N, batch, sXb, sXm, sCb, sCm`` then the epilogue's tail (per input
``ptr, sb, sm, sn``, then its float32 scalars)."""
from __future__ import annotations

from .cuda_ops import PRELUDE, load_expr
from .gemm_render import epi_call_args, epilogue_fn, epilogue_params, store, stype
from .gemm_spec import NP_DTYPE, GemmEpilogue, GemmSpec

_EPI_KERNEL = r"""
#define VEC {vec}
// out[b, m, n] = epilogue(X[b, m, n]); X is the cuBLAS result (rows contiguous). blockDim.y rows per
// block (short rows share a block), blockDim.x threads along a row, VEC elements per thread (VEC > 1
// needs N % VEC == 0 and aligned rows); 32-bit row arithmetic, no division when batch == 1.
// REVERSE: rows last-first. X and C may be the same buffer (in place): every element is loaded,
// then stored, by one thread, so X carries no __restrict__ / non-coherent loads.
extern "C" __global__ void __launch_bounds__(256) kfuse_gemm_epilogue(
    const {x_t}* X, {out_t}* C, int M, int N, int batch,
    i64 sXb, i64 sXm, i64 sCb, i64 sCm{ep_params}) {{
  const long long rows = (long long)batch * M;
  const long long r = (long long)blockIdx.x * blockDim.y + threadIdx.y;
  if (r >= rows) return;
  const int row = (int){row};
  const int b = batch == 1 ? 0 : row / M;
  const int m = row - b * M;
  const {x_t}* xrow = X + (i64)b * sXb + (i64)m * sXm;
  {out_t}* crow = C + (i64)b * sCb + (i64)m * sCm;
  for (int n = threadIdx.x * VEC; n < N; n += blockDim.x * VEC) {{
    const {x_t}* x = xrow + n;
    {out_t}* c = crow + n;
{body}
  }}
}}
"""


def emit_epilogue_kernel(spec: GemmSpec, vec: int = 8, x_dtype: str | None = None,
                         reverse: bool = False) -> str:
    """CUDA C of ``kfuse_gemm_epilogue``: the epilogue as its own elementwise kernel over a GEMM
    result ``X`` of ``x_dtype`` (default: the operands' dtype, as cuBLAS returns). ``vec`` = 8
    (16-byte accesses for 16-bit data) when N is a multiple of 8, else 1. May run in place
    (``X`` == ``C``). Launch: ``block = (tx, ty)``, ``grid = ceil(batch * M / ty)`` (``ty`` rows a
    block). ``reverse``: rows last-first."""
    x_dtype = x_dtype or spec.dtype
    ep = spec.epilogue
    if vec not in (1, 2, 4, 8):
        raise ValueError("vec must be 1, 2, 4 or 8")
    if vec == 1:
        body = f"    c[0] = {_epi_of_element(ep, x_dtype, 'x', '0', 'n')};"
    else:
        body = _vec_body(x_dtype, spec.out_dtype, vec, ep)
    row = "(rows - 1 - r)" if reverse else "r"
    return (f"// kfuse GEMM epilogue {spec.key()} vec {vec}{' reverse' if reverse else ''}\n" + PRELUDE
            + epilogue_fn(ep) + _EPI_KERNEL.format(vec=vec, x_t=stype(x_dtype), out_t=stype(spec.out_dtype),
                                                   ep_params=epilogue_params(ep), body=body, row=row))


def _epi_of_element(ep: GemmEpilogue, x_dtype: str, ptr: str, off: str, n: str) -> str:
    """The stored value of the epilogue over the product element ``ptr[off]`` at column ``n``."""
    x = load_expr(ptr, off, NP_DTYPE[x_dtype])
    return store(f"kf_epi({x}, b, m, {n}{epi_call_args(ep)})", ep)


def _vec_body(x_dtype: str, out_dtype: str, vec: int, ep: GemmEpilogue) -> str:
    xt, ot = stype(x_dtype), stype(out_dtype)
    xs, os_ = (2 if xt != "float" else 4), (2 if ot != "float" else 4)
    lines = [f"    {xt} xin[VEC]; {ot} yout[VEC];"]
    lines += _copy_vec("xin", "x", vec * xs)
    lines.append("    #pragma unroll")
    lines.append(f"    for (int q = 0; q < VEC; ++q) yout[q] = {_epi_of_element(ep, x_dtype, 'xin', 'q', 'n + q')};")
    lines += _copy_vec("c", "yout", vec * os_, to_memory=True)
    return "\n".join(lines)


def _copy_vec(dst: str, src: str, nbytes: int, to_memory: bool = False) -> list[str]:
    """Move ``nbytes`` between registers and memory in words of up to 16 bytes."""
    size = min(16, nbytes)
    word = {16: "uint4", 8: "uint2", 4: "unsigned", 2: "unsigned short"}[size]
    cq = "" if to_memory else "const "
    return [f"    (({word}*){dst})[{w}] = (({cq}{word}*){src})[{w}];" for w in range(nbytes // size)]
