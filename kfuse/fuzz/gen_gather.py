"""Fuzz steps that read through integer index arrays (the generator's ``gather`` kind): ``x[idx]``,
``x[:, idx]``, ``x[..., idx]``, ``x[rows, cols]`` with broadcasting index arrays, advanced indices
split by a slice (``x[i, :, j]``: the broadcast dims come first), ints, ``None`` and ``...`` mixed
with arrays, negative indices, constant lists and boolean lists, ``np.take``/``ndarray.take`` in
every mode (``wrap``/``clip`` also with out-of-range and raw integer indices), and
``np.take_along_axis``; gathers of computed values and reductions of gathers.

Index arrays are constants (lists, ``np.array(..., dtype=)``, ``np.arange``), traced values made
in range inside the step's own expression (``v % n``, ``v % n - n``, ``np.clip``, ``argmax``/
``argmin`` along a dim of size ``n``, a float input clipped and cast), or an integer argument the
generator adds with values in range (``_index_input``). A ``mode='raise'`` gather with an index the
generator cannot bound (a raw integer value) usually fails NumPy's range check, and then ends the
program as an expected IndexError like the generator's other error programs.

:func:`gather_steps` counts the steps that index with an array (for reports and tests)."""
from __future__ import annotations

import ast

import numpy as np

from .program import InputSpec, _evaluate

_INT = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
MAX_INDEX_INPUTS = 2


def _fits(dtype, lo: int, hi: int) -> bool:
    info = np.iinfo(dtype)
    return info.min <= lo and hi <= info.max


def _const_index(g, n: int) -> str:
    """A constant index array for a dim of size ``n``: a list, a typed/2-D np.array, a boolean list
    (its nonzero positions), ``np.arange``; values in [-n, n)."""
    if n == 0:
        return g.choice(("[]", "np.zeros(0, dtype=np.intp)"))
    k = int(g.rng.integers(1, 6))
    vals = [int(v) for v in g.rng.integers(-n, n, k)]
    r = g.rng.random()
    if r < 0.35:
        return repr(vals)
    if r < 0.5:
        return repr([bool(b) for b in g.rng.random(n) < 0.5])
    if r < 0.62:
        return g.choice((f"np.arange({n})[::-1]", f"np.arange({min(n, 3)})", f"(np.arange({n}) - {n})"))
    dt = g.choice([d for d in _INT if _fits(d, -n if d[0] == "i" else 0, n)])
    if dt[0] == "u":
        vals = [v % n for v in vals]
    if k >= 2 and k % 2 == 0 and g.chance(0.4):
        return f"np.array({vals!r}, dtype=np.{dt}).reshape({k // 2}, 2)"
    return f"np.array({vals!r}, dtype=np.{dt})"


def _index_input(g, n: int) -> str | None:
    """A new integer argument with values in [-n, n) (unsigned: [0, n)), at most MAX_INDEX_INPUTS
    a program: an index array the caller passes."""
    if n == 0 or len(g.index_inputs) >= MAX_INDEX_INPUTS:
        return None
    dt = g.choice([d for d in _INT if _fits(d, -n, n)] + ["uint8", "uint16", "uint64"])
    lo = 0 if dt[0] == "u" else -n
    shape = g.choice(((int(g.rng.integers(1, 6)),), (int(g.rng.integers(1, 4)), 1),
                      (int(g.rng.integers(1, 4)), int(g.rng.integers(1, 4)))))
    vals = tuple(int(v) for v in g.rng.integers(lo, n, int(np.prod(shape))))
    name = f"a{len(g.inputs)}"
    spec = InputSpec(name, dt, shape, vals)
    g.inputs.append(spec)
    g.env[name] = spec.build()
    g.index_inputs.append(name)
    return name


def _exact_source(g, name: str) -> bool:
    """Whether ``name`` holds exact values (an input, or an integer/bool value): an argmax of a
    computed float could pick another element where an ulp decides a near tie."""
    return name.startswith("a") or g.env[name].dtype.kind in "biu"


