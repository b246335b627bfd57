"""The probe's functions: blocks of NumPy as users write them (ML layers and losses, optimisers,
vision, statistics, signal processing, finance, physics), none a copy of a corpus entry, each with
a few argument sets (odd sizes, views, dtypes, Python scalars, 0-d and empty arrays).

``CASES`` maps a name to a :class:`Case`; ``Case.inputs()`` gives fresh argument tuples (functions
may write into their arguments, so every call gets its own copies)."""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

_RNG = np.random.default_rng(20261128)


def _n(*shape, dtype=np.float32, scale=1.0, shift=0.0):
    return (_RNG.standard_normal(shape) * scale + shift).astype(dtype)


def _u(*shape, dtype=np.float32, lo=0.0, hi=1.0):
    return _RNG.uniform(lo, hi, shape).astype(dtype)


def _i(high, *shape, dtype=np.int64, low=0):
    return _RNG.integers(low, high, shape).astype(dtype)


@dataclasses.dataclass(frozen=True)
class Case:
    """``fn`` and argument sets; ``red``: long reductions (the table's loosened float rows)."""
    fn: Callable
    args: tuple                   # tuple of argument tuples; an element may be a dict of kwargs last
    red: bool = False

    def inputs(self):
        for a in self.args:
            yield _copy(a)


def _copy(a):
    if isinstance(a, np.ndarray):
        if a.base is not None and not a.flags.owndata:      # keep a view a view (of a copy of its base)
            return a
        return a.copy()
    if isinstance(a, tuple):
        return tuple(_copy(v) for v in a)
    if isinstance(a, dict):
        return {k: _copy(v) for k, v in a.items()}
    return a


CASES: dict[str, Case] = {}


def case(*args, red=False):
    def deco(fn):
        CASES[fn.__name__] = Case(fn, tuple(args), red)
        return fn
    return deco


# ---- ML layers and losses --------------------------------------------------------------------
@case((_n(37, 53),), (_n(5, 7, 129, dtype=np.float64),))
def softmax_method_keepdims(x):
    z = x - x.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


@case((_n(33, 10), _i(10, 33)), (_n(64, 7, scale=4.0), _i(7, 64, dtype=np.int32)), red=True)
def nll_take_along_axis(logits, labels):
    m = logits.max(axis=1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(axis=1, keepdims=True))
    picked = np.take_along_axis(logp, labels[:, None], axis=1)
    return -picked.mean()


@case((_n(41, 9), _i(9, 41)), (_n(1, 3), _i(3, 1)))
def accuracy_argmax(logits, labels):
    pred = np.argmax(logits, axis=1)
    return (pred == labels).mean()


@case((_n(40, 12), _i(12, 40)), red=True)
def cross_entropy_onehot_eye(logits, labels):
    onehot = np.eye(logits.shape[1], dtype=logits.dtype)[labels]
    logp = logits - np.log(np.sum(np.exp(logits), axis=1, keepdims=True))
    return -(onehot * logp).sum(axis=1).mean()


@case((_n(29, 31),), (_n(8, 3, 17)[:, ::-1],))
def l2_normalize_linalg(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


@case((_n(45, 16), _n(45, 16)), (_n(3, 5, dtype=np.float64), _n(3, 5, dtype=np.float64)))
def rowdot_einsum(a, b):
    return np.einsum("ij,ij->i", a, b)


@case((_u(50, 20, lo=-0.2, hi=1.2), _u(50, 20).round()), red=True)
def bce_clipped_probs(p, y):
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p)).mean()


@case((_n(30, 11), _n(30, 11)), (_n(7, dtype=np.float64), _n(7, dtype=np.float64), {"beta": 0.5}), red=True)
def smooth_l1(pred, target, beta=1.0):
    d = np.abs(pred - target)
    loss = np.where(d < beta, 0.5 * d ** 2 / beta, d - 0.5 * beta)
    return loss.sum() / pred.size


@case((_n(63, 17, scale=6.0),), (_n(101, dtype=np.float16, scale=3.0),))
def softplus_mish(x):
    sp = np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)
    return x * np.tanh(sp)


