"""Merged loop dims of the CPU schedules (:mod:`kfuse.codegen.cpu_schedule`): NumPy's iterator
coalescing, for the generated loop nest.

Two loops that follow each other in a kernel's nest (both kept or both reduced), ``i<a>`` then
``i<b>``, run as one loop of ``extent(a) * extent(b)`` steps where every buffer that reads or writes
along them holds ``i<a>`` and ``i<b>`` as plain, neighbouring subscripts (``x[.., i<a>, i<b>, ..]``)
whose memory nests exactly (stride of ``a`` = stride of ``b`` times the extent of ``b``), and no
other expression of the kernel uses either. The runtime passes those buffers with the two dims
reshaped into one (a view; :func:`collapse`), the kernel reads ``x[.., i<a>, ..]`` and ``i<b>``
becomes an extent-1 dim (no loop). The steps run in the same order as the nested loops did, so a
reduction adds its terms in the same order.

What it buys: a short innermost loop made long. The pixel norm of an (8, 64, 32, 32) NCHW batch
(a reduction over the channels: the ``cols`` order with 32 columns a block) runs on 1024 columns
(H x W): 140 -> 48 us on two threads; ``np.transpose(x, (0, 2, 1, 3)) * 0.5`` loops over rows of
8 x 64 instead of 64. Only loops shorter than :data:`SHORT` merge (a long innermost loop gains
nothing), in kernels of at least :data:`MIN_ELEMENTS` (a merged schedule reshapes its buffers per
call: about a microsecond, the whole of a tiny kernel's time).
"""
from __future__ import annotations

import dataclasses
import math

from . import kernel_ir as K
from .phase_merge import rereading_form
from ..errors import CompileError
from ..fusion.kinds import GroupKind

SHORT = 512                 # a pair merges while its inner loop is shorter than this
MIN_ELEMENTS = 1 << 14      # ... in kernels with at least this many domain elements


def permuted_stores(kir: K.KernelIR, perm: tuple) -> K.KernelIR:
    """``kir`` with every store's index in the loop order ``perm`` (the runtime passes the
    outputs transposed into it, C-contiguous: :mod:`kfuse.codegen.cpu_layout`)."""
    if not perm:
        return kir

    def fix(s):
        return dataclasses.replace(s, index=tuple(s.index[d] for d in perm)) if isinstance(s, K.Store) else s
    phases = tuple(dataclasses.replace(ph, pre=tuple(map(fix, ph.pre)), body=tuple(map(fix, ph.body)))
                   for ph in kir.phases)
    outs = tuple(dataclasses.replace(b, shape=tuple(b.shape[d] for d in perm) if len(b.shape) == len(perm)
                                     else b.shape) for b in kir.outputs)
    return dataclasses.replace(kir, phases=phases, outputs=outs)


def _stmts(kir: K.KernelIR):
    for ph in kir.phases:
        yield from ph.pre
        yield from ph.body


def _other_exprs(kir: K.KernelIR):
    """Index expressions that are not a load's or store's subscripts (an Index value, a search's
    table length, an arg-reduction's position)."""
    for s in _stmts(kir):
        if isinstance(s, (K.Index, K.Search)):
            yield from K.stmt_index(s)
    for ph in kir.phases:
        for a in ph.accs:
            if a.pos is not None:
                yield a.pos


def _position(kir: K.KernelIR, a: int, b: int) -> dict | None:
    """``{("in"|"out", buffer): k}``: where each buffer that uses ``i<a>``/``i<b>`` holds them
    as subscripts k and k+1; None where some expression uses them otherwise."""
    va, vb = f"i{a}", f"i{b}"
    names = {va, vb}
    if any(names & K.expr_vars(e) for e in _other_exprs(kir)):
        return None
    out: dict = {}
    others = []
    for s in _stmts(kir):
        if not isinstance(s, (K.Load, K.Store)):
            continue
        key = ("in" if isinstance(s, K.Load) else "out", s.buf)
        idx = tuple(s.index)
        used = [k for k, e in enumerate(idx) if names & K.expr_vars(e)]
        if not used:
            others.append((key, idx))
            continue
        if isinstance(s, K.Load) and K.gathers(idx) or len(used) != 2:
            return None
        k = used[0]
        if idx[k] != K.IVar(va) or idx[k + 1] != K.IVar(vb) or out.get(key, k) != k:
            return None
        out[key] = k
    # another access of a joined buffer reads its first element there (a variance's shift)
    if any(key in out and idx[out[key]:out[key] + 2] != _ZEROS for key, idx in others):
        return None
    return out


_ZEROS = (K.lit(0), K.lit(0))


def _nests(kir: K.KernelIR, perm: tuple) -> list[list[int]]:
    """The loop nests whose neighbours may merge: an elementwise kernel's (in ``perm``'s order),
    else the kept dims' and the reduced dims'."""
    if kir.kind == GroupKind.ELEMENTWISE:
        dims = kir.loop_dims(range(len(kir.domain)))
        return [[d for d in perm if d in dims] if perm else dims]
    return [kir.loop_dims(kir.outer), kir.loop_dims(kir.inner)]


