"""Fuzz steps that build arrays from pieces and write into them (the generator's ``assemble`` and
``write`` kinds): concatenation and stacking, ``np.pad`` in every supported mode, ``np.roll``,
``np.flip``, ``np.diff``, ``np.append``, ``np.tril``/``np.triu``; item assignment into regions and
through views, in-place operators, ufuncs with ``out=`` (and ``where=``), boolean-mask writes and
reductions of boolean-mask selections.

Each function takes the generator (``kfuse.fuzz.generator._Gen``: ``rng``, ``env``, ``var``,
``const``, ``choice``, ``chance``) and returns an expression, or (for ``write``) an expression
and the statements that write into its fresh copy; None when nothing fits."""
from __future__ import annotations

import numpy as np

from .program import _evaluate

_MODES = {"edge": lambda n: 2, "wrap": lambda n: n, "reflect": lambda n: n - 1,
          "symmetric": lambda n: n}


def assemble(g) -> str | None:
    a = g.var(lambda v: v.ndim >= 1)
    if a is None:
        return None
    x = g.env[a]
    nd = x.ndim
    d = int(g.rng.integers(nd))
    ax = d - nd if g.chance(0.3) else d
    fits = [v for v in g.vars(lambda v: v.ndim == nd)
            if all(g.env[v].shape[k] == x.shape[k] for k in range(nd) if k != d)]
    b = g.choice(fits)
    widths = tuple((int(g.rng.integers(0, 3)), int(g.rng.integers(0, 3))) for _ in range(nd))
    opts = [f"np.concatenate([{a}, {b}], axis={ax})", f"np.concatenate(({b}, {a}[::-1], {a}), {ax})",
            f"np.stack([{a}, {a} * 2], axis={int(g.rng.integers(-nd - 1, nd + 1))})",
            f"np.pad({a}, {widths!r})", f"np.pad({a}, {widths!r}, constant_values={g.const()})",
            f"np.roll({a}, {int(g.rng.integers(-4, 5))}, axis={ax})",
            f"np.roll({a}, {int(g.rng.integers(-9, 10))})", f"np.flip({a}, {ax})",
            f"np.diff({a}, axis={ax})", f"np.append({a}, {b})", f"np.hstack([{a}, {b}])"]
    if nd >= 2:
        opts += [f"np.tril({a}, {int(g.rng.integers(-2, 3))})", f"np.triu({a}, {int(g.rng.integers(-2, 3))})"]
    if x.shape[d]:
        mode = g.choice(sorted(_MODES))
        w = min(int(g.rng.integers(0, 3)), _MODES[mode](x.shape[d]))
        pw = tuple((w, 0) if k == d else (0, 0) for k in range(nd))
        opts.append(f"np.pad({a}, {pw!r}, mode='{mode}')")
    return g.choice(opts)


def _key(g, shape) -> str:
    """A random basic index into ``shape`` (ints, slices with any step, ``...``, ``None``)."""
    parts = []
    for n in shape[:int(g.rng.integers(1, len(shape) + 1))]:
        r = g.rng.random()
        if r < 0.3 and n:
            parts.append(str(int(g.rng.integers(-n, n))))
        elif r < 0.5:
            parts.append(":")
        else:
            step = int(g.choice((1, 2, -1, -2, 3)))
            start = int(g.rng.integers(-n - 1, n + 1)) if n and g.chance(0.5) else ""
            parts.append(f"{start}::{step}")
    if g.chance(0.15):
        parts.append("...")
    if g.chance(0.1):
        parts.insert(int(g.rng.integers(len(parts) + 1)), "None")
    return ", ".join(parts)


def _value(g) -> str:
    r = g.rng.random()
    return g.const() if r < 0.5 else g.var() if r < 0.75 else f"{g.var()} * 2"


def _defined(g, out: str, start, line: str) -> bool:
    """Whether NumPy's result for ``line`` is defined: no float value written into an integer
    array (an out-of-range float->int cast: x86 wraps, the GPU saturates; see docs/FUZZING.md)."""
    if start.dtype.kind not in "iu":
        return True
    if "] = " not in line:      # an augmented write: NumPy's same_kind rule rejects float into int
        return True
    rhs = line.split("] = ", 1)[1]
    try:
        val = _evaluate(rhs, {**g.env, out: start})
    except Exception:       # noqa: BLE001 - NumPy rejects it: kfuse must raise the same
        return True
    return np.asarray(val).dtype.kind != "f" and not isinstance(val, float)


def write(g) -> tuple[str, tuple[str, ...]] | None:
    a = g.var(lambda v: v.ndim >= 1)
    if a is None:
        return None
    x = g.env[a]
    out = f"v{len(g.steps)}"
    # (``a`` itself: the writes go into an argument or an earlier value, and views of it see them)
    expr = g.choice((f"{a}.copy()", f"np.zeros_like({a})", f"{a} * 1", a))
    try:
        start = np.asarray(_evaluate(expr, g.env))
    except Exception:       # noqa: BLE001
        return None
    lines = []
    for _ in range(int(g.rng.integers(1, 3))):
        kind = g.choice(("region", "region", "augmented", "mask", "mask-augmented", "view",
                         "selection", "selection-reduce", "out"))
        key, op = _key(g, x.shape), g.choice(("+", "-", "*"))
        if kind == "region":
            lines.append(f"{out}[{key}] = {_value(g)}")
        elif kind == "augmented":
            lines.append(f"{out}[{key}] {op}= {_value(g)}")
        elif kind == "mask":
            lines.append(f"{out}[{out} > {g.const()}] = {g.const()}")
        elif kind == "mask-augmented":
            lines.append(f"{out}[{out} < 1] {op}= {g.const(small=True)}")
        elif kind == "view":
            views = {"[::-1]": x.shape, ".T": x.shape[::-1], "[1:]": (max(x.shape[0] - 1, 0),) + x.shape[1:],
                     "[None]": (1,) + x.shape}
            view = g.choice(sorted(views))
            lines.append(f"{out}{view}[{_key(g, views[view])}] = {g.const()}")
        elif kind == "selection":
            src = g.var(lambda v: v.shape == x.shape)
            lines.append(f"{out}[{out} != 0] = {src}[{out} != 0] {op} {g.const(small=True)}")
        elif kind == "out":
            uf = g.choice(("add", "multiply", "subtract", "maximum"))
            where = f", where=({out} > 0)" if g.chance(0.4) else ""
            lines.append(f"np.{uf}({g.var(lambda v: v.ndim <= x.ndim)}, {g.const()}, out={out}{where})")
        elif x.dtype.kind == "f":     # (a NaN mean into ints: NumPy raises, a kernel cannot)
            red = g.choice(("sum()", "mean()", "max(initial=0)", "min(initial=1)", "any()", "prod()"))
            lines.append(f"{out}[...] = {out}[{out} > 0].{red}")
        if lines and not _defined(g, out, start, lines[-1]):
            lines.pop()
    return (expr, tuple(lines)) if lines else None
