"""``kfuse.capture``: a step of kfuse calls replayed as one CUDA graph gives the results of the
same calls made one by one, bit for bit, and refuses arguments of another shape."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)

import cupy as cp  # noqa: E402

import kfuse  # noqa: E402


@kfuse.jit
def _adam(p, g, m, v, lr, t):
    m[...] = 0.9 * m + 0.1 * g
    v[...] = 0.999 * v + 0.001 * g * g
    mhat = m / (1 - 0.9 ** t)
    vhat = v / (1 - 0.999 ** t)
    p[...] = p - lr * mhat / (np.sqrt(vhat) + 1e-8)


@kfuse.jit
def _norm(x):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)


def _step(params, grads, ms, vs):
    for p, g, m, v in zip(params, grads, ms, vs):
        _adam(p, _norm(g), m, v, 1e-3, 3.0)
    return [p.sum() for p in params]


def _state(seed):
    rng = np.random.default_rng(seed)
    sizes = [(4, 256), (16, 1024), (64, 1024)]
    return [[cp.asarray(rng.standard_normal(s).astype(np.float32)) for s in sizes] for _ in range(4)]


def test_replay_matches_calls_one_by_one():
    a, b = _state(0), _state(0)
    _step(*a)                                   # a: the warm-up call capture makes, then two steps
    for _ in range(2):
        eager = _step(*a)
    step = kfuse.capture(_step, *b)
    for _ in range(2):
        replayed = step.replay()
    for x, y in zip(a[0] + eager, b[0] + replayed):
        assert cp.asnumpy(x).tobytes() == cp.asnumpy(y).tobytes()


def test_new_arrays_of_the_captured_shapes_are_copied_in():
    x = cp.asarray(np.random.default_rng(2).standard_normal((8, 64)).astype(np.float32))
    step = kfuse.capture(_norm, x)
    y = x * 3 + 1
    got = step(y)
    assert cp.asnumpy(got).tobytes() == cp.asnumpy(_norm(y)).tobytes()


def test_changed_shape_is_a_clear_error():
    x = cp.ones((8, 64), cp.float32)
    step = kfuse.capture(_norm, x)
    with pytest.raises(kfuse.GraphShapeError, match=r"float32\[8, 65\].*captured as float32\[8, 64\]"):
        step(cp.ones((8, 65), cp.float32))


def test_a_host_read_inside_the_step_is_a_clear_error():
    x = cp.ones((8, 64), cp.float32)

    def step(x):
        return float(_norm(x).sum())        # waits for the device: nothing a graph can hold

    with pytest.raises(kfuse.DeviceError, match="cannot hold"):
        kfuse.capture(step, x)
    assert cp.asnumpy(_norm(x)).shape == (8, 64)        # the stream is usable after the failure
