"""Found by `kfuse fuzz --backend cuda --seed 21` (programs 1058, 1551) on an H200, 2026-11-22:
NumPy 2 compares int64 with uint64 (and uint64 with a negative Python int) exactly; the CUDA C
kernel compared them as C does (the int64 converted to unsigned: -3 >= 1u), and Numba (CPU and
Numba-CUDA backends) goes through float64, which rounds values near 2**63. Every emitter now uses
``kernel_ir.mixed_sign_compare``: a negative signed operand is below every unsigned one, otherwise
both compare as uint64."""
import re

import numpy as np
import pytest

import kfuse

U = np.array([1, 18446744073709551615, 2 ** 63, 2 ** 63 + 1, 0, 5], dtype=np.uint64)
I = np.array([1, -1, 2 ** 63 - 1, -3, 0, 5], dtype=np.int64)
FNS = [lambda u, i: (u != -1, u == -1, u > -1),
       lambda u, i: (i >= u, i < u, i == u, i != u, u <= i, u > i),
       lambda u, i: (np.greater(u, i), np.less_equal(i, u))]


def _check(backend, xp=np, to_host=np.asarray):
    for fn in FNS:
        expected = fn(U, I)
        got = kfuse.jit(fn, backend=backend)(xp.asarray(U), xp.asarray(I))
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(to_host(g), e)


def test_cpu_mixed_sign_compare():
    _check("cpu")


def test_cuda_source_compares_exactly():
    from kfuse.codegen import cuda as cuda_emit
    from kfuse.codegen.lower import lower_group
    plan = kfuse.jit(FNS[1], backend="cuda").lower(U, I).plan
    src = cuda_emit.emit(lower_group(plan.groups[0]))
    # codegen.decompose's expansion: the signed operand's sign first, then both as uint64
    assert "(unsigned long long)" in src and re.search(r"< \(\(long long\)0ULL\)\)+ \? (true|false) : ", src)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "numba-cuda"])
def test_gpu_mixed_sign_compare(backend, cupy_for):
    cupy = cupy_for(backend)
    _check(backend, cupy, cupy.asnumpy)
