"""Compile signatures: what makes a jitted function's call a new compile (each argument's dtype,
rank and broadcast pattern, a scalar's type, a static value; never sizes, which reuse kernels:
``runtime.shape_class``), and the words for what changed (``kfuse.explain``, the recompile
warning, ``JitFunction.last_build``)."""
from __future__ import annotations

from ..ir.specs import ArgSpec, ArraySpec, GeneratorSpec, ScalarSpec


def compile_reason(seen, sigs: tuple, names: list) -> str:
    """What made ``sigs`` (:func:`compile_signature` per argument) a new compile: the argument
    changes from the nearest signature compiled before, the latest of equals (sizes never are:
    they reuse kernels)."""
    if not seen:
        return "first call"
    near = min(reversed(seen), key=lambda s: sum(a != b for a, b in zip(s, sigs)) + abs(len(s) - len(sigs)))
    what = []
    for name, old, new in zip(names, near, sigs):
        if old == new:
            continue
        if old[0] == new[0] == "array":
            for k, field in ((1, "dtype"), (2, "rank"), (3, "broadcast pattern (dims of size 1)")):
                if old[k] != new[k]:
                    what.append(f"argument {name!r} {field} {_sig_text(old[k])} -> {_sig_text(new[k])}")
                    break
        else:
            what.append(f"argument {name!r} {_sig_text(old)} -> {_sig_text(new)}")
    return "; ".join(what) or "a new argument list"


def _sig_text(v) -> str:
    if isinstance(v, tuple) and v and all(isinstance(x, bool) for x in v):
        return "(" + ", ".join("1" if x else "n" for x in v) + ")"
    return str(v) if not isinstance(v, tuple) else " ".join(map(str, v))


def compile_signature(spec: ArgSpec) -> tuple:
    if isinstance(spec, ArraySpec):
        return ("array", spec.dtype.name, len(spec.shape), tuple(d == 1 for d in spec.shape))
    if isinstance(spec, ScalarSpec):
        return ("scalar", spec.pytype.__name__)
    if isinstance(spec, GeneratorSpec):
        return ("generator",)
    return ("static", repr(spec.value))
