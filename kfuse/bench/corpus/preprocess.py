"""Data preprocessing: per-column standardisation and min-max scaling (leading-axis statistics),
clipping, NaN handling (``nan_to_num``, a NaN-masked column mean), uint8 image normalisation,
log transforms, uint8 NHWC images to float32 NCHW."""
from __future__ import annotations

from .base import Arg, Entry, body, cast
from .transformer import S


@body
def standardize_columns(xp, x):
    return (x - xp.mean(x, axis=0)) / xp.sqrt(xp.var(x, axis=0) + 1e-5)


@body
def minmax_columns(xp, x):
    lo = xp.min(x, axis=0)
    hi = xp.max(x, axis=0)
    return (x - lo) / (hi - lo + 1e-12)


@body
def clip_outliers(xp, x):
    return xp.clip(x, -2.5, 2.5)


@body
def nan_to_num_scale(xp, x, w):
    return xp.nan_to_num(x) * w


@body
def nan_masked_column_mean(xp, x):
    ok = ~xp.isnan(x)
    total = xp.sum(xp.where(ok, x, 0.0), axis=0)
    count = xp.sum(cast(xp, ok, "float32"), axis=0)
    return total / xp.maximum(count, 1.0)


@body
def normalize_uint8_image(xp, img, mean, std):          # img (N, H, W, 3) uint8
    return (cast(xp, img, "float32") * (1.0 / 255.0) - mean) / std


@body
def log1p_standardize_rows(xp, x):
    y = xp.log1p(x)
    mu = xp.mean(y, axis=1, keepdims=True)
    return (y - mu) / xp.sqrt(xp.mean((y - mu) * (y - mu), axis=1, keepdims=True) + 1e-6)


@body
def zscore_clip_columns(xp, x):
    z = (x - xp.mean(x, axis=0, keepdims=True)) / (xp.std(x, axis=0, keepdims=True) + 1e-6)
    return xp.clip(z, -3.0, 3.0)


@body
def nhwc_uint8_to_nchw(xp, img):
    return xp.transpose(cast(xp, img, "float32") * (1.0 / 255.0), (0, 3, 1, 2))


ENTRIES = [
    Entry("standardize_columns", "preprocess", "(x - x.mean(0)) / sqrt(x.var(0) + eps)", standardize_columns,
          (Arg("R,C", scale=2.0, shift=1.0),), S(dict(R=65536, C=1024), dict(R=8192, C=512), dict(R=37, C=6)),
          ("axis:leading", "dtype:f32"), flops=6, tol="f32-long"),
    Entry("minmax_columns", "preprocess", "min-max scaling per column", minmax_columns, (Arg("R,C"),),
          S(dict(R=65536, C=1024), dict(R=8192, C=512), dict(R=37, C=6)), ("axis:leading", "dtype:f32"), flops=4),
    Entry("clip_outliers", "preprocess", "np.clip to [-2.5, 2.5]", clip_outliers, (Arg("R,C"),),
          S(dict(R=8192, C=8192), dict(R=2048, C=1024), dict(R=6, C=40)), ("elementwise", "dtype:f32"), flops=2),
    Entry("nan_to_num_scale", "preprocess", "np.nan_to_num(x) * w", nan_to_num_scale, (Arg("R,C", gen="nan"), Arg("C")),
          S(dict(R=8192, C=8192), dict(R=2048, C=1024), dict(R=6, C=40)), ("elementwise", "nan", "dtype:f32"),
          flops=3),
    Entry("nan_masked_column_mean", "preprocess", "NaN-masked mean per column (where + count)", nan_masked_column_mean,
          (Arg("R,C", gen="nan"),), S(dict(R=65536, C=1024), dict(R=8192, C=512), dict(R=37, C=6)),
          ("axis:leading", "nan", "where", "dtype:f32"), flops=3, tol="f32-long"),
    Entry("normalize_uint8_image", "preprocess", "uint8 NHWC image -> (x/255 - mean) / std per channel", normalize_uint8_image,
          (Arg("N,H,W,3", "uint8", gen="uint8"), Arg("3", gen="uniform"), Arg("3", gen="uniform", shift=0.2)),
          S(dict(N=64, H=512, W=512), dict(N=8, H=256, W=256), dict(N=2, H=3, W=5)),
          ("broadcast", "rows:short", "dtype:mixed"), flops=3),
    Entry("log1p_standardize_rows", "preprocess", "log1p then standardise each row", log1p_standardize_rows,
          (Arg("R,C", gen="positive"),), S(dict(R=16384, C=4096), dict(R=2048, C=1024), dict(R=6, C=40)),
          ("axis:last", "dtype:f32"), flops=8),
    Entry("zscore_clip_columns", "preprocess", "z-score per column with np.std, then clip to 3 sigma",
          zscore_clip_columns, (Arg("R,C"),), S(dict(R=65536, C=1024), dict(R=8192, C=512), dict(R=37, C=6)),
          ("axis:leading", "dtype:f32"), flops=7, tol="f32-long"),
    Entry("nhwc_uint8_to_nchw", "preprocess", "uint8 NHWC image -> float32 NCHW in [0, 1]", nhwc_uint8_to_nchw,
          (Arg("N,H,W,3", "uint8", gen="uint8"),), S(dict(N=64, H=512, W=512), dict(N=8, H=256, W=256), dict(N=2, H=3, W=5)),
          ("layout:permuted", "rows:short", "dtype:mixed"), flops=1),
]
