"""Scientific kernels: finite-difference stencils through slices (2-D 5-point, 3-D 7-point, a
heat step), ``np.diff`` and ``np.cumsum`` along each axis of a 2-D array, softmax over axis 0,
row L2 normalisation, a trapezoid integral per row; finance (Black-Scholes call prices, Sharpe
ratios of log returns), row correlations, polar coordinates, a 3-tap FIR filter."""
from __future__ import annotations

import math

from .base import Arg, Entry, along, body
from .transformer import S


@body
def stencil_5pt(xp, u):
    return u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]


@body
def stencil_7pt_3d(xp, u):
    c = u[1:-1, 1:-1, 1:-1]
    return (u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1] + u[1:-1, 2:, 1:-1]
            + u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:] - 6.0 * c)


@body
def heat_step_interior(xp, u, k):
    lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
    return u[1:-1, 1:-1] + 0.1 * k[1:-1, 1:-1] * lap


diff_axis0 = along("diff_axis0", "diff", 0)
diff_axis1 = along("diff_axis1", "diff", 1)
cumsum_axis0 = along("cumsum_axis0", "cumsum", 0)
cumsum_axis1 = along("cumsum_axis1", "cumsum", 1)


@body
def softmax_axis0(xp, x):
    e = xp.exp(x - xp.max(x, axis=0, keepdims=True))
    return e / xp.sum(e, axis=0, keepdims=True)


@body
def l2_normalize_rows(xp, x):
    return x / xp.sqrt(xp.sum(x * x, axis=1, keepdims=True) + 1e-12)


@body
def trapezoid_rows(xp, y):
    return 0.5 * xp.sum(y[:, 1:] + y[:, :-1], axis=1) * 0.01


@body
def logsumexp_axis0(xp, x):
    m = xp.max(x, axis=0, keepdims=True)
    return xp.log(xp.sum(xp.exp(x - m), axis=0)) + m[0]


@body
def black_scholes_call(xp, s, k):
    t, r, sigma = 0.5, 0.01, 0.25
    d1 = (xp.log(s / k) + (r + 0.5 * sigma * sigma) * t) / (sigma * math.sqrt(t))
    d2 = d1 - sigma * math.sqrt(t)
    n1 = 1.0 / (1.0 + xp.exp(-1.702 * d1))          # the normal CDF, logistic approximation
    n2 = 1.0 / (1.0 + xp.exp(-1.702 * d2))
    return s * n1 - k * math.exp(-r * t) * n2


@body
def sharpe_ratio_columns(xp, prices):               # prices (T, assets)
    r = xp.diff(xp.log(prices), axis=0)
    m = xp.mean(r, axis=0)
    d = r - m
    return m / xp.sqrt(xp.sum(d * d, axis=0) / (r.shape[0] - 1)) * math.sqrt(252.0)


@body
def pearson_corr_rows(xp, a, b):
    ac = a - xp.mean(a, axis=1, keepdims=True)
    bc = b - xp.mean(b, axis=1, keepdims=True)
    return xp.sum(ac * bc, axis=1) / xp.sqrt(xp.sum(ac * ac, axis=1) * xp.sum(bc * bc, axis=1))


@body
def polar_coords(xp, x, y):
    return xp.hypot(x, y), xp.arctan2(y, x)


@body
def fir_3tap_rows(xp, x):
    return 0.25 * x[:, 2:] + 0.5 * x[:, 1:-1] + 0.25 * x[:, :-2]


