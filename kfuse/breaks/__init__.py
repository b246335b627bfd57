"""Graph breaks: a function the tracer cannot follow whole (a Python ``if`` on an array value,
``.item()``, an unsupported NumPy function, a library call such as ``np.sort``) runs in segments:
what can be traced is fused and compiled (once per path through the function), the rest runs
eagerly on concrete arrays (``session``). ``entry.SegmentedEntry`` is what ``kfuse.jit`` keeps for
such a signature; ``report.SegmentedPlan`` is its ``explain``."""
from .entry import SegmentedEntry
from .report import SegmentedPlan
from .session import Break

__all__ = ["Break", "SegmentedEntry", "SegmentedPlan"]
