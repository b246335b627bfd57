"""Fuzz steps that write at index positions (the generator's ``scatter`` kind): item assignment
with index arrays (``x[idx] = v``, ``x[:, idx] = v``, ``x[i, j] = v``, ``x[1:, idx] = v``, ints,
``None`` and ``...`` mixed with arrays, 2-D index arrays), augmented ones (``x[idx] += v``, ``-=``,
``*=``, ``|=``...), writes through a view (``x.T[idx] = v``, ``x[1:][idx] = v``, ``x[::-1]``),
``np.<ufunc>.at`` for add, subtract, multiply, maximum, minimum, fmax, fmin, the bitwise ufuncs on
integers and logical_or/logical_and on booleans (scalar or array operands of other dtypes, so the
loop dtype differs from the array's: int with float, float16 with float32, int8 wrapping; slice
keys too), ``np.put``/``ndarray.put`` in every mode (values shorter than the indices repeat) and
``np.put_along_axis`` (``argmax(..., keepdims=True)``, ``(x > 0).astype(np.intp)``, constant
index arrays, ``axis=None``). A step writes one or two lines into an argument (``v3 = a0``, then
``v3[...] = ...``: the caller sees the write), into an earlier value that owns its memory, or into
a fresh copy (``a0 * 1``, ``np.zeros_like(a0)``, ``a0.astype(np.float16)``); the step after a
scatter often consumes the written array (a reduction, an elementwise op, a gather).

Index arrays are constants (distinct positions, negative ones, 2-D, reversed, empty), arguments
(``gen_gather._index_input``) or computed (``np.abs(i) % n``, ``i % n - n``, ``(x > 0).astype(
np.intp)``, argmax, ``gen_gather``'s traced forms); now and then out of range, which ends the
program in NumPy's IndexError (``_Gen.error_chance``).

What the backends must agree on: a plain or augmented assignment, ``np.put`` and
``np.put_along_axis`` land one of a repeated position's values on a GPU, so a draw writing
different values to one position is redrawn, or kept now and then marked
:data:`kfuse.fuzz.program.CPU_ORDER` (compared on the CPU only); a ``ufunc.at`` whose loop dtype
is not the integer/boolean array's own (``np.add.at(int8, i, 1.5)`` truncates after every add)
is order-dependent the same way unless its operand is one value. A float value is never assigned
into an integer array, and an integer ``ufunc.at`` computed in floats is simulated first: every
intermediate must be finite and in the integer's range (else the cast back is undefined).

:func:`scatter_steps` counts the steps that scatter (for reports and tests)."""
from __future__ import annotations

import ast
import dataclasses
import re
import warnings

import numpy as np

from . import gen_gather
from .gen_gather import _exact_source, _fits, _INT, with_other
from .program import CPU_ORDER, NAME_RE, _evaluate

AT_UFUNCS = {"f": ("add", "subtract", "multiply", "maximum", "minimum", "fmax", "fmin"),
             "iu": ("add", "subtract", "multiply", "maximum", "minimum", "fmax", "fmin",
                    "bitwise_or", "bitwise_and", "bitwise_xor"),
             "b": ("logical_or", "logical_and", "add", "multiply", "maximum", "minimum",
                   "bitwise_or", "bitwise_and", "bitwise_xor"),
             "c": ("add", "subtract", "multiply", "maximum", "minimum", "fmax", "fmin")}
