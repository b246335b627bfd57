"""Quantisation: per-row and per-column absmax int8 (scale, round, clip, cast), dequantisation of
int8 with per-row scales, a per-tensor fake-quant round trip, and int8 from float16 rows."""
from __future__ import annotations

from .base import Arg, Entry, cast
from .transformer import S


def _q_rows(xp):
    def quant_int8_rows(x):
        s = xp.max(xp.abs(x), axis=1, keepdims=True) / 127.0
        q = xp.clip(xp.round(x / s), -127.0, 127.0)
        return cast(xp, q, "int8"), s
    return quant_int8_rows


def _q_cols(xp):
    def quant_int8_cols(x):
        s = xp.max(xp.abs(x), axis=0, keepdims=True) / 127.0
        q = xp.clip(xp.round(x / s), -127.0, 127.0)
        return cast(xp, q, "int8"), s
    return quant_int8_cols


def _q_rows_f16(xp):
    def quant_int8_rows_from_f16(x):
        xf = cast(xp, x, "float32")
        s = xp.max(xp.abs(xf), axis=1, keepdims=True) / 127.0
        q = xp.clip(xp.round(xf / s), -127.0, 127.0)
        return cast(xp, q, "int8"), s
    return quant_int8_rows_from_f16


def _dq_rows(xp):
    def dequant_int8_rows(q, s):
        return cast(xp, q, "float32") * s
    return dequant_int8_rows


def _fake(xp):
    def fake_quant_tensor(x):
        s = xp.max(xp.abs(x), axis=(0, 1)) / 127.0
        return xp.clip(xp.round(x / s), -127.0, 127.0) * s
    return fake_quant_tensor


RC = S(dict(R=16384, C=4096), dict(R=2048, C=1024), dict(R=6, C=40))
ENTRIES = [
    Entry("quant_int8_rows", "quant", "per-row absmax int8: scale, round, clip -> (int8, scales)", _q_rows,
          (Arg("R,C"),), RC, ("axis:last", "dtype:int8", "multi-output"), flops=4, tol="int8"),
    Entry("quant_int8_cols", "quant", "per-column absmax int8 (a leading-axis statistic)", _q_cols,
          (Arg("R,C"),), RC, ("axis:leading", "dtype:int8", "multi-output"), flops=4, tol="int8"),
    Entry("quant_int8_rows_from_f16", "quant", "per-row absmax int8 of f16 rows", _q_rows_f16,
          (Arg("R,C", "float16"),), RC, ("axis:last", "dtype:f16", "dtype:int8", "dtype:mixed"), flops=4,
          tol="int8"),
    Entry("dequant_int8_rows", "quant", "int8 x per-row f32 scale -> f32", _dq_rows,
          (Arg("R,C", "int8", gen="int8"), Arg("R,1", gen="positive", scale=0.01)), RC,
          ("broadcast", "dtype:int8", "dtype:mixed"), flops=1),
    Entry("fake_quant_tensor", "quant", "per-tensor absmax fake quantisation (quantise-dequantise)", _fake,
          (Arg("R,C"),), RC, ("axis:all", "dtype:f32"), flops=5, tol="int8"),
]
