"""Reduction fusion, row-wise included.

A reduction takes its elementwise producers (prologue: ``(x*x).sum(1)`` reads x once) and its
consumers (epilogue: ``sqrt`` of the sum, or full-level work through a broadcast of the reduced
value). Reductions over the same axes of the same domain merge into one "reduce" group together
with the elementwise work between them (softmax: max, sum, normalise; layernorm: mean, variance,
normalise + affine; RMSNorm with a returned residual). Reductions over other axes or domains stay
separate (the refusal is recorded).

When a row does not fit in the device's on-chip memory, :func:`row_decision` compares by cost
re-reading the row once per phase against splitting the group into one kernel per phase, and
records the decision.

:class:`RowRule` is the rule (``rules.Rule``) for reductions, and for scans too (``scan.RULE``):
each reduction (scan), in graph order, merges with a neighbouring cluster, until none joins.
"""
from __future__ import annotations

import math

from ..ir.graph import Node
from ..ir.ops import REDUCE, Op
from .cost import DeviceSpec, roofline
from .gpu_chunks import rereading_efficiency
from .legality import Clustering, reduce_key
from .row_phases import deviations, folded_variances, phases
from .rules import PlanContext, Rule


class RowRule(Rule):
    """Each ``ops`` node (reductions or scans), in graph order, merges its cluster with the first
    predecessor or successor cluster that can join (matmul clusters are ``gemm_epilogue``'s to
    decide). Where its key is in ``ctx.no_rowwise`` (splitting the row kernel is cheaper than
    re-reading the row) a merge is refused that would hold a second pass: work over the whole
    domain reading one of the cluster's reductions over those rows (its value broadcast back).
    Reductions of one pass (a column's minimum and maximum) stay together."""
    fixpoint = True

    def __init__(self, name: str, ops: frozenset):
        self.name, self.ops = name, ops

    def match(self, state: Clustering, ctx: PlanContext):
        for r in [n for n in state.order_list if n.op in self.ops]:
            cid = state.home[r]
            dag = state.dag()
            pred, succ = state.neighbours(cid, dag)
            for c in pred + succ:
                yield r, c, dag

    def apply(self, state: Clustering, candidate, ctx: PlanContext) -> bool:
        r, c, dag = candidate
        cid = state.home[r]
        key = reduce_key(r)
        if key in ctx.no_rowwise and _second_pass(state.members[cid] | state.members[c], key, state.order_list):
            state.refuse(f"fuse {state.describe(cid)} with {state.describe(c)}",
                         "row does not fit on chip and splitting is cheaper than re-reading", (cid, c))
            return False
        if any(n.op is Op.MATMUL for n in state.members[c]):
            return False
        return state.merge(cid, c, dag)


RULE = RowRule("reduction", REDUCE)


def _second_pass(members, key: tuple, order_list) -> bool:
    """Whether ``members`` hold work over the whole domain of ``key`` = (domain, axes) that
    depends on one of their reductions over those axes (directly or through other nodes): a pass
    after that reduction's. ``order_list``: the graph's nodes in order."""
    after: set[Node] = set()
    folded = deviations(folded_variances(members, key[0]))
    for n in order_list:
        if n.op in REDUCE and n in members and reduce_key(n) == key:
            after.add(n)
        elif any(i in after for i in n.inputs):
            if (n in members and n.shape == key[0] and n.op is not Op.BROADCAST      # (a row-level value's view)
                    and not (n in folded and _only_into(n, members, folded))):
                return True
            after.add(n)
    return False


def _only_into(n: Node, members, folded: set) -> bool:
    """Whether every reader of ``n`` among ``members`` is a folded deviation's square or sum."""
    return all(u in folded or u.op in REDUCE for u in members if n in u.inputs)


def anchor_order(state: Clustering, candidate) -> int:
    """The graph position of a :class:`RowRule` candidate's reduction or scan (``rules.Together``)."""
    return state.order[candidate[0]]


# The most vector units a GPU row kernel holds in registers (codegen.cuda_shapes.row_shape: 16 a
# thread, 1024 threads); a row past it is read again from L2 by each pass.
HELD_UNITS = 16 * 1024


# Rows of more vector units whose maximum and sum of exponentials join one streamed pass
# (codegen.online_softmax; runtime.cuda renders them so, the row re-read by each other pass).
STREAMED_MIN_UNITS = 4096


# Rows not a whole number of 16-byte units (or starting unaligned) of at least this many units run
# peeled (codegen.cuda_peel: a scalar head and tail, the body in vectors); shorter ones element by element.
PEEL_MIN_UNITS = 2


