"""CPU backend, elementwise: casts, float16 rounding and special values against NumPy. Every ufunc x
every dtype runs end to end on every backend in tests/ops/test_op_records.py (the op-record table)."""
import numpy as np
import pytest

from cpu_graphs import cast, ew, inp, run
from kfuse.ir.ops import Op
from tests.tolerance import assert_matches_numpy

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"]
@pytest.mark.parametrize("src", DTYPES)
def test_casts(src):
    sdt = np.dtype(src)
    if sdt.kind == "f":   # float -> int of NaN/out-of-range is undefined: stay in range
        a = np.array([0.0, 1.5, 2.5, 100.9, 126.99, 3.49, -0.0, 0.5, 65.5, 1e-3], dtype=sdt)
        neg = np.array([-1.5, -100.25, -0.0, 7.75, -3.5, -0.5, 2.5, -126.9, 1.0, -2.0], dtype=sdt)
    elif sdt.kind == "b":
        a, neg = np.array([True, False, True]), np.array([False, True, True])
    else:
        info = np.iinfo(sdt)
        a = np.array([0, 1, 2, info.max, info.min, 100, 255 % (int(info.max) + 1)], dtype=sdt)
        neg = a
    x, y = inp(0, sdt, a.shape), inp(1, sdt, neg.shape)
    outs, refs = [], []
    for d in DTYPES:
        outs.append(cast(x, d))
        refs.append(a.astype(d))
        if np.dtype(d).kind != "u":
            outs.append(cast(y, d))
            refs.append(neg.astype(d))
    got, _ = run([x, y], outs, [a, neg])
    for g, r in zip(got, refs):
        assert_matches_numpy(g, r, err_msg=f"{src}->{r.dtype}")


def test_float16_rounding_bit_exact():
    """float64/float32 -> float16 rounds once like NumPy; float16 chains round after every op."""
    rng = np.random.default_rng(1)
    v = rng.standard_normal(20000) * np.exp(rng.uniform(-22, 12, 20000))
    v[:8] = [65504.0, 65519.99, 65520.0, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 2.0 ** -25, 2.0 ** -24 * 1.5, -0.0]
    f32 = v.astype(np.float32)
    h1 = rng.standard_normal(20000).astype(np.float16)
    h2 = (rng.standard_normal(20000) * 3).astype(np.float16)
    x, y = inp(0, np.float64, v.shape), inp(1, np.float32, v.shape)
    a, b = inp(2, np.float16, v.shape), inp(3, np.float16, v.shape)
    chain = ew(Op.TRUE_DIVIDE, ew(Op.ADD, ew(Op.MULTIPLY, a, b), a), b)
    got, _ = run([x, y, a, b], [cast(x, np.float16), cast(y, np.float16), chain], [v, f32, h1, h2])
    np.testing.assert_array_equal(got[0].view(np.uint16), v.astype(np.float16).view(np.uint16))
    np.testing.assert_array_equal(got[1].view(np.uint16), f32.astype(np.float16).view(np.uint16))
    with np.errstate(all="ignore"):
        ref = (h1 * h2 + h1) / h2
    np.testing.assert_array_equal(got[2], ref)


def test_tanh_float32_accuracy():
    xs = np.concatenate([np.linspace(-12, 12, 100001), 10.0 ** np.arange(-40, 2, 0.01),
                         [np.inf, -np.inf, np.nan, 0.0, -0.0]]).astype(np.float32)
    xs = np.concatenate([xs, -xs])
    x = inp(0, np.float32, xs.shape)
    got, _ = run([x], [ew(Op.TANH, x)], [xs])
    assert_matches_numpy(got[0], np.tanh(xs))
    exact = np.tanh(xs.astype(np.float64))
    ok = np.isfinite(exact) & (exact != 0)
    assert np.max(np.abs(got[0][ok] - exact[ok]) / np.abs(exact[ok])) < 1e-6


def test_exp_float32_accuracy():
    xs = np.concatenate([np.linspace(-110, 90, 200001), [88.7, 88.72, 88.73, -87.0, -87.3, -103.9],
                         [np.inf, -np.inf, np.nan, 0.0, -0.0]]).astype(np.float32)
    x = inp(0, np.float32, xs.shape)
    with np.errstate(over="ignore"):
        want = np.exp(xs)
    got, _ = run([x], [ew(Op.EXP, x)], [xs])
    assert_matches_numpy(got[0], want)
    exact = np.exp(xs.astype(np.float64))
    ok = np.isfinite(want) & (exact > 1.2e-38)
    assert np.max(np.abs(got[0][ok] - exact[ok]) / exact[ok]) < 1e-6
    sub = (want > 0) & (want < 1.2e-38)                       # subnormal results: within 2 ulp
    assert sub.any() and np.max(np.abs(got[0][sub].view(np.int32) - want[sub].view(np.int32))) <= 2


def test_negative_zero_and_nan_rules():
    a = np.array([-0.0, 0.0, np.nan, 1.0, np.nan, -np.inf], dtype=np.float64)
    b = np.array([0.0, -0.0, 1.0, np.nan, np.nan, np.inf], dtype=np.float64)
    x, y = inp(0, np.float64, a.shape), inp(1, np.float64, b.shape)
    ops = [Op.MAXIMUM, Op.MINIMUM, Op.FMAX, Op.FMIN, Op.EQUAL, Op.LESS, Op.NOT_EQUAL, Op.MULTIPLY]
    got, _ = run([x, y], [ew(o, x, y) for o in ops] + [ew(Op.NEGATIVE, x)], [a, b])
    for g, o in zip(got, ops):
        r = getattr(np, o.value)(a, b)
        assert_matches_numpy(g, r, err_msg=o.value)
        if r.dtype.kind == "f" and o is Op.MULTIPLY:   # NumPy's max/min of +-0 vary by SIMD path
            fin = ~np.isnan(r)
            np.testing.assert_array_equal(np.signbit(g[fin]), np.signbit(r[fin]), err_msg=o.value)
    np.testing.assert_array_equal(np.signbit(got[-1]), np.signbit(-a))
