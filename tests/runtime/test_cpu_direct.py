"""The CPU hot path (``runtime/cpu_direct.py``): a cached call of a plain program goes through a
direct call generated for its dispatch key; every call that needs more than that (a new stride or
view, an argument written into, shared memory, an index check, a returned copy) takes the generic
path or its own key's direct call, with NumPy's results either way."""
from __future__ import annotations

import numpy as np
import pytest

import kfuse
from kfuse.errors import UnsupportedError
from tests.tolerance import assert_matches_numpy


def _entry(f, *args):
    return f._programs[f._key(args)]


def _is_direct(f, *args) -> bool:
    return hasattr(_entry(f, *args).run, "source")


def _calls(f, ref, *args, n=3):
    """Call ``f`` n times (the first builds, the rest hit the key) and compare with ``ref``."""
    for _ in range(n):
        got = f(*args)
        want = ref(*args)
        assert type(got) is type(want)
        if isinstance(want, (tuple, list)):
            for g, w in zip(got, want):
                assert_matches_numpy(np.asarray(g), np.asarray(w))
        else:
            assert_matches_numpy(np.asarray(got), np.asarray(want))
    return got


def axpy(x, y):
    return x * np.float32(2.0) + y


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def test_plain_call_goes_direct_and_allocates_fresh_outputs():
    rng = np.random.default_rng(0)
    x, y = rng.random(1024, dtype=np.float32), rng.random(1024, dtype=np.float32)
    f = kfuse.jit(axpy, backend="cpu")
    a = _calls(f, axpy, x, y)
    assert _is_direct(f, x, y)
    b = f(x, y)
    assert a is not b and not np.shares_memory(a, b)      # a new result each call
    x[:] = 3.0                                            # new values, same key: read each call
    assert_matches_numpy(f(x, y), axpy(x, y))


def test_multi_kernel_softmax_goes_direct():
    x = np.random.default_rng(1).random((4, 8), dtype=np.float32)
    f = kfuse.jit(softmax, backend="cpu")
    _calls(f, softmax, x)
    assert _is_direct(f, x)


def test_changed_strides_and_views_get_their_own_key():
    x = np.random.default_rng(2).random((64, 64), dtype=np.float32)
    f = kfuse.jit(softmax, backend="cpu")
    _calls(f, softmax, x)
    views = (x.T, x[::2], x[:, ::-1], np.asfortranarray(x), x[1:, 3:])
    for v in views:
        _calls(f, softmax, v)                             # not x's direct call: its own key
    assert len(f._programs) == len({(v.shape, v.strides) for v in (x,) + views})


def test_scalar_argument_values_are_read_each_call():
    def scale(x, a):
        return x * a + 1.0
    x = np.arange(8, dtype=np.float32)
    f = kfuse.jit(scale, backend="cpu")
    for a in (2.0, 3.5, -1.0, 2.0):
        assert_matches_numpy(f(x, a), scale(x, a))
    assert _is_direct(f, x, 2.0)
    for a in (np.float32(0.5), np.float32(4.0)):          # NumPy scalars: their own key
        assert_matches_numpy(f(x, a), scale(x, a))
        assert type(f(x, a)) is type(scale(x, a))


def test_zero_d_and_scalar_results_keep_numpy_types():
    def total(x, y):
        return x.sum(), np.exp(y), x
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    y = np.array(0.5)                                     # a 0-d array argument
    f = kfuse.jit(total, backend="cpu")
    s, e, same = _calls(f, total, x, y)
    assert _is_direct(f, x, y)
    assert type(s) is np.float64 and type(e) is np.float64
    assert same is x                                      # return x stays the caller's x


def test_return_structures():
    def tree(x):
        return {"a": x + 1, "b": [x * 2, None]}, (x - 1,)
    x = np.ones(5, np.float32)
    f = kfuse.jit(tree, backend="cpu")
    for _ in range(3):
        got = f(x)
        d, t = got
        assert set(d) == {"a", "b"} and d["b"][1] is None and isinstance(d["b"], list)
        np.testing.assert_array_equal(d["a"], x + 1)
        np.testing.assert_array_equal(d["b"][0], x * 2)
        assert isinstance(t, tuple) and len(t) == 1
        np.testing.assert_array_equal(t[0], x - 1)
    assert _is_direct(f, x)


def test_written_argument_takes_the_generic_path():
    def bump(x, y):
        x += y
        return x * 2
    x, y = np.zeros(16, np.float32), np.ones(16, np.float32)
    f = kfuse.jit(bump, backend="cpu")
    for k in range(1, 4):
        out = f(x, y)
        np.testing.assert_array_equal(x, np.full(16, k, np.float32))     # each call writes x
        np.testing.assert_array_equal(out, 2 * x)
    assert not _is_direct(f, x, y)
    with pytest.raises(UnsupportedError, match="shares memory"):
        f(x, x)                                           # the same key shape: still checked
    with pytest.raises(UnsupportedError, match="shares memory"):
        f(x, x)
    ro = np.zeros(16, np.float32)
    ro.flags.writeable = False
    for _ in range(2):
        with pytest.raises(ValueError, match="read-only"):
            f(ro, y)


