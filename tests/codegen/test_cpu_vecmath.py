"""The CPU's vectorisable float64 transcendentals (codegen/cpu_vecmath.py): every function against
an 80-bit long-double reference in ulps, special values bit for bit as NumPy gives them, float32
through them within half an ulp and a little, and the helpers' loops vectorised by LLVM."""
from __future__ import annotations

import itertools
import platform
import re

import numpy as np
import pytest

import kfuse
from kfuse.codegen import cpu_vecmath

UNARY = [op for op in cpu_vecmath.FLOAT64 if op != "arctan2"]
UNARY32 = UNARY + ["sin", "cos"]          # float32 only (cpu_vecmath.WIDENED)
MAX_ULP = {"float64": 4.0, "float32": 0.6}       # the f64 helpers' worst: cosh 3.6 ulp (0.5: f32 rounding)
F32_OWN = {"exp": 2.5, "log": 1.0, "log1p": 1.5, "tanh": 4.0}   # cpu_helpers' float32 ones (their docstrings)
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 5e-324, -5e-324, 2.2250738585072014e-308,
            1e-300, -1e-300, 1e-20, -1e-20, 1e-8, 0.5, -0.5, 0.625, -0.625, 0.66, 2.414, 2.5, 22.0, 355.0,
            709.0, 709.78, 709.79, 710.0, -745.13, -745.14, -746.0, 1024.0, 1100.0, 268435457.0, 1e300,
            -1e300, 1.7976931348623157e308, 8.0, 1 + 2 ** -52, 1 - 2 ** -53]

needs_long_double = pytest.mark.skipif(np.finfo(np.longdouble).nmant < 63,
                                       reason="no 80-bit long double for the reference")


def _all_unary(x):
    return tuple(getattr(np, op)(x) for op in (UNARY32 if x.dtype == np.float32 else UNARY))


def _inputs(dtype) -> np.ndarray:
    rng = np.random.default_rng(7)
    wide = 10.0 ** rng.uniform(-300 if dtype == np.float64 else -40, 300 if dtype == np.float64 else 38, 4000)
    parts = [wide, -wide, rng.uniform(-2, 2, 4000), rng.uniform(-800, 800, 2000), rng.uniform(0.99, 1.01, 1000),
             np.pi / 2 * np.arange(-50, 50)]
    with np.errstate(over="ignore"):
        return np.concatenate(parts + [np.array(SPECIALS)]).astype(dtype)


def _ulps(got: np.ndarray, x: np.ndarray, op: str) -> float:
    with np.errstate(all="ignore"):
        ref = getattr(np, op)(x.astype(np.longdouble))
        exact = ref.astype(got.dtype)
        finite = np.isfinite(exact) & np.isfinite(got)
        spacing = np.spacing(np.abs(exact)).astype(np.longdouble)
        spacing[spacing == 0] = np.finfo(got.dtype).smallest_subnormal
        err = np.abs(got.astype(np.longdouble) - ref) / spacing
    return float(np.max(np.where(finite, err, 0)))


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (np.isnan(a) & np.isnan(b)) | ((a == b) & (np.signbit(a) == np.signbit(b)))


def _same_bits_where_special(got: np.ndarray, want: np.ndarray, exact: np.ndarray) -> list:
    """Positions where NumPy's value is not finite or is a zero, and kfuse's differs (NaN-ness,
    infinity and sign of zero) from it and from the correctly rounded value ``exact`` (NumPy's
    float32 SIMD loops flush some results next to the smallest subnormal to zero)."""
    special = ~np.isfinite(want) | (want == 0)
    return np.flatnonzero(special & ~_same(got, want) & ~_same(got, exact)).tolist()