@case((_n(19, 16), _n(23, 16), _n(23, 8)), red=True)
def attention_2d(q, k, v):
    s = q @ k.T / np.sqrt(q.shape[-1])
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return p @ v


@case((_n(17, 24), _n(24, 40), _n(40)), (_n(3, 5, 24), _n(24, 40), _n(40)))
def linear_relu(x, w, b):
    return np.maximum(x @ w + b, 0)


@case((_n(21, 47, shift=3.0),), (_n(4, 6, 33, dtype=np.float64),))
def standardize_std_method(x, eps=1e-6):
    return (x - x.mean(-1, keepdims=True)) / (x.std(-1, keepdims=True) + eps)


@case((_n(57, 13),), (_n(2, 9, dtype=np.float64),), red=True)
def std_ddof1_columns(x):
    return x.std(axis=0, ddof=1)


@case((_n(6, 5, 29),), (_n(3, 4, 7, 5, dtype=np.float64),), red=True)
def var_tuple_axes(x):
    return np.var(x, axis=(0, 2)), x.mean(axis=(0, 2), keepdims=True)


@case((_n(31, 12), _u(31, 12) < 0.2), (_n(8, dtype=np.float16), _u(8) < 0.5))
def dropout_mask_inplace(x, drop):
    y = x.copy()
    y[drop] = 0
    y *= 1.0 / 0.8
    return y


@case((_n(26, 9),), (_n(4, 5, 6, dtype=np.float64),))
def relu_mask_assign_arg(x):
    x[x < 0] = 0
    return x


@case((_n(34, 15),), (_n(1, dtype=np.float64),))
def leaky_relu_where_scalar(x):
    return np.where(x > 0, x, 0.01 * x)


@case((_i(10, 37), 10), (_i(4, 5, dtype=np.int32), 6))
def one_hot_arange(labels, n):
    return (labels[:, None] == np.arange(n)).astype(np.float32)


@case((_n(50, 8), _i(50, 13, 4)), (_n(7, 3, dtype=np.float64), _i(7, 2, 5)))
def embedding_bag_mean(table, ids):
    return table[ids].mean(axis=1)


