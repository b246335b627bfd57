"""CPU schedules: how the CPU emitter lays a kernel's loops over memory (pure functions of the IR).

A :class:`CpuSchedule` is chosen by the runtime for the actual arrays of a call (their strides
are known only then) and rendered by :func:`kfuse.codegen.cpu.emit`; it is printed in the
kernel's docstring, so ``dump-ir --stage cpu`` shows it.

* ``order="rows"``: the reduced (inner) dims are looped inside each outer index, as the kernel IR
  reads; right when the reduced dims are the arrays' innermost memory axis (``x.sum(-1)``).
* ``order="cols"``: a reduce kernel whose main operand is contiguous along a *kept* (outer) dim
  ``col`` (``x.mean(0)`` of a C-contiguous matrix, NHWC statistics over (0, 1, 2)) loops the
  reduced dims outside and a block of ``col`` inside, with one accumulator per column
  (:mod:`kfuse.codegen.cpu_cols`): the inner loop is unit-stride and vectorises across columns,
  and each column still adds its terms one by one in the reduced dims' C order (for a leading
  axis of a C-contiguous array this is NumPy's own order). ``chunks``: where the column is the
  only kept loop, its rows are also cut into chunks added separately and combined in order, so
  that few columns (``x.sum(0)`` of 8192x512) still share the threads
  (:mod:`kfuse.codegen.cpu_chunks`).
* ``flat``: input buffers read through a C-order unravel of one linear position over their last
  dims (what a ``reshape`` lowers to: ``[L // (s1*s2), (L // s2) % s1, L % s2]``) are passed
  with those dims collapsed into one and read at ``[..., L]``: no integer division per element
  (GroupNorm's ``x.reshape(N, G, -1)`` statistics read a 4-D input this way).
* ``pieces``: the rows order's innermost loop walked in pieces where its indices divide the loop
  variable by a run-time size (concatenations, pads, a broadcast through a reshape):
  :mod:`kfuse.codegen.cpu_pieces`.
* ``interleave``: loads at one step >= 2 and starts a known offset apart read one row view at
  literal offsets (:mod:`kfuse.codegen.cpu_interleave`).
* ``perm``: an elementwise kernel whose outputs take NumPy's K-order layout
  (:mod:`kfuse.codegen.cpu_layout`; the runtime allocates them so) nests its loops in that order.
* ``order="blocks"``: a full reduction's float sums in row blocks shared by threads
  (:mod:`kfuse.codegen.cpu_blocks`).
* ``merge``: neighbouring short loops whose buffers nest exactly run as one loop, the buffers
  passed with those dims joined (:mod:`kfuse.codegen.cpu_merge`); every other choice above is
  made on the merged kernel.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from . import cpu_blocks, cpu_chunks, cpu_interleave, cpu_layout, cpu_merge, cpu_pieces, kernel_ir as K
from ..fusion.kinds import GroupKind


@dataclasses.dataclass(frozen=True)
class CpuSchedule:
    order: str = "rows"             # "rows" | "cols" | "tiles" | "blocks" (cpu_blocks)
    col: int = -1                   # cols: the kept domain dim looped innermost, in blocks; tiles: the
                                    # dim an operand runs along, tiled with the last (elementwise)
    flat: tuple = ()                # ((input buffer, first collapsed dim), ...)
    split: int = -1                 # rows: the innermost loop's dim, walked in pieces (cpu_pieces) ...
    pieces: tuple = ()              # ... by these of its cpu_pieces.patterns (positions)
    units: tuple = ()               # rows: the patterns of loop ``split`` whose divisor is 1 here
    inter: tuple = ()               # rows: interleaved loads of loop ``split`` (cpu_interleave.groups)
    perm: tuple = ()                # rows, elementwise: the loop nest's dim order, outermost first
                                    # (the outputs' layout, cpu_layout.k_order; () = C order)
    merge: tuple = ()               # ((a, b), ...): loops merged (cpu_merge), done before the above
    spans: tuple = ()               # (inputs, outputs): each buffer's dims joined (cpu_merge.groups)
    chunks: bool = False            # cols: the first reduced dim in chunks of rows too (cpu_chunks)
    staged: tuple = ()              # tiles: the loads running along ``col``, copied a tile at a time
                                    # into a scratch tile read along the last dim

    def __str__(self) -> str:
        s = f"order={self.order}" + (f"(i{self.col})" if self.order in ("cols", "tiles") else "")
        if self.chunks:
            s += " chunks"
        if self.staged:
            s += " staged=" + ",".join(self.staged)
        if self.flat:
            s += " flat=" + ",".join(f"in{b}[{f}:]" for b, f in self.flat)
        if self.perm:
            s += f" perm={list(self.perm)}"
        if self.pieces:
            s += f" pieces=i{self.split}{list(self.pieces)}"
        if self.units:
            s += f" units=i{self.split}{list(self.units)}"
        if self.inter:
            s += f" interleave=i{self.split}[{len(self.inter)}]"
        if self.merge:
            s += " merge=" + ",".join(f"i{a}*i{b}" for a, b in self.merge)
        return s


ROWS = CpuSchedule()


# --------------------------------------------------------------------------- reshape unravels


def _unravel_of(index: tuple, first: int):
    """If ``index[first:]`` is the C-order unravel of one linear expression over run-time sizes
    (as :meth:`kfuse.codegen.lower._Lowerer.reshape_index` builds it), ``(L, size names of dims
    first+1..)``; else None."""
    last = index[-1]
    if not (isinstance(last, K.IBin) and last.op == "%" and isinstance(last.rhs, K.IVar)):
        return None
    lin = last.lhs
    sizes = [last.rhs]
    stride: K.Expr = last.rhs
    for d in range(len(index) - 2, first - 1, -1):
        q = K.floordiv(lin, stride)
        if d == first:
            if index[d] != q:
                return None
        else:
            e = index[d]
            if not (isinstance(e, K.IBin) and e.op == "%" and isinstance(e.rhs, K.IVar)
                    and e.lhs == q):
                return None
            sizes.append(e.rhs)
            stride = K.mul(stride, e.rhs)
    return lin, tuple(reversed([s.name for s in sizes]))


def flat_candidates(kir: K.KernelIR) -> dict:
    """Input buffers every load of which reads an unravel over its last dims: ``{buf: (first
    dim, size names of dims first+1.., {load dst: linear expression})}``. The runtime collapses
    such a buffer only where those sizes are the array's extents and the dims are contiguous."""
    loads: dict = {}
    for ph in kir.phases:
        for s in ph.pre + ph.body:
            if isinstance(s, K.Load):
                loads.setdefault(s.buf, []).append(s)
            elif s.__class__ is K.Search:
                loads.setdefault(s.buf, []).append(None)       # read whole: never collapsed
    if kir.contraction is not None:
        for b in (kir.contraction.lhs, kir.contraction.rhs, kir.contraction.result):
            loads.setdefault(b, []).append(None)
    out = {}
    for buf, ls in loads.items():
        if None in ls or kir.inputs[buf].ndim < 2:
            continue
        best = None
        for first in range(kir.inputs[buf].ndim - 1):   # the widest collapse that fits every load
            got = [_unravel_of(tuple(s.index), first) for s in ls]
            if all(g is not None for g in got) and len({g[1] for g in got}) == 1:
                best = (first, got[0][1], {s.dst: g[0] for s, g in zip(ls, got)})
                break
        if best is not None:
            out[buf] = best
    return out


