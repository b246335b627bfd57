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
    assert sched in _schedules(f)
    want = fn(*args)
    if want.dtype.kind == "f":
        assert_matches_numpy(got, want)
    else:
        np.testing.assert_array_equal(got, want)


def test_small_or_contiguous_operands_keep_the_row_order():
    f = kfuse.jit(lambda x, y: x.T + y, backend="cpu")
    f(_arr((50, 60), np.float32), _arr((60, 50), np.float32))          # under TILE_MIN elements
    assert _schedules(f) == ["order=rows"]
    g = kfuse.jit(lambda x, y: x + y, backend="cpu")
    g(_arr((500, 600), np.float32), _arr((500, 600), np.float32))
    assert _schedules(g) == ["order=rows"]