def _traced_index(g, n: int) -> str | None:
    """A traced index array for a dim of size ``n``, in range by its own expression."""
    if n == 0:
        return None
    ints = g.vars(lambda v: v.dtype.kind in "biu" and 0 < v.size <= 12)
    r = g.rng.random()
    if r < 0.45 and ints:
        v = g.choice(ints)
        dt = g.env[v].dtype
        if dt.kind == "b" or not _fits(dt, -n, n):
            v = f"{v}.astype(np.{g.choice(('int64', 'int32', 'uint16', 'intp'))})"
            signed = "uint" not in v
        else:
            signed = dt.kind == "i"
        form = g.rng.random()
        if form < 0.5:
            return f"({v} % {n})"
        if form < 0.7 and signed:
            return f"({v} % {n} - {n})"              # negative indices
        if form < 0.85 and signed:
            return f"np.clip({v}, {-n}, {n - 1})"
        return f"({v} % {n}).astype(np.{g.choice(('uint8', 'int16', 'int64'))})" if n <= 127 else f"({v} % {n})"
    if r < 0.75:
        srcs = [v for v in g.vars(lambda v: v.ndim >= 1 and n in v.shape and v.size and v.dtype.kind != "b")
                if _exact_source(g, v)]
        if srcs:
            w = g.choice(srcs)
            ax = g.choice([d for d, m in enumerate(g.env[w].shape) if m == n])
            fn = g.choice(("argmax", "argmin"))
            out = f"{w}.{fn}(axis={ax})" if g.chance(0.5) else f"np.{fn}({w}, axis={ax})"
            return out if g.env[w].ndim > 1 or g.chance(0.3) else f"{w}.{fn}()"
    if r < 0.85:
        fl = [v for v in g.vars(lambda v: v.dtype.kind == "f" and 0 < v.size <= 12) if v.startswith("a")]
        if fl:
            v = g.choice(fl)
            return f"np.clip(np.where(np.isfinite({v}), {v}, 0), {-n}, {n - 1}).astype(np.int32)"
    return _index_input(g, n)


def _index(g, n: int) -> str:
    """An index array for a dim of size ``n`` (mode='raise' valid), constant or traced; now and
    then a raw integer value (often out of range: NumPy's IndexError, an error program)."""
    if g.chance(0.08):
        raw = g.var(lambda v: v.dtype.kind in "iu" and 0 < v.size <= 12)
        if raw is not None:
            return raw
    if g.chance(0.55):
        t = _traced_index(g, n)
        if t is not None:
            return t
    return _const_index(g, n)


def _wild_index(g, n: int, mode: str) -> str:
    """An index for ``np.take(..., mode='wrap'|'clip')``: any integer values, except that NumPy's
    wrap loop steps by ``n`` (``while (i < 0) i += n``: an index near -2**63 hangs it), so a
    wrapped index stays within +-2**20 once cast to intp (as NumPy casts it: 2**64 - 1 is -1)."""
    r = g.rng.random()
    if r < 0.4:
        ints = g.vars(lambda v: v.dtype.kind in "iu" and 0 < v.size <= 12)
        if ints:
            v = g.choice(ints)
            v = v if g.chance(0.6) else f"({v} * 3 - 2)"
            try:
                vals = np.asarray(_evaluate(v, g.env)).astype(np.intp)
            except Exception:       # noqa: BLE001
                vals = None
            if vals is not None and (mode == "clip" or np.all((vals > -2 ** 20) & (vals < 2 ** 20))):
                return v
    if r < 0.7:
        return repr([int(v) for v in g.rng.integers(-3 * n - 3, 3 * n + 4, int(g.rng.integers(1, 6)))])
    return _index(g, n)


