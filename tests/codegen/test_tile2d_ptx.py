"""The 2-D tile schedule (Variant mode "tile", codegen.cuda_tile2d) without a GPU: which loads a
tile may stage, the CUDA C it renders (staged loads read across a padded shared tile, the others
and the stores along the output's last dim), and NVRTC compiles it for every dtype family."""
import numpy as np
import pytest

import kfuse
from kfuse.codegen import cuda as ce

nvrtc = pytest.importorskip("kfuse.codegen.nvrtc")


def _kir(fn, *arrays):
    return kfuse.jit(fn).lower(*arrays).kernels()[0]


def test_stageable_loads_and_their_axes():
    kir = _kir(lambda x, y, b: np.exp(x.T) + y * b, np.zeros((30, 20), np.float32),
               np.zeros((20, 30), np.float32), np.zeros(30, np.float32))
    axes = {s.buf: ce.load_axes(s) for s in ce.tile_loads(kir)}
    assert axes[0] == {"i1": 0, "i0": 1} and axes[1] == {"i0": 0, "i1": 1} and axes[2] == {"i1": 0}


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int8, np.bool_])
def test_tile_variant_renders_and_compiles(dtype):
    """NCHW to NHWC plus an NHWC operand: x's loads run along W (i2), the output along C (i3)."""
    fn = lambda x, y: np.transpose(x, (0, 2, 3, 1)) + y      # noqa: E731
    kir = _kir(fn, np.zeros((2, 40, 10, 12), dtype), np.zeros((2, 10, 12, 40), dtype))
    staged = tuple(s.dst for s in ce.tile_loads(kir) if s.buf == 0)
    assert len(staged) == 1 and ce.load_axes(ce.tile_loads(kir)[0])["i2"] == 3
    src = ce.emit(kir, ce.Variant("tile", 1, False, 0, 256, tile_t=2, staged=staged))
    body = src[src.index('extern "C"'):]
    assert "[32][33];" in body and body.count("__syncthreads();") == 2
    assert "const IDX i2 = t0_ + gx_, i3 = l0_ + gy_ + k_ * 8;" in body      # staging: threads along W
    assert "const IDX i3 = l0_ + gx_, i2 = t0_ + gy_ + k_ * 8;" in body      # computing: along C
    assert f"= sm0_[gx_][gy_ + k_ * 8];" in body
    assert "const IDX i1 = r_ % s1; r_ /= s1;" in body and "const IDX i0 = r_ % s0;" in body
    nvrtc.compile(src, "sm_90")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_wide_tile_renders_and_compiles(dtype):
    """Variant.side 64: 64 x 64 tiles, 256 threads in 4 rows, 16 elements a thread a tile."""
    kir = _kir(lambda x, y: np.exp(x.T) + y, np.zeros((70, 90), dtype), np.zeros((90, 70), dtype))
    staged = tuple(s.dst for s in ce.tile_loads(kir) if s.buf == 0)
    src = ce.emit(kir, ce.Variant("tile", 1, False, 0, 256, tile_t=0, staged=staged, side=64))
    body = src[src.index('extern "C"'):]
    assert "[64][65];" in body and "k_ < 16;" in body and "gy_ + k_ * 4" in body
    nvrtc.compile(src, "sm_90")


@pytest.mark.parametrize("dtype,vec", [(np.float32, 4), (np.float16, 8), (np.int8, 16)])
def test_vector_tile_renders_and_compiles(dtype, vec):
    """Vector tiles: a staged load read ``vec`` elements at a time along t, the unstaged operand and
    the output ``vec`` at a time along l."""
    kir = _kir(lambda x, y: x.T + y, np.zeros((128, 64), dtype), np.zeros((64, 128), dtype))
    staged = tuple(s.dst for s in ce.tile_loads(kir) if s.buf == 0)
    src = ce.emit(kir, ce.Variant("tile", vec, False, 0, 256, tile_t=0, staged=staged, side=64))
    body = src[src.index('extern "C"'):]
    assert body.count(f", {vec}>*>(in") == 2 and f"KfVec<" in body and body.count("__syncthreads();") == 2
    nvrtc.compile(src, "sm_90")


def test_wide_tiles_where_the_staged_tiles_fit():
    """64-wide tiles take 64 x 65 elements of shared memory a staged load: two float32 loads fit
    the launcher's budget, two float64 ones do not (they keep 32-wide tiles)."""
    from kfuse.codegen.cuda_tile2d import STAGE_BYTES, TILE_WIDE, stage_bytes
    assert stage_bytes(TILE_WIDE, [4] * 2) <= STAGE_BYTES < stage_bytes(TILE_WIDE, [8] * 2)


def test_only_elementwise_kernels_take_tiles():
    kir = _kir(lambda x: x.sum(0) + x, np.zeros((3, 4), np.float32))
    with pytest.raises(Exception):
        ce.emit(kir, ce.Variant("tile", 1, False, 0, 256, tile_t=0, staged=()))