AUGMENTED = {"f": "+-*", "iu": "+-*|&^", "b": "|&^", "c": "+-*"}
VIEWS = ("[::-1]", "[1:]", ".T", "[:, ::2]", "[::2, ::-1]")
CPU_ONLY_CHANCE = 0.2       # an order-dependent draw is kept, marked CPU_ORDER, this often
WILD_CHANCE = 0.04          # an index out of range (NumPy's IndexError ends the program)
WILD_ERROR_CHANCE = 0.5     # ... and the step is kept this often (else redrawn)
# A scatter's value may be the array it writes (``v[[1, 0]] = v``), an equal expression (``v = a *
# 2; v[[1, 0]] = a * 2``: one interned node) or the array a copy was made from (``v = a.copy();
# v.put([1, 0], a)``): kfuse wrote such a scatter into its base's buffer, reading values it had
# overwritten (docs/FUZZING.md bug 39, found by this kind). Two NumPy rules stay out of the draws:
# ``ufunc.at`` and ``put`` do not copy a value that is a view of the array written, and neither does
# a boolean mask's assignment (``x[::-1][[True, True]] = x`` gives ``[x[0], x[0]]``; an index
# array's does copy).
# An array made by indexing with a traced integer scalar (``w = a[a[:, 0].argmin()]``) is a view in
# NumPy, and in kfuse since docs/FUZZING.md bug 40 (found by this kind): a later write into ``a``
# shows through ``w``, and one into ``w`` reaches ``a``; both are drawn.
_CALL_RE = re.compile(r"\bnp\.\w+\.at\(|\bput\(|\bput_along_axis\(")


def _kind(dtype) -> str:
    k = np.dtype(dtype).kind
    return "iu" if k in "iu" else k


@dataclasses.dataclass
class _Target:
    """The array a step writes: ``out`` (the step's name), its value while lines are drawn
    (``cur``, a scratch copy) and the names that see it (``out``, and an in-place target's own)."""
    out: str
    cur: np.ndarray
    names: tuple
    exact: bool                 # its values are exact (an argmax of it picks NumPy's element)
    source: str                 # the earlier name written in place, or the fresh copy's source
    contiguous: bool            # the array written is C-contiguous (``cur`` is, as a scratch copy)
    wild: bool = False          # the line being drawn has an index out of range

    def scope(self, g) -> dict:
        return {**g.env, **{n: self.cur for n in self.names}}


@dataclasses.dataclass
class _Draw:
    """One write line, the positions it writes (an expression over ``_p``, the target's flat
    positions laid out in its shape) and the values it writes there (``written``, broadcast to the
    positions' shape, or repeated cyclically over them: ``cyclic``; None if unknown)."""
    line: str
    positions: str
    written: np.ndarray | None
    order_free: bool = False    # repeats combine to one result whatever their order (ufunc.at)
    cyclic: bool = False


# --- targets
def _owns(g, name: str) -> bool:
    """Whether env's ``name`` shares memory with no other value (a fresh array)."""
    a = g.env[name]
    return not any(np.may_share_memory(a, b) for k, b in g.env.items() if k != name)


def _target(g) -> tuple[str, _Target] | None:
    """The step's expression (an earlier name: written in place; or a fresh copy) and target."""
    out = f"v{len(g.steps)}"
    writable = g.vars(lambda v: v.ndim >= 1 and v.flags.writeable)
    args = [v for v in writable if v.startswith("a") and v not in g.index_inputs]
    owned = [v for v in writable if v.startswith("v") and _owns(g, v)]
    r = g.rng.random()
    if r < 0.3 and args:
        name = g.choice(args)
        return name, _Target(out, np.array(g.env[name]), (out, name), True, name, _contiguous(g.env[name]))
    if r < 0.45 and owned:
        name = owned[-1] if g.chance(0.6) else g.choice(owned)
        return name, _Target(out, np.array(g.env[name]), (out, name), _exact_source(g, name), name,
                             _contiguous(g.env[name]))
    src = g.var(lambda v: v.ndim >= 1)
    if src is None:
        return None
    kind = _kind(g.env[src].dtype)
    opts = [f"{src} * 1", f"np.zeros_like({src})", f"{src}.copy()", f"np.ones_like({src})"]
    if g.env[src].dtype != np.float16:
        opts.append(f"{src}.astype(np.float16)")
    if kind in "biu":
        opts.append(f"{src}.astype(np.int8)")
    expr = g.choice(opts)
    fresh = _evaluate(expr, g.env)
    return expr, _Target(out, np.array(fresh), (out,), _exact_source(g, src) or "like" in expr, src,
                         _contiguous(fresh))


