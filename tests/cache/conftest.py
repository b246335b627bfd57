"""Fixtures for the cache tests: a fresh private cache dir, and warnings reset per test."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from kfuse import config  # noqa: E402
from kfuse.runtime import cache as kcache  # noqa: E402


@pytest.fixture(autouse=True)
def _reset_warnings():
    kcache.reset_warnings()
    yield
    kcache.reset_warnings()


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "kcache"
    monkeypatch.setenv("KFUSE_CACHE_DIR", str(d))
    monkeypatch.delenv("KFUSE_CACHE_MAX_BYTES", raising=False)
    monkeypatch.delenv("KFUSE_CACHE", raising=False)
    config.reload()
    yield str(d)
    config.reload()


@pytest.fixture
def store(cache_dir):
    s = kcache.CacheStore.open()
    assert s is not None
    return s
