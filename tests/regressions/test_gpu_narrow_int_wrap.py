"""Fuzz seed 35 #3382 (H100/H200, 2026-11-24): a wrapped int8/int16 value was read back unwrapped
on the GPU when the next op widened or compared it. ``-x`` of int16 -32768 is -32768 in NumPy and
``(-x) // x`` is 1; both GPU backends gave -1 (NVVM narrowed the negation to ``neg.s16`` and ptxas
took the 16-bit result as sign-extended). The scope: every wrapping producer of int8/int16 at the
ends of the range, read by a widening cast, a floor division, a compare or a maximum
(run notes of 2026-11-24, commit 986ba9d). Fixed by narrowing in asm
(``kf_narrow``; ``kfuse.codegen.numba_cuda_narrow``); the PTX side is checked without a GPU by
``tests/codegen/test_narrow_int_ptx.py``."""
import numpy as np
import pytest

import kfuse

PRODUCERS = {
    "negative": lambda x: -x,
    "add": lambda x: x + x,
    "subtract": lambda x: x - np.array(1, x.dtype),
    "multiply": lambda x: x * x,
    "absolute": lambda x: np.abs(x),
    "add_100": lambda x: x + np.array(100, x.dtype),
    "left_shift": lambda x: x << np.array(3, x.dtype),
    "cast_from_int32": lambda x: (x.astype(np.int32) * 3).astype(x.dtype),
}


def _consumers(p):
    def fn(x):
        y = p(x)
        return (y.astype(np.int32), y // np.array(7, y.dtype), y > 0, y.astype(np.float32),
                y // np.where(x == 0, np.array(3, x.dtype), x), np.maximum(y, np.array(0, y.dtype)))
    return fn


def _check(backend, producer, dtype, xp=np, to_host=np.asarray):
    info = np.iinfo(dtype)
    x = np.array([info.min, info.min + 1, 1 if info.min == 0 else -1, 0, 1, 100, info.max - 1, info.max] * 4,
                 dtype)
    fn = _consumers(PRODUCERS[producer])
    with np.errstate(all="ignore"):
        want = fn(x)
    got = kfuse.jit(fn, backend=backend)(xp.asarray(x))
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(to_host(g), w, err_msg=f"{producer}({dtype}) consumer {k} on {backend}")


DTYPES = ["int8", "int16", "uint8", "uint16"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("producer", sorted(PRODUCERS))
def test_cpu(producer, dtype):
    _check("cpu", producer, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "numba-cuda"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("producer", sorted(PRODUCERS))
def test_gpu(producer, dtype, backend, cupy_for):
    cupy = cupy_for(backend)
    _check(backend, producer, dtype, cupy, cupy.asnumpy)
