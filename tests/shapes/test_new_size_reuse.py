"""A new size served by the shape class's kernels (``runtime.shape_class``) gives NumPy's results:
sizes in other tuning buckets, odd and prime sizes, a dim of 2 beside one of thousands; a new row
length of a layernorm neither recompiles nor leaves the first row length in the kernel; and the
new-size path's shortcuts (optimize skipping passes that cannot apply, a graph's node order kept,
interned nodes freed) change nothing they compute."""
from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest

import kfuse
from kfuse.fusion.pipeline import optimize
from kfuse.fusion.simplify import PASSES, Pass
from kfuse.ir import graph as irgraph
from kfuse.runtime import keys
from kfuse.runtime.cache import RecompileWarning
from kfuse.testing import assert_matches_numpy
from tests.backends import to_device, to_host
from tests.shapes.test_new_sizes import layernorm, softmax


def colmean(x):
    return x.mean(axis=0) * 2.5


def gelu_bias(x, w, b):
    y = x * w + b
    return 0.5 * y * (1.0 + np.tanh(0.7978845608 * (y + 0.044715 * y ** 3)))


def _args(name, r, c, rng):
    x = rng.standard_normal((r, c)).astype(np.float32)
    if name == "layernorm":
        return x, rng.random(c).astype(np.float32), rng.random(c).astype(np.float32)
    if name == "gelu_bias":
        return x, rng.random(c).astype(np.float32), rng.random(c).astype(np.float32)
    return (x,)


FUNCS = {"softmax": softmax, "layernorm": layernorm, "colmean": colmean, "gelu_bias": gelu_bias}
# first the template's size, then: other tuning buckets (powers of two and one past them), odd
# and prime sizes, a row of 2 beside a column of thousands and the reverse
SIZES = [(6, 10), (7, 9), (63, 64), (65, 129), (2, 3001), (2999, 3), (31, 257), (513, 17), (97, 101)]


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_reused_kernels_are_right_in_other_buckets_and_odd_sizes(name, backend):
    fn = FUNCS[name]
    jf = kfuse.jit(fn, backend=backend)
    rng = np.random.default_rng(11)
    buckets = set()
    for k, (r, c) in enumerate(SIZES):
        args = _args(name, r, c, rng)
        got = to_host(jf(*to_device(backend, *args)))
        with np.errstate(all="ignore"):
            assert_matches_numpy(got, fn(*args), reductions=True, err_msg=f"{name} at {(r, c)}")
        if k:       # (the first size compiles; every later one is served by its kernels)
            assert "kernels reused" in jf.last_build, (r, c, jf.last_build)
        buckets.add(tuple(keys.shape_bucket((r, c))))
    assert len(buckets) == len(SIZES) - 1       # (7, 9) in the first size's bucket, each other in its own
    # every later size traced again or built from the size-generic trace (a probe trace counts
    # as a retrace: kfuse.size_generic)
    assert jf.compile_count == 1 and jf.retrace_count + jf.untraced_count >= len(SIZES) - 1


def _kernel_sources(jf) -> str:
    return "\n".join(e.program.stages["cpu"] for e in jf._programs.values())


def test_a_new_row_length_of_a_layernorm_compiles_nothing_and_bakes_in_no_length(monkeypatch):
    """Issue 33's older line: a new last-axis length recompiled (the row length of mean/var was
    in the kernel source) while compile_count stayed 1 and no warning appeared."""
    from kfuse.runtime import cpu
    built = []
    real = cpu._build
    monkeypatch.setattr(cpu, "_build", lambda *a, **k: built.append(a[0]) or real(*a, **k))
    jf = kfuse.jit(layernorm, backend="cpu")
    rng = np.random.default_rng(2)
    first = _args("layernorm", 5, 977, rng)
    assert_matches_numpy(jf(*first), layernorm(*first), reductions=True)
    n_built = len(built)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecompileWarning)
        for c in (1361, 7, 300, 977 * 2):          # new row lengths (and rows), none a multiple of 977 but the last
            args = _args("layernorm", 4, c, rng)
            assert_matches_numpy(jf(*args), layernorm(*args), reductions=True, err_msg=f"row length {c}")
            assert "kernels reused" in jf.last_build
    assert len(built) == n_built                 # no Numba module made for any new length
    assert jf.compile_count == 1
    src = _kernel_sources(jf)
    assert "977" not in src and "1361" not in src and "1954" not in src   # lengths are size arguments
    kir = next(iter(jf._classes.values())).templates[0].kirs[0]
    assert 977 in {s.value for s in kir.sizes}     # ... as the first size's program passes them


def _no_skipping(passes):
    return tuple(Pass(p.name, p.run) for p in passes)


def _program(x, g, b, i):
    y = np.where(x > 0, x, 0.0).reshape(x.shape[::-1]).T[:, 1:] * 1.0
    return (y.astype(np.float64).astype(np.float32) + b[1:]).sum(-1), x[:, i] * 2.0, np.outer(g, b) + 0.0


@pytest.mark.parametrize("shape", [(4, 6), (1, 5), (3, 1), (0, 4)])
def test_optimize_skipping_passes_that_cannot_apply_changes_nothing(shape):
    """Pass.applies says a pass cannot change a graph without its ops; the optimized graph is
    the one every pass run to the fixpoint gives."""
    specs = (f"f32[{shape[0]},{shape[1]}]", f"f32[{shape[1]}]", f"f32[{shape[1]}]", "i64[3]")
    for fn in (_program, layernorm, softmax, gelu_bias):
        traced = kfuse.jit(fn).lower(*specs[:len(fn.__code__.co_varnames[:fn.__code__.co_argcount])]).graph
        assert optimize(traced).as_text() == optimize(traced, _no_skipping(PASSES)).as_text(), fn.__name__


def test_a_graphs_node_order_is_its_own_list():
    x = kfuse.jit(softmax).lower("f32[3,4]").graph
    order = x.nodes()
    order.clear()                   # (a caller's list: the graph's own order is untouched)
    assert x.nodes() and x.nodes() == irgraph.toposort(tuple(x.inputs) + tuple(x.outputs))


def test_interned_nodes_are_freed_and_made_again():
    from kfuse.ir.ops import Op
    key_shape = (123457, 3)
    n = irgraph.Node(Op.INPUT, np.float32, key_shape, (), {"index": 0, "name": "fresh"})
    assert irgraph.Node(Op.INPUT, np.float32, key_shape, (), {"index": 0, "name": "fresh"}) is n
    key = n._key
    assert key in irgraph._INTERN
    del n
    gc.collect()
    assert key not in irgraph._INTERN             # its entry went with it
    m = irgraph.Node(Op.INPUT, np.float32, key_shape, (), {"index": 0, "name": "fresh"})
    assert m.shape == key_shape and irgraph.Node(Op.INPUT, np.float32, key_shape, (), {"index": 0, "name": "fresh"}) is m
