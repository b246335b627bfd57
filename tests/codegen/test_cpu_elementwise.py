"""CPU backend, elementwise: every ufunc x every dtype against NumPy, one compiled kernel per dtype
(all ops of a dtype are outputs of one kernel), plus casts, float16 rounding and special values."""
import numpy as np
import pytest

from cpu_graphs import cast, const, ew, inp, run
from kfuse.ir.ops import BINARY, UNARY, Op
from tests.tolerance import assert_matches_numpy

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"]
SKIP = {Op.CAST}


def _values(dt: np.dtype, n: int = 24):
    """(a, b, e): general values, divisors with signs/zeros, small exponents/shift counts."""
    rng = np.random.default_rng(hash(dt.name) & 0xffff)
    if dt.kind == "b":
        a = np.array([True, False] * (n // 2))
        return a, np.roll(a, 1) | (np.arange(n) % 3 == 0), a[::-1].copy()
    if dt.kind in "iu":
        info = np.iinfo(dt)
        special = [0, 1, 2, 3, 7, info.max, info.min, info.max - 1, 100 % (int(info.max) + 1)]
        if dt.kind == "i":
            special += [-1, -2, -7, info.min + 1, -50]
        a = np.array((special * 3)[:n], dtype=dt)
        bvals = [1, 2, 3, 0, 5, 7, info.max, 9] + ([-1, -3, -8, info.min] if dt.kind == "i" else [11, 13, 200 % (int(info.max) + 1), 4])
        b = np.array((bvals * 3)[:n], dtype=dt)
        e = np.array(([0, 1, 2, 3, 5, 7, 8, 9, 15, 31, 63, 64] * 2)[:n], dtype=np.int64)
        e = np.array([int(v) % (int(info.max) + 1) for v in e]).astype(dt)
        return a, b, e
    special = [0.0, -0.0, 1.5, -2.5, 0.5, 2.5, np.nan, np.inf, -np.inf, 3.0, -3.0, 1e-3,
               7.25, -0.75, 100.0, 1e4, -1e-4, 0.9, 2.0, -1.0, 4.5, 65000.0, 0.25, -8.0]
    a = np.array(special[:n], dtype=dt)
    b = np.array([2.0, -2.0, 0.0, -0.0, 3.0, np.nan, 1.5, -np.inf, 0.5, 0.75, -1.5, np.inf,
                  7.0, 2.5, -3.0, 1e-3, 0.1, -0.1, 4.0, 1.0, 2.0, -4.0, 16.0, 1.0][:n], dtype=dt)
    e = (np.abs(rng.standard_normal(n)) * 2).astype(dt)
    return a, b, e


def _ops_for(dt: np.dtype):
    un, bi = [], []
    for op in sorted(UNARY - SKIP, key=lambda o: o.value):
        try:
            if np.dtype(getattr(np, op.value).resolve_dtypes((dt, None))[0]) == dt:
                un.append(op)
        except TypeError:
            pass
    for op in sorted(BINARY, key=lambda o: o.value):
        try:
            if all(np.dtype(t) == dt for t in getattr(np, op.value).resolve_dtypes((dt, dt, None))[:2]):
                bi.append(op)
        except TypeError:
            pass
    return un, bi


@pytest.mark.parametrize("dtname", DTYPES)
def test_every_op(dtname):
    dt = np.dtype(dtname)
    a, b, e = _values(dt)
    n = a.shape[0]
    xa, xb, xe = inp(0, dt, (n,)), inp(1, dt, (n,)), inp(2, dt, (n,))
    un, bi = _ops_for(dt)
    outs, refs, names = [], [], []
    with np.errstate(all="ignore"):
        for op in un:
            outs.append(ew(op, xa))
            refs.append(getattr(np, op.value)(a))
            names.append(op.value)
        for op in bi:
            second, arr = (xe, e) if op in (Op.POWER, Op.LEFT_SHIFT, Op.RIGHT_SHIFT) else (xb, b)
            outs.append(ew(op, xa, second))
            refs.append(getattr(np, op.value)(a, arr))
            names.append(op.value)
        # a constant operand, and where
        c = const(3 if dt.kind != "b" else True, dt)
        outs.append(ew(Op.MULTIPLY, xa, c))
        refs.append(np.multiply(a, np.array(3 if dt.kind != "b" else True, dtype=dt)))
        names.append("multiply-const")
        cond = ew(Op.GREATER, xa, xb)
        outs.append(ew(Op.WHERE, cond, xa, xb, dtype=dt))
        refs.append(np.where(a > b, a, b))
        names.append("where")
        got, prog = run([xa, xb, xe], outs, [a, b, e])
    assert len(prog.kernels) == 1
    for g, r, name in zip(got, refs, names):
        if name == "reciprocal" and dt.kind in "iu":    # 1/0 for ints is undefined in NumPy
            g, r = g[a != 0], r[a != 0]
        assert_matches_numpy(g, r, err_msg=f"{name} {dtname}")


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
