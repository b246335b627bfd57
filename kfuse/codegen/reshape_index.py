"""Reshaped reads as the plain reads they are over contiguous memory: a pure rewrite of a kernel's
load indices, chosen per call from the strides of the arrays (``runtime.cuda``'s launcher picks
it with its variant, memoised by stride pattern).

Lowering reads a reshaped input through its own dims: a merged run of them is one linear index
``L`` taken apart again, ``(L // (b * c), (L // c) % b, L % c)`` (GroupNorm's
``x.reshape(n, groups, -1)`` over NCHW). Where the array's strides make that run contiguous (each
stride the next one's times the next extent), the address is ``L`` times the run's last stride, so
the load reads ``(0, 0, L)`` instead: the vector analysis then sees an access contiguous along the
loop (vector loads, rows held in registers) where the decomposition read element by element,
through divisions. Nothing else changes: the same buffers, shapes and parameters.
"""
from __future__ import annotations

import dataclasses

from . import kernel_ir as K


def collapse_contiguous_reshapes(kir: K.KernelIR, strides: list, env: dict) -> K.KernelIR:
    """``kir`` with every decomposed linear index of a load over a run of input dims the input's
    ``strides`` (per input, in elements) make contiguous read as that linear index; ``env``: the
    size parameters' values. ``kir`` itself where no load has one."""
    def rewrite(s):
        if not isinstance(s, K.Load):
            return s
        index = collapsed_index(s.index, strides[s.buf], env)
        return s if index is None else dataclasses.replace(s, index=index)

    phases = tuple(K.Phase(tuple(map(rewrite, ph.pre)), ph.accs, tuple(map(rewrite, ph.body))) for ph in kir.phases)
    if phases == kir.phases:
        return kir
    return dataclasses.replace(kir, phases=phases)


def collapsed_index(index: tuple, st: tuple, env: dict) -> tuple | None:
    """``index`` with its contiguous decompositions collapsed (module docstring), None if none."""
    out, changed = list(index), False
    b = len(index) - 1
    while b > 0:
        run = _run(index, b, st, env)
        if run is None:
            b -= 1
            continue
        linear, dims = run
        for d in dims:
            out[d] = K.lit(0)
        out[b], changed = linear, True
        b = min(dims) - 1
    return tuple(out) if changed else None


def _run(index: tuple, b: int, st: tuple, env: dict):
    """``(L, the other dims of the run)`` where ``index[b]`` is ``L % z`` ending a decomposition of
    ``L`` whose first component is ``L // P`` (no modulus: the reshape's leading dim), every
    divisor the product of the extents after it, and the strides contiguous; else None."""
    last = index[b]
    if not (isinstance(last, K.IBin) and last.op == "%"):
        return None
    linear, extent = last.lhs, _value(last.rhs, env)
    if extent is None or st[b] == 0:
        return None
    dims, span = [], extent          # span: the product of the extents after dim d
    for d in range(b - 1, -1, -1):
        e = index[d]
        if isinstance(e, K.ILit) and e.value == 0:
            continue                # a dim of extent 1 between the run's dims
        if isinstance(e, K.IBin) and e.op == "%" and isinstance(e.lhs, K.IBin) and e.lhs.op == "//":
            div, z, terminal = e.lhs, _value(e.rhs, env), False
        elif isinstance(e, K.IBin) and e.op == "//":
            div, z, terminal = e, None, True
        else:
            return None
        if div.lhs != linear or _value(div.rhs, env) != span or st[d] != st[b] * span:
            return None
        dims.append(d)
        if terminal:
            return linear, dims
        if z is None:
            return None
        span *= z
    return None


def _value(e, env: dict) -> int | None:
    """The value of a size expression (sizes and literals only), None if it reads a loop variable."""
    if any(v not in env for v in K.expr_vars(e)):
        return None
    return K.eval_expr(e, env)
