"""Fuzz steps that scan (the generator's ``scan`` kind): ``np.cumsum``/``np.cumprod`` as functions
and as methods (``x.cumsum()``), ``np.nancumsum``/``np.nancumprod``, ``np.cumulative_sum``/
``np.cumulative_prod`` (``include_initial=True`` too), and the ``accumulate`` method of
``np.add``, ``np.multiply``, ``np.maximum``, ``np.minimum`` (``np.logical_or``/``np.logical_and``
of booleans); ``axis`` left out, ``None``, positive, negative or positional, and along an axis of
length 1 (``x[None]``, ``x[:, None]``, a reduction with ``keepdims=True``); ``dtype=`` (integer
scans in ``int8``/``int16``/``uint8`` that wrap, exact float accumulators of integers, float16).
A 0-d value is accumulated as ``x[None]`` (NumPy cannot accumulate on a scalar: left as it is
now and then, an error program); ``ufunc.accumulate(x, axis=None)`` of 2-D ``x`` is NumPy's
ValueError too; a 0-d value's own scans (``np.cumulative_sum``, ``axis=0``/``-1``) and
``ufunc.accumulate`` with ``axis=None`` or a one-axis tuple are drawn too (``docs/FUZZING.md`` 35).

Scanned values are inputs or computed ones (producers: ``x * 2``, ``np.abs(x)``, a transpose, a
reversal, an ``astype(np.int8)``/``astype(np.float16)``, a reduction, a comparison for the logical
scans), and NaN-making ones (``np.where(x > 1, np.nan, x)``, ``np.sqrt``, ``np.log``) for the
maximum/minimum accumulates and the nan-scans. The scan's result may be consumed in the same
step (``np.cumsum(x * 2, axis=1) / 3``, ``np.cumsum(x, 0)[::-1]``, a reduction of a scan, a scan
of a scan, ``S - x``: the exclusive scan).

Products are kept bounded: a float product scan usually runs over ``x * 0.5 + 0.75`` (clipped
first now and then), so a product of up to 48 terms seldom reaches inf; integer products wrap,
which is exact. A float (or complex) is never scanned with an integer ``dtype=`` (the cast of NaN or of an
out-of-range value is undefined); an integer gets ``dtype=np.float64`` up to 32 bits and
``np.float32``/``np.float16`` up to 16 bits, where the conversion rounds once (float32 holds every
such integer; float16 rounds it once, or overflows to inf exactly as NumPy does).

:func:`scan_steps` counts the steps that scan (for reports and tests)."""
from __future__ import annotations

import re

import numpy as np

from .gen_gather import with_other
from .program import _evaluate

# form -> (template, weight); {x}: the scanned expression, {k}: axis/dtype/... keywords
FORMS = {
    "cumsum": ("np.cumsum({x}{k})", 2.0),
    "cumsum method": ("{x}.cumsum({k})", 1.5),
    "cumprod": ("np.cumprod({x}{k})", 1.0),
    "cumprod method": ("{x}.cumprod({k})", 1.0),
    "nancumsum": ("np.nancumsum({x}{k})", 1.0),
    "nancumprod": ("np.nancumprod({x}{k})", 1.0),
    "cumulative_sum": ("np.cumulative_sum({x}{k})", 1.0),
    "cumulative_prod": ("np.cumulative_prod({x}{k})", 1.0),
    "add.accumulate": ("np.add.accumulate({x}{k})", 1.0),
    "multiply.accumulate": ("np.multiply.accumulate({x}{k})", 1.0),
    "maximum.accumulate": ("np.maximum.accumulate({x}{k})", 1.0),
    "minimum.accumulate": ("np.minimum.accumulate({x}{k})", 1.0),
    "logical_or.accumulate": ("np.logical_or.accumulate({x}{k})", 1.0),
    "logical_and.accumulate": ("np.logical_and.accumulate({x}{k})", 1.0),
}
_NAMES = tuple(FORMS)
_W = np.array([w for _, w in FORMS.values()])
_PRODUCT = ("cumprod", "cumprod method", "nancumprod", "cumulative_prod", "multiply.accumulate")
_EXTREMUM = ("maximum.accumulate", "minimum.accumulate")
_NAN = ("nancumsum", "nancumprod")
_LOGICAL = ("logical_or.accumulate", "logical_and.accumulate")
_SCAN_RE = re.compile(r"\b(?:nancumsum|nancumprod|cumsum|cumprod|cumulative_sum|cumulative_prod)\(|"
                      r"\bnp\.(?:add|multiply|maximum|minimum|logical_or|logical_and)\.accumulate\(")


