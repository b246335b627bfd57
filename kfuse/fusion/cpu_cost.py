"""The CPU's cost of one kernel: what decides a generated Numba loop's time on a host.

A CPU kernel of the sizes kfuse sees is rarely held up by DRAM alone: its working set (the bytes it
reads and writes) often sits in a cache level, whose bandwidth is several times DRAM's; the
generated loop runs on one thread or on Numba's pool (``runtime/cpu.py``'s ``auto_threads``: one
thread below a work threshold, then one per block of work), each call pays a fixed dispatch cost
(and a parallel call the pool's fork and join); a transcendental costs a vectorised helper's
polynomial or a scalar libm call; float16 values are converted in hardware, several a vector
instruction (slower where a float sum widens them to float64); a scan along
a leading axis or a transposed operand walks memory across cache lines; a reduction pays per row.

:class:`CpuCosts` holds those figures (data in the device description, calibrated on the corpus:
``kfuse/bench/cpu_calibrate.py``), :class:`MemLevel` one level of the memory hierarchy.
:func:`terms` counts a kernel's work from its nodes; :func:`seconds` prices the terms as
``fixed + memory + compute``, memory at the bandwidth of the smallest level holding the working
set for the threads used, compute summed over the work terms and shared by the threads. The two
overlap in part (``OVERLAP``): the larger counts whole and ``1 - OVERLAP`` of the smaller is added
(an elementwise loop's streamed loads run under its arithmetic more than a reduction's phases and
accumulators let them), so a write saved (a value recomputed instead of materialised) still shows
in the price where the arithmetic dominates.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Iterable, Mapping

import numpy as np

from ..ir.graph import Node
from ..ir.ops import FLOP_WEIGHT, LEAF, MOVEMENT, REDUCE, SCAN, Op
from ..records import record
from .kinds import GroupKind

# float32 transcendentals the CPU emitter renders as branch-free helpers that LLVM vectorises
# (``codegen/cpu.py``'s ``_F32_HELPERS``; float16 values compute in float32); any other one is a
# scalar libm call
VECTOR_SPECIALS = frozenset({Op.EXP, Op.TANH, Op.LOG, Op.LOG1P, Op.HYPOT})
# transcendentals rendered by codegen/cpu_vecmath's float64 helpers (vectorised as well, about
# three times a float32 helper's time an element; its FLOAT64 and WIDENED, a test keeps them
# equal): float64 ones, and float32/float16 ones without a float32 helper of their own
WIDE_SPECIALS = frozenset({Op.EXP, Op.EXP2, Op.EXPM1, Op.LOG, Op.LOG2, Op.LOG10, Op.LOG1P, Op.TANH, Op.SINH,
                           Op.COSH, Op.ARCTAN, Op.ARCSIN, Op.ARCCOS, Op.ARCTAN2, Op.ARCSINH, Op.ARCTANH,
                           Op.ARCCOSH})
# WIDENED's float32 sin, cos and arctan2 (float32 helpers of their own) are priced apart, as
# CpuCosts.widened: 1.3 ns an element on one thread on a 2-core Xeon VM, about 1.9 and 1.0 beside
# a cos of the same value (priced as float64 helpers there, scaled by its compute scale of 2.1,
# they came out at 2.1-2.3x their time: rope_angles, polar_coords)
WIDENED_SPECIALS = frozenset({Op.SIN, Op.COS, Op.ARCTAN2, Op.POWER})
# float32 power (cpu_vecmath's _powf_d: a float64 log2 and exp2 in one dependent chain) costs this
# many of them: 4.2 ns an element on one thread on the same VM, its exp2 alone 1.5 and log2 1.4
# (512K elements); an integer constant exponent's libm pow is priced so as well (5 ns)
WIDENED_POWER = 3.2
# a float64 helper's evaluations a float32 power's costs (the thread count's work units)
WIDE_POWER = 3
# ops that cost a libm call or a long loop (FLOP weight 8 and above), other than the vectorised
# helpers above
_CHEAP_WIDE = frozenset({Op.FLOOR_DIVIDE, Op.REMAINDER, Op.FMOD})
# accumulators the emitter renders with a branch and a position (not vectorised); an any/all is an
# or/and LLVM vectorises like a sum (a range check of 65536 int64 labels: 7.4 us, 0.11 ns an
# element, where 10 ns an element priced it at 662; Xeon VM, one thread)
_SCALAR_ACCS = frozenset({Op.ARGMAX, Op.ARGMIN})
# a gather (a data-dependent index: take_along_axis's label, fancy indexing) keeps LLVM from
# vectorising the loop holding it, so a vectorised float32 helper evaluated in that loop runs
# scalar, priced as one beside an accumulator (reduce_special): nll_take_along_axis's pick
# logits[i, label[i]] - m[i] - log(s[i]) over 8192 rows, one thread, Xeon VM: 58 us with the
# gather, 8.4 without it (6.9 against 1.0 ns a log); priced vectorised 47 us, 64 measured warm
_SCALAR_LOOPS = frozenset({Op.GATHER})
# a float row argmax/argmin runs in chunks of vectorised work and one search (codegen.cpu_argblocks),
# priced as this many serial elements an element (in chunks of 32: 512x257 float32 rows in L2 17 us
# on one thread, 0.08 ns an element beyond the stream; 8192x257: 0.38 ms, NumPy 0.53; Xeon VM)
_BLOCKED_ARGS = frozenset({Op.ARGMAX, Op.ARGMIN})
# a float division or square root over the loop domain: a vector's takes several cycles (the
# calibration's pixelnorm, x / sqrt(mean(x * x)), 2.3x its prediction without it; softmax 1.8x)
_DIVIDES = frozenset({Op.TRUE_DIVIDE, Op.RECIPROCAL, Op.SQRT})
BLOCKED_ARG_WORK = 0.25
# a kernel of a call right after one that streamed past the private cache starts colder than
# CpuCosts.cold (measured: a one-element call of 3 arrays after a one-thread stream) by this
# factor: a kernel's own arguments, code and inputs are fetched again too, where a small kernel
# or the caller's own work in between (the call path warm again) leaves less. Two quiet corpus
# runs on the Xeon VM (2026-11-28) timed the seven kernels right after a large one in their call
# (label checks, means, the label-smoothed cross-entropy's pick of 128 rows) at 1.9-2.7 cold
# calls (4.8 us) over their warm price (18:23) and 0.9-2.6 (21:06), nll's pick of 8192 rows 12
# and 5.6; the first kernel after the last call's large one (adaLN's add, gaussian_pdf's scale)
# 0.4-1.5, a kernel after a small one that followed it (the cross-entropies' label checks and
# means) 0.4-1.1: a plain cold start. (Under load the pool's spinning workers add more: an
# accuracy's mean 16.1 us after its argmax on the pool, 6.4 on one thread, 7.3 with
# OMP_WAIT_POLICY=passive, at load 1.5; quiet, 4.4 and 6.5.) Those cold calls were the old
# cpu_machine.measure_cold_call's, which came out anywhere from 1.0 to 4.8 us from one process to
# the next; its median of 200 paired rounds gives 1.5-2.1, and 3 of those (2 at 4.8 us before) put
# all 381 kernel times of the quiet runs of 21:06, 21:14 and 21:21 within 2x of their price at a
# cold call of 2.0 us (2: 380, cross_entropy_32000's label check 2.08x; 3.5: 381, fewer within 1.5x)
AFTER_LARGE_COLD = 3.0
# a float16 max/min along a row keeps NumPy's first of equal values (-0.0 or +0.0, its float16
# loop's >=) by a compare and select an element, one chain LLVM leaves scalar (no integer keys):
# this many serial elements an element (128x256 and 256x1024 rows, one thread: 1.4-1.6 ns an
# element, priced 0.01 before; their float32 twins, keyed, 0.1)
HALF_MINMAX_WORK = 4.8
# the share of the smaller of a kernel's memory and compute times that runs under the larger:
# (elementwise, other kinds). The sum (no overlap) priced the large two-thread elementwise kernels
# of the CPU corpus at about twice their time on the Xeon VM (adam_f16_grad's 555 us of L3
# stream + 614 of compute, 1145 priced, 537 measured; logit_softcap 0.45-0.50x; 2026-11-28, three
# quiet runs, 21:06, 21:14, 21:21): re-priced offline over the runs' 381 kernel times
# (.gpuwork/cpu_check_model.py), 0.7 and 0.1 put 380 within 2x (373 with none; 379 with 0.5 for
# every kind, which took pearson_corr_rows' reduction to 2.1x), 331 within 1.5x (299), 226 within
# 1.25x (215); the one left outside, cross_entropy_32000's 10.9 us label check (2.08x), is a
# fixed cost. (0.2 for the others fit as well, but on the fitted machine's figures it turned
# softmax_axis0's recomputed exp into a materialised one, 7.1 ms against 4.0 on the Xeon VM)
OVERLAP = (0.7, 0.1)


@record
class MemLevel:
    """One level of a CPU's memory hierarchy: its capacity (``private``: per core) and the
    bandwidth (bytes read + written per second) a streaming kernel reaches there on one thread and
    on every core."""
    name: str
    bytes: float
    bandwidth: float
    parallel: float
    private: bool = False
    reliable: float = 0.0       # the size up to which a working set is found whole there (0: all)


@record
class CpuCosts:
    """Seconds per unit of each kind of CPU work, one thread (see the module docstring)."""
    call: float                 # a kernel call on one thread (Numba dispatch, argument unboxing)
    pool: float                 # added by a call on the thread pool (fork and join)
    sweep: float                # an element of one loop over the domain (loads, stores, the loop)
    op: float                   # a simple op (FLOP weight 1) on one element
    serial: float               # a scan step (each waits for the previous one: no SIMD)
    vector_special: float       # a vectorised float32 transcendental on one element
    reduce_special: float       # the same feeding a reduction (beside an accumulator: scalar)
    libm: float                 # a scalar libm call on one element
    half: float                 # a float16 op result rounded (or a value converted back)
    strided: float              # a scan step along a leading axis (each a new cache line)
    transposed: float           # an element of a transposed operand (the tiles schedule)
    row: float                  # an innermost loop started (its setup, a vector loop's tail)
    # runtime/cpu.py's auto_threads on an idle machine: one thread below ``par_min_work`` units
    # (its kernel_work: elements x (loops + ops, a libm call 16)), else one per ``work_per_thread``
    par_min_work: int = 1 << 18
    work_per_thread: int = 1 << 17
    libm_work: int = 16
    wide_work: int = 4          # a float64 helper's units (runtime/cpu.py's kernel_work)
    widened: float = 0.62e-9    # a float32 sin, cos or arctan2 helper on one element (WIDENED_SPECIALS; the
                                # Xeon VM's 1.3 ns over its compute scale 2.1: the fitted machine's units)
    wide_special: float = 1.2e-9    # a codegen/cpu_vecmath helper on one element (float64 exp
                                    # 0.72 ns, log 0.8, tanh 0.9, expm1 2.6: 1M elements, one thread)
    half_load: float = 0.01e-9  # a float16 input element converted as it loads (vectorised)
    half_sum: float = 0.1e-9    # a float16 value widened into a float sum (to float64, 4 lanes an
                                # instruction: AVX512-FP16's vcvtph2pd, where the Xeon VM's F16C
                                # widens 8 to float32: a 128x1024 f16 row mean 24 us, f32 9.4)
    array: float = 0.3e-6       # an array argument of a call (Numba unboxes each, checks its type)
    aliased: float = 1.6e-9     # added to a float16 transposed element read a multiple of 4 KiB
                                # from the last (a tile's rows share the L1's sets; the other
                                # dtypes' tiles are staged through a padded scratch tile)
    tanh_special: float = 0.18e-9   # a vectorised float32 tanh (in place of vector_special)
    gather: float = 0.1e-6      # an element gathered from an input larger than gather_above bytes
                                # (independent misses overlap: less than the memory's latency)
    branchy: float = 3e-9       # an element combined by a (non-float) argmax/argmin accumulator
    divide: float = 0.0         # a float division or square root, beyond its FLOP weight as a simple op
    gather_above: int = 1 << 20
    merge_below: int = 512      # codegen/cpu_merge.py's SHORT: shorter neighbouring loops merge
    cold: float = 0.0           # a call that starts cold: its input's producer streamed more than
    cold_above: int = 1 << 20   # cold_above bytes (a private cache) just before, evicting the call
                                # path's code and data and leaving the input on the producer's core
    cold_pick: float = 33e-9    # a gathered element a page or more from the last, in a call started
                                # cold: its line left the private cache and no prefetcher crosses the
                                # page (the label-smoothed cross-entropy's pick of 128 labels from rows
                                # of 125 KiB after a 16 MiB stream: 10.6 us over its warm time, 10.1
                                # reading each row's first element instead, 6.4 one element: 33 ns a
                                # pick; Xeon VM, quiet)


@record
class Terms:
    """A kernel's work, counted from its nodes (elements are per domain element evaluated)."""
    elements: int               # the loop domain's size
    rows: int                   # innermost loops started: elements / last extent x loops
    sweeps: float               # elements x the loops over the domain (a reduction's phases)
    working_set: float          # bytes read + written
    simple: float               # simple op evaluations, FLOP-weighted
    serial: float               # scan steps
    vector: float               # vectorised transcendental evaluations
    reduce_vector: float        # of them, feeding a reduction
    libm: float                 # libm call evaluations
    half: float                 # float16 values converted or rounded
    strided: float              # leading-axis scan steps
    transposed: float           # elements read through a transposing permute
    threads: int                # the runtime's thread count for this kernel (idle machine)
    half_in: float = 0.0        # float16 input elements converted to float32 as they load
    arrays: int = 0             # array arguments of the call (inputs and outputs)
    footprint: float = 0.0      # distinct bytes read + written (working_set less re-reads)
    aliased: float = 0          # of the transposed float16 elements, those a multiple of 4 KiB apart
    tanh: float = 0.0           # of the vectorised evaluations, tanh's (a rational function: cheaper)
    gathered: float = 0.0       # elements gathered from a large input (one cache miss each)
    branchy: float = 0.0        # elements a (non-float) argmax/argmin accumulator combines (scalar)
    cold: int = 0               # 1: an input's producing kernel streamed past the private cache
    wide: float = 0.0           # codegen/cpu_vecmath helper evaluations
    widened: float = 0.0        # float32 sin/cos/arctan2 helper evaluations (a power counts WIDENED_POWER)
    divides: float = 0.0        # float divisions and square roots (a vector's takes several cycles)
    half_sum: float = 0.0       # float16 values a float sum adds (each widened to float64)
    after_large: int = 0        # 1: the kernel just before, in the same call, streamed past the private cache
    paged: float = 0.0          # of the gathered elements, those a page or more apart (a line each, unprefetched)
    streamed: int = 0           # 1: an elementwise kernel (its memory and compute overlap more: OVERLAP)


