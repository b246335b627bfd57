"""A row's maximum and its sum of exponentials in one pass (codegen.online_softmax): which phase
pairs join (logsumexp, softmax, cross-entropy), which do not (the sum's pass reading the maximum
elsewhere, another value's maximum, float64), and that CUDA C renders the joined accumulator in a
streamed row variant NVRTC compiles. Its values are checked on a GPU (tests/gpu/test_online_softmax_gpu.py)."""
import numpy as np
import pytest

import kfuse
from kfuse.codegen import cuda as ce, nvrtc
from kfuse.codegen.online_softmax import online_max_sum
from kfuse.codegen.phase_merge import merge_independent_phases, rereading_form


def lse(x):
    m = np.max(x, axis=-1, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=-1)) + m[:, 0]


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def smoothed_ce(logits, labels):
    m = np.max(logits, axis=1, keepdims=True)
    logp = logits - (np.log(np.sum(np.exp(logits - m), axis=1, keepdims=True)) + m)
    nll = -np.take_along_axis(logp, labels[:, None], axis=1)[:, 0]
    return 0.9 * nll - 0.1 * np.mean(logp, axis=1)


def entropy(x):         # the sum's pass reads the maximum outside exp(x - m) too
    m = np.max(x, axis=-1, keepdims=True)
    return np.sum(np.exp(x - m) * (x - m), axis=-1)


def other_max(x):       # the maximum of 2x, the exponentials of x minus it
    m = np.max(2 * x, axis=-1, keepdims=True)
    return np.sum(np.exp(x - m), axis=-1)


def _row_kernel(fn, *args):
    return next(k for k in kfuse.jit(fn).lower(*args).kernels() if sum(1 for ph in k.phases if ph.accs) > 1)


def _streamed(kir):
    return merge_independent_phases(online_max_sum(rereading_form(kir)))


def _kinds(kir):
    return [[a.kind for a in ph.accs] for ph in kir.phases if ph.accs]


X = np.zeros((8, 3001), np.float32)


@pytest.mark.parametrize("fn,args,before,after", [
    (lse, (X,), [["max"], ["sum"]], [["maxsumexp"]]),
    (softmax, (X,), [["max"], ["sum"]], [["maxsumexp"]]),
    # (the shifted sum freed of the log-sum-exp, codegen.shifted_sum: in the same pass)
    (smoothed_ce, (X, np.zeros(8, np.int64)), [["max"], ["sum"], ["sum"]], [["maxsumexp", "sum"]]),
])
def test_max_and_sum_of_exp_join_one_pass(fn, args, before, after):
    kir = _row_kernel(fn, *args)
    assert _kinds(kir) == before
    new = _streamed(kir)
    assert _kinds(new) == after
    pair = new.phases[0].accs[0]
    assert pair.peer == kir.phases[0].accs[0].dst      # the maximum's variable, defined with the sum
    assert online_max_sum(new) == new                  # a fixpoint


@pytest.mark.parametrize("fn,dtype", [(entropy, np.float32), (other_max, np.float32), (lse, np.float64)])
def test_other_reductions_keep_their_passes(fn, dtype):
    kir = _row_kernel(fn, X.astype(dtype))
    assert "maxsumexp" not in str(online_max_sum(kir))


@pytest.mark.parametrize("fn,args", [(lse, (X,)), (softmax, (X,)), (smoothed_ce, (X, np.zeros(8, np.int64)))])
@pytest.mark.parametrize("vec", [1, 4])
def test_streamed_row_variant_compiles(fn, args, vec):
    new = _streamed(_row_kernel(fn, *args))
    src = ce.emit_kernel(new, ce.Variant("row", vec, False, 0, 512, 2)).source
    assert "kf_mse_step" in src and "kf_mse_comb" in src
    assert ".entry" in nvrtc.compile(src, "sm_90").ptx
