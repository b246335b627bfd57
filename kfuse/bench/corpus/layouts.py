"""Layouts and sizes the public suite does not have: transposed and permuted inputs, strided
views, reductions over leading / middle / last / several axes, long and short rows, sizes that are
no multiple of 4/8/32/128 (primes included), tiny launch-bound arrays, float16 reductions."""
from __future__ import annotations

from .base import Arg, Entry, cast
from .transformer import S, gelu


def _exp_t(xp):
    def exp_transpose_add(x, y):
        return xp.exp(x.T) + y
    return exp_transpose_add


def _tanh_odd(xp):
    def tanh_bias_odd(x, b):
        return xp.tanh(x + b) * 0.5 + x
    return tanh_bias_odd


def _permute(xp):
    def permute_0213_scale(x):
        return xp.transpose(x, (0, 2, 1, 3)) * 0.5
    return permute_0213_scale


def _transpose_sum(xp):
    def transpose_rowsum(x):
        return xp.sum(x.T, axis=1)
    return transpose_rowsum


def _sum0(xp):
    def sum_leading(x):
        return xp.sum(x, axis=0)
    return sum_leading


def _sum_mid(xp):
    def sum_middle(x):
        return xp.sum(x, axis=1)
    return sum_middle


def _sum_last_short(xp):
    def sum_last_short_rows(x):
        return xp.sum(x, axis=-1)
    return sum_last_short_rows


def _sum02(xp):
    def sum_axes_0_2(x):
        return xp.sum(x * x, axis=(0, 2))
    return sum_axes_0_2


def _max_long(xp):
    def max_long_rows(x):
        return xp.max(x, axis=1)
    return max_long_rows


def _strided(xp):
    def even_odd_strided(x):
        return x[:, ::2] * x[:, 1::2]
    return even_odd_strided


def _prime_ew(xp):
    def axpy_prime(x, y):
        return 2.5 * x + y
    return axpy_prime


def _col_bcast(xp):
    def column_scale_transposed(x, s):
        return x.T * s
    return column_scale_transposed


def _mean_f16(xp):
    def mean_f16_rows_f32_acc(x):
        return xp.mean(cast(xp, x, "float32"), axis=-1)
    return mean_f16_rows_f32_acc


def _gelu_tiny(xp):
    def gelu_tiny(x):
        return gelu(xp, x)
    return gelu_tiny


def _softmax_tiny(xp):
    def softmax_tiny(x):
        e = xp.exp(x - xp.max(x, axis=-1, keepdims=True))
        return e / xp.sum(e, axis=-1, keepdims=True)
    return softmax_tiny


def _ln_tiny(xp):
    def layernorm_tiny(x, g, b):
        mu = xp.mean(x, axis=-1, keepdims=True)
        var = xp.var(x, axis=-1, keepdims=True)
        return (x - mu) / xp.sqrt(var + 1e-5) * g + b
    return layernorm_tiny


def _gelu_bf16(xp):
    def gelu_bf16(x):
        return gelu(xp, x)
    return gelu_bf16


def _add_t_3d(xp):
    def add_swapaxes_3d(x, y):
        return xp.transpose(x, (0, 2, 1)) + y
    return add_swapaxes_3d


def _var_middle(xp):
    def var_middle_axis(x):
        return xp.var(x, axis=1)
    return var_middle_axis