def find(kir: K.KernelIR, arrays, perm: tuple = ()) -> tuple:
    """The merges ``((a, b), ...)`` (in order) for a call on ``arrays`` (the inputs; outputs are
    fresh and C-contiguous in the loop order): innermost pairs first, each while its inner loop
    is shorter than :data:`SHORT`; () where nothing merges."""
    if (kir.kind not in (GroupKind.ELEMENTWISE, GroupKind.REDUCE) or kir.contraction is not None
            or kir.in_place or kir.init_from
            or math.prod(kir.extent(d) for d in range(len(kir.domain))) < MIN_ELEMENTS):
        return ()
    nests = [list(n) for n in _nests(kir, perm)]
    if not any(len(n) >= 2 and kir.extent(n[-1]) < SHORT for n in nests):
        return ()                       # (no pair to try: a new size's schedule, chosen per call)
    kir = permuted_stores(kir, perm)
    reread = rereading_form(kir)        # (what the cols order renders: a variance's shift reads)
    metas = list(arrays)
    merges = []
    for nest in nests:
        while len(nest) >= 2:
            a, b = nest[-2], nest[-1]
            if kir.extent(b) >= SHORT:
                break
            pos = _position(kir, a, b)
            if pos is None or _position(reread, a, b) is None or not all(
                    _nests_exactly(metas[buf], k) for (side, buf), k in pos.items() if side == "in"):
                break
            kir, reread = apply(kir, ((a, b),)), apply(reread, ((a, b),))
            metas = [_merged_meta(metas[buf], pos[("in", buf)]) if ("in", buf) in pos else metas[buf]
                     for buf in range(len(metas))]
            merges.append((a, b))
            nest.pop()
    return tuple(merges)


def _nests_exactly(a, k: int) -> bool:
    return a.strides[k] == a.strides[k + 1] * a.shape[k + 1]


def _merged_meta(a, k: int):
    return collapse_meta(a, (1,) * k + (2,) + (1,) * (len(a.shape) - k - 2))


def apply(kir: K.KernelIR, merges: tuple) -> K.KernelIR:
    """``kir`` with each merge ``(a, b)`` done: dim ``a`` spans both, ``b`` has extent 1, every
    subscript pair ``i<a>, i<b>`` is one subscript ``i<a>`` (pure: a new KernelIR)."""
    for a, b in merges:
        pos = _position(kir, a, b)
        if pos is None:
            raise CompileError(f"kfuse: CPU schedule merges i{a} and i{b}, which kernel {kir.name} cannot")

        def fix(s):
            k = pos.get(("in" if isinstance(s, K.Load) else "out", s.buf)) \
                if isinstance(s, (K.Load, K.Store)) else None
            return s if k is None else dataclasses.replace(s, index=s.index[:k + 1] + s.index[k + 2:])
        phases = tuple(dataclasses.replace(ph, pre=tuple(map(fix, ph.pre)), body=tuple(map(fix, ph.body)))
                       for ph in kir.phases)
        domain = list(kir.domain)
        domain[a], domain[b] = K.mul(domain[a], domain[b]), K.lit(1)

        def shrink(side, bufs):
            return tuple(_shrunk(bf, pos[(side, j)]) if (side, j) in pos else bf for j, bf in enumerate(bufs))
        kir = dataclasses.replace(kir, phases=phases, domain=tuple(domain),
                                  inputs=shrink("in", kir.inputs), outputs=shrink("out", kir.outputs))
    return kir


def _shrunk(bf: K.Buffer, k: int) -> K.Buffer:
    shape = bf.shape[:k] + (bf.shape[k] * bf.shape[k + 1],) + bf.shape[k + 2:] if len(bf.shape) == bf.ndim \
        else bf.shape
    return dataclasses.replace(bf, ndim=bf.ndim - 1, shape=shape)


def groups(kir: K.KernelIR, merges: tuple, perm: tuple = ()) -> tuple:
    """For the runtime: ``(inputs, outputs)``, each a tuple per buffer of how many of its dims
    each dim it is passed with spans (``()``: passed as it is)."""
    kir = permuted_stores(kir, perm)
    ins = [[1] * b.ndim for b in kir.inputs]
    outs = [[1] * b.ndim for b in kir.outputs]
    for a, b in merges:
        for (side, buf), k in (_position(kir, a, b) or {}).items():
            g = (ins if side == "in" else outs)[buf]
            g[k:k + 2] = [g[k] + g[k + 1]]
        kir = apply(kir, ((a, b),))
    def spans(gs):
        return tuple(tuple(g) if any(x > 1 for x in g) else () for g in gs)
    return spans(ins), spans(outs)


def collapse(a, spans: tuple):
    """Array ``a`` with its dims joined as ``spans`` says (a view; ``()``: ``a`` itself)."""
    if not spans:
        return a
    shape, k = [], 0
    for g in spans:
        shape.append(math.prod(a.shape[k:k + g]))
        k += g
    return a.reshape(shape)


def collapse_meta(a, spans: tuple):
    """Shape and strides of ``a`` (anything with ``shape`` and ``strides``) joined as ``spans``
    says (``()``: ``a`` itself)."""
    if not spans:
        return a
    shape, strides, k = [], [], 0
    for g in spans:
        shape.append(math.prod(a.shape[k:k + g]))
        strides.append(a.strides[k + g - 1])
        k += g
    return Strided(tuple(shape), tuple(strides))


@dataclasses.dataclass(frozen=True)
class Strided:
    """An array's shape and strides only (what the schedule choice reads)."""
    shape: tuple
    strides: tuple
