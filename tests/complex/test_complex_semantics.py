"""Complex numbers through the tracer and the CPU backend: NumPy's promotion (weak Python complex
scalars), the errors NumPy raises for ufuncs without a complex loop, ComplexWarning on casts to
real, the parts of real arrays (unchanged), reductions and scans, contractions (conjugating where
NumPy conjugates), norms and variances, and the GPU backends' refusal until they render complex
values (Feature.COMPLEX, a refusal in the plan)."""
import warnings

import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

RNG = np.random.default_rng(7)
Z = (RNG.standard_normal((5, 6)) + 1j * RNG.standard_normal((5, 6))).astype(np.complex64)
W = RNG.standard_normal((6, 4)) + 1j * RNG.standard_normal((6, 4))
X = RNG.standard_normal((5, 6)).astype(np.float32)


def _check(fn, *args, reductions=False):
    with np.errstate(all="ignore"):
        want = fn(*args)
    got = kfuse.jit(fn)(*args)
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            assert_matches_numpy(g, w, reductions=reductions)
    else:
        assert_matches_numpy(got, want, reductions=reductions)


@pytest.mark.parametrize("fn", [
    lambda z, x: x * 1j, lambda z, x: z + x, lambda z, x: z * 2.5, lambda z, x: x.astype(np.int32) + 1j,
    lambda z, x: np.exp(1j * x), lambda z, x: z.astype(np.complex128) * x, lambda z, x: (z == x, z != 1j),
    lambda z, x: np.where(x > 0, z, 1j), lambda z, x: z * np.complex128(1 + 1j), lambda z, x: x + (1 + 2j),
], ids=["f32*1j", "c64+f32", "c64*float", "i32+1j", "exp(1j*x)", "c128*f32", "compare", "where", "np-scalar", "x+complex"])
def test_promotion_is_numpys(fn):
    _check(fn, Z, X)


def test_python_complex_argument_is_weak():
    f = kfuse.jit(lambda z, c: z * c)
    got = f(Z, 2 - 1j)
    assert got.dtype == np.complex64                   # NEP 50: a weak Python complex
    assert_matches_numpy(got, Z * (2 - 1j))
    assert_matches_numpy(f(Z, 0.5 + 4j), Z * (0.5 + 4j))   # the same compiled program, a new value


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "arctan2", "remainder", "floor_divide",
                                  "fmod", "hypot", "copysign", "logaddexp", "cbrt", "signbit"])
def test_no_complex_loop_raises_numpys_error(name):
    uf = getattr(np, name)
    args = (Z,) * uf.nin
    with pytest.raises(TypeError) as theirs:
        uf(*args)
    with pytest.raises(type(theirs.value)):
        kfuse.jit(lambda *a: uf(*a))(*args)


def test_cast_to_real_warns_as_numpy():
    with pytest.warns(np.exceptions.ComplexWarning):
        got = kfuse.jit(lambda z: z.astype(np.float32))(Z)
    assert_matches_numpy(got, Z.real)
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # to bool: no warning, as NumPy
        assert_matches_numpy(kfuse.jit(lambda z: z.astype(bool))(Z), Z.astype(bool))


def test_parts_of_real_arrays_are_unchanged():
    _check(lambda x: (np.real(x), np.imag(x), np.angle(x), x.real * 2, x.conj(), np.conj(x)), X)
    assert kfuse.jit(lambda b: b.conj())(np.array([True, False])).dtype == np.bool_


def test_isreal_iscomplex_and_the_object_tests():
    z = Z.copy()
    z[0, :3] = z[0, :3].real
    _check(lambda z, x: (np.isreal(z), np.iscomplex(z), np.isreal(x), np.iscomplex(x)), z, X)
    assert kfuse.jit(lambda z, x: (np.iscomplexobj(z), np.iscomplexobj(x), np.isrealobj(x)))(Z, X) == (True, False, True)


