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
from kfuse.testing import assert_matches_numpy

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


# float32 sin, cos and arctan2 (cpu_vecmath.WIDENED): float64 inside, one rounding, so within half an ulp
# of the correctly rounded value and a little (NumPy's own AVX512 loops are within ~1.5 ulp)
F32_TIE = 0.5 + 2.0 ** -10


def _f32_ulps(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    spacing = np.spacing(np.abs(ref.astype(np.float32))).astype(np.longdouble)
    spacing[spacing == 0] = np.finfo(np.float32).smallest_subnormal
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(ref), np.abs(got.astype(np.longdouble) - ref) / spacing, 0)


def _f32_args() -> np.ndarray:
    """Every exponent (random bit patterns), moderate angles, the floats nearest multiples of pi/2
    up to 2**24, the fast reduction's window edges (64-bit word boundaries of 2/pi's bits: exponents
    24 and 88), the hardest float32 to reduce (16367173 * 2**72, Muller), subnormals and the ends."""
    rng = np.random.default_rng(11)
    bits = rng.integers(0, 1 << 32, 1 << 18, dtype=np.uint64).astype(np.uint32).view(np.float32)
    k = np.concatenate([np.arange(1, 4000), rng.integers(1, 1 << 24, 4000)]).astype(np.float64)
    near = (k * (np.pi / 2)).astype(np.float32)
    near = np.concatenate([near, np.nextafter(near, np.float32(np.inf)), np.nextafter(near, np.float32(0))])
    edges = np.ldexp(np.float32(1), np.arange(-149, 128)).astype(np.float32)
    edges = np.concatenate([edges, np.nextafter(edges, np.float32(0)), np.nextafter(edges, np.float32(np.inf))])
    specials = np.array([0.0, 1e-45, 1e-40, 1.1754944e-38, 0.7853981, 0.78539819, 1048575.9, 1048576.0,
                         16367173 * 2.0 ** 72, 3.4028235e38, 1000.0, 32768.0], np.float32)
    x = np.concatenate([bits, rng.uniform(-1000, 1000, 1 << 16).astype(np.float32), near, edges, specials])
    x = x[np.isfinite(x)]
    return np.concatenate([x, -x]).astype(np.float32)


@needs_long_double
@pytest.mark.parametrize("op", ["sin", "cos"])
def test_float32_sin_cos_within_half_an_ulp_at_every_exponent(op):
    x = _f32_args()
    f = kfuse.jit(getattr(np, op), backend="cpu")
    got, want = f(x), getattr(np, op)(x)
    ref = getattr(np, op)(x.astype(np.longdouble))
    assert got.dtype == np.float32
    err = _f32_ulps(got, ref)
    assert float(err.max()) <= F32_TIE, (op, x[np.argmax(err)], got[np.argmax(err)], float(err.max()))
    assert_matches_numpy(got, want)
    if op == "sin":                     # odd: exactly x's sign, -0.0 for -0.0; sin(x) = x for tiny x
        nz = ref != 0
        assert np.array_equal(np.signbit(got[nz]), np.signbit(ref[nz].astype(np.float32)))
        tiny = np.abs(x) < 1e-4
        np.testing.assert_array_equal(got[tiny].view(np.uint32), x[tiny].view(np.uint32))


def test_float32_sin_cos_special_values_as_numpy():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 3.4028235e38, -3.4028235e38],
                 np.float32)
    with np.errstate(invalid="ignore"):
        for op in ("sin", "cos"):
            got, want = kfuse.jit(getattr(np, op), backend="cpu")(x), getattr(np, op)(x)
            assert np.array_equal(np.isnan(got), np.isnan(want)), op
            ok = ~np.isnan(want)
            np.testing.assert_array_equal(got[ok].view(np.uint32), want[ok].view(np.uint32), err_msg=op)
        assert np.signbit(kfuse.jit(np.sin, backend="cpu")(x)[1])          # sin(-0.0) = -0.0


@needs_long_double
def test_float32_arctan2_quadrants_zeros_and_random_pairs():
    """Every combination of signed zeros, infinities, NaN and finite values (C99's table, bit for
    bit as NumPy), and random pairs of all magnitudes within half an ulp."""
    s = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-45, -1e-45, 0.41421357, 2.4142137, 3.4e38,
                  -3.4e38, 1e-40], np.float32)
    ys, xs = (np.array(v, np.float32) for v in zip(*itertools.product(s, s)))
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(1 << 17) * 10.0 ** rng.uniform(-45, 38, 1 << 17)).astype(np.float32)
    b = (rng.standard_normal(1 << 17) * 10.0 ** rng.uniform(-45, 38, 1 << 17)).astype(np.float32)
    c = rng.standard_normal(1 << 16).astype(np.float32)
    y, x = np.concatenate([ys, a, c, c * np.float32(0.41421357)]), np.concatenate([xs, b, -c, c])
    f = kfuse.jit(np.arctan2, backend="cpu")
    got, want = f(y, x), np.arctan2(y, x)
    special = ~np.isfinite(x) | ~np.isfinite(y) | (x == 0) | (y == 0)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = special & ~np.isnan(want)
    np.testing.assert_array_equal(got[ok].view(np.uint32), want[ok].view(np.uint32))
    assert np.array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(want[~np.isnan(want)]))
    assert float(_f32_ulps(got, np.arctan2(y.astype(np.longdouble), x.astype(np.longdouble))).max()) <= F32_TIE
    assert_matches_numpy(got, want)


def test_float32_sin_cos_arctan2_render_as_inlined_helpers_that_vectorise():
    """The kernels call the float32 helpers (not the float64 arctan2 or a libm call), which are
    inlined (a call keeps the loop scalar), and a loop over them compiles to vector code."""
    numba = pytest.importorskip("numba")
    f = kfuse.jit(lambda t, y: (np.cos(t), np.sin(t), np.arctan2(y, t)), backend="cpu")
    src = f.lower(np.zeros(8, np.float32), np.zeros(8, np.float32)).as_text("cpu")
    for name in ("_sin_f", "_cos_f", "_arctan2_f"):
        assert f"{name}(np.float64(" in src, name
        assert re.search(rf'inline="always"\)\ndef {name}\(', src), name
    assert "_arctan2_d(" not in src
    f64 = kfuse.jit(np.arctan2, backend="cpu").lower(np.zeros(8), np.zeros(8)).as_text("cpu")
    assert "_arctan2_d(" in f64 and "_arctan2_f(" not in f64
    if platform.machine() not in ("x86_64", "AMD64"):
        return
    src = ["import numpy as np", "import numba"] + [s for s, _ in cpu_vecmath.SOURCES.values()]
    src.append("@numba.njit(error_model='numpy')\ndef run(x, y, o1, o2, o3):\n    for i in range(x.size):\n"
               "        o1[i] = np.float32(_sin_f(np.float64(x[i])))\n"
               "        o2[i] = np.float32(_cos_f(np.float64(x[i])))\n"
               "        o3[i] = np.float32(_arctan2_f(np.float64(y[i]), np.float64(x[i])))")
    ns: dict = {}
    exec(compile("\n\n".join(src), "<vecmath32>", "exec"), ns)
    x = np.linspace(0.1, 9.0, 64, dtype=np.float32)
    ns["run"](x, x, np.empty_like(x), np.empty_like(x), np.empty_like(x))
    ir = "".join(ns["run"].inspect_llvm().values())
    assert re.search(r"<\d+ x double>", ir), "the loop stayed scalar"
    assert numba is not None
