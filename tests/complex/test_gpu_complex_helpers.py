"""The GPU backends' complex helpers against NumPy without a GPU: the CUDA C prelude
(``codegen/cuda_complex.py``) compiled for the host by g++ with shims for the CUDA spellings, and
the Numba-CUDA templates (``codegen/numba_cuda_complex.py``) instantiated for the host (NumPy
scalars, plain Python), each run over every pair of special parts (infinities, NaN, signed zeros,
huge and tiny) and random values, compared with NumPy by kfuse.testing's rule. The device
functions differ from the host's libm by a few ulps inside the tolerance; the algorithms and their
special-value branches are the ones checked here. On a GPU, ``tests/complex/`` and the op-record
table run the same ops through both backends."""
import ctypes
import shutil
import subprocess
import warnings
from fractions import Fraction

import numpy as np
import pytest

from kfuse.codegen import cuda_complex, numba_cuda_complex as ncx

from tolerance import assert_matches_numpy

PARTS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-300, 1e300, 1e30, np.inf, -np.inf, np.nan]
DTYPES = ("complex64", "complex128")
# ufunc -> (CUDA C expression of z, the Numba template's name)
UNARY = {"exp": ("kf_cexp(z)", "exp"), "log": ("kf_clog(z)", "log"), "sqrt": ("kf_csqrt(z)", "sqrt"),
         "sin": ("kf_csin(z)", "sin"), "cos": ("kf_ccos(z)", "cos"), "tan": ("kf_ctan(z)", "tan"),
         "sinh": ("kf_ccoshsinh<T, true>(z)", "sinh"), "cosh": ("kf_ccoshsinh<T, false>(z)", "cosh"),
         "tanh": ("kf_ctanh(z)", "tanh"), "arcsin": ("kf_casin(z)", "arcsin"), "arccos": ("kf_cacos(z)", "arccos"),
         "arctan": ("kf_catan(z)", "arctan"), "arcsinh": ("kf_casinh(z)", "arcsinh"),
         "arccosh": ("kf_cacosh(z)", "arccosh"), "arctanh": ("kf_catanh(z)", "arctanh"),
         "exp2": ("kf_cexp2(z)", "exp2"), "log2": ("kf_clogk(z, (T)1.4426950408889634)", "log2"),
         "log10": ("kf_clogk(z, (T)0.4342944819032518)", "log10"), "log1p": ("kf_clog1p(z)", "log1p"),
         "expm1": ("kf_cexpm1(z)", "expm1"), "reciprocal": ("kf_crecip(z)", "reciprocal"),
         "sign": ("kf_csign(z)", "sign"), "square": ("kf_csquare(z)", "square")}
BINARY = {"multiply": ("a * b", "fmul"), "divide": ("a / b", "div"), "power": ("kf_cpow(a, b)", "power"),
          "maximum": ("kf_cmaxmin<T, true>(a, b)", "maximum"), "minimum": ("kf_cmaxmin<T, false>(a, b)", "minimum"),
          "fmax": ("kf_cfmaxmin<T, true>(a, b)", "fmax"), "fmin": ("kf_cfmaxmin<T, false>(a, b)", "fmin")}


def _grid(dtype) -> np.ndarray:
    rng = np.random.default_rng(1)
    special = np.array([complex(r, i) for r in PARTS for i in PARTS])
    rand = np.concatenate([rng.uniform(-3, 3, 96) + 1j * rng.uniform(-3, 3, 96),
                           np.exp(rng.uniform(-20, 20, 32)) * np.exp(1j * rng.uniform(-4, 4, 32))])
    with np.errstate(over="ignore"):
        return np.concatenate([special, rand]).astype(dtype)


def _pairs(name, dtype):
    g = _grid(dtype)[::3]
    a, b = np.repeat(g, g.size), np.tile(g, g.size)
    if name == "power":     # a huge finite exponent makes sin/cos of w log z's last ulps: noise
        keep = ~(np.isfinite(b) & (np.abs(b) > 1e3))
        a, b = a[keep], b[keep]
    return a, b


def _numpy(name, *args):
    with np.errstate(all="ignore"):
        return getattr(np, name)(*args)


# ----------------------------------------------------------------------------- CUDA C, via g++

_SHIMS = r"""
#include <cmath>
#include <cstring>
using namespace std;
#define __device__
#define __forceinline__ inline
#define __align__(n) alignas(n)
inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
inline double __longlong_as_double(long long i) { double f; memcpy(&f, &i, 8); return f; }
inline float __uint_as_float(unsigned i) { float f; memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned i; memcpy(&i, &f, 4); return i; }
inline long long __double_as_longlong(double f) { long long i; memcpy(&i, &f, 8); return i; }
#define __shfl_xor_sync(m, v, l) (v)
#define __shfl_up_sync(m, v, d, w) (v)
#define __shfl_sync(m, v, d, w) (v)
"""


