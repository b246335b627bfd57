"""CPU backend: movement (broadcast, permute, step slices, reshape of transposed data), empty and 0-d
shapes, reductions over every axis combination, argmax/argmin with NaN, row-wise reduce groups
(softmax, layernorm) and matmul groups, all against NumPy on hand-built one-kernel plans."""
import itertools

import numpy as np
import pytest

from cpu_graphs import bcast, cast, const, ew, inp, move, one_group_plan, reduce, run
from kfuse.codegen.cpu import emit
from kfuse.codegen.lower import lower_group
from kfuse.ir.graph import Graph, Node
from kfuse.ir.ops import Op
from kfuse.fusion.plan import Plan
from kfuse.runtime.cpu import compile_plan
from tests.tolerance import assert_matches_numpy


def test_movement_chain_noncontiguous_inputs():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((6, 10))
    a = base[:, ::2]                             # (6, 5) non-contiguous input
    b = rng.standard_normal((5, 6)).T            # (6, 5) transposed input
    c = rng.standard_normal(5)
    xa, xb, xc = inp(0, np.float64, (6, 5)), inp(1, np.float64, (6, 5)), inp(2, np.float64, (5,))
    t = move(Op.PERMUTE, xa, (5, 6), perm=(1, 0))                       # a.T
    r = move(Op.RESHAPE, t, (3, 10))                                     # reshape of a transpose
    s = move(Op.SLICE, r, (3, 5), starts=(2, 9), steps=(-1, -2))        # r[::-1, 9::-2]
    f = move(Op.RESHAPE, s, (15,))
    f2 = move(Op.RESHAPE, f, (5, 3))
    bt = move(Op.PERMUTE, xb, (5, 6), perm=(1, 0))
    bs = move(Op.SLICE, bt, (5, 3), starts=(4, 5), steps=(-1, -2))      # bt[::-1, 5::-2]
    out1 = ew(Op.ADD, f2, bs)
    cb = move(Op.RESHAPE, xc, (5, 1))
    out2 = ew(Op.MULTIPLY, t, bcast(cb, (5, 6)))                        # column broadcast
    (g1,), _ = run([xa, xb, xc], [out1], [a, b, c])
    (g2,), _ = run([xa, xb, xc], [out2], [a, b, c])
    ref_r = a.T.reshape(3, 10)[::-1, 9::-2]
    assert_matches_numpy(g1, ref_r.reshape(15).reshape(5, 3) + b.T[::-1, 5::-2])
    assert_matches_numpy(g2, a.T * c.reshape(5, 1))


def test_reshape_groups_and_size_one_dims():
    x = np.arange(2 * 3 * 4 * 5, dtype=np.int32).reshape(2, 3, 4, 5).transpose(3, 1, 0, 2)  # (5,3,2,4)
    xi = inp(0, np.int32, x.shape)
    r = move(Op.RESHAPE, xi, (1, 15, 8, 1))
    r2 = move(Op.RESHAPE, r, (3, 5, 2, 4))
    out = ew(Op.ADD, r2, bcast(const(1, np.int32), (3, 5, 2, 4)))
    (g,), prog = run([xi], [out], [x])
    assert_matches_numpy(g, x.reshape(1, 15, 8, 1).reshape(3, 5, 2, 4) + 1)
    assert "//" in prog.stages["kernel"]        # linearise/unravel with run-time sizes


@pytest.mark.parametrize("shape", [(), (0,), (3, 0)])
def test_empty_and_0d(shape):
    a = np.full(shape, 2.5, dtype=np.float32)
    x = inp(0, np.float32, shape)
    y = ew(Op.SQRT, ew(Op.MULTIPLY, x, bcast(const(2.0, np.float32), shape)))
    (g,), _ = run([x], [y], [a])
    assert_matches_numpy(g, np.sqrt(a * np.float32(2)))


def test_same_kernel_new_size_no_recompile():
    from kfuse.runtime import cpu as rt
    x = inp(0, np.float64, (7, 3))
    y = ew(Op.EXP, x)
    p1 = compile_plan(one_group_plan([x], [y]))
    n = len(rt._COMPILED)
    x2 = inp(0, np.float64, (11, 9))
    p2 = compile_plan(one_group_plan([x2], [ew(Op.EXP, x2)]))
    assert len(rt._COMPILED) == n and p1.stages["cpu"] == p2.stages["cpu"]
    a = np.random.default_rng(0).standard_normal((11, 9))
    assert_matches_numpy(p2([a])[0], np.exp(a))


AXES = [ax for k in (1, 2, 3) for ax in itertools.combinations(range(3), k)]


