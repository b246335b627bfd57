"""The grid-synchronised column variant (Variant.grid_sync) in CUDA C and PTX, without a GPU: one
barrier a pass with accumulators, each pass's partials in their own workspace slots, the launch
bounds that keep every block resident, and NVRTC compiles it for sm_80 and sm_90."""
import re

import numpy as np
import pytest

import kfuse
from kfuse.codegen import cuda as ce

nvrtc = pytest.importorskip("kfuse.codegen.nvrtc")

FUNCS = {
    "standardise": (lambda x: (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), 2),
    "softmax0": (lambda x: np.exp(x - x.max(0)) / np.exp(x - x.max(0)).sum(0), 2),
    "max_and_use": (lambda x: x - x.max(0), 1),
}


@pytest.mark.parametrize("name", list(FUNCS))
def test_grid_sync_variant_compiles_with_one_barrier_a_pass(name):
    fn, passes = FUNCS[name]
    kir = kfuse.jit(fn).lower("f32[4099,257]", device="h100", backend="cuda").kernels()[-1]
    assert ce.grid_sync_ok(kir)
    v = ce.Variant("col", 1, False, 0, 128, min_blocks=8, split=37, grid_sync=True)
    src = ce.emit(kir, v)
    body = src[src.index('extern "C"'):]
    assert "__launch_bounds__(128, 8)" in body
    assert body.count("kf_grid_sync(") == 2 * passes       # partials written; chunk 0 combined them
    # each pass's partials in their own slots: accumulator q's slot index starts q x split
    slots = sorted(set(re.findall(r"\(size_t\)\((\d+) \* 37 \+ c_\)", body)))
    assert slots == [str(q) for q in range(len(slots))] and len(slots) >= passes
    assert "if (c_ >= 37) return;" not in body          # every thread meets every barrier
    for arch in ("sm_80", "sm_90"):
        ptx = nvrtc.compile(ce.emit(kir, v), arch).ptx
        assert ptx.count("ld.acquire.gpu") >= 1 and "atom.global.add" in ptx


@pytest.mark.parametrize("split,groups", [(64, 1), (65, 9), (1024, 32)])
def test_many_chunks_combine_in_two_levels(split, groups):
    """Past GRID_COMBINE_DIRECT chunks, groups of consecutive chunks combine side by side into a
    second workspace region (one more barrier a pass), then chunk 0 combines the groups in order."""
    fn, passes = FUNCS["standardise"]
    kir = kfuse.jit(fn).lower("f32[4099,257]", device="h100", backend="cuda").kernels()[-1]
    assert ce.grid_combine_groups(split) == groups
    src = ce.emit(kir, ce.Variant("col", 1, False, 0, 128, min_blocks=8, split=split, grid_sync=True))
    body = src[src.index('extern "C"'):]
    assert body.count("kf_grid_sync(") == (2 if groups == 1 else 3) * passes
    if groups > 1:
        per = -(-split // groups)
        assert f"if (c_ < {groups}) {{" in body and f"s_ < min({split}, ((int)c_ + 1) * {per})" in body
    nvrtc.compile(src, "sm_90")
    for v in (ce.Variant("col", 1, True, 0, 128, min_blocks=8, split=split, grid_sync=True),     # 64-bit indices
              ce.Variant("row", 1, True, 0, 256, 2, min_blocks=4, split=split, grid_sync=True)):
        nvrtc.compile(ce.emit(kir, v), "sm_90")


def test_single_pass_reductions_split_in_two_kernels_instead():
    kir = kfuse.jit(lambda x: x.sum(0)).lower(np.zeros((4099, 257), np.float32)).kernels()[0]
    assert not ce.grid_sync_ok(kir) and ce.split_ok(kir)


@pytest.mark.parametrize("fn", [lambda x: x / np.abs(x).max(), lambda x: (x - x.mean()) / x.std()])
def test_row_grid_sync_block_combine_then_grid_combine(fn):
    from kfuse.codegen.variance import one_pass_variance
    kir = one_pass_variance(kfuse.jit(fn).lower(np.zeros(1 << 16, np.float32)).kernels()[0])
    v = ce.Variant("row", 4, False, 0, 256, 2, min_blocks=8, split=21, grid_sync=True)
    body = ce.emit(kir, v)
    body = body[body.index('extern "C"'):]
    assert body.count("kf_grid_sync(") == 2 and "if (tid_ == 0) *reinterpret_cast<" in body
    assert body.index("sm_v") < body.index("kf_grid_sync(")     # the block's combine comes first
    nvrtc.compile(ce.emit(kir, v), "sm_90")


@pytest.mark.parametrize("lanes,vec", [(16, 4), (4, 1), (1, 4), (32, 4)])
def test_packed_short_rows_combine_within_their_lanes(lanes, vec):
    fn = lambda x: (x - x.mean(-1, keepdims=True)) * x.max(-1, keepdims=True)    # noqa: E731
    kir = kfuse.jit(fn).lower(np.zeros((1000, 64), np.float32)).kernels()[0]
    v = ce.Variant("row", vec, False, 0, 128, 2, lanes=lanes, packed=True)
    body = ce.emit(kir, v)
    body = body[body.index('extern "C"'):]
    assert "__syncthreads" not in body and f"for (IDX j_ = lane_; j_ < " in body
    assert f"for (int m_ = {lanes // 2}; m_ > 0;" in body and f"tid_ / {lanes}" in body
    nvrtc.compile(ce.emit(kir, v), "sm_90")
