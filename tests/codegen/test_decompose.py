"""codegen.decompose: the rules written once for every backend. Each expansion is checked on NumPy's
edge values on the CPU (bit for bit), compiled to PTX on the GPU backends, and shown to be what
each renderer emits (the renderers have no rule of their own for these ops)."""
import numpy as np
import pytest

import kfuse
from kfuse.codegen import cuda_ops, decompose
from kfuse.codegen import kernel_ir as K
from kfuse.codegen.cpu import CpuOps

from tests.codegen.ptx_backends import compile_to_ptx

EDGES = np.array([np.nan, -np.nan, -np.inf, -2.5, -0.0, 0.0, 1e-30, 3.0, np.inf], np.float64)


def heaviside(x, h):
    return np.heaviside(x, h), np.heaviside(x.astype(np.float16), h.astype(np.float16))


def mixed(a, b):
    return a < b, a <= b, a > b, a >= b, a == b, a != b, b < a, b >= a


def _bits(a):
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else a


def _mixed_values():
    a = np.array([-2**63, -1, 0, 1, 5, 2**63 - 1, -7, 2**62], np.int64)
    b = np.array([0, 2**64 - 1, 0, 1, 4, 2**63, 3, 2**62], np.uint64)
    return a, b


def test_heaviside_cpu_bit_exact():
    x = np.repeat(EDGES, EDGES.size)
    h = np.tile(EDGES, EDGES.size)
    for got, want in zip(kfuse.jit(heaviside, backend="cpu")(x, h), heaviside(x, h)):
        assert got.dtype == want.dtype and np.array_equal(_bits(got), _bits(want))


def test_mixed_sign_compares_cpu_exact():
    a, b = _mixed_values()
    for got, want in zip(kfuse.jit(mixed, backend="cpu")(a, b), mixed(a, b)):
        assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.backends("cuda", "numba-cuda", emit_only=True)
def test_expansions_compile_to_ptx(backend, tmp_path):
    compile_to_ptx(heaviside, backend, ("f32[64]", "f32[64]"), tmp_path, "heaviside")
    compile_to_ptx(mixed, backend, ("i64[64]", "u64[64]"), tmp_path, "mixed")


def _render_all(op, dt, args, adts):
    """The op as the CPU and the CUDA C renderer write it, and as the expansion says."""
    st = K.Op("r", op, "bool" if op != "heaviside" else dt, tuple(args), adts)
    cpu = CpuOps(lambda name: name).op_expr(st, list(args))
    c = cuda_ops.op_expr(st.op, st.dtype, list(args), adts)
    return cpu, c, decompose.expand(op, st.dtype, args, adts)


def test_renderers_emit_the_expansion():
    cpu, c, stmts = _render_all("heaviside", "float32", ("x", "h"), ("float32", "float32"))
    assert [s.op for s in stmts if isinstance(s, K.Op)][-1] == "where"
    assert cpu.count(" if ") == 3 and c.count(" ? ") == 3      # the three wheres, nothing else
    cpu, c, stmts = _render_all("less", "bool", ("a", "b"), ("int64", "uint64"))
    assert stmts is not None and "np.uint64(a)" in cpu and "(unsigned long long)a" in c
    assert decompose.expand("less", "bool", ("a", "b"), ("int64", "int64")) is None


def signs(x, i, u):
    return np.sign(x), np.sign(x.astype(np.float16)), np.sign(x.astype(np.float32)), np.sign(i), np.sign(u)


def test_sign_cpu_bit_exact():
    x = EDGES
    i = np.array([-128, -1, 0, 1, 127, 5, -5, 0, 3], np.int8)
    u = np.array([0, 1, 255, 7, 0, 2, 3, 4, 5], np.uint8)
    for got, want in zip(kfuse.jit(signs, backend="cpu")(x, i, u), signs(x, i, u)):
        assert got.dtype == want.dtype and np.array_equal(_bits(got), _bits(want))
