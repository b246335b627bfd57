"""The 32-bit index divisions of the CUDA C kernels: host-computed (multiplier, shift) pairs
(runtime.cuda.fast_divisor) against Python's floor division, emulating kf_udiv's 32-bit arithmetic,
and the emitter's use of them (32-bit variants only)."""
import random

import pytest

from kfuse.codegen import cuda as cuda_emit
from kfuse.codegen import kernel_ir as K
from kfuse.codegen.lower import lower_group
from kfuse.runtime.cuda import fast_divisor

_U32 = (1 << 32) - 1


def _udiv(r: int, m: int, s: int) -> int:
    hi = (r * m) >> 32
    assert hi + r <= _U32          # kf_udiv's 32-bit sum must not wrap
    return (hi + r) >> s


def _divisors():
    rng = random.Random(7)
    small = list(range(1, 2050))
    powers = [1 << k for k in range(31)] + [(1 << k) + 1 for k in range(1, 31)] + [(1 << k) - 1 for k in range(2, 32)]
    return small + powers + [rng.randrange(1, 1 << 31) for _ in range(3000)]


def test_fast_divisor_matches_floor_division():
    rng = random.Random(11)
    for d in _divisors():
        m, s = fast_divisor(d)
        assert 0 < m <= _U32 and 0 <= s <= 31
        for r in (0, 1, d - 1, d, d + 1, 2 * d - 1, (1 << 31) - 1, rng.randrange(1 << 31), rng.randrange(4 * d)):
            if 0 <= r < 1 << 31:
                assert _udiv(r, m, s) == r // d, (d, r)


def test_fast_divisor_range():
    with pytest.raises(ValueError):
        fast_divisor(1 << 31)
    assert fast_divisor(0) == fast_divisor(1)      # empty extents never divide; no error


def test_emitter_divides_fast_only_with_32_bit_indices():
    from tests.gpu.handplan import one_group_plan, trace

    plan = one_group_plan(trace(lambda x, w: x * w, ("float32", (6, 10)), ("float32", (10,))))
    kir = lower_group(plan.groups[0])
    k32 = cuda_emit.emit_kernel(kir, cuda_emit.Variant("elementwise", 1, False, 0, 128))
    k64 = cuda_emit.emit_kernel(kir, cuda_emit.Variant("elementwise", 1, True, 0, 128))
    assert "kf_udiv(r_" in k32.source and "unsigned dv0_m" in k32.source and "unsigned dv0_s" in k32.source
    assert not k64.divisors and "kf_udiv(r_" not in k64.source and "r_ /=" in k64.source
    # one divisor: the extent of the last loop dim (10), in vector units (1)
    sizes = {s.name: s.value for s in kir.sizes}
    [(d, vec)] = k32.divisors
    e = kir.domain[d]
    assert vec == 1 and (e.value if isinstance(e, K.ILit) else sizes[e.name]) == 10
