"""np.take and integer-array indexing cast their indices to intp as NumPy does (found by the
fuzzer's gather kind, `kfuse fuzz --seed 901` program 11, and probes around it; every backend's
tracer: kfuse/trace/indexing.py).

* ``np.take(a, [False, True])``: NumPy's take casts booleans to 0/1 (``a[[0, 1]]``); kfuse took
  the list as a mask (``a[[1]]``): shape (2,) against NumPy's (5,); with ``mode='wrap'|'clip'``
  kfuse raised TypeError "Cannot cast ... bool to int64" (seed 902 program 82).
* a uint64 index >= 2**63: NumPy casts it to intp (2**64 - 1 is -1, in range); kfuse raised
  IndexError (``x[u]``, ``np.take``, ``np.take_along_axis``) or wrapped/clipped the unsigned value
  (``mode='wrap'|'clip'``; `kfuse fuzz --seed 902` program 5: ``np.take(u64, u64, axis=-2,
  mode='clip')`` read the last row where NumPy reads the first).
* ``np.take(a, [])``: NumPy converts a list straight to intp, so an empty one is no float array
  (cuda seed 71 programs 742, 2994, 3681, 4523: kfuse raised NumPy's same_kind TypeError).
* ``np.take(a, i8, mode='wrap')`` with an int8 index into an axis longer than 127: kfuse raised
  OverflowError (``np.remainder(int8, 200)``); NumPy wraps in intp.
"""
import numpy as np
import pytest

import kfuse

U64 = np.array([2 ** 64 - 1, 3, 2 ** 64 - 5], np.uint64)
CASES = {
    "take-bool-list": (lambda a: np.take(a, [False, False, False, True, True], axis=-1),
                       (np.arange(5, dtype=np.float16),)),
    "take-wrap-bool-list": (lambda a: np.take(a, [False, True], axis=-1, mode="wrap"),
                            (np.arange(6.0).reshape(2, 3),)),
    "take-bool-array": (lambda a: a.take(np.array([True, False, True])), (np.arange(6.0).reshape(2, 3),)),
    "index-uint64-high": (lambda a, u: a[u], (np.arange(5.0), U64)),
    "take-uint64-high": (lambda a, u: np.take(a, u), (np.arange(5.0), U64)),
    "take-wrap-uint64-high": (lambda a, u: np.take(a, u, mode="wrap"), (np.arange(5.0), U64)),
    "take-clip-uint64-high": (lambda a, u: np.take(a, u, mode="clip"), (np.arange(5.0), U64)),
    "take-along-uint64-high": (lambda a, u: np.take_along_axis(a, u, axis=1),
                               (np.arange(6.0).reshape(2, 3), np.array([[2 ** 64 - 1], [0]], np.uint64))),
    "take-empty-list": (lambda a: np.take(a, [], axis=0, mode="clip") + a.take([[]]).sum(),
                        (np.arange(0, dtype=np.float32),)),
    "take-wrap-int8-long-axis": (lambda a, i: np.take(a, i, mode="wrap"),
                                 (np.arange(200.0), np.array([-1, 100, -128], np.int8))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_index_casts_match_numpy(name):
    fn, args = CASES[name]
    want = np.asarray(fn(*args))
    got = np.asarray(kfuse.jit(fn, backend="cpu")(*args))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