@needs_long_double
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_unary_functions_within_ulps_and_specials_exact(dtype):
    x = _inputs(dtype)
    got = kfuse.jit(_all_unary, backend="cpu")(x)
    with np.errstate(all="ignore"):
        want = _all_unary(x)
    for op, g, w in zip(UNARY32 if dtype == np.float32 else UNARY, got, want):
        assert g.dtype == w.dtype, op
        with np.errstate(all="ignore"):
            exact = getattr(np, op)(x.astype(np.longdouble)).astype(dtype)
        bad = _same_bits_where_special(g, w, exact)
        assert not bad, f"np.{op}: {[(x[i], g[i], w[i]) for i in bad[:5]]}"
        assert np.array_equal(np.isnan(g), np.isnan(w)), f"np.{op}: NaN where NumPy has none or the reverse"
        err = _ulps(g, x, op)
        bound = F32_OWN.get(op, MAX_ULP["float32"]) if dtype == np.float32 else MAX_ULP["float64"]
        assert err <= bound, f"np.{op} {np.dtype(dtype).name}: {err:.2f} ulp"


@needs_long_double
@pytest.mark.parametrize("op,dtype", [("arctan2", np.float64), ("arctan2", np.float32)])
def test_binary_functions_on_special_grids_and_random_pairs(op, dtype):
    """arctan2's octants, zeros and infinities, and random pairs of any magnitude."""
    s = np.array(SPECIALS[:12] + [3.0, -3.0, 0.1, -7.5, 2.0, -2.0, 0.5, 1.5, -1.5], dtype)
    ys, xs = (np.array(v, dtype) for v in zip(*itertools.product(s, s)))
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(5000) * 10.0 ** rng.uniform(-20, 20, 5000)).astype(dtype)
    b = (rng.standard_normal(5000) * 10.0 ** rng.uniform(-20, 20, 5000)).astype(dtype)
    y, x = np.concatenate([ys, a]), np.concatenate([xs, b])
    f = getattr(np, op)
    got = kfuse.jit(f, backend="cpu")(y, x)          # (a ufunc jitted as it is)
    with np.errstate(all="ignore"):
        want = f(y, x)
        ref = f(y.astype(np.longdouble), x.astype(np.longdouble))
    bad = _same_bits_where_special(got, want, ref.astype(dtype))
    assert not bad, [(y[i], x[i], got[i], want[i]) for i in bad[:5]]
    spacing = np.spacing(np.abs(ref.astype(dtype))).astype(np.longdouble)
    finite = np.isfinite(want) & (spacing > 0)
    err = np.abs(got.astype(np.longdouble) - ref)[finite] / spacing[finite]
    assert float(err.max()) <= MAX_ULP[np.dtype(dtype).name]


def test_cost_model_prices_the_helpers_it_is_rendered_with():
    from kfuse.fusion import cpu_cost
    assert {op.value for op in cpu_cost.WIDE_SPECIALS} == set(cpu_vecmath.FLOAT64)
    assert {op.value for op in cpu_cost.WIDENED_SPECIALS} == set(cpu_vecmath.WIDENED)


VECTORISED = ("exp", "log", "log1p", "arctan", "cosh")    # (cpu_vecmath._JIT: those LLVM inlines)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 vector types")
def test_helpers_vectorise():
    """A loop over each helper compiles to vector code (a scalar call would keep it scalar)."""
    numba = pytest.importorskip("numba")
    src = ["import numpy as np", "import numba"] + [s for s, _ in cpu_vecmath.SOURCES.values()]
    for op in VECTORISED:
        src.append(f"@numba.njit(error_model='numpy')\ndef run_{op}(x, out):\n    for i in range(x.size):\n"
                   f"        out[i] = {cpu_vecmath.FLOAT64[op]}(x[i])")
    ns: dict = {}
    exec(compile("\n\n".join(src), "<vecmath>", "exec"), ns)
    x = np.linspace(0.1, 0.9, 64)
    for op in VECTORISED:
        ns[f"run_{op}"](x, np.empty_like(x))
        ir = "".join(ns[f"run_{op}"].inspect_llvm().values())
        assert re.search(r"<\d+ x double>", ir), f"{op}: the loop stayed scalar"
    assert numba is not None
