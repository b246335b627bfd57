"""An elementwise kernel over its domain flattened to one dim: a pure rewrite of its IR, chosen per
call from the arrays' strides (``runtime.cuda``'s launcher renders it where its own variant would
read element by element).

A kernel over ``(R, C)`` with ``C`` not a whole number of 16-byte vectors (``np.tanh(x + b)`` over
4095x4097 float32, an RGB image's last dim of 3) reads and writes every element on its own: its
rows start at addresses no vector fits. Where its full-size operands are contiguous over the whole
domain, the domain is one run of ``N = R * C`` elements: with the loop variable ``L`` over it, such
an operand's ``(i0, i1)`` is ``(L // C, L % C)``, which ``codegen.reshape_index`` reads as ``L``
itself, and the kernel takes vector units along ``L`` (the last few of ``N`` one by one, the
emitter's tail). An operand broadcast along a dim (a bias over columns) reads ``b[L % C]`` lane
by lane. Nothing else changes: the same buffers, size parameters and strides.
"""
from __future__ import annotations

import dataclasses

from ..fusion.kinds import GroupKind
from . import kernel_ir as K
from .reshape_index import collapsed_index

_PLAIN = (K.Load, K.Store, K.Const, K.Op)


def flatten_domain(kir: K.KernelIR, in_strides: list, out_strides: list, env: dict) -> K.KernelIR | None:
    """``kir`` over its loop dims flattened into ``i0`` (module docstring), its contiguous accesses
    read at ``i0``; strides per buffer in elements, ``env`` the size values. None where the kernel
    is not a plain elementwise one over two or more loop dims (gathers, scatters, in-place writes,
    index tests and random bits keep their own indices)."""
    if kir.kind != GroupKind.ELEMENTWISE or kir.in_place or kir.init_from or len(kir.phases) != 1:
        return None
    ph = kir.phases[0]
    dims = kir.loop_dims(range(len(kir.domain)))
    if ph.accs or ph.body or len(dims) < 2 or not all(isinstance(s, _PLAIN) for s in ph.pre):
        return None
    if any(isinstance(s, (K.Load, K.Store)) and K.gathers(s.index) for s in ph.pre):
        return None
    if any(isinstance(s, K.Store) and s.combine for s in ph.pre):
        return None
    L = K.IVar("i0")
    sub, span = {}, K.lit(1)
    for pos in range(len(dims) - 1, -1, -1):
        d = dims[pos]
        e = K.floordiv(L, span)
        sub[f"i{d}"] = K.mod(e, kir.domain[d]) if pos else e
        span = K.mul(span, kir.domain[d])
    sub.update({f"i{d}": K.lit(0) for d in range(len(kir.domain)) if d not in dims})

    def access(s):
        if not isinstance(s, (K.Load, K.Store)):
            return s
        index = tuple(_substituted(e, sub) for e in s.index)
        st = in_strides[s.buf] if isinstance(s, K.Load) else out_strides[s.buf]
        return dataclasses.replace(s, index=collapsed_index(index, st, env) or index)

    return dataclasses.replace(kir, domain=(span,), outer=(0,), inner=(),
                               phases=(K.Phase(tuple(map(access, ph.pre))),))


def _substituted(e, sub: dict):
    if isinstance(e, K.IVar):
        return sub.get(e.name, e)
    if isinstance(e, K.IBin):
        return K.IBin(e.op, _substituted(e.lhs, sub), _substituted(e.rhs, sub))
    return e
