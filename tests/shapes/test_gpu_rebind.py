"""The GPU programs at a new size (emit only, no GPU): ``ShapeClass.reuse`` maps the plan, lowers
it with the new sizes and rebinds the CUDA C / Numba-CUDA program, which shares the kernels its
launchers emitted (``GpuProgram.rebind``); a structure that differs is refused."""
from __future__ import annotations

import numpy as np
import pytest

import kfuse
from kfuse.runtime.shape_class import ShapeClass, normal_form
from tests.backends import params


def layernorm(x, g):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g


def head4(x):
    return x[:, :4] + 1.0


def _lowered(fn, backend, *specs):
    return kfuse.jit(fn, backend=backend).lower(*specs)


@pytest.mark.parametrize("backend", params(("cuda", "numba-cuda"), emit_only=True))
def test_gpu_program_rebinds_at_a_new_size(backend):
    first = _lowered(layernorm, backend, "f32[64,100]", "f32[100]")
    program = first.compile()
    sc = ShapeClass()
    assert sc.add(first.plan, program) is not None
    later = _lowered(layernorm, backend, "f32[33,257]", "f32[257]")
    reused = sc.reuse(later.optimized, lambda: later.plan)
    assert reused is not None and type(reused.program) is type(program)
    new, old = reused.program.kirs, program.kirs
    assert [normal_form(k) for k in new] == [normal_form(k) for k in old]
    assert {s.value for s in new[0].sizes} >= {33, 257}       # the count 257 is a size, not code
    assert reused.program._emitted is program._emitted        # emitted kernels shared
    assert reused.plan.graph is later.optimized
    if backend == "cuda":      # what a launcher shares across sizes: one variant, one source
        from kfuse.codegen.cuda import emit_kernel
        from kfuse.codegen.cuda_shapes import default_variant
        v = default_variant(old[0])
        assert emit_kernel(new[0], v).source == emit_kernel(old[0], v).source
    else:
        from kfuse.codegen.numba_cuda import default_variant, emit
        v = default_variant(old[0])
        assert emit(new[0], v) == emit(old[0], v)

@pytest.mark.parametrize("backend", params(("cuda",), emit_only=True))
def test_a_structure_change_is_not_reused(backend):
    first = _lowered(head4, backend, "f64[8,10]")
    sc = ShapeClass()
    sc.add(first.plan, first.compile())
    later = _lowered(head4, backend, "f64[8,3]")            # x[:, :4] of 3 columns: no slice
    assert sc.reuse(later.optimized, lambda: later.plan) is None