def _form(g) -> str:
    return _NAMES[int(g.rng.choice(len(_NAMES), p=_W / _W.sum()))]


def _value(g, expr: str):
    try:
        return np.asarray(_evaluate(expr, g.env))
    except Exception:       # noqa: BLE001
        return None


def _producer(g, a: str, form: str) -> str:
    """``a`` or a value computed from it, to be scanned."""
    x = g.env[a]
    nd = x.ndim
    r = g.rng.random()
    if form in _LOGICAL:                       # booleans (logical_or of floats is not a kfuse scan)
        if x.dtype == bool and r < 0.5:
            return a
        return g.choice((f"({a} > 0)", f"({a} != 0)", f"({a} < 1)"))
    if (form in _EXTREMUM + _NAN or form == "cumsum") and r < 0.35:
        # NaNs in the scanned values: maximum/minimum propagate them, the nan-scans skip them
        return g.choice((f"np.where({a} > 1, np.nan, {a})", f"np.sqrt({a})", f"np.log({a})",
                         f"np.where({a} < 0, np.nan, {a})"))
    r = g.rng.random()
    if r < 0.4:
        return a
    if r < 0.55:
        return g.choice((f"({a} * 2)", f"({a} + {g.const()})", f"np.absolute({a})", f"np.negative({a})"))
    if r < 0.7 and nd >= 1:                    # an axis of length 1 to scan along
        return g.choice((f"{a}[None]", f"{a}[:, None]", f"{a}[..., None]"))
    if r < 0.8 and nd >= 1:                    # a scan of a reduction (keepdims: a length-1 axis)
        ax = int(g.rng.integers(-nd, nd))
        red = g.choice(("sum", "sum", "mean", "max", "prod"))
        if red == "max" and x.size == 0:
            red = "sum"
        return g.choice((f"{a}.{red}(axis={ax}, keepdims=True)", f"{a}.{red}(axis={ax})"))
    if r < 0.88 and nd >= 1:
        return g.choice((f"{a}[::-1]", f"{a}.T", f"np.swapaxes({a}, 0, -1)" if nd >= 2 else f"{a}[1:]"))
    if x.dtype.kind in "biu" and g.chance(0.7):
        return f"{a}.astype(np.{g.choice(('int8', 'int8', 'uint8', 'int16'))})"   # wraps below
    return f"{a}.astype(np.float16)"


def _tame(g, src: str, form: str, arr) -> str:
    """A float product scan's terms moved near 1 (a product of 48 terms of 3 is inf in float32)."""
    if form not in _PRODUCT or arr is None or arr.dtype.kind not in "fc" or not g.chance(0.8):
        return src
    if g.chance(0.3):
        return f"(np.clip({src}, -2, 2) * 0.5 + 0.75)"
    return f"({src} * 0.5 + 0.75)"


def _axis_kw(g, arr, form: str) -> str:
    """The axis part of the call's arguments (with its leading comma), or ''."""
    nd = arr.ndim
    if nd == 0:
        # a 0-d array scans as one of shape (1,): axis None, 0 and -1 are all NumPy's (1,);
        # accumulate raises TypeError (cannot accumulate on a scalar): an error program
        if form.endswith("accumulate"):
            return ""
        return g.choice(("", "", ", axis=None", ", axis=0", ", axis=-1"))
    if form.endswith("accumulate"):
        if g.chance(0.25):
            return ""                         # axis 0
        if g.chance(0.1):
            return ", axis=None"              # 1-D: axis 0; above: NumPy's ValueError
    elif form.startswith("cumulative"):
        if nd == 1 and g.chance(0.5):
            return g.choice(("", ", axis=None"))    # required above one dimension
    elif g.chance(0.25):
        return g.choice(("", "", ", axis=None"))
    ones = [d for d, m in enumerate(arr.shape) if m == 1]
    d = g.choice(ones) if ones and g.chance(0.35) else int(g.rng.integers(nd))
    ax = d - nd if g.chance(0.35) else d
    if form.endswith("accumulate") and g.chance(0.15):
        return f", axis=({ax},)"              # one axis in a tuple
    if g.chance(0.2) and not form.startswith("cumulative"):
        return f", {ax}"                      # positional
    return f", axis={ax}"


