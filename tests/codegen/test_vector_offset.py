"""Vector accesses at a slice's start (``x[:, n:]``: the last index is the loop variable plus an
offset of sizes): the CUDA emitter reads 16-byte vectors there, and the offset rule refuses an
offset that depends on a loop variable. Without a GPU."""
import numpy as np

import kfuse
from kfuse.codegen import cuda as ce
from kfuse.codegen import kernel_ir as K


def test_unit_offset_and_vector_offset_rules():
    i1, i0, s2 = K.IVar("i1"), K.IVar("i0"), K.IVar("s2")
    assert K.unit_offset(i1, "i1") == K.ILit(0)
    assert K.unit_offset(K.IBin("+", s2, i1), "i1") == s2
    assert K.unit_offset(K.IBin("-", i1, s2), "i1") is None
    assert K.unit_offset(K.IBin("*", i1, K.ILit(2)), "i1") is None
    assert ce.vector_offset((i0, K.IBin("+", i1, s2)), "i1") == s2
    assert ce.vector_offset((i0, K.IBin("+", i1, i0)), "i1") is None      # a diagonal: no vector
    assert not ce.vector_access((K.IBin("+", i1, i0), i1), "i1")           # another component uses it
    assert K.eval_expr(K.IBin("+", s2, K.IBin("*", K.ILit(3), K.IVar("s0"))), {"s2": 5, "s0": 2}) == 11


def test_geglu_halves_are_read_in_vectors():
    def gelu(y):
        return 0.5 * y * (1.0 + np.tanh(0.79788 * (y + 0.044715 * (y * y * y))))
    kir = kfuse.jit(lambda x: gelu(x[:, :64]) * x[:, 64:]).lower(np.zeros((32, 128), np.float16)).kernels()[0]
    assert ce.vector_ok(kir)
    body = ce.emit(kir, ce.Variant("elementwise", 8, False, 0, 128))
    body = body[body.index('extern "C"'):]
    assert body.count("KfVec<unsigned short, 8>*>(in0 +") == 2 and "(s2 + i1)" in body
