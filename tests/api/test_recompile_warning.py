"""The recompile warning of a jitted function: issued once past ``KFUSE_RECOMPILE_LIMIT``, and
pointing at the caller's line (not at kfuse's own code)."""
import warnings

import numpy as np
import pytest

import kfuse
from kfuse import config
from kfuse.runtime.cache import RecompileWarning


@pytest.fixture
def limit_two(monkeypatch):
    monkeypatch.setenv("KFUSE_RECOMPILE_LIMIT", "2")
    monkeypatch.setenv("KFUSE_CACHE", "0")
    config.reload()
    yield
    config.reload()


def test_recompile_warning_is_issued_once(limit_two):
    f = kfuse.jit(lambda x, fn: fn(x) * 2)
    x = np.ones(4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(6):
            f(x, lambda y: y + 1)       # a new static value each call: a compile each call
    recompiles = [w for w in caught if issubclass(w.category, RecompileWarning)]
    assert len(recompiles) == 1, [str(w.message) for w in recompiles]
    assert "compiled 3 times (limit 2)" in str(recompiles[0].message)
    assert recompiles[0].filename == __file__
