"""The memory layout NumPy gives an elementwise result, for the CPU's elementwise kernels.

NumPy allocates a ufunc's output in its iterator's ``K`` order: the output's axes are laid out as
the operands' strides order them where the operands agree (``np.exp(x.T)`` and ``x.T * s`` are
F-contiguous, ``np.transpose(x, (0, 2, 1, 3)) * 0.5`` is laid out as ``x``), in C order where
they disagree. :func:`k_order` asks NumPy's own iterator (``np.nditer`` allocating an output with
``order="K"``) for that order, given each operand as the kernel reads it: its strides along the
kernel's loop dims (a load whose index is affine in the loop variables: a permutation, a
broadcast, a slice's step); gathered, collapsed or otherwise computed reads do not vote, as a
copy would not in NumPy. The result is a permutation of the loop dims, outermost first; the runtime
allocates the kernel's outputs in it (:func:`allocate`) and passes them to the kernel transposed
into the loop order (C-contiguous then), which it stores to at permuted indices (Numba then
knows the stores are unit-stride: a permuted view is an any-layout array to it, whose stores it
leaves scalar; an output allocated in C order still gets the right values, through strides),
and the rows order nests its loops in that order.
"""
from __future__ import annotations

import functools

import numpy as np

from . import kernel_ir as K
from .cpu_pieces import affine


def _load_strides(s: K.Load, a, ndim: int) -> tuple | None:
    """The byte stride of ``a`` (read by load ``s``) along each of the kernel's ``ndim`` loop
    dims, or None where an index is not affine in the loop variables."""
    out = [0] * ndim
    for k, e in enumerate(s.index):
        if a.shape[k] == 1:
            continue
        rest = e
        for d in range(ndim):
            got = affine(rest, f"i{d}")
            if got is None:
                return None
            out[d] += got[0] * a.strides[k]
            rest = got[1]
        if any(v.startswith("i") for v in K.expr_vars(rest)):
            return None
    return tuple(out)


def k_order(kir: K.KernelIR, arrays, flat=()) -> tuple:
    """NumPy's ``K``-order axis order for the output of elementwise kernel ``kir`` called on
    ``arrays`` (its inputs; ``flat``: buffers passed collapsed, which do not vote): the loop dims
    from the output's slowest to its fastest, ``()`` for C order."""
    ndim = len(kir.domain)
    ext = [kir.extent(d) for d in range(ndim)]
    if ndim < 2 or sum(e > 1 for e in ext) < 2:
        return ()
    skip = {b for b, _ in flat}
    votes, seen = [], set()
    for s in kir.phases[0].pre:
        if not isinstance(s, K.Load) or s.buf in skip or K.gathers(s.index) or kir.inputs[s.buf].ndim == 0:
            continue
        st = _load_strides(s, arrays[s.buf], ndim)
        if st is None or st in seen or not any(st):
            continue
        seen.add(st)
        votes.append(st)
    if all(_c_ordered(st, ext) for st in votes):
        return ()                       # (every operand agrees with C order: the iterator keeps it)
    # only the strides matter: stand-ins of at most 2 per dim, never read
    views = [np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), [min(e, 2) for e in ext], st) for st in votes]
    it = np.nditer(views + [None], flags=["zerosize_ok"], order="K",
                   op_flags=[["readonly"]] * len(views) + [["writeonly", "allocate"]],
                   op_dtypes=[np.uint8] * (len(views) + 1))
    out = it.operands[-1]
    perm = tuple(sorted(range(ndim), key=lambda d: (-abs(out.strides[d]) if ext[d] > 1 else 0, d)))
    loops = [d for d in perm if ext[d] > 1]
    return () if loops == sorted(loops) else perm


def _c_ordered(strides, ext) -> bool:
    """Whether an operand's strides fall strictly from its outer loop dims to its inner ones
    (dims it does not move along, or of one element, left out): NumPy's K order of operands
    that all are is C order, without asking the iterator (GELU-bias at a new size: 29 -> 17 us)."""
    prev = None
    for s, e in zip(strides, ext):
        if e <= 1 or s == 0:
            continue
        if s < 0 or (prev is not None and s >= prev):
            return False
        prev = s
    return True


def allocate(shape, dtype, perm: tuple) -> np.ndarray:
    """An uninitialised array of ``shape`` laid out in ``perm`` (outermost dim first)."""
    if not perm:
        return np.empty(shape, dtype)
    return np.empty([shape[d] for d in perm], dtype).transpose(_inverse(perm))


@functools.lru_cache(maxsize=256)
def _inverse(perm: tuple) -> tuple:
    """The permutation undoing ``perm`` (asked at every call of a permuted kernel: ``np.argsort``
    took 2.4 of the 2.7 us an output's allocation cost)."""
    inv = [0] * len(perm)
    for i, d in enumerate(perm):
        inv[d] = i
    return tuple(inv)
