"""The rule driver (``rules.run_rule``): a fixpoint rule is matched again from the start after
each change, until a pass changes nothing; another rule takes each candidate once; ``Together``
merges its rules' candidates in one order. The planner runs ``pipeline.RULES`` in order."""
from __future__ import annotations

from kfuse.fusion import pipeline
from kfuse.fusion.rules import PlanContext, Rule, Together, run_rule


class Countdown(Rule):
    """Candidates: the state's counters still above zero; apply lowers one and records it."""

    def __init__(self, name, fixpoint):
        self.name, self.fixpoint = name, fixpoint

    def match(self, state, ctx):
        state["matched"] += 1
        for k in sorted(state["left"]):
            if state["left"][k] > 0:
                yield k

    def apply(self, state, k, ctx):
        state["left"][k] -= 1
        state["log"].append((self.name, k))
        return True


def _state(**left):
    return {"left": dict(left), "log": [], "matched": 0}


def test_a_fixpoint_rule_restarts_after_each_change():
    st = _state(a=2, b=1)
    assert run_rule(Countdown("r", True), st) == 3
    assert [k for _, k in st["log"]] == ["a", "a", "b"] and st["matched"] == 4


def test_another_rule_takes_each_candidate_once():
    st = _state(a=2, b=1)
    assert run_rule(Countdown("r", False), st, PlanContext()) == 2
    assert [k for _, k in st["log"]] == ["a", "b"] and st["matched"] == 1


def test_together_tries_candidates_in_one_order():
    class Letters(Countdown):
        def __init__(self, name, letters):
            super().__init__(name, True)
            self.letters = letters

        def match(self, state, ctx):
            return (k for k in super().match(state, ctx) if k in self.letters)

    st = _state(a=1, b=1, c=1, d=1)
    both = Together("both", Letters("ac", "ac"), Letters("bd", "bd"), key=lambda state, k: k)
    assert run_rule(both, st) == 4
    assert st["log"] == [("ac", "a"), ("bd", "b"), ("ac", "c"), ("bd", "d")]


def test_the_planner_runs_the_registered_rules():
    names = [r.name for r in pipeline.RULES]
    assert names == ["gemm_epilogue", "rows", "elementwise", "recompute"]
    assert all(isinstance(r, Rule) and r.name for r in pipeline.RULES)