def _dtype_kw(g, arr, form: str) -> str:
    """A ``dtype=`` keyword now and then: wrapping integer scans, exact float accumulators."""
    if form in _LOGICAL or not g.chance(0.3):
        return ""
    dt = arr.dtype
    if dt.kind == "f":
        opts = ("float16", "float32", "float64")
    elif dt.kind == "c":        # (a complex scanned in an integer dtype: undefined casts)
        opts = ("complex64", "complex128")
    else:
        bits = 1 if dt.kind == "b" else dt.itemsize * 8
        opts = ("int8", "int8", "int16", "uint8", "int64")
        if form not in _EXTREMUM:
            opts += ("int32", "uint64")
        opts += (("float64",) if bits <= 32 else ()) + (("float32", "float16") if bits <= 16 else ())
    return f", dtype=np.{g.choice(opts)}"


def _consumer(g, expr: str, src: str, arr, out) -> str:
    """``expr`` (the scan) or a value computed from it in the same step."""
    nd = out.ndim
    r = g.rng.random()
    if r < 0.45:
        return expr
    if r < 0.6:
        if arr is not None and arr.shape == out.shape and out.dtype.kind != "b" and g.chance(0.4):
            return f"({expr} - {src})"            # the exclusive scan
        return g.choice((f"({expr} / 3)", f"({expr} * 2)", f"({expr} > 0)", f"np.sqrt({expr})"))
    if r < 0.72 and nd >= 1:
        opts = [f"{expr}[::-1]", f"{expr}[..., ::-1]", f"{expr}[1:]"]
        if out.shape[-1]:
            opts.append(f"{expr}[..., -1]")
        if nd >= 2:
            opts.append(f"{expr}.T")
        return g.choice(opts)
    if r < 0.85 and nd >= 1:                      # a reduction of the scan
        red = g.choice(("sum", "mean", "any", "max", "min", "prod"))
        if red in ("max", "min") and out.size == 0:
            red = "sum"
        ax = g.choice(("", f"axis={int(g.rng.integers(-nd, nd))}"))
        kd = ", keepdims=True" if ax and g.chance(0.3) else ""
        return f"{expr}.{red}({ax}{kd})"
    if r < 0.93 and nd >= 1:                      # a scan of the scan
        ax = int(g.rng.integers(-nd, nd))
        fn = g.choice(("np.cumsum({e}, axis={a})", "np.maximum.accumulate({e}, axis={a})",
                       "np.minimum.accumulate({e}, {a})"))
        return fn.format(e=expr, a=ax)
    return with_other(g, expr, out.shape)


def scan(g) -> str | None:
    form = _form(g)
    a = g.var()
    if a is None:
        return None
    src = _producer(g, a, form)
    arr = _value(g, src)
    if arr is None:
        return None
    if form.endswith("accumulate") and arr.ndim == 0 and g.chance(0.9):
        src = f"{src}[None]"                      # else NumPy's TypeError: an error program
    src = _tame(g, src, form, arr)
    arr = _value(g, src)
    if arr is None:
        return None
    kw = _axis_kw(g, arr, form) + _dtype_kw(g, arr, form)
    if form.startswith("cumulative") and g.chance(0.4):
        kw += ", include_initial=True"
    template = FORMS[form][0]
    if template.startswith("{x}.") and kw.startswith(", "):
        kw = kw[2:]
    expr = template.format(x=src, k=kw)
    out = _value(g, expr)
    if out is None:
        return expr                               # NumPy rejects it: maybe an error program
    return _consumer(g, expr, src, arr, out)


# --- counting (reports, tests)
def step_scans(expr: str) -> bool:
    """Whether ``expr`` calls a scan."""
    return bool(_SCAN_RE.search(expr))


def scan_steps(p) -> int:
    """How many of program ``p``'s steps scan."""
    return sum(step_scans(s.expr) for s in p.steps)
