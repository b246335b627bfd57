"""The CPU's float32 power (codegen/cpu_vecmath.py's ``_powf_d``, 2**(y log2|x|) in float64 rounded
once): C99's special values bit for bit as NumPy's scalar (libm) power gives them, every sign
included; a random grid of magnitudes and exponents (results near float32's overflow and through its
subnormals) correctly rounded; a kernel's float32 power calls it unless the exponent is a constant
integer (``x ** 3`` stays libm's: tests/codegen/test_power_policy.py), and its loop vectorises."""
from __future__ import annotations

import platform
import re

import numpy as np
import pytest

import kfuse
from kfuse.codegen import cpu, cpu_vecmath
from kfuse.testing import assert_matches_numpy

numba = pytest.importorskip("numba")

SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5, np.inf, -np.inf, np.nan,
                    1e-45, -1e-45, 3.4e38, -3.4e38, 1.1754942e-38, 0.45454547, 16777216.0, 16777218.0, 1e30,
                    -1e30, 7.0, 1e-7, 0.99999994, 1.0000001, 127.0, 128.0, -149.0, -150.0], np.float32)


def _run():
    src = ["import numpy as np", "import numba"] + [s for s, _ in cpu_vecmath.SOURCES.values()]
    src.append("@numba.njit(error_model='numpy')\ndef run(x, y, out):\n    for i in range(x.size):\n"
               "        out[i] = np.float32(_powf_d(np.float64(x[i]), np.float64(y[i])))")
    ns: dict = {}
    exec(compile("\n\n".join(src), "<powf>", "exec"), ns)
    return ns["run"]


def _pow(x, y):
    out = np.empty_like(x)
    _run()(x, y, out)
    return out


def test_special_values_bit_for_bit():
    """Every pair of special values (zeros, infinities, NaN, +-1, integer and non-integer
    exponents of both parities, subnormals, float32's extremes) as NumPy's scalar power."""
    x, y = (a.ravel() for a in np.meshgrid(SPECIAL, SPECIAL))
    got = _pow(x, y)
    with np.errstate(all="ignore"):
        want = np.array([a ** b for a, b in zip(x, y)], np.float32)     # libm's powf
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), [(a, b, g, w) for a, b, g, w in zip(x[~same], y[~same], got[~same], want[~same])][:8]
    neg = np.signbit(got) & ~np.isnan(got)
    assert neg.sum() > 20                   # odd integer exponents of negative bases (and -0.0, -inf)


def _grid():
    rng = np.random.default_rng(5)
    n = 1 << 19
    x = (np.exp2(rng.uniform(-149, 128, n)) * rng.choice([-1.0, 1.0], n)).astype(np.float32)
    y = (rng.standard_normal(n) * np.exp2(rng.uniform(-12, 12, n))).astype(np.float32)
    y[::3] = np.round(y[::3])                               # integer exponents (negative bases' signs)
    near = rng.uniform(0.5, 2, n // 8).astype(np.float32)   # results near overflow and through subnormals
    ny = (rng.choice([127.9, 128.0, -126.0, -149.5, -150.0], n // 8) / np.log2(near.astype(np.float64))).astype(np.float32)
    return np.concatenate([x, near]), np.concatenate([y, ny])


def test_random_grid_correctly_rounded():
    x, y = _grid()
    got = _pow(x, y)
    with np.errstate(all="ignore"):
        ref = np.power(x.astype(np.float64), y.astype(np.float64))
        r32 = ref.astype(np.float32)
    fin = np.isfinite(r32) & (r32 != 0)
    assert fin.sum() > 200_000 and (np.abs(r32[fin]) < 1.2e-38).sum() > 1000 and (np.abs(r32[fin]) > 1e37).sum() > 1000
    ulp = np.exp2(np.maximum(np.floor(np.log2(np.abs(r32[fin]).astype(np.float64))) - 23, -149))   # (float32's)
    err = np.abs(got[fin].astype(np.float64) - ref[fin]) / ulp
    assert err.max() <= 0.5 + 2 ** -10
    rest = ~fin                             # overflow to +-inf, underflow to +-0, NaN: exactly
    assert np.array_equal(got[rest], r32[rest], equal_nan=True)
    assert np.array_equal(np.signbit(got[rest & ~np.isnan(r32)]), np.signbit(r32[rest & ~np.isnan(r32)]))


def _power_line(fn, *specs):
    (kir,) = kfuse.jit(fn, backend="cpu").lower(*specs).kernels()
    return next(line for line in cpu.emit(kir).splitlines() if "power(" in line or "_powf_d(" in line)


def test_kernels_use_it_but_for_integer_exponents():
    assert "_powf_d(" in _power_line(lambda x: np.power(np.clip(x, 0.0, 1.0), 1.0 / 2.2), "f32[100]")
    assert "_powf_d(" in _power_line(lambda x, y: x ** y, "f32[100]", "f32[100]")
    for fn in (lambda x: x ** 3, lambda x: np.power(x, 3.0), lambda x: x ** -3.0):
        line = _power_line(fn, "f32[100]")
        assert "np.power(" in line and "_powf_d" not in line
    assert "np.power(" in _power_line(lambda x: x ** 0.3, "f64[100]")      # float64: libm's


def test_kernel_matches_numpy():
    x, y = _grid()
    f = kfuse.jit(lambda a, b: a ** b, backend="cpu")
    with np.errstate(all="ignore"):
        assert_matches_numpy(f(x, y), x ** y)
        img = np.random.default_rng(1).uniform(-0.1, 1.1, (4, 8, 32, 32)).astype(np.float32)
        gamma = kfuse.jit(lambda a: np.power(np.clip(a, 0.0, 1.0), 1.0 / 2.2), backend="cpu")(img)
        assert_matches_numpy(gamma, np.power(np.clip(img, 0.0, 1.0), 1.0 / 2.2))


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 vector types")
def test_loop_vectorises():
    run = _run()
    x = np.linspace(0.1, 0.9, 64).astype(np.float32)
    run(x, x, np.empty_like(x))
    ir = "".join(run.inspect_llvm().values())
    assert re.search(r"<\d+ x double>", ir) and not re.search(r"call .*@(pow|llvm\.pow)", ir)