def _contiguous(a: np.ndarray) -> bool:
    return bool(a.flags.c_contiguous)


def _aliases(g, t: _Target, value: np.ndarray) -> bool:
    """Whether env's ``value`` is (a view of) the array written in place: never the value of a
    ``ufunc.at``, a ``put`` or a mask assignment (NumPy reads it as the write goes)."""
    return len(t.names) > 1 and np.may_share_memory(value, g.env[t.source])


# --- index arrays
def _index(g, t: _Target, n: int, unique: bool) -> str:
    """An index array for a dim of size ``n``: distinct constant positions (for assignments),
    computed, an argument, ``gen_gather``'s forms; now and then empty or out of range."""
    r = g.rng.random()
    if r < WILD_CHANCE:
        return _wild(g, t, n)
    if n == 0 or r < 0.09:
        return g.choice(("[]", "np.zeros(0, dtype=np.intp)", "np.array([], dtype=np.int32)"))
    if unique and r < 0.55:
        return _distinct(g, n)
    if r < 0.75:
        c = _computed(g, n)
        if c is not None:
            return c
    return gen_gather._index(g, n)


def _wild(g, t: _Target, n: int) -> str:
    """Indices with one out of range: NumPy's IndexError (an error program)."""
    t.wild = True
    bad = g.choice((n, n + 2, -n - 1))
    return repr([bad] if g.chance(0.4) or not n else [int(g.rng.integers(n)), bad])


def _distinct(g, n: int) -> str:
    """Distinct constant positions in [-n, n) (each position once): a list, a typed, reversed or
    2-D np.array."""
    k = int(g.rng.integers(1, min(n, 5) + 1))
    vals = [int(v) - (n if g.chance(0.35) else 0) for v in g.rng.choice(n, k, replace=False)]
    r = g.rng.random()
    if r < 0.4:
        return repr(vals)
    if r < 0.55 and k % 2 == 0:
        return f"np.array({vals!r}).reshape(2, {k // 2})"
    if r < 0.7:
        return f"np.array({vals!r})[::-1]"
    dt = g.choice([d for d in _INT if _fits(d, -n if d[0] == "i" else 0, n)])
    if dt[0] == "u":
        vals = [v % n for v in vals]
    return f"np.array({vals!r}, dtype=np.{dt})"


def _computed(g, n: int) -> str | None:
    """A traced index array in [-n, n) by its own expression (positions often repeat)."""
    ints = g.vars(lambda v: v.dtype.kind in "iu" and v.ndim >= 1 and 0 < v.size <= 12)
    r = g.rng.random()
    if r < 0.45 and ints:
        v = g.choice(ints)
        dt = g.env[v].dtype
        if not _fits(dt, -n, n) or dt.kind == "u":
            v = f"{v}.astype(np.int64)"
        return f"(np.abs({v}) % {n})" if g.chance(0.6) else f"({v} % {n} - {n})"
    if r < 0.65 and n >= 2:
        src = g.var(lambda v: v.ndim >= 1 and 0 < v.size <= 12 and v.dtype.kind != "b")
        if src is not None and _exact_source(g, src):
            return f"({src} > 0).astype(np.intp)"
    if r < 0.8:
        i = gen_gather._index_input(g, n)
        if i is not None:
            return f"{i}[::-1]" if g.env[i].ndim == 1 and g.chance(0.5) else i
    return gen_gather._traced_index(g, n)


