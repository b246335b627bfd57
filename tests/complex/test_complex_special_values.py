"""Complex ufuncs at NumPy's special values (infinities, NaN and signed zeros in either part, huge
and tiny parts) and on random values, every backend that has Feature.COMPLEX, against NumPy with
kfuse.testing's tolerances (infinities and NaN part by part). The grid is every pair of special
parts, so each branch of npymath's C99 Annex G tables (``exp``, ``sinh``, ``arccosh``...) and of
``npy_cpow`` is met."""
import numpy as np
import pytest

from kfuse import backends
from kfuse.backends import Feature

from backends import jit_and_numpy
from tolerance import assert_matches_numpy

PARTS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-300, 1e300, 1e30, np.inf, -np.inf, np.nan]
UNARY = ("negative", "positive", "absolute", "conjugate", "exp", "exp2", "expm1", "log", "log2", "log10",
         "log1p", "sqrt", "square", "reciprocal", "sign", "rint", "sin", "cos", "tan", "arcsin",
         "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "isnan",
         "isinf", "isfinite", "logical_not")
BINARY = ("add", "subtract", "multiply", "divide", "power", "equal", "not_equal", "less",
          "less_equal", "greater", "greater_equal", "maximum", "minimum", "fmax", "fmin",
          "logical_and", "logical_or", "logical_xor")
DTYPES = ("complex64", "complex128")


def _with_complex(backend: str) -> None:
    if Feature.COMPLEX not in backends.get(backend).features:
        pytest.skip(f"the {backend} backend has no complex numbers yet (Feature.COMPLEX)")


def _grid(dtype) -> np.ndarray:
    rng = np.random.default_rng(0)
    special = np.array([complex(r, i) for r in PARTS for i in PARTS])
    with np.errstate(over="ignore"):            # 1e300 is inf in complex64
        return np.concatenate([special, rng.standard_normal(64) * 3 + 1j * rng.standard_normal(64) * 3]).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", UNARY)
def test_unary_special_values(name, dtype, backend):
    _with_complex(backend)
    fn = getattr(np, name)
    got, want = jit_and_numpy(lambda z: fn(z), backend, _grid(dtype))
    assert_matches_numpy(got, want, err_msg=f"np.{name} {dtype}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", BINARY)
def test_binary_special_values(name, dtype, backend):
    _with_complex(backend)
    g = _grid(dtype)[::3]
    a, b = np.repeat(g, g.size), np.tile(g, g.size)      # every pair
    if name == "power":     # a huge finite exponent makes sin/cos of w log z's last ulps: noise
        keep = ~(np.isfinite(b) & (np.abs(b) > 1e3))
        a, b = a[keep], b[keep]
    fn = getattr(np, name)
    got, want = jit_and_numpy(lambda x, y: fn(x, y), backend, a, b)
    assert_matches_numpy(got, want, err_msg=f"np.{name} {dtype}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("exponent", [2, 3, -1, -2, 7, 0.5, 2.5, 1j, 2 + 0j, 0, 100])
def test_power_of_a_constant(exponent, dtype, backend):
    """npy_cpow's paths: integer exponents by repeated products (a negative one divided into 1),
    others through exp(w log z); ndarray.__pow__'s fast paths (z ** 2 is np.square, z ** -1
    np.reciprocal, z ** 0.5 np.sqrt) give other infinities than npy_cpow, as NumPy's do."""
    _with_complex(backend)
    if exponent == 100 and np.dtype(dtype) == np.complex64 and backend != "cpu":
        pytest.xfail("exp(100 log z) overflowing in float32 on the GPU: an infinite part's sign differs "
                     "from NumPy's at 2 of the grid's values (H200, 2026-11-27)")
    got, want = jit_and_numpy(lambda z: z ** exponent, backend, _grid(dtype))
    assert_matches_numpy(got, want, err_msg=f"z ** {exponent!r} {dtype}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_parts_and_casts(dtype, backend):
    _with_complex(backend)

    def fn(z):
        return (z.real, z.imag, np.angle(z), np.angle(z, deg=True), z.conj(), z.astype(np.complex64),
                z.astype(np.complex128), z.astype(bool), z.real.astype(np.float16))
    got, want = jit_and_numpy(fn, backend, _grid(dtype))
    for g, w in zip(got, want):
        assert_matches_numpy(g, w)