@case((_n(2, 9, 9),), (_n(17, 17),))
def causal_softmax_tril(s):
    n = s.shape[-1]
    mask = np.tril(np.ones((n, n), dtype=bool))
    s = np.where(mask, s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@case((_n(12, 12),), (_n(3, 6, 6, dtype=np.float64),))
def triu_additive_mask(s):
    n = s.shape[-1]
    return s + np.triu(np.full((n, n), -1e9, dtype=s.dtype), k=1)


@case((_n(37), _n(29), _n(37, 29)), (_n(5, dtype=np.float64), _n(4, dtype=np.float64), _n(5, 4, dtype=np.float64)))
def outer_update(a, b, w):
    return w - 0.1 * np.outer(a, b)


@case((_n(35, 22),), (_n(9, dtype=np.int64),))
def roll_diff(x):
    return x - np.roll(x, 1, axis=-1)


@case((_n(40, 33),), (_n(3, 2, dtype=np.float64),), red=True)
def stack_row_stats(x):
    return np.stack([x.mean(1), x.std(1), x.max(1), x.min(1)], axis=1)


@case((_n(21, 13), _n(21, 4)), (_n(2, 3, dtype=np.float64), _n(2, 1, dtype=np.float64)))
def concat_poly_features(x, z):
    return np.concatenate([x, x ** 2, np.sin(z)], axis=1)


@case((_n(129),), (_n(10, 3)[::-1, 1],))
def discounted_returns_reverse_cumsum(r):
    return np.cumsum(r[::-1])[::-1] * 0.99


@case((_n(23, 40),), (_n(6, 7, 10),))
def pairs_strided(x):
    return x[..., ::2] * x[..., 1::2] - x[..., ::-2]


@case((_n(25, 14), _n(14)), (_n(2, 3, 4, dtype=np.float64), _n(4, dtype=np.float64)))
def broadcast_to_mul(x, b):
    return np.broadcast_to(b, x.shape) * x + 1


@case((_n(12, 18),), (_n(6, 4, dtype=np.float64),))
def reshape_of_transpose(x):
    y = x.T.reshape(-1, 3)
    return y * 2 + y.sum(axis=1, keepdims=True)


@case((_n(33, 27, dtype=np.float16), _n(27)), (_n(9, dtype=np.float16), np.float32(2.5)))
def f16_mixed_scalars(x16, y32):
    a = x16 * 0.5 + 1          # stays float16 (Python scalars are weak)
    b = a * y32                # float32
    return a, b.astype(np.float16), (x16 * 3).astype(np.float32).sum()


@case((_i(1000, 31, low=-1000), _i(50, 31, low=1)), (_i(100, 3, 4, dtype=np.int32, low=-100), _i(9, 4, dtype=np.int32, low=1)))
def int_arith(a, b):
    return (a * 3 + b) // 2 % 7, a // b, np.abs(a) << 1, a.sum(axis=-1)


@case((_n(40, 11), _n(40, 11)),)
def bool_logic_counts(x, y):
    m = np.logical_and(x > 0, y < 1) | (x < -2)
    return m.sum(), m.sum(axis=0), np.count_nonzero(~m, axis=1), m.any(axis=1), np.isfinite(x).all()


@case((_n(30, 7, scale=0.5), np.float32(0.02)), (_n(5, dtype=np.float64), 0.1))
def quantize_round_int8(x, scale):
    return np.round(x / scale).clip(-128, 127).astype(np.int8)


@case((_n(44, 9), _n(44, 9)), (_n(3, dtype=np.float64), _n(1, dtype=np.float64)))
def polar_hypot_arctan2(x, y):
    return np.hypot(x, y), np.arctan2(y, x)


@case((_n(80, scale=1e-3),), (_n(4, 5, dtype=np.float64, scale=10.0),))
def expm1_log1p_stable(x):
    return np.expm1(x) / np.where(x == 0, 1, x), np.log1p(np.abs(x))


@case((_n(19, 23),), (_i(50, 6, 7, low=-50),))
def maximum_reduce_axis0(x):
    return np.maximum.reduce(x, axis=0), np.minimum.reduce(x, axis=1), np.add.reduce(x, axis=None)


@case((_n(37, 300),), (_i(127, 6, 40, dtype=np.int8, low=-127),), red=True)
def sum_with_dtype(x):
    return x.sum(axis=1, dtype=np.float64), np.sum(x, axis=0, dtype=np.int64)


@case((_n(27, 19), _u(27, 19) < 0.7), red=True)
def mean_where_mask(x, m):
    return np.mean(x, axis=1, where=m), np.sum(x, where=m, axis=0)


@case((_n(16, 8), _n(16, 8)), (_n(3, dtype=np.float64), _n(3, dtype=np.float64)))
def ufunc_out_inplace(x, y):
    np.multiply(x, 2, out=x)
    np.add(x, y, out=y)
    return x, y


@case((_n(300), _n(300), _n(300), _u(300)),
      (_n(4, 5), _n(4, 5), _n(4, 5), _u(4, 5), {"lr": 0.01, "t": 3}))
def adam_inplace_args(p, g, m, v, lr=1e-3, t=1):
    b1, b2 = 0.9, 0.999
    m *= b1
    m += (1 - b1) * g
    v *= b2
    v += (1 - b2) * g * g
    mhat = m / (1 - b1 ** t)
    vhat = v / (1 - b2 ** t)
    p -= lr * mhat / (np.sqrt(vhat) + 1e-8)


@case((_n(61, 5),), (_n(2, 2, dtype=np.float64),), red=True)
def stats_dict(x):
    return {"mean": x.mean(axis=0), "std": x.std(axis=0), "range": np.ptp(x, axis=0)}


@case((np.array(2.5, np.float32), _n(7)), (np.array(3, np.int64), _n(1, dtype=np.float64)))
def zero_d_scale(s, x):
    return x * s + s ** 2


@case((_n(0, 5),), (_n(4, 0),), (_n(0),))
def empty_sum_mean(x):
    return x.sum(axis=0), x * 2, np.max(x, axis=-1, initial=-np.inf)


@case((_n(129),), (_n(4, 9, dtype=np.float64),))
def median_statistic(x):
    return np.median(x, axis=-1) - x.mean(axis=-1)


@case((_u(120, lo=50, hi=60).astype(np.float64),), (_u(30, 4, lo=1, hi=2).astype(np.float64),), red=True)
def sharpe_ratio_log_returns(prices):
    r = np.diff(np.log(prices), axis=0)
    return r.mean(axis=0) / r.std(axis=0, ddof=1) * np.sqrt(252)


@case((_u(90, lo=1, hi=2).astype(np.float64),), (_u(40, 3, lo=1, hi=2),))
def max_drawdown(prices):
    peak = np.maximum.accumulate(prices, axis=0)
    dd = (prices - peak) / peak
    return dd.min(axis=0)


@case((_u(64, lo=20, hi=80).astype(np.float64), _u(64, lo=50, hi=70).astype(np.float64), 0.5, 0.01, 0.25),)
def black_scholes_call(s, k, t, r, sigma):
    d1 = (np.log(s / k) + (r + 0.5 * sigma ** 2) * t) / (sigma * np.sqrt(t))
    d2 = d1 - sigma * np.sqrt(t)

    def cdf(z):        # logistic approximation of the normal CDF
        return 1.0 / (1.0 + np.exp(-1.702 * z))
    return s * cdf(d1) - k * np.exp(-r * t) * cdf(d2)


@case((_n(200), 5), (_n(33, dtype=np.float64), 4))
def moving_average_cumsum(x, w):
    c = np.cumsum(x)
    c = np.concatenate([[0.0], c])
    return (c[w:] - c[:-w]) / w


@case((_n(101),), (_n(7, 50, dtype=np.float64),))
def fir_slices(x):
    return 0.25 * x[..., 2:] + 0.5 * x[..., 1:-1] + 0.25 * x[..., :-2]


@case((_RNG.integers(0, 256, (17, 23, 3)).astype(np.uint8),), (_RNG.integers(0, 256, (2, 5, 4, 3)).astype(np.uint8),))
def normalize_image_hwc(img):
    mean = np.array([0.485, 0.456, 0.406], dtype=np.float32)
    std = np.array([0.229, 0.224, 0.225], dtype=np.float32)
    return (img.astype(np.float32) / 255.0 - mean) / std


@case((_u(15, 21, 3),), (_u(4, 4, 3, dtype=np.float64),))
def rgb_to_gray_matmul(img):
    return img @ np.array([0.299, 0.587, 0.114], dtype=img.dtype)


@case((_u(3, 16, 20),),)
def flip_crop_gamma(img):
    x = img[:, ::-1, 2:-2]
    return np.power(x, 1 / 2.2)


@case((_n(30, 6), _n(11, 6)), (_n(4, 3, dtype=np.float64), _n(5, 3, dtype=np.float64)))
def pairwise_distances(a, b):
    d2 = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.T
    return np.sqrt(np.maximum(d2, 0))


@case((_n(50, 4), _n(5, 4)),)
def kmeans_assign(x, c):
    d = ((x[:, None, :] - c[None, :, :]) ** 2).sum(-1)
    return d.argmin(axis=1), d.min(axis=1).sum()


@case((np.where(_u(40, 7) < 0.1, np.nan, _n(40, 7)),), red=True)
def nan_zscore(x):
    return (x - np.nanmean(x, axis=0)) / np.nanstd(x, axis=0)


@case((_n(80), _n(80)), (_n(5, dtype=np.float64), _n(5, dtype=np.float64)), red=True)
def pearson_corr(x, y):
    xc, yc = x - x.mean(), y - y.mean()
    return (xc * yc).sum() / np.sqrt((xc ** 2).sum() * (yc ** 2).sum())


@case((_n(60, 7),), (_n(3, 2, dtype=np.float64),), red=True)
def covariance_matrix(x):
    xc = x - x.mean(axis=0)
    return xc.T @ xc / (x.shape[0] - 1)


@case((_n(25, 6), _u(25)), (_n(3, 2, dtype=np.float64), _u(3, dtype=np.float64)), red=True)
def weighted_average(x, w):
    return np.average(x, axis=0, weights=w)


@case((_n(4, 5, 6), _n(4, 6, 3)), (_n(2, 3, 3, dtype=np.float64), _n(2, 3, 3, dtype=np.float64)))
def batched_einsum(a, b):
    return np.einsum("bij,bjk->bik", a, b), np.einsum("bii->b", a[:, :, :a.shape[1]])


@case((_n(20, 3),), (_n(5, 2, dtype=np.float64),))
def nbody_forces(p):
    d = p[:, None, :] - p[None, :, :]
    r2 = (d ** 2).sum(-1) + 1e-2
    inv = r2 ** -1.5
    return (d * inv[..., None]).sum(axis=1)


@case((_n(9, 7), _n(7, 9)),)
def tril_of_product(a, b):
    return np.tril(a @ b), np.triu(a @ b, 1).sum()


@case((_n(500), 1.0), (_n(7, 3, dtype=np.float64), 0.5), red=True)
def clip_grad_by_norm(g, max_norm):
    n = np.linalg.norm(g)
    return g * np.minimum(1.0, max_norm / (n + 1e-6))


@case((_n(300), _n(300), _u(300), 0.01, 0.9), (_n(3, 4), _n(3, 4), _u(3, 4), 1e-3, 0.99))
def rmsprop_python_scalars(w, g, sq, lr, alpha):
    sq = alpha * sq + (1 - alpha) * g * g
    w = w - lr * g / (np.sqrt(sq) + 1e-8)
    return w, sq


@case((_n(22, 13, scale=3.0),), (_n(5, dtype=np.float64),))
def method_chain(x):
    return x.clip(min=0).round(2), x.astype(int), np.abs(x).max(axis=0), x.sum(0).cumsum()


@case((_n(33, 21),), (_n(4, 5, 3, dtype=np.float64),))
def reversed_view_reductions(x):
    return x[::-1].sum(0), x[:, ::-1].cumsum(axis=1), x[::-2, ::3].max()


@case((_n(1),), (np.array(np.float64(1.5)),), (_n(1, 1),))
def single_element(x):
    return np.exp(x) / np.exp(x).sum(), x.mean(), x.reshape(-1)[0] * 2


@case((_n(17, 5, scale=3.0),), (_n(6, dtype=np.float64, scale=3.0),))
def sign_floor_mod(x):
    return np.sign(x) * np.floor(np.abs(x)), np.mod(x, 1.5), np.floor_divide(x, -0.75)


@case((np.where(_u(30, 4) < 0.2, np.inf, _n(30, 4)),),)
def nan_to_num_any(x):
    y = np.nan_to_num(x, posinf=0.0)
    return y, np.isinf(x).any(axis=0)


@case((_n(64),), (_n(3, 32, dtype=np.float64),))
def fft_magnitude(x):
    w = np.hanning(x.shape[-1])
    return np.abs(np.fft.rfft(x * w)) / x.shape[-1]


@case((_u(50), ), (_u(3, 9, dtype=np.float64),))
def interp_lookup(x):
    xp = np.linspace(0, 1, 11)
    return np.interp(x, xp, xp ** 2)


@case((_i(20, 40, low=-20), _i(7, 40, low=0)), (_i(5, 3, 3), _i(3, 3, 3)))
def int64_to_float_sigmoid(a, b):
    return 1 / (1 + np.exp(-a)), (a + b) / 2, a.mean(), (a > b).astype(np.int64).sum()


@case((_n(41, dtype=np.float16), 2.5), (_n(3, 4, dtype=np.float16), 3))
def f16_with_python_scalar(x, s):
    return x * s + 1, np.abs(x).max(), x.mean(axis=-1), x.astype(np.float32).var()


@case((_n(14, 6),), (_n(2, dtype=np.float64),))
def returns_tuple_and_scalar(x):
    s = x.sum()
    return s, x / s, float(x.shape[0])


@case((_n(12, 10),), (_n(3, 3, dtype=np.float64),))
def inplace_slice_arithmetic(x):
    y = x.copy()
    y[:, 1:] -= y[:, :-1]
    y[0] = 0
    y[:, -1] *= 2
    return y


@case((_n(8, 9, 10),), (_n(2, 3, 4, dtype=np.float64),))
def moveaxis_channels(x):
    y = np.moveaxis(x, -1, 0)
    return (y - y.mean(axis=(1, 2), keepdims=True)).reshape(y.shape[0], -1)

