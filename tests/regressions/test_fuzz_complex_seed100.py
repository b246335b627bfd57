"""Complex fuzz, cpu seed 100 (2026-11-27): a product over no axes (a 0-d array, or a 0-d gather
``a[np.argmin(a)].prod()``) is NumPy's ``1 * z``, whose parts differ from ``z``'s where a part is
infinite or NaN (#3282: ``prod(inf - 0j)`` is ``inf + nan j``; #9026: ``prod(-4 + nan j)`` is
``nan + nan j``); a complex sum over no axes adds ``0j`` (``-0 - 0j`` becomes ``0j``)."""
import numpy as np
import pytest

from backends import jit_and_numpy
from tolerance import assert_matches_numpy

VALUES = [complex(np.inf, -0.0), complex(-4.0, np.nan), complex(-0.0, -0.0), complex(0.0, np.inf), 1.5 - 2j]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("value", VALUES, ids=str)
def test_reductions_over_no_axes_start_from_the_identity(value, dtype, backend):
    z = np.array(value, dtype)
    got, want = jit_and_numpy(lambda z: (np.prod(z), z.sum(), np.prod(z, keepdims=True)), backend, z)
    for g, w in zip(got, want):
        assert_matches_numpy(g, w)
        g, w = np.asarray(g).real, np.asarray(w).real
        keep = ~np.isnan(w)                 # (a NaN's sign is the hardware's: kfuse/testing.py)
        np.testing.assert_array_equal(np.signbit(g)[keep], np.signbit(w)[keep])


def test_a_gathered_element_s_product():
    a = np.array([complex(-4.0, np.nan), -7.5 - 2j, complex(0.0, np.nan), 1, 1], np.complex128)
    got, want = jit_and_numpy(lambda a: a[np.argmin(a, axis=0)].prod(), "cpu", a)
    assert_matches_numpy(got, want)
