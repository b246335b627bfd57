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
# Variant.grid_sync (several passes, or a variance folded into its mean's pass, over rows or columns
# too few to fill the GPU): every block resident, launch bounds for this many 128-thread blocks a SM
GRID_SYNC_BLOCKS_PER_SM = 16  # (H200, softmax over axis 0 of 4096x8192: 0.230 ms at 16, 0.252 at 8, 0.377 at 4)
COL_GRID_SYNC_BLOCKS_PER_SM = 8   # ... over columns: 8 (64 registers a thread, 16 rows' loads in flight; H200
                              # 2026-11-28, ms at 16 / 8 blocks: standardize 65536x1024 0.256 / 0.228, NHWC batch
                              # norm 0.170 / 0.142, logsumexp over axis 0 0.174 / 0.143)
GRID_COMBINE_DIRECT = 64      # grid_sync: up to this many chunks, one thread a row combines them all

# The model's fixed costs (H200, 2026-11-28 corpus, kernels timed by CUDA events behind a spin):
PASS_LATENCY_S = 1.1e-6       # a pass over the row: 6x40 softmax (3 passes) 7.3 us, layernorm 7.9, launch 4
GRID_BARRIER_S = 1.0e-6       # a grid barrier (Variant.grid_sync: two a pass)
# A column kernel (a thread a column) whose later passes read its inputs again from memory and whose
# last pass writes the whole domain reaches about two thirds of the bandwidth (H200 corpus, measured
# over predicted: softmax over axis 0 1.57, batch norm NHWC 1.50, pixel norm 1.77, per-column int8
# 1.59, min-max 1.49, column standardisation 1.17); split into a kernel a pass, the same work ran
# 1.2-1.5x faster (pixel norm 180 -> 118 us, softmax over axis 0 214 -> 180, Adafactor 266 -> 185).
REREAD_COLUMN_EFFICIENCY = 0.65
# A grid_sync combine reads the chunks' partials one after another (an L2 read and a combine a
# step, nothing else in flight): the batch norm NHWC statistics of 131072x256 f32 (1024 chunks a
# column) took 0.45 ms with one thread combining all 1024 (commit 08d19e0) and 99.9 us with two
# levels of 32 + 32 steps (H200 corpus, 2026-11-28): (450 - 99.9) / (1024 - 64) = 0.365 us a step.
COMBINE_STEP_S = 0.365e-6
# An index check's flag is read back by the host each call (runtime.check_flags: its group launched
# first, the flag copied to pinned memory, the call waiting on it), so the device runs at most a call
# ahead: where the rest of a call's kernels take less device time than the host's launches, the next
# call's check kernel is issued to an idle device and waits for the host's launches. The host's time
# a launch in a call (Python launcher, events): nll_take_along_axis (H200 corpus, 2026-11-28; 65536
# labels, a two-launch check, then 78 + 13 us of kernels, five launches a call) measured its check at
# 28.1 us against 9.2 us of device time; a one-launch check before 55 us of kernels (the 1024-row
# cross-entropy, two launches a call) measured 5.3 us, its device time: 20 us a launch fits both.
HOST_LAUNCH_S = 20e-6


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


