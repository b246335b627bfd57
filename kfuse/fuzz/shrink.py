"""Shrink a failing program: drop outputs, bypass steps, drop dead steps and unused inputs, turn
input views into plain arrays and simplify input values, while it still fails the same way
(same :attr:`Result.signature`). Each candidate is one kfuse compile, so attempts are bounded.
"""
from __future__ import annotations

import dataclasses
import re

import numpy as np

from .generator import InputSpec, Program, Step


def _sub(expr: str, mapping: dict[str, str]) -> str:
    if not mapping:
        return expr
    pat = re.compile(r"\b(" + "|".join(re.escape(k) for k in mapping) + r")\b")
    return pat.sub(lambda m: mapping[m.group(1)], expr)


def dce(p: Program) -> Program:
    """Drop steps nothing returned depends on, and inputs no step or output uses. A step that
    writes in place (into an argument or an earlier value: :attr:`Step.in_place`) is a side
    effect and stays."""
    live = set(p.outputs)
    kept = []
    for s in reversed(p.steps):
        if s.out in live or s.in_place:
            kept.append(s)
            live.update(s.uses())
    kept.reverse()
    inputs = tuple(i for i in p.inputs if i.name in live)
    if not inputs:
        inputs = p.inputs[:1]
    return dataclasses.replace(p, steps=tuple(kept), inputs=inputs)


def renumber(p: Program) -> Program:
    """Names a0.. and v0.. in order (for readable regressions; semantics unchanged)."""
    mapping = {i.name: f"a{k}" for k, i in enumerate(p.inputs)}
    mapping.update({s.out: f"v{k}" for k, s in enumerate(p.steps)})
    mapping = {k: v for k, v in mapping.items() if k != v}
    if not mapping:
        return p
    # two-phase rename so that a0 -> a1 and a1 -> a0 do not collide
    tmp = {k: f"__t{n}__" for n, k in enumerate(mapping)}
    back = {tmp[k]: v for k, v in mapping.items()}

    def ren(x: str) -> str:
        return _sub(_sub(x, tmp), back)
    return dataclasses.replace(
        p, inputs=tuple(dataclasses.replace(i, name=ren(i.name)) for i in p.inputs),
        steps=tuple(Step(ren(s.out), ren(s.expr), tuple(map(ren, s.writes))) for s in p.steps),
        outputs=tuple(ren(o) for o in p.outputs))


def _candidates(p: Program):
    if len(p.outputs) > 1:
        for k in range(len(p.outputs)):
            yield dataclasses.replace(p, outputs=p.outputs[:k] + p.outputs[k + 1:])
    # bypass a step: later uses of its name read one of its operands instead
    for k in range(len(p.steps) - 1, -1, -1):
        s = p.steps[k]
        for u in dict.fromkeys(s.uses()):
            rest = tuple(Step(t.out, _sub(t.expr, {s.out: u}), tuple(_sub(w, {s.out: u}) for w in t.writes))
                         for t in p.steps[k + 1:])
            outs = tuple(dict.fromkeys(u if o == s.out else o for o in p.outputs))
            yield dataclasses.replace(p, steps=p.steps[:k] + rest, outputs=outs)
    for k, spec in enumerate(p.inputs):
        if spec.slices is not None or spec.perm is not None:
            a = spec.build()
            flat = InputSpec(spec.name, spec.dtype, a.shape, tuple(a.reshape(-1).tolist()))
            yield dataclasses.replace(p, inputs=p.inputs[:k] + (flat,) + p.inputs[k + 1:])
    for k, spec in enumerate(p.inputs):
        for simple in _simpler_values(spec):
            yield dataclasses.replace(p, inputs=p.inputs[:k] + (simple,) + p.inputs[k + 1:])
    if p.tuple_out and len(p.outputs) == 1:
        yield dataclasses.replace(p, tuple_out=False)


def _simpler_values(spec: InputSpec):
    vals = list(spec.values)
    if not vals:
        return
    kind = np.dtype(spec.dtype).kind
    one = True if kind == "b" else (1.0 if kind == "f" else 1)
    zero = False if kind == "b" else (0.0 if kind == "f" else 0)
    for fill in (one, zero):
        if any(v != fill or (isinstance(v, float) and np.signbit(v)) for v in vals):
            yield dataclasses.replace(spec, values=tuple([fill] * len(vals)))
    n = len(vals)
    if n > 1:      # simplify halves
        for lo, hi in ((0, n // 2), (n // 2, n)):
            new = vals[:lo] + [one] * (hi - lo) + vals[hi:]
            if new != vals:
                yield dataclasses.replace(spec, values=tuple(new))


def shrink(p: Program, still_fails, max_attempts: int = 80) -> Program:
    """Greedy fixpoint: take any candidate for which ``still_fails(candidate)`` is true.
    Returns the last accepted candidate as tested (call :func:`renumber` for display)."""
    p = dce(p)
    attempts = 0
    progress = True
    seen = set()
    while progress and attempts < max_attempts:
        progress = False
        for cand in _candidates(p):
            cand = dce(cand)
            key = (cand.inputs, cand.steps, cand.outputs, cand.tuple_out)
            if key in seen:
                continue
            seen.add(key)
            attempts += 1
            if still_fails(cand):
                p = cand
                progress = True
                break
            if attempts >= max_attempts:
                break
    return p