@pytest.mark.parametrize("axes", AXES)
def test_float_reductions_every_axis_combo(axes):
    rng = np.random.default_rng(len(axes))
    a = rng.standard_normal((3, 4, 5))
    a[1, 2, 3] = np.nan                      # max/min propagate NaN; sum too
    x = inp(0, np.float64, a.shape)
    outs = [reduce(Op.SUM, x, axes, keepdims=True), reduce(Op.PROD, x, axes),
            reduce(Op.MAX, x, axes), reduce(Op.MIN, x, axes, keepdims=True),
            reduce(Op.ANY, cast(ew(Op.GREATER, x, bcast(const(1.5, np.float64), a.shape)), bool), axes),
            reduce(Op.ALL, cast(ew(Op.GREATER, x, bcast(const(-1.5, np.float64), a.shape)), bool), axes)]
    got, _ = run([x], outs, [a], kind="reduce")
    refs = [a.sum(axes, keepdims=True), a.prod(axes), a.max(axes), a.min(axes, keepdims=True),
            (a > 1.5).any(axes), (a > -1.5).all(axes)]
    for g, r in zip(got, refs):
        assert_matches_numpy(g, r, reductions=True)


@pytest.mark.parametrize("axes", [(0,), (1, 2), (0, 1, 2)])
def test_int_reductions_wrap(axes):
    a = (np.arange(60, dtype=np.int64).reshape(3, 4, 5) * 7919 - 100).astype(np.int32)
    u = (np.arange(60).reshape(3, 4, 5) * 37 % 256).astype(np.uint8)
    x, y = inp(0, np.int32, a.shape), inp(1, np.uint8, a.shape)
    outs = [reduce(Op.SUM, x, axes), reduce(Op.PROD, x, axes), reduce(Op.MAX, y, axes, keepdims=True),
            reduce(Op.MIN, x, axes), reduce(Op.SUM, cast(y, np.uint64), axes)]
    got, _ = run([x, y], outs, [a, u], kind="reduce")
    refs = [np.add.reduce(a, axes, dtype=np.int32), np.multiply.reduce(a, axes, dtype=np.int32), u.max(axes, keepdims=True), a.min(axes),
            u.astype(np.uint64).sum(axes)]
    for g, r in zip(got, refs):
        assert_matches_numpy(g, r)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_argmax_argmin_nan_first_occurrence(axis):
    a = np.round(np.random.default_rng(axis).standard_normal((4, 5, 6)), 0)   # many ties
    a[1, 2, 3] = np.nan
    a[2, :, 4] = np.nan
    x = inp(0, np.float64, a.shape)
    got, _ = run([x], [reduce(Op.ARGMAX, x, (axis,)), reduce(Op.ARGMIN, x, (axis,))], [a], kind="reduce")
    assert_matches_numpy(got[0], a.argmax(axis))
    assert_matches_numpy(got[1], a.argmin(axis))


def test_empty_reductions():
    a = np.zeros((3, 0), dtype=np.float32)
    x = inp(0, np.float32, a.shape)
    b = cast(x, bool)
    outs = [reduce(Op.SUM, x, (1,)), reduce(Op.PROD, x, (1,), keepdims=True),
            reduce(Op.ANY, b, (1,)), reduce(Op.ALL, b, (1,))]
    got, _ = run([x], outs, [a], kind="reduce")
    for g, r in zip(got, [a.sum(1), a.prod(1, keepdims=True), a.astype(bool).any(1), a.astype(bool).all(1)]):
        assert_matches_numpy(g, r)
    got, _ = run([x], [reduce(Op.SUM, x, (0,))], [a], kind="reduce")    # (0,) result: no launch
    assert got[0].shape == (0,) and got[0].dtype == np.float32


def test_long_float32_sum_accuracy():
    a = (np.random.default_rng(3).random((2, 300000)) + 0.5).astype(np.float32)
    x = inp(0, np.float32, a.shape)
    got, _ = run([x], [reduce(Op.SUM, x, (1,))], [a], kind="reduce")
    assert_matches_numpy(got[0], a.sum(1), reductions=True)
    got, _ = run([x], [reduce(Op.SUM, x, (0, 1))], [a], kind="reduce")
    assert_matches_numpy(got[0], a.sum(), reductions=True)


