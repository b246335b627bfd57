"""np.einsum traced against NumPy: explicit and implicit outputs, '...', diagonals, sums, batch
labels, size-1 broadcasting, three operands, the sublist form, dtype=/casting=, and NumPy's error
types for every malformed call."""
import numpy as np
import pytest

from trace_checks import check, rand

# (subscripts, operand shapes)
CASES = [
    ("ij,jk->ik", (4, 5), (5, 6)), ("ij,jk", (4, 5), (5, 6)), ("bij,bjk->bik", (3, 4, 5), (3, 5, 6)),
    ("ij->ji", (3, 4)), ("ii->i", (4, 4)), ("ii", (4, 4)), ("ij->", (3, 4)), ("ij->i", (3, 4)),
    ("i,i", (5,), (5,)), ("i,j->ij", (3,), (4,)), ("ij,ij->ij", (3, 4), (3, 4)),
    ("ij,ij->i", (3, 4), (3, 4)), ("ij,j->i", (3, 4), (4,)), ("...j,j", (2, 3, 4), (4,)),
    ("i...->...", (2, 3, 4)), ("ij...,j...->i...", (2, 3, 4), (3, 1)),
    ("bhqd,bhkd->bhqk", (2, 3, 4, 5), (2, 3, 6, 5)), ("ijk,jil->kl", (3, 4, 5), (4, 3, 2)),
    ("iij->j", (3, 3, 4)), ("iji->j", (3, 2, 3)), ("ij,jk,kl->il", (2, 3), (3, 4), (4, 5)),
    ("i,i,i", (4,), (4,), (4,)), ("ij,jk", (2, 1), (3, 4)), ("ij,i->j", (1, 4), (3,)),
    ("ba", (2, 3)), ("aB", (2, 3)), ("ij,kl->ijkl", (2, 3), (4, 5)), (" i j -> j i ", (2, 3)),
    ("ijk,ijk", (2, 3, 4), (2, 3, 4)), ("ij,jk->ik", (0, 5), (5, 6)), ("ij,jk->ik", (4, 0), (0, 6)),
    ("i,->i", (3,), ()), ("...,...", (2, 3), (3,)),
]


@pytest.mark.parametrize("dtype", ["f8", "f4", "f2", "i8", "i2", "u1", "?"])
@pytest.mark.parametrize("i", range(len(CASES)))
def test_einsum_matches_numpy(i, dtype):
    sub, *shapes = CASES[i]
    ops = [rand(s, dtype, k) for k, s in enumerate(shapes)]
    fn = [lambda a: np.einsum(sub, a), lambda a, b: np.einsum(sub, a, b),
          lambda a, b, c: np.einsum(sub, a, b, c)][len(ops) - 1]
    check(fn, *ops, reductions=True)


def test_einsum_mixed_dtypes_sublists_and_keywords():
    a, b = rand((2, 3), "f4", 1), rand((3, 4), "i2", 2)
    check(lambda a, b: np.einsum("ij,jk", a, b), a, b, reductions=True)          # promoted to f4
    check(lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [0, 2]), a, b, reductions=True)
    check(lambda a, b: np.einsum(a, [0, 27], b, [27, 2]), a, b, reductions=True)  # 'A', 'b'...
    check(lambda a, b: np.einsum(a, [Ellipsis, 1], b, [1, 2]), a, b, reductions=True)
    check(lambda a, b: np.einsum("ij,jk", a, b, dtype=np.float64), a, b, reductions=True)
    check(lambda a, b: np.einsum("ij,jk", a, b, dtype=np.int16, casting="unsafe"), a, b, reductions=True)
    check(lambda a, b: np.einsum("ij,jk", a, b, optimize=True), a, b, reductions=True)


@pytest.mark.parametrize("fn", [
    lambda a, b: np.einsum("ii", a),                          # collapsing sizes differ
    lambda a, b: np.einsum("ij->k", a),                       # output label in no operand
    lambda a, b: np.einsum("ijk", a),                         # too many subscripts
    lambda a, b: np.einsum("i", a),                           # too few, no '...'
    lambda a, b: np.einsum("ij,jk", a),                       # operand count
    lambda a, b: np.einsum("ij", a, b),
    lambda a, b: np.einsum("ij->ii", a),                      # repeated output label
    lambda a, b: np.einsum("i1", a),                          # not a letter
    lambda a, b: np.einsum("ij,ij", a, b),                    # sizes do not broadcast
    lambda a, b: np.einsum("...i->", b[None]),                # '...' dims but none in the output
    lambda a, b: np.einsum("ij,jk", a, b, dtype=np.int16),    # f4 -> i2 is not 'safe'
    lambda a, b: np.einsum(a, [0, 60]),                       # sublist label out of range
])
def test_einsum_errors_like_numpy(fn):
    a, b = rand((2, 3), "f4", 1), rand((3, 4), "f4", 2)
    with pytest.raises(Exception):      # each case is one NumPy refuses
        fn(a, b)
    check(fn, a, b)
