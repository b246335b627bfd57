"""The fixed-seed CI slice of the differential fuzzer on the CPU backend: 0 mismatches, 0 crashes.
(About a minute on 2 cores: programs are small and share compiled kernels.)"""
import numpy as np

from kfuse.fuzz.cli import fuzz

SEED, N = 0, 200


def test_fuzz_slice_cpu(tmp_path):
    s = fuzz(N, SEED, "cpu", out=str(tmp_path), do_shrink=True)
    assert s.programs == N
    report = "\n".join(f"program {i}: {r.status}: {r.detail[:300]} ({p})" for i, r, p in s.failures)
    assert s.mismatches == 0 and s.crashes == 0, f"{s.line()}\n{report}"
    assert s.unsupported <= N // 10, s.line()
