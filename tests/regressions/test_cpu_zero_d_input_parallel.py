"""A 0-d input read inside the CPU kernel's parallel loop (found by the corpus's adafactor entry:
``g / np.mean(v)``): Numba's parfor lowering hands a 0-d array to the loop body as its element, so
``in5[()]`` there failed to type. The element is now read once before the loops. Both the
sequential and the parallel function run, in both loop orders."""
import numpy as np
import pytest

import kfuse
from kfuse.codegen.cpu import emit
from kfuse.codegen.cpu_schedule import CpuSchedule
from kfuse.runtime.cpu import _compile_source
from tests.tolerance import assert_matches_numpy


@pytest.mark.parametrize("fn,order", [(lambda g, v: g / np.mean(v), "rows"),
                                      (lambda g, v: (g - g.mean(0)) * np.mean(v), "cols"),
                                      (lambda g, v: g.astype(np.float16) / np.mean(v).astype(np.float16), "rows")])
def test_zero_d_input_in_the_parallel_kernel(fn, order):
    rng = np.random.default_rng(0)
    g, v = rng.random((300, 70), np.float32), rng.random(9, np.float32)
    kirs = kfuse.jit(fn, backend="cpu").lower(g, v).kernels()
    kir = next(k for k in kirs if any(b.ndim == 0 for b in k.inputs))
    sched = CpuSchedule("cols", col=1) if order == "cols" else CpuSchedule()
    src = emit(kir, sched)
    assert "_0 = in" in src and "[()]" not in src.split("numba.prange")[1]
    seq, par = _compile_source(src, "kfuse_kernel")
    got = kfuse.jit(fn, backend="cpu")(g, v)
    assert_matches_numpy(got, fn(g, v), reductions=True)
    assert par is not None and seq is not None
