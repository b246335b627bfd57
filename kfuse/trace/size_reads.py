"""Whether a trace let a concrete size reach code outside kfuse: ``x.shape``, ``x.size``,
``x.nbytes``, ``len(x)`` or ``np.shape(x)`` read by the traced function (which may branch on it or
compute with it as a Python int), so that the graph may depend on the sizes in ways the graph
does not show. ``kfuse.jit`` reuses a trace for other sizes (``kfuse.size_generic``) only when
none was read; kfuse's own builders read sizes freely (what they make of them is in the graph).

``watching()`` marks the trace under way; ``note()`` (called by those attributes) records a read
whose caller is not a kfuse module. A builder that may decide by a size (a slice clamped to
its dim, which a full slice makes no node at all; a reshape's ``-1``) counts as a read too: only
the NumPy functions of ``GENERIC_FUNCTIONS``, ufunc calls and the tracer's own generic methods
(elementwise operators, reductions, scans, casts, transposes) leave a trace reusable at other
sizes."""
from __future__ import annotations

import contextlib
import contextvars
import sys
from typing import Iterator

_PREFIX = __name__.split(".")[0] + "."


class SizeReads:
    """The reads of one trace: ``seen`` is True once a size reached code outside kfuse."""
    __slots__ = ("seen",)

    def __init__(self):
        self.seen = False


_ACTIVE: contextvars.ContextVar[SizeReads | None] = contextvars.ContextVar("kfuse_size_reads", default=None)


@contextlib.contextmanager
def watching() -> Iterator[SizeReads]:
    """Record the size reads of the trace run inside the block."""
    reads = SizeReads()
    token = _ACTIVE.set(reads)
    try:
        yield reads
    finally:
        _ACTIVE.reset(token)


def note(depth: int = 2) -> None:
    """A size was read by the function ``depth`` frames up: recorded unless that is kfuse's own
    code (a builder); ``depth=0``: recorded whoever reads it (a size returned to the caller)."""
    reads = _ACTIVE.get()
    if reads is None or reads.seen:
        return
    if depth:
        name = sys._getframe(depth).f_globals.get("__name__", "")
        if name.startswith(_PREFIX):
            return
    reads.seen = True


# NumPy functions (by name) whose builders decide nothing by a size but 1s (fixed by the shape
# class): their sizes are products of the arguments' dims
GENERIC_FUNCTIONS = frozenset({
    "sum", "prod", "mean", "max", "min", "amax", "amin", "any", "all", "var", "std", "argmax",
    "argmin", "cumsum", "cumprod", "where", "clip", "round", "around", "copy", "transpose",
    "nansum", "nanmax", "nanmin", "nanmean", "real", "imag", "conj", "conjugate", "abs",
    "absolute", "square", "sqrt", "exp", "log", "tanh", "maximum", "minimum", "ndim", "result_type",
})
