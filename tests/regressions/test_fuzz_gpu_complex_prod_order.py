"""Complex prod, cumprod, max and min on the GPU backends give NumPy's NaN and infinite parts.

Found by `kfuse fuzz --dtypes complex` on an H200 (2026-11-27): cuda seed 41 #424
(``a1.prod(axis=(1,))``), numba-cuda seed 42 #1643 (``a1.prod(axis=2)``: kfuse nan+nanj, NumPy
-inf+nanj), #1060 (``np.prod(a0, axis=(0,), dtype=np.complex64)``: kfuse nan+nanj, NumPy
-inf+infj) and #191 (``np.cumsum(a0, axis=1).max(axis=1)``: kfuse nan-6.19j, NumPy nan-6.94j).
NumPy multiplies (compares) a row left to right, one element at a time; the GPU emitters combined
the row as a tree, and a complex product is not associative past an infinite or NaN factor, nor
does a tree of complex max/min combines keep the first NaN of the row. Now a row whose tree value
is non-finite (prod) or NaN (max/min) is redone in NumPy's order (``codegen.accs.redo_ops``), and
a CUDA C cumprod segment holding a non-finite value is scanned again in order (``cuda_scan``).

Why these fail on the old code (checked on the host by emulating its trees, not on a GPU): the
constructed rows make every tree shape give another value than NumPy's. A real-valued row ending
in -inf+0j: NumPy's last step is finite * (-inf+0j) = -inf+nan j (or +inf), while a tree
multiplies the infinite factor into a partial product first (its NaN imaginary part then makes
the real part NaN too). A max/min row with a NaN (imaginary part 1) at position 1 and NaNs
(imaginary part 7) after it: the tree's lane 0 meets a later NaN (lane 16, or its own element
one block on) before position 1's, and keeps it. The fuzz programs failed on an H200 as found.
Each test runs on the CPU backend too (NumPy's order already), which checks the expectations.
"""
import numpy as np
import pytest

import kfuse
from backends import to_device, to_host
from tolerance import assert_matches_numpy

nan, inf = float("nan"), float("inf")
pytestmark = pytest.mark.backends("cpu", "cuda", "numba-cuda")


def _check(fn, backend, *arrays, views=None):
    """``fn`` on ``arrays`` (each through its view function in ``views``, taken on the device as
    the fuzzer does, so the kernel shape is the one that failed) against NumPy's."""
    views = views or [lambda a: a] * len(arrays)
    with np.errstate(all="ignore"):
        want = fn(*[v(a) for v, a in zip(views, arrays)])
    got = to_host(kfuse.jit(fn, backend=backend)(*[v(a) for v, a in zip(views, to_device(backend, *arrays))]))
    if not isinstance(want, tuple):
        got, want = (got,), (want,)
    for k, (g, w) in enumerate(zip(got, want)):
        assert_matches_numpy(g, w, err_msg=f"output {k}")


def test_fuzz_cuda_s41_p424(backend):
    a1 = np.array([complex(-0.5, 8.0), complex(-0.75, 3.5), complex(-0.9904197092557583, 2.8631669845414045),
                   complex(-1.0, -1.75), complex(3636.083282096502, -0.6149437917870455), complex(inf, 1.75),
                   complex(-2.426500119551205, -2.5), complex(1.8167554900971536, 0.75), complex(-1.0, -2.0),
                   complex(-1.75, 0.0), complex(0.0, -0.024055596369613408), complex(2.0, -2.7723088151294784)],
                  dtype=np.complex128).reshape((4, 3))
    _check(lambda a1: a1.prod(axis=(1,)), backend, a1)


def test_fuzz_numba_cuda_s42_p1643(backend):
    a1 = np.array([complex(-0.5, -0.0), complex(-1.0134600824944726, 0.0), complex(1.5, 0.0),
                   complex(1.9197526022220286, 0.0), complex(-0.4281980668794705, 0.0),
                   complex(1.5127339684111334, -0.0), complex(2.822375972915225, 0.0), complex(-2.0, -0.0),
                   complex(0.0, -0.0), complex(2.0, -0.0), complex(-inf, 0.0), complex(-inf, 0.0),
                   complex(1.1364182645945151, 0.0), complex(5.0, 0.0), complex(-0.5, 0.0),
                   complex(2.821805450085928, 0.0), complex(2.1915646131563564, -0.0), complex(4.0, 0.0),
                   complex(-3.0, 0.0), complex(1.5162353971323856, 0.0), complex(3.5, -0.0),
                   complex(1.560355342413665, 0.0), complex(-3.0, 0.0), complex(inf, -0.0)],
                  dtype=np.complex128).reshape((2, 3, 4))
    _check(lambda a1: a1.prod(axis=2), backend, a1)


A1060 = np.array([complex(-2.5, 8.0), complex(0.6737991975396218, 2.0), complex(1.5, 1.7843624015816184),
                  complex(-10.444414231679675, 4.0), complex(1063.3594047499957, 0.5),
                  complex(2.2087730787887185, -2.84305705075384), complex(2.1109676956188306, -1.5),
                  complex(-8.0, 3.0), complex(inf, -1.0763627606034376), complex(4.0, -3.0),
                  complex(-1.8334518907591688, -1.25), complex(0.3195189124106941, -0.5),
                  complex(-2.556375347650678, -3.5), complex(3.5, 1.7916449940510226), complex(-1.5, -1.5)],
                 dtype=np.complex128).reshape((5, 3))


def test_fuzz_numba_cuda_s42_p1060(backend):
    def fuzz_fn(a0):
        v2 = np.prod(a0, axis=(0,), dtype=np.complex64)
        v4 = (v2 + 1000.0).argmax(keepdims=True)
        return v4, v2
    _check(fuzz_fn, backend, A1060, views=[lambda a: a.transpose((1, 0))])


