"""CNN / diffusion workloads on NCHW and NHWC activations: BatchNorm (training statistics over
several axes, inference affine), GroupNorm via reshape, InstanceNorm, pixel norm over the channel
axis, SiLU, per-channel affine and bias, global average pooling, layer scale, gamma correction."""
from __future__ import annotations

from .base import Arg, Entry, body, cast
from .transformer import S, silu

EPS = 1e-5


@body
def batchnorm_nchw_train(xp, x, g, b):
    mu = xp.mean(x, axis=(0, 2, 3), keepdims=True)
    var = xp.var(x, axis=(0, 2, 3), keepdims=True)
    return (x - mu) / xp.sqrt(var + EPS) * g.reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1)


@body
def batchnorm_nhwc_train(xp, x, g, b):
    mu = xp.mean(x, axis=(0, 1, 2), keepdims=True)
    var = xp.var(x, axis=(0, 1, 2), keepdims=True)
    return (x - mu) / xp.sqrt(var + EPS) * g + b


@body
def batchnorm_nchw_inference(xp, x, rm, rv, g, b):
    scale = g / xp.sqrt(rv + EPS)
    return (x - rm.reshape(1, -1, 1, 1)) * scale.reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1)


def _groupnorm(xp, groups=32):
    def groupnorm_nchw(x, g, b):
        n, c, h, w = x.shape
        y = x.reshape(n, groups, (c // groups) * h * w)
        mu = xp.mean(y, axis=-1, keepdims=True)
        var = xp.var(y, axis=-1, keepdims=True)
        y = ((y - mu) / xp.sqrt(var + EPS)).reshape(n, c, h, w)
        return y * g.reshape(1, c, 1, 1) + b.reshape(1, c, 1, 1)
    return groupnorm_nchw


def _groupnorm_silu_f16(xp, groups=32):
    def groupnorm_silu_f16(x, g, b):
        n, c, h, w = x.shape
        y = cast(xp, x, "float32").reshape(n, groups, (c // groups) * h * w)
        mu = xp.mean(y, axis=-1, keepdims=True)
        var = xp.var(y, axis=-1, keepdims=True)
        y = ((y - mu) / xp.sqrt(var + EPS)).reshape(n, c, h, w)
        y = y * g.reshape(1, c, 1, 1) + b.reshape(1, c, 1, 1)
        return cast(xp, silu(xp, y), "float16")
    return groupnorm_silu_f16


@body
def instancenorm_nchw(xp, x):
    mu = xp.mean(x, axis=(2, 3), keepdims=True)
    var = xp.var(x, axis=(2, 3), keepdims=True)
    return (x - mu) / xp.sqrt(var + EPS)


@body
def silu_nchw(xp, x):
    return silu(xp, x)


@body
def channel_affine_relu_nhwc(xp, x, s, t):
    return xp.maximum(x * s + t, 0.0)


@body
def bias_relu_nchw(xp, x, b):
    return xp.maximum(x + b.reshape(1, -1, 1, 1), 0.0)


@body
def pixel_norm_channels(xp, x):
    return x / xp.sqrt(xp.mean(x * x, axis=1, keepdims=True) + 1e-8)


@body
def global_avg_pool_nchw(xp, x):
    return xp.mean(x, axis=(2, 3))


@body
def layer_scale_residual(xp, x, y, gamma):
    return x + gamma.reshape(1, -1, 1, 1) * y


@body
def adaln_modulate(xp, x, shift, scale):                 # DiT: x (N, T, C), shift/scale (N, C)
    mu = xp.mean(x, axis=-1, keepdims=True)
    var = xp.var(x, axis=-1, keepdims=True)
    y = (x - mu) / xp.sqrt(var + 1e-6)
    return y * (1.0 + scale.reshape(scale.shape[0], 1, -1)) + shift.reshape(shift.shape[0], 1, -1)


@body
def gamma_correct_clip(xp, img):
    return xp.power(xp.clip(img, 0.0, 1.0), 1.0 / 2.2)


NCHW = S(dict(N=32, C=256, H=64, W=64), dict(N=8, C=64, H=32, W=32), dict(N=2, C=32, H=3, W=5))
NHWC = S(dict(N=32, H=64, W=64, C=256), dict(N=8, H=32, W=32, C=64), dict(N=2, H=3, W=5, C=6))
ENTRIES = [
    Entry("batchnorm_nchw_train", "vision", "BatchNorm training statistics over (N,H,W) of NCHW", batchnorm_nchw_train,
          (Arg("N,C,H,W"), Arg("C"), Arg("C")), NCHW, ("axis:several", "axis:leading", "rank:4", "dtype:f32"),
          flops=8, tol="f32-long"),
    Entry("batchnorm_nhwc_train", "vision", "BatchNorm training statistics over (N,H,W) of NHWC", batchnorm_nhwc_train,
          (Arg("N,H,W,C"), Arg("C"), Arg("C")), NHWC, ("axis:several", "axis:leading", "rank:4", "dtype:f32"),
          flops=8, tol="f32-long"),
    Entry("batchnorm_nchw_inference", "vision", "BatchNorm inference: per-channel affine of NCHW", batchnorm_nchw_inference,
          (Arg("N,C,H,W"), Arg("C"), Arg("C", gen="positive"), Arg("C"), Arg("C")), NCHW,
          ("broadcast", "axis:middle", "rank:4", "dtype:f32"), flops=2),
    Entry("groupnorm_nchw", "vision", "GroupNorm, 32 groups, NCHW via reshape, per-channel affine", _groupnorm,
          (Arg("N,C,H,W"), Arg("C"), Arg("C")), NCHW, ("reshape", "axis:last", "rank:4", "dtype:f32"),
          flops=8, tol="f32-long"),
    Entry("groupnorm_silu_f16", "vision", "GroupNorm + SiLU, f16 activations, f32 weights (diffusion)",
          _groupnorm_silu_f16, (Arg("N,C,H,W", "float16"), Arg("C"), Arg("C")),
          S(dict(N=16, C=512, H=64, W=64), dict(N=8, C=128, H=32, W=32), dict(N=2, C=64, H=3, W=3)),
          ("reshape", "axis:last", "rank:4", "dtype:f16", "dtype:mixed"), flops=12, tol="f16"),
    Entry("instancenorm_nchw", "vision", "InstanceNorm: statistics over (H,W) per (N,C)", instancenorm_nchw,
          (Arg("N,C,H,W"),), NCHW, ("axis:several", "axis:last", "rank:4", "dtype:f32"), flops=6),
    Entry("silu_nchw", "vision", "SiLU of an NCHW activation", silu_nchw, (Arg("N,C,H,W"),), NCHW,
          ("elementwise", "rank:4", "dtype:f32"), flops=4),
    Entry("channel_affine_relu_nhwc", "vision", "per-channel scale/shift + ReLU, NHWC", channel_affine_relu_nhwc,
          (Arg("N,H,W,C"), Arg("C"), Arg("C")), NHWC, ("broadcast", "rank:4", "dtype:f32"), flops=3),
    Entry("bias_relu_nchw", "vision", "conv bias over the channel axis + ReLU, NCHW", bias_relu_nchw,
          (Arg("N,C,H,W"), Arg("C")), NCHW, ("broadcast", "axis:middle", "rank:4", "dtype:f32"), flops=2),
    Entry("pixel_norm_channels", "vision", "pixel norm: RMS over the channel axis of NCHW", pixel_norm_channels,
          (Arg("N,C,H,W"),), NCHW, ("axis:middle", "rank:4", "dtype:f32"), flops=4),
    Entry("global_avg_pool_nchw", "vision", "global average pool over (H,W)", global_avg_pool_nchw, (Arg("N,C,H,W"),), NCHW,
          ("axis:several", "axis:last", "rank:4", "dtype:f32"), flops=1),
    Entry("layer_scale_residual", "vision", "x + gamma[c] * y, NCHW", layer_scale_residual,
          (Arg("N,C,H,W"), Arg("N,C,H,W"), Arg("C")),
          S(dict(N=16, C=256, H=64, W=64), dict(N=4, C=64, H=32, W=32), dict(N=2, C=4, H=3, W=5)),
          ("broadcast", "axis:middle", "rank:4", "dtype:f32"), flops=2),
    Entry("adaln_modulate", "vision", "DiT adaLN: LayerNorm then per-sample shift/scale", adaln_modulate,
          (Arg("N,T,C"), Arg("N,C"), Arg("N,C", scale=0.1)),
          S(dict(N=32, T=1024, C=1152), dict(N=8, T=256, C=384), dict(N=2, T=3, C=24)),
          ("axis:last", "broadcast", "dtype:f32"), flops=9),
    Entry("gamma_correct_clip", "vision", "gamma correction of a clipped NCHW image", gamma_correct_clip,
          (Arg("N,C,H,W", gen="uniform", scale=1.2, shift=-0.1),), NCHW, ("elementwise", "rank:4", "dtype:f32"), flops=20),
]