@pytest.mark.parametrize("fn", [
    lambda z: (z.sum(), z.mean(axis=0), z.prod(axis=1), z.sum(axis=1, keepdims=True)),
    lambda z: (z.max(), z.min(axis=0), np.argmax(z), np.argmin(z, axis=1)),
    lambda z: (z.var(), z.std(axis=0), np.var(z, axis=1, ddof=1)),
    lambda z: (np.cumsum(z, axis=1), np.cumprod(z, axis=0), np.maximum.accumulate(z, axis=1)),
    lambda z: (np.abs(z).max(), np.abs(z).sum(axis=0), np.count_nonzero(z)),
], ids=["sums", "max-min-arg", "var-std", "scans", "abs-reductions"])
def test_reductions_and_scans(fn):
    _check(fn, Z, reductions=True)


def test_lexicographic_max_and_argmax_with_nans():
    z = np.array([[1 + 5j, 1 + 7j, 0 + 9j, 2 - 1j], [np.nan + 0j, 3 + 0j, complex(0, np.nan), 1j],
                  [complex(2, np.nan), 2 + 0j, 2 + 1j, complex(np.nan, np.nan)]], np.complex128)
    _check(lambda z: (z.max(axis=1), z.min(axis=1), z.argmax(axis=1), z.argmin(axis=1),
                      np.maximum.accumulate(z, axis=1), z < z[:, ::-1], np.fmax(z, z[::-1])), z)


@pytest.mark.parametrize("fn", [
    lambda z, w: z @ w, lambda z, w: np.dot(z, w), lambda z, w: z.conj().T @ z,
    lambda z, w: np.vdot(z, z), lambda z, w: np.vecdot(z, z), lambda z, w: np.vecmat(z[0], w),
    lambda z, w: np.matvec(w.T, z[0]), lambda z, w: np.einsum("ij,jk->ik", z, w),
    lambda z, w: np.inner(z, z), lambda z, w: (np.abs(z @ w) ** 2).sum(axis=0),
], ids=["matmul", "dot", "gram", "vdot", "vecdot", "vecmat", "matvec", "einsum", "inner", "epilogue"])
def test_contractions_conjugate_where_numpy_does(fn):
    _check(fn, Z, W, reductions=True)


@pytest.mark.parametrize("fn", [
    lambda z: np.linalg.norm(z), lambda z: np.linalg.norm(z, axis=1), lambda z: np.linalg.norm(z[0], 1),
    lambda z: np.linalg.norm(z[0], np.inf), lambda z: np.linalg.norm(z, "fro"), lambda z: np.linalg.norm(z[0], 3),
])
def test_norms_of_complex_arrays_are_real(fn):
    _check(fn, Z, reductions=True)


def test_fast_paths_of_powers_follow_ndarray_pow():
    """ndarray.__pow__ gives np.square for ** 2 (an FMA product: (1e30+1e30j)**2 is -inf+inf j in
    complex64 where npy_cpow's products give NaN), np.reciprocal for ** -1, np.sqrt for ** 0.5."""
    z = np.array([1e30 + 1e30j, complex(np.inf, 0), complex(0, np.inf), 2 - 3j], np.complex64)
    _check(lambda z: (z ** 2, z ** -1, z ** 0.5, z ** 2.0, np.power(z, 2), z ** -1.0), z)


def test_a_backend_without_complex_refuses_it_in_the_plan():
    """Feature.COMPLEX is data: a backend lacking it (the CUDA backend less the feature, here)
    refuses a complex kernel in the plan, never a real one, and writes no source for it."""
    from kfuse.backends.base import Feature
    from kfuse.backends.cuda import CudaBackend

    class NoComplex(CudaBackend):
        features = frozenset(Feature) - {Feature.COMPLEX}
    plan = kfuse.jit(lambda z: np.exp(z) * 2, backend="cuda").lower("c64[64]").plan
    (r,) = NoComplex().refusals(plan)
    assert "complex numbers (complex64) are not supported by the cuda" in r.reason
    low = kfuse.jit(lambda z: z.real + 1, backend="cuda").lower("f32[64]")     # real plans: no refusal
    assert not NoComplex().refusals(low.plan)
    (kir,) = kfuse.jit(lambda z: z * 2j, backend="cuda").lower("f32[8]").kernels(for_gpu=True)
    with pytest.raises(kfuse.UnsupportedError, match="complex numbers"):
        NoComplex().render(kir)


def test_cpu_source_of_a_complex_kernel_prints():
    text = kfuse.jit(lambda z: np.exp(z) / z).lower("c128[16]").as_text("cpu")
    assert "_cexp_complex128" in text and "_cdiv_complex128" in text
