"""Layouts and sizes the public suite does not have: transposed and permuted inputs, strided
views, reductions over leading / middle / last / several axes, long and short rows, sizes that are
no multiple of 4/8/32/128 (primes included), tiny launch-bound arrays, float16 reductions,
``np.roll`` and ``np.concatenate`` along the last axis."""
from __future__ import annotations

from .base import Arg, Entry, along, body, cast
from .transformer import S, gelu


@body
def exp_transpose_add(xp, x, y):
    return xp.exp(x.T) + y


@body
def tanh_bias_odd(xp, x, b):
    return xp.tanh(x + b) * 0.5 + x


@body
def permute_0213_scale(xp, x):
    return xp.transpose(x, (0, 2, 1, 3)) * 0.5


@body
def transpose_rowsum(xp, x):
    return xp.sum(x.T, axis=1)


sum_leading = along("sum_leading", "sum", 0)
sum_middle = along("sum_middle", "sum", 1)
sum_last_short_rows = along("sum_last_short_rows", "sum", -1)


@body
def sum_axes_0_2(xp, x):
    return xp.sum(x * x, axis=(0, 2))


max_long_rows = along("max_long_rows", "max", 1)


@body
def even_odd_strided(xp, x):
    return x[:, ::2] * x[:, 1::2]


@body
def axpy_prime(xp, x, y):
    return 2.5 * x + y


@body
def column_scale_transposed(xp, x, s):
    return x.T * s


@body
def mean_f16_rows_f32_acc(xp, x):
    return xp.mean(cast(xp, x, "float32"), axis=-1)


@body
def gelu_tiny(xp, x):
    return gelu(xp, x)


