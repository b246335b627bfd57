"""The CPU's tiles order for elementwise kernels with an operand transposed against the output
(``codegen.cpu_schedule`` ``order=tiles``): chosen from the strides, rendered in the kernel's
source, and right at sizes that are not multiples of the tile, on 2-D to 4-D permutes, with
broadcast operands and extent-1 dims, for float, integer and bool data."""
import functools

import numpy as np
import pytest

import kfuse
from tolerance import assert_matches_numpy
from ufunc_cases import random_array

RNG = np.random.default_rng(8)


def _schedules(f):
    prog = list(f._programs.values())[-1].program
    return [line.split("schedule: ")[1].rstrip('"') for line in prog.stages["cpu"].splitlines()
            if "schedule: " in line]


_arr = functools.partial(random_array, RNG, span=50)


CASES = {
    "exp_xT_plus_y": (lambda x, y: np.exp(x.T) + y, [(257, 331), (331, 257)], "order=tiles(i0)"),
    # (with a C-ordered operand beside the transposed one: alone, it gives the output its layout,
    # tests/runtime/test_cpu_korder.py)
    "column_scale": (lambda x, s, y: x.T * s + y, [(300, 1000), (300,), (1000, 300)], "order=tiles(i0)"),
    "nchw_to_nhwc": (lambda x, y: np.transpose(x, (0, 2, 3, 1)) + y, [(2, 70, 9, 130), (2, 9, 130, 70)],
                     "order=tiles(i2)"),
    "extent_one": (lambda x, y: x.T[None] * y, [(300, 400), (1, 400, 300)], "order=tiles(i1)"),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.bool_])
def test_transposed_operands_run_in_tiles(name, dtype):
    fn, shapes, sched = CASES[name]
    if dtype == np.bool_ and name == "exp_xT_plus_y":
        pytest.skip("exp of booleans is float16 in NumPy: covered by the float cases")
    args = [_arr(s, dtype) for s in shapes]
    f = kfuse.jit(fn, backend="cpu")
    got = f(*args)
    assert any(s.split(" staged=")[0] == sched and " staged=v" in s for s in _schedules(f))
    want = fn(*args)
    if want.dtype.kind == "f":
        assert_matches_numpy(got, want)
    else:
        np.testing.assert_array_equal(got, want)


def _on_threads(f, args, threads):
    """``f(*args)`` with every kernel of its last program on the parallel variant and ``threads``."""
    prog = list(f._programs.values())[-1].program
    for k in prog.kernels:
        prog.set_variant(k.group.id, "par", threads)
    return f(*args)


@pytest.mark.parametrize("shape", [(3, 200, 130), (2, 128, 320), (1, 65, 4095)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_staged_tiles_at_odd_sizes_and_threads(shape, dtype):
    """A transposed operand's tiles copied into the scratch tile first (``staged``): tiles cut
    short at both ends, one and two threads, bit for bit NumPy's."""
    x = _arr(shape, dtype)
    y = _arr((shape[0], shape[2], shape[1]), dtype)
    fn = lambda x, y: np.transpose(x, (0, 2, 1)) * 3 + y     # noqa: E731
    f = kfuse.jit(fn, backend="cpu")
    want = fn(x, y)
    np.testing.assert_array_equal(f(x, y), want)
    assert _schedules(f) == ["order=tiles(i1) staged=v0"]
    for threads in (1, 2):
        np.testing.assert_array_equal(_on_threads(f, (x, y), threads), want)


def test_staged_tiles_of_a_4d_permute_with_two_transposed_reads():
    """Two operands read NCHW -> NHWC beside a C-ordered one (which gives the output its
    layout): both staged, each in its own scratch tile."""
    x, z = _arr((2, 70, 9, 130), np.float32), _arr((2, 70, 9, 130), np.float32)
    y = _arr((2, 9, 130, 70), np.float32)
    fn = lambda x, z, y: np.exp(np.transpose(x, (0, 2, 3, 1))) - np.transpose(z, (0, 2, 3, 1)) * y  # noqa: E731
    f = kfuse.jit(fn, backend="cpu")
    got = f(x, z, y)
    (sched,) = _schedules(f)
    assert sched.startswith("order=tiles(i2) staged=v") and sched.count(",") == 1
    assert_matches_numpy(got, fn(x, z, y))
    assert_matches_numpy(_on_threads(f, (x, z, y), 2), fn(x, z, y))


def test_float16_transposed_reads_are_not_staged():
    x, y = _arr((300, 257), np.float16), _arr((257, 300), np.float16)
    f = kfuse.jit(lambda x, y: x.T + y, backend="cpu")
    got = f(x, y)
    assert _schedules(f) == ["order=tiles(i0)"]
    assert_matches_numpy(got, x.T + y)


def test_small_or_contiguous_operands_keep_the_row_order():
    f = kfuse.jit(lambda x, y: x.T + y, backend="cpu")
    f(_arr((50, 60), np.float32), _arr((60, 50), np.float32))          # under TILE_MIN elements
    assert _schedules(f) == ["order=rows"]
    g = kfuse.jit(lambda x, y: x + y, backend="cpu")
    g(_arr((500, 600), np.float32), _arr((500, 600), np.float32))
    assert _schedules(g) == ["order=rows"]
