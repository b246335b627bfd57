"""The ``philox`` KernelIR op (``Op.RANDOM``'s bits, lowered by :mod:`kfuse.codegen.lower`):
``philox(flat: int64, seed: uint64, stream: uint32, word: uint32) -> uint64``, Philox4x32-10 as
``ir/philox.py`` defines it, rendered for every emitter from the constants there: the Python
helper both Numba dialects compile (:func:`python_source`, ``cpu_helpers`` and
``numba_cuda_ops``) and the CUDA C device function of the prelude (:data:`CUDA_SOURCE`).
"""
from __future__ import annotations

from ..ir.philox import M0, M1, MASK32, ROUNDS, W0, W1

OP = "philox"
HELPER = "_philox"          # the Python helper's name
CUDA_FN = "kf_philox"       # the CUDA C device function's


def python_source(decorator: str) -> str:
    """The helper under ``decorator``: 32-bit lanes held in uint64 (products of two 32-bit values
    fit), every constant a ``np.uint64`` so Numba never mixes signed and unsigned."""
    return f'''
{decorator}
def {HELPER}(flat, seed, stream, word):
    """Philox4x32-10 word ``word`` of counter (flat, stream, 0) under key ``seed`` (ir/philox.py)."""
    m = np.uint64({MASK32:#x})
    s32 = np.uint64(32)
    f = np.uint64(flat)
    sd = np.uint64(seed)
    c0 = f & m
    c1 = f >> s32
    c2 = np.uint64(stream)
    c3 = np.uint64(0)
    k0 = sd & m
    k1 = sd >> s32
    for _ in range({ROUNDS}):
        p0 = np.uint64({M0:#x}) * c0
        p1 = np.uint64({M1:#x}) * c2
        c0, c1, c2, c3 = (p1 >> s32) ^ c1 ^ k0, p1 & m, (p0 >> s32) ^ c3 ^ k1, p0 & m
        k0 = (k0 + np.uint64({W0:#x})) & m
        k1 = (k1 + np.uint64({W1:#x})) & m
    if word == 0:
        return c0 | (c1 << s32)
    return c2 | (c3 << s32)
'''


CUDA_SOURCE = f"""
// Philox4x32-10 (kfuse/ir/philox.py): word `word` of counter (flat, stream, 0) under key `seed`
__device__ __forceinline__ unsigned long long {CUDA_FN}(long long flat, unsigned long long seed,
                                                     unsigned int stream, unsigned int word) {{
  unsigned int c0 = (unsigned int)flat, c1 = (unsigned int)((unsigned long long)flat >> 32), c2 = stream, c3 = 0u;
  unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
#pragma unroll
  for (int r = 0; r < {ROUNDS}; ++r) {{
    const unsigned int h0 = __umulhi({M0:#x}u, c0), l0 = {M0:#x}u * c0;
    const unsigned int h1 = __umulhi({M1:#x}u, c2), l1 = {M1:#x}u * c2;
    c0 = h1 ^ c1 ^ k0; c1 = l1; c2 = h0 ^ c3 ^ k1; c3 = l0;
    k0 += {W0:#x}u; k1 += {W1:#x}u;
  }}
  return word ? ((unsigned long long)c3 << 32 | c2) : ((unsigned long long)c1 << 32 | c0);
}}
"""


def call(fn: str, args) -> str:
    """The call expression of the op on its four arguments."""
    return f"{fn}({', '.join(args)})"
