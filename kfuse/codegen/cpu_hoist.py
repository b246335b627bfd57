"""Loop-invariant statements of a CPU kernel, moved before its loops.

A statement at the outer loops' level whose value is the same on every trip (a constant, a size,
an input element at a fixed position, and what is computed from those only: ``x[2, [0, 0, 0]]``
broadcast into a result) is computed once, before the loops. LLVM would not hoist it itself (the
load could alias an output), and a chain of branch-free float16 helpers over such a load made its
optimiser run for minutes (fuzz cpu seed 100 #6870; hoisting the load alone: 12 s -> 1.4 s for
three helpers). Only the statements executed once per outer trip are moved (a phase's ``pre``),
never an inner loop's: the outer trips run whenever the kernel runs (outputs are not empty), so
a moved load reads nothing the loops would not have read.
"""
from __future__ import annotations

import re

# names not preceded by a dot (np.float32's "float32" is an attribute, not a name)
_NAME = re.compile(r"(?<![.\w])[A-Za-z_]\w*")
_ALWAYS = frozenset({"np", "numba", "math", "if", "else", "and", "or", "not", "True", "False", "None"})
_INPUT = re.compile(r"in\d+(_0)?$")


def split_invariant(lines: list[str], sizes: set[str]) -> tuple[list[str], list[str]]:
    """``(invariant, rest)`` of the rendered statements ``lines`` (``name = expr``, in order): a
    line is invariant when every name its expression reads is a size in ``sizes``, an input
    buffer, a helper (``_expf``) or an invariant line's name; ``rest`` keeps the others' order."""
    known, moved, kept = set(sizes), [], []
    for line in lines:
        dst, sep, expr = line.partition(" = ")
        names = set(_NAME.findall(expr)) if sep and ";" not in expr else None
        if names is not None and _NAME.fullmatch(dst) and all(
                n in known or n in _ALWAYS or n.startswith("_") or _INPUT.match(n) for n in names):
            known.add(dst)
            moved.append(line)
        else:
            kept.append(line)
    return moved, kept
