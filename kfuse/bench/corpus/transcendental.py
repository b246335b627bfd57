"""Transcendental-heavy workloads, most in float64 (NumPy's default dtype): great-circle distances,
log returns, a normal density, softplus, a tanh GELU, and rotary tables (float32 cos and sin of
positions times frequencies); the CPU renders their functions with codegen/cpu_vecmath's helpers."""
from __future__ import annotations

from .base import Arg, Entry, body
from .transformer import S


@body
def haversine_f64(xp, lat1, lon1, lat2, lon2):
    a = xp.sin((lat2 - lat1) * 0.5) ** 2 + xp.cos(lat1) * xp.cos(lat2) * xp.sin((lon2 - lon1) * 0.5) ** 2
    return 12742.0 * xp.arcsin(xp.sqrt(a))


@body
def log_returns_f64(xp, p):
    return xp.log(p[:, 1:] / p[:, :-1])


@body
def gaussian_pdf_f64(xp, x, mu, sigma):
    z = (x - mu) / sigma
    return xp.exp(-0.5 * z * z) / (sigma * 2.5066282746310002)


@body
def softplus_f64(xp, x):
    return xp.maximum(x, 0.0) + xp.log1p(xp.exp(-xp.abs(x)))


@body
def rope_angles(xp, pos, inv_freq):
    th = pos[:, None] * inv_freq[None, :]
    return xp.cos(th), xp.sin(th)


@body
def tanh_gelu_f64(xp, x):
    return 0.5 * x * (1.0 + xp.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


F64 = S(dict(R=4096, C=4096), dict(R=1024, C=1024), dict(R=7, C=9))
ENTRIES = [
    Entry("haversine_f64", "science", "great-circle distance of float64 radian pairs", haversine_f64,
          tuple(Arg("R,C", "float64", gen="uniform", scale=1.5) for _ in range(4)), F64,
          ("transcendental", "dtype:f64"), flops=20),
    Entry("log_returns_f64", "science", "log(p[:, 1:] / p[:, :-1]) of float64 price rows", log_returns_f64,
          (Arg("R,C", "float64", gen="positive"),), F64, ("transcendental", "view:slice", "dtype:f64"), flops=10),
    Entry("gaussian_pdf_f64", "science", "normal density of float64 samples, per-column mu and sigma", gaussian_pdf_f64,
          (Arg("R,C", "float64"), Arg("C", "float64"), Arg("C", "float64", gen="positive")), F64,
          ("transcendental", "broadcast", "dtype:f64"), flops=10),
    Entry("softplus_f64", "losses", "softplus max(x, 0) + log1p(exp(-|x|)) in float64", softplus_f64,
          (Arg("R,C", "float64"),), F64, ("transcendental", "dtype:f64"), flops=20),
    Entry("rope_angles", "transformer", "cos and sin of positions x inverse frequencies (rotary tables)", rope_angles,
          (Arg("T", scale=1000.0, gen="uniform"), Arg("D", gen="uniform")),
          S(dict(T=32768, D=2048), dict(T=4096, D=512), dict(T=7, D=9)), ("transcendental", "broadcast", "dtype:f32"),
          flops=30),
    Entry("tanh_gelu_f64", "transformer", "tanh-approximated GELU in float64", tanh_gelu_f64,
          (Arg("R,C", "float64"),), F64, ("transcendental", "dtype:f64"), flops=12),
]