SQ = S(dict(R=8192, C=8192), dict(R=2048, C=1024), dict(R=7, C=9))
ENTRIES = [
    Entry("stencil_5pt", "science", "2-D 5-point Laplacian through slices", stencil_5pt, (Arg("R,C"),), SQ,
          ("stencil", "view:slice", "dtype:f32"), flops=5),
    Entry("stencil_7pt_3d", "science", "3-D 7-point Laplacian through slices", stencil_7pt_3d, (Arg("X,Y,Z"),),
          S(dict(X=512, Y=512, Z=256), dict(X=128, Y=128, Z=128), dict(X=4, Y=5, Z=6)),
          ("stencil", "view:slice", "rank:3", "dtype:f32"), flops=7),
    Entry("heat_step_interior", "science", "explicit heat step u + 0.1*k*lap(u) on the interior", heat_step_interior,
          (Arg("R,C"), Arg("R,C", gen="uniform")),
          S(dict(R=4096, C=8192), dict(R=2048, C=1024), dict(R=7, C=9)), ("stencil", "view:slice", "dtype:f32"), flops=7),
    Entry("diff_axis0", "science", "np.diff along axis 0", diff_axis0, (Arg("R,C"),), SQ,
          ("axis:leading", "view:slice", "dtype:f32"), flops=1),
    Entry("diff_axis1", "science", "np.diff along axis 1", diff_axis1, (Arg("R,C"),), SQ,
          ("axis:last", "view:slice", "dtype:f32"), flops=1),
    Entry("cumsum_axis0", "science", "np.cumsum along axis 0", cumsum_axis0, (Arg("R,C", gen="uniform"),), SQ,
          ("scan", "axis:leading", "dtype:f32"), flops=1, tol="f32-long"),
    Entry("cumsum_axis1", "science", "np.cumsum along axis 1", cumsum_axis1, (Arg("R,C", gen="uniform"),), SQ,
          ("scan", "axis:last", "dtype:f32"), flops=1, tol="f32-long"),
    Entry("softmax_axis0", "science", "softmax over axis 0", softmax_axis0, (Arg("R,C"),),
          S(dict(R=4096, C=8192), dict(R=2048, C=1024), dict(R=7, C=9)), ("axis:leading", "dtype:f32"), flops=5),
    Entry("l2_normalize_rows", "science", "x / ||x||_2 per row", l2_normalize_rows, (Arg("R,C"),), SQ,
          ("axis:last", "dtype:f32"), flops=3),
    Entry("trapezoid_rows", "science", "trapezoid integral per row through two slices", trapezoid_rows, (Arg("R,C"),), SQ,
          ("axis:last", "view:slice", "dtype:f32"), flops=2, tol="f32-long"),
    Entry("logsumexp_axis0", "science", "logsumexp over axis 0", logsumexp_axis0, (Arg("R,C"),), SQ,
          ("axis:leading", "dtype:f32"), flops=4),
    Entry("black_scholes_call", "science", "Black-Scholes call prices (logistic normal CDF)", black_scholes_call,
          (Arg("n", gen="uniform", scale=60.0, shift=20.0), Arg("n", gen="uniform", scale=20.0, shift=50.0)),
          S(dict(n=1 << 24), dict(n=1 << 20), dict(n=1000)), ("elementwise", "dtype:f32"), flops=30),
    Entry("sharpe_ratio_columns", "science", "annualised Sharpe ratio of log returns per column", sharpe_ratio_columns,
          (Arg("R,C", gen="uniform", shift=1.0),), SQ, ("axis:leading", "view:slice", "dtype:f32"), flops=6,
          tol="f32-long"),
    Entry("pearson_corr_rows", "science", "Pearson correlation of two matrices' rows", pearson_corr_rows,
          (Arg("R,C"), Arg("R,C")), SQ, ("axis:last", "dtype:f32"), flops=9, tol="f32-long"),
    Entry("polar_coords", "science", "np.hypot and np.arctan2 of two arrays", polar_coords, (Arg("R,C"), Arg("R,C")),
          SQ, ("elementwise", "multi-output", "dtype:f32"), flops=20),
    Entry("fir_3tap_rows", "science", "a 3-tap FIR filter along rows through slices", fir_3tap_rows, (Arg("R,C"),),
          SQ, ("stencil", "view:slice", "dtype:f32"), flops=5),
]
