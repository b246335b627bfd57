"""A new size (same dtypes, rank, broadcast pattern) reuses the shape class's plan and kernels:
results equal NumPy's at 20 random sizes, one compile, the planner run once; a function whose
graph structure depends on a size is still right (a full build, counted as a retrace)."""
from __future__ import annotations

import numpy as np
import pytest

import kfuse
from kfuse.fusion import pipeline
from kfuse.testing import assert_matches_numpy
from tests.backends import to_device, to_host


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def colsum(x):
    return x.sum(axis=0) * 2.0


def chain(x, b):
    return np.tanh(x * 0.5 + b) - b


def inner_slice(x):
    return x[:, 1:-1] * 3.0


def reshape4(x):
    return np.sqrt(x.reshape(-1, 4)).sum(-1)


def by_size(x):                     # the graph's structure depends on a size
    if x.shape[0] > 8:
        return x * 2.0
    return x.sum(0)


def head4(x):                       # a full slice on a dim of 4 or fewer, a real one beyond
    return x[:, :4] + 1.0


def _rows_cols(n, seed, lo=2, hi=70, mult=1):
    rng = np.random.default_rng(seed)
    seen = []
    while len(seen) < n:
        s = (int(rng.integers(lo, hi)), mult * int(rng.integers(max(1, lo // mult), max(2, hi // mult))))
        if s not in seen:
            seen.append(s)
    return seen


CASES = {
    "softmax": (softmax, lambda r, c, rng: (rng.standard_normal((r, c)).astype(np.float32),), 1),
    "layernorm": (layernorm, lambda r, c, rng: (rng.standard_normal((r, c)).astype(np.float32),
                                                rng.random(c).astype(np.float32),
                                                rng.random(c).astype(np.float32)), 1),
    "colsum": (colsum, lambda r, c, rng: (rng.random((r, c)),), 1),
    "chain": (chain, lambda r, c, rng: (rng.random((r, c)).astype(np.float32),
                                        rng.random((1, c)).astype(np.float32)), 1),
    "inner_slice": (inner_slice, lambda r, c, rng: (rng.random((r, c + 2)),), 1),
    "reshape4": (reshape4, lambda r, c, rng: (rng.random((r, c + 4)).astype(np.float32),), 4),  # (not a no-op)
}


class _Spy:
    def __init__(self, monkeypatch, module, name):
        self.calls = 0
        real = getattr(module, name)

        def spy(*a, **k):
            self.calls += 1
            return real(*a, **k)
        monkeypatch.setattr(module, name, spy)


@pytest.mark.parametrize("name", sorted(CASES))
def test_new_sizes_reuse_the_plan(name, backend, monkeypatch):
    fn, make, mult = CASES[name]
    import kfuse.trace as trace_pkg
    planner = _Spy(monkeypatch, pipeline, "plan")
    tracer = _Spy(monkeypatch, trace_pkg, "trace_function")
    jf = kfuse.jit(fn, backend=backend)
    rng = np.random.default_rng(7)
    sizes = _rows_cols(20, 1, mult=mult)
    for r, c in sizes:
        args = make(r, c, rng)
        got = to_host(jf(*to_device(backend, *args)))
        with np.errstate(all="ignore"):
            assert_matches_numpy(got, fn(*args), reductions=True, err_msg=f"{name} at {(r, c)}")
    assert jf.compile_count == 1
    # each later size traced again or built from the size-generic trace (kfuse.size_generic,
    # whose probe trace counts as a retrace)
    assert jf.retrace_count + jf.untraced_count >= len(sizes) - 1
    assert tracer.calls == 1 + jf.retrace_count     # the first build's trace, then each retrace
    assert planner.calls == 1, jf.last_build    # every size after the first: the plan reused
    assert "kernels reused" in jf.last_build


@pytest.mark.parametrize("fn", [by_size, head4], ids=["by_size", "head4"])
def test_structure_that_depends_on_sizes_is_still_right(fn, backend):
    jf = kfuse.jit(fn, backend=backend)
    rng = np.random.default_rng(3)
    for r, c in _rows_cols(20, 2, lo=2, hi=14):
        x = rng.random((r, c))
        assert_matches_numpy(to_host(jf(*to_device(backend, x))), fn(x), reductions=True,
                             err_msg=f"{fn.__name__} at {(r, c)}")
    assert jf.compile_count == 1        # new sizes are retraces, not recompiles
    assert jf.retrace_count == 19


def test_a_much_larger_size_is_planned_again(monkeypatch):
    """The planner's size-dependent choices follow the data's order of magnitude: 64x the bytes
    plans again (here the same plan, so the kernels are still reused)."""
    planner = _Spy(monkeypatch, pipeline, "plan")
    jf = kfuse.jit(softmax, backend="cpu")
    for r in (4, 5, 6000):
        x = np.random.default_rng(r).standard_normal((r, 300)).astype(np.float32)
        assert_matches_numpy(jf(x), softmax(x), reductions=True)
    assert planner.calls == 2
    assert "planned again, kernels reused" in jf.last_build


def test_new_dtype_is_a_compile_and_says_why():
    jf = kfuse.jit(softmax, backend="cpu")
    jf(np.ones((3, 5), np.float32))
    jf(np.ones((4, 6), np.float32))
    assert jf.compile_count == 1
    jf(np.ones((4, 6), np.float64))
    assert jf.compile_count == 2
    assert "'x'" in jf.last_build and "float32" in jf.last_build and "float64" in jf.last_build


def test_recompile_warning_says_what_changed(monkeypatch):
    import warnings
    from kfuse import config
    from kfuse.runtime.cache import RecompileWarning
    monkeypatch.setenv("KFUSE_RECOMPILE_LIMIT", "2")
    config.reload()
    try:
        jf = kfuse.jit(softmax, backend="cpu")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for k, dt in enumerate((np.float32, np.float64, np.float16)):
                jf(np.ones((3 + k, 5 + k), dt))         # new sizes too: only the dtype counts
    finally:
        monkeypatch.undo()
        config.reload()
    msgs = [str(w.message) for w in caught if issubclass(w.category, RecompileWarning)]
    assert len(msgs) == 1 and "compiled 3 times" in msgs[0]
    assert "this compile: argument 'x' dtype float64 -> float16" in msgs[0]


def gather_rows(x, i):
    return x[i] * 2.0


def test_index_checks_follow_the_new_size(backend, monkeypatch):
    """An index check's bound (the gathered dim's size, a constant of the check kernel) changes
    with the size: learned once as a size parameter, then every size reuses the kernels and
    checks against its own bound."""
    from kfuse.runtime import cpu
    builds = _Spy(monkeypatch, cpu, "_build")         # Numba modules made (CPU)
    jf = kfuse.jit(gather_rows, backend=backend)
    rng = np.random.default_rng(5)
    for n in (10, 20, 13, 31, 7, 16, 25):
        x = rng.random((n, 3))
        i = np.array([0, n - 1, -n, 4], np.int64)
        assert_matches_numpy(to_host(jf(*to_device(backend, x, i))), gather_rows(x, i))
        with pytest.raises(IndexError):
            jf(*to_device(backend, x, np.array([n, 0], np.int64)))
        with pytest.raises(IndexError):
            jf(*to_device(backend, x, np.array([0, -n - 1], np.int64)))
    assert jf.compile_count == 1 and "kernels reused" in jf.last_build
    if backend == "cpu":
        assert builds.calls <= 4       # the first size's kernels, then the learned check's


def test_explain_says_what_a_call_would_build():
    jf = kfuse.jit(softmax, backend="cpu")
    jf(np.ones((3, 5), np.float32))
    jf(np.ones((4, 6), np.float32))
    same = str(kfuse.explain(jf, "f32[100,7]"))
    assert "a new size is traced again and reuses the kernels" in same
    assert "last build: new sizes (x: f32[4,6])" in same
    other = str(kfuse.explain(jf, "f64[100,7]"))
    assert "a call would compile: argument 'x' dtype float32 -> float64" in other
    assert "dispatch" not in str(kfuse.explain(softmax, "f32[100,7]"))    # no calls: no history