@pytest.fixture(scope="module")
def host_prelude(tmp_path_factory):
    """The prelude with a C entry point a ufunc and part type: ``<ufunc>_<float|double>``."""
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("no g++ to compile the CUDA C prelude for the host")
    lines = [_SHIMS, cuda_complex.PRELUDE]
    for T in ("float", "double"):
        head = f"typedef {T} T; for (long k = 0; k < n; ++k) {{"
        for name, (e, _) in UNARY.items():
            lines.append(f'extern "C" void {name}_{T}(const {T}* x, {T}* o, long n) {{ {head} '
                         f"KfCx<T> z = kf_cx(x[2*k], x[2*k+1]); KfCx<T> r = {e}; o[2*k] = r.re; o[2*k+1] = r.im; }} }}")
        for name, (e, _) in BINARY.items():
            lines.append(f'extern "C" void {name}_{T}(const {T}* x, const {T}* y, {T}* o, long n) {{ {head} '
                         f"KfCx<T> a = kf_cx(x[2*k], x[2*k+1]), b = kf_cx(y[2*k], y[2*k+1]); KfCx<T> r = {e}; "
                         "o[2*k] = r.re; o[2*k+1] = r.im; } }")
    d = tmp_path_factory.mktemp("prelude")
    (d / "p.cpp").write_text("\n".join(lines))
    # -ffp-contract=off: each add and multiply rounded on its own, as NVRTC's --fmad=false
    r = subprocess.run([gxx, "-O1", "-ffp-contract=off", "-std=c++17", "-shared", "-fPIC", "-o",
                        str(d / "p.so"), str(d / "p.cpp")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return ctypes.CDLL(str(d / "p.so"))


def _call_c(lib, name, dtype, *xs):
    xs = [np.ascontiguousarray(x, dtype) for x in xs]
    out = np.empty_like(xs[0])
    fn = getattr(lib, f"{name}_{'float' if dtype == 'complex64' else 'double'}")
    fn(*[x.ctypes.data_as(ctypes.c_void_p) for x in xs], out.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(out.size))
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", UNARY)
def test_cuda_prelude_unary(name, dtype, host_prelude):
    z = _grid(dtype)
    assert_matches_numpy(_call_c(host_prelude, name, dtype, z), _numpy(name, z), err_msg=f"{name} {dtype}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", BINARY)
def test_cuda_prelude_binary(name, dtype, host_prelude):
    a, b = _pairs(name, dtype)
    assert_matches_numpy(_call_c(host_prelude, name, dtype, a, b), _numpy(name, a, b), err_msg=f"{name} {dtype}")


# ----------------------------------------------------------------------------- Numba templates

def host_fma(a, b, c):
    """a * b + c rounded once (NumPy has no fma): exact through Fractions where all are finite
    and nonzero, an infinite c past a finite product, else the double expression (exact products of
    float32s; zeros keep their signs)."""
    t = type(a)
    if np.isfinite(a) and np.isfinite(b) and np.isinf(c):     # the exact product is finite
        return c
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)) or a * b == 0 or c == 0:
        return t(float(a) * float(b) + float(c))
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    try:
        return t(float(exact))
    except OverflowError:       # past the float64 range: an infinity of its sign
        return t(np.inf if exact > 0 else -np.inf)


@pytest.fixture(scope="module")
def host_templates():
    ns = {"np": np, "host_fma": host_fma}
    for src in ncx.sources("host").values():
        exec(src, ns)
    return ns


def _call_py(ns, name, dtype, *xs):
    fn = ns[ncx.helper_name(name, dtype)]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.array([fn(*v) for v in zip(*[x.astype(dtype) for x in xs])], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", UNARY)
def test_numba_cuda_templates_unary(name, dtype, host_templates):
    z = _grid(dtype)
    assert_matches_numpy(_call_py(host_templates, UNARY[name][1], dtype, z), _numpy(name, z),
                         err_msg=f"{name} {dtype}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", BINARY)
def test_numba_cuda_templates_binary(name, dtype, host_templates):
    a, b = _pairs(name, dtype)
    assert_matches_numpy(_call_py(host_templates, BINARY[name][1], dtype, a, b), _numpy(name, a, b),
                         err_msg=f"{name} {dtype}")


def test_templates_instantiate_for_the_device():
    """Every helper's device source names libdevice's function of its part dtype, no host one."""
    src = ncx.sources("cuda")
    assert "ld.expf(" in src[ncx.helper_name("exp", "complex64")]
    assert "ld.exp(" in src[ncx.helper_name("exp", "complex128")]
    for name, s in src.items():
        assert "np.exp(" not in s and "host_" not in s and "$" not in s and "@cuda.jit" in s, name