def flat_index(kir: K.KernelIR, sched: CpuSchedule) -> dict:
    """``{load dst: index expressions}`` for the loads of the schedule's collapsed buffers."""
    if not sched.flat:
        return {}
    cands = flat_candidates(kir)
    res = {}
    for s in (s for ph in kir.phases for s in ph.pre + ph.body if isinstance(s, K.Load)):
        for buf, first in sched.flat:
            if s.buf == buf:
                res[s.dst] = tuple(s.index[:first]) + (cands[buf][2][s.dst],)
    return res


# --------------------------------------------------------------------------- loop order


def unit_var(e) -> str | None:
    """The loop variable that moves an index expression by one per step (``i2`` in
    ``(i1 * s3) + i2``, ``L % s``, ``start + i * step``), or None."""
    if isinstance(e, K.IVar):
        return e.name if e.name.startswith("i") else None
    if isinstance(e, K.IBin):
        if e.op in ("+", "-"):
            return unit_var(e.rhs) or unit_var(e.lhs)
        if e.op == "%":
            return unit_var(e.lhs)
        if e.op == "*" and isinstance(e.rhs, K.ILit):
            return unit_var(e.lhs)
    return None


def choose(kir: K.KernelIR, arrays, sizes: dict, korder: bool = False) -> CpuSchedule:
    """The schedule for a call on ``arrays`` (the kernel's inputs, as passed to it; ``sizes``:
    size-parameter name -> value): collapse what can be collapsed, then ``cols`` when the main
    operand (the largest input read inside the reduced loops) is contiguous along a kept dim.
    ``korder``: an elementwise kernel's outputs are allocated in NumPy's K order
    (:mod:`kfuse.codegen.cpu_layout`), and its loops nest in that order. Short neighbouring loops
    then merge (:mod:`kfuse.codegen.cpu_merge`) and the choice is made again on the merged kernel."""
    sched = _choose(kir, arrays, sizes, korder)
    merges = cpu_merge.find(kir, arrays, sched.perm)
    if not merges:
        return sched
    spans = cpu_merge.groups(kir, merges, sched.perm)
    mk = cpu_merge.apply(cpu_merge.permuted_stores(kir, sched.perm), merges)
    metas = [cpu_merge.collapse_meta(a, sp) for a, sp in zip(arrays, spans[0])]
    if sched.perm:
        again = _rows(mk, _flat(mk, metas, sizes), sizes, sched.perm, permuted=True)
    else:
        again = _choose(mk, metas, sizes, False)
    return dataclasses.replace(again, merge=merges, spans=spans)


