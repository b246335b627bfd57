"""The op-record table: one row per NumPy ufunc or function kfuse traces, with what it takes (its
arity, the dtypes tested, each operand's value domain, the shape cases), run by
``test_op_records.py`` over shapes x dtypes x backend against NumPy (as JAX's ``op_record`` table
drives its ``lax_numpy_test.py``).

A row's ``dtypes`` of None means every tested dtype that NumPy's own loops accept unchanged
(``ufunc.resolve_dtypes``): the table never copies NumPy's type tables. Adding a ufunc to kfuse
adds one row here. Value domains (:func:`values`) keep an op where NumPy defines it (``positive``
for log) and put NumPy's edge values (signed zeros, infinities, NaN, integer extremes) in front.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ufunc_cases import int_edges

# The dtypes the table runs; a row narrows them. The rows of one dtype and shape case compile as
# one function (test_op_records.py), so the CPU side costs a few compiles per dtype.
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOATS = ("float16", "float32", "float64")
COMPLEX = ("complex64", "complex128")
NUMBERS = INTS + FLOATS
DTYPES = ("bool",) + NUMBERS + COMPLEX
REDUCE_DTYPES = ("bool", "int8", "uint64", "float16", "float32", "float64") + COMPLEX

# shape case -> one shape per operand (operands broadcast as NumPy does); reductions take "rows"
SHAPES = {
    "bcast": ((4, 6), (6,), (4, 1)),
    "rows": ((3, 7),),
}
ELEMENTWISE = ("bcast",)

# reduction keyword variants, each one output (another axis is another kernel: compile time)
AXES = ({"axis": -1},)


@dataclass(frozen=True)
class OpRecord:
    name: str                              # the test's name for the row (the NumPy name)
    fn: object                             # the NumPy callable (traced by kfuse, run by NumPy)
    arity: int
    dtypes: tuple | None = None            # None: every DTYPES entry NumPy's loops accept
    domain: tuple = ("any",)               # one value domain per operand (the last repeats)
    shapes: tuple = ELEMENTWISE
    variants: tuple = ({},)                # keyword arguments, each variant one output
    reduction: bool = False                # compared with assert_matches_numpy's reductions rule

    def domain_of(self, k: int) -> str:
        return self.domain[min(k, len(self.domain) - 1)]

    def accepts(self, dtype: str) -> bool:
        if self.dtypes is not None:
            return dtype in self.dtypes
        dt = np.dtype(dtype)
        try:
            loop = self.fn.resolve_dtypes((dt,) * self.fn.nin + (None,) * self.fn.nout)
        except TypeError:
            return False
        return all(np.dtype(t) == dt for t in loop[:self.fn.nin])


def _u(name, domain=("any",), **kw) -> OpRecord:
    return OpRecord(name, getattr(np, name), 1, domain=domain, **kw)


def _b(name, domain=("any",), **kw) -> OpRecord:
    return OpRecord(name, getattr(np, name), 2, domain=domain, **kw)


def _reduce(name, dtypes=REDUCE_DTYPES, variants=AXES) -> OpRecord:
    return OpRecord(name, getattr(np, name), 1, dtypes=dtypes, domain=("finite",), shapes=("rows",),
                    variants=variants, reduction=True)


RECORDS: tuple[OpRecord, ...] = (
    # unary ufuncs
    _u("negative"), _u("positive"), _u("absolute"), _u("fabs"), _u("conjugate"),
    _u("exp"), _u("exp2"), _u("expm1"), _u("log", ("positive",)), _u("log2", ("positive",)),
    _u("log10", ("positive",)), _u("log1p", ("positive",)), _u("sqrt", ("positive",)), _u("cbrt"),
    _u("square"), _u("reciprocal", ("nonzero",)), _u("sin"), _u("cos"), _u("tan"),
    _u("arcsin", ("unit",)), _u("arccos", ("unit",)), _u("arctan"), _u("sinh"), _u("cosh"),
    _u("tanh"), _u("arcsinh"), _u("arccosh", ("ge1",)), _u("arctanh", ("unit",)),
    _u("deg2rad"), _u("rad2deg"), _u("degrees"), _u("radians"),
    _u("floor"), _u("ceil"), _u("trunc"), _u("rint"), _u("sign"), _u("signbit"),
    _u("bitwise_count"), _u("isnan"), _u("isinf"), _u("isfinite"), _u("logical_not"),
    _u("invert"),
    # binary ufuncs
    _b("add"), _b("subtract"), _b("multiply"), _b("divide"), _b("floor_divide"), _b("remainder"),
    _b("fmod"), _b("power", ("any", "exponent")), _b("float_power", ("positive", "exponent")),
    _b("arctan2"), _b("hypot"), _b("copysign"), _b("logaddexp"), _b("logaddexp2"),
    _b("heaviside"), _b("maximum"), _b("minimum"), _b("fmax"), _b("fmin"), _b("equal"),
    _b("not_equal"), _b("less"), _b("less_equal"), _b("greater"), _b("greater_equal"),
    _b("logical_and"), _b("logical_or"), _b("logical_xor"), _b("bitwise_and"), _b("bitwise_or"),
    _b("bitwise_xor"), _b("left_shift", ("any", "shift")), _b("right_shift", ("any", "shift")),
    _b("gcd"), _b("lcm"),
    OpRecord("ldexp", lambda x, e: np.ldexp(x, e.astype(np.int32)), 2, FLOATS, ("any", "shift")),
    OpRecord("multiply_constant", lambda x: x * x.dtype.type(3), 1, NUMBERS),
    # NumPy functions over ufuncs
    OpRecord("where", lambda c, x, y: np.where(c > y, x, y), 3, DTYPES),
    # the parts of complex numbers (np.real/np.imag/np.angle of real arrays: test_numpy_functions)
    OpRecord("real", np.real, 1, COMPLEX), OpRecord("imag", np.imag, 1, COMPLEX),
    OpRecord("angle", np.angle, 1, COMPLEX, variants=({}, {"deg": True})),
    OpRecord("conj_method", lambda x: x.conj(), 1, COMPLEX),
    OpRecord("complex_scalar", lambda x: x * (2 - 1j) + 1j, 1, COMPLEX),
    OpRecord("clip", lambda x, lo, hi: np.clip(x, np.minimum(lo, hi), hi), 3, NUMBERS),
    OpRecord("round", np.round, 1, NUMBERS),
    OpRecord("fix", np.fix, 1, FLOATS),
    OpRecord("isposinf", np.isposinf, 1, FLOATS),
    OpRecord("isneginf", np.isneginf, 1, FLOATS),
    OpRecord("sinc", np.sinc, 1, FLOATS),
    OpRecord("nan_to_num", np.nan_to_num, 1, FLOATS, variants=({}, {"nan": 1.5, "posinf": 2.0})),
    OpRecord("isclose", np.isclose, 2, FLOATS),
    # reductions
    _reduce("sum"), _reduce("prod"), _reduce("max"), _reduce("min"), _reduce("mean"),
    _reduce("std", REDUCE_DTYPES[1:]), _reduce("var", REDUCE_DTYPES[1:]), _reduce("any"),
    _reduce("all"), _reduce("argmax"), _reduce("argmin"), _reduce("ptp", REDUCE_DTYPES[1:]),
    _reduce("nansum", FLOATS), _reduce("nanmean", FLOATS), _reduce("nanmax", FLOATS),
    _reduce("nanmin", FLOATS), _reduce("count_nonzero"),
    # scans
    _reduce("cumsum"), _reduce("cumprod"),
)

_FLOAT_EDGES = {
    "any": [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -2.5, 3.0],
    "positive": [0.0, np.inf, np.nan, 1.0, 2.0, 0.25],
    "nonzero": [np.inf, -np.inf, np.nan, 1.0, -1.0, -0.5],
    "unit": [0.0, -0.0, 1.0, -1.0, np.nan, 0.5],
    "ge1": [1.0, np.inf, np.nan, 2.0],
    "exponent": [0.0, 1.0, 2.0, -1.0, 0.5],
    "shift": [0, 1, 2, 3],
    "finite": [],
}


def values(domain: str, dtype: str, shape: tuple, seed: int) -> np.ndarray:
    """An array of ``shape`` and ``dtype`` in ``domain``: random values with the domain's edge
    values first (as many as fit; none in an operand of fewer than 4 elements)."""
    dt, rng, n = np.dtype(dtype), np.random.default_rng(seed), int(np.prod(shape, dtype=np.int64))
    if dt.kind == "c":
        return _complex_values(domain, dt, shape, rng)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind == "f":
        draw = {"positive": lambda: rng.random(n) * 4, "unit": lambda: rng.uniform(-1, 1, n),
                "ge1": lambda: 1 + rng.random(n) * 4, "exponent": lambda: rng.uniform(-2, 3, n),
                "shift": lambda: rng.integers(0, 8, n)}.get(domain, lambda: rng.standard_normal(n) * 3)()
        edges = _FLOAT_EDGES[domain]
    else:
        bits = dt.itemsize * 8
        if domain == "shift":
            draw, edges = rng.integers(0, bits, n), [0, 1, bits - 1, bits, bits + 1]
        elif domain == "exponent":
            draw, edges = rng.integers(0, 5, n), [0, 1, 2]
        elif domain == "finite":
            draw, edges = rng.integers(0 if dt.kind == "u" else -20, 20, n), []
        else:
            info = np.iinfo(dt)
            draw = rng.integers(max(info.min, -50), min(info.max, 50), n, endpoint=True)
            keep = {"any": lambda v: True, "nonzero": lambda v: v != 0}.get(domain, lambda v: v > 0)
            edges = [v for v in int_edges(dt).tolist() if keep(v)]
            draw = np.where([keep(v) for v in draw], draw, 1 if domain == "nonzero" else 1 - draw)
    out = np.asarray(draw, dtype=np.float64 if dt.kind == "f" else object).copy()
    k = min(n, len(edges)) if n >= 4 else 0        # a 0-d operand takes a random value
    out[:k] = edges[:k]
    with np.errstate(over="ignore"):
        return out.astype(dt).reshape(shape)


def _complex_values(domain: str, dt: np.dtype, shape: tuple, rng) -> np.ndarray:
    """Complex operands: each part drawn from the float ``domain`` (an exponent's parts: its real
    ones, imaginary part 0 for NumPy's integer-power paths, then any), the domain's edge values
    paired across the parts in a random order first."""
    part = np.dtype(np.float32 if dt == np.complex64 else np.float64)
    re = values(domain, part.name, shape, int(rng.integers(2**31))).astype(np.float64).ravel()
    im = values("finite", part.name, shape, int(rng.integers(2**31))).astype(np.float64).ravel()
    n = re.size
    if domain == "exponent":
        im[: n // 2] = 0.0
    out = re + 1j * im
    edges = _FLOAT_EDGES.get(domain, [])
    pairs = [complex(r, i) for r in edges for i in edges]
    rng.shuffle(pairs)
    k = min(n, len(pairs)) if n >= 4 else 0
    out[:k] = pairs[:k]
    return out.astype(dt).reshape(shape)

