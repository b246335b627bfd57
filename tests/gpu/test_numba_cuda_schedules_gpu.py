"""The CUDA C schedules the Numba-CUDA emitter renders too, on the GPU (skipped without one), on
both backends: packed short rows (lanes of a warp a row, several rows a block), scans along rows
(lanes of a warp a row, shuffle-up trees) and along columns (a thread a column, unrolled), and
transposes through shared-memory tiles. Results against NumPy at odd widths, row counts that
are not a multiple of a block's rows, sliced views, every scan axis; and the launcher really
ran the schedule (Numba-CUDA: the NVariant it rendered). Emitted and run without a GPU:
tests/codegen/test_numba_cuda_schedules.py and test_numba_cuda_sim_schedules.py."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = [pytest.mark.gpu, pytest.mark.backends("cuda", "numba-cuda")]   # the same schedules, both emitters
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)

import cupy as cp  # noqa: E402

import kfuse  # noqa: E402
from tolerance import assert_matches_numpy  # noqa: E402

RNG = np.random.default_rng(41)


def _infos(f, *args):
    """The schedules (CUDA C ``Variant`` or Numba-CUDA ``NVariant``) of the launches behind ``f``."""
    entry = f._programs[f._key(args)]
    return [getattr(h[0], "variant", h[0]) for lau in entry.program.launchers for h in lau._variants.values()]


def _run(fn, backend, *host, views=None):
    """``fn`` on ``backend`` (``views`` maps the device arrays) against NumPy; the schedules used."""
    dev = [cp.asarray(a) for a in host]
    if views is not None:
        dev = views(dev)
        host = [cp.asnumpy(d) for d in dev]
    f = kfuse.jit(fn, backend=backend)
    got = f(*dev)
    with np.errstate(all="ignore"):
        want = fn(*host)
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        assert_matches_numpy(cp.asnumpy(g), np.asarray(w), reductions=True)
    return _infos(f, *dev)


# -------------------------------------------------------------------------------- packed rows

def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def layernorm(x):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)


def rms_heads(q, w):
    return q / np.sqrt(np.mean(q * q, axis=-1, keepdims=True) + 1e-6) * w


ROW_FNS = {"sum": lambda x: x.sum(-1), "softmax": softmax, "layernorm": layernorm,
           "argmax": lambda x: np.argmax(x, -1), "any": lambda x: (x > 2.0).any(-1),
           "min": lambda x: x.min(-1)}


def _packed(infos) -> bool:
    return any(getattr(v, "packed", False) and v.mode == "row" for v in infos)


@pytest.mark.parametrize("width", [1, 3, 7, 8, 9, 16, 31, 33, 64, 100, 127, 128, 129, 384, 515])
@pytest.mark.parametrize("name", list(ROW_FNS))
def test_short_rows(name, width, backend):
    """1531 rows (no multiple of any block's rows): a thread a row up to 8 units, lanes of a warp
    a row up to 128 (a tie in the middle row: argmax keeps the first)."""
    x = RNG.standard_normal((1531, width)).astype(np.float32)
    x[765, width // 2] = x[765, 0]
    infos = _run(ROW_FNS[name], backend, x)
    if backend == "numba-cuda" and width <= 128 and width > 1:
        assert _packed(infos), infos


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int32, np.int8])
@pytest.mark.parametrize("width", [5, 33, 64])
def test_short_rows_of_other_dtypes(dtype, width, backend):
    x = (RNG.standard_normal((517, width)) * 20).astype(dtype)
    for fn in (lambda x: x.max(-1), lambda x: x.sum(-1), lambda x: np.argmin(x, -1)):
        _run(fn, backend, x)


@pytest.mark.parametrize("shape", [(2, 17, 5, 128), (3, 11, 7, 64), (1, 3, 2, 96)])
def test_head_dim_rows(shape, backend):
    """qk_rmsnorm_heads: rows of a head dim of (B, S, H, D), a weight along them (16-byte units)."""
    q = RNG.standard_normal(shape).astype(np.float32)
    w = RNG.standard_normal(shape[-1]).astype(np.float32)
    infos = _run(rms_heads, backend, q, w)
    assert _packed(infos), infos


VIEWS = {
    "cols_from_2": ((1531, 66), lambda d: [d[0][:, 2:]]),
    "rows_from_1": ((1531, 64), lambda d: [d[0][1:]]),
    "every_other_row": ((1531, 40), lambda d: [d[0][::2]]),
    "cols_1_to_-1": ((1531, 130), lambda d: [d[0][:, 1:-1]]),
}


@pytest.mark.parametrize("name", list(VIEWS))
@pytest.mark.parametrize("fn", ["sum", "softmax", "argmax"])
def test_short_rows_of_views(fn, name, backend):
    shape, view = VIEWS[name]
    x = RNG.standard_normal(shape).astype(np.float32)
    _run(ROW_FNS[fn], backend, x, views=view)


# -------------------------------------------------------------------------------- scans

def _uniform(shape, dtype=np.float32):
    return RNG.uniform(0.0, 1.0, shape).astype(dtype)


@pytest.mark.parametrize("shape", [(1531, 2), (1531, 3), (1531, 20), (1531, 32), (1531, 33), (1531, 300),
                                   (3001, 1999), (7, 11, 129), (4, 100003)])
def test_row_scans(shape, backend):
    """Along the last axis: packed (up to 32), a warp a row, a few long rows (two stages in CUDA C)."""
    x = _uniform(shape)
    infos = _run(lambda x: np.cumsum(x, axis=-1), backend, x)
    if backend == "numba-cuda" and shape[0] > 1000:
        assert any(v.mode == "scan" for v in infos), infos


@pytest.mark.parametrize("shape", [(4099, 517), (1031, 20011), (37, 45), (5, 3, 7)])
def test_leading_axis_scans(shape, backend):
    """Along axis 0 (a thread a column, its rows unrolled; fewer rows than a trip: the remainder)."""
    x = _uniform(shape)
    _run(lambda x: np.cumsum(x, axis=0), backend, x)
    _run(lambda x: np.maximum.accumulate(x, axis=0), backend, x)


@pytest.mark.parametrize("name", ["int32", "bool", "float16", "complex64", "max", "min_int8", "scan_of_scan",
                                  "cumprod_f64", "view", "middle_axis"])
def test_scan_kinds(name, backend):
    x = _uniform((1531, 77))
    fn = lambda x: np.cumsum(x, axis=-1)        # noqa: E731
    views = None
    if name == "int32":
        x = RNG.integers(-1000, 1000, (1531, 77)).astype(np.int32)
    elif name == "bool":
        x = x > 0.5
    elif name == "float16":
        x = (x * 0.1).astype(np.float16)
    elif name == "complex64":
        x = (x + 1j * _uniform((1531, 77))).astype(np.complex64)
    elif name == "max":
        x, fn = x - 0.5, lambda x: np.maximum.accumulate(x, axis=-1)
    elif name == "min_int8":
        x, fn = RNG.integers(-128, 127, (1531, 77)).astype(np.int8), lambda x: np.minimum.accumulate(x, axis=-1)
    elif name == "scan_of_scan":
        fn = lambda x: np.cumsum(np.cumsum(x, -1) * 0.5, -1)     # noqa: E731
    elif name == "cumprod_f64":
        x, fn = (x + 0.5).astype(np.float64), lambda x: np.cumprod(x, -1)
    elif name == "view":
        views = lambda d: [d[0][1:, 3:]]      # noqa: E731
    elif name == "middle_axis":
        x, fn = _uniform((13, 77, 19)), lambda x: np.cumsum(x, axis=1)
    _run(fn, backend, x, views=views)


# -------------------------------------------------------------------------------- tiles

TILED = {
    "exp_xT_plus_y": (lambda x, y: np.exp(x.T) + y, [(1023, 517), (517, 1023)]),
    "x_plus_xT": (lambda x: x + x.T * 2, [(777, 777)]),
    "whole_vectors": (lambda x, y: x.T * 0.5 + y, [(512, 320), (320, 512)]),
    "nchw_to_nhwc": (lambda x, b: np.transpose(x, (0, 2, 3, 1)) * b, [(3, 67, 19, 41), (67,)]),
    "where_bool": (lambda x, m: np.where(m > 0, x.T, -x.T), [(301, 203), (203, 301)]),
}


@pytest.mark.parametrize("name", list(TILED))
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32, np.int8])
def test_transposes_through_shared_tiles(name, dtype, backend):
    fn, shapes = TILED[name]
    args = [(RNG.standard_normal(s) * 20).astype(dtype) for s in shapes]
    infos = _run(fn, backend, *args)
    assert any(v.mode == "tile" for v in infos), infos


@pytest.mark.parametrize("view", ["rows_from_1", "every_other_row", "cols_2_to_258"])
def test_tiles_of_views(view, backend):
    x = RNG.standard_normal((512, 260)).astype(np.float32)
    sl = {"rows_from_1": np.s_[1:], "every_other_row": np.s_[::2], "cols_2_to_258": np.s_[:, 2:258]}[view]
    y = RNG.standard_normal(x[sl].shape[::-1]).astype(np.float32)
    infos = _run(lambda x, y: np.exp(x.T) + y, backend, x, y, views=lambda d: [d[0][sl], d[1]])
    assert any(v.mode == "tile" for v in infos), infos


def test_tiles_over_more_blocks_than_the_grid(backend):
    """A plane of many tiles (a block grid-strides over tiles: both barriers every tile)."""
    x = RNG.standard_normal((4099, 3001)).astype(np.float32)
    y = RNG.standard_normal((3001, 4099)).astype(np.float32)
    infos = _run(lambda x, y: x.T + y, backend, x, y)
    assert any(v.mode == "tile" for v in infos), infos


# -------------------------------------------------------------------------------- index divisions

def _rotary(x, c, s):
    h = x.shape[-1] // 2
    return x * c + np.concatenate((-x[..., h:], x[..., :h]), axis=-1) * s


PIECES = {
    "rotary_3d": (_rotary, [(3, 77, 128), (77, 128), (77, 128)]),
    "rotary_odd": (_rotary, [(5, 33, 18), (33, 18), (33, 18)]),
    "concat_sin": (lambda x, z: np.concatenate([x, x * x, np.sin(z)], axis=1), [(1031, 100), (1031, 37)]),
    "roll_pad": (lambda x: np.pad(x - np.roll(x, 3, -1), ((0, 0), (2, 5))), [(517, 1029)]),
    "tile_repeat": (lambda x: np.tile(x, (1, 3)) + np.repeat(x, 3, axis=1), [(301, 77)]),
}


@pytest.mark.parametrize("name", list(PIECES))
def test_index_divisions_by_sizes(name, backend):
    """Pieces, wraps and pads: index divisions by sizes (Numba-CUDA: multiply-high, NVariant.divs)."""
    fn, shapes = PIECES[name]
    _run(fn, backend, *[RNG.standard_normal(s).astype(np.float32) for s in shapes])


# -------------------------------------------------------------------------------- held and re-loaded rows

def _groupnorm(x, g, b):
    n, c, h, w = x.shape
    y = x.reshape(n, 32, -1)
    y = (y - y.mean(-1, keepdims=True)) / np.sqrt(y.var(-1, keepdims=True) + 1e-5)
    return y.reshape(n, c, h, w) * g.reshape(1, c, 1, 1) + b.reshape(1, c, 1, 1)


@pytest.mark.parametrize("width", [1000, 1024, 4096, 4100])
@pytest.mark.parametrize("fn", ["layernorm", "softmax"])
def test_held_and_reloaded_rows(fn, width, backend):
    """Rows of 1000 to 4100: layernorm's re-loaded every pass (float32 sums), softmax's held in
    register slots; rows of exactly slots x block units (1024, 4096) without bounds tests."""
    x = RNG.standard_normal((1531, width)).astype(np.float32)
    infos = _run(ROW_FNS[fn], backend, x)
    if backend == "numba-cuda" and fn == "layernorm" and width % 4 == 0:
        assert any(getattr(v, "reload", False) for v in infos), infos


@pytest.mark.parametrize("shape", [(8, 64, 32, 32), (4, 256, 16, 16), (2, 96, 7, 9)])
def test_groupnorm_rows(shape, backend):
    x = RNG.standard_normal(shape).astype(np.float32)
    g, b = RNG.standard_normal(shape[1]).astype(np.float32), RNG.standard_normal(shape[1]).astype(np.float32)
    _run(_groupnorm, backend, x, g, b)
