"""Transformer-block workloads: norms (RMSNorm, LayerNorm, residual + norm in mixed precision),
gated activations on two halves of one array, rotary embeddings with broadcast cos/sin, masked
softmax, cross-entropy over vocabulary-wide rows with integer labels, logit soft-capping, mish,
float16 mixed with Python scalars and float32, a linear layer with its bias and ReLU."""
from __future__ import annotations

import math

from .base import Arg, Entry, body, cast

EPS = 1e-5
C_GELU = math.sqrt(2.0 / math.pi)


def S(gpu, cpu, tiny):
    return {"gpu": gpu, "cpu": cpu, "tiny": tiny}


def gelu(xp, y):
    return 0.5 * y * (1.0 + xp.tanh(C_GELU * (y + 0.044715 * (y * y * y))))


def silu(xp, y):
    return y / (1.0 + xp.exp(-y))


def rotate_half(xp, x):
    h = x.shape[-1] // 2
    return xp.concatenate((-x[..., h:], x[..., :h]), axis=-1)


@body
def rmsnorm(xp, x, w):
    return x / xp.sqrt(xp.mean(x * x, axis=-1, keepdims=True) + EPS) * w


@body
def rmsnorm_f16_rows_f32_weight(xp, x, w):
    xf = cast(xp, x, "float32")
    y = xf / xp.sqrt(xp.mean(xf * xf, axis=-1, keepdims=True) + EPS) * w
    return cast(xp, y, "float16")


@body
def rmsnorm_bf16(xp, x, w):
    xf = cast(xp, x, "float32")
    y = xf / xp.sqrt(xp.mean(xf * xf, axis=-1, keepdims=True) + EPS)
    return cast(xp, y, "bfloat16") * w


@body
def layernorm(xp, x, g, b):
    mu = xp.mean(x, axis=-1, keepdims=True)
    d = x - mu
    var = xp.mean(d * d, axis=-1, keepdims=True)
    return d / xp.sqrt(var + EPS) * g + b


@body
def residual_layernorm_f16(xp, x, r, g, b):
    h = x + r                                           # f16 residual stream
    hf = cast(xp, h, "float32")
    mu = xp.mean(hf, axis=-1, keepdims=True)
    d = hf - mu
    var = xp.mean(d * d, axis=-1, keepdims=True)
    y = d / xp.sqrt(var + EPS) * g + b                  # f32 weights
    return cast(xp, y, "float16"), h                    # f16 out, and the new residual


@body
def layernorm_short_rows(xp, x, g, b):
    mu = xp.mean(x, axis=-1, keepdims=True)
    var = xp.var(x, axis=-1, keepdims=True)
    return (x - mu) / xp.sqrt(var + EPS) * g + b


@body
def gelu_tanh(xp, x):
    return gelu(xp, x)


@body
def swiglu_halves(xp, x):
    n = x.shape[-1] // 2
    return silu(xp, x[:, :n]) * x[:, n:]


@body
def geglu_f16_halves(xp, x):
    n = x.shape[-1] // 2
    return gelu(xp, x[:, :n]) * x[:, n:]


@body
def swiglu_bf16(xp, a, b):
    return silu(xp, a) * b


@body
def rotary_3d(xp, x, cos, sin):                         # x (B, S, D), cos/sin (S, D)
    return x * cos + rotate_half(xp, x) * sin


@body
def rotary_4d(xp, x, cos, sin):                         # x (B, S, H, D), cos/sin (S, D)
    c = cos.reshape(cos.shape[0], 1, cos.shape[1])
    s = sin.reshape(sin.shape[0], 1, sin.shape[1])
    return x * c + rotate_half(xp, x) * s