def _units(row: int, full_in) -> tuple[int, int]:
    """(vector units of a GPU row, elements a unit): 16 bytes a unit where the row is a whole
    number of them or long enough to run peeled (:data:`PEEL_MIN_UNITS`), else one element."""
    vec = max(1, 16 // max(i.dtype.itemsize for i in full_in))
    return (row // vec, vec) if row % vec == 0 or row // vec >= PEEL_MIN_UNITS else (row, 1)


def max_sum_exp(nodes) -> bool:
    """Whether ``nodes`` sum ``exp(x - max(x))`` over a row (a softmax's or logsumexp's pair)."""
    for n in nodes:
        if n.op is Op.SUM and n.inputs[0].op is Op.EXP and n.inputs[0].inputs[0].op is Op.SUBTRACT:
            x, m = n.inputs[0].inputs[0].inputs
            while m.op in (Op.BROADCAST, Op.RESHAPE):
                m = m.inputs[0]
            if m.op is Op.MAX and m.inputs[0] is x and m in nodes:
                return True
    return False


def held(units: int, row_bytes: int, device: DeviceSpec, streamed: bool = False) -> bool:
    """Whether one row of ``units`` vector units (:func:`_units`) stays on chip between passes:
    within the device's on-chip bytes and, on a GPU, within the units a block holds (a row of
    65537 float32, peeled: 16384 units, held; of 65540: 16385, re-read) and not ``streamed``."""
    if row_bytes > device.on_chip_bytes:
        return False
    return device.kind == "cpu" or (units <= HELD_UNITS and not streamed)


def row_decision(nodes: set[Node], inputs, outputs, order, device: DeviceSpec,
                 flops: float, dtype) -> tuple[int, str, bool]:
    """(passes over the row, the recorded decision, whether splitting is cheaper)."""
    r = next(n for n in nodes if n.op in REDUCE)
    domain, axes = reduce_key(r)
    row = math.prod(domain[a] for a in axes)
    full_in = [i for i in inputs if i.shape == domain]
    row_bytes = row * sum(i.dtype.itemsize for i in full_in)
    nphase, tail = phases(nodes, order, outputs)
    passes = nphase + (1 if tail else 0)
    din = sum(i.nbytes for i in full_in)
    # a reduction over axes other than the last (C order) runs a thread a column: each pass reads
    # the inputs again, from L2 only where they all fit there (65536x1024 f32 statistics: 3 passes)
    columns = len(domain) - 1 not in axes
    units, vec = _units(row, full_in) if full_in else (0, 1)      # (no full-size input: nothing to hold)
    n_rows = math.prod(s for d, s in enumerate(domain) if d not in axes)
    streamed = (device.kind == "gpu" and not columns and vec > 1 and units > STREAMED_MIN_UNITS
                and 4 * n_rows >= device.sms and max_sum_exp(nodes))     # (fewer rows: split)
    if passes <= 1 or (din <= device.l2_bytes if columns else held(units, row_bytes, device, streamed)):
        return 1, "", False
    passes -= streamed                   # (the maximum and the sum in one pass)
    if passes <= 1:
        return 1, "", False
    small = sum(i.nbytes for i in inputs if i.shape != domain)
    outb = sum(o.nbytes for o in outputs)
    bandwidth = device.bandwidth * (rereading_efficiency(columns, tail) if device.kind == "gpu" else 1.0)
    reread = roofline(din * passes + small, outb, flops * passes / max(nphase, 1), device, dtype,
                      bandwidth=bandwidth)
    outer = n_rows * r.dtype.itemsize
    split = sum(roofline(din + small + outer * k, outer if k < passes - 1 else outb,
                         flops / passes, device, dtype).seconds for k in range(passes))
    choose_split = split < reread.seconds
    what = (f"columns of {din / 2 ** 20:.0f} MiB exceed L2 {device.l2_bytes / 2 ** 20:.0f} MiB" if columns else
            f"row of {row_bytes / 1024:.0f} KiB exceeds on-chip {device.on_chip_bytes / 1024:.0f} KiB"
            if row_bytes > device.on_chip_bytes else
            f"row of {units} units streamed (max and sum of exp in one pass)" if streamed else
            f"row of {units} units exceeds {HELD_UNITS} held")
    text = (f"{what}: "
            f"re-read {passes}x ({reread.seconds * 1e6:.1f} us) vs split into {passes} kernels "
            f"({split * 1e6:.1f} us): {'split' if choose_split else 're-read'}")
    return passes, text, choose_split