TINY = S(dict(R=8, C=33), dict(R=8, C=33), dict(R=8, C=33))
ENTRIES = [
    Entry("exp_transpose_add", "layouts", "np.exp(x.T) + y", _exp_t, (Arg("R,C"), Arg("C,R")),
          S(dict(R=8192, C=8192), dict(R=1024, C=1024), dict(R=7, C=9)),
          ("layout:transposed", "elementwise", "dtype:f32"), flops=2),
    Entry("tanh_bias_odd", "layouts", "np.tanh(x + b) * 0.5 + x at odd sizes", _tanh_odd, (Arg("R,C"), Arg("C")),
          S(dict(R=4095, C=4097), dict(R=1021, C=1023), dict(R=7, C=9)), ("size:odd", "size:prime", "elementwise",
                                                                           "dtype:f32"), flops=4),
    Entry("permute_0213_scale", "layouts", "np.transpose(x, (0,2,1,3)) * 0.5", _permute, (Arg("B,H,T,D"),),
          S(dict(B=8, H=16, T=2048, D=128), dict(B=4, H=8, T=256, D=64), dict(B=2, H=3, T=4, D=5)),
          ("layout:permuted", "rank:4", "dtype:f32"), flops=1),
    Entry("transpose_rowsum", "layouts", "np.sum(x.T, axis=1) (column sums via a transpose)", _transpose_sum,
          (Arg("R,C"),), S(dict(R=16384, C=4096), dict(R=2048, C=1024), dict(R=7, C=9)),
          ("layout:transposed", "axis:leading", "dtype:f32"), flops=1, tol="f32-long"),
    Entry("sum_leading", "layouts", "np.sum(x, axis=0)", _sum0, (Arg("R,C"),),
          S(dict(R=65536, C=1024), dict(R=8192, C=512), dict(R=37, C=6)), ("axis:leading", "dtype:f32"), flops=1,
          tol="f32-long"),
    Entry("sum_middle", "layouts", "np.sum(x, axis=1) of a 3-D array", _sum_mid, (Arg("A,B,C"),),
          S(dict(A=64, B=1024, C=1024), dict(A=16, B=256, C=256), dict(A=3, B=5, C=7)),
          ("axis:middle", "rank:3", "dtype:f32"), flops=1, tol="f32-long"),
    Entry("sum_last_short_rows", "layouts", "np.sum over 7-wide rows", _sum_last_short, (Arg("R,C"),),
          S(dict(R=1 << 24, C=7), dict(R=1 << 19, C=7), dict(R=11, C=7)),
          ("axis:last", "rows:short", "size:odd", "dtype:f32"), flops=1),
    Entry("sum_axes_0_2", "layouts", "np.sum(x*x, axis=(0, 2)) of a 3-D array", _sum02, (Arg("A,B,C"),),
          S(dict(A=64, B=512, C=2048), dict(A=16, B=128, C=512), dict(A=3, B=5, C=7)),
          ("axis:several", "rank:3", "dtype:f32"), flops=2, tol="f32-long"),
    Entry("max_long_rows", "layouts", "np.max over 1M-wide rows", _max_long, (Arg("R,C"),),
          S(dict(R=64, C=1 << 20), dict(R=8, C=1 << 19), dict(R=2, C=40000)), ("axis:last", "rows:long", "dtype:f32"),
          flops=1),
    Entry("even_odd_strided", "layouts", "x[:, ::2] * x[:, 1::2] (stride-2 views)", _strided, (Arg("R,C"),),
          S(dict(R=8192, C=8192), dict(R=2048, C=1024), dict(R=7, C=10)), ("view:strided", "dtype:f32"), flops=1),
    Entry("axpy_prime", "layouts", "2.5*x + y at a prime size (6007x6007)", _prime_ew, (Arg("R,C"), Arg("R,C")),
          S(dict(R=6007, C=6007), dict(R=1009, C=1013), dict(R=7, C=11)), ("size:prime", "elementwise",
                                                                           "dtype:f32"), flops=2),
    Entry("column_scale_transposed", "layouts", "x.T * s (a transposed input times a row vector)", _col_bcast,
          (Arg("R,C"), Arg("R")), S(dict(R=8192, C=8192), dict(R=1024, C=1024), dict(R=7, C=9)),
          ("layout:transposed", "broadcast", "dtype:f32"), flops=1),
    Entry("mean_f16_rows_f32_acc", "layouts", "f16 rows, mean accumulated in f32", _mean_f16,
          (Arg("R,C", "float16"),), S(dict(R=32768, C=4096), dict(R=4096, C=1024), dict(R=6, C=40)),
          ("axis:last", "dtype:f16", "dtype:mixed"), flops=1, tol="f16"),
    Entry("add_swapaxes_3d", "layouts", "np.transpose(x, (0,2,1)) + y", _add_t_3d, (Arg("B,R,C"), Arg("B,C,R")),
          S(dict(B=16, R=2048, C=1024), dict(B=4, R=512, C=256), dict(B=2, R=3, C=5)),
          ("layout:permuted", "rank:3", "dtype:f32"), flops=1),
    Entry("var_middle_axis", "layouts", "np.var over the middle axis of a 3-D array", _var_middle,
          (Arg("A,B,C"),), S(dict(A=64, B=1024, C=1024), dict(A=16, B=256, C=256), dict(A=3, B=5, C=7)),
          ("axis:middle", "rank:3", "dtype:f32"), flops=3, tol="f32-long"),
    Entry("gelu_tiny", "layouts", "GELU of 8x33 (launch-bound)", _gelu_tiny, (Arg("R,C"),), TINY,
          ("size:tiny", "elementwise", "dtype:f32"), flops=9, bound="launch"),
    Entry("softmax_tiny", "layouts", "softmax of 8x33 (launch-bound)", _softmax_tiny, (Arg("R,C"),), TINY,
          ("size:tiny", "axis:last", "dtype:f32"), flops=5, bound="launch"),
    Entry("layernorm_tiny", "layouts", "LayerNorm of 8x33 (launch-bound)", _ln_tiny,
          (Arg("R,C"), Arg("C"), Arg("C")), TINY, ("size:tiny", "axis:last", "dtype:f32"), flops=8, bound="launch"),
    Entry("gelu_bf16", "layouts", "GELU, bf16 (torch tensors)", _gelu_bf16, (Arg("R,C", "bfloat16"),),
          S(dict(R=8192, C=8192), dict(R=2048, C=1024), dict(R=6, C=40)), ("elementwise", "dtype:bf16"), flops=9,
          tol="bf16", only="gpu-torch"),
]