@body
def softmax_additive_mask(xp, x, mask):                 # x (B, H, S, S), mask (S, S)
    y = x * 0.125 + mask
    e = xp.exp(y - xp.max(y, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True)


@body
def softmax_causal_where(xp, x, keep):                  # keep: (S, S) lower-triangular bool
    y = xp.where(keep, x * 0.125, -xp.inf)
    e = xp.exp(y - xp.max(y, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True)


@body
def cross_entropy_mean(xp, logits, labels):
    m = xp.max(logits, axis=1, keepdims=True)
    lse = xp.log(xp.sum(xp.exp(logits - m), axis=1)) + m[:, 0]
    picked = xp.take_along_axis(logits, labels[:, None], axis=1)[:, 0]
    return xp.mean(lse - picked, axis=0)


@body
def cross_entropy_rows(xp, logits, labels):
    m = xp.max(logits, axis=1, keepdims=True)
    lse = xp.log(xp.sum(xp.exp(logits - m), axis=1)) + m[:, 0]
    return lse - xp.take_along_axis(logits, labels[:, None], axis=1)[:, 0]


@body
def cross_entropy_label_smoothing(xp, logits, labels):
    m = xp.max(logits, axis=1, keepdims=True)
    lse = xp.log(xp.sum(xp.exp(logits - m), axis=1, keepdims=True)) + m
    logp = logits - lse
    nll = -xp.take_along_axis(logp, labels[:, None], axis=1)[:, 0]
    smooth = -xp.mean(logp, axis=1)
    return xp.mean(0.9 * nll + 0.1 * smooth, axis=0)


@body
def logit_softcap(xp, s):
    return 30.0 * xp.tanh(s / 30.0)


@body
def softcap_softmax(xp, s):
    y = 50.0 * xp.tanh(s / 50.0)
    e = xp.exp(y - xp.max(y, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True)


@body
def qk_rmsnorm_heads(xp, q, w):                         # q (B, S, H, D=64): short rows
    return q / xp.sqrt(xp.mean(q * q, axis=-1, keepdims=True) + EPS) * w


@body
def bias_dropout_residual(xp, x, b, keep, r):
    return xp.where(keep, (x + b) * (1.0 / 0.9), 0.0) + r


@body
def logsumexp_long_rows(xp, x):
    m = xp.max(x, axis=-1, keepdims=True)
    return xp.log(xp.sum(xp.exp(x - m), axis=-1)) + m[:, 0]


@body
def mish(xp, x):
    return x * xp.tanh(xp.log1p(xp.exp(-xp.abs(x))) + xp.maximum(x, 0.0))


@body
def f16_scale_shift_mixed(xp, x16, w):
    a = x16 * 0.5 + 1.0             # float16: Python scalars are weak
    return cast(xp, a * w, "float16")


@body
def linear_bias_relu(xp, x, w, b):
    return xp.maximum(x @ w + b, 0.0)


RC = S(dict(R=16384, C=4096), dict(R=2048, C=1024), dict(R=6, C=40))
ENTRIES = [
    Entry("rmsnorm", "transformer", "RMSNorm over rows, f32", rmsnorm,
          (Arg("R,C"), Arg("C")), RC, ("axis:last", "dtype:f32"), flops=4),
    Entry("rmsnorm_f16_f32w", "transformer", "RMSNorm, f16 rows, f32 weight, f16 out", rmsnorm_f16_rows_f32_weight,
          (Arg("R,C", "float16"), Arg("C")), RC, ("axis:last", "dtype:f16", "dtype:mixed"), flops=5, tol="f16"),
    Entry("rmsnorm_bf16", "transformer", "RMSNorm, bf16 rows and weight (torch tensors)", rmsnorm_bf16,
          (Arg("R,C", "bfloat16"), Arg("C", "bfloat16")), RC, ("axis:last", "dtype:bf16"), flops=5,
          tol="bf16", only="gpu-torch"),
    Entry("layernorm", "transformer", "LayerNorm over rows with gamma/beta, f32", layernorm,
          (Arg("R,C", scale=2.0, shift=0.5), Arg("C"), Arg("C")),
          S(dict(R=8192, C=4096), dict(R=2048, C=1024), dict(R=6, C=40)), ("axis:last", "dtype:f32"), flops=8),
    Entry("residual_layernorm_f16", "transformer",
          "residual add + LayerNorm: f16 rows, f32 weights, f16 out (and the f16 residual)",
          residual_layernorm_f16, (Arg("R,C", "float16"), Arg("R,C", "float16"), Arg("C"), Arg("C")),
          S(dict(R=16384, C=4096), dict(R=1024, C=1024), dict(R=6, C=40)),
          ("axis:last", "dtype:f16", "dtype:mixed"), flops=10, tol="f16"),
    Entry("layernorm_short_rows", "transformer", "LayerNorm of 48-wide rows (np.var)", layernorm_short_rows,
          (Arg("R,C"), Arg("C"), Arg("C")), S(dict(R=1 << 20, C=48), dict(R=1 << 16, C=48), dict(R=7, C=48)),
          ("axis:last", "rows:short", "size:odd", "dtype:f32"), flops=8),
    Entry("gelu_tanh", "transformer", "GELU, tanh form, f32", gelu_tanh, (Arg("R,C"),),
          S(dict(R=8192, C=8192), dict(R=2048, C=1024), dict(R=6, C=40)), ("elementwise", "dtype:f32"), flops=9),
    Entry("swiglu_halves", "transformer", "SwiGLU: silu(x[:, :n]) * x[:, n:], f32", swiglu_halves,
          (Arg("R,2*C"),), S(dict(R=8192, C=4096), dict(R=1024, C=1024), dict(R=6, C=20)),
          ("elementwise", "view:slice", "dtype:f32"), flops=5),
    Entry("geglu_f16_halves", "transformer", "GEGLU: gelu(x[:, :n]) * x[:, n:], f16", geglu_f16_halves,
          (Arg("R,2*C", "float16"),), S(dict(R=16384, C=4096), dict(R=1024, C=1024), dict(R=6, C=20)),
          ("elementwise", "view:slice", "dtype:f16"), flops=6, tol="f16"),
    Entry("swiglu_bf16", "transformer", "silu(a) * b, bf16 (torch tensors)", swiglu_bf16,
          (Arg("R,C", "bfloat16"), Arg("R,C", "bfloat16")), RC, ("elementwise", "dtype:bf16"), flops=5,
          tol="bf16", only="gpu-torch"),
    Entry("rotary_3d", "transformer", "rotary embedding, x (B,S,D), cos/sin (S,D) broadcast over B", rotary_3d,
          (Arg("B,T,D"), Arg("T,D"), Arg("T,D")),
          S(dict(B=32, T=4096, D=128), dict(B=8, T=512, D=128), dict(B=2, T=5, D=8)),
          ("broadcast", "view:slice", "dtype:f32"), flops=3),
    Entry("rotary_4d", "transformer", "rotary embedding, x (B,S,H,D), cos/sin (S,1,D) over B and H", rotary_4d,
          (Arg("B,T,H,D"), Arg("T,D"), Arg("T,D")),
          S(dict(B=8, T=2048, H=16, D=128), dict(B=4, T=256, H=8, D=64), dict(B=2, T=3, H=2, D=8)),
          ("broadcast", "view:slice", "rank:4", "dtype:f32"), flops=3),
    Entry("softmax_additive_mask", "transformer", "attention softmax with an additive (S,S) mask", softmax_additive_mask,
          (Arg("B,H,T,T"), Arg("T,T", scale=0.5)),
          S(dict(B=4, H=16, T=1024), dict(B=1, H=4, T=512), dict(B=1, H=2, T=5)),
          ("axis:last", "broadcast", "rank:4", "dtype:f32"), flops=7),
    Entry("softmax_causal_where", "transformer", "attention softmax with a causal np.where mask", softmax_causal_where,
          (Arg("B,H,T,T"), Arg("T,T", "bool", gen="mask")),
          S(dict(B=4, H=16, T=1024), dict(B=1, H=4, T=512), dict(B=1, H=2, T=5)),
          ("axis:last", "where", "rank:4", "dtype:f32", "dtype:mixed"), flops=7),
    Entry("cross_entropy_32000", "transformer", "cross-entropy, 32000-wide rows, int64 labels, mean", cross_entropy_mean,
          (Arg("R,V"), Arg("R", "int64", gen="labels", high="V")),
          S(dict(R=8192, V=32000), dict(R=128, V=32000), dict(R=4, V=37)),
          ("axis:last", "rows:long", "gather", "dtype:f32", "dtype:mixed"), flops=4, tol="f32-long"),
    Entry("cross_entropy_rows_50257", "transformer", "per-row cross-entropy, 50257-wide rows (prime-ish)",
          cross_entropy_rows, (Arg("R,V"), Arg("R", "int64", gen="labels", high="V")),
          S(dict(R=1024, V=50257), dict(R=64, V=50257), dict(R=3, V=41)),
          ("axis:last", "rows:long", "size:odd", "gather", "dtype:f32"), flops=4, tol="f32-long"),
    Entry("cross_entropy_label_smoothing", "transformer", "cross-entropy with label smoothing 0.1",
          cross_entropy_label_smoothing, (Arg("R,V"), Arg("R", "int64", gen="labels", high="V")),
          S(dict(R=4096, V=32000), dict(R=128, V=32000), dict(R=4, V=37)),
          ("axis:last", "rows:long", "gather", "dtype:f32"), flops=6, tol="f32-long"),
    Entry("logit_softcap", "transformer", "logit soft-capping 30*tanh(s/30)", logit_softcap, (Arg("R,C", scale=20.0),),
          S(dict(R=8192, C=8192), dict(R=2048, C=1024), dict(R=6, C=40)), ("elementwise", "dtype:f32"), flops=3),
    Entry("softcap_softmax", "transformer", "soft-capped logits then softmax over rows", softcap_softmax,
          (Arg("R,C", scale=20.0),), S(dict(R=16384, C=2048), dict(R=2048, C=1024), dict(R=6, C=40)),
          ("axis:last", "dtype:f32"), flops=8),
    Entry("qk_rmsnorm_heads", "transformer", "RMSNorm over a 64-wide head dim of (B,S,H,D)", qk_rmsnorm_heads,
          (Arg("B,T,H,D"), Arg("D")), S(dict(B=8, T=2048, H=32, D=64), dict(B=4, T=256, H=8, D=64),
                                         dict(B=1, T=3, H=2, D=64)),
          ("axis:last", "rows:short", "rank:4", "dtype:f32"), flops=4),
    Entry("bias_dropout_residual", "transformer", "where(keep, (x + b)/0.9, 0) + residual", bias_dropout_residual,
          (Arg("R,C"), Arg("C"), Arg("R,C", "bool", gen="bool"), Arg("R,C")),
          S(dict(R=8192, C=4096), dict(R=1024, C=1024), dict(R=6, C=40)),
          ("elementwise", "where", "dtype:mixed"), flops=3),
    Entry("logsumexp_long_rows", "transformer", "logsumexp over 131072-wide rows", logsumexp_long_rows,
          (Arg("R,C"),), S(dict(R=512, C=131072), dict(R=32, C=65536), dict(R=2, C=33000)),
          ("axis:last", "rows:long", "dtype:f32"), flops=4, tol="f32-long"),
    Entry("mish", "transformer", "mish: x * tanh(softplus(x)), softplus by log1p(exp(-|x|))", mish, (Arg("R,C", scale=3.0),),
          RC, ("elementwise", "dtype:f32"), flops=8),
    Entry("f16_scale_shift_mixed", "transformer", "float16 x * 0.5 + 1 (stays f16) times an f32 row, cast to f16",
          f16_scale_shift_mixed, (Arg("R,C", "float16"), Arg("C")), RC, ("broadcast", "dtype:mixed", "dtype:f16"),
          flops=3, tol="f16"),
    Entry("linear_bias_relu", "transformer", "relu(x @ w + b): a product and its epilogue", linear_bias_relu,
          (Arg("R,K"), Arg("K,N", scale=0.05), Arg("N")),
          S(dict(R=16384, K=1024, N=1024), dict(R=1024, K=512, N=512), dict(R=6, K=8, N=5)),
          ("matmul", "epilogue", "dtype:f32"), flops=2048, tol="f32-long"),
]
