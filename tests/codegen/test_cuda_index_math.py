"""CUDA emitter, without a GPU: what the index math and the float32 division by a constant become
in the generated C (the GPU tests check the results bit for bit against NumPy)."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "gpu"))
pytest.importorskip("cuda.bindings.nvrtc")

from handplan import one_group_plan, trace  # noqa: E402
from kfuse.codegen import cuda, nvrtc  # noqa: E402
from kfuse.codegen.lower import lower_group  # noqa: E402


def _kir(fn, *specs):
    return lower_group(one_group_plan(trace(fn, *specs)).groups[0])


def _body(kir, variant):
    src = cuda.emit(kir, variant)
    nvrtc.compile(src, "sm_90")          # still valid CUDA C
    return src.split("// kfuse kernel")[1]


def test_vector_accesses_leave_out_the_unit_inner_stride():
    """With vec > 1 the runtime launches only where every vector access has unit inner stride, so
    that stride is no run-time multiply (a register tile's units are then constant offsets); the
    scalar variant, which runs on any strides, keeps every stride."""
    kir = _kir(lambda x, w: x * w + 1, ("f32", (64, 128)), ("f32", (128,)))
    vec = _body(kir, cuda.Variant("elementwise", 4, False, 0, 128, ept=2))
    assert "st_in0_1" not in vec.split("{", 1)[1] and "st_in1_0" not in vec.split("{", 1)[1]
    assert "st_out0_1" not in vec.split("{", 1)[1] and "st_in0_0" in vec.split("{", 1)[1]
    scalar = _body(kir, cuda.Variant("elementwise", 1, False, 0, 128))
    assert "i1 * (IDX)st_in0_1" in scalar and "i1 * (IDX)st_in1_0" in scalar

    def ln(x, g, b):
        mu = x.mean(axis=-1, keepdims=True)
        return (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5) * g + b
    row = _body(_kir(ln, ("f32", (64, 128)), ("f32", (128,)), ("f32", (128,))),
                cuda.Variant("row", 4, False, 2, 16, reload=True, exact=True))
    assert "in0 + (i0 * (IDX)st_in0_0 + i1)" in row and "in1 + (i1)" in row and "st_in0_1" not in row.split("{", 1)[1]


def _params(kernel):
    """The parameter names of ``kernel``'s signature."""
    decl = kernel.source.split(kernel.name + "(", 1)[1].split(")", 1)[0]
    return [p.strip().split()[-1] for p in decl.split(",")]


def test_kernels_declare_only_the_scalars_they_read():
    """A contiguous kernel takes no stride (a 16-byte unit's offset is its index), a broadcast one
    only the strides its index math multiplies by; CudaKernel.scalars marks the declared ones in
    the conventional order, and keep_scalars cuts the launcher's full tail to them."""
    kir = _kir(lambda p, g: (p - 0.1 * g, g * g), ("f32", (1 << 20,)), ("f32", (1 << 20,)))
    k = cuda.emit_kernel(kir, cuda.Variant("elementwise", 4, False, 0, 128))
    nvrtc.compile(k.source, "sm_90")
    assert _params(k) == ["out0", "out1", "in0", "in1", "s0_"]
    assert k.scalars == (True,) + (False,) * 4                    # s0_, 2 input and 2 output strides
    assert k.keep_scalars([7, 1, 1, 1, 1]) == [7]
    with pytest.raises(Exception, match="scalar slots"):
        k.keep_scalars([7, 1])

    scalar = cuda.emit_kernel(kir, cuda.Variant("elementwise", 1, False, 0, 128))
    assert _params(scalar)[4:] == ["s0_", "st_in0_0", "st_in1_0", "st_out0_0", "st_out1_0"]
    assert all(scalar.scalars)

    kb = cuda.emit_kernel(_kir(lambda x, w: x * w + 1, ("f32", (64, 128)), ("f32", (128,))),
                          cuda.Variant("elementwise", 4, False, 0, 128))
    nvrtc.compile(kb.source, "sm_90")
    names = _params(kb)
    assert names[3:] == ["s0_", "s1_", "st_in0_0", "st_out0_0", "dv0_m", "dv0_s"]
    # conventional order: s0_ s1_ | st_in0_0 st_in0_1 st_in1_0 | st_out0_0 st_out0_1 | dv0_m dv0_s
    assert kb.keep_scalars(list(range(9))) == [0, 1, 2, 5, 7, 8]


def test_float32_division_by_a_constant_goes_through_its_float64_reciprocal():
    kir = _kir(lambda x: (x / np.float32(0.6513215599), x / np.float32(0.0), x / np.float32(np.inf),
                          x / 4.0), ("f32", (256,)))
    body = _body(kir, cuda.Variant("elementwise", 4, False, 0, 128))
    rd = 1.0 / float(np.float32(0.6513215599))
    assert f"(double)v0 * {rd.hex()})" in body            # the host's correctly rounded reciprocal
    assert body.count("(float)((double)") == 2            # 0.6513.. and 4.0; not 0 or inf
    assert body.count("(v0 / v") == 2                      # x / 0 and x / inf: IEEE division
    f64 = _body(_kir(lambda x: x / 3.0, ("f64", (256,))), cuda.Variant("elementwise", 2, False, 0, 128))
    assert "(float)((double)" not in f64 and "(v0 / v" in f64   # float64: the C division
