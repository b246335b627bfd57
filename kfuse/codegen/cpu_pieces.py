"""The ``pieces`` split of a CPU kernel's innermost loop (:mod:`kfuse.codegen.cpu_schedule`).

A concatenation (PAD pieces: ``np.concatenate((-x[..., h:], x[..., :h]), -1)``), a reshape's
unravel or a broadcast through a reshape (GroupNorm's per-channel scale read along a
``(C/G)*H*W`` row) index the innermost loop variable ``i`` through ``(A + i) // S`` and
``(A + i) % S`` (``A`` free of ``i``, ``S`` a run-time size): integer divisions per element, which
also keep LLVM from vectorising the loop. Both are piecewise affine in ``i``: between two
multiples of ``S`` the quotient ``q`` is constant and the remainder is ``r + j``. The split loop
walks the row in pieces: at a piece's start ``lo`` it computes each pattern's ``q`` and ``r``
once; the piece ends where the first quotient changes (``lo + S - r``); inside it every index
affine in ``i`` with a unit step reads ``base + j``, its base computed once per piece
(``max(base, 0)``: index values are never negative, and the bound lets LLVM drop Numba's
negative-index fix-up), so the loads and stores are unit-stride and the loop vectorises. The statements, their order and their
values are the rows order's: only index arithmetic moves out of the loop.
"""
from __future__ import annotations

from . import kernel_ir as K

MIN_PIECE = 8       # a pattern splits the loop only where its divisor is at least this (run-time value)


def _has_ival(e) -> bool:
    return isinstance(e, K.IVal) or (isinstance(e, K.IBin) and (_has_ival(e.lhs) or _has_ival(e.rhs)))


def affine(e, var: str):
    """``e`` as ``rest + coef * var`` (``coef`` an int, ``rest`` free of ``var``), or None."""
    if _has_ival(e):
        return None
    if isinstance(e, K.IVar) and e.name == var:
        return 1, K.lit(0)
    if not isinstance(e, K.IBin) or var not in K.expr_vars(e):
        return 0, e
    if e.op in ("+", "-"):
        a, b = affine(e.lhs, var), affine(e.rhs, var)
        if a is None or b is None:
            return None
        if e.op == "+":
            return a[0] + b[0], K.add(a[1], b[1])
        return a[0] - b[0], K.sub(a[1], b[1])
    if e.op == "*":
        for x, y in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            if isinstance(y, K.ILit):
                a = affine(x, var)
                return None if a is None else (a[0] * y.value, K.mul(a[1], y))
    return None


def _exprs(kir: K.KernelIR, indices: dict, stmts) -> list:
    out = []
    for s in stmts:
        if isinstance(s, K.Load):
            out += list(indices.get(s.dst, s.index))
        elif isinstance(s, (K.Index, K.Store)):
            out += list(K.stmt_index(s))
    return out


def patterns(kir: K.KernelIR, dim: int, indices: dict) -> list:
    """The distinct ``(A + i) // S`` / ``% S`` patterns ``(A + i, S)`` over loop variable
    ``i<dim>`` in the kernel's indices (``indices``: load dst -> the index it reads, where a
    schedule collapses its buffer), in order of appearance; ``S`` is over sizes and literals."""
    var = f"i{dim}"
    found: dict = {}

    def walk(e):
        if not isinstance(e, K.IBin):
            return
        if e.op in ("//", "%") and var in K.expr_vars(e.lhs) and not _has_ival(e.rhs) \
                and all(v.startswith("s") for v in K.expr_vars(e.rhs)):
            a = affine(e.lhs, var)
            if a is not None and a[0] == 1:
                found.setdefault((e.lhs, e.rhs), None)
                return
        walk(e.lhs)
        walk(e.rhs)
    for ph in kir.phases:
        for e in _exprs(kir, indices, ph.pre + ph.body):
            walk(e)
    return list(found)


def choose(kir: K.KernelIR, dim: int, indices: dict, sizes: dict) -> tuple[tuple, tuple]:
    """(the patterns worth splitting the loop by at these sizes, those whose divisor is 1 at
    them), as positions in :func:`patterns`. A divisor of 1 (a one-element piece: ``np.roll(x,
    1, -1)``'s wrapped element, ``x[:, :1]`` concatenated) makes ``(A + i) // 1`` affine and
    ``(A + i) % 1`` zero: no division, no piece boundary (the schedule, chosen per size, holds
    which patterns it assumed so)."""
    divisors = [K.eval_expr(s, sizes) for _, s in patterns(kir, dim, indices)]
    return (tuple(k for k, d in enumerate(divisors) if d >= MIN_PIECE),
            tuple(k for k, d in enumerate(divisors) if d == 1))