def _flat(kir: K.KernelIR, arrays, sizes: dict) -> tuple:
    flat = []
    for buf, (first, names, _) in flat_candidates(kir).items():
        a = arrays[buf]
        if all(sizes.get(n) == a.shape[first + 1 + k] for k, n in enumerate(names)) \
                and _collapsible(a, first):
            flat.append((buf, first))
    return tuple(sorted(flat))


def _choose(kir: K.KernelIR, arrays, sizes: dict, korder: bool) -> CpuSchedule:
    flat = _flat(kir, arrays, sizes)
    if kir.kind == GroupKind.ELEMENTWISE:
        perm = cpu_layout.k_order(kir, arrays, flat) if korder else ()
        if perm:
            return _rows(kir, flat, sizes, perm)
        t = _transposed_dim(kir, arrays, dict(flat))
        if t is not None:
            return CpuSchedule("tiles", t, flat, staged=_staged(kir, arrays, dict(flat), t))
    elif kir.kind == GroupKind.REDUCE and cpu_blocks.eligible(kir):
        if cpu_blocks.block_rows(kir) < kir.extent(kir.loop_dims(kir.inner)[0]):
            return CpuSchedule("blocks", flat=flat)
    elif kir.kind == GroupKind.REDUCE and kir.loop_dims(kir.outer):
        index = _main_index(kir, arrays, dict(flat))
        d = unit_var(index) if index is not None else None
        if d is not None and int(d[1:]) in kir.loop_dims(kir.outer):
            return CpuSchedule("cols", int(d[1:]), flat, chunks=cpu_chunks.eligible(kir, int(d[1:])))
    return _rows(kir, flat, sizes)


def _rows(kir: K.KernelIR, flat: tuple, sizes: dict, perm: tuple = (), permuted: bool = False) -> CpuSchedule:
    """The rows order, its innermost loop split into pieces where that removes divisions
    (:mod:`kfuse.codegen.cpu_pieces`): the last inner loop, or an elementwise nest's last loop
    (not the parallel first one). The stores are looked at as the emitter renders them: in the
    loop order ``perm`` (``permuted``: ``kir``'s are already)."""
    if perm and not permuted:
        kir = cpu_merge.permuted_stores(kir, perm)
    inner, outer = kir.loop_dims(kir.inner), loop_order(kir, perm)
    d = inner[-1] if inner else (outer[-1] if len(outer) > 1 and not kir.inner else -1)
    sched = CpuSchedule(flat=flat, perm=perm)
    if d < 0 or kir.contraction is not None:
        return sched
    pieces, units = cpu_pieces.choose(kir, d, flat_index(kir, sched), sizes)
    if pieces or units:
        return dataclasses.replace(sched, split=d, pieces=pieces, units=units)
    inter = cpu_interleave.groups(kir, d, flat_index(kir, sched), sizes)
    return dataclasses.replace(sched, split=d, inter=inter) if inter else sched


