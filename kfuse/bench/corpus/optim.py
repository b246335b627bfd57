"""Optimizer steps on flat and 2-D parameters: SGD with momentum, Adam, AdamW (also with float16
gradients), Lion, Adafactor's factored row/column second moments, global-norm gradient clipping,
an EMA of the weights, RMSprop, and a launch-bound tiny Adam step."""
from __future__ import annotations

from .base import Arg, Entry, body, cast
from .transformer import S

LR, B1, B2, EPS, WD, T = 1e-3, 0.9, 0.999, 1e-8, 0.01, 10
BC1, BC2 = 1.0 - B1 ** T, 1.0 - B2 ** T


@body
def sgd_momentum(xp, p, g, buf):
    buf = 0.9 * buf + g
    return p - 0.01 * buf, buf


@body
def adamw(xp, p, g, m, v):
    m = B1 * m + (1.0 - B1) * g
    v = B2 * v + (1.0 - B2) * (g * g)
    p = p * (1.0 - LR * WD) - LR * (m / BC1) / (xp.sqrt(v / BC2) + EPS)
    return p, m, v


@body
def adam_f16_grad_f32_master(xp, p, g16, m, v):
    g = cast(xp, g16, "float32")
    m = B1 * m + (1.0 - B1) * g
    v = B2 * v + (1.0 - B2) * (g * g)
    p = p - LR * (m / BC1) / (xp.sqrt(v / BC2) + EPS)
    return p, m, v, cast(xp, p, "float16")


@body
def lion(xp, p, g, m):
    u = xp.sign(0.9 * m + 0.1 * g)
    p = p - 1e-4 * (u + WD * p)
    return p, 0.99 * m + 0.01 * g


@body
def adafactor_factored(xp, p, g, vr, vc):               # p, g (R, C); vr (R,), vc (C,)
    g2 = g * g + 1e-30
    vr = 0.8 * vr + 0.2 * xp.mean(g2, axis=1)
    vc = 0.8 * vc + 0.2 * xp.mean(g2, axis=0)
    vhat = vr[:, None] * vc[None, :] / xp.mean(vr, axis=0)
    u = g / xp.sqrt(vhat)
    return p - 1e-2 * u, vr, vc


@body
def clip_grad_global_norm(xp, g):
    norm = xp.sqrt(xp.sum(g * g, axis=0))
    return g * xp.minimum(1.0 / (norm + 1e-6), 1.0)


@body
def ema_weights(xp, ema, p):
    return 0.999 * ema + 0.001 * p


@body
def rmsprop(xp, w, g, sq):
    sq = 0.9 * sq + 0.1 * (g * g)
    return w - 0.01 * g / (xp.sqrt(sq) + 1e-8), sq


N = S(dict(n=1 << 24), dict(n=1 << 20), dict(n=1000))
ENTRIES = [
    Entry("sgd_momentum", "optim", "SGD with momentum 0.9 -> (param, buf)", sgd_momentum,
          (Arg("n"), Arg("n", scale=1e-2), Arg("n", scale=1e-2)), N, ("elementwise", "multi-output", "dtype:f32"),
          flops=3),
    Entry("adamw", "optim", "AdamW step -> (param, m, v)", adamw,
          (Arg("n"), Arg("n", scale=1e-2), Arg("n", scale=1e-3), Arg("n", gen="positive", scale=1e-4)), N,
          ("elementwise", "multi-output", "dtype:f32"), flops=15),
    Entry("adam_f16_grad", "optim", "Adam with f16 gradients, f32 master params, f16 param copy out",
          adam_f16_grad_f32_master,
          (Arg("n"), Arg("n", "float16", scale=1e-2), Arg("n", scale=1e-3), Arg("n", gen="positive", scale=1e-4)),
          N, ("elementwise", "multi-output", "dtype:mixed", "dtype:f16"), flops=15, tol="f16"),
    Entry("lion", "optim", "Lion step -> (param, m)", lion,
          (Arg("n"), Arg("n", scale=1e-2), Arg("n", scale=1e-2)), N, ("elementwise", "multi-output", "dtype:f32"),
          flops=8),
    Entry("adafactor_factored", "optim", "Adafactor: factored row/column second moments of a 2-D param",
          adafactor_factored, (Arg("R,C"), Arg("R,C", scale=1e-2), Arg("R", gen="positive", scale=1e-4),
                       Arg("C", gen="positive", scale=1e-4)),
          S(dict(R=8192, C=4096), dict(R=1024, C=1024), dict(R=6, C=40)),
          ("axis:last", "axis:leading", "multi-output", "dtype:f32"), flops=8, tol="f32-long"),
    Entry("clip_grad_global_norm", "optim", "clip a flat gradient to global norm 1", clip_grad_global_norm,
          (Arg("n", scale=1e-3),), N, ("axis:all", "dtype:f32"), flops=4, tol="f32-long"),
    Entry("ema_weights", "optim", "EMA of the weights", ema_weights, (Arg("n"), Arg("n")), N,
          ("elementwise", "dtype:f32"), flops=3),
    Entry("adamw_tiny", "optim", "AdamW on 1000 params (launch-bound)", adamw,
          (Arg("n"), Arg("n", scale=1e-2), Arg("n", scale=1e-3), Arg("n", gen="positive", scale=1e-4)),
          S(dict(n=1000), dict(n=1000), dict(n=37)), ("elementwise", "size:tiny", "dtype:f32"), flops=15,
          bound="launch"),
    Entry("rmsprop", "optim", "RMSprop step -> (param, square average)", rmsprop,
          (Arg("n"), Arg("n", scale=1e-2), Arg("n", gen="positive", scale=1e-4)), N,
          ("elementwise", "multi-output", "dtype:f32"), flops=7),
]
