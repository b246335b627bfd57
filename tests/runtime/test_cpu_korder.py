"""The CPU backend's elementwise results laid out as NumPy lays a ufunc's result out (its
iterator's K order, ``codegen.cpu_layout``): ``x.T * s`` and ``np.exp(x.T)`` are F-contiguous,
a permuted operand alone gives the output its layout, operands that disagree give C order; the
kernel's loops nest in that order (``perm=`` in the schedule). Each case compares the strides
with NumPy's own result of the same single ufunc call and the values with NumPy's."""
from __future__ import annotations

import numpy as np
import pytest

import kfuse
from tests.tolerance import assert_matches_numpy

pytestmark = pytest.mark.filterwarnings("ignore::kfuse.runtime.cache.RecompileWarning")
RNG = np.random.default_rng(31)


def _arr(shape, dtype=np.float32):
    a = RNG.standard_normal(shape) * 4
    return a.astype(dtype) if np.dtype(dtype).kind == "f" else np.rint(a).astype(dtype)


def _schedules(jf) -> list[str]:
    prog = list(jf._programs.values())[-1].program
    return [line.split("schedule: ")[1].rstrip('"') for line in prog.stages["cpu"].splitlines()
            if "schedule: " in line]


CASES = {           # one ufunc call each: NumPy's result layout is its iterator's K order
    "transposed_times_row": (lambda x, s: x.T * s, [(37, 301), (37,)], True),
    "exp_of_transpose": (lambda x: np.exp(x.T), [(301, 37)], True),
    "permute_0213": (lambda x: np.transpose(x, (0, 2, 1, 3)) * 0.5, [(3, 5, 41, 7)], True),
    "permute_201_broadcast": (lambda x, y: np.transpose(x, (2, 0, 1)) + y, [(5, 9, 23), (5, 1)], True),
    "both_transposed": (lambda x, y: x.T - y.T, [(29, 31), (29, 31)], True),
    "strided_transpose": (lambda x: x[:, ::2].T * 3, [(40, 50)], True),
    "reversed_transpose": (lambda x: x[::-1].T * 3, [(40, 50)], True),
    "disagreeing_operands": (lambda x, y: x.T + y, [(37, 41), (41, 37)], False),
    "c_order": (lambda x, y: x * y, [(37, 41), (37, 41)], False),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.float16])
def test_elementwise_result_layout_is_numpys(name, dtype):
    fn, shapes, permuted = CASES[name]
    args = [_arr(s, dtype) for s in shapes]
    f = kfuse.jit(fn, backend="cpu")
    got, want = f(*args), fn(*args)
    assert got.strides == want.strides, (got.strides, want.strides)
    assert any("perm=" in s for s in _schedules(f)) == permuted, _schedules(f)
    if want.dtype.kind == "f":
        assert_matches_numpy(got, want)
    else:
        np.testing.assert_array_equal(got, want)
    fargs = [np.asfortranarray(a) for a in args]              # other strides: another layout
    assert f(*fargs).strides == fn(*fargs).strides


def test_pieces_inside_a_permuted_nest():
    """A concatenation along the output's fastest axis under a permuted layout: the innermost
    loop (in the permuted order) is walked in pieces."""
    x, y = _arr((40, 3, 26)), _arr((40, 3, 26))

    def fn(x, y):
        return y.T * np.concatenate((-x[..., 13:], x[..., :13]), axis=2).T
    f = kfuse.jit(fn, backend="cpu")
    got, want = f(x, y), fn(x, y)
    assert_matches_numpy(got, want)
    assert got.flags.f_contiguous
    scheds = _schedules(f)
    assert any("perm=[2, 1, 0]" in s and "pieces=i0" in s for s in scheds), scheds


def test_intermediates_and_reductions_keep_c_order():
    """Only a result nothing else reads takes the K order: one a later kernel reads, or one
    written beside a reduction, stays C-ordered (the values are NumPy's either way)."""
    x, s = _arr((64, 300)), _arr((64,))

    def fn(x, s):
        y = x.T * s
        return y, y.sum(axis=0)
    f = kfuse.jit(fn, backend="cpu")
    got, want = f(x, s), fn(x, s)
    assert_matches_numpy(got[0], want[0])
    assert_matches_numpy(got[1], want[1], reductions=True)


def test_a_c_ordered_output_gets_the_same_values():
    """A caller that allocates the output in C order (not through cpu_layout.allocate) still
    gets NumPy's values from a kernel whose loops and stores follow the K order."""
    x = _arr((4, 6, 33, 5))
    fn = lambda x: np.transpose(x, (0, 2, 1, 3)) * 0.5      # noqa: E731
    f = kfuse.jit(fn, backend="cpu")
    want = fn(x)
    assert f(x).strides == want.strides
    k = list(f._programs.values())[-1].program.kernels[0]
    assert k.variants.last.perm
    for variant in k.fns:                   # sequential, parallel
        out = np.full(want.shape, np.nan, np.float32)
        variant(x, out, *k.size_args)
        np.testing.assert_array_equal(out, want)


def test_later_calls_keep_the_layout():
    """The direct call of a cached entry (runtime/cpu_direct.py) allocates the K-order layout the
    generic first call chose: every call's result has NumPy's strides."""
    x = _arr((40, 70))
    fn = lambda x, s: np.exp(x.T) * s      # noqa: E731
    f = kfuse.jit(fn, backend="cpu")
    want = fn(x, np.float32(2))
    for _ in range(3):
        got = f(x, np.float32(2))
        assert got.strides == want.strides
        assert_matches_numpy(got, want)
    assert getattr(list(f._programs.values())[-1].run, "source", None)     # the direct call ran


def test_c_ordered_shortcut_agrees_with_the_iterator():
    """Where every operand's strides fall in C order (cpu_layout._c_ordered), NumPy's iterator
    gives C order too: random permuted and broadcast stride patterns, sizes 1 to 5."""
    from kfuse.codegen import cpu_layout
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(3000):
        nd = int(rng.integers(2, 5))
        ext = [int(rng.choice([1, 2, 3, 5])) for _ in range(nd)]
        ops = []
        for _ in range(int(rng.integers(1, 4))):
            perm = rng.permutation(nd)
            st = list(np.zeros([ext[p] for p in perm], np.uint8).transpose(np.argsort(perm)).strides)
            st = [0 if rng.random() < 0.2 else s for s in st]
            ops.append(np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), [min(e, 2) for e in ext], st))
        if not all(cpu_layout._c_ordered(v.strides, ext) for v in ops):
            continue
        it = np.nditer(ops + [None], flags=["zerosize_ok"], order="K",
                       op_flags=[["readonly"]] * len(ops) + [["writeonly", "allocate"]],
                       op_dtypes=[np.uint8] * (len(ops) + 1))
        out = it.operands[-1]
        loops = [d for d in sorted(range(nd), key=lambda d: -abs(out.strides[d])) if ext[d] > 1]
        assert loops == sorted(loops), (ext, [v.strides for v in ops])
        checked += 1
    assert checked > 500
