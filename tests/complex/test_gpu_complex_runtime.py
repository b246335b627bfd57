"""Complex arrays through the GPU backends against NumPy (gpu-marked: skipped without a GPU): the
kernel shapes that hold complex values differently (16-byte vectors of two complex64, one
complex128; a sliced start; a transposed operand's tiles; row, column, split and packed
reductions; arg-reductions; scans; Python complex scalars), a product through cuBLAS with its
epilogue, ``np.add.at`` into a complex array, and torch complex tensors (a lazily conjugated one
too). The ufuncs themselves: ``test_complex_special_values.py`` and the op-record table."""
import numpy as np
import pytest

from backends import jit_and_numpy
from tolerance import assert_matches_numpy

pytestmark = pytest.mark.backends("cuda", "numba-cuda")
DTYPES = ("complex64", "complex128")


def _cx(rng, shape, dtype, scale=1.0):
    return ((rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) * scale).astype(dtype)


def _check(fn, backend, *arrays, reductions=False):
    got, want = jit_and_numpy(fn, backend, *arrays)
    if not isinstance(want, tuple):
        got, want = (got,), (want,)
    for k, (g, w) in enumerate(zip(got, want)):
        assert_matches_numpy(g, w, reductions=reductions, err_msg=f"output {k}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1000,), (37, 129), (64, 1024), (3, 5, 7)])
def test_elementwise_layouts(shape, dtype, backend):
    rng = np.random.default_rng(0)
    x, y = _cx(rng, shape, dtype), _cx(rng, shape, dtype)
    _check(lambda x, y: (np.exp(x) * y - np.sqrt(y) / (x + 2j), np.abs(x) + y.real, x.conj() * 0.5), backend, x, y)
    _check(lambda x, y: x[..., 1:] * y[..., :-1] + 1j, backend, x, y)      # a start one element in


@pytest.mark.parametrize("dtype", DTYPES)
def test_transposed_operand(dtype, backend):
    rng = np.random.default_rng(1)
    x, y = _cx(rng, (96, 130), dtype), _cx(rng, (130, 96), dtype)
    _check(lambda x, y: x * y.T + np.conj(y.T), backend, x, y)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(8, 100000), (100000, 8), (512, 48), (3, 7)])
def test_reductions(shape, dtype, backend):
    rng = np.random.default_rng(2)
    x = _cx(rng, shape, dtype)
    _check(lambda x: (x.sum(axis=-1), x.sum(axis=0), x.mean(), (x * x).sum(), x.prod(axis=-1) if x.shape[-1] < 64 else x.sum(),
                      np.abs(x).max(axis=0), x.max(axis=-1), x.min(axis=0), x.argmax(axis=-1), np.argmin(x, axis=0)),
           backend, x, reductions=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions_with_nan(dtype, backend):
    x = _cx(np.random.default_rng(3), (6, 40), dtype)
    x[1, 3] = complex(np.nan, 1)
    x[2, 5] = complex(1, np.nan)
    x[4, :] = x[4, 0]       # ties: the first position
    _check(lambda x: (x.max(axis=-1), x.min(axis=-1), x.argmax(axis=-1), np.argmin(x, axis=-1), x.sum(axis=-1)),
           backend, x, reductions=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 3000), (300, 17)])
def test_scans(shape, dtype, backend):
    x = _cx(np.random.default_rng(4), shape, dtype)
    u = (np.exp(1j * np.random.default_rng(5).uniform(-0.1, 0.1, shape))).astype(dtype)     # |u| = 1
    _check(lambda x, u: (np.cumsum(x, axis=-1), np.cumsum(x, axis=0), np.cumprod(u, axis=-1),
                         np.maximum.accumulate(x, axis=-1)), backend, x, u, reductions=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cumprod_starts_from_its_first_factor(dtype, backend):
    """NumPy's accumulate starts from the first factor: inf+0j stays inf+0j (1 * it is inf+nan j)."""
    u = np.ones((3, 200), dtype)
    u[:, 0] = [complex(np.inf, 0), complex(0, -np.inf), complex(np.nan, 0)]
    u[:, 1] = 0.5
    _check(lambda u: (np.cumprod(u, axis=-1), np.cumprod(u.T, axis=0)), backend, u)


@pytest.mark.parametrize("dtype", DTYPES)
def test_python_complex_scalars(dtype, backend):
    x = _cx(np.random.default_rng(6), (257,), dtype)
    _check(lambda x, s: x * s + (1 - 2j), backend, x, np.asarray(0.5 + 0.25j, dtype))
    _check(lambda x: np.exp(1j * x.real) * x ** 2 + x ** -1, backend, x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_product_through_cublas(dtype, backend):
    if backend == "numba-cuda":
        pytest.skip("the numba-cuda backend has no products")
    rng = np.random.default_rng(7)
    a, b = _cx(rng, (64, 96), dtype), _cx(rng, (96, 80), dtype)
    _check(lambda a, b: (a @ b, np.exp(a @ b * 0.01) + 1j), backend, a, b, reductions=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_add_at_into_a_complex_array(dtype, backend):
    if backend == "numba-cuda":
        pytest.skip("numba-cuda has no complex atomics: refused in the plan")
    rng = np.random.default_rng(8)
    t, v, i = _cx(rng, (50,), dtype), _cx(rng, (400,), dtype), rng.integers(0, 50, 400)

    def f(t, i, v):
        t = t.copy()
        np.add.at(t, i, v)
        np.subtract.at(t, i[:100], v[:100])
        return t
    _check(f, backend, t, i, v, reductions=True)


def test_torch_complex_tensors(backend):
    """x and x.conj() share shape, strides and memory: the conjugate bit is in the dispatch key
    (the hot path of x's call read x.conj()'s memory as x's values, H200, 2026-11-27)."""
    torch = pytest.importorskip("torch")
    import kfuse
    x = torch.randn(33, 65, dtype=torch.complex128, device="cuda")   # (complex64's exp: another tolerance)
    y = torch.randn(33, 65, dtype=torch.complex128, device="cuda")
    f = kfuse.jit(lambda x, y: np.exp(x) * y + np.conj(x), backend=backend)
    for xs in (x, x.conj()):        # a lazy conjugate holds the unconjugated values: resolved first
        got = f(xs, y)
        want = np.exp(xs.resolve_conj().cpu().numpy()) * y.cpu().numpy() + np.conj(xs.resolve_conj().cpu().numpy())
        assert got.dtype == torch.complex128
        assert_matches_numpy(got.cpu().numpy(), want)
