"""The complex kind of random programs (``kfuse fuzz --dtypes complex``): :class:`ComplexGen` draws
complex64/complex128 inputs most of the time (a few real ones, which promote), complex constants
(``1j``, ``(2-1.5j)``, ``np.complex64(...)``) and the ufuncs NumPy defines on complex numbers, the
parts of complex values (``.real``, ``.imag``, ``np.angle``, ``np.conj``, ``.conj()``), and every
other kind of step of the default generator (reductions, movement, matmul, where/astype, writes,
gathers, scans, scatters) over those values. The default kinds' programs do not change: this is a
subclass, drawn only when asked for.

Guards, as the default generator's: a complex value cast to an integer goes through its real
part made finite and clipped into range (undefined otherwise); ``tan``/``tanh``, the inverse
functions and ``power`` take only values that are not themselves computed (their condition number
turns a last-ulp difference of a computed argument, ``exp`` of libm against Numba's, into noise);
a complex ``prod``/``cumprod`` reads values near 1 as a float product scan does (``gen_scan``); a
contraction with a complex result takes its operands with their infinite and NaN elements made 0:
which parts of such a sum of products are NaN depends on the implementation, and NumPy's own differ
(``np.dot`` of complex64 ``[..., -inf-0j]`` with itself is ``nan+nanj`` through the BLAS,
``np.einsum('i,i')`` of the same gives ``inf+nanj``; cuBLAS gives a third).
"""
from __future__ import annotations

import numpy as np

import re

from .generator import DTYPES, _Gen
from .generator import generate as default_generate
from .program import Program, _evaluate

COMPLEX_DTYPES = ("complex64", "complex128")
_DTYPES = COMPLEX_DTYPES + ("float32", "float64", "int32", "bool")
_DTYPE_W = np.array([3, 3, 1, 1, 0.5, 0.5])
# unary ufuncs with a complex loop, then the parts of a complex value (methods and functions)
UNARY = ("negative", "positive", "absolute", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1",
         "sqrt", "square", "reciprocal", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh",
         "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "rint", "sign", "isnan", "isinf",
         "isfinite", "logical_not", "conjugate", "real", "imag", "angle", "conj")
BINARY = ("add", "subtract", "multiply", "divide", "power", "equal", "not_equal", "less",
          "less_equal", "greater", "greater_equal", "maximum", "minimum", "fmax", "fmin",
          "logical_and", "logical_or", "logical_xor")
_OPERATORS = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "power": "**", "equal": "==",
              "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">="}
# ill-conditioned where their argument is a computed value (module docstring)
_EXACT_ONLY = ("tan", "tanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "power",
               "log1p", "expm1")
# functions whose value at a zero part depends on its sign (log(-2 - 0j) = log 2 - pi j): after an
# op that leaves zero signs open (compare.ZERO_SIGN_UNSPECIFIED), their operand's zeros are +0.0
_BRANCH_CUT = ("log", "log2", "log10", "sqrt", "angle", "reciprocal")
_CONSTS = ("1j", "(2-1.5j)", "(-0.5+0.25j)", "np.complex64(1+2j)", "np.complex128(-1j)", "(3+0j)")


