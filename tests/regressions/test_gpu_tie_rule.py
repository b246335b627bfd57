"""NumPy's rule for equal operands of maximum/minimum and for sign(-0.0), in the GPU emitters.

NumPy 2.4 (all loops, contiguous, strided, SIMD and scalar):
  float32/float64  np.maximum(-0.0, 0.0) -> 0.0,  np.maximum(0.0, -0.0) -> -0.0  (the second)
  float16          np.maximum(-0.0, 0.0) -> -0.0, np.maximum(0.0, -0.0) -> 0.0   (the first:
                   npy_half_ge(a, b) ? a : b); minimum likewise; NaN propagates from either side.
  np.sign(-0.0) -> +0.0, np.sign(nan) -> nan.
(fmax/fmin of opposite zeros differ between NumPy's SIMD and scalar loops, even within one array:
unspecified, so neither checked here nor by the fuzzer.)

The CPU-side tests read the emitted rules (and run the Numba-CUDA ones, which are Python
expressions, on NumPy scalars); the gpu-marked tests run both GPU backends on a device.
Found by `kfuse fuzz` on the CPU backend (seed 2 #125, seed 3 #60/#639; docs/FUZZING.md bugs 3, 4);
the GPU emitters had the first-operand rule and Numba-CUDA sign(-0.0) = -0.0 until b2c3a31's
re-application.
"""
import itertools

import numpy as np
import pytest

from kfuse.codegen import cuda_ops, numba_cuda_ops

FLOATS = ("float16", "float32", "float64")
VALUES = (-0.0, 0.0, 1.0, -1.0, float("nan"))


def _bits(x):
    x = np.asarray(x)
    return "nan" if np.isnan(x) else f"{float(x)!r}"


def _numba_rule(op, dt, *args):
    """Evaluate the Numba-CUDA rule (a Python expression over register values) on NumPy scalars;
    float16 lives in float32 registers, as on the device."""
    names = [f"v{i}" for i in range(len(args))]
    k = numba_cuda_ops.K.Op("r", op, dt, tuple(names), (dt,) * len(args))
    expr = numba_cuda_ops.op_expr(k, names, lambda h: h, {})
    vt = np.float32 if dt == "float16" else np.dtype(dt).type
    env = {"np": np, **{n: vt(a) for n, a in zip(names, args)}}
    with np.errstate(all="ignore"):
        return np.dtype(dt).type(eval(expr, env))


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_numba_cuda_min_max_rule_is_numpys(op, dt):
    uf = getattr(np, op)
    for a, b in itertools.product(VALUES, VALUES):
        want = uf(np.dtype(dt).type(a), np.dtype(dt).type(b))
        assert _bits(_numba_rule(op, dt, a, b)) == _bits(want), (op, dt, a, b)
        assert np.signbit(_numba_rule(op, dt, a, b)) == np.signbit(want) or np.isnan(want), (op, dt, a, b)


@pytest.mark.parametrize("dt", FLOATS)
def test_numba_cuda_sign_rule_is_numpys(dt):
    for a in VALUES:
        got, want = _numba_rule("sign", dt, a), np.sign(np.dtype(dt).type(a))
        assert _bits(got) == _bits(want) and (np.isnan(want) or np.signbit(got) == np.signbit(want)), (dt, a)


def _c_helper(name):
    line = next(ln for ln in cuda_ops.PRELUDE.splitlines() if f" {name}(T a, T b)" in ln)
    return line.split("return", 1)[1].strip()


def test_cuda_prelude_tie_rules():
    # float32/float64: strict comparison, the second operand on ties; float16: the first
    assert _c_helper("kf_maxnan") == "(a > b || a != a) ? a : b; }"
    assert _c_helper("kf_minnan") == "(a < b || a != a) ? a : b; }"
    assert _c_helper("kf_maxnan_h") == "(a >= b || a != a) ? a : b; }"
    assert _c_helper("kf_minnan_h") == "(a <= b || a != a) ? a : b; }"


@pytest.mark.parametrize("dt,suffix", [("float16", "_h"), ("float32", ""), ("float64", "")])
def test_cuda_min_max_pick_the_dtypes_rule(dt, suffix):
    T = cuda_ops.ctype(dt)
    assert cuda_ops.op_expr("maximum", dt, ["a", "b"], (dt, dt)) == f"kf_maxnan{suffix}<{T}>(a, b)"
    assert cuda_ops.op_expr("minimum", dt, ["a", "b"], (dt, dt)) == f"kf_minnan{suffix}<{T}>(a, b)"


def _c_eval(expr, a, b, dt):
    """The prelude's helper as written, evaluated with C's comparison semantics in Python."""
    vt = np.float32 if dt == "float16" else np.dtype(dt).type
    a, b = vt(a), vt(b)
    body = _c_helper(expr).rstrip("; }")
    cond, rest = body.split("?")
    pick_a = eval(cond.replace("||", " or "), {"a": a, "b": b})
    return np.dtype(dt).type(a if pick_a else b)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_cuda_min_max_values_without_gpu(op, dt):
    helper = cuda_ops.op_expr(op, dt, ["a", "b"], (dt, dt)).split("<")[0]
    uf = getattr(np, op)
    for a, b in itertools.product(VALUES, VALUES):
        want = uf(np.dtype(dt).type(a), np.dtype(dt).type(b))
        got = _c_eval(helper, a, b, dt)
        assert _bits(got) == _bits(want) and (np.isnan(want) or np.signbit(got) == np.signbit(want)), (op, dt, a, b)


def test_cuda_sign_rule_gives_positive_zero():
    e = cuda_ops.op_expr("sign", "float32", ["a"], ("float32",))   # codegen.decompose's sign
    assert "(a == 0x0.0p+0f)) ? 0x0.0p+0f : a)" in e    # +0.0 for both zeros, NaN passes through


# ------------------------------------------------------------------------------------ on a GPU

def _gpu_backends():
    from kfuse.runtime import device
    if not device.has_gpu():
        return []
    out = ["cuda"]
    from kfuse.codegen import numba_cuda as nc
    if nc.numba_cuda_available()[0]:
        out.append("numba-cuda")
    return out


def _pairs(dt):
    a = np.array([x for x, _ in itertools.product(VALUES, VALUES)], dtype=dt)
    b = np.array([y for _, y in itertools.product(VALUES, VALUES)], dtype=dt)
    return a, b


def _same(actual, expected, what):
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.dtype == e.dtype and a.shape == e.shape, what
    np.testing.assert_array_equal(a, e, err_msg=what)
    real = ~np.isnan(e)
    np.testing.assert_array_equal(np.signbit(a)[real], np.signbit(e)[real], err_msg=what)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "numba-cuda"])
@pytest.mark.parametrize("dt", FLOATS)
def test_gpu_min_max_sign_ties(backend, dt):
    if backend not in _gpu_backends():
        pytest.skip(f"no GPU / {backend}")
    import cupy
    import kfuse

    def fn(a, b):
        return np.maximum(a, b), np.minimum(a, b), np.sign(a), np.maximum(b, a), np.minimum(b, a)
    a, b = _pairs(dt)
    got = kfuse.jit(fn, backend=backend)(cupy.asarray(a), cupy.asarray(b))
    for i, (x, y) in enumerate(zip(got, fn(a, b))):
        _same(cupy.asnumpy(x), y, f"{backend} {dt} output {i}")
