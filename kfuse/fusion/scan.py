"""Scan fusion: a scan (``CUMSUM``...) takes its producers and elementwise consumers of its shape,
and scans along the same axis of the same shape share one "scan" kernel, run a thread a row, in
order. The rule is reduction's (``reduction.RowRule``) over scan nodes; ``legality.classify``
refuses what a scan kernel cannot hold (a reduction, a matmul, a movement of a scanned value).
"""
from __future__ import annotations

from ..ir.ops import SCAN
from .reduction import RowRule

RULE = RowRule("scan", SCAN)