class ComplexGen(_Gen):
    """A program generator of complex values (module docstring)."""

    ALLOWED = DTYPES + COMPLEX_DTYPES

    def dtype(self) -> str:
        return _DTYPES[int(self.rng.choice(len(_DTYPES), p=_DTYPE_W / _DTYPE_W.sum()))]

    def values(self, dtype: str, n: int) -> tuple:
        if dtype not in COMPLEX_DTYPES:
            return super().values(dtype, n)
        part = "float32" if dtype == "complex64" else "float64"
        re, im = super().values(part, n), super().values(part, n)
        if self.chance(0.3):            # real values: the imaginary parts' sign of zero matters
            im = tuple(self.choice((0.0, -0.0)) for _ in range(n))
        return tuple(complex(r, i) for r, i in zip(re, im))

    def const(self, dtype_hint=None, small=False) -> str:
        if self.chance(0.35):
            return self.choice(_CONSTS)
        return super().const(dtype_hint, small)

    def _computed(self, a: str) -> bool:
        return a.startswith("v")

    def gen_unary(self) -> str | None:
        name = self.choice(UNARY)
        a = self.var()
        if name in _EXACT_ONLY and self._computed(a):
            return None
        kind = self.env[a].dtype.kind
        if name == "reciprocal" and kind in "biu":       # (1 / 0 cast to an int is undefined)
            a = self._safe_divisor(a, np.reciprocal(np.ones(1, self.env[a].dtype)).dtype)
        elif name in _BRANCH_CUT and kind in "fc" and self._zero_sign_open():
            a = f"({a} + 0.0)"          # zero parts made +0.0: their sign picks the branch
        if name in ("real", "imag"):
            return f"{a}.{name}" if self.chance(0.5) else f"np.{name}({a})"
        if name == "conj":
            return f"{a}.conj()"
        if name == "angle":
            return f"np.angle({a}, deg=True)" if self.chance(0.3) else f"np.angle({a})"
        if name == "absolute" and self.chance(0.5):
            return f"abs({a})"
        if name == "negative" and self.chance(0.5):
            return f"-{a}"
        return f"np.{name}({a})"

    def gen_binary(self) -> str | None:
        name = self.choice(BINARY)
        a = self.var()
        use_const = self.chance(0.3)
        b = self.const(small=name == "power") if use_const else self.var()
        if name == "power":
            if self._computed(a) or not use_const and self._computed(b):
                return None
            if not use_const:           # exponents kept small (|w log z| scales the error), an
                kind = self.env[b].dtype.kind       # integer one not negative (NumPy's ValueError)
                b = (f"np.clip({b}.real, -3, 3)" if kind == "c" else
                     f"np.clip({b}, 0, 3)" if kind in "biu" else f"np.clip({b}, -3, 3)")
        elif use_const and self.chance(0.3):
            a, b = b, a                 # a constant on the left
        if name in _OPERATORS and self.chance(0.6):
            return f"({a} {_OPERATORS[name]} {b})"
        return f"np.{name}({a}, {b})"

    def gen_other(self) -> str | None:
        made = super().gen_other()
        if made is None:
            return None
        a = next((v for v in self.env if made.startswith(f"{v}.astype(np.int") or
                  made.startswith(f"{v}.astype(np.uint")), None)
        if a is not None and self.env[a].dtype.kind == "c":   # a complex -> int cast: the real part, guarded
            dst = np.dtype(made[len(a) + len(".astype(np."):-1])
            bits = dst.itemsize * 8
            lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 2)) if dst.kind == "i" else (0, 2 ** (bits - 1))
            return (f"np.clip(np.where(np.isfinite({a}.real), {a}.real, 0), {float(lo)!r}, {float(hi)!r})"
                    f".astype(np.{dst.name})")
        return made

    def gen_matmul(self) -> str | None:
        made = super().gen_matmul()
        if made is None or np.asarray(_evaluate(made, self.env)).dtype.kind != "c":
            return made

        def finite(m):      # (module docstring: the implementation's NaN parts)
            v = m.group(0)
            if v not in self.env or np.isfinite(self.env[v]).all():
                return v
            return f"np.where(np.isfinite({v}), {v}, 0)"
        return re.sub(r"\b[av]\d+\b", finite, made)

    def gen_reduction(self) -> str | None:
        made = super().gen_reduction()
        if made is None or "prod" not in made:
            return made
        a = next((v for v in self.env if f"{v}." in made or f"({v}" in made), None)
        if a is not None and self.env[a].dtype.kind == "c" and self._computed(a):
            return None                 # products of computed complex values: overflow order
        return made


def generate(seed: int, index: int, max_steps: int = 5, favor: str | None = None,
             dtypes: str = "default") -> Program:
    """The ``index``-th program of the run seeded ``seed``: ``generator.generate``'s for the
    default ``dtypes``, a :class:`ComplexGen` one for ``"complex"`` (another run)."""
    if dtypes == "complex":
        return ComplexGen(seed, index, max_steps, favor).build()
    if dtypes != "default":
        raise ValueError(f"unknown dtypes {dtypes!r}; expected 'default' or 'complex'")
    return default_generate(seed, index, max_steps, favor)
