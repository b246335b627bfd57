"""The host checks of a call (``Graph.host_checks``: ``x[i]`` of a Python int ``i`` in range) as
straight Python, generated once per entry: a pass test that costs a few comparisons, where the
NumPy evaluation of the check nodes (``trace.reference.evaluator``) costs tens of microseconds.

The generated lines only say "every check passes"; where they cannot say it (a value outside the
range they were proven for, another type), the caller runs the evaluator, which raises NumPy's
error: errors come from one place. The lines exist for checks over integer and bool host scalars
built from comparisons, logical ops, ``+``, ``-``, ``*``, negation and exact casts, and only where
interval arithmetic shows that no intermediate value leaves its dtype's range for inputs within
the bounds the lines check first (then Python's integer arithmetic is NumPy's bit for bit); else there are none.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, toposort
from ..ir.ops import Op

INPUT_BOUND = 2 ** 31       # inputs checked to lie in [-INPUT_BOUND, INPUT_BOUND) and in a quarter of their
                            # dtype's range (so that x - 1, -x, 2 * x of a narrow NumPy int fit it)

_COMPARE = {Op.LESS: "<", Op.LESS_EQUAL: "<=", Op.GREATER: ">", Op.GREATER_EQUAL: ">=",
            Op.EQUAL: "==", Op.NOT_EQUAL: "!="}
_LOGICAL = {Op.LOGICAL_OR: "or", Op.LOGICAL_AND: "and"}
_ARITH = {Op.ADD: "+", Op.SUBTRACT: "-", Op.MULTIPLY: "*"}


def _range(dt: np.dtype) -> tuple[int, int]:
    if dt == np.bool_:
        return 0, 1
    info = np.iinfo(dt)
    return int(info.min), int(info.max)


def _interval(op, a, b) -> tuple[int, int]:
    if op is Op.ADD:
        return a[0] + b[0], a[1] + b[1]
    if op is Op.SUBTRACT:
        return a[0] - b[1], a[1] - b[0]
    ends = [x * y for x in a for y in b]
    return min(ends), max(ends)


def _truth(n: Node, name: str) -> str:
    return name if n.dtype == np.bool_ else f"bool({name})"


def check_lines(graph, positions, fail: str, ns: dict) -> list[str] | None:
    """Statements (no indent) over the call's ``args`` that run ``fail`` (a statement: ``return
    False``, ``return generic(args)``) unless every host check of ``graph`` passes, for an entry
    whose graph input ``k`` is ``args[positions[k]]``; the names they use are added to ``ns``.
    None where the checks hold an op, dtype or range outside what the lines compute exactly."""
    checks = [n for n, *_ in graph.host_checks]
    names: dict[Node, str] = {}
    spans: dict[Node, tuple[int, int]] = {}
    lines: list[str] = []
    for n in toposort(checks):
        if n.shape != () or not (n.dtype.kind in "iu" or n.dtype == np.bool_):
            return None
        v, lo_hi = f"h{len(names)}", _range(n.dtype)
        names[n] = v
        ins = [names[i] for i in n.inputs]
        if n.op is Op.INPUT:
            t = f"T{len(ns)}"
            ns[t] = int if n.attr("weak") == "int" else bool if n.attr("weak") == "bool" else n.dtype.type
            lo, hi = (0, 1) if n.dtype == np.bool_ else (max(lo_hi[0] // 4, -INPUT_BOUND), min(lo_hi[1] // 4, INPUT_BOUND - 1))
            lines += [f"{v} = args[{positions[n.attr('index')]}]",
                      f"if type({v}) is not {t} or not {lo} <= {v} <= {hi}:", f"    {fail}"]
            spans[n] = (lo, hi)
            continue
        if n.op is Op.CONST:
            spans[n] = (int(n.attr("value")),) * 2
            names[n] = f"({int(n.attr('value'))!r})"
            continue
        if n.op in _COMPARE:
            expr, span = f"{ins[0]} {_COMPARE[n.op]} {ins[1]}", (0, 1)
        elif n.op in _LOGICAL:
            expr, span = f" {_LOGICAL[n.op]} ".join(_truth(i, x) for i, x in zip(n.inputs, ins)), (0, 1)
        elif n.op is Op.LOGICAL_NOT:
            expr, span = f"not {ins[0]}", (0, 1)
        elif n.op in _ARITH and n.dtype != np.bool_:
            expr, span = f"{ins[0]} {_ARITH[n.op]} {ins[1]}", _interval(n.op, spans[n.inputs[0]], spans[n.inputs[1]])
        elif n.op is Op.NEGATIVE and n.dtype != np.bool_:
            expr, span = f"-{ins[0]}", (-spans[n.inputs[0]][1], -spans[n.inputs[0]][0])
        elif n.op is Op.CAST and n.dtype == np.bool_:
            expr, span = f"{ins[0]} != 0", (0, 1)
        elif n.op in (Op.CAST, Op.RESHAPE, Op.BROADCAST):
            expr, span = ins[0], spans[n.inputs[0]]
        else:
            return None
        if not lo_hi[0] <= span[0] <= span[1] <= lo_hi[1]:
            return None         # an intermediate value could wrap: NumPy's answer, not Python's
        spans[n] = span
        lines.append(f"{v} = {expr}")
    failing = " or ".join(dict.fromkeys(names[n] for n in checks))
    return lines + [f"if {failing}:", f"    {fail}"]


def compile_passes(graph, positions):
    """``passes(args) -> bool``, True only where every host check of ``graph`` passes (the
    source is ``passes.source``); None where :func:`check_lines` has no lines for them."""
    ns: dict = {}
    lines = check_lines(graph, positions, "return False", ns)
    if lines is None:
        return None
    source = "def passes(args):\n" + "".join(f"    {x}\n" for x in lines + ["return True"])
    exec(compile(source, "<kfuse:host_checks>", "exec"), ns)
    passes = ns["passes"]
    passes.source = source
    return passes