def test_returned_copy_and_index_check_take_the_generic_path():
    def copy_and_scale(x):
        return x.copy(), x * 1.0

    def pick(x, i):
        return x[i] + 1.0
    x = np.arange(4, dtype=np.float32)
    f = kfuse.jit(copy_and_scale, backend="cpu")
    for _ in range(3):
        a, b = f(x)
        assert not np.shares_memory(a, x) and not np.shares_memory(b, x)
    assert not _is_direct(f, x)
    g = kfuse.jit(pick, backend="cpu")
    assert g(x, 1) == 2.0 and g(x, 2) == 3.0
    for _ in range(2):
        with pytest.raises(IndexError):
            g(x, 7)


def test_read_only_and_unaligned_inputs():
    x = np.random.default_rng(3).random(64, dtype=np.float32)
    y = x.copy()
    f = kfuse.jit(axpy, backend="cpu")
    _calls(f, axpy, x, y)
    ro = x.copy()
    ro.flags.writeable = False                           # same key as x; Numba's types differ
    _calls(f, axpy, ro, y)
    buf = np.zeros(64 * 4 + 1, np.uint8)
    odd = np.frombuffer(buf.data, np.float32, 64, offset=1)     # not aligned to its itemsize
    odd = odd.copy() if odd.flags.aligned else odd
    _calls(f, axpy, odd, y)


def test_tuning_after_the_direct_call_is_seen():
    x = np.random.default_rng(4).random(256, dtype=np.float32)
    f = kfuse.jit(axpy, backend="cpu")
    _calls(f, axpy, x, x)
    entry = _entry(f, x, x)
    (k,) = entry.program.kernels
    before = k.calls
    f(x, x)
    assert k.calls == before                              # the direct call: no launch()
    entry.program.set_variant(k.group.id, "seq", 1)
    assert_matches_numpy(f(x, x), axpy(x, x))
    assert k.calls == before + 1                          # tuned: run through launch()


def test_reshaped_output_view():
    def norm_rows(x):
        s = x.sum(axis=-1)
        return s.reshape(2, 2), x / s[:, None]
    x = np.random.default_rng(5).random((4, 3), dtype=np.float64)
    f = kfuse.jit(norm_rows, backend="cpu")
    _calls(f, norm_rows, x)


def test_segment_entries_are_not_keyed():
    def sorted_exp(x):
        return np.exp(np.sort(x * 2.0, axis=-1)) + 1.0
    x = np.random.default_rng(6).random((3, 5))
    f = kfuse.jit(sorted_exp, backend="cpu")
    _calls(f, sorted_exp, x)
    segments = [seg for entry in f._programs.values() for seg in getattr(entry, "memo", {}).values()]
    assert segments
    for seg in segments:                                  # reached by the session, not by a key
        assert not seg.keyed and not hasattr(seg.run, "source")


def test_renting_kernel_runs_sequentially_in_the_direct_call(monkeypatch):
    """A kernel large enough for threads whose parallel variant is not worth its compile yet
    (cpu_par_policy's rent) runs its sequential variant from the direct call once its account's
    lease is open, the rent added there; a busy machine runs it there unrented."""
    from kfuse.runtime import cpu as rt, cpu_par_policy as P
    monkeypatch.setattr(rt, "machine_busy", lambda: False)
    monkeypatch.setattr(rt, "thread_cap", lambda: 2)
    monkeypatch.setattr(P, "par_cost", lambda seq, par: 1.0)    # (not on disk, not compiled)
    monkeypatch.setattr(P, "EAGER_GAIN_S", 1e-3)                # (a descheduled timed call)

    def permute_scale(x):
        return np.transpose(x, (0, 2, 1, 3)) * 0.5
    x = np.random.default_rng(7).random((4, 8, 256, 64), dtype=np.float32)
    f = kfuse.jit(permute_scale, backend="cpu")
    _calls(f, permute_scale, x, n=8)
    (k,) = _entry(f, x).program.kernels
    acc = k.variants.account([x])[0]
    assert k.work >= rt.PAR_MIN_WORK and not acc.ready, (acc.rent, acc.cost, acc.timed)
    assert acc.lease > acc.rent and k.work < acc.lease_work      # settled: the lease is open
    assert "A0.rent +=" in _entry(f, x).run.source
    calls, rent = k.calls, acc.rent
    got = _calls(f, permute_scale, x, n=3)
    assert k.calls == calls and acc.rent > rent                   # no launch(), rent paid
    assert got.strides == permute_scale(x).strides
    acc.lease = acc.rent                                          # spent: back through launch()
    _calls(f, permute_scale, x, n=1)
    assert k.calls == calls + 1
    rent = acc.rent
    busy = _entry(f, x).run.__globals__
    monkeypatch.setitem(busy, "busy", lambda: True)
    _calls(f, permute_scale, x, n=2)
    assert k.calls == calls + 1 and acc.rent == rent              # busy: one thread, no rent
