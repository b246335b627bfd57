"""Tests import the tolerance table from here; it lives in :mod:`kfuse.testing` (one table)."""
from kfuse.testing import TOLERANCE, assert_matches_numpy, tolerance  # noqa: F401
