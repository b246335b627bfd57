"""``kfuse.jit(np.exp)``: a NumPy ufunc jitted directly takes its input operands (its own signature
also lists ``out=``, ``dtype=``, ``signature=``..., which tracing passed on and NumPy refused)."""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy


@pytest.mark.parametrize("ufunc", [np.exp, np.arctan2, np.add, np.logical_not])
def test_a_ufunc_jitted_directly(ufunc):
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((5, 7)) for _ in range(ufunc.nin)]
    jf = kfuse.jit(ufunc, backend="cpu")
    assert jf.__name__ == ufunc.__name__
    assert_matches_numpy(jf(*args), ufunc(*args))
