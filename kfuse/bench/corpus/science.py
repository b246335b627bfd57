"""Scientific kernels: finite-difference stencils through slices (2-D 5-point, 3-D 7-point, a
heat step), ``np.diff`` and ``np.cumsum`` along each axis of a 2-D array, softmax over axis 0,
row L2 normalisation, a trapezoid integral per row."""
from __future__ import annotations

from .base import Arg, Entry
from .transformer import S


def _lap2(xp):
    def stencil_5pt(u):
        return u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
    return stencil_5pt


def _lap3(xp):
    def stencil_7pt_3d(u):
        c = u[1:-1, 1:-1, 1:-1]
        return (u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1] + u[1:-1, 2:, 1:-1]
                + u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:] - 6.0 * c)
    return stencil_7pt_3d


def _heat(xp):
    def heat_step_interior(u, k):
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
        return u[1:-1, 1:-1] + 0.1 * k[1:-1, 1:-1] * lap
    return heat_step_interior


def _diff0(xp):
    def diff_axis0(x):
        return xp.diff(x, axis=0)
    return diff_axis0


def _diff1(xp):
    def diff_axis1(x):
        return xp.diff(x, axis=1)
    return diff_axis1


def _cumsum0(xp):
    def cumsum_axis0(x):
        return xp.cumsum(x, axis=0)
    return cumsum_axis0


def _cumsum1(xp):
    def cumsum_axis1(x):
        return xp.cumsum(x, axis=1)
    return cumsum_axis1


def _softmax0(xp):
    def softmax_axis0(x):
        e = xp.exp(x - xp.max(x, axis=0, keepdims=True))
        return e / xp.sum(e, axis=0, keepdims=True)
    return softmax_axis0


def _l2rows(xp):
    def l2_normalize_rows(x):
        return x / xp.sqrt(xp.sum(x * x, axis=1, keepdims=True) + 1e-12)
    return l2_normalize_rows


def _trapz(xp):
    def trapezoid_rows(y):
        return 0.5 * xp.sum(y[:, 1:] + y[:, :-1], axis=1) * 0.01
    return trapezoid_rows


def _logsumexp0(xp):
    def logsumexp_axis0(x):
        m = xp.max(x, axis=0, keepdims=True)
        return xp.log(xp.sum(xp.exp(x - m), axis=0)) + m[0]
    return logsumexp_axis0


SQ = S(dict(R=8192, C=8192), dict(R=2048, C=1024), dict(R=7, C=9))
ENTRIES = [
    Entry("stencil_5pt", "science", "2-D 5-point Laplacian through slices", _lap2, (Arg("R,C"),), SQ,
          ("stencil", "view:slice", "dtype:f32"), flops=5),
    Entry("stencil_7pt_3d", "science", "3-D 7-point Laplacian through slices", _lap3, (Arg("X,Y,Z"),),
          S(dict(X=512, Y=512, Z=256), dict(X=128, Y=128, Z=128), dict(X=4, Y=5, Z=6)),
          ("stencil", "view:slice", "rank:3", "dtype:f32"), flops=7),
    Entry("heat_step_interior", "science", "explicit heat step u + 0.1*k*lap(u) on the interior", _heat,
          (Arg("R,C"), Arg("R,C", gen="uniform")),
          S(dict(R=4096, C=8192), dict(R=2048, C=1024), dict(R=7, C=9)), ("stencil", "view:slice", "dtype:f32"), flops=7),
    Entry("diff_axis0", "science", "np.diff along axis 0", _diff0, (Arg("R,C"),), SQ,
          ("axis:leading", "view:slice", "dtype:f32"), flops=1),
    Entry("diff_axis1", "science", "np.diff along axis 1", _diff1, (Arg("R,C"),), SQ,
          ("axis:last", "view:slice", "dtype:f32"), flops=1),
    Entry("cumsum_axis0", "science", "np.cumsum along axis 0", _cumsum0, (Arg("R,C", gen="uniform"),), SQ,
          ("scan", "axis:leading", "dtype:f32"), flops=1, tol="f32-long"),
    Entry("cumsum_axis1", "science", "np.cumsum along axis 1", _cumsum1, (Arg("R,C", gen="uniform"),), SQ,
          ("scan", "axis:last", "dtype:f32"), flops=1, tol="f32-long"),
    Entry("softmax_axis0", "science", "softmax over axis 0", _softmax0, (Arg("R,C"),),
          S(dict(R=4096, C=8192), dict(R=2048, C=1024), dict(R=7, C=9)), ("axis:leading", "dtype:f32"), flops=5),
    Entry("l2_normalize_rows", "science", "x / ||x||_2 per row", _l2rows, (Arg("R,C"),), SQ,
          ("axis:last", "dtype:f32"), flops=3),
    Entry("trapezoid_rows", "science", "trapezoid integral per row through two slices", _trapz, (Arg("R,C"),), SQ,
          ("axis:last", "view:slice", "dtype:f32"), flops=2, tol="f32-long"),
    Entry("logsumexp_axis0", "science", "logsumexp over axis 0", _logsumexp0, (Arg("R,C"),), SQ,
          ("axis:leading", "dtype:f32"), flops=4),
]
