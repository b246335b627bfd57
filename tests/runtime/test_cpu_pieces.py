"""The CPU rows order's innermost loop walked in pieces (``codegen.cpu_pieces``, ``pieces=`` in the
schedule): concatenations, pads and broadcasts through a reshape, whose indices divide the loop
variable by a run-time size, against NumPy. Every case asserts the printed schedule, so a case
cannot pass by running the plain rows order; piece widths are odd, the first piece starts
mid-pattern (a shifted concatenation), inputs are views, and pieces too narrow to split
(``MIN_PIECE``) stay divisions beside split ones."""
from __future__ import annotations

import numpy as np
import pytest

import kfuse
from kfuse.codegen import cpu_pieces
from tests.tolerance import assert_matches_numpy

pytestmark = pytest.mark.filterwarnings("ignore::kfuse.runtime.cache.RecompileWarning")
RNG = np.random.default_rng(30)


def _schedules(jf) -> list[str]:
    prog = list(jf._programs.values())[-1].program
    return [line.split("schedule: ")[1].rstrip('"') for line in prog.stages["cpu"].splitlines()
            if "schedule: " in line]


def _arr(shape, dtype=np.float32):
    a = RNG.standard_normal(shape) * 4
    return a.astype(dtype) if np.dtype(dtype).kind == "f" else np.rint(a).astype(dtype)


def _check(fn, args, piece: str | None, reductions=False):
    f = kfuse.jit(fn, backend="cpu")
    got, want = f(*args), fn(*args)
    scheds = _schedules(f)
    if piece is None:
        assert not any("pieces=" in s for s in scheds), scheds
    else:
        assert any(piece in s for s in scheds), scheds
    if np.asarray(want).dtype.kind == "f":
        assert_matches_numpy(got, want, reductions=reductions)
    else:
        np.testing.assert_array_equal(got, want)


