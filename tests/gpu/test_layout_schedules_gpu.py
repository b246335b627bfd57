"""Elementwise schedules for layouts other than contiguous rows, on the GPU (skipped without one):
operands transposed or permuted against the output run as 2-D tiles through shared memory
(Variant mode "tile"), and a slice's start along the vector keeps 16-byte vectors where it is a
whole number of them. Results against NumPy at odd sizes and every dtype family; the launcher
really picked the schedule."""
import functools

import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)

import cupy as cp  # noqa: E402

import kfuse  # noqa: E402
from tolerance import assert_matches_numpy  # noqa: E402
from ufunc_cases import random_array  # noqa: E402

RNG = np.random.default_rng(5)


def _variants(f, *args):
    entry = f._programs[f._key(args)]
    return [h[0].variant for lau in entry.program.launchers for h in lau._variants.values()]


_arr = functools.partial(random_array, RNG, span=100)


TILED = {
    "exp_xT_plus_y": (lambda x, y: np.exp(x.T) + y, [(1023, 517), (517, 1023)]),
    "x_plus_xT": (lambda x: x + x.T * 2, [(777, 777)]),
    "nchw_to_nhwc": (lambda x, b: np.transpose(x, (0, 2, 3, 1)) * b, [(3, 67, 19, 41), (67,)]),
    "attention_permute": (lambda q: np.transpose(q, (0, 2, 1, 3)).reshape(2, 33, -1) + 1,
                          [(2, 40, 33, 64)]),
}


@pytest.mark.parametrize("name", list(TILED))
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32, np.int8])
def test_transposed_operands_run_as_tiles(name, dtype):
    fn, shapes = TILED[name]
    args = [_arr(s, dtype) for s in shapes]
    dev = [cp.asarray(a) for a in args]
    f = kfuse.jit(fn)
    got = f(*dev)
    want = fn(*args)
    if name == "attention_permute":        # the last dim is already contiguous in q: no tile needed
        assert not any(v.mode == "tile" for v in _variants(f, *dev))
    else:
        assert any(v.mode == "tile" for v in _variants(f, *dev))
    if want.dtype.kind == "f":
        assert_matches_numpy(cp.asnumpy(got), want)
    else:
        np.testing.assert_array_equal(cp.asnumpy(got), want)


def test_tiles_of_a_sliced_transposed_view_and_bool():
    x = _arr((301, 203), np.float32)
    m = _arr((203, 301), np.bool_)
    fn = lambda x, m: np.where(m, x.T, -x.T)   # noqa: E731
    f = kfuse.jit(fn)
    got = f(cp.asarray(x), cp.asarray(m))
    np.testing.assert_array_equal(cp.asnumpy(got), fn(x, m))
    xs = x[:, ::2]                       # a strided view: its loads still tiled where contiguous
    g = kfuse.jit(lambda x, y: x.T + y)
    y = _arr((102, 301), np.float32)
    np.testing.assert_array_equal(cp.asnumpy(g(cp.asarray(xs), cp.asarray(y))), xs.T + y)


@pytest.mark.parametrize("start", [4096, 3])
def test_halves_of_one_array_in_vectors_where_aligned(start):
    x = _arr((257, 4096 + start), np.float16)
    fn = lambda x: np.tanh(x[:, :4096]) * x[:, start:]          # noqa: E731
    f = kfuse.jit(fn)
    got = f(cp.asarray(x))
    vec = max(v.vec for v in _variants(f, cp.asarray(x)))
    assert vec == (8 if start % 8 == 0 else 1)
    assert_matches_numpy(cp.asnumpy(got), fn(x))


def _group_norm(x, g, b):
    n, c, h, w = x.shape
    y = x.reshape(n, 8, -1)
    y = (y - y.mean(-1, keepdims=True)) / np.sqrt(y.var(-1, keepdims=True) + 1e-5)
    return y.reshape(n, c, h, w) * g[None, :, None, None] + b[None, :, None, None]


def test_group_norm_one_kernel_returned_as_a_view_cupy_and_torch():
    x = _arr((4, 32, 13, 11), np.float32)
    g, b = _arr((32,), np.float32), _arr((32,), np.float32)
    f = kfuse.jit(_group_norm)
    got = f(cp.asarray(x), cp.asarray(g), cp.asarray(b))
    assert len(f._programs[f._key((cp.asarray(x), cp.asarray(g), cp.asarray(b)))].program.plan.groups) == 1
    assert got.shape == x.shape and got.flags.c_contiguous
    assert_matches_numpy(cp.asnumpy(got), _group_norm(x, g, b), reductions=True)
    torch = pytest.importorskip("torch")
    t = [torch.as_tensor(a, device="cuda") for a in (x, g, b)]
    tg = f(*t)
    assert isinstance(tg, torch.Tensor) and tuple(tg.shape) == x.shape
    assert_matches_numpy(tg.cpu().numpy(), _group_norm(x, g, b), reductions=True)


LANES = {
    # NHWC bytes to an NCHW float image: the input's own contiguous dim (3 channels) too short to tile
    "nhwc_u8_to_nchw": (lambda x: np.transpose(x.astype(np.float32) * (1.0 / 255.0), (0, 3, 1, 2)),
                        [(2, 5, 36, 3)], np.uint8),
    "rgb_planes_odd_rows": (lambda x, w: np.transpose(x, (2, 0, 1)) * w, [(7, 44, 3), (44,)], np.float32),
    "complex_pairs_f16": (lambda x: np.transpose(x, (0, 2, 1)) + 1, [(5, 64, 2)], np.float16),
}


@pytest.mark.parametrize("name", list(LANES))
def test_short_permuted_dims_keep_vector_stores(name):
    """A load running along a short dim of its own (not tiled) is read lane by lane while the
    output's stores stay 16-byte vectors (cuda_shapes.vector_ok with lanes)."""
    fn, shapes, dtype = LANES[name]
    args = [_arr(s, dtype) for s in shapes]
    dev = [cp.asarray(a) for a in args]
    f = kfuse.jit(fn)
    got = f(*dev)
    (v,) = _variants(f, *dev)
    assert v.mode == "elementwise" and v.vec > 1, v
    assert_matches_numpy(cp.asnumpy(got), fn(*args))
