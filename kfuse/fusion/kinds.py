"""Kernel group kinds (:class:`GroupKind`): what a fusion plan's kernel computes and how codegen
lowers it (``plan.py``'s docstring is the contract of each).

The members are strings whose values are the kinds' printed names, so cache keys, generated
kernel headers and printed plans read as before, and a kind compares equal to (and hashes like)
its name. Code compares kinds with the members, never with string literals
(``tests/fusion/test_group_kinds.py`` checks).
"""
from __future__ import annotations

import enum


class StrValued(str, enum.Enum):
    """A string-valued enum that formats, prints and hashes as its value (``enum.StrEnum``'s
    behaviour, which Python 3.10 lacks)."""
    __str__ = str.__str__
    __format__ = str.__format__
    __hash__ = str.__hash__


class GroupKind(StrValued):
    ELEMENTWISE = "elementwise"     # one domain, each output element its own expression tree
    REDUCE = "reduce"               # reductions over the same axes of one domain (row-wise too)
    SCAN = "scan"                   # scans along one axis of one domain, each row run in order
    MATMUL = "matmul"               # one product with its operand casts and elementwise epilogue
    SCATTER = "scatter"             # one scatter with the producers of its values and indices
    ATTENTION = "attention"         # softmax(score(q @ k^T)) @ v: two products and a softmax (parts)


# Kinds whose kernel runs rows: a loop over the kept (outer) dims around the reduced or scanned
# (inner) dims of one domain.
ROW_KINDS = (GroupKind.REDUCE, GroupKind.SCAN)


class TileKind(StrValued):
    """The kinds of launch-shape config (``autotune.space.TileConfig``) a kernel can be tuned
    with; ``runtime.cuda_tiles`` reads them too, so they live below both."""
    CPU = "cpu"
    ELEMENTWISE = "elementwise"
    REDUCTION = "reduction"
    ROW = "row"
    GEMM = "gemm"
    CUBLAS_EPILOGUE = "cublas+epilogue"