def test_fuzz_s42_p1060_where_mask(backend):
    """prod(where=) skips a left-out element as NumPy's reduce does: multiplying it by the fill 1+0j
    past an infinite part made NaN parts (inf * 0), on every backend (seed 42 #1060's v0)."""
    _check(lambda a0: a0.prod(axis=1, keepdims=True, where=(a0 > 0)), backend, A1060,
           views=[lambda a: a.transpose((1, 0))])


def test_fuzz_numba_cuda_s42_p191(backend):
    a0 = np.array([complex(0.42563392617627294, 2.0), complex(2.84057638639079, 0.0), complex(-3.0, 6.0),
                   complex(-2.978555464302734, 3.8828634930631005), complex(0.0, 1.5343929442693875),
                   complex(2.808921001327726, 0.053468226707216626), complex(221.12648619722154, -4.0),
                   complex(1.1389599664996952, 5.0), complex(nan, -8.0), complex(0.09309529266449568, 0.75),
                   complex(-4.0, -1.9467344948173186), complex(0.0, 0.75), complex(-289.44782123904656, -8.0),
                   complex(1.0130688074129184, -0.17961614800378012), complex(-0.5, -2.5),
                   complex(-2.550641768644531, 0.0), complex(2.5568904555008487, 2.5133594473462617),
                   complex(-2.4703144559127153, 1.2913465476932942), complex(-1.1284014371516913, 0.0),
                   complex(0.37300477039363056, -1.3683167871919943), complex(-1.6938754076726288, -0.25),
                   complex(-inf, 308.338228831385), complex(-2665.5307237281336, 8.0), complex(-inf, 1.75),
                   complex(-6.0, -1.6823045393432638)], dtype=np.complex128).reshape((5, 5))

    def fuzz_fn(a0):
        v0 = np.cumsum(a0, axis=1).max(axis=1, keepdims=True)
        return np.logical_not(v0.argmin(keepdims=True) < v0.argmin(keepdims=True)), v0
    _check(fuzz_fn, backend, a0)


def _ending_in_inf(dtype, shape, seed):
    """Real-valued factors near +-1 (no overflow), the last of each row -inf+0j or inf-0j."""
    rng = np.random.default_rng(seed)
    x = (rng.choice([-1.0, 1.0], shape) * rng.uniform(0.999, 1.001, shape)).astype(dtype)
    x[..., -1] = np.where(np.arange(shape[0]) % 2 == 0, complex(-inf, 0.0), complex(inf, -0.0)).reshape(-1, *([1] * (len(shape) - 2)))
    return x


def _nans(dtype, shape):
    """Each row: a finite value, then a NaN with imaginary part 1, then NaNs with imaginary part 7."""
    x = np.full(shape, complex(nan, 7.0), dtype)
    x[..., 0] = 0.5 + 0.25j
    x[..., 1] = complex(nan, 1.0)
    return x


DTYPES = ("complex64", "complex128")
SHAPES = [(4, 3000), (300, 40), (2, 200000)]     # row blocks, short (packed) rows, split rows


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_prod_of_rows_ending_in_an_infinity(shape, dtype, backend):
    x = _ending_in_inf(dtype, shape, 0)
    _check(lambda x: (x.prod(axis=-1), x.T.prod(axis=0), np.prod(x, axis=1, dtype=np.complex128)), backend, x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_prod_down_columns_middle_axes_and_whole(dtype, backend):
    x = _ending_in_inf(dtype, (4, 5000), 1)
    _check(lambda c: c.prod(axis=0), backend, np.ascontiguousarray(x.T))         # few long columns
    _check(lambda x: x[1].prod(), backend, x)
    y = np.moveaxis(_ending_in_inf(dtype, (6, 5, 700), 2), 2, 1).copy()       # (6, 700, 5): the middle axis
    _check(lambda y: y.prod(axis=1), backend, y)


@pytest.mark.parametrize("dtype", DTYPES)
def test_prod_where_and_epilogue(dtype, backend):
    """where= leaves out elements only before the infinity (there 1+0j is an exact identity); a later
    phase of the same kernel reads the redone product."""
    x = _ending_in_inf(dtype, (4, 3000), 3)
    m = np.ones(x.shape, bool)
    m[:, :1000:3] = False
    _check(lambda x, m: (x.prod(axis=-1, where=m), x[:, :2] * x.prod(axis=-1, keepdims=True)), backend, x, m)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES[:2], ids=str)
def test_max_and_min_keep_the_first_nan(shape, dtype, backend):
    x = _nans(dtype, shape)
    _check(lambda x: (x.max(axis=-1), x.min(axis=-1), x.T.max(axis=0)), backend, x)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 3000), (300, 20)], ids=str)
def test_cumprod_past_an_infinity(shape, dtype, backend):
    x = _ending_in_inf(dtype, shape, 4)
    x[:, shape[1] // 2] = complex(0.0, inf)          # a second one mid-row: NaN parts from there on
    y = _ending_in_inf(dtype, shape, 5)
    _check(lambda x, y: (np.cumprod(x, axis=-1), np.cumprod(y, axis=-1)), backend, x, y)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 3000), (6, 37)])
def test_prod_where_skips_after_an_infinity(shape, dtype, backend):
    x = _ending_in_inf(dtype, shape, 3)
    x[:, 0] = complex(np.inf, -0.5)         # an infinite part first: every left-out element after it
    m = np.ones(x.shape, bool)
    m[:, 1::3] = False
    _check(lambda x, m: (x.prod(axis=-1, where=m), x.T.prod(axis=0, where=m.T), x.prod(where=m),
                         x[:, 1:].prod(axis=-1, keepdims=True, where=m[:, 1:])), backend, x, m)
