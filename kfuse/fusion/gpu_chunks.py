"""When a GPU reduction runs in chunks, and what that and its passes cost beyond the roofline.

One rule, two readers: the CUDA runtime (``runtime/cuda.py``) launches a reduction too short of rows
or columns to fill the GPU in chunks (:func:`row_chunks`, :func:`col_chunks`): two kernels through
a workspace where one accumulating pass does it, else one grid-synchronised launch; the cost model
(``cost.estimate``) adds :func:`fixed_seconds` to a reduce kernel's roofline: the passes' dependent
latency (a pass's loads, then its block-wide combine, before the next pass starts) and a
two-stage reduction's second launch. These are what a small reduction's time is made of: a
softmax of 6 rows of 40 took 7.3 us (H200) where the roofline gives the 4 us of one launch."""
from __future__ import annotations

import math

from ..ir.graph import Node
from ..ir.ops import REDUCE, Op
from .kinds import GroupKind
from .row_phases import phases

# Two-stage reductions (Variant.split), where one pass a row would leave most SMs idle: rows, when
# fewer than a quarter of the SMs (64 rows of 2^22 f32 ran at 4.3 TB/s a block a row, 4 rows at 0.38;
# H200 2026-11-24, reduce_probe_1232.md); columns, when they fill fewer blocks than SMs.
ROW_SPLIT_BLOCKS_PER_SM = 8   # row chunks: enough for this many blocks a SM ...
ROW_SPLIT_BLOCK = 256         # ... of this many threads,
ROW_SPLIT_MIN_UNITS = 4096    # ... each chunk at least this many vector units (16 a thread), or where the
ROW_SPLIT_MIN_GATHER = 1024   # row gathers (a load at a loaded position) this many: the mean of 65536 picked
                              # log-probabilities in 16 chunks took 22 us, in 64 11.6 (H200); 4 chunks for the
                              # 8192 labels' range check instead of 1 took 7.1 us, not 5.2 (two launches)
COL_SPLIT_BLOCKS_PER_SM = 16  # column chunks: enough (column, chunk) threads for this many 128-thread
COL_SPLIT_MIN_LEN = 128       # blocks a SM, each chunk at least this long
SPLIT_MAX = 8192              # chunks a row at most (stage 2 reads them all: a 128-thread block a row)

# The model's fixed costs (H200, 2026-11-28 corpus, kernels timed by CUDA events behind a spin):
PASS_LATENCY_S = 1.1e-6       # a pass over the row: 6x40 softmax (3 passes) 7.3 us, layernorm 7.9, launch 4
GRID_BARRIER_S = 1.0e-6       # a grid barrier (Variant.grid_sync: two a pass)
# A column kernel (a thread a column) whose later passes read its inputs again from memory and whose
# last pass writes the whole domain reaches about two thirds of the bandwidth (H200 corpus, measured
# over predicted: softmax over axis 0 1.57, batch norm NHWC 1.50, pixel norm 1.77, per-column int8
# 1.59, min-max 1.49, column standardisation 1.17); split into a kernel a pass, the same work ran
# 1.2-1.5x faster (pixel norm 180 -> 118 us, softmax over axis 0 214 -> 180, Adafactor 266 -> 185).
REREAD_COLUMN_EFFICIENCY = 0.65


def row_chunks(n_rows: int, units: int, gathers: bool, sms: int) -> int:
    """Chunks each of ``n_rows`` rows of ``units`` vector units is split into; 0 where the rows
    fill a quarter of the SMs (the runtime splits where this is at least 2)."""
    if 4 * n_rows >= sms:
        return 0
    return min(-(-(ROW_SPLIT_BLOCKS_PER_SM * sms) // max(1, n_rows)),
               units // (ROW_SPLIT_MIN_GATHER if gathers else ROW_SPLIT_MIN_UNITS), SPLIT_MAX)


def col_chunks(n_cols: int, length: int, sms: int) -> int:
    """Chunks each of ``n_cols`` columns of ``length`` is split into (a thread a column and
    chunk); 0 where the columns fill as many 128-thread blocks as there are SMs."""
    if -(-n_cols // 128) >= sms:
        return 0
    return min(-(-(COL_SPLIT_BLOCKS_PER_SM * 128 * sms) // max(1, n_cols)), length // COL_SPLIT_MIN_LEN, SPLIT_MAX)


def fixed_seconds(kind: GroupKind, nodes: list[Node], inputs: list[Node], outputs: list[Node], sms: int,
                  launch: float) -> float:
    """A GPU reduce kernel's time beyond its roofline (0 for other kernels): its dependent passes'
    latency, and where it runs in chunks a second launch (two stages) or grid barriers."""
    shape = _reduce_shape(kind, nodes, outputs)
    if shape is None:
        return 0.0
    r, domain, axes, n, tail = shape
    passes = max(1, n) + (1 if tail else 0)
    t = passes * PASS_LATENCY_S
    n_rows = math.prod(s for d, s in enumerate(domain) if d not in axes)
    length = math.prod(domain[d] for d in axes)
    if len(domain) - 1 not in axes:           # a thread a column
        chunked = col_chunks(n_rows, length, sms) >= 2
    else:
        gathers = any(x.op is Op.GATHER for x in nodes)
        widest = max([i.dtype.itemsize for i in inputs if i.size == r.inputs[0].size] + [r.inputs[0].dtype.itemsize])
        vec = 1 if gathers else max(1, 16 // widest)      # (the runtime's vector unit: the widest row load)
        chunked = row_chunks(n_rows, length // vec, gathers, sms) >= 2
    if chunked:
        t += launch if passes == 1 else 2 * passes * GRID_BARRIER_S
    return t


def reread_bandwidth(kind: GroupKind, nodes: list[Node], outputs: list[Node], passes: int,
                     bandwidth: float) -> float | None:
    """The bandwidth a GPU reduce kernel that reads its inputs ``passes`` times reaches, where
    below ``bandwidth`` (:data:`REREAD_COLUMN_EFFICIENCY`); None elsewhere."""
    shape = _reduce_shape(kind, nodes, outputs) if passes > 1 else None
    if shape is None:
        return None
    _, domain, axes, _, tail = shape
    efficiency = rereading_efficiency(len(domain) - 1 not in axes, tail)
    return bandwidth * efficiency if efficiency < 1.0 else None


def rereading_efficiency(columns: bool, tail: bool) -> float:
    """The fraction of the bandwidth a kernel re-reading its inputs reaches: a column kernel
    (``columns``) writing the whole domain after (``tail``), :data:`REREAD_COLUMN_EFFICIENCY`."""
    return REREAD_COLUMN_EFFICIENCY if columns and tail else 1.0


def _reduce_shape(kind: GroupKind, nodes: list[Node], outputs: list[Node]):
    """(first reduction, domain, axes, dependent reduction phases, whether full-level work follows
    the last) of a reduce kernel, or None for another kernel."""
    if kind != GroupKind.REDUCE:
        return None
    r = next((n for n in nodes if n.op in REDUCE), None)
    if r is None:
        return None
    n, tail = phases(set(nodes), {x: i for i, x in enumerate(nodes)}, outputs)
    return r, r.inputs[0].shape, tuple(r.attr("axes")), n, tail
