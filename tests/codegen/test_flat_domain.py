"""Elementwise kernels over their domain flattened (codegen.flat_domain), without a GPU: the
rewrite reads contiguous operands at the flat index and broadcast ones through it, refuses what it
must (reductions, gathers, one loop dim), and the CUDA C variant with a tail (the last N % vec
elements one by one) renders and compiles. Values: tests/gpu/test_flat_domain_gpu.py."""
import numpy as np
import pytest

import kfuse
from kfuse.codegen import cuda as ce, nvrtc
from kfuse.codegen import kernel_ir as K
from kfuse.codegen.flat_domain import flatten_domain


def tanh_bias(x, b):
    return np.tanh(x + b) * 0.5 + x


def normalize(img, mean, std):
    return (img.astype(np.float32) * (1.0 / 255.0) - mean) / std


def _kir(fn, *args):
    return kfuse.jit(fn).lower(*args).kernels()[0]


def _strides(arrays):
    return [tuple(s // a.itemsize for s in a.strides) for a in arrays]


def _env(kir):
    return {s.name: s.value for s in kir.sizes}


@pytest.mark.parametrize("fn,args", [
    (tanh_bias, (np.zeros((37, 41), np.float32), np.zeros(41, np.float32))),
    (normalize, (np.zeros((2, 5, 7, 3), np.uint8), np.zeros(3, np.float32), np.ones(3, np.float32))),
])
def test_contiguous_operands_read_at_the_flat_index(fn, args):
    kir = _kir(fn, *args)
    out = np.zeros(np.broadcast_shapes(*[a.shape for a in args]), np.float32)
    flat = flatten_domain(kir, _strides(args), _strides([out]), _env(kir))
    assert len(flat.domain) == 1 and K.eval_expr(flat.domain[0], _env(kir)) == out.size
    accesses = [s for s in flat.phases[0].pre if isinstance(s, (K.Load, K.Store))]
    full = [s for s in accesses if isinstance(s, K.Store) or s.buf == 0]
    assert full and all(ce.vector_access(s.index, "i0") for s in full)
    assert all(not ce.vector_access(s.index, "i0") for s in accesses if s not in full)     # broadcast: lane by lane
    for vec, tail in ((4, True), (1, False)):
        src = ce.emit(flat, ce.Variant("elementwise", vec, False, 0, 128, tail=tail))
        assert ("n_units * 4" in src) == tail
        nvrtc.compile(src, "sm_90")


def test_transposed_operand_keeps_its_decomposition():
    x = np.zeros((40, 30), np.float32).T
    kir = _kir(lambda a: np.exp(a) + 1, x)
    flat = flatten_domain(kir, _strides([x]), _strides([np.zeros((30, 40), np.float32)]), _env(kir))
    load = next(s for s in flat.phases[0].pre if isinstance(s, K.Load))
    assert not ce.vector_access(load.index, "i0")


@pytest.mark.parametrize("fn,args", [
    (lambda x: x.sum(1), (np.zeros((5, 7), np.float32),)),                    # a reduction
    (lambda x: np.exp(x), (np.zeros(7, np.float32),)),                        # one loop dim already
    (lambda x, i: x[i] * 2, (np.zeros((5, 7), np.float32), np.zeros(3, np.int64))),   # a gather
])
def test_other_kernels_are_not_flattened(fn, args):
    kir = _kir(fn, *args)
    assert flatten_domain(kir, _strides(args), [(7, 1)], _env(kir)) is None