@body
def softmax_tiny(xp, x):
    e = xp.exp(x - xp.max(x, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True)


@body
def layernorm_tiny(xp, x, g, b):
    mu = xp.mean(x, axis=-1, keepdims=True)
    var = xp.var(x, axis=-1, keepdims=True)
    return (x - mu) / xp.sqrt(var + 1e-5) * g + b


@body
def gelu_bf16(xp, x):
    return gelu(xp, x)


@body
def add_swapaxes_3d(xp, x, y):
    return xp.transpose(x, (0, 2, 1)) + y


var_middle_axis = along("var_middle_axis", "var", 1)


@body
def roll_diff_last(xp, x):
    return x - xp.roll(x, 1, -1)


@body
def concat_poly_features(xp, x, z):
    return xp.concatenate([x, x * x, xp.sin(z)], axis=1)


TINY = S(dict(R=8, C=33), dict(R=8, C=33), dict(R=8, C=33))
ENTRIES = [
    Entry("exp_transpose_add", "layouts", "np.exp(x.T) + y", exp_transpose_add, (Arg("R,C"), Arg("C,R")),
          S(dict(R=8192, C=8192), dict(R=1024, C=1024), dict(R=7, C=9)),
          ("layout:transposed", "elementwise", "dtype:f32"), flops=2),
    Entry("tanh_bias_odd", "layouts", "np.tanh(x + b) * 0.5 + x at odd sizes", tanh_bias_odd, (Arg("R,C"), Arg("C")),
          S(dict(R=4095, C=4097), dict(R=1021, C=1023), dict(R=7, C=9)), ("size:odd", "size:prime", "elementwise",
                                                                           "dtype:f32"), flops=4),
    Entry("permute_0213_scale", "layouts", "np.transpose(x, (0,2,1,3)) * 0.5", permute_0213_scale, (Arg("B,H,T,D"),),
          S(dict(B=8, H=16, T=2048, D=128), dict(B=4, H=8, T=256, D=64), dict(B=2, H=3, T=4, D=5)),
          ("layout:permuted", "rank:4", "dtype:f32"), flops=1),
    Entry("transpose_rowsum", "layouts", "np.sum(x.T, axis=1) (column sums via a transpose)", transpose_rowsum,
          (Arg("R,C"),), S(dict(R=16384, C=4096), dict(R=2048, C=1024), dict(R=7, C=9)),
          ("layout:transposed", "axis:leading", "dtype:f32"), flops=1, tol="f32-long"),
    Entry("sum_leading", "layouts", "np.sum(x, axis=0)", sum_leading, (Arg("R,C"),),
          S(dict(R=65536, C=1024), dict(R=8192, C=512), dict(R=37, C=6)), ("axis:leading", "dtype:f32"), flops=1,
          tol="f32-long"),
    Entry("sum_middle", "layouts", "np.sum(x, axis=1) of a 3-D array", sum_middle, (Arg("A,B,C"),),
          S(dict(A=64, B=1024, C=1024), dict(A=16, B=256, C=256), dict(A=3, B=5, C=7)),
          ("axis:middle", "rank:3", "dtype:f32"), flops=1, tol="f32-long"),
    Entry("sum_last_short_rows", "layouts", "np.sum over 7-wide rows", sum_last_short_rows, (Arg("R,C"),),
          S(dict(R=1 << 24, C=7), dict(R=1 << 19, C=7), dict(R=11, C=7)),
          ("axis:last", "rows:short", "size:odd", "dtype:f32"), flops=1),
    Entry("sum_axes_0_2", "layouts", "np.sum(x*x, axis=(0, 2)) of a 3-D array", sum_axes_0_2, (Arg("A,B,C"),),
          S(dict(A=64, B=512, C=2048), dict(A=16, B=128, C=512), dict(A=3, B=5, C=7)),
          ("axis:several", "rank:3", "dtype:f32"), flops=2, tol="f32-long"),
    Entry("max_long_rows", "layouts", "np.max over 1M-wide rows", max_long_rows, (Arg("R,C"),),
          S(dict(R=64, C=1 << 20), dict(R=8, C=1 << 19), dict(R=2, C=40000)), ("axis:last", "rows:long", "dtype:f32"),
          flops=1),
    Entry("even_odd_strided", "layouts", "x[:, ::2] * x[:, 1::2] (stride-2 views)", even_odd_strided, (Arg("R,C"),),
          S(dict(R=8192, C=8192), dict(R=2048, C=1024), dict(R=7, C=10)), ("view:strided", "dtype:f32"), flops=1),
    Entry("axpy_prime", "layouts", "2.5*x + y at a prime size (6007x6007)", axpy_prime, (Arg("R,C"), Arg("R,C")),
          S(dict(R=6007, C=6007), dict(R=1009, C=1013), dict(R=7, C=11)), ("size:prime", "elementwise",
                                                                           "dtype:f32"), flops=2),
    Entry("column_scale_transposed", "layouts", "x.T * s (a transposed input times a row vector)", column_scale_transposed,
          (Arg("R,C"), Arg("R")), S(dict(R=8192, C=8192), dict(R=1024, C=1024), dict(R=7, C=9)),
          ("layout:transposed", "broadcast", "dtype:f32"), flops=1),
    Entry("mean_f16_rows_f32_acc", "layouts", "f16 rows, mean accumulated in f32", mean_f16_rows_f32_acc,
          (Arg("R,C", "float16"),), S(dict(R=32768, C=4096), dict(R=4096, C=1024), dict(R=6, C=40)),
          ("axis:last", "dtype:f16", "dtype:mixed"), flops=1, tol="f16"),
    Entry("add_swapaxes_3d", "layouts", "np.transpose(x, (0,2,1)) + y", add_swapaxes_3d, (Arg("B,R,C"), Arg("B,C,R")),
          S(dict(B=16, R=2048, C=1024), dict(B=4, R=512, C=256), dict(B=2, R=3, C=5)),
          ("layout:permuted", "rank:3", "dtype:f32"), flops=1),
    Entry("var_middle_axis", "layouts", "np.var over the middle axis of a 3-D array", var_middle_axis,
          (Arg("A,B,C"),), S(dict(A=64, B=1024, C=1024), dict(A=16, B=256, C=256), dict(A=3, B=5, C=7)),
          ("axis:middle", "rank:3", "dtype:f32"), flops=3, tol="f32-long"),
    Entry("gelu_tiny", "layouts", "GELU of 8x33 (launch-bound)", gelu_tiny, (Arg("R,C"),), TINY,
          ("size:tiny", "elementwise", "dtype:f32"), flops=9, bound="launch"),
    Entry("softmax_tiny", "layouts", "softmax of 8x33 (launch-bound)", softmax_tiny, (Arg("R,C"),), TINY,
          ("size:tiny", "axis:last", "dtype:f32"), flops=5, bound="launch"),
    Entry("layernorm_tiny", "layouts", "LayerNorm of 8x33 (launch-bound)", layernorm_tiny,
          (Arg("R,C"), Arg("C"), Arg("C")), TINY, ("size:tiny", "axis:last", "dtype:f32"), flops=8, bound="launch"),
    Entry("gelu_bf16", "layouts", "GELU, bf16 (torch tensors)", gelu_bf16, (Arg("R,C", "bfloat16"),),
          S(dict(R=8192, C=8192), dict(R=2048, C=1024), dict(R=6, C=40)), ("elementwise", "dtype:bf16"), flops=9,
          tol="bf16", only="gpu-torch"),
    Entry("roll_diff_last", "layouts", "x - np.roll(x, 1, -1)", roll_diff_last, (Arg("R,C"),),
          S(dict(R=8192, C=4096), dict(R=2048, C=1024), dict(R=6, C=40)), ("roll", "axis:last", "dtype:f32"), flops=1),
    Entry("concat_poly_features", "layouts", "np.concatenate([x, x * x, np.sin(z)], axis=1)", concat_poly_features,
          (Arg("R,C"), Arg("R,D")), S(dict(R=16384, C=1024, D=256), dict(R=2048, C=512, D=128), dict(R=6, C=7, D=3)),
          ("concatenate", "axis:last", "dtype:f32"), flops=2),
]
