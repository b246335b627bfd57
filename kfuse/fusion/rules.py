"""The fusion rules' interface and their driver.

A :class:`Rule` has a ``name``, ``match(state, ctx)`` (the candidate fusions it would try, in
order, against the clusters as they stand; a generator, so each candidate sees every change made
before it) and ``apply(state, candidate, ctx)`` (try one; True when the clusters changed). A
``fixpoint`` rule is matched again from the start after every change, until a whole pass changes
nothing; any other rule takes each candidate once. ``pipeline.RULES`` lists the rules in the order
the planner runs them over one :class:`legality.Clustering`; :func:`run_rule` runs one.
:class:`Together` runs several rules as one, their candidates tried in one order (reductions and
scans claim their neighbours in graph order, whichever comes first).
"""
from __future__ import annotations

import dataclasses
import heapq
from typing import Any, Callable, Iterable

from .legality import Clustering


@dataclasses.dataclass(frozen=True)
class PlanContext:
    """What rules know besides the clusters: the device the plan is for, the reductions whose
    rows split into one kernel a phase rather than be re-read (``reduce_key``s), and the price of
    a cluster (``cost_of(state, cid, extra=frozenset()) -> seconds``, 0 when it writes nothing)."""
    device: Any = None
    no_rowwise: frozenset = frozenset()
    cost_of: Callable[..., float] | None = None


class Rule:
    """A fusion rule (see the module docstring)."""
    name: str = ""
    fixpoint: bool = True

    def match(self, state: Clustering, ctx: PlanContext) -> Iterable[Any]:
        raise NotImplementedError

    def apply(self, state: Clustering, candidate: Any, ctx: PlanContext) -> bool:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<fusion rule {self.name}>"


class Together(Rule):
    """Fixpoint rules ``rules`` run as one: their candidates merged in the order of
    ``key(state, candidate)`` (each rule's own candidates come in that order), so that a change
    made by any restarts them all."""
    fixpoint = True

    def __init__(self, name: str, *rules: Rule, key: Callable[[Clustering, Any], Any]):
        self.name, self.rules, self.key = name, rules, key

    def match(self, state: Clustering, ctx: PlanContext):
        tagged = [_tagged(rule, state, ctx) for rule in self.rules]
        return heapq.merge(*tagged, key=lambda rc: self.key(state, rc[1]))

    def apply(self, state: Clustering, candidate, ctx: PlanContext) -> bool:
        rule, c = candidate
        return rule.apply(state, c, ctx)


def _tagged(rule: Rule, state: Clustering, ctx: PlanContext):
    for c in rule.match(state, ctx):
        yield rule, c


def run_rule(rule: Rule, state: Clustering, ctx: PlanContext | None = None) -> int:
    """Run ``rule`` over ``state``; the number of candidates that changed it."""
    ctx = ctx if ctx is not None else PlanContext()
    changes = 0
    while True:
        changed = False
        for candidate in rule.match(state, ctx):
            if rule.apply(state, candidate, ctx):
                changes += 1
                changed = True
                if rule.fixpoint:
                    break
        if not (changed and rule.fixpoint):
            return changes