def _producer(g, x: str) -> str:
    """``x`` or an elementwise value of it (a gather of a computed value)."""
    r = g.rng.random()
    if r < 0.7:
        return x
    if r < 0.85:
        return f"({x} * 2)" if g.chance(0.5) else f"({x} + {g.const()})"
    return f"np.{g.choice(('negative', 'absolute', 'square'))}({x})"


def _consumer(g, expr: str, shape: tuple) -> str:
    """``expr`` or a reduction / elementwise op of it (a gather fused with its consumer)."""
    r, nd = g.rng.random(), len(shape)
    if r < 0.65:
        return expr
    if r < 0.85:
        red = g.choice(("sum", "mean", "any", "prod", "max"))
        ax = f"axis={int(g.rng.integers(-nd, nd))}" if nd else ""
        init = ", initial=0" if red == "max" else ""
        sep = ", " if ax and init else ""
        return f"{expr}.{red}({ax}{sep}{init.lstrip(', ')})"
    return with_other(g, expr, shape)


def with_other(g, expr: str, shape) -> str:
    """``expr`` combined (+, *, -) with a numeric variable that broadcasts against ``shape``, if
    the program has one (the gather and scan kinds' consumers)."""
    def fits(v):
        try:
            np.broadcast_shapes(v.shape, shape)
        except ValueError:
            return False
        return v.dtype.kind != "b"
    other = g.var(fits)
    return expr if other is None else f"({expr} {g.choice(('+', '*', '-'))} {other})"


def gather(g) -> str | None:
    a = g.var(lambda v: v.ndim >= 1)
    if a is None:
        return None
    x = g.env[a]
    nd, sh = x.ndim, x.shape
    src = _producer(g, a)
    r = g.rng.random()
    if r < 0.2:
        expr = f"{src}[{_index(g, sh[0])}]"
    elif r < 0.3 and nd >= 2:
        expr = f"{src}[:, {_index(g, sh[1])}]" if g.chance(0.6) else f"{src}[..., {_index(g, sh[-1])}]"
    elif r < 0.45 and nd >= 2:           # several index arrays, broadcast together
        d = int(g.rng.integers(nd - 1))
        i, j = _index(g, sh[d]), _index(g, sh[d + 1])
        if g.chance(0.4):
            i = f"np.asarray({i})[:, None]" if i.startswith("[") else f"{i}[:, None]"
        pre = ":, " * d
        expr = f"{src}[{pre}{i}, {j}]"
    elif r < 0.55 and nd >= 3:          # split by a slice: the broadcast dims come first
        i, j = _index(g, sh[0]), _index(g, sh[2])
        expr = g.choice((f"{src}[{i}, :, {j}]", f"{src}[{i}, ::-1, {j}]", f"{src}[{i}, 1:, {j}]"))
    elif r < 0.62:                      # ints, None and ... mixed with an array
        d = int(g.rng.integers(nd))
        k = int(g.rng.integers(-sh[0], sh[0])) if sh[0] else 0
        i = _index(g, sh[d])
        if d == 0:
            expr = g.choice((f"{src}[None, {i}]", f"{src}[{i}, ...]", f"{src}[{i}, None]"))
        else:
            expr = g.choice((f"{src}[{k}, {':, ' * (d - 1)}{i}]", f"{src}[{k}, ..., {_index(g, sh[-1])}]"
                             if nd >= 2 else f"{src}[{i}]"))
    elif r < 0.82:                      # np.take / ndarray.take
        mode = g.choice(("raise", "raise", "wrap", "clip"))
        if g.chance(0.3):
            ax, n = None, x.size
        else:
            d = int(g.rng.integers(nd))
            ax, n = (d - nd if g.chance(0.3) else d), sh[d]
        i = _index(g, n) if mode == "raise" else _wild_index(g, n, mode)
        kw = ("" if ax is None else f", axis={ax}") + ("" if mode == "raise" and g.chance(0.5)
                                                       else f", mode='{mode}'")
        expr = f"np.take({src}, {i}{kw})" if g.chance(0.6) else f"{src}.take({i}{kw})"
    else:                               # np.take_along_axis
        expr = _along(g, a, src)
        if expr is None:
            return None
    try:
        shape = np.shape(_evaluate(expr, g.env))
    except Exception:       # noqa: BLE001 - NumPy rejects it: maybe an error program
        return expr
    return _consumer(g, expr, shape)


