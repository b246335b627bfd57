"""Philox4x32-10, the counter-based generator of ``Op.RANDOM`` (Salmon et al., SC'11; cuRAND's
and Triton's): its constants, written once here for every emitter (``codegen/philox.py`` renders
them), and :func:`bits`, the NumPy definition the reference interpreter evaluates.

An ``Op.RANDOM`` element is a pure function of (seed, stream, flat index, word): the 64-bit seed
is the key ``(seed & 0xffffffff, seed >> 32)``; the counter is ``(flat & 0xffffffff, flat >> 32,
stream, 0)`` where ``flat`` is the element's C-order position in the node's own shape; the block's
four 32-bit outputs ``x0..x3`` give two 64-bit words, ``x0 | x1 << 32`` (word 0) and
``x2 | x3 << 32`` (word 1). No schedule, tile, vector width or loop order enters the value.
"""
from __future__ import annotations

import numpy as np

M0 = 0xD2511F53         # round multipliers
M1 = 0xCD9E8D57
W0 = 0x9E3779B9         # key increments (golden ratio, sqrt(3) - 1)
W1 = 0xBB67AE85
ROUNDS = 10
MASK32 = 0xFFFFFFFF


def block(counter, key):
    """Philox4x32-10 of ``counter`` (four uint64 arrays or ints holding 32-bit values) under
    ``key`` (two): the four 32-bit outputs as uint64 arrays."""
    u = np.uint64
    c0, c1, c2, c3 = (np.asarray(c, dtype=u) for c in counter)
    k0, k1 = (np.asarray(k, dtype=u) for k in key)
    m = u(MASK32)
    for _ in range(ROUNDS):
        p0 = u(M0) * c0
        p1 = u(M1) * c2
        c0, c1, c2, c3 = (p1 >> u(32)) ^ c1 ^ k0, p1 & m, (p0 >> u(32)) ^ c3 ^ k1, p0 & m
        k0, k1 = (k0 + u(W0)) & m, (k1 + u(W1)) & m
    return c0, c1, c2, c3


def bits(seed: int, stream: int, word: int, flat: np.ndarray) -> np.ndarray:
    """The uint64 random word ``word`` (0 or 1) of every flat position in ``flat`` (module
    docstring), as ``Op.RANDOM`` gives it."""
    u = np.uint64
    flat = np.asarray(flat, dtype=u)
    seed = u(int(seed))
    out = block((flat & u(MASK32), flat >> u(32), stream, 0), (seed & u(MASK32), seed >> u(32)))
    lo, hi = out[2 * word], out[2 * word + 1]
    return lo | (hi << u(32))
