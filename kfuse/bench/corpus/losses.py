"""Losses reduced over a batch: BCE with logits, focal loss, KL divergence between two
row-softmaxes, Huber, per-row MSE, cosine similarity of rows, hinge; a negative log-likelihood
through ``take_along_axis``, BCE of clipped probabilities, argmax accuracy."""
from __future__ import annotations

from .base import Arg, Entry, body, cast
from .transformer import S


def _log_softmax(xp, x):
    m = xp.max(x, axis=-1, keepdims=True)
    return x - m - xp.log(xp.sum(xp.exp(x - m), axis=-1, keepdims=True))


@body
def bce_with_logits(xp, x, y):
    loss = xp.maximum(x, 0.0) - x * y + xp.log1p(xp.exp(-xp.abs(x)))
    return xp.mean(loss, axis=(0, 1))


@body
def focal_loss(xp, x, y):
    p = 1.0 / (1.0 + xp.exp(-x))
    ce = xp.maximum(x, 0.0) - x * y + xp.log1p(xp.exp(-xp.abs(x)))
    pt = p * y + (1.0 - p) * (1.0 - y)
    w = 0.25 * y + 0.75 * (1.0 - y)
    return xp.mean(w * (1.0 - pt) * (1.0 - pt) * ce, axis=(0, 1))


@body
def kl_div_logits(xp, a, b):
    lp, lq = _log_softmax(xp, a), _log_softmax(xp, b)
    return xp.mean(xp.sum(xp.exp(lp) * (lp - lq), axis=-1), axis=0)


@body
def huber(xp, x, y):
    d = xp.abs(x - y)
    return xp.mean(xp.where(d < 1.0, 0.5 * d * d, d - 0.5), axis=(0, 1))


@body
def mse_rows(xp, x, y):
    d = x - y
    return xp.mean(d * d, axis=1)


@body
def cosine_similarity_rows(xp, a, b):
    num = xp.sum(a * b, axis=-1)
    return num / (xp.sqrt(xp.sum(a * a, axis=-1)) * xp.sqrt(xp.sum(b * b, axis=-1)) + 1e-8)


@body
def hinge_loss(xp, x, y):
    return xp.mean(xp.maximum(1.0 - x * (2.0 * y - 1.0), 0.0), axis=(0, 1))



@body
def nll_take_along_axis(xp, logits, labels):
    m = xp.max(logits, axis=1, keepdims=True)
    logp = logits - m - xp.log(xp.sum(xp.exp(logits - m), axis=1, keepdims=True))
    return -xp.mean(xp.take_along_axis(logp, labels[:, None], axis=1), axis=(0, 1))


@body
def bce_clipped_probs(xp, p, y):
    p = xp.clip(p, 1e-7, 1.0 - 1e-7)
    return -xp.mean(y * xp.log(p) + (1.0 - y) * xp.log(1.0 - p), axis=(0, 1))


@body
def accuracy_argmax(xp, logits, labels):
    return xp.mean(cast(xp, xp.argmax(logits, axis=1) == labels, "float32"), axis=0)


RC = S(dict(R=8192, C=4096), dict(R=2048, C=1024), dict(R=6, C=40))
CLS = S(dict(R=65536, C=1000), dict(R=8192, C=257), dict(R=6, C=10))    # classifier logits
ENTRIES = [
    Entry("bce_with_logits", "losses", "binary cross-entropy with logits, mean", bce_with_logits,
          (Arg("R,C", scale=3.0), Arg("R,C", gen="binary")), RC, ("axis:all", "dtype:f32"), flops=7,
          tol="f32-long"),
    Entry("focal_loss", "losses", "focal loss (gamma 2, alpha 0.25), mean", focal_loss,
          (Arg("R,C", scale=3.0), Arg("R,C", gen="binary")), RC, ("axis:all", "dtype:f32"), flops=18,
          tol="f32-long"),
    Entry("kl_div_logits", "losses", "KL(softmax(a) || softmax(b)) over rows, batch mean", kl_div_logits,
          (Arg("R,C"), Arg("R,C")), S(dict(R=8192, C=4096), dict(R=1024, C=1024), dict(R=6, C=40)),
          ("axis:last", "dtype:f32"), flops=12, tol="f32-long"),
    Entry("huber", "losses", "Huber loss (delta 1), mean", huber, (Arg("R,C"), Arg("R,C")), RC,
          ("axis:all", "where", "dtype:f32"), flops=5, tol="f32-long"),
    Entry("mse_rows", "losses", "per-row mean squared error", mse_rows, (Arg("R,C"), Arg("R,C")), RC,
          ("axis:last", "dtype:f32"), flops=3),
    Entry("cosine_similarity_rows", "losses", "cosine similarity of rows", cosine_similarity_rows, (Arg("R,C"), Arg("R,C")),
          S(dict(R=8192, C=4096), dict(R=2048, C=1024), dict(R=6, C=40)), ("axis:last", "dtype:f32"), flops=6),
    Entry("hinge_loss", "losses", "hinge loss with 0/1 targets, mean", hinge_loss,
          (Arg("R,C"), Arg("R,C", gen="binary")), RC, ("axis:all", "dtype:f32"), flops=5, tol="f32-long"),
    Entry("nll_take_along_axis", "losses", "log-softmax, the labels' entries by take_along_axis, mean NLL",
          nll_take_along_axis, (Arg("R,C", scale=3.0), Arg("R", "int64", gen="labels", high="C")), CLS,
          ("axis:last", "gather", "dtype:mixed"), flops=5, tol="f32-long"),
    Entry("bce_clipped_probs", "losses", "binary cross-entropy of clipped probabilities, mean", bce_clipped_probs,
          # (probabilities in [0, 1), as a sigmoid gives them: clipped past 1 - 1e-7, which float32
          # rounds to 1 - 1.19e-7, every peer's loss was 0.3% off the float64 reference)
          (Arg("R,C", gen="uniform"), Arg("R,C", gen="binary")), RC,
          ("axis:all", "clip", "dtype:f32"), flops=8, tol="f32-long"),
    Entry("accuracy_argmax", "losses", "accuracy: mean of argmax(logits, 1) == labels", accuracy_argmax,
          (Arg("R,C"), Arg("R", "int64", gen="labels", high="C")), CLS, ("axis:last", "argmax", "dtype:mixed"),
          flops=1, tol="f32-long"),
]