def col_grid_chunks(n_cols: int, length: int, sms: int) -> int:
    """Variant.grid_sync over columns: chunks each of ``n_cols`` columns of ``length`` is split
    into, every (column, chunk) thread's 128-thread block resident; 0 where the columns fill as
    many blocks as there are SMs (the runtime runs grid-synchronised where this is at least 2)."""
    if -(-n_cols // 128) >= sms:
        return 0
    return min(COL_GRID_SYNC_BLOCKS_PER_SM * 128 * sms // max(1, n_cols), length // COL_SPLIT_MIN_LEN, SPLIT_MAX)


def row_grid_chunks(n_rows: int, units: int, gathers: bool, sms: int) -> int:
    """Variant.grid_sync over rows: :func:`row_chunks` capped so every ROW_SPLIT_BLOCK-thread
    block is resident."""
    return min(row_chunks(n_rows, units, gathers, sms),
               GRID_SYNC_BLOCKS_PER_SM * 128 // ROW_SPLIT_BLOCK * sms // max(1, n_rows))


def grid_combine_groups(split: int) -> int:
    """Variant.grid_sync: how many groups of consecutive chunks are combined side by side before
    one thread a row combines the groups (1: that thread combines every chunk). A column's 1024
    chunks combined by one thread, one L2 read after another, took most of a 131072x256 batch
    norm's 0.45 ms (H200); about sqrt(split) groups of about sqrt(split) chunks each instead."""
    return 1 if split <= GRID_COMBINE_DIRECT else math.isqrt(split - 1) + 1


def grid_sync_seconds(split: int, passes: int) -> float:
    """A grid_sync launch's cost beyond its loads, for ``passes`` accumulating passes of ``split``
    chunks: a pass's barriers (after the chunks' partials are written, after the groups' combine
    where there are groups, after the last combine) and its combine's dependent steps (a group's
    chunks, then the groups, one after another)."""
    groups = grid_combine_groups(split)
    steps = split if groups == 1 else -(-split // groups) + groups
    return passes * ((2 + (groups > 1)) * GRID_BARRIER_S + steps * COMBINE_STEP_S)


def launches(kind: GroupKind, nodes: list[Node], inputs: list[Node], outputs: list[Node], sms: int) -> int:
    """The kernel launches a GPU kernel group makes: 2 for a two-stage reduction, else 1."""
    shape = _reduce_shape(kind, nodes, outputs)
    return 2 if shape is not None and _chunking(shape, nodes, inputs, sms)[0] == "split" else 1


def _chunking(shape, nodes: list[Node], inputs: list[Node], sms: int) -> tuple[str, int]:
    """("split" or "grid_sync", chunks) as the CUDA runtime launches a reduce kernel of ``shape``
    (runtime.cuda._reduce_variant), or ("", 0) where it runs unchunked. Two stages take a kernel
    of one looping pass as lowered, before codegen.variance folds a variance into its mean's pass
    (codegen.cuda_shapes.split_ok): the folded statistics run grid-synchronised."""
    r, domain, axes, n, tail = shape
    n_rows = math.prod(s for d, s in enumerate(domain) if d not in axes)
    length = math.prod(domain[d] for d in axes)
    one_loop = _reduction_depth(nodes) == 1 and not tail
    if len(domain) - 1 not in axes:           # a thread a column
        chunks = col_chunks(n_rows, length, sms)
        if chunks >= 2 and one_loop:
            return "split", chunks
        chunks = col_grid_chunks(n_rows, length, sms)
        return ("grid_sync", chunks) if chunks >= 2 else ("", 0)
    gathers = any(x.op is Op.GATHER for x in nodes)
    widest = max([i.dtype.itemsize for i in inputs if i.size == r.inputs[0].size] + [r.inputs[0].dtype.itemsize])
    vec = 1 if gathers else max(1, 16 // widest)      # (the runtime's vector unit: the widest row load)
    chunks = row_chunks(n_rows, length // vec, gathers, sms)
    if chunks >= 2 and one_loop:
        return "split", chunks
    chunks = row_grid_chunks(n_rows, length // vec, gathers, sms)
    return ("grid_sync", chunks) if chunks >= 2 else ("", 0)


def _reduction_depth(nodes: list[Node]) -> int:
    """The longest chain of reductions among ``nodes``, each waiting on the one before (no fold)."""
    depth: dict[Node, int] = {}
    for x in nodes:                           # (nodes in graph order)
        d = max((depth.get(i, 0) for i in x.inputs), default=0)
        depth[x] = d + (1 if x.op in REDUCE else 0)
    return max((v for x, v in depth.items() if x.op in REDUCE), default=0)


def fixed_seconds(kind: GroupKind, nodes: list[Node], inputs: list[Node], outputs: list[Node], sms: int,
                  launch: float) -> float:
    """A GPU reduce kernel's time beyond its roofline (0 for other kernels): its dependent passes'
    latency, and where it runs in chunks a second launch (two stages) or grid barriers and the
    chunks' combine (grid_sync)."""
    shape = _reduce_shape(kind, nodes, outputs)
    if shape is None:
        return 0.0
    n, tail = shape[3], shape[4]
    t = (max(1, n) + (1 if tail else 0)) * PASS_LATENCY_S
    how, chunks = _chunking(shape, nodes, inputs, sms)
    if how == "split":
        t += launch
    elif how == "grid_sync":
        t += grid_sync_seconds(chunks, max(1, n))
    return t


def held_row_waves(kind: GroupKind, nodes: list[Node], outputs: list[Node], passes: int, sms: int,
                   registers_per_sm: int) -> float | None:
    """Where a GPU row kernel holds rows so long that an SM's registers hold one at a time (a
    value a register: float16 ones too, which live in float32 registers), nothing on an SM overlaps
    a row's passes (its loads, then its arithmetic and stores): the kernel's time is its memory
    time plus its compute time, times the waves' rows over the rows (the last wave's idle SMs).
    That factor; None elsewhere (rows several an SM, re-read or streamed rows, one-pass rows).
    GroupNorm+SiLU of 512 float16 rows of 65536 (H200 corpus, 2026-11-28): 99.2 us, where the
    roofline's max(memory, compute) gave 37.9."""
    shape = _reduce_shape(kind, nodes, outputs) if passes == 1 else None
    if shape is None:
        return None
    r, domain, axes, n, tail = shape
    if len(domain) - 1 not in axes or (n < 2 and not tail):
        return None
    if any(x.op is Op.MAX for x in nodes) and any(x.op is Op.EXP for x in nodes):
        return None                           # (a max and a sum of exp: streamed, codegen.online_softmax)
    length = math.prod(domain[d] for d in axes)
    n_rows = math.prod(s for d, s in enumerate(domain) if d not in axes)
    if registers_per_sm // max(1, length) != 1 or 4 * n_rows < sms:
        return None
    return -(-n_rows // sms) * sms / n_rows


def check_read_back_seconds(check_launches: int, call_launches: int, rest_seconds: float) -> float:
    """The device time a call's index-check kernel waits for the host (:data:`HOST_LAUNCH_S`):
    the host's launches of a call beyond the device time of the call's other kernels
    (``rest_seconds``), at most the check kernel's own launches'."""
    return min(check_launches * HOST_LAUNCH_S, max(0.0, call_launches * HOST_LAUNCH_S - rest_seconds))


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