def loop_order(kir: K.KernelIR, perm: tuple) -> list[int]:
    """The outer loop dims, outermost first: in ``perm``'s order where it is given."""
    dims = kir.loop_dims(kir.outer)
    return [d for d in perm if d in dims] if perm else dims


TILE = 64                   # tiles order: a TILE x TILE tile of float32 (16 KiB) stays in L1 while it is read
TILE_MIN = 1 << 16          # ... for operands of at least this many elements (smaller ones stay in cache)


def _transposed_dim(kir, arrays, flat: dict) -> int | None:
    """The loop dim other than the last that a large operand of an elementwise kernel runs along
    in memory (``np.exp(x.T) + y``: ``x``'s rows are the output's columns), or None."""
    dims = kir.loop_dims(range(len(kir.domain)))
    if len(dims) < 2:
        return None
    for s in kir.phases[0].pre:
        d = _fast_dim(s, arrays, flat)
        if d is not None and d in dims[:-1] and kir.extent(d) >= TILE:
            return d
    return None


def _fast_dim(s, arrays, flat: dict) -> int | None:
    """The loop dim that load ``s`` of a large operand runs along in memory, or None."""
    if not isinstance(s, K.Load) or K.gathers(s.index) or s.buf in flat:
        return None
    a = arrays[s.buf]
    if _size(a) < TILE_MIN:
        return None
    fast = min((abs(a.strides[k]), k) for k in range(len(s.index)) if a.shape[k] > 1)[1]
    d = unit_var(s.index[fast])
    return None if d is None else int(d[1:])


def _staged(kir, arrays, flat: dict, t: int) -> tuple:
    """The loads of a ``tiles`` kernel that run along ``t``: each tile of theirs is copied into
    a scratch tile first (read along ``t``), and the tile's loop reads the scratch along the last
    dim, so the values computed from it vectorise (``np.exp(x.T) + y`` 1024^2 f32, one thread:
    5.3 -> 1.9 ms; the staging copy costs what the strided reads did). Float16 loads convert as
    they read and stay as they are."""
    return tuple(s.dst for s in kir.phases[0].pre if _fast_dim(s, arrays, flat) == t
                 and np.dtype(kir.inputs[s.buf].dtype) != np.float16)


def _collapsible(a, first: int) -> bool:
    """Whether dims ``first..`` of ``a`` (anything with ``shape``/``strides``) merge into one
    without a copy (NumPy's rule: consecutive dims of extent > 1 nest exactly)."""
    dims = [d for d in range(first, len(a.shape)) if a.shape[d] != 1]
    if 0 in a.shape:
        return False
    return all(a.strides[d] == a.strides[e] * a.shape[e] for d, e in zip(dims, dims[1:]))


def collapse(a, first: int):
    """``a`` (an array) with dims ``first..`` merged into one, as a view."""
    return a.reshape(a.shape[:first] + (-1,), copy=False)


def _main_index(kir, arrays, flat: dict):
    """The index expression of the main operand's fastest-moving memory axis, or None."""
    best, size = None, -1
    for ph in kir.phases:
        for s in ph.body:
            if not isinstance(s, K.Load) or K.gathers(s.index):
                continue
            a = arrays[s.buf]
            if _size(a) <= size:
                continue
            if s.buf in flat:
                lin = flat_candidates(kir)[s.buf][2][s.dst]
                if all(a.shape[d] == 1 for d in range(flat[s.buf])) or \
                        abs(a.strides[-1]) <= min(abs(a.strides[d]) for d in range(flat[s.buf])
                                                  if a.shape[d] > 1):
                    best, size = lin, _size(a)
                continue
            axes = [d for d in range(len(a.shape)) if a.shape[d] > 1]
            if axes:
                best, size = s.index[min(axes, key=lambda d: abs(a.strides[d]))], _size(a)
    return best


def _size(a) -> int:
    n = 1
    for e in a.shape:
        n *= e
    return n


