"""Shared fixtures: small plans compiled once per session (Numba compiles are the slow part)."""
import numpy as np
import pytest

from kfuse.autotune import tuner
from tests.autotune.helpers import ew, make_plan


@pytest.fixture(scope="session")
def small():
    """An elementwise kernel below the runtime's parallel threshold: the heuristic is seq."""
    from kfuse.runtime.cpu import compile_plan
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 128)).astype(np.float32)
    y = rng.standard_normal((64, 128)).astype(np.float32)
    plan = make_plan(ew, x, y)
    return plan, compile_plan(plan), [x, y], ew(x, y)


@pytest.fixture(autouse=True)
def _fresh():
    tuner.reset()
    yield
    tuner.reset()