def _softmax_layernorm_nodes(shape, dt):
    n = shape[-1]
    x = inp(0, dt, shape)
    m = reduce(Op.MAX, x, (1,), keepdims=True)
    e = ew(Op.EXP, ew(Op.SUBTRACT, x, bcast(m, shape)))
    s = reduce(Op.SUM, e, (1,))                                          # non-keepdims
    s2 = move(Op.RESHAPE, s, (shape[0], 1))
    soft = ew(Op.TRUE_DIVIDE, e, bcast(s2, shape))
    lse = ew(Op.ADD, ew(Op.LOG, s2), m)                                  # outer-level output
    # layernorm: mean, then variance depending on the mean
    mu = ew(Op.TRUE_DIVIDE, reduce(Op.SUM, x, (1,), keepdims=True), bcast(const(n, dt), (shape[0], 1)))
    d = ew(Op.SUBTRACT, x, bcast(mu, shape))
    var = ew(Op.TRUE_DIVIDE, reduce(Op.SUM, ew(Op.MULTIPLY, d, d), (1,), keepdims=True),
             bcast(const(n, dt), (shape[0], 1)))
    rstd = ew(Op.TRUE_DIVIDE, bcast(const(1.0, dt), var.shape),
              ew(Op.SQRT, ew(Op.ADD, var, bcast(const(1e-5, dt), var.shape))))
    ln = ew(Op.MULTIPLY, d, bcast(rstd, shape))
    return x, [soft, lse, ln, rstd]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_softmax_layernorm_one_kernel(dt):
    a = (np.random.default_rng(5).standard_normal((5, 37)) * 3).astype(dt)
    x, outs = _softmax_layernorm_nodes(a.shape, np.dtype(dt))
    plan = one_group_plan([x], outs, kind="reduce", domain=a.shape, axes=(1,),
                          anchor=outs[1].inputs[1].inputs[0])
    prog = compile_plan(plan)
    assert len(prog.kernels) == 1
    got = prog([a])
    m = a.max(1, keepdims=True)
    e = np.exp(a - m)
    s = e.sum(1)
    mu = a.sum(1, keepdims=True) / dt(37)
    var = ((a - mu) ** 2).sum(1, keepdims=True) / dt(37)
    rstd = dt(1) / np.sqrt(var + dt(1e-5))
    refs = [e / s.reshape(5, 1), np.log(s.reshape(5, 1)) + m, (a - mu) * rstd, rstd]
    for g, r in zip(got, refs):
        assert_matches_numpy(g, r, reductions=True)
    text = prog.stages["kernel"]
    assert text.count("-reduce(") == 4      # max, sum, sum, sum: four phases before the outputs


def test_reduce_misaligned_use_is_refused():
    x = inp(0, np.float64, (4, 4))
    s = reduce(Op.SUM, x, (1,))                        # (4,) broadcast right-aligned: reads s[j]
    y = ew(Op.SUBTRACT, x, bcast(s, (4, 4)))
    from kfuse.errors import CompileError
    with pytest.raises(CompileError):
        lower_group(one_group_plan([x], [y], kind="reduce", domain=(4, 4), axes=(1,), anchor=s).groups[0])


@pytest.mark.parametrize("dt", [np.float32, np.int8])
def test_matmul_group_epilogue(dt):
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((2, 3, 6)) * 20).astype(dt)
    bt = (rng.standard_normal((2, 4, 6)) * 20).astype(dt)      # operand given transposed
    bias = (rng.standard_normal(4) * 10).astype(dt)
    xa, xb, xc = inp(0, dt, a.shape), inp(1, dt, bt.shape), inp(2, dt, bias.shape)
    b = move(Op.PERMUTE, xb, (2, 6, 4), perm=(0, 2, 1))
    mm = Node(Op.MATMUL, dt, (2, 3, 4), (xa, b))
    y = ew(Op.ADD, mm, bcast(xc, (2, 3, 4)))
    y = ew(Op.MAXIMUM, y, bcast(const(0, dt), y.shape))
    got, prog = run([xa, xb, xc], [y, mm], [a, bt, bias], kind="matmul", anchor=mm)
    ref_mm = np.matmul(a, bt.transpose(0, 2, 1))
    assert_matches_numpy(got[1], ref_mm)
    assert_matches_numpy(got[0], np.maximum(ref_mm + bias, dt(0)))


def test_passthrough_and_stage_text():
    x = inp(0, np.float32, (3,))
    y = ew(Op.NEGATIVE, x)
    g = one_group_plan([x], [y]).groups[0]
    plan = Plan(Graph("t", (x,), (y, x)), (g,), passthrough=(x,))
    prog = compile_plan(plan)
    a = np.arange(3, dtype=np.float32)
    out = prog([a])
    assert out[1] is a
    assert_matches_numpy(out[0], -a)
    kir = lower_group(g)
    assert "negative" in kir.as_text() and "numba.prange" in emit(kir)
    assert set(prog.stages) >= {"kernel", "cpu"}
