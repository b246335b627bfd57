"""Arrays built from pieces through ``kfuse.jit`` on every backend against NumPy: concatenation
and stacking, ``np.pad`` (every supported mode), ``np.roll``, ``np.flip``, ``np.diff``,
``np.append``, fused with producers, reductions, row kernels and a matmul. One PAD per piece
(kfuse/trace/assemble.py): the kernel reads each piece where it lands, nothing is copied."""
import numpy as np
import pytest

import kfuse
from kfuse.fusion import pipeline
from kfuse.ir.specs import spec_of_value
from kfuse.trace import trace_function
from tolerance import assert_matches_numpy


def rotary(a, b):
    half = a.shape[-1] // 2
    return a * 0.5 + np.concatenate([-a[..., half:], a[..., :half]], axis=-1)


CASES = {
    "concat-rows": lambda a, b: np.concatenate([a * 2, b + 1], axis=0),
    "concat-cols": lambda a, b: np.concatenate([a, a[:, :3], a[:, 5:]], axis=1),
    "concat-none": lambda a, b: np.concatenate([a, b], axis=None),
    "concat-empty-piece": lambda a, b: np.concatenate([a[:0], b, a[:, :][:0]]),
    "concat-promote": lambda a, b: np.concatenate([a, np.arange(a.shape[1])[None]]),
    "concat-bool": lambda a, b: np.concatenate([a > 0, b < 0]),
    "stack": lambda a, b: np.stack([a, a * 3], axis=1),
    "stack-neg-axis": lambda a, b: np.stack([b, b], axis=-1),
    "hstack-1d": lambda a, b: np.hstack([a[0], b[1], a[2, ::3]]),
    "vstack": lambda a, b: np.vstack([a, b, a[:1]]),
    "dstack": lambda a, b: np.dstack([a, a]),
    "column-stack": lambda a, b: np.column_stack([a[0], b[0]]),
    "append": lambda a, b: np.append(a, b),
    "append-axis": lambda a, b: np.append(a, b, axis=0),
    "pad-constant": lambda a, b: np.pad(a, ((1, 2), (3, 0)), constant_values=-1.5),
    "pad-int-width": lambda a, b: np.pad(b, 2),
    "pad-edge": lambda a, b: np.pad(a, ((1, 2), (3, 1)), mode="edge"),
    "pad-reflect": lambda a, b: np.pad(a, ((4, 4), (6, 6)), mode="reflect"),
    "pad-symmetric": lambda a, b: np.pad(a, ((5, 5), (7, 7)), mode="symmetric"),
    "pad-wrap": lambda a, b: np.pad(a, 2, mode="wrap"),
    "roll": lambda a, b: np.roll(a, (2, -3), axis=(0, 1)),
    "roll-flat": lambda a, b: np.roll(a, 5),
    "flip": lambda a, b: np.flip(a) - np.fliplr(a) + np.flipud(a),
    "diff": lambda a, b: np.diff(a, n=2, axis=0, prepend=0, append=a[-1:]),
    "rotary": rotary,
    "tril-triu": lambda a, b: np.tril(a, -1) + np.triu(a, 2) * 2 + np.tril(b[0])[:6],
    "concat-then-sum": lambda a, b: np.concatenate([a, b]).sum(axis=0),
    "concat-then-rowmax": lambda a, b: np.concatenate([a, b], axis=0).max(axis=1),
    "pad-softmax": lambda a, b: (lambda e: e / e.sum(-1, keepdims=True))(
        np.exp(np.pad(a, ((0, 0), (1, 1)), constant_values=-np.inf))),
    "concat-matmul": lambda a, b: np.concatenate([a, b]) @ a.T,
    "sum-then-concat": lambda a, b: np.concatenate([a.sum(1, keepdims=True), a], axis=1),
}
DTYPES = ["float32", "int32", "float16"]


def _inputs(dtype):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((6, 8)) * 4
    b = rng.standard_normal((3, 8)) * 4
    return a.astype(dtype), b.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_assembled_arrays_match_numpy(backend, name, dtype, cupy_for):
    fn = CASES[name]
    a, b = _inputs(dtype)
    if name == "pad-softmax" and a.dtype.kind != "f":
        pytest.skip("softmax of an integer array")
    if name == "concat-matmul" and backend == "numba-cuda":
        pytest.skip("matmul runs on the CUDA C backend (cuBLAS) only")
    with np.errstate(all="ignore"):
        want = fn(a, b)
    f = kfuse.jit(fn, backend=backend)
    with np.errstate(all="ignore"):
        if backend == "cpu":
            got = f(a, b)
        else:
            cp = cupy_for(backend)
            got = cp.asnumpy(f(cp.asarray(a), cp.asarray(b)))
    assert got.dtype == want.dtype and got.shape == want.shape
    assert_matches_numpy(got, want, reductions=True)


@pytest.mark.parametrize("fn", [rotary, CASES["pad-softmax"], CASES["concat-then-sum"]])
def test_assembly_fuses_into_one_kernel(fn):
    """The pieces are read where they land: no kernel materialises the concatenation."""
    specs = {"a": spec_of_value(np.zeros((4, 16), np.float32)),
             "b": spec_of_value(np.zeros((1, 16), np.float32))}
    plan = pipeline.plan(pipeline.optimize(trace_function(fn, specs)))
    assert len(plan.groups) == 1
