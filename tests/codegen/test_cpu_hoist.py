"""Loop-invariant statements of a CPU kernel are computed before its loops (``codegen.cpu_hoist``):
an input element at a fixed position broadcast into a result, and what is computed from it only
(fuzz cpu seed 100 #6870: LLVM's optimiser ran for minutes on the float16 helper chain of such a
load left inside the loop)."""
import numpy as np

import kfuse
from kfuse.codegen import cpu
from kfuse.codegen.cpu_hoist import split_invariant


def test_split_invariant():
    lines = ["v0 = np.int64(2)", "v1 = np.int64((s1 - 1))", "v2 = in0[v0 if v0 <= v1 else v1, 0]",
             "v3 = _rf16f(np.float32(v2))", "v4 = in1[i0]", "v5 = v3 + v4", "out0[i0] = v5",
             "v6 = acc_v9 * v3", "v7 = in0_0 * np.float32(2.0)"]
    moved, kept = split_invariant(lines, {"s1"})
    assert moved == lines[:4] + [lines[8]]
    assert kept == lines[4:8]


def fixed_element(a):
    v0 = np.any(a, axis=1, keepdims=True)
    v2 = (np.exp(v0) + 3)[2, np.array([0, 0, 0], dtype=np.int32)]
    return 3 - v2, v2


def test_a_fixed_element_is_read_before_the_loops():
    a = np.array([-1.25, -0.0, 0.75, -0.2, -4.0, 2.5, -1.75]).reshape(7, 1)
    lowered = kfuse.jit(fixed_element, backend="cpu").lower(a)
    src = cpu.emit(lowered.kernels()[-1])
    body = src[src.index("def kfuse_kernel"):]
    loop = body.index("for i0 in")
    assert "in0[" in body[:loop] and "in0[" not in body[loop:]
    assert "out0[i0]" in body[loop:]
    got = kfuse.jit(fixed_element, backend="cpu")(a)
    for g, w in zip(got, fixed_element(a)):
        np.testing.assert_array_equal(g, w)
