"""Found by `kfuse fuzz --seed 55 --backend cuda` (program 817, H200 2026-11-25; every backend):
``np.where(a1 > 0, np.argmin(a0, axis=0, keepdims=True), -3).T`` of a (3, 2, 3) array raised
CompileError "reduction read at an index not aligned with the reduce domain": the planner put the
transpose of a value computed from the reduction into the row kernel, where it reads another row's
result. A movement of such a value now stays out of the row kernel (``legality._check_reduce``)."""
import numpy as np
import pytest

import kfuse

CASES = [
    lambda a, m: np.where(m > 0, np.argmin(a, axis=0, keepdims=True), -3).T,
    lambda a, m: (a - a.max(axis=-1, keepdims=True)).T * m.T,       # square: the transpose has the domain's shape
    lambda a, m: np.exp(a - a.sum(axis=-1, keepdims=True))[..., ::-1] + m,
]


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu),
                                     pytest.param("numba-cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("i", range(len(CASES)))
def test_movement_of_a_reduced_value_is_not_in_the_row_kernel(i, backend, cupy_for):
    a = np.array([1] * 9 + [0] * 9, np.float32).reshape((3, 2, 3)) * np.arange(1, 4, dtype=np.float32)
    m = np.ones((3, 1, 1)) if i == 0 else np.ones((3, 2, 3), np.float32)
    want = CASES[i](a, m)
    if backend == "cpu":
        got = kfuse.jit(CASES[i])(a, m)
    else:
        cp = cupy_for(backend)
        got = cp.asnumpy(kfuse.jit(CASES[i], backend=backend)(cp.asarray(a), cp.asarray(m)))
    np.testing.assert_allclose(got, want, rtol=1e-6)
