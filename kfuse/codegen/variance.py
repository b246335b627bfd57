"""One pass for a variance's two: a pure rewrite of a reduce kernel's phases, for schedules that
read their rows from memory again in every pass (a column reduction across the grid, rows too long
to hold on chip).

NumPy's ``var`` (and every ``mean((x - mean(x)) ** 2)`` written out) is two passes: the sum ``S``
of ``e``, then the sum of ``(e - m) ** 2`` with ``m`` computed from ``S``. With ``K`` the row's
first ``e`` and ``t = e - K``, the second sum is exactly

    sum((e - m) ** 2) = Q - 2 (m - K) P + n (m - K) ** 2,    P = sum(t), Q = sum(t * t),

so ``P`` and ``Q`` join ``S``'s pass and the second pass goes (the shifted-data algorithm: in
float64, ``e`` float32, the cancellation is ``eps64 * ((m - K) / std) ** 2``, far inside float32's
tolerance unless a row's first element lies millions of deviations from its mean). NumPy rounds
``e - m`` and its square to float32 before summing; this sums them unrounded, a difference inside
the float32 reduction tolerance (``kfuse/testing.py``). Only float32 ``e`` with float64
accumulators is rewritten; everything else is left as it is.
"""
from __future__ import annotations

from . import kernel_ir as K

F64 = "float64"


def one_pass_variance(kir: K.KernelIR) -> K.KernelIR:
    """``kir`` with every rewritable second pass folded into its first (module docstring)."""
    return K.phases_fixpoint(kir, _fold_one)


def _defs(stmts) -> dict:
    return {s.dst: s for s in stmts if hasattr(s, "dst")}


def _square_of_deviation(ph: K.Phase):
    """``(e, m)`` where ``ph``'s one accumulator sums ``(e - m) ** 2`` (float32 values, float64
    accumulator) over a body computing nothing else; else None."""
    if len(ph.accs) != 1 or any(isinstance(s, (K.Store, K.Scan)) for s in ph.body):
        return None
    a = ph.accs[0]
    defs = _defs(ph.body)
    sq = defs.get(a.src)
    if a.kind != "sum" or a.acc_dtype != F64 or a.src_dtype != "float32" or not isinstance(sq, K.Op):
        return None
    if not ((sq.op == "square" and len(sq.args) == 1) or (sq.op == "multiply" and sq.args[0] == sq.args[1])):
        return None
    d = defs.get(sq.args[0])
    if not (isinstance(d, K.Op) and d.op == "subtract" and d.dtype == "float32" and d.arg_dtypes == ("float32",) * 2):
        return None
    e, m = d.args
    return (e, m) if e in defs and m not in defs else None


def _fold_one(kir: K.KernelIR):
    inner_vars = {f"i{d}" for d in kir.inner}
    for b, ph in enumerate(kir.phases):
        found = _square_of_deviation(ph)
        if found is None:
            continue
        e, m = found
        key = K.value_keys(ph.body).get(e)      # the same expression read again: the same value
        if key is None:
            continue
        for a in range(b):
            pa = kir.phases[a]
            keys_a = K.value_keys(pa.body)
            src = next((x.src for x in pa.accs if x.kind == "sum" and x.acc_dtype == F64
                        and keys_a.get(x.src) == key), None)
            if src is None or _defs(pa.body)[src].dtype != "float32":
                continue
            return _rewrite(kir, a, b, src, m, inner_vars)
    return None


def _rewrite(kir, a: int, b: int, e: str, m: str, inner_vars: set) -> tuple:
    pa, pb = kir.phases[a], kir.phases[b]
    acc = pb.accs[0]
    n = f"{acc.dst}_w"          # names derived from the folded accumulator's: unique in the kernel
    first = _first_value(pa.body, e, inner_vars, f"{n}f")
    k64, t, t2, p, q = f"{n}k", f"{n}t", f"{n}t2", f"{n}p", f"{n}q"
    pre_a = pa.pre + tuple(first) + (K.Op(k64, "cast", F64, (first[-1].dst,), ("float32",)),)
    body_a = pa.body + (K.Op(f"{n}c", "cast", F64, (e,), ("float32",)),
                        K.Op(t, "subtract", F64, (f"{n}c", k64), (F64, F64)),
                        K.Op(t2, "multiply", F64, (t, t), (F64, F64)))
    accs_a = pa.accs + (K.Acc(p, "sum", F64, F64, t, F64, 0.0), K.Acc(q, "sum", F64, F64, t2, F64, 0.0))
    count = K.lit(1)
    for d in kir.inner:
        count = K.mul(count, kir.domain[d])
    m_dtype = _dtype_of(kir, m)
    finish = [K.Op(f"{n}m", "cast", F64, (m,), (m_dtype,)),
              K.Op(f"{n}mk", "subtract", F64, (f"{n}m", k64), (F64, F64)),
              K.Index(f"{n}n", count),
              K.Op(f"{n}n64", "cast", F64, (f"{n}n",), ("int64",)),
              K.Const(f"{n}2", F64, 2.0),
              K.Op(f"{n}a", "multiply", F64, (f"{n}2", f"{n}mk"), (F64, F64)),
              K.Op(f"{n}b", "multiply", F64, (f"{n}a", p), (F64, F64)),
              K.Op(f"{n}c2", "subtract", F64, (q, f"{n}b"), (F64, F64)),
              K.Op(f"{n}d", "multiply", F64, (f"{n}mk", f"{n}mk"), (F64, F64)),
              K.Op(f"{n}e", "multiply", F64, (f"{n}n64", f"{n}d"), (F64, F64)),
              K.Op(f"{n}s", "add", F64, (f"{n}c2", f"{n}e"), (F64, F64)),
              K.Op(acc.dst, "cast", acc.dtype, (f"{n}s",), (F64,))]
    phases = list(kir.phases)
    phases[a] = K.Phase(pre_a, accs_a, body_a)
    phases[b] = K.Phase(pb.pre + tuple(finish), (), ())
    return tuple(phases)


def _first_value(body, var: str, inner_vars: set, prefix: str) -> list:
    """Statements computing ``var`` at the first inner index (every inner loop variable 0), at
    outer level, under fresh names starting with ``prefix``; the last one defines the value."""
    defs = _defs(body)
    names, out = {}, []

    def sub(e):
        if isinstance(e, K.IVar) and e.name in inner_vars:
            return K.lit(0)
        if isinstance(e, K.IBin):
            return K.IBin(e.op, sub(e.lhs), sub(e.rhs))
        return e

    def visit(v):
        if v in names or v not in defs:
            return names.get(v, v)
        s = defs[v]
        for x in getattr(s, "args", ()):
            visit(x)
        new = f"{prefix}{len(out)}"
        if isinstance(s, K.Load):
            out.append(K.Load(new, s.dtype, s.buf, tuple(sub(e) for e in s.index)))
        elif isinstance(s, K.Const):
            out.append(K.Const(new, s.dtype, s.value))
        else:
            out.append(K.Op(new, s.op, s.dtype, tuple(names.get(x, x) for x in s.args), s.arg_dtypes))
        names[v] = new
        return new
    visit(var)
    return out


def _dtype_of(kir: K.KernelIR, var: str) -> str:
    for ph in kir.phases:
        for s in ph.pre + ph.body:
            if getattr(s, "dst", None) == var:
                return s.dtype
        for acc in ph.accs:
            if acc.dst == var:
                return acc.dtype
    raise KeyError(var)