def _key(g, t: _Target, shape: tuple, unique: bool) -> list[str] | None:
    """The items of a key holding index arrays for an array of ``shape`` (setitem's syntax)."""
    nd = len(shape)
    if nd == 0:
        return None

    def i(d):
        return _index(g, t, shape[d], unique)
    r = g.rng.random()
    if nd == 1 or r < 0.3:
        return [i(0)]
    if r < 0.42:
        return g.choice(([":", i(1)], ["...", i(nd - 1)]))
    if r < 0.57:                        # two index arrays, zipped or broadcast to a grid
        d = int(g.rng.integers(nd - 1))
        first = i(d)
        if g.chance(0.4):
            first = f"np.asarray({first})[:, None]" if first.startswith("[") else f"{first}[:, None]"
        return [":"] * d + [first, i(d + 1)]
    if r < 0.67:                        # a slice and an array
        return g.choice((["1:", i(1)], ["::-1", i(1)], [i(0), "1:"]))
    if r < 0.77 and shape[0]:           # an int and an array
        return [str(int(g.rng.integers(-shape[0], shape[0]))), i(1)]
    if r < 0.87:                        # a new axis
        return g.choice((["None", i(0)], [i(0), "None"]))
    if nd >= 3:                         # split by a slice
        return [i(0), ":", i(2)]
    return [i(0), "..."]


_SLICE_RE = re.compile(r"-?\d*:-?\d*(:-?\d*)?")


def _call_key(items: list[str]) -> str:
    """The key as a ``ufunc.at`` argument: slices as ``slice(...)``, a tuple for several items."""
    def one(item):
        if item == "...":
            return "Ellipsis"
        if not _SLICE_RE.fullmatch(item):
            return item
        return f"slice({', '.join(p or 'None' for p in item.split(':'))})"
    conv = [one(i) for i in items]
    return conv[0] if len(conv) == 1 else f"({', '.join(conv)})"


def _multi_dim_index(g, t: _Target, items: list[str]) -> bool:
    """Whether a key item is an index array of more than one dim: NumPy 2.4.6's ``ufunc.at`` then
    reads garbage for a ``b`` of lower rank that broadcasts (``np.add.at(x, np.zeros((3, 3), int),
    [1, 1, 2])``), where kfuse computes the broadcast sum."""
    for item in items:
        if item != "..." and not _SLICE_RE.fullmatch(item):
            a = _array(g, t, item)
            if a is not None and a.ndim > 1:
                return True
    return False


# --- values
def _value(g, t: _Target, shape: tuple, read: str, alias_ok: bool = False) -> str:
    """A value to assign at positions of ``shape`` in ``t``: a variable that broadcasts (one that
    aliases the array written only if ``alias_ok``), a row of the target itself (a view of what
    is written), ``read`` (the positions' old values) times 2, a constant row, a constant. Never a
    float into an integer array (an out-of-range cast is undefined)."""
    ints_only = t.cur.dtype.kind in "iu"

    def fits(v):
        return _broadcasts(v.shape, shape) and not (ints_only and v.dtype.kind == "f") \
            and (alias_ok or not _aliases(g, t, v))
    r = g.rng.random()
    if r < 0.2 and (var := g.var(fits)) is not None:
        return var if g.chance(0.7) else f"({var} * 2)"
    if r < 0.35 and t.cur.ndim and t.cur.shape[0] and _broadcasts(t.cur.shape[1:], shape):
        return f"{t.out}[{int(g.rng.integers(t.cur.shape[0]))}]"
    if r < 0.45 and read:
        return f"({read} * 2)"
    if r < 0.55 and shape and shape[-1]:
        n = shape[-1]
        return g.choice((f"np.arange({n})", repr([int(v) for v in g.rng.integers(0, 5, n)])))
    return _const(g, t)


def _const(g, t: _Target) -> str:
    """A constant for ``t``: an integer one for an integer array (non-negative for unsigned)."""
    c = g.const()
    if t.cur.dtype.kind in "iu" and isinstance(_evaluate(c, {}), (float, np.floating)) or \
            t.cur.dtype.kind == "u" and _evaluate(c, {}) < 0:
        return str(int(g.rng.integers(0, 6)))
    return c