class Meta:
    """An array's shape and strides only (a C-contiguous one by default): what :func:`choose`
    reads, so a schedule can be chosen before any array exists."""
    __slots__ = ("shape", "strides")

    def __init__(self, shape, itemsize: int, strides=None):
        self.shape = tuple(shape)
        if strides is None:
            strides, st = [], itemsize
            for e in reversed(self.shape):
                strides.append(st)
                st *= max(e, 1)
            strides = tuple(reversed(strides))
        self.strides = tuple(strides)


def col_block(extent: int, blocks_wanted: int) -> int:
    """Columns per block in the ``cols`` order: the whole kept extent up to 1024 columns (a block
    narrower than a row reads every row in pieces: a 16384x512 f32 mean/var/normalise took 83 ms
    in blocks of 128 or 256 columns, 30 ms in one of 512; 2048x4096 was best at 1024), split
    for threads only where the pieces stay at least 512 columns wide."""
    if extent <= 1024:
        return extent if blocks_wanted <= 1 or extent < 1024 else 512
    per = -(-extent // max(1, blocks_wanted))
    return max(512, min(1024, -(-per // 16) * 16))


def extents(kir: K.KernelIR, sched: CpuSchedule) -> dict:
    """Each domain dim's extent in the kernel ``sched`` renders (its merges done)."""
    ext = {d: kir.extent(d) for d in range(len(kir.domain))}
    for a, b in sched.merge:
        ext[a], ext[b] = ext[a] * ext[b], 1
    return ext


def call_args(kir: K.KernelIR, sched: CpuSchedule, ins: list, args: tuple, nin: int, threads: int):
    """What the runtime passes a kernel compiled for ``sched`` (``args``: inputs, outputs and
    sizes as the unscheduled kernel takes them; ``ins``: the inputs): ``(arguments, whether one
    thread does it all)``, the buffers joined (``merge``, ``flat``), the outputs in the loop order
    (``perm``), the column block (``cols``; and the chunk's rows, ``chunks``) or row block
    (``blocks``) after the sizes."""
    nout = len(kir.outputs)
    outs = args[nin:nin + nout]
    if sched.merge:
        ins = [cpu_merge.collapse(a, sp) for a, sp in zip(ins, sched.spans[0])]
    for b, first in sched.flat:
        ins[b] = collapse(ins[b], first)
    if sched.perm:          # the kernel stores at permuted indices: the outputs in its loop order
        outs = tuple(o.transpose(sched.perm) for o in outs)     # (C-contiguous: cpu_layout.allocate)
    if sched.merge:
        outs = tuple(cpu_merge.collapse(o, sp) for o, sp in zip(outs, sched.spans[1]))
    extra, alone = (), False
    if sched.chunks:
        ext = extents(kir, sched)
        gone = {b for _, b in sched.merge}
        inner = [d for d in kir.loop_dims(kir.inner) if d not in gone]
        cols, rows = ext[sched.col], ext[inner[0]]
        cb = col_block(cols, 1)                 # (the sizes alone choose the chunks: same bits on any threads)
        rb = cpu_chunks.chunk_rows(-(-cols // cb), rows, cols * math.prod(ext[d] for d in inner[1:]))
        if rb >= rows:                          # one chunk: the columns' blocks for the threads
            cb = col_block(cols, threads)
        extra = (np.int64(cb), np.int64(rb))
        alone = -(-cols // cb) * -(-rows // rb) < 2
    elif sched.order == "cols":
        ext = extents(kir, sched)
        gone = {b for _, b in sched.merge}
        others = [d for d in kir.loop_dims(kir.outer) if d != sched.col and d not in gone]
        n0 = ext[others[0]] if others else 1
        cb = col_block(ext[sched.col], -(-threads // n0))
        extra = (np.int64(cb),)
        alone = n0 * -(-ext[sched.col] // cb) < 2          # one block: nothing to share
    elif sched.order == "blocks":
        ext = extents(kir, sched)
        gone = {b for _, b in sched.merge}
        inner = [d for d in kir.loop_dims(kir.inner) if d not in gone]
        extra = (np.int64(cpu_blocks.rows_per_block(math.prod(ext[d] for d in inner[1:]))),)
    return (*ins, *outs, *args[nin + nout:], *extra), alone
