"""Probe (user code): ``np.diag`` (a matrix's diagonal, a vector's diagonal matrix) and
``np.lib.stride_tricks.sliding_window_view`` (rolling statistics) were graph breaks; they are
traced as gathers at constant positions (``kfuse/trace/windows.py``), fused with what reads them."""
import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import kfuse
from tolerance import assert_matches_numpy

DIAG = {
    "of a matrix": lambda x: np.diag(x.reshape(3, -1)) * 2,
    "above": lambda x: np.diag(x.reshape(3, -1), 1),
    "matrix of a vector": lambda x: np.diag(x[:4]) + 1,
    "below": lambda x: np.diag(x[:3], -2),
    "trace of diag": lambda x: np.trace(np.diag(x)),
}
WINDOWS = {
    "rolling mean": lambda x: sliding_window_view(x, 3, axis=-1).mean(axis=-1),
    "rolling std axis 0": lambda x: sliding_window_view(x.reshape(3, -1), 2, axis=0).std(axis=-1),
    "1-d": lambda x: sliding_window_view(x, 5) * 1.5,
    "tuple forms": lambda x: sliding_window_view(x.reshape(3, -1), (2,), axis=(1,)).max(axis=-1),
}


@pytest.mark.parametrize("name", DIAG)
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_diag(name, dtype):
    x = (np.arange(12) % 5).astype(dtype)
    jf = kfuse.jit(DIAG[name], backend="cpu")
    assert_matches_numpy(jf(x), DIAG[name](x))
    assert "graph break" not in str(kfuse.explain(jf, x))


@pytest.mark.parametrize("name", WINDOWS)
def test_sliding_window_view(name):
    x = np.random.default_rng(1).standard_normal(12)
    jf = kfuse.jit(WINDOWS[name], backend="cpu")
    assert_matches_numpy(jf(x), WINDOWS[name](x))
    assert "graph break" not in str(kfuse.explain(jf, x))


def test_window_longer_than_the_axis_raises_numpys_error():
    with pytest.raises(ValueError):
        kfuse.jit(lambda x: sliding_window_view(x, 20), backend="cpu")(np.ones(5))
