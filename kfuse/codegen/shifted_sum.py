"""A sum of row values shifted by a row-level value, in the pass before that value is known: a
pure rewrite of a reduce kernel's phases, for schedules that read their rows from memory again in
every pass (as ``codegen.variance``'s and ``codegen.online_softmax``'s).

A label-smoothed cross-entropy sums a row's log-probabilities ``x - lse``, where ``lse`` (the
row's log-sum-exp) is itself a reduction of the row: written as NumPy computes it, a second pass
over the row after the first. With ``n`` the row's length,

    sum(x - c) = S - n c,    sum(x + c) = S + n c,    sum(c - x) = n c - S,    S = sum(x),

and ``S`` needs nothing of ``c``: its accumulator joins an earlier pass (``phase_merge``) and the
second pass goes. ``S`` is a float64 sum of float32 values, so its error is ``eps64 * sum|x|``;
NumPy's rounds every term ``x - c`` to float32 (``eps32 * sum|x - c|``), larger unless every term
is zero, where both are exactly zero (``n c`` is exact in float64 for a float32 ``c``). Non-finite
values give NumPy's results (an infinite ``c`` with finite ``x``: an infinite sum of its sign; an
infinity on both sides or a NaN: NaN), and an empty row sums to 0. Only float32 terms and ``c``
with a float64 accumulator and no mask are rewritten, where the shift is the term's only use and
nothing else in the pass needs a value of the row level; everything else is left as it is.
"""
from __future__ import annotations

from . import kernel_ir as K

F32, F64 = "float32", "float64"


def shifted_sums(kir: K.KernelIR) -> K.KernelIR:
    """``kir`` with every rewritable shifted sum's pass free of its shift (module docstring)."""
    return K.phases_fixpoint(kir, _fold_one)


def _fold_one(kir: K.KernelIR):
    for b, ph in enumerate(kir.phases):
        if not ph.accs or any(isinstance(s, (K.Store, K.Scan)) for s in ph.body):
            continue
        defs = {s.dst: s for s in ph.body if hasattr(s, "dst")}
        for acc in ph.accs:
            found = _shift(acc, defs, ph)
            if found is not None:
                return _rewrite(kir, b, acc, *found)
    return None


def _shift(acc: K.Acc, defs: dict, ph: K.Phase):
    """``(the shift statement, x, c, sign of S)`` where ``acc`` sums ``x - c``, ``x + c`` or
    ``c - x`` (``x`` a body value, ``c`` one of the row level) read by nothing else; else None."""
    if acc.kind != "sum" or acc.mask is not None or acc.acc_dtype != F64 or acc.src_dtype != F32:
        return None
    d = defs.get(acc.src)
    if not (isinstance(d, K.Op) and d.op in ("subtract", "add") and d.dtype == F32 and d.arg_dtypes == (F32, F32)):
        return None
    a0, a1 = d.args
    if a0 in defs and a1 not in defs:
        x, c, sign = a0, a1, 1
    elif a1 in defs and a0 not in defs:
        x, c, sign = a1, a0, 1 if d.op == "add" else -1
    else:
        return None
    readers = [s for s in ph.body if d.dst in K.stmt_reads(s)] + [a for a in ph.accs if a is not acc and d.dst in (a.src, a.mask)]
    rest = [s for s in ph.body if s is not d]
    reads = {r for s in rest for r in K.stmt_reads(s)} | {r for a in ph.accs if a is not acc for r in (a.src, a.mask)}
    if readers or c in reads | K.dependencies(ph.pre, reads):
        return None         # (the shift read elsewhere: the pass needs it anyway)
    return d, x, c, sign


def _rewrite(kir: K.KernelIR, b: int, acc: K.Acc, d: K.Op, x: str, c: str, sign: int):
    ph = kir.phases[b]
    n = f"{acc.dst}_h"          # names derived from the rewritten accumulator's: unique in the kernel
    body = tuple(s for s in ph.body if s is not d) + (K.Op(f"{n}x", "cast", F64, (x,), (F32,)),)
    accs = tuple(K.Acc(f"{n}s", "sum", F64, F64, f"{n}x", F64, 0.0) if a is acc else a for a in ph.accs)
    # the pass keeps the statements before its loop that its body reads; the others (the shift
    # among them, usually) move after it, with the finish
    needed = K.dependencies(ph.pre, {r for s in body for r in K.stmt_reads(s)} | {a.mask for a in accs if a.mask})
    keep = tuple(s for s in ph.pre if getattr(s, "dst", None) in needed)
    later = tuple(s for s in ph.pre if getattr(s, "dst", None) not in needed)
    count = K.lit(1)
    for dim in kir.inner:
        count = K.mul(count, kir.domain[dim])
    finish = (K.Index(f"{n}n", count),
              K.Op(f"{n}n64", "cast", F64, (f"{n}n",), ("int64",)),
              K.Op(f"{n}c", "cast", F64, (c,), (F32,)),
              K.Op(f"{n}nc0", "multiply", F64, (f"{n}n64", f"{n}c"), (F64, F64)),
              K.Const(f"{n}z", F64, 0.0),
              K.Op(f"{n}e", "equal", "bool", (f"{n}n64", f"{n}z"), (F64, F64)),
              K.Op(f"{n}nc", "where", F64, (f"{n}e", f"{n}z", f"{n}nc0"), ("bool", F64, F64)),   # an empty row: 0
              K.Op(f"{n}t", "subtract" if sign > 0 and d.op == "subtract" else "add" if sign > 0 else "subtract",
                   F64, (f"{n}s", f"{n}nc") if sign > 0 else (f"{n}nc", f"{n}s"), (F64, F64)),
              K.Op(acc.dst, "cast", acc.dtype, (f"{n}t",), (F64,)))
    phases = list(kir.phases)
    phases[b] = K.Phase(keep, accs, body)
    phases.insert(b + 1, K.Phase(later + finish, (), ()))
    return tuple(phases)

