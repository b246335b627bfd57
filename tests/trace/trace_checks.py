"""Shared helpers of the trace tests: run a function through trace + the reference interpreter
and compare with NumPy; check the IR conventions of kfuse/ir/ops.py on a graph."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from kfuse.ir.ops import BINARY, REDUCE, UNARY, Op
from kfuse.ir.specs import StaticSpec, spec_of_value
from kfuse.trace import trace_function
from kfuse.trace.reference import evaluate
from tests.tolerance import assert_matches_numpy

DTYPES = [np.dtype(t) for t in ("?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8",
                                "f2", "f4", "f8")]


def rand(shape, dtype, seed=0, positive=False):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "u" or (dtype.kind == "i" and positive):
        return rng.integers(0, 10, shape).astype(dtype)
    if dtype.kind == "i":
        return rng.integers(-6, 7, shape).astype(dtype)
    x = rng.standard_normal(shape) * 3
    return (np.abs(x) + 0.1 if positive else x).astype(dtype)


def check_conventions(graph) -> None:
    """Every node follows the IR conventions (explicit CAST and BROADCAST, attrs)."""
    for n in graph.nodes():
        ins = n.inputs
        if n.op is Op.CONST:
            assert n.shape == () and not ins
        elif n.op is Op.CAST:
            assert len(ins) == 1 and ins[0].shape == n.shape
        elif n.op in UNARY or n.op in BINARY:
            assert all(i.shape == n.shape for i in ins), (n, ins)
            ufunc = getattr(np, n.op.value)
            loop = ufunc.resolve_dtypes(tuple(i.dtype for i in ins) + (None,))
            assert tuple(i.dtype for i in ins) == loop[:-1], (n, ins, loop)
            assert n.dtype == loop[-1], (n, loop)
        elif n.op is Op.WHERE:
            c, a, b = ins
            assert c.dtype == np.bool_ and a.dtype == b.dtype == n.dtype
            assert c.shape == a.shape == b.shape == n.shape
        elif n.op in REDUCE:
            axes = n.attr("axes")
            assert isinstance(axes, tuple) and list(axes) == sorted(set(axes)) and axes
            assert all(0 <= a < ins[0].ndim for a in axes)
            assert isinstance(n.attr("keepdims"), bool)
            if n.op in (Op.ARGMAX, Op.ARGMIN):
                assert n.dtype == np.int64 and len(axes) == 1
            else:
                assert n.dtype == ins[0].dtype
            kd = n.attr("keepdims")
            exp = tuple(1 if d in axes else s for d, s in enumerate(ins[0].shape) if kd or d not in axes)
            assert n.shape == exp
        elif n.op is Op.BROADCAST:
            assert np.broadcast_shapes(ins[0].shape, n.shape) == n.shape and ins[0].shape != n.shape
        elif n.op is Op.RESHAPE:
            assert ins[0].size == n.size
        elif n.op is Op.PERMUTE:
            assert sorted(n.attr("perm")) == list(range(n.ndim))
        elif n.op is Op.SLICE:
            for st, sp, ln, size in zip(n.attr("starts"), n.attr("steps"), n.shape, ins[0].shape):
                if ln:
                    assert 0 <= st < size and 0 <= st + (ln - 1) * sp < size
        elif n.op is Op.MATMUL:
            a, b = ins
            assert a.dtype == b.dtype == n.dtype
            assert a.shape[:-2] == b.shape[:-2] == n.shape[:-2] and a.shape[-1] == b.shape[-2]
            assert n.shape[-2:] == (a.shape[-2], b.shape[-1])
        made_by_hand = n.op is Op.BROADCAST and n.inputs[0].op is Op.CONST
        if n.op not in (Op.INPUT, Op.CONST) and not made_by_hand:
            # Nodes are interned: a subgraph equal to one of an earlier trace (a broadcast
            # constant, say) keeps that trace's loc, so only presence is checked here; a constant,
            # or a constant broadcast, may first have been made by a hand-built graph of another
            # test (no loc), so those are not checked (which test files share a process is
            # xdist's choice: a broadcast f64[1, 1] of a constant failed test_ddof that way).
            assert n.loc is not None, (n, n.loc)


def check(fn, *args, static=(), reductions=False):  # noqa: C901
    """Trace ``fn`` on the specs of ``args``; compare dtype, shape and values with NumPy, or the
    exception type where NumPy raises."""
    import inspect
    names = list(inspect.signature(fn).parameters)
    specs = {nm: (StaticSpec(a) if nm in static else spec_of_value(a)) for nm, a in zip(names, args)}
    arrays = [a for nm, a in zip(names, args) if nm not in static]
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = fn(*args)
    except Exception as e:  # NumPy refuses: so must the tracer (at trace or run time)
        with pytest.raises(type(e)):
            g = trace_function(fn, specs)
            evaluate(g, arrays + list(g.constants))
        return None
    g = trace_function(fn, specs)
    check_conventions(g)
    got = evaluate(g, arrays + list(g.constants))     # array constants are the last inputs
    from kfuse.ir.graph import unflatten
    got = unflatten(g.out_tree, got)
    _compare(got, expected, reductions)
    return g


def _compare(got, expected, reductions):
    if isinstance(expected, (tuple, list)):
        assert type(got) is type(expected) and len(got) == len(expected)
        for a, b in zip(got, expected):
            _compare(a, b, reductions)
    elif isinstance(expected, dict):
        assert got.keys() == expected.keys()
        for k in expected:
            _compare(got[k], expected[k], reductions)
    else:
        assert_matches_numpy(got, expected, reductions=reductions)
