"""What a new size built from a size-generic trace (``kfuse.size_generic``) takes from its shape
class and what it computes afresh: its graphs are the nodes a trace and optimize at that size
give (constants that follow the sizes, and literal ones, included); a tuned choice of the size's
bucket, known in the process, is applied (``autotune.tuner.known_choice``) and not one of
another bucket; the cyclic garbage collector is held off during the build and left as found."""
import gc

import numpy as np

import kfuse
from kfuse.bench.workloads import make_p2, make_p3
from kfuse import api, backends
from kfuse.autotune import space as S, tuner
from kfuse.fusion.pipeline import optimize
from kfuse.runtime import keys

RNG = np.random.default_rng(3)


def _rand(*shape):
    return RNG.random(shape).astype(np.float32)


softmax = make_p2(np)            # the public suite's bodies (kfuse/bench/workloads.py)
layernorm = make_p3(np)


def gelu_bias(x, b, s):
    y = x * s + b
    return 0.5 * y * (1.0 + np.tanh(0.7978845834732056 * (y + 0.044715 * y ** 3)))


def _ln_args(r, c):
    return _rand(r, c), _rand(c), _rand(c)


def _entry(jf, args):
    return jf._programs[jf._key(args)]


def _check(jf, fn, args):
    np.testing.assert_allclose(jf(*args), fn(*args), rtol=2e-5, atol=1e-6)


def test_untraced_graphs_are_the_traced_ones():
    for fn, make in ((layernorm, _ln_args), (gelu_bias, _ln_args), (softmax, lambda r, c: (_rand(r, c),))):
        jf = kfuse.jit(fn)
        for r, c in [(7, 9), (11, 13), (37, 29), (300, 5)]:
            args = make(r, c)
            _check(jf, fn, args)
        assert jf.untraced_count == 3, fn.__name__
        entry = _entry(jf, args)
        traced = api._prepared(jf.trace(*args), backends.get("cpu"))
        # interned nodes: the same objects where op, dtype, shape, inputs and attrs agree
        assert list(entry.graph.nodes()) == list(traced.nodes())
        assert list(entry.program.plan.graph.nodes()) == list(optimize(traced).nodes())


def test_gc_left_as_found():
    jf = kfuse.jit(softmax)
    for r, c in [(7, 9), (11, 13)]:
        _check(jf, softmax, (_rand(r, c),))
    assert gc.isenabled()
    _check(jf, softmax, (_rand(23, 31),))
    assert gc.isenabled() and jf.untraced_count == 2
    gc.disable()
    try:
        _check(jf, softmax, (_rand(25, 33),))
        assert not gc.isenabled() and jf.untraced_count == 3
    finally:
        gc.enable()


def test_known_tuning_applies_to_its_bucket_only(monkeypatch):
    jf = kfuse.jit(softmax, autotune="cached")
    for r, c in [(7, 9), (11, 13), (100, 60)]:
        _check(jf, softmax, (_rand(r, c),))
    assert jf.untraced_count == 2
    k = _entry(jf, (_rand(100, 60),)).program.kernels[0]
    assert not k.tuned
    arch = tuner.cpu_arch()
    khash = tuner._KHASH_BY_DTYPE[(k.source, tuple((n.dtype, len(n.shape)) for n in k.group.inputs),
                                   "cpu", arch)]
    cfg = S.TileConfig("cpu", (("threads", 1), ("variant", "seq")))
    monkeypatch.setitem(tuner._MEMO, (khash, tuple(keys.shape_bucket(k.group.domain)), arch), cfg)
    same = (_rand(101, 61),)                # the same bucket as 100x60
    _check(jf, softmax, same)
    assert jf.untraced_count == 3
    assert _entry(jf, same).program.kernels[0].tuned
    other = (_rand(300, 200),)              # another bucket
    _check(jf, softmax, other)
    assert jf.untraced_count == 4
    assert not _entry(jf, other).program.kernels[0].tuned
