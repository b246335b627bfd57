"""Decompositions over KernelIR: rewrites, once for every backend, of ops into the ops that give
NumPy's bits, so that no emitter writes its own version of a rule. Each rule is a pure function
of one :class:`~kfuse.codegen.kernel_ir.Op` and the kernel's constants to a list of statements;
:func:`decompose` applies them to every phase and returns a new (printable) KernelIR.

Rules:
* ``power`` with a constant exponent: products of the base where ``ir.power.product_exponent``
  (the policy ``fusion.simplify`` follows) says they are NumPy's bits (float ``x ** 2`` is
  ``x * x``; float ``x ** 3`` stays a power, as NumPy computes it with libm's ``pow``).
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
