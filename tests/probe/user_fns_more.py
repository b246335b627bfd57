"""The probe's second round of functions (more of NumPy's surface: clip with arrays, norms of
every order, einsum forms, rounding, errors NumPy raises, out= and where=, library functions that
break the graph, Python loops, windows, bilinear sampling), registered in ``user_fns.CASES``."""
from __future__ import annotations

import numpy as np

from user_fns import _RNG, _i, _n, _u, case


@case((_n(23, 9), _n(9), _n(9, shift=2.0)), (_i(20, 5, 4, low=-20), 0, 6))
def clip_with_arrays_and_none(x, lo, hi):
    return np.clip(x, lo, hi), np.clip(x, None, 1), x.clip(max=0)


@case((_n(30, 8),),)
def where_int_and_nan(x):
    return np.where(x > 0, 1, 0), np.where(x > 0, x, np.nan), np.where(x < -1, -1.0, x)


@case((_n(19, 12),), (_n(4, 3, 5, dtype=np.float64),), red=True)
def norms_of_every_order(x):
    return (np.linalg.norm(x, ord=np.inf, axis=-1), np.linalg.norm(x, ord=1, axis=-1),
            np.linalg.norm(x.reshape(-1, x.shape[-1]), "fro"), np.sum(x ** 2) ** 0.5)


@case((_n(17), _n(17), _n(6, 17)),)
def einsum_simple_forms(a, b, m):
    return np.einsum("i,i->", a, b), np.einsum("ij->ji", m), np.einsum("ij,j->i", m, a), np.einsum("i,j->ij", a, b)


@case((_n(25, 10),), (_n(3, 4, 6, dtype=np.float64),))
def take_along_argmax(x):
    i = np.argmax(x, axis=-1)
    return np.take_along_axis(x, i[..., None], axis=-1), np.argmax(x), np.argmax(x, axis=-1, keepdims=True)


@case((_n(20, 7, scale=10.0),), (_n(5, dtype=np.float16, scale=10.0),))
def rounding_variants(x):
    return np.round(x, 3), np.around(x, -1), x.round(), np.rint(x), np.trunc(x)


@case((_i(100, 12, 5, dtype=np.int32, low=-100), 0.5),)
def int_plus_float_inplace_error(x, s):
    x += s
    return x


@case((_n(6, 11), _n(6, 11)), (_n(2, 3, 4), _n(2, 3, 4)))
def stack_concat_axes(a, b):
    return np.stack([a, b], axis=-1), np.concatenate([a, b], axis=None), np.concatenate((a, b), axis=0)


@case((_n(8, 9),), (_n(5, 6, dtype=np.float64),))
def roll_two_axes_tril(x):
    return np.roll(x, shift=(1, -2), axis=(0, 1)), np.tril(x, k=-1), np.triu(x, 2)


@case((_n(12, 7), _n(7, 5), _n(5), _n(12, 5)),)
def matmul_epilogues(x, w, b, r):
    h = x @ w + b
    return np.maximum(h, 0) + r, np.tanh(h) * 0.5, (h - h.mean(axis=-1, keepdims=True))


@case((_n(14, 6), np.zeros(6, np.float32)),)
def reduction_out_argument(x, buf):
    np.sum(x, axis=0, out=buf)
    return buf * 2


@case((_n(4, 5, 6),), (_n(2, 2, 3, dtype=np.float64),), red=True)
def var_ddof_keepdims_tuple(x):
    return np.var(x, axis=(0, 2), ddof=1, keepdims=True), np.maximum.reduce(x, axis=(0, 1)), x.std(ddof=1)


@case((_n(10, 12),), (_n(3, 4, dtype=np.float64),))
def strided_write_arg(x):
    x[:, ::2] = 0
    x[::-1][0] += 1
    return x.sum(axis=0)


@case((_n(4, 6, 5),), (_n(2, 3, 2, dtype=np.float64),))
def transpose_reshape_3d(x):
    b = x.shape[0]
    y = x.transpose(0, 2, 1).reshape(b, -1)
    return y - y.mean(axis=1, keepdims=True), np.broadcast_to(x[:, None], (b, 3) + x.shape[1:]).sum(1)


@case((_n(9), np.float32(3.0), np.array(5)), (_n(2, 2, dtype=np.float64), np.float64(-1.5), np.array(2, np.int32)))
def numpy_scalar_and_0d_args(x, s, k):
    return x * s + k, s * k, (x * k).astype(np.float32)


@case((_u(20, 3) < 0.5, _u(20, 3) < 0.3),)
def bool_arithmetic(m, n):
    return m.sum(), m * 1.5, ~m, m ^ n, m + n, np.mean(m), m.astype(np.int8) - n


@case((_i(50, 30, low=-50), 7), (_i(9, 4, dtype=np.int32, low=-9), -3))
def int_div_pow(x, d):
    return x // d, x % d, np.power(x, 2), x ** 3, np.abs(x).max(), x / d


