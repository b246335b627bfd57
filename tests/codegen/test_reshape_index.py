"""Reshaped reads over contiguous memory (codegen.reshape_index) and blockwise loads in vector rows
(cuda_shapes.blockwise), without a GPU: the rewritten index addresses the same element as the
decomposition for every index of the domain, it applies only where the strides make the run
contiguous, a GroupNorm's row then vectorises with its per-channel weights read once a vector
unit, and NVRTC compiles that kernel."""
import itertools

import numpy as np
import pytest

import kfuse
from kfuse.codegen import cuda as ce
from kfuse.codegen import kernel_ir as K
from kfuse.codegen.cuda_shapes import blockwise
from kfuse.codegen.reshape_index import collapse_contiguous_reshapes


def groupnorm(x, g, b):
    n, c, h, w = x.shape
    xg = x.reshape(n, 4, c // 4 * h * w)
    mu = xg.mean(axis=-1, keepdims=True)
    var = xg.var(axis=-1, keepdims=True)
    y = ((xg - mu) / np.sqrt(var + 1e-5)).reshape(n, c, h, w)
    return y * g.reshape(1, c, 1, 1) + b.reshape(1, c, 1, 1)


def heads(x):
    """(B, T, H*D) read as (B, T, H, D): a split of the last dim, then a merge of the first two."""
    b, t, hd = x.shape
    return np.exp(x.reshape(b * t, 4, hd // 4)).sum(axis=-1)


SHAPES = {"groupnorm": ((2, 8, 3, 4), (8,), (8,)), "heads": ((3, 5, 12),)}
FNS = {"groupnorm": groupnorm, "heads": heads}


def _kir(name):
    args = [np.zeros(s, np.float32) for s in SHAPES[name]]
    return kfuse.jit(FNS[name]).lower(*args).kernels()[0], args


def _env(kir):
    return {s.name: s.value for s in kir.sizes}


def _loads(kir):
    return [s for ph in kir.phases for s in ph.pre + ph.body if isinstance(s, K.Load)]


def _c_strides(shape):
    return tuple(int(x) // 4 for x in np.zeros(shape, np.float32).strides)


@pytest.mark.parametrize("name", list(FNS))
def test_collapsed_index_addresses_the_same_elements(name):
    kir, args = _kir(name)
    strides = [_c_strides(a.shape) for a in args]
    new = collapse_contiguous_reshapes(kir, strides, _env(kir))
    assert new is not kir
    env = _env(kir)
    loops = [range(kir.extent(d)) for d in range(len(kir.domain))]
    for old, got in zip(_loads(kir), _loads(new)):
        st = strides[old.buf]
        for point in itertools.product(*loops):
            e = dict(env, **{f"i{d}": v for d, v in enumerate(point)})
            want = sum(K.eval_expr(c, e) * s for c, s in zip(old.index, st))
            assert sum(K.eval_expr(c, e) * s for c, s in zip(got.index, st)) == want


def test_left_alone_where_the_run_is_not_contiguous():
    kir, args = _kir("groupnorm")
    st = list(_c_strides(args[0].shape))
    st[2], st[3] = 1, args[0].shape[2]              # (h, w) transposed in memory
    assert collapse_contiguous_reshapes(kir, [tuple(st)] + [_c_strides(a.shape) for a in args[1:]], _env(kir)) is kir
    padded = list(_c_strides(args[0].shape))
    padded[1] += 4                                  # channels padded apart
    assert collapse_contiguous_reshapes(kir, [tuple(padded)] + [(1,), (1,)], _env(kir)) is kir


def test_groupnorm_row_vectorises_with_blockwise_weights():
    kir, args = _kir("groupnorm")
    new = collapse_contiguous_reshapes(kir, [_c_strides(a.shape) for a in args], _env(kir))
    assert ce.vector_accesses(kir) is None          # the decomposition: element by element
    last, vec = ce.vector_accesses(new)
    assert {s.buf for s in vec} == {0}              # x, contiguous along the row
    pairs = ce.blockwise_divisors(new)
    assert len(pairs) == 2                          # gamma and beta, g[(i1 * s + i2) // (h * w)]
    env = _env(new)
    assert all(ce.multiple_of(d, 4, env) and ce.multiple_of(o, 4, env) for o, d in pairs)   # h * w = 12
    assert not all(ce.multiple_of(d, 8, env) for _, d in pairs)
    src = ce.emit(new, ce.Variant("row", 4, False, 0, 128))
    body = src[src.index('extern "C"'):]
    assert "KfVec<float, 4> b0_[" in body and "const float w_" in body   # x in vectors (a batch's slots), a weight once a unit
    nvrtc = pytest.importorskip("kfuse.codegen.nvrtc")
    nvrtc.compile(src, "sm_90")


def test_blockwise_only_for_divisions_of_the_loop_variable():
    i1, i2, s = K.IVar("i1"), K.IVar("i2"), K.IVar("s3")
    assert blockwise((K.floordiv(K.add(K.mul(i1, s), i2), s),), "i2") is not None
    assert blockwise((K.mod(i2, s),), "i2") is None
    assert blockwise((K.floordiv(K.mul(i2, s), s),), "i2") is None        # not i2 + offset
    assert blockwise((K.floordiv(i2, i1),), "i2") is None                 # a divisor of loop variables
