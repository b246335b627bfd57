"""A function with graph breaks, for one dispatch key: :class:`SegmentedEntry` runs each call in
segments (``session.Session``) and keeps the compiled segments, memoised by their nodes, so a
call that takes the same path as an earlier one compiles nothing; where only library calls broke
the function, later calls replay the first one's steps (``tape``) without running its Python;
``explain`` gives the segments.

``api`` makes one where the whole-function trace of a signature breaks (the decision is kept in
its dispatch table: no retry per call) and hands it a ``compiler``: ``plan(graph)`` (the fusion
plan) and ``entry(graph, specs)`` (a compiled program wrapped to take the run's values and return
the graph's result, as a call's).
"""
from __future__ import annotations

import numpy as np

from .. import logs
from ..ir.specs import ArgSpec, StaticSpec
from ..runtime.interop import copy_array
from ..trace.core import running_segments
from ..trace.tracer import TracedCall
from .report import SegmentedPlan
from .session import Break, Session, Stop
from .tape import Tape


class SegmentedEntry:
    """Run ``fn`` in segments for arguments of these ``specs`` (one per parameter, in order)."""

    def __init__(self, fn, name: str, specs: dict[str, ArgSpec], compiler):
        self.fn = fn
        self.name = name
        self.specs = specs
        self.compiler = compiler
        self.positions = [i for i, s in enumerate(specs.values()) if not isinstance(s, StaticSpec)]
        self.arg_specs = [s for s in specs.values() if not isinstance(s, StaticSpec)]
        self.memo: dict = {}                # segment key -> compiled entry
        self._logged: set[Break] = set()
        self.tape: Tape | None = None       # the first call's steps, where they can be replayed
        self._record = True

    def run(self, args: tuple):
        """One call: ``args`` are the function's positional arguments, every parameter given. The
        first call records a tape; where it can be replayed (only library calls broke it) later
        calls run the tape, not the Python function."""
        values = [args[i] for i in self.positions]
        if self.tape is not None:
            return self.tape.replay(values)
        tape, self._record = (Tape() if self._record else None), False
        result = self._session(values, None, tape)[1]
        if tape is not None and tape.ok:
            self.tape = tape
        return result

    def explain(self, args: tuple | None) -> SegmentedPlan:
        """The segments and breaks of a call on ``args`` (copies of its arrays: nothing is written),
        or, for ``None``, of an abstract run on the specs, which stops at the first break that needs
        a value."""
        transcript: list = []
        values = None if args is None else [_private(args[i]) for i in self.positions]
        try:
            self._session(values, transcript, None)
            stop = None
        except Stop as e:
            stop = e.brk
        return SegmentedPlan(self.name, transcript, stop)

    def _session(self, values, transcript, tape):
        call = TracedCall(self.fn, self.specs)
        session = Session(self, call, values, self.arg_specs, transcript, tape)
        with np.errstate(all="ignore"), running_segments(session, session.checks):
            result = self.fn(*call.args, **call.kwargs)
            return session, session.finish(result)

    def log_break(self, brk: Break) -> None:
        """Each break once, at INFO on the ``kfuse`` logger."""
        if brk not in self._logged:
            self._logged.add(brk)
            logs.logger.info("%s: %s", self.name, brk.describe())


def _private(a):
    """A copy of an array argument (explain runs the function: the caller's arrays stay as they are)."""
    return copy_array(a) if hasattr(a, "shape") and not isinstance(a, np.generic) else a
