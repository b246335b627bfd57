"""The text of a function with graph breaks (``kfuse.explain``): each fused segment's plan, and
between them each break with its reason and the user's ``file:line``."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, eq=False)
class SegmentedPlan:
    """``steps``: ("segment", fusion plan) and ("break", session.Break) in the order a call meets
    them; ``stopped``: the break an abstract run could not pass (its value is needed), or None."""
    name: str
    steps: list
    stopped: object = None

    @property
    def plans(self) -> list:
        return [p for kind, p in self.steps if kind == "segment"]

    @property
    def breaks(self) -> list:
        return [b for kind, b in self.steps if kind == "break"]

    @property
    def kernels(self) -> list:
        return [g for p in self.plans for g in p.groups]

    def __str__(self) -> str:
        plans, breaks = self.plans, self.breaks
        lines = [f"{self.name}: {len(plans)} fused segment(s), {len(breaks)} graph break(s)"]
        k = 0
        for kind, item in self.steps:
            if kind == "break":
                lines.append(item.describe())
                continue
            k += 1
            lines.append(f"segment {k}:")
            lines += ["  " + line for line in str(item).splitlines()]
        if self.stopped is not None:
            lines.append("the rest depends on that value: kfuse.explain with arrays (not specs) "
                         "shows the segments after it")
        return "\n".join(lines)
