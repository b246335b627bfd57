"""Two-stage (split) reductions, without a GPU: where the CUDA C launcher picks them, what the
two kernels look like, and that NVRTC compiles them (sm_80/sm_90). Their results: the GPU tests."""
import numpy as np
import pytest

from kfuse.codegen import cuda as ce
from kfuse.codegen import nvrtc

from tests.autotune.test_gpu_tiles import PROPS, launcher_for


def total(x):
    return x.sum()


def rownorm(x):
    return np.sqrt((x * x).sum(axis=1))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def argmax(x):
    return x.argmax()


@pytest.mark.parametrize("fn,shape,rows", [(total, (1 << 24,), 1), (rownorm, (4, 1 << 22), 4),
                                           (argmax, (1 << 20,), 1)])
def test_few_long_rows_run_in_chunks(fn, shape, rows):
    _, lau, ins, outs = launcher_for(fn, np.zeros(shape, np.float32))
    v, grid = lau.variant_for(ins, outs, PROPS)
    assert (v.mode, v.stage) == ("row", 1) and v.split >= 2 and grid == rows * v.split
    assert grid >= PROPS["sm_count"] or (shape[-1] // v.vec) // v.split >= 4096   # fills the GPU, or chunks stay long
    assert ce.split_ok(lau.kir)


@pytest.mark.parametrize("fn,shape", [(rownorm, (16384, 4096)), (total, (10_000,)), (softmax, (2, 1 << 20))])
def test_many_rows_short_rows_and_multi_pass_rows_do_not_split(fn, shape):
    _, lau, ins, outs = launcher_for(fn, np.zeros(shape, np.float32))
    v, _ = lau.variant_for(ins, outs, PROPS)
    assert v.stage == 0 and (v.split == 0) == (not v.grid_sync)
    assert ce.split_ok(lau.kir) == (fn is not softmax)       # softmax's rows are read by 3 passes
    # two rows of 2^20 read by 3 passes: their chunks meet at grid barriers in one launch
    assert v.grid_sync == (fn is softmax) and ce.grid_sync_ok(lau.kir) == (fn is softmax)


def test_the_two_kernels_compile_and_hand_partials_through_the_workspace():
    _, lau, ins, outs = launcher_for(argmax, np.zeros((1 << 20,), np.float32))
    v, _ = lau.variant_for(ins, outs, PROPS)
    s1 = ce.emit_kernel(lau.kir, v)
    s2 = ce.emit_kernel(lau.kir, ce.Variant("row", 1, False, 0, 128, 2, split=v.split, stage=2))
    for k in (s1, s2):
        assert "unsigned char* __restrict__ ws_)" in k.source
        for arch in ("sm_80", "sm_90"):
            assert nvrtc.compile(k.source, arch).cubin[:4] == b"\x7fELF"
    body1, body2 = (k.source.split("kfuse kernel")[-1] for k in (s1, s2))
    assert f"blockIdx.x / {v.split}" in body1 and "for (IDX j_ = lo_ + tid_; j_ < hi_" in body1
    assert "#pragma unroll 4" in body1.split("for (IDX j_ = lo_")[0].rstrip().splitlines()[-1]   # loads in flight
    assert body1.count("if (tid_ == 0) *reinterpret_cast<KfArg<float>*>(ws_") == 1 and "out0[" not in body1
    assert f"for (int s_ = tid_; s_ < {v.split}; s_ += 128)" in body2 and "in0[" not in body2   # no re-read
    assert "__shfl_xor_sync" in body2 or "kf_shfl" in body2                                  # then a fixed tree
    assert "kf_argcomb" in body2 and "out0[" in body2


def test_tiles_leave_a_split_reduction_alone():
    from kfuse.autotune.space import TileConfig
    _, lau, ins, outs = launcher_for(total, np.zeros((1 << 24,), np.float32))
    lau.tile = TileConfig.make("row", block=128, storage="reread")
    v, grid = lau.variant_for(ins, outs, PROPS)
    assert v.split >= 2 and grid == v.split and "two-stage" in lau.tile_note


def colsum(x):
    return x.sum(axis=0)


def test_few_long_columns_run_in_chunks_a_thread_a_column():
    _, lau, ins, outs = launcher_for(colsum, np.zeros((1 << 20, 64), np.float32))
    v, grid = lau.variant_for(ins, outs, PROPS)
    assert (v.mode, v.stage) == ("col", 1) and v.split >= 2 and grid * 128 >= 64 * v.split > (grid - 1) * 128
    src = ce.emit_kernel(lau.kir, v).source.split("kfuse kernel")[-1]
    assert "row_ = g_ % n_rows" in src and "{ IDX jb_ = lo_;" in src and "for (; jb_ <= hi_ - " in src
    assert "if (tid_ == 0)" not in src and "__syncthreads" not in src                   # a thread a column
    for arch in ("sm_80", "sm_90"):
        assert nvrtc.compile(ce.emit_kernel(lau.kir, v).source, arch).cubin[:4] == b"\x7fELF"
    _, lau, ins, outs = launcher_for(colsum, np.zeros((4096, 1 << 15), np.float32))   # 256 blocks of columns
    assert lau.variant_for(ins, outs, PROPS)[0].split == 0