def _rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate((-x[..., h:], x[..., :h]), axis=-1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_rotary_3d(dtype):
    x, c, s = _arr((3, 11, 26), dtype), _arr((11, 26), dtype), _arr((11, 26), dtype)
    _check(lambda x, c, s: x * c + _rotate_half(x) * s, (x, c, s), "pieces=i2")


def test_rotary_4d_on_views():
    big = _arr((2, 9, 5, 40))
    x = big[:, 1:, :, 3:37]                              # offsets in every dim, halves of 17
    c, s = _arr((8, 34)), _arr((8, 34))[:, ::-1]        # a reversed (negative-stride) operand
    fn = lambda x, c, s: x * c[:, None] + _rotate_half(x) * s[:, None]     # noqa: E731
    _check(fn, (x, c, s), "pieces=i3")


def test_three_pieces_one_too_narrow():
    """Pieces of 9, 3 and 11 columns: the 3-wide one stays a division (below MIN_PIECE)."""
    assert 3 < cpu_pieces.MIN_PIECE <= 9
    a, b, c = _arr((5, 9)), _arr((5, 3)), _arr((5, 11))
    _check(lambda a, b, c: np.concatenate((a * 2, -b, c + 1), axis=1) * 0.5, (a, b, c), "pieces=i1")


def test_narrow_pieces_keep_the_divisions():
    a, b = _arr((40, 5)), _arr((40, 6))
    _check(lambda a, b: np.concatenate((a, b), axis=1) + 1, (a, b), None)


def test_pad_last_axis():
    x = _arr((7, 23))
    _check(lambda x: np.pad(np.exp(x), ((0, 0), (9, 12))) * 2, (x,), "pieces=i1")


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_reductions_of_a_concatenation(axis):
    x, y = _arr((13, 19)), _arr((13, 21))

    def fn(x, y):
        return np.concatenate((x, -y), axis=-1).max(axis=axis), np.concatenate((x * x, y), axis=-1).sum(axis=axis)
    f = kfuse.jit(fn, backend="cpu")
    got, want = f(x, y), fn(x, y)
    for g, w in zip(got, want):
        assert_matches_numpy(g, w, reductions=True)
    if axis == -1:
        assert any("pieces=i1" in s for s in _schedules(f)), _schedules(f)


def test_scan_along_a_concatenation_keeps_its_order():
    x, y = _arr((6, 10), np.int64), _arr((6, 15), np.int64)
    _check(lambda x, y: np.cumsum(np.concatenate((x, y * 3), axis=1), axis=1), (x, y), "pieces=i1")


@pytest.mark.parametrize("shape,piece", [((3, 12, 5, 7), "pieces=i2"), ((2, 8, 2, 2), None)])
def test_groupnorm_affine(shape, piece):
    """The per-channel scale read along a group's (C/G)*H*W row: a division by H*W per element,
    split where H*W is wide enough."""
    n, c, h, w = shape
    g = 4

    def gn(x, gamma, beta):
        y = x.reshape(n, g, -1)
        y = (y - y.mean(axis=-1, keepdims=True)) / np.sqrt(y.var(axis=-1, keepdims=True) + 1e-5)
        return y.reshape(n, c, h, w) * gamma.reshape(1, c, 1, 1) + beta.reshape(1, c, 1, 1)
    _check(gn, (_arr(shape), _arr((c,)), _arr((c,))), piece, reductions=True)


def test_patterns_and_affine_forms():
    from kfuse.codegen import kernel_ir as K
    i, s, a = K.IVar("i1"), K.IVar("s3"), K.IVar("i0")
    lhs = K.add(K.mul(a, K.IVar("s2")), i)
    assert cpu_pieces.affine(lhs, "i1") == (1, K.mul(a, K.IVar("s2")))
    assert cpu_pieces.affine(K.floordiv(lhs, s), "i1") is None
    assert cpu_pieces.affine(K.mul(K.sub(i, K.lit(2)), K.lit(3)), "i1") == (3, K.mul(K.lit(-2), K.lit(3)))


INTERLEAVED = {     # (function, input shape, interleaved loads expected)
    "even_odd": (lambda x: x[:, ::2] * x[:, 1::2], (37, 50), 2),
    "odd_even_from_one": (lambda x: x[:, 1::2] - x[:, 2::2], (37, 51), 2),
    "three_way": (lambda x: x[:, ::3] + x[:, 1::3] * x[:, 2::3], (19, 33), 3),
    "rows_sliced_3d": (lambda x: x[1:, ::2, 1::2] * x[1:, ::2, ::2], (4, 9, 40), 2),
    "row_sums": (lambda x: (x[:, ::2] * x[:, 1::2]).sum(axis=-1), (37, 50), 2),
    "too_far_apart": (lambda x: x[:, :20:2] * x[:, 4:24:2], (37, 50), 0),
}


@pytest.mark.parametrize("name", list(INTERLEAVED))
@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.float16])
def test_interleaved_reads(name, dtype):
    fn, shape, n = INTERLEAVED[name]
    f = kfuse.jit(fn, backend="cpu")
    x = _arr(shape, dtype)
    got, want = f(x), fn(x)
    scheds = _schedules(f)
    assert any(f"interleave=i{x.ndim - 1}[{n}]" in s for s in scheds) if n else \
        not any("interleave" in s for s in scheds), scheds
    if want.dtype.kind == "f":
        assert_matches_numpy(got, want, reductions=name == "row_sums")
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shift", [1, -1])
def test_one_element_piece_is_a_unit_pattern(shift):
    """``np.roll(x, ±1, -1)``: its wrapped piece is one element wide; that pattern's quotient is
    the index itself and its remainder 0 (``units=``), the other one splits the row."""
    def roll_diff(x):
        return x - np.roll(x, shift, -1)
    f = kfuse.jit(roll_diff, backend="cpu")
    x = _arr((37, 515))
    assert_matches_numpy(f(x), roll_diff(x))
    scheds = _schedules(f)
    assert any("units=" in s for s in scheds), scheds
    src = list(f._programs.values())[-1].program.stages["cpu"]
    loop = src[src.index("for pj"):]
    assert " // " not in loop and " % " not in loop, loop


def test_unit_pattern_is_chosen_per_size():
    """The first piece one element wide, then two, three: the unit pattern's code (remainder 0)
    must serve only the sizes where the divisor is 1 (schedules are chosen per size; a width-1
    array is a shape class of its own too)."""
    def head_tail(x, n):
        return np.concatenate([x[:, :n] * 3, np.exp(x[:, n:])], axis=1)
    f = kfuse.jit(head_tail, backend="cpu", static_argnames="n")
    for n, cols in ((1, 40), (2, 40), (1, 41), (2, 33)):
        x = _arr((9, cols))
        assert_matches_numpy(f(x, n), head_tail(x, n))
    g = kfuse.jit(lambda x, y: np.concatenate([x, y], axis=1), backend="cpu")
    for a, b in ((1, 30), (2, 30), (1, 31), (3, 17)):         # y's width a shape-class size
        x, y = _arr((5, a)), _arr((5, b))
        assert_matches_numpy(g(x, y), np.concatenate([x, y], axis=1))