@case((_i(10, 8, dtype=np.int32),),)
def python_int_out_of_range(x):
    return x * 2 ** 40


@case((_n(40),), (_n(3, 9, dtype=np.float64),))
def cumsum_dtype_diff2(x):
    return np.cumsum(x, axis=-1, dtype=np.float64), np.diff(x, n=2, axis=-1), np.diff(x, prepend=0.0)


@case((_n(30, 7),), (_n(3, 2, dtype=np.float64),))
def gradient_science(x):
    return np.gradient(x, axis=0)


@case((_n(64),), (_n(9, dtype=np.float64),))
def convolve_signal(x):
    k = np.array([0.25, 0.5, 0.25], dtype=x.dtype)
    return np.convolve(x, k, mode="same")


@case((_n(50, 6),), (_n(7, dtype=np.float64),))
def percentile_robust_scale(x):
    q1, q3 = np.percentile(x, [25, 75], axis=0)
    return (x - np.median(x, axis=0)) / (q3 - q1)


@case((_n(12, 30, scale=5.0),), (_n(4, 7, dtype=np.float64),), red=True)
def logaddexp_reduce(x):
    return np.logaddexp.reduce(x, axis=-1)


@case((_n(16, 4), _n(16, 4)),)
def isclose_allclose(a, b):
    return np.isclose(a, a + 1e-9).all(), np.allclose(a, b), np.abs(a - b).max() < 10


@case((_n(9, 5), _n(5, 4), _n(4)),)
def gram_and_dot(x, w, b):
    return x.T @ x, np.dot(x, w) + b, np.dot(b, b), np.inner(b, b)


@case((_n(7, 7),), (_n(5, 5, dtype=np.float64),), red=True)
def pairwise_upper_triangle(d):
    iu = np.triu_indices(d.shape[0], k=1)
    return d[iu].mean(), np.diag(d), np.diag(np.diag(d)), np.trace(d)


@case((_n(3, 4, 5, 6),), (_n(2, 3, 4, 4, dtype=np.float64),), red=True)
def nchw_norm_keepdims(x):
    mu = x.mean(axis=(2, 3), keepdims=True)
    var = x.var(axis=(2, 3), keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5)


@case((_n(11, 5),), (_n(3, dtype=np.float64),))
def exp_out_argument(x):
    np.exp(x, out=x)
    return x.sum(axis=0)


@case((np.where(_u(20, 6) < 0.2, np.nan, _n(20, 6)),),)
def nanargmax_nanmax(x):
    return np.nanmax(x, axis=0), np.nanargmax(x, axis=0)


@case((_n(10, 3),), (_n(4, 2, dtype=np.float64),))
def repeat_tile_likes(x):
    return np.repeat(x, 2, axis=0), np.tile(x, (1, 2)), np.ones_like(x) * 0.5, np.full_like(x, 7), np.zeros(x.shape, x.dtype) + x


@case((_n(20), 0.1), (_n(12, dtype=np.float64), 0.5))
def ewma_python_loop(x, a):
    s = np.empty_like(x)
    s[0] = x[0]
    for t in range(1, x.shape[0]):
        s[t] = a * x[t] + (1 - a) * s[t - 1]
    return s


@case((_n(60), 5), (_n(3, 20, dtype=np.float64), 4), red=True)
def sliding_window_rolling_std(x, w):
    win = np.lib.stride_tricks.sliding_window_view(x, w, axis=-1)
    return win.mean(axis=-1), win.std(axis=-1)


@case((_RNG.integers(0, 256, (6, 8, 3)).astype(np.uint8),),)
def bgr_to_chw_batch(img):
    x = img[..., ::-1].astype(np.float32) / 255
    return np.transpose(x, (2, 0, 1))[None]


@case((_u(6, 7), _u(10, lo=0, hi=5.99), _u(10, lo=0, hi=4.99)),)
def bilinear_sample(img, xs, ys):
    x0, y0 = np.floor(xs).astype(int), np.floor(ys).astype(int)
    x1, y1 = x0 + 1, y0 + 1
    wx, wy = xs - x0, ys - y0
    return ((1 - wx) * (1 - wy) * img[y0, x0] + wx * (1 - wy) * img[y0, x1]
            + (1 - wx) * wy * img[y1, x0] + wx * wy * img[y1, x1])


@case((_n(25, 3),),)
def count_nonzero_python_int(x):
    return np.count_nonzero(x > 0), len(x), x.size, x.ndim, x.shape


@case((_n(40, 5),), (_n(3, dtype=np.float64),))
def sigmoid_variants(x):
    return np.reciprocal(1 + np.exp(-x)), np.heaviside(x, 0.5), np.float_power(np.abs(x), 1.5)


@case((_i(20, 30, dtype=np.int8, low=-20),),)
def relu6_int8(x):
    return x.clip(0, 6), np.minimum(np.maximum(x, 0), 6) * 2