class Piece:
    """One split loop being rendered: :meth:`index` renders an index inside it (collecting the
    per-piece values it needs), :meth:`head` and :meth:`tail` the loop around the body."""

    def __init__(self, dim: int, chosen: list, units: list = ()):
        self.dim = dim
        self.var = f"i{dim}"
        self.j = K.IVar(f"pj{dim}")
        self.lo = K.IVar(f"plo{dim}")
        self.pats = {p: k for k, p in enumerate(chosen)}
        self.units = set(units)     # patterns whose divisor is 1 (choose): quotient affine, remainder 0
        self.bases: dict = {}       # rest expression -> base variable name
        self.used = False           # whether a rendered index read a pattern
        self.rows: dict = {}        # interleaved loads' row views (cpu_interleave), one piece only

    def _sub(self, e):
        """``e`` with each chosen pattern replaced by its per-piece form and ``i`` by ``lo + j``."""
        if isinstance(e, K.IVar) and e.name == self.var:
            return K.add(self.lo, self.j)
        if not isinstance(e, K.IBin):
            return e
        if e.op in ("//", "%") and (e.lhs, e.rhs) in self.units:
            return self._sub(e.lhs) if e.op == "//" else K.lit(0)
        k = self.pats.get((e.lhs, e.rhs)) if e.op in ("//", "%") else None
        self.used |= k is not None
        if k is not None and e.op == "//":
            return K.IVar(f"pq{k}")
        if k is not None and e.op == "%":
            return K.add(K.IVar(f"pr{k}"), self.j)
        return K.IBin(e.op, self._sub(e.lhs), self._sub(e.rhs))

    def expr(self, e) -> str:
        """One index expression's text inside the piece loop."""
        e = self._sub(e)
        a = affine(e, self.j.name)
        # unit steps only: a strided read from a hoisted base becomes a gather (AVX-512), slower
        # than the scalar loads (x[:, ::2] * x[:, 1::2]: 0.29 ms as it was, 1.7 ms from a base)
        if a is None or a[0] != 1 or (isinstance(a[1], K.ILit) and a[1].value == 0):
            return str(e)
        base = self.bases.setdefault(a[1], f"pb{len(self.bases)}")
        return f"{base} + {self.j}"

    def head(self, extent) -> list[str]:
        """The lines that open the loop (each one level deeper than the last's start)."""
        lo, n = self.lo, extent
        lines = [f"{lo} = 0", f"while {lo} < {n}:"]
        inner = [f"phi{self.dim} = {n}"]
        for (lhs, s), k in self.pats.items():
            a = str(_at(lhs, self.var, lo))
            inner += [f"pq{k} = {a} // {s}", f"pr{k} = max({a} - pq{k} * {s}, 0)",
                      f"phi{self.dim} = min(phi{self.dim}, {lo} + {s} - pr{k})"]
        inner += [f"{b} = max({rest}, 0)" for rest, b in self.bases.items()]
        inner += [f"for {self.j} in range(phi{self.dim} - {lo}):", f"    {self.var} = {lo} + {self.j}"]
        return lines + ["    " + x for x in inner]

    def whole(self, extent) -> list[str]:
        """The lines that open the loop as one piece (no pattern: only the bases hoisted)."""
        return [f"{self.lo} = 0"] + [f"{b} = max({rest}, 0)" for rest, b in self.bases.items()] + \
            [f"prw{g} = {view}" for g, view in sorted(self.rows.items())] + \
            [f"for {self.j} in range({extent}):", f"    {self.var} = {self.j}"]

    def tail(self) -> str:
        """The last line of the while loop's body (at the piece loop's level)."""
        return f"{self.lo} = phi{self.dim}"


def _at(e, var: str, value):
    """``e`` with loop variable ``var`` replaced by the expression ``value``."""
    if isinstance(e, K.IVar) and e.name == var:
        return value
    if isinstance(e, K.IBin):
        return K.IBin(e.op, _at(e.lhs, var, value), _at(e.rhs, var, value))
    return e