def _along(g, a: str, src: str) -> str | None:
    x = g.env[a]
    nd, sh = x.ndim, x.shape
    if g.chance(0.25):                  # axis=None: 1-D indices into the flattened array
        i = _traced_index(g, x.size) if g.chance(0.5) else None
        if i is None:
            vals = [int(v) for v in g.rng.integers(-x.size, x.size, int(g.rng.integers(1, 6)))] if x.size else []
            i = f"np.array({vals!r}, dtype=np.{g.choice(('intp', 'int16', 'int32'))})"
        else:
            i = f"{i}.reshape(-1)"
        return f"np.take_along_axis({src}, {i}, axis=None)"
    d = int(g.rng.integers(nd))
    ax = d - nd if g.chance(0.3) else d
    r = g.rng.random()
    if r < 0.4 and sh[d] and x.size:
        fn = g.choice(("argmax", "argmin"))
        # an argmax of a near-tie picks a nearly equal element: safe for computed floats too
        return f"np.take_along_axis({src}, {a}.{fn}(axis={ax}, keepdims=True), axis={ax})"
    # a same-rank index: each dim 1 or x's, dim d any length; traced (v % n) or constant
    shape = tuple(int(g.rng.integers(1, 4)) if k == d else (m if g.chance(0.6) else 1)
                  for k, m in enumerate(sh))
    if not sh[d]:
        shape = tuple(0 if k == d else m for k, m in enumerate(shape))
    cands = [v for v in g.vars(lambda v: v.dtype.kind in "iu" and v.ndim == nd and v.size)
             if all(m in (1, sh[k]) or k == d for k, m in enumerate(g.env[v].shape))]
    if cands and sh[d] and g.chance(0.6):
        v = g.choice(cands)
        if not _fits(g.env[v].dtype, 0, sh[d]):
            v = f"{v}.astype(np.int64)"
        return f"np.take_along_axis({src}, {v} % {sh[d]}, axis={ax})"
    vals = [int(v) for v in g.rng.integers(-sh[d], max(sh[d], 1), int(np.prod(shape)))] if sh[d] else []
    return f"np.take_along_axis({src}, np.array({vals!r}, dtype=np.intp).reshape({shape!r}), axis={ax})"


# --- counting (reports, tests)
def _advanced(value) -> bool:
    items = value if isinstance(value, tuple) else (value,)
    for k in items:
        if isinstance(k, list) or (isinstance(k, np.ndarray) and k.dtype.kind in "iu"):
            return True
    return False


def step_gathers(expr: str, env: dict) -> bool:
    """Whether ``expr`` indexes with an integer array (evaluated in ``env``) or calls take."""
    if "take(" in expr or "take_along_axis(" in expr:
        return True
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            try:
                key = _evaluate(ast.unparse(node.slice), env) if not isinstance(node.slice, ast.Tuple) \
                    else tuple(_evaluate(ast.unparse(e), env) if not isinstance(e, ast.Slice) else slice(None)
                               for e in node.slice.elts)
            except Exception:       # noqa: BLE001
                continue
            if _advanced(key):
                return True
    return False


def gather_steps(p) -> int:
    """How many of program ``p``'s steps gather (index with an integer array or call take)."""
    env = {i.name: i.build() for i in p.inputs}
    n = 0
    for s in p.steps:
        n += step_gathers(s.expr, env)
        try:
            env[s.out] = np.asarray(s.run(env))
        except Exception:       # noqa: BLE001 - an error program's last step
            break
    return n