def _at_operand(g, t: _Target, shape: tuple, read: str) -> str:
    """``b`` of ``ufunc.at(x, key, b)``: scalars and arrays of other dtypes (the loop dtype then
    differs from x's), never a view of the array written (NumPy's ``at`` does not copy it)."""
    if t.cur.dtype.itemsize <= 2 and t.cur.dtype.kind in "iu" and g.chance(0.3):
        return g.choice(("100", "np.int8(127)", "(-120)", "np.int16(300)"))     # narrow ints wrap
    r = g.rng.random()
    if r < 0.25:
        var = g.var(lambda v: _broadcasts(v.shape, shape) and not _aliases(g, t, v))
        if var is not None:
            casts = (".astype(np.float32)",) + ((".astype(np.int8)",) if g.env[var].dtype.kind in "biu" else ())
            return var + (g.choice(casts) if g.chance(0.4) else "")
    if r < 0.4:
        dt = g.choice(("float32", "float16", "int8", "uint8", "int64"))
        return f"np.{dt}({int(g.rng.integers(1, 4))})"
    if r < 0.5 and read:
        return f"({read} + 1)"
    if r < 0.6 and shape and shape[-1]:
        vals = [int(v) for v in g.rng.integers(-4, 5, shape[-1])]
        return repr([v / 2 for v in vals] if g.chance(0.5) else vals)
    return g.const()


def _broadcasts(shape, target) -> bool:
    try:
        return np.broadcast_shapes(tuple(shape), tuple(target)) == tuple(target)
    except ValueError:
        return False