def threads_for(work: float, costs: CpuCosts, cores: int, parallel_ok: bool = True) -> int:
    """The threads ``auto_threads`` gives a kernel of ``work`` units on an idle machine."""
    if not parallel_ok or cores <= 1 or work < costs.par_min_work:
        return 1
    return int(max(1, min(cores, work // costs.work_per_thread)))


def terms(kind: GroupKind, nodes: Iterable[Node], inputs: Iterable[Node], outputs: Iterable[Node],
          bytes_moved: float, costs: CpuCosts, cores: int,
          evals: Mapping[Node, int] | None = None, footprint: float | None = None) -> Terms:
    nodes, inputs, outputs = list(nodes), list(inputs), list(outputs)
    evals = evals or {}
    sized = [n for n in nodes if n.op not in LEAF] or nodes
    domain = max([n.inputs[0].size if n.op in REDUCE | SCAN else n.size for n in sized] or [1])
    simple = vector = reduce_vector = libm = half = strided = serial = tanh = branchy = wide = widened = divides = 0.0
    half_sum = 0.0
    feeds = _feeding_reductions(nodes) if kind == GroupKind.REDUCE else set()
    users: dict[Node, list[Node]] = {}
    for n in nodes:
        for i in n.inputs:
            users.setdefault(i, []).append(n)
    last = max((n.shape[-1] for n in sized if n.shape and n.size == domain), default=1)
    scalar_loop = any(n.op in _SCALAR_LOOPS and n.size >= domain for n in nodes)
    ops = 0
    for n in nodes:
        if n.op in LEAF or n.op in MOVEMENT:
            continue
        k = evals.get(n, n.inputs[0].size if n.op in REDUCE else n.size)
        if n.size < domain:
            k = k / _hoisted_extent(n, users)
        w = FLOP_WEIGHT.get(n.op, 1.0)
        dt = np.dtype(n.dtype)
        if w >= 8 and n.op not in _CHEAP_WIDE:
            if n.op in VECTOR_SPECIALS and dt in (np.float32, np.float16):
                vector += k
                in_scalar = scalar_loop and n.size >= domain and n not in feeds    # (scalar: no tanh rate)
                tanh += k if n.op is Op.TANH and not in_scalar else 0
                reduce_vector += min(k, n.size) if n in feeds else (k if in_scalar else 0)
                ops += 1
            elif dt.kind == "f" and n.op in WIDENED_SPECIALS and dt != np.float64:
                widened += k * (WIDENED_POWER if n.op is Op.POWER else 1)
                ops += costs.wide_work * (WIDE_POWER if n.op is Op.POWER else 1)
            elif dt.kind == "f" and n.op in WIDE_SPECIALS:
                wide += k
                ops += costs.wide_work
            else:
                libm += k
                ops += costs.libm_work
        else:
            simple += w * k
            ops += 1
        if dt == np.float16:
            half += k
        if n.op is Op.SUM and _from_half(n.inputs[0]):
            half_sum += n.inputs[0].size
        if n.op in (Op.MAX, Op.MIN) and dt == np.float16 and _along_last(n):
            serial += HALF_MINMAX_WORK * k      # (the strict compare-and-select chain: no keys)
        if n.op in _DIVIDES and dt.kind == "f" and n.size >= domain:
            divides += k                        # (a vector's; a hoisted one's is noise beside it)
        if n.op in _BLOCKED_ARGS and np.dtype(n.inputs[0].dtype) in (np.float32, np.float64):
            serial += BLOCKED_ARG_WORK * k      # (codegen.cpu_argblocks: keys, a max, one chunk searched)
        elif n.op in _SCALAR_ACCS:
            branchy += k
        if n.op in SCAN:
            serial += k
            strided += k if _leading_scan(n) else 0
    half_in = float(sum(i.size for i in inputs if np.dtype(i.dtype) == np.float16))
    transposed, aliased = _transposed_elements(nodes, inputs, users) if kind == GroupKind.ELEMENTWISE else (0, 0)
    loops = 1
    if kind == GroupKind.REDUCE:        # a loop a reduction, and one for a full-size output after them
        loops = max(1, sum(1 for n in nodes if n.op in REDUCE) + any(o.size == domain for o in outputs))
    r = next((n for n in nodes if n.op in REDUCE | SCAN), None) \
        if kind in (GroupKind.REDUCE, GroupKind.SCAN) else None
    if r is not None and r.inputs[0].shape:
        shape = r.inputs[0].shape
        axes = {a % len(shape) for a in (r.attr("axes") if r.op in REDUCE else (r.attr("axis"),))}
        last = _innermost(shape, axes, costs.merge_below, _apart(nodes, shape))
    elif kind == GroupKind.ELEMENTWISE:
        dom = next((n.shape for n in sized if n.size == domain and n.shape), ())
        last = _innermost(dom, set(), costs.merge_below, _apart(nodes, dom)) if dom else last
    pieces = 1 + sum(1 for n in nodes if n.op is Op.PAD and n.shape and _pads_last(n))
    # elements gathered from an input past the private cache (a label's logit in each row of a
    # vocabulary-wide array): each a line the loop did not stream, read at memory latency
    picks = [n for n in nodes if n.op is Op.GATHER and n.inputs[0] in set(inputs)
             and n.inputs[0].nbytes > costs.gather_above]
    gathered = float(sum(n.size for n in picks))
    paged = float(sum(n.size for n in picks if _pick_stride(n) >= PAGE))
    ok = kind not in (GroupKind.MATMUL, GroupKind.SCATTER)
    t = threads_for(domain * (loops + ops), costs, cores, ok)
    return Terms(int(domain), int(domain // max(1, last) * loops * pieces), float(domain * loops), float(bytes_moved),
                 simple, serial, vector, reduce_vector, libm, half, strided, transposed, t, half_in,
                 len(inputs) + len(outputs), float(bytes_moved if footprint is None else footprint), aliased,
                 tanh, gathered, branchy, int(_produced_bytes(inputs) > costs.cold_above), wide,
                 divides=divides, widened=widened, half_sum=half_sum, paged=paged,
                 streamed=int(kind == GroupKind.ELEMENTWISE))


def cold_after(costs: list, cpu: CpuCosts, levels, cores: int) -> list:
    """``costs`` (a program's kernels' Costs, in the order they run) with a cold start priced where
    the kernel before streamed more than ``cold_above`` bytes; before the first kernel, a program
    called again and again ran all the others (adaLN's 1.5 us shift-and-scale add, timed after the
    last call's 240 us normalisation: 8.2 us on a Xeon VM; a cross-entropy's 8192-label range
    check 7.8 us after a small mean that followed 8 MiB of logits, 2.5 priced warm). A kernel
    right after such a one in the same call starts colder still (``after_large``:
    ``AFTER_LARGE_COLD``). A cost without CPU terms stays."""
    out = list(costs)
    if len(out) < 2:
        return out

    def large(x) -> bool:
        return x is not None and x.bytes_read + x.bytes_written > cpu.cold_above
    for k, c in enumerate(out):
        prev = costs[k - 1] if k else max(costs[1:], key=lambda x: -1 if x is None else x.bytes_read + x.bytes_written)
        t = getattr(c, "cpu_terms", None)
        if t is None:
            continue
        right = int(k > 0 and large(prev))      # (within the call: see AFTER_LARGE_COLD)
        cold = int(t.cold or large(prev))
        if (cold, right) == (t.cold, t.after_large):
            continue
        t = dataclasses.replace(t, cold=cold, after_large=right)
        out[k] = dataclasses.replace(c, seconds=seconds(t, cpu, levels, cores)[0], cpu_terms=t)
    return out


PAGE = 4096


def _pick_stride(n: Node) -> int:
    """The bytes between a GATHER's consecutive picks in its source (C order): the stride of the
    source dims that follow the node's innermost dim of extent above 1 (0 where none does)."""
    dims, src = tuple(n.attr("dims") or ()), n.inputs[0].shape
    inner = next((d for d in range(len(n.shape) - 1, -1, -1) if n.shape[d] > 1), None)
    if inner is None:
        return 0
    item = np.dtype(n.inputs[0].dtype).itemsize
    return max((item * math.prod(src[d + 1:]) for d in range(len(src)) if d < len(dims) and dims[d] == inner
                and src[d] > 1), default=0)


def _along_last(r: Node) -> bool:
    """A reduction whose axes hold its input's last one (the emitter's inner loop runs along it)."""
    shape = r.inputs[0].shape
    return bool(shape) and (len(shape) - 1) in {a % len(shape) for a in (r.attr("axes") or ())}


def _from_half(n: Node) -> bool:
    """A float16 value, or one cast exactly from float16 to float32 (LLVM folds the two widenings
    into one float16 -> float64 conversion where a float sum adds it)."""
    dt = np.dtype(n.dtype)
    return dt == np.float16 or (n.op is Op.CAST and dt == np.float32 and np.dtype(n.inputs[0].dtype) == np.float16)


def _produced_bytes(inputs: list[Node], limit: int = 64) -> int:
    """The most bytes the kernels producing ``inputs`` (others of the plan, which run before this
    one) streamed: the largest array among the computed inputs' ancestors, up to the caller's own
    (an accuracy's mean of 8192 matches computed from 8 MiB of logits by an argmax: the mean's
    call started cold, 13 us against 1.7 priced on a Xeon VM); 0 where every input is the
    caller's. At most ``limit`` nodes are visited."""
    most, seen = 0, set()
    todo = [n for n in inputs if n.op not in LEAF]
    while todo and len(seen) < limit:
        n = todo.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        most = max(most, n.nbytes)
        for i in n.inputs:
            most = max(most, i.nbytes)
            if i.op not in LEAF:
                todo.append(i)
    return most


def _innermost(shape: tuple, reduced: set, below: int, apart: set = frozenset()) -> int:
    """The innermost loop's extent over C-ordered data of ``shape`` (``reduced``: the reduced
    axes): the last axis, joined with the neighbours of its kind (reduced or kept) while it is
    shorter than ``below`` (``codegen/cpu_merge.py``) and no operand tells them apart
    (``apart``: axes d that cannot join d + 1); a kept one in blocks of at most 1024 columns
    where axes before it are reduced (the ``cols`` order)."""
    dims = [d for d in range(len(shape)) if shape[d] != 1]
    if not dims:
        return 1
    role = dims[-1] in reduced
    ext, k = shape[dims[-1]], len(dims) - 2
    while k >= 0 and (dims[k] in reduced) == role and dims[k] == dims[k + 1] - 1 and ext < below \
            and dims[k] not in apart:
        ext *= shape[dims[k]]
        k -= 1
    return min(ext, 1024) if not role and reduced else ext


def _apart(nodes, shape: tuple) -> set:
    """Axes d of ``shape`` that a broadcast operand of the group tells from d + 1 (it runs
    along one and not the other: a per-channel ``mean[c]`` of NHWC), so their loops stay two."""
    out = set()
    for n in nodes:
        if n.op is Op.BROADCAST and len(n.shape) == len(shape):
            src = (1,) * (len(shape) - len(n.inputs[0].shape)) + tuple(n.inputs[0].shape)
            out.update(d for d in range(len(shape) - 1) if (src[d] == 1) != (src[d + 1] == 1))
    return out


def _pads_last(n: Node) -> bool:
    """A PAD (a piece of a concatenation or pad) placed along the last axis: the innermost
    loop runs in pieces (``codegen/cpu_pieces.py``)."""
    starts, src = n.attr("starts") or (), n.inputs[0].shape
    return bool(starts) and bool(src) and (starts[-1] != 0 or src[-1] != n.shape[-1])


def _hoisted_extent(n: Node, users: dict) -> int:
    """How many times fewer ``n`` (smaller than the domain) is evaluated than the domain has
    elements: where it reaches the domain only through broadcasts along trailing axes (a
    per-channel ``g / sqrt(v + eps)`` of NCHW), LLVM hoists it out of those inner loops; the
    product of those trailing extents (the least over its broadcasts), else 1."""
    seen, stack, least = set(), [n], None
    while stack:
        m = stack.pop()
        for u in users.get(m, ()):
            if u in seen:
                continue
            seen.add(u)
            if u.op is Op.BROADCAST:
                src, ext = u.inputs[0].shape, 1
                if len(src) != len(u.shape):
                    return 1
                for d in range(len(src) - 1, -1, -1):
                    if src[d] != 1:
                        break
                    ext *= u.shape[d]
                least = ext if least is None else min(least, ext)
            elif u.size <= n.size:
                stack.append(u)
            else:
                return 1
    return least or 1


def _feeding_reductions(nodes: list[Node]) -> set[Node]:
    """The group's nodes a reduction of the group other than a sum reads (directly or through
    others): they run in a loop beside its accumulator, where the helpers' loops stay scalar (a
    float sum's additions run in a loop of their own: ``codegen/cpu.py``'s ``wide_sums``)."""
    inside = set(nodes)
    out: set[Node] = set()
    stack = [i for n in nodes if n.op in REDUCE and n.op is not Op.SUM for i in n.inputs if i in inside]
    while stack:
        n = stack.pop()
        if n not in out:
            out.add(n)
            stack.extend(i for i in n.inputs if i in inside)
    return out


def _leading_scan(n: Node) -> bool:
    """A scan along an axis other than the last: each step reads the next row's element."""
    shape = n.inputs[0].shape
    return len(shape) > 1 and n.attr("axis") % len(shape) != len(shape) - 1


def _transposed_elements(nodes: list[Node], inputs: list[Node], users: dict) -> int:
    """Elements of full-size inputs read through a permute that moves the last axis, in a kernel
    that also reads a full-size input in its own order: the two orders disagree, so one side is
    walked across cache lines (the ``tiles`` schedule). A kernel whose full-size inputs all reach
    it through the same kind of permute runs in their order (NumPy's K order: ``x.T * s``)."""
    size = max((n.size for n in nodes), default=0)
    big = [i for i in inputs if i.size == size and i.size > 1]
    turned = {i: _through_transpose(i, users) for i in big}
    turned = {i: st for i, st in turned.items() if st}
    if not turned or len(turned) == len(big):
        return 0, 0
    return sum(i.size for i in turned), sum(i.size for i, st in turned.items()
                                            if st % 4096 == 0 and np.dtype(i.dtype) == np.float16)


def _through_transpose(i: Node, users: dict) -> int:
    """The byte stride (C order) along which ``i``, read through a permute that moves the last
    axis, is walked by the kernel's innermost loop; 0 where no such permute reads it."""
    seen, stack = set(), [i]
    while stack:
        for u in users.get(stack.pop(), ()):
            if u in seen:
                continue
            seen.add(u)
            perm = tuple(u.attr("perm") or ()) if u.op is Op.PERMUTE else ()
            if perm and perm[-1] != len(perm) - 1:
                src = u.inputs[0].shape
                return int(np.dtype(u.dtype).itemsize * math.prod(src[perm[-1] + 1:]))
            stack.append(u)
    return 0


def level_bandwidth(levels, working_set: float, threads: int, cores: int):
    """(level, bytes/s) for a working set streamed by ``threads`` of ``cores``: the smallest level
    that holds it (a private level holds ``threads`` times its size); past the level's
    ``reliable`` size a falling share of it is found there, the rest in the next level (the
    bandwidth their times' blend)."""
    def bw(lv):
        share = (threads - 1) / max(1, cores - 1)
        return lv.bandwidth + (lv.parallel - lv.bandwidth) * min(1.0, share)
    for k, lv in enumerate(levels):
        cap = lv.bytes * (threads if lv.private else 1)
        if working_set <= cap:
            break
    reliable = (lv.reliable or lv.bytes) * (threads if lv.private else 1)
    if working_set <= reliable or k + 1 >= len(levels):
        return lv, bw(lv)
    hit = (cap - working_set) / (cap - reliable)
    return lv, 1.0 / (hit / bw(lv) + (1.0 - hit) / bw(levels[k + 1]))


def seconds(t: Terms, costs: CpuCosts, levels, cores: int) -> tuple[float, float, float]:
    """(predicted seconds, memory seconds, compute seconds) of a kernel's terms: the fixed cost,
    the larger of the other two and ``1 - OVERLAP`` of the smaller (the first less the other two
    is the fixed cost less the overlapped share)."""
    # the level holding the distinct bytes streams them once; a multi-pass kernel's re-reads
    # (a row or block read again by the next phase) come from the first level
    once = min(t.footprint or t.working_set, t.working_set)
    _, bw = level_bandwidth(levels, once, t.threads, cores)
    _, near = level_bandwidth(levels[:1], 0.0, t.threads, cores)
    mem = once / bw + (t.working_set - once) / near
    comp = (t.sweeps * costs.sweep + t.simple * costs.op + t.serial * costs.serial
            + (t.vector - t.reduce_vector - t.tanh) * costs.vector_special + t.tanh * costs.tanh_special
            + t.reduce_vector * costs.reduce_special
            + t.libm * costs.libm + t.wide * costs.wide_special + t.widened * costs.widened
            + t.half * costs.half + t.half_in * costs.half_load + t.half_sum * costs.half_sum
            + t.strided * costs.strided
            + t.transposed * costs.transposed + t.aliased * costs.aliased
            + t.gathered * costs.gather + t.branchy * costs.branchy + t.rows * costs.row
            + t.divides * costs.divide) / t.threads
    fixed = costs.call + t.arrays * costs.array + (costs.pool if t.threads > 1 else 0.0) \
        + t.cold * (costs.cold * (AFTER_LARGE_COLD if t.after_large else 1.0) + t.paged * costs.cold_pick)
    ov = OVERLAP[0] if t.streamed else OVERLAP[1]
    return fixed + max(mem, comp) + (1.0 - ov) * min(mem, comp), mem, comp


def describe(levels, costs: CpuCosts, cores: int) -> str:
    """One line: each level's size and bandwidth (one thread / every core), cores, call cost."""
    lv = ", ".join(f"{v.name}{'' if math.isinf(v.bytes) else f' {v.bytes / MiB:g} MiB'}"
                   f"{'/core' if v.private else ''} {v.bandwidth / 1e9:.0f}/{v.parallel / 1e9:.0f} GB/s"
                   for v in levels)
    return f"{lv}; {cores} cores, call {costs.call * 1e6:.1f} us (+{costs.pool * 1e6:.0f} us on the pool)"


KiB, MiB = 1024, 1024 * 1024
# The 2-core CI machine (AMD EPYC, Zen 5 under KVM: 48 KiB L1d and 1 MiB L2 a core, 32 MiB L3
# shared): a Numba loop y = a*x + b streams 180-230 GB/s in L2, ~120 GB/s (one thread) and ~210
# GB/s (two) in L3, 45-60 GB/s from DRAM (``kfuse.bench.ceilings.cpu_levels`` measures them)
# (L3 is shared: past half of it, less and less of a working set is still there at the next call,
# which the previous call's outputs, other data and the neighbours evict; the corpus times calls on
# two input sets in turn, as a program's calls rarely see the last call's data. Five eighths: a
# call's fresh outputs land in the memory the last call's freed, still in L3 (AdamW's 28 MiB of
# four inputs and three outputs ran at 0.48x its price with half; 97 of 97 kernels of the quiet
# corpus runs of 22:26 and 22:34 within 2x with 20 MiB, 94 with 16)
CPU_LEVELS = (MemLevel("L2", 1 * MiB, 300e9, 300e9, private=True),
              MemLevel("L3", 32 * MiB, 125e9, 210e9, reliable=20 * MiB),
              MemLevel("DRAM", math.inf, 45e9, 55e9))
# Fitted by kfuse.bench.cpu_calibrate on the CPU corpus, then rounded: the one-thread figures on
# 2026-11-27 20:45 (every kernel on one thread, timed by its CPU time: the machine was busy with
# other work; the call less the CPU clock's own cost), the thread pool's and two-thread figures from
# the earlier idle calibration; ``aliased`` and ``gather`` from the quiet two-thread corpus runs of
# 22:26 and 22:34 (cpu_calibrate's fit on them: 1.4e-9 and 3.1e-8; a neighbour on the other core
# triples both, as it shares the caches the tiles and the missed lines need); ``transposed`` from
# the staged tiles (codegen/cpu.py's ``tiled``; one thread, 01:01 on 2026-11-28: a batched
# transpose-add of 2**19 f32 217 us, exp(x.T) + y of 1024^2 851 us: 0.3e-9 an element, none aliased);
# ``half`` and ``half_load`` the hardware conversions' (codegen/cpu_half: a float16 kernel and its
# float32 twin side by side, one thread, Xeon VM: x * y + x of 128x256 3.6 us in float16, 7.5 in
# float32; 0.4e-9 and 0.07e-9 priced the integer helpers before them, 10x the kernel's time now)
CPU_COSTS = CpuCosts(call=1e-6, pool=5e-6, sweep=0.0, op=0.0135e-9, serial=0.32e-9, vector_special=0.43e-9,
                     reduce_special=1.1e-9, libm=5e-9, half=0.01e-9, strided=8.5e-9, transposed=0.3e-9, row=1.4e-9,
                     half_load=0.01e-9, array=0.1e-6, aliased=1.5e-9, tanh_special=0.3e-9, gather=0.03e-6,
                     branchy=10e-9, cold=1e-6, divide=0.2e-9)
