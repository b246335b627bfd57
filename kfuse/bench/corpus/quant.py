"""Quantisation: per-row and per-column absmax int8 (scale, round, clip, cast), dequantisation of
int8 with per-row scales, a per-tensor fake-quant round trip, and int8 from float16 rows."""
from __future__ import annotations

from .base import Arg, Entry, body, cast
from .transformer import S


@body
def quant_int8_rows(xp, x):
    s = xp.max(xp.abs(x), axis=1, keepdims=True) / 127.0
    q = xp.clip(xp.round(x / s), -127.0, 127.0)
    return cast(xp, q, "int8"), s


@body
def quant_int8_cols(xp, x):
    s = xp.max(xp.abs(x), axis=0, keepdims=True) / 127.0
    q = xp.clip(xp.round(x / s), -127.0, 127.0)
    return cast(xp, q, "int8"), s


@body
def quant_int8_rows_from_f16(xp, x):
    xf = cast(xp, x, "float32")
    s = xp.max(xp.abs(xf), axis=1, keepdims=True) / 127.0
    q = xp.clip(xp.round(xf / s), -127.0, 127.0)
    return cast(xp, q, "int8"), s


@body
def dequant_int8_rows(xp, q, s):
    return cast(xp, q, "float32") * s


@body
def fake_quant_tensor(xp, x):
    s = xp.max(xp.abs(x), axis=(0, 1)) / 127.0
    return xp.clip(xp.round(x / s), -127.0, 127.0) * s


RC = S(dict(R=16384, C=4096), dict(R=2048, C=1024), dict(R=6, C=40))
ENTRIES = [
    Entry("quant_int8_rows", "quant", "per-row absmax int8: scale, round, clip -> (int8, scales)", quant_int8_rows,
          (Arg("R,C"),), RC, ("axis:last", "dtype:int8", "multi-output"), flops=4, tol="int8"),
    Entry("quant_int8_cols", "quant", "per-column absmax int8 (a leading-axis statistic)", quant_int8_cols,
          (Arg("R,C"),), RC, ("axis:leading", "dtype:int8", "multi-output"), flops=4, tol="int8"),
    Entry("quant_int8_rows_from_f16", "quant", "per-row absmax int8 of f16 rows", quant_int8_rows_from_f16,
          (Arg("R,C", "float16"),), RC, ("axis:last", "dtype:f16", "dtype:int8", "dtype:mixed"), flops=4,
          tol="int8"),
    Entry("dequant_int8_rows", "quant", "int8 x per-row f32 scale -> f32", dequant_int8_rows,
          (Arg("R,C", "int8", gen="int8"), Arg("R,1", gen="positive", scale=0.01)), RC,
          ("broadcast", "dtype:int8", "dtype:mixed"), flops=1),
    Entry("fake_quant_tensor", "quant", "per-tensor absmax fake quantisation (quantise-dequantise)", fake_quant_tensor,
          (Arg("R,C"),), RC, ("axis:all", "dtype:f32"), flops=5, tol="int8"),
]
