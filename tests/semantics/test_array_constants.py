"""Array constants of a traced function (np.arange, np.eye, a global table) through ``kfuse.jit``
on every backend: fed to each call from a copy made once per device, and a returned constant (or
a view of one) is the caller's own copy, as NumPy returns a new array each call."""
import numpy as np
import pytest

import kfuse
from tolerance import assert_matches_numpy

TABLE = np.linspace(-1.0, 2.0, 33).astype(np.float32)


def positions(x):
    n = x.shape[-1]
    freq = np.exp(-np.arange(0, n, dtype=np.float32) / n)
    return x * TABLE + np.sin(np.arange(x.shape[0])[:, None] * freq), np.eye(n, dtype=np.float32)[1]


def test_array_constants_on_every_backend(backend, cupy_for):
    x = np.random.default_rng(0).standard_normal((5, 33)).astype(np.float32)
    want = positions(x)
    f = kfuse.jit(positions, backend=backend)
    if backend == "cpu":
        run, back = f, lambda a: a
    else:
        cp = cupy_for(backend)
        run, back = (lambda a: f(cp.asarray(a))), cp.asnumpy
    for _ in range(2):                          # the second call takes the cached entry
        got = run(x)
        for g, w in zip(got, want):
            assert_matches_numpy(back(g), w)
        got[1][0] = 42.0                        # the returned row of the constant is a copy
    assert back(run(x)[1])[0] == 0.0


@pytest.mark.gpu
def test_array_constants_with_torch_tensors(cupy_for):
    cupy_for("cuda")
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal((5, 33)).astype(np.float32)
    got = kfuse.jit(positions)(torch.from_numpy(x).cuda())
    assert all(isinstance(g, torch.Tensor) and g.is_cuda for g in got)
    for g, w in zip(got, positions(x)):
        assert_matches_numpy(g.cpu().numpy(), w)
