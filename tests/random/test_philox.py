"""Philox4x32-10 as ``ir/philox.py`` defines it: Random123's known answers, and the helper the
Numba emitters compile (``codegen/philox.py``) equal to the NumPy definition bit for bit; the
CUDA C and Numba-CUDA kernels of a random op compile (NVRTC / libNVVM, no GPU needed)."""
import numpy as np
import pytest

import kfuse
from kfuse.codegen import philox as cg
from kfuse.ir import philox

# Random123's kat_vectors for philox4x32_10: (counter, key) -> output
KAT = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
       ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
       ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]


@pytest.mark.parametrize("counter,key,want", KAT)
def test_known_answers(counter, key, want):
    assert tuple(int(v) for v in philox.block(counter, key)) == want


def test_words_are_the_block_halves():
    flat = np.array([0, 1, 2 ** 32 + 5, 2 ** 63 - 1], dtype=np.uint64)
    seed = 0x0123456789ABCDEF
    x = philox.block((flat & np.uint64(0xFFFFFFFF), flat >> np.uint64(32), 9, 0), (seed & 0xFFFFFFFF, seed >> 32))
    assert np.array_equal(philox.bits(seed, 9, 0, flat), x[0] | (x[1] << np.uint64(32)))
    assert np.array_equal(philox.bits(seed, 9, 1, flat), x[2] | (x[3] << np.uint64(32)))


def test_numba_helper_equals_the_numpy_definition():
    import numba
    space = {"np": np, "numba": numba}
    exec(cg.python_source('@numba.njit(error_model="numpy")'), space)     # noqa: S102 (our own source)
    helper = space[cg.HELPER]
    rng = np.random.default_rng(3)
    for seed in (0, 2 ** 64 - 1, int(rng.integers(0, 2 ** 64, dtype=np.uint64))):
        flats = rng.integers(0, 2 ** 62, size=16)
        for stream in (0, 1, 2 ** 32 - 1):
            for word in (0, 1):
                got = [helper(np.int64(f), np.uint64(seed), np.uint32(stream), np.uint32(word)) for f in flats]
                want = philox.bits(seed, stream, word, flats.astype(np.uint64))
                assert np.array_equal(np.array(got, dtype=np.uint64), want)


def test_constants_rendered_from_one_place():
    for c in (philox.M0, philox.M1, philox.W0, philox.W1):
        assert f"{c:#x}" in cg.CUDA_SOURCE and f"{c:#x}" in cg.python_source("")


def _noisy(x, rng):
    return np.where(np.random.rand(*x.shape) < 0.5, x, 0) + rng.standard_normal(x.shape, dtype=np.float32)


@pytest.mark.backends("cuda", "numba-cuda", emit_only=True)
@pytest.mark.parametrize("layout", ["C", "T"])
def test_gpu_kernels_compile(backend, layout):
    x = np.zeros((33, 70), np.float32)
    x = x if layout == "C" else np.zeros((70, 33), np.float32).T
    low = kfuse.jit(_noisy).lower(x, np.random.default_rng(0), backend=backend)
    text = low.as_text("cuda" if backend == "cuda" else "numba")
    assert (cg.CUDA_FN if backend == "cuda" else cg.HELPER) in text
    assert ".entry" in low.ptx()


def _philox_python(seed: int, stream: int, word: int, flat: int) -> int:
    """Philox4x32-10 on Python ints, written here apart from ``ir/philox.py``."""
    c = [flat & 0xFFFFFFFF, flat >> 32, stream, 0]
    k = [seed & 0xFFFFFFFF, seed >> 32]
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & 0xFFFFFFFF, (p0 >> 32) ^ c[3] ^ k[1], p0 & 0xFFFFFFFF]
        k = [(k[0] + 0x9E3779B9) & 0xFFFFFFFF, (k[1] + 0xBB67AE85) & 0xFFFFFFFF]
    return c[2 * word] | (c[2 * word + 1] << 32)


def test_raw_bits_of_a_call_are_philox_of_its_seed(backend):
    """``integers(0, 2**64, dtype=uint64)`` is the random op's word 0 itself: on every backend the
    element at flat position i is Philox of (the seed drawn from the Generator, stream 0, i)."""
    from backends import to_device, to_host

    def bits(x, rng):
        return rng.integers(0, 2 ** 64, size=x.shape, dtype=np.uint64)
    x = np.zeros((3, 37))
    (xd,) = to_device(backend, x)
    got = to_host(kfuse.jit(bits, backend=backend)(xd, np.random.default_rng(99)))
    seed = int(np.random.default_rng(99).integers(0, 2 ** 64, dtype=np.uint64))
    want = np.array([_philox_python(seed, 0, 0, i) for i in range(x.size)], dtype=np.uint64)
    np.testing.assert_array_equal(got.ravel(), want)
