"""Decompositions: NumPy's meaning of an op written once, as core ops, for every backend, so that
no emitter writes its own version of a rule.

* :func:`decompose` rewrites a KernelIR's statements (a pure pass; the result prints with
  ``as_text``). Its rule: a ``power`` with a constant exponent becomes products of the base where
  ``ir.power.product_exponent`` (the policy ``fusion.simplify`` follows) says they are NumPy's
  bits (float ``x ** 2`` is ``x * x``; float ``x ** 3`` stays a power: NumPy calls libm's ``pow``).
* :func:`expand` gives an op (on argument expressions) as a list of core statements, and
  :func:`inline` renders that list as one nested expression through an emitter's own op and
  literal renderers. ``EXPANSIONS`` holds the rules; an emitter expands every op it finds there
  and does not render natively (each renderer's ``native`` set), wherever the op stands: a phase
  statement, a scan's step, a ``ufunc.at`` combine. Rules: ``heaviside`` (npy_heaviside: NaN for
  NaN, the second operand at +-0), ``sign`` (+0.0 for -0.0, NaN for NaN) and comparisons of int64 with uint64 (exact, as NumPy: a
  negative signed operand is below every unsigned one, else both compare as uint64).
"""
from __future__ import annotations

import dataclasses

from ..ir.power import product_exponent
from . import kernel_ir as K


def constants(kir: K.KernelIR) -> dict[str, object]:
    """Each constant variable of the kernel (SSA: one name, one value) -> its value."""
    return {s.dst: s.value for ph in kir.phases for s in ph.pre + ph.body if isinstance(s, K.Const)}


def power_products(st: K.Op, consts: dict) -> list | None:
    """``x ** c`` (``c`` a constant) as products of ``x`` where the policy allows, else None."""
    if st.op != "power" or st.args[1] not in consts:
        return None
    k = product_exponent(consts[st.args[1]], st.dtype)
    if k is None:
        return None
    x, dt = st.args[0], st.dtype
    if k == 1:
        return [K.Op(st.dst, "positive", dt, (x,), (dt,))]
    if k == 2:
        return [K.Op(st.dst, "multiply", dt, (x, x), (dt, dt))]
    sq = f"{st.dst}_sq"
    return [K.Op(sq, "multiply", dt, (x, x), (dt, dt)),
            K.Op(st.dst, "multiply", dt, (sq, x if k == 3 else sq), (dt, dt))]


RULES = (power_products,)


def _heaviside(dt: str, args, adts) -> list:
    x, h0 = args
    return [K.Const("%z", dt, 0.0), K.Const("%one", dt, 1.0), K.Const("%nan", dt, float("nan")),
            K.Op("%n", "isnan", "bool", (x,), (dt,)), K.Op("%e", "equal", "bool", (x, "%z"), (dt, dt)),
            K.Op("%l", "less", "bool", (x, "%z"), (dt, dt)), K.Op("%s", "where", dt, ("%l", "%z", "%one"), ("bool", dt, dt)),
            K.Op("%t", "where", dt, ("%e", h0, "%s"), ("bool", dt, dt)),
            K.Op("%r", "where", dt, ("%n", "%nan", "%t"), ("bool", dt, dt))]


def _mixed_compare(op: str):
    def rule(dt: str, args, adts) -> list | None:
        mixed = K.mixed_sign_compare(op, args, adts)
        if mixed is None:
            return None
        signed, when_neg = mixed
        s = 0 if str(adts[0]).startswith("int") else 1
        st, ut = str(adts[s]), str(adts[1 - s])
        u = [f"%u{k}" if k == s else a for k, a in enumerate(args)]
        return [K.Const("%z", st, 0), K.Const("%w", "bool", when_neg),
                K.Op("%neg", "less", "bool", (signed, "%z"), (st, st)),
                K.Op(f"%u{s}", "cast", ut, (signed,), (st,)),
                K.Op("%c", op, "bool", tuple(u), (ut, ut)),
                K.Op("%r", "where", "bool", ("%neg", "%w", "%c"), ("bool", "bool", "bool"))]
    return rule


def _sign(dt: str, args, adts) -> list:
    """np.sign: 1 above 0, -1 below, 0 for both zeros (+0.0 for -0.0), NaN for NaN; unsigned
    values are never below 0."""
    (x,) = args
    ops = [K.Const("%z", dt, 0), K.Const("%one", dt, 1), K.Op("%gt", "greater", "bool", (x, "%z"), (dt, dt))]
    if dt.startswith("uint"):
        return ops + [K.Op("%r", "where", dt, ("%gt", "%one", "%z"), ("bool", dt, dt))]
    rest = "%z"
    if dt.startswith("float"):      # a zero gives +0.0, a NaN itself
        ops += [K.Op("%eq", "equal", "bool", (x, "%z"), (dt, dt)),
                K.Op("%zn", "where", dt, ("%eq", "%z", x), ("bool", dt, dt))]
        rest = "%zn"
    return ops + [K.Const("%m1", dt, -1), K.Op("%lt", "less", "bool", (x, "%z"), (dt, dt)),
                  K.Op("%s", "where", dt, ("%lt", "%m1", rest), ("bool", dt, dt)),
                  K.Op("%r", "where", dt, ("%gt", "%one", "%s"), ("bool", dt, dt))]


EXPANSIONS = {"heaviside": _heaviside, "sign": _sign,
              **{c: _mixed_compare(c) for c in ("equal", "not_equal", "less", "less_equal", "greater",
                                                "greater_equal")}}


def expand(op: str, dtype: str, args, arg_dtypes) -> list | None:
    """``op`` of ``dtype`` on argument expressions ``args`` as core statements (temporaries named
    ``%...``; the last statement's value is the op's), or None where no rule applies."""
    rule = EXPANSIONS.get(op)
    return None if rule is None else rule(dtype, tuple(args), tuple(arg_dtypes))


def inline(op: str, dtype: str, args, arg_dtypes, render, literal) -> str | None:
    """The expansion of ``op`` as one expression: ``render(Op, argument expressions)`` renders a core
    op, ``literal(value, dtype)`` a constant; None where no rule applies."""
    stmts = expand(op, dtype, args, arg_dtypes)
    return None if stmts is None else nested(stmts, render, literal)


def nested(stmts, render, literal) -> str:
    """Statements over temporaries (``%...``) as one expression of the last one's value."""
    env: dict[str, str] = {}
    for s in stmts:
        if isinstance(s, K.Const):
            env[s.dst] = literal(s.value, s.dtype)
        else:
            env[s.dst] = f"({render(s, [env.get(a, a) for a in s.args])})"
    return env[stmts[-1].dst]


def _stmts(stmts, consts) -> tuple:
    out = []
    for s in stmts:
        new = None
        if isinstance(s, K.Op):
            new = next((r for r in (rule(s, consts) for rule in RULES) if r is not None), None)
        out += new if new is not None else [s]
    return tuple(out)


def decompose(kir: K.KernelIR) -> K.KernelIR:
    """``kir`` with every rule applied (the same object when none applies)."""
    consts = constants(kir)
    phases = tuple(dataclasses.replace(ph, pre=_stmts(ph.pre, consts), body=_stmts(ph.body, consts))
                   for ph in kir.phases)
    return kir if phases == kir.phases else dataclasses.replace(kir, phases=phases)