def _array(g, t: _Target, expr: str, dtype=None) -> np.ndarray | None:
    """NumPy's value of ``expr`` over the target's scope (cast to ``dtype``), None if it raises."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")         # (a complex value's probe cast to a real dtype)
            a = np.asarray(_evaluate(expr, t.scope(g)))
            return a if dtype is None else a.astype(dtype)
    except Exception:       # noqa: BLE001
        return None


# --- write forms: each draws a _Draw for the target, or None
def _view(g, t: _Target) -> str:
    """A view of the target to write through (now and then)."""
    if not g.chance(0.2):
        return ""
    return g.choice([v for v in VIEWS if t.cur.ndim >= (2 if "," in v or v == ".T" else 1)])


def _assign(g, t: _Target, augmented: bool) -> _Draw | None:
    view = _view(g, t)
    shape = np.shape(_evaluate(f"_c{view}", {"_c": t.cur}))
    items = _key(g, t, shape, unique=True)
    if items is None:
        return None
    key = ", ".join(items)
    read, positions = f"{t.out}{view}[{key}]", f"_p{view}[{key}]"
    old = _array(g, t, read)
    if old is None:
        return _Draw(f"{read} = 0", positions, None) if t.wild else None
    # (a boolean list in the key is a mask: NumPy's mask assignment does not copy an overlapping value)
    alias_ok = not re.search(r"\[(True|False)", key)
    value = _value(g, t, old.shape, read, alias_ok)
    if not augmented:
        return _Draw(f"{read} = {value}", positions, _array(g, t, value, t.cur.dtype))
    op = g.choice(AUGMENTED[_kind(t.cur.dtype)])
    return _Draw(f"{read} {op}= {value}", positions, _array(g, t, f"({read} {op} {value})", t.cur.dtype))


def _at(g, t: _Target) -> _Draw | None:
    ufunc = g.choice(AT_UFUNCS[_kind(t.cur.dtype)])
    view = _view(g, t)
    shape = np.shape(_evaluate(f"_c{view}", {"_c": t.cur}))
    if g.chance(0.1) and shape and shape[0] >= 2:      # a slice key: no position repeats
        items = [g.choice(("1:", "::2", ":-1"))]
    else:
        items = _key(g, t, shape, unique=False)
        if items is None:
            return None
    key = _call_key(items)
    read, positions = f"{t.out}{view}[{key}]", f"_p{view}[{key}]"
    old = _array(g, t, read)
    if old is None:
        return _Draw(f"np.{ufunc}.at({t.out}{view}, {key}, 1)", positions, None) if t.wild else None
    b = _at_operand(g, t, old.shape, read)
    b_vals = _array(g, t, b)
    loop = _loop_dtype(ufunc, t.cur.dtype, b_vals)
    if loop is None or not _broadcasts(b_vals.shape, old.shape):
        return None             # NumPy rejects it (a bitwise float...): redrawn
    if 0 < b_vals.ndim < old.ndim and _multi_dim_index(g, t, items):
        return None             # NumPy 2.4's at reads past such a b (docs/FUZZING.md, seed 1804 #1781)
    b_vals = np.broadcast_to(b_vals.astype(loop), old.shape)
    pos = np.asarray(_evaluate(positions, {**t.scope(g), "_p": _positions(t)}))
    if not _at_defined(ufunc, t.cur, pos, b_vals, loop):
        return None
    # a float array's at rounds each step (within a sum's tolerance in any order); an integer
    # array's own loop dtype wraps exactly; another loop dtype truncates after every step
    order_free = loop == t.cur.dtype or t.cur.dtype.kind == "f"
    return _Draw(f"np.{ufunc}.at({t.out}{view}, {key}, {b})", positions, b_vals, order_free)


def _loop_dtype(ufunc: str, x, b_vals) -> np.dtype | None:
    """The dtype ``np.<ufunc>.at(x, i, b)`` computes in: b is converted as ``np.asarray`` does, so
    a Python scalar counts with its default dtype (``np.fmax.at(uint64, i, 0)`` runs in float64),
    unlike in ``np.fmax(x, 0)``. None where NumPy has no loop (TypeError)."""
    if b_vals is None:
        return None
    try:
        with np.errstate(all="ignore"):
            return getattr(np, ufunc)(np.zeros((), x), np.zeros((), b_vals.dtype)).dtype
    except TypeError:
        return None


def _at_defined(ufunc: str, x: np.ndarray, positions, b_vals, loop) -> bool:
    """Whether ``np.<ufunc>.at`` into the integer array ``x`` computed in the float ``loop``
    dtype casts back only finite values in x's range (NumPy's cast of others is undefined)."""
    if x.dtype.kind not in "iu" or loop.kind != "f":
        return True
    info = np.iinfo(x.dtype)
    lo, hi = float(info.min) - 1.0, float(info.max) + 1.0
    flat, fn = x.flatten(), getattr(np, ufunc)
    with np.errstate(all="ignore"):
        for p, b in zip(positions.ravel(), b_vals.ravel()):
            r = fn(loop.type(flat[p]), b)
            if not (np.isfinite(r) and lo < r < hi):
                return False
            flat[p] = r
    return True


def _put(g, t: _Target) -> _Draw | None:
    n = t.cur.size
    mode = g.choice(("raise", "raise", "wrap", "clip")) if n else "raise"
    ind = _index(g, t, n, unique=True) if mode == "raise" else _wild_index(g, n, mode)
    kw = "" if mode == "raise" and g.chance(0.5) else f", mode='{mode}'"
    r = g.rng.random()
    if r < 0.4:
        v = _const(g, t)
    elif r < 0.7:           # usually shorter than the indices: repeated cyclically
        v = repr([int(x) for x in g.rng.integers(0, 6, int(g.rng.integers(1, 3)))])
    else:
        v = g.var(lambda a: a.size and not (t.cur.dtype.kind in "iu" and a.dtype.kind == "f")
                  and not _aliases(g, t, a)) or "[1, 2]"
    line = f"np.put({t.out}, {ind}, {v}{kw})" if g.chance(0.6) else f"{t.out}.put({ind}, {v}{kw})"
    return _Draw(line, f"np.take(_p.ravel(), {ind}, mode='{mode}')", _array(g, t, v, t.cur.dtype),
                 cyclic=True)


def _wild_index(g, n: int, mode: str) -> str:
    """``gen_gather``'s index for mode 'wrap'/'clip' (any values), kept within +-2**20 as intp for
    'wrap' even where gen_gather falls back to a raw integer value: NumPy's wrap loop steps by n
    (an index near 2**63 never returns)."""
    ind = gen_gather._wild_index(g, n, mode)
    try:
        vals = np.asarray(_evaluate(ind, g.env)).astype(np.intp)
    except Exception:       # noqa: BLE001
        vals = None
    if mode == "wrap" and (vals is None or not np.all(np.abs(vals.astype(float)) < 2 ** 20)):
        return repr([int(v) for v in g.rng.integers(-3 * n, 3 * n + 1, 3)])
    return ind


def _put_along(g, t: _Target) -> _Draw | None:
    x = t.cur
    nd = x.ndim
    d = int(g.rng.integers(nd))
    # axis=None writes through np.array(x.flat): x itself if contiguous, else a read-only copy
    # (NumPy's ValueError; kfuse writes x): drawn for contiguous arrays only
    ax = None if nd == 1 and t.contiguous and g.chance(0.2) else d - nd if g.chance(0.3) else d
    n = x.shape[d]
    r = g.rng.random()
    if r < 0.35 and n and t.exact:
        idx = f"np.{g.choice(('argmax', 'argmin'))}({t.out}, axis={ax}, keepdims=True)"
    elif r < 0.55 and n >= 2 and t.exact:
        idx = f"({t.out} > 0).astype(np.intp)"
    else:
        shape = tuple(int(g.rng.integers(1, 3)) if k == d else (m if g.chance(0.6) else 1)
                      for k, m in enumerate(x.shape))
        if not n:
            shape = tuple(0 if k == d else m for k, m in enumerate(shape))
        vals = [int(v) for v in g.rng.integers(-n, max(n, 1), int(np.prod(shape)))] if n else []
        idx = f"np.array({vals!r}, dtype=np.intp).reshape({shape!r})"
    old = _array(g, t, f"np.take_along_axis({t.out}, {idx}, axis={ax})")
    if old is None:
        return None
    v = _value(g, t, old.shape, "")
    return _Draw(f"np.put_along_axis({t.out}, {idx}, {v}, axis={ax})",
                 f"np.take_along_axis(_p, {idx}, axis={ax})", _array(g, t, v, t.cur.dtype))


FORMS = {"assign": (lambda g, t: _assign(g, t, False), 3.0),
         "augmented": (lambda g, t: _assign(g, t, True), 1.0),
         "at": (_at, 3.5), "put": (_put, 1.2), "put_along_axis": (_put_along, 1.0)}
_NAMES = tuple(FORMS)
_W = np.array([w for _, w in FORMS.values()])


def _positions(t: _Target) -> np.ndarray:
    return np.arange(t.cur.size).reshape(t.cur.shape)


def _conflicts(positions: np.ndarray, d: _Draw) -> bool:
    """Whether some position is written twice with different values (bit patterns)."""
    p = positions.ravel()
    if np.unique(p).size == p.size:
        return False
    if d.order_free:
        return False
    if d.written is None:
        return True
    try:
        v = np.resize(d.written.ravel(), p.size) if d.cyclic else \
            np.broadcast_to(d.written, positions.shape).ravel()
    except ValueError:
        return True
    order = np.argsort(p, kind="stable")
    bits = np.ascontiguousarray(v[order]).view(np.uint8).reshape(p.size, -1)
    same_position = p[order][1:] == p[order][:-1]
    return bool((same_position & (bits[1:] != bits[:-1]).any(axis=1)).any())


# --- the step
def _line(g, t: _Target) -> str | None:
    """One write line into ``t`` (applied to ``t.cur``), or None. A line with an index out of
    range is returned as it is: the program's last (NumPy's IndexError)."""
    for _ in range(4):
        t.wild = False
        form = _NAMES[int(g.rng.choice(len(_NAMES), p=_W / _W.sum()))]
        draw = FORMS[form][0](g, t)
        if draw is None:
            continue
        scope = t.scope(g)
        try:
            positions = np.asarray(_evaluate(draw.positions, {**scope, "_p": _positions(t)}))
            _run(draw.line, scope)
        except Exception as e:      # noqa: BLE001
            if t.wild and isinstance(e, IndexError):
                g.error_chance = WILD_ERROR_CHANCE
                return draw.line
            continue
        if t.wild:
            continue            # in range after all
        if _conflicts(positions, draw):
            if not g.chance(CPU_ONLY_CHANCE) or not _c_ordered(draw.line, scope):
                continue
            draw.line += f"  {CPU_ORDER}"
        t.cur = scope[t.out]
        t.exact = t.exact and all(_exact_source(g, n) for n in NAME_RE.findall(draw.line) if n in g.env)
        return draw.line
    return None


def _c_ordered(line: str, scope: dict) -> bool:
    """Whether every array ``line`` names is C-contiguous: NumPy writes repeated positions in the
    order it iterates the index arrays, their memory order (an index array computed from a
    transposed input lands another value last than C order does: cpu seed 2201 #3112)."""
    return all(scope[n].flags.c_contiguous for n in NAME_RE.findall(line)
               if isinstance(scope.get(n), np.ndarray))


def _run(line: str, scope: dict) -> None:
    """Apply ``line`` in ``scope`` as NumPy does (warnings off), raising what NumPy raises."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            exec(line, {"np": np, "nan": float("nan"), "inf": float("inf")}, scope)


def _consume(g, name: str) -> str:
    """A step reading the array the previous step wrote: a reduction, an elementwise op with
    another value, a gather."""
    a = g.env[name]
    r, nd = g.rng.random(), a.ndim
    if r < 0.35 and nd:
        red = g.choice(("sum", "max", "min", "any", "mean"))
        init = ", initial=0" if red in ("max", "min") and a.dtype.kind != "b" else ""
        return f"{name}.{red}(axis={int(g.rng.integers(-nd, nd))}{init})"
    if r < 0.55 and nd and a.shape[0]:
        return f"{name}[{gen_gather._index(g, a.shape[0])}]"
    if r < 0.75 and (other := with_other(g, name, a.shape)) != name:
        return other
    return f"({name} * 2)" if a.dtype.kind != "b" else f"({name} ^ True)"


def scatter(g) -> tuple[str, tuple[str, ...]] | str | None:
    last = g.steps[-1] if g.steps else None
    if last is not None and last.out in g.env and step_scatters(last, g.env) and g.chance(0.4):
        return _consume(g, last.out)
    made = _target(g)
    if made is None:
        return None
    expr, t = made
    lines = []
    for _ in range(1 if g.chance(0.7) else 2):
        line = _line(g, t)
        if line is not None:
            lines.append(line)
            if t.wild:
                break
    return (expr, tuple(lines)) if lines else None


# --- counting (reports, tests)
def write_scatters(line: str, scope: dict) -> bool:
    """Whether the write ``line`` (evaluated in ``scope``) writes at index positions: a call of
    ``ufunc.at``/``put``/``put_along_axis``, or an assignment whose key holds an index array."""
    if _CALL_RE.search(line):
        return True
    try:
        target = ast.parse(line).body[0]
        target = target.targets[0] if isinstance(target, ast.Assign) else target.target
    except (SyntaxError, AttributeError, IndexError):
        return False
    return isinstance(target, ast.Subscript) and gen_gather.step_gathers(ast.unparse(target), scope)


def step_scatters(step, env: dict) -> bool:
    """Whether ``step`` (run in ``env``, which holds its value) has a write that scatters."""
    return any(write_scatters(w, env) for w in step.writes)


def scatter_steps(p) -> int:
    """How many of program ``p``'s steps scatter."""
    env = {i.name: i.build() for i in p.inputs}
    n = 0
    for s in p.steps:
        try:
            env[s.out] = np.asarray(s.run(env))
        except Exception:       # noqa: BLE001 - an error program's last step
            return n + bool(s.writes and any(_CALL_RE.search(w) or "[" in w for w in s.writes))
        n += step_scatters(s, env)
    return n
