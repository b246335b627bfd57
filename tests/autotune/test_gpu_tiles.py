"""TileConfig -> CUDA C launch shape (runtime.cuda_tiles) and the GPU tuner's wiring, without a
GPU: launchers see stand-in arrays (shape, strides, a data pointer); NVRTC compiles if present."""
import dataclasses
import types

import numpy as np
import pytest

from kfuse.autotune import prune as P
from kfuse.autotune import space as S
from kfuse.autotune import tuner
from kfuse.autotune.space import TileConfig
from kfuse.codegen.cuda import emit_kernel
from kfuse.codegen.lower import lower_group
from kfuse.fusion.cost import get_device_spec
from kfuse.runtime import cuda_tiles as T
from kfuse.runtime.cuda import CudaProgram, _Launcher

from tests.autotune.helpers import ew, make_plan

PROPS = {"sm_count": 132, "device_id": 0}


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def colsum(x):
    return x.sum(axis=0)


class Arr:
    """What a launcher reads of an array: shape, strides, itemsize, data.ptr."""

    def __init__(self, shape, dtype=np.float32, ptr=0, strides=None):
        a = np.empty(shape, dtype) if strides is None else None
        self.shape, self.itemsize = tuple(shape), np.dtype(dtype).itemsize
        self.strides = a.strides if a is not None else tuple(strides)
        self.size = int(np.prod(shape))
        self.data = types.SimpleNamespace(ptr=ptr)


def launcher_for(fn, *arrays, ptr=0):
    plan = make_plan(fn, *arrays, device="h100")
    g = plan.groups[0]
    lau = _Launcher(g, lower_group(g), "sm_90", None)
    ins = [Arr(n.shape, n.dtype, ptr) for n in g.inputs]
    outs = [Arr(n.shape, n.dtype) for n in g.outputs]
    return g, lau, ins, outs


def _with(lau, tile, ins, outs):
    lau.tile, lau.tile_note = tile, None
    v, grid = lau.variant_for(ins, outs, PROPS)
    return v, grid, lau.tile_note


CASES = [
    (ew, (np.zeros((512, 1024), np.float32), np.zeros((512, 1024), np.float32))),
    (ew, (np.zeros((4096, 4096), np.float32), np.zeros((4096, 4096), np.float32))),
    (softmax, (np.zeros((256, 4096), np.float32),)),
    (softmax, (np.zeros((64, 65536), np.float32),)),
    (colsum, (np.zeros((1024, 512), np.float32),)),                 # two-stage (4 blocks of columns)
    (colsum, (np.zeros((128, 512), np.float32),)),
]


@pytest.mark.parametrize("fn,arrays", CASES)
def test_heuristic_is_a_tile_and_round_trips(fn, arrays):
    g, lau, ins, outs = launcher_for(fn, *arrays)
    base = lau.variant_for(ins, outs, PROPS)
    kind, params = T.tile_params(*base, T.geometry(lau, 132))
    tile = TileConfig.make(kind, **params)
    assert T.unsupported(tile) is None
    v, grid, note = _with(lau, tile, ins, outs)
    assert note is None and (v, grid) == base


def test_elementwise_mapping():
    g, lau, ins, outs = launcher_for(ew, np.zeros((512, 1024), np.float32), np.zeros((512, 1024), np.float32))
    v, grid, note = _with(lau, TileConfig.make("elementwise", block=128, ept=4, vec=2), ins, outs)
    assert note is None and (v.mode, v.block, v.vec) == ("elementwise", 128, 2)
    if hasattr(v, "ept"):
        assert v.ept == 4
    assert grid == -(-512 * 1024 // 2 // (128 * 4))
    # a misaligned pointer makes vector access illegal: the tile's vec falls back to 1
    g, lau, ins, outs = launcher_for(ew, np.zeros((512, 1024), np.float32), np.zeros((512, 1024), np.float32), ptr=4)
    v, grid, note = _with(lau, TileConfig.make("elementwise", block=256, ept=1, vec=4), ins, outs)
    assert note is None and v.vec == 1 and grid == -(-512 * 1024 // 256)


def test_row_mapping_storage_and_grid():
    g, lau, ins, outs = launcher_for(softmax, np.zeros((256, 4096), np.float32))
    base_v, base_grid = lau.variant_for(ins, outs, PROPS)
    assert base_v.mode == "row" and base_v.vec == 4
    v, grid, note = _with(lau, TileConfig.make("row", block=128, storage="registers", vec=4), ins, outs)
    assert note is None and (v.block, v.cache_k, v.vec) == (128, 8, 4)      # 1024 units / 128
    assert 1 <= grid <= 256
    v, grid, note = _with(lau, TileConfig.make("row", block=512, storage="reread", vec=2), ins, outs)
    assert note is None and (v.block, v.cache_k, v.vec) == (512, 0, 2)
    # the same threads in flight as the heuristic's grid, at most one block a row
    assert grid == min(256, -(-base_grid * base_v.block // 512))
    # too long for registers: the launcher's own choice, with a note
    v, grid, note = _with(lau, TileConfig.make("row", block=32, storage="registers", vec=1), ins, outs)
    assert note and "register slots" in note and (v, grid) == (base_v, base_grid)


def test_exact_cover_only_where_the_grid_covers_the_domain_once():
    z = np.zeros
    for fn, arrays, exact in [(ew, (z((512, 1024), np.float32),) * 2, False),      # 1 unit a thread: looped
                              (ew, (z((511, 1000), np.float32),) * 2, False),       # a partial last tile
                              (softmax, (z((256, 4096), np.float32),), True),         # 1024 units = 4 x 256
                              (softmax, (z((64, 4000), np.float32),), False),         # 1000 units in 4 x 256 slots
                              (colsum, (z((1024, 512), np.float32),), False)]:
        g, lau, ins, outs = launcher_for(fn, *arrays)
        v, grid = lau.variant_for(ins, outs, PROPS)
        assert v.exact is exact, (fn.__name__, arrays[0].shape, v, grid)
    # a tile that changes the grid is checked again
    g, lau, ins, outs = launcher_for(ew, z((512, 1024), np.float32), z((512, 1024), np.float32))
    v, grid, note = _with(lau, TileConfig.make("elementwise", block=128, ept=4, vec=2), ins, outs)
    assert v.exact is (grid * 128 * 4 == 512 * 1024 // 2)
    v, grid, note = _with(lau, TileConfig.make("elementwise", block=128, ept=2, vec=4), ins, outs)
    assert v.exact and grid * 128 * 2 == 512 * 1024 // 4
    v, grid, note = _with(lau, TileConfig.make("elementwise", block=128, ept=1, vec=4), ins, outs)
    assert grid * 128 == 512 * 1024 // 4 and not v.exact        # one unit a thread: the looped kernel (P6)


def test_mismatched_or_unsupported_tiles_are_ignored():
    g, lau, ins, outs = launcher_for(softmax, np.zeros((256, 4096), np.float32))
    base = lau.variant_for(ins, outs, PROPS)
    for tile in (TileConfig.make("elementwise", block=256, ept=1, vec=4),
                 TileConfig.make("row", block=256, storage="shared", vec=4),
                 TileConfig.make("reduction", block=128, rows=2, split=1),
                 TileConfig("cublas+epilogue")):
        v, grid, note = _with(lau, tile, ins, outs)
        assert note and (v, grid) == base
    g, lau, ins, outs = launcher_for(colsum, np.zeros((128, 512), np.float32))     # too short to split
    base_v, base_grid = lau.variant_for(ins, outs, PROPS)
    assert base_v.mode == "col" and not base_v.split
    v, grid, note = _with(lau, TileConfig.make("reduction", block=256, rows=1, split=1), ins, outs)
    assert note is None and v.block == 256 and grid == 2          # 512 outputs, one a thread


def test_gpu_space_after_unsupported_and_prune():
    h100 = get_device_spec("h100")
    plan = make_plan(softmax, np.zeros((256, 4096), np.float32), device="h100")
    g = plan.groups[0]
    ok = [c for c in S.space_for(g, "cuda") if T.unsupported(c) is None]
    assert ok and {c["storage"] for c in ok} == {"registers", "reread"}
    kept = P.prune(ok, g, h100, top_k=6)
    assert 1 <= len(kept) <= 6 and all(P.check(c, g, h100) is None for c in kept)
    plan = make_plan(colsum, np.zeros((1024, 512), np.float32), device="h100")
    ok = [c for c in S.space_for(plan.groups[0], "cuda") if T.unsupported(c) is None]
    assert ok and all(c["rows"] == 1 and c["split"] == 1 for c in ok)


def test_set_tile_reaches_launchers_without_gpu():
    plan = make_plan(ew, np.zeros((64, 128), np.float32), np.zeros((64, 128), np.float32), device="h100")
    prog = CudaProgram(plan, arch="sm_90")
    tile = TileConfig.make("elementwise", block=512, ept=2, vec=4)
    prog.set_tile(0, tile)
    lau = prog._launcher(plan.groups[0], prog.kirs[0])
    assert lau.tile == tile
    prog.launchers = [lau]
    lau._variants["k"] = "stale"
    prog.set_tile(0, None)
    assert lau.tile is None and not lau._variants


def test_tuned_variants_compile():
    nvrtc = pytest.importorskip("kfuse.codegen.nvrtc")
    try:
        nvrtc.compile('extern "C" __global__ void k(float* a) { a[0] = 1; }', "sm_90")
    except Exception as e:           # no NVRTC on this machine
        pytest.skip(f"NVRTC unavailable: {e}")
    for fn, arrays, tile in (
            (ew, CASES[0][1], TileConfig.make("elementwise", block=512, ept=4, vec=2)),
            (softmax, CASES[2][1], TileConfig.make("row", block=128, storage="registers", vec=4)),
            (softmax, CASES[2][1], TileConfig.make("row", block=1024, storage="reread", vec=1))):
        g, lau, ins, outs = launcher_for(fn, *arrays)
        v, grid, note = _with(lau, tile, ins, outs)
        assert note is None
        nvrtc.compile(emit_kernel(lau.kir, v).source, "sm_90")


def test_cuda_tuning_without_gpu_falls_back(monkeypatch):
    from kfuse.runtime import device
    if device.has_gpu():
        pytest.skip("a GPU is present")
    plan = make_plan(ew, np.zeros((64, 128), np.float32), np.zeros((64, 128), np.float32), device="h100")
    reports = []
    tiles = tuner.tune_program(plan, [np.zeros((64, 128), np.float32)] * 2, "cuda", "on", None,
                               reports=reports, progress=False)
    assert set(tiles) == {0} and reports[0].source == "heuristic"
    assert "cannot prepare tuning" in reports[0].note


def test_tune_and_apply_gpu_sets_only_chosen(monkeypatch):
    calls = []
    prog = types.SimpleNamespace(set_tile=lambda gid, t: calls.append((gid, t)))
    heur = TileConfig.make("elementwise", block=256, ept=1, vec=4)
    tuned = TileConfig.make("elementwise", block=128, ept=2, vec=4)

    def fake_tune(plan, arrays, backend, mode, store, program=None, reports=None, **kw):
        reports.append(tuner.GroupReport(0, "elementwise", "heuristic", heur, heur))
        reports.append(tuner.GroupReport(1, "elementwise", "stored", tuned, heur))
        return {0: heur, 1: tuned}
    monkeypatch.setattr(tuner, "tune_program", fake_tune)
    tuner.tune_and_apply(None, None, "cuda", "cached", None, prog)
    assert calls == [(1, tuned)]


def test_tile_params_without_ept_field():
    @dataclasses.dataclass(frozen=True)
    class OldVariant:                       # an emitter without the ept field
        mode: str = "elementwise"
        vec: int = 4
        idx64: bool = False
        cache_k: int = 0
        block: int = 256
    geom = T.Geometry(units=1 << 20)
    kind, params = T.tile_params(OldVariant(), 256, geom)
    assert params["ept"] == 4                      # 2^18 units over 256 x 256 threads
    v, grid, note = T.apply_tile(TileConfig.make(kind, **params), OldVariant(), 256, geom)
    assert (v, grid, note) == (OldVariant(), 256, None)
    v, grid, note = T.apply_tile(TileConfig.make("elementwise", block=128, ept=1, vec=4), OldVariant(), 256, geom)
    assert v.block == 128 and grid == (1 << 18) // 128


@pytest.mark.parametrize("block, want", [(128, 12), (512, 3), (1024, 1), (256, 6)])
def test_tile_keeps_resident_threads_of_a_register_cap(block, want):
    from kfuse.codegen.cuda import Variant
    v0 = Variant("elementwise", vec=2, block=256, min_blocks=6)     # 1536 threads an SM
    v, _, note = T.apply_tile(TileConfig.make("elementwise", block=block, ept=2, vec=2), v0, 4096,
                              T.Geometry(units=1 << 22))
    assert note is None and (v.block, v.min_blocks, v.ept) == (block, want, 2)


def test_row_register_slots_prefilter():
    from kfuse.autotune.gpu_targets import row_registers_unfit
    plan = make_plan(softmax, np.zeros((256, 4096), np.float32), device="h100")
    g = plan.groups[0]
    assert T.row_slots(4096, 128, 4) == 8 and T.row_slots(4096, 64, 1) == 64
    assert row_registers_unfit(TileConfig.make("row", block=64, storage="registers", vec=1), g)
    assert row_registers_unfit(TileConfig.make("row", block=64, storage="reread", vec=1), g) is None
    assert row_registers_unfit(TileConfig.make("row", block=128, storage="registers", vec=4), g) is None


def _p1_like(x, w, b):
    return np.tanh(x * w + b)


def _p6_like(p, g, m, v):
    m2 = 0.9 * m + 0.1 * g
    return p - 1e-3 * m2 / (np.sqrt(0.999 * v + 0.001 * g * g) + 1e-8), m2


def test_elementwise_heuristic_units_a_thread():
    """Blocks of EW_BLOCK threads with EW_UNITS_PER_THREAD vector units a thread, one full-size
    input streaming (P1) or four (P6); a grid that covers the domain up to the cap."""
    from kfuse.runtime import cuda as rc
    x = np.zeros((1024, 1024), np.float32)
    y = np.zeros(1 << 20, np.float32)
    for fn, args in ((_p1_like, (x, x[0], x[0])), (_p6_like, (y, y, y, y))):
        _, lau, ins, outs = launcher_for(fn, *args)
        v, grid = lau.variant_for(ins, outs, PROPS)
        assert (v.block, v.ept, v.vec) == (rc.EW_BLOCK, rc.EW_UNITS_PER_THREAD, 4)
        assert grid == -(-args[0].size // 4 // (v.block * v.ept))
        assert v.exact == (v.ept > 1)      # exact (no loop, no guard) only at 2+ units a thread


def _mish(x):
    return x * np.tanh(np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0))


@pytest.mark.parametrize("fn, dtype, ept", [
    (_mish, np.float32, 2),                     # three special functions for 8 bytes an element
    (lambda x: np.exp(x) * np.tanh(x), np.float64, 2),   # float64 special functions weigh F64_SPECIAL_SCALE theirs
    (lambda x: np.exp(x) * np.tanh(x), np.float32, 1),   # ... in float32 not heavy
    (_mish, np.float16, 1),                     # a unit of 8 float16 elements is enough a thread
    (lambda x: x * 2.0 + 1.0, np.float64, 1),
])
def test_heavy_elementwise_kernels_take_two_units_a_thread(fn, dtype, ept):
    """Arithmetic heavy for the bytes moved (cuda_shapes.flops_per_byte at least
    HEAVY_FLOPS_PER_BYTE) runs EW_HEAVY_UNITS vector units a thread, up to 8 elements a thread."""
    from kfuse.codegen import cuda_shapes
    from kfuse.runtime import cuda as rc
    _, lau, ins, outs = launcher_for(fn, np.zeros((1024, 1024), dtype))
    heavy = cuda_shapes.flops_per_byte(lau.kir) >= cuda_shapes.HEAVY_FLOPS_PER_BYTE
    v, grid = lau.variant_for(ins, outs, PROPS)
    assert v.ept == ept and heavy == (ept > 1 or dtype == np.float16)
    assert v.ept == (rc.EW_HEAVY_UNITS if ept > 1 else rc.EW_UNITS_PER_THREAD)
    assert grid * v.block * v.ept * v.vec == 1 << 20


def _adam_like(p, g, m, v):
    m2 = 0.9 * m + 0.1 * g
    v2 = 0.999 * v + 0.001 * g * g
    return p - 0.001 * m2 / (np.sqrt(v2) + 1e-8), m2, v2


def _bias_gelu_like(x, w, b):
    y = x * w + b
    return 0.5 * y * (1 + np.tanh(y))


@pytest.mark.parametrize("name, fn, shapes, want", [
    # DeviceSpec.multi_stream_tile: the H100 takes 8-byte units at 256 threads for 3 or more
    # full-size arrays; the H200 for 4 or more inputs, with registers capped for 6 blocks an SM and
    # one pass over the domain (exact: no grid-stride loop)
    ("NVIDIA H100 80GB HBM3", _adam_like, [(1 << 20,)] * 4, (2, 256, 0, False)),
    ("NVIDIA H100 80GB HBM3", lambda x, y: x * 2 + y, [(1 << 20,)] * 2, (2, 256, 0, False)),
    ("NVIDIA H200", _adam_like, [(1 << 20,)] * 4, (2, 256, 6, True)),
    ("NVIDIA H200", lambda a, b, c, d: a * b + c * d, [(1 << 20,)] * 4, (2, 256, 6, True)),
    ("NVIDIA H200", lambda x, y: x * 2 + y, [(1 << 20,)] * 2, (4, 128, 0, False)),
    ("NVIDIA H200", lambda x, y, z: (x + y, y * z, x - z), [(1 << 20,)] * 3, (4, 128, 0, False)),
    # ... a copy-like kernel (2 arrays) and a row-broadcast operand (x full, w and b one row) do not
    ("NVIDIA H100 80GB HBM3", lambda x: x * 2 + 1, [(1 << 20,)], (4, 128, 0, False)),
    ("NVIDIA H100 80GB HBM3", _bias_gelu_like, [(1024, 1024), (1024,), (1024,)], (4, 128, 0, False)),
    ("NVIDIA H200", _bias_gelu_like, [(1024, 1024), (1024,), (1024,)], (4, 128, 0, False)),
    # an unknown part keeps 16-byte units at 128 threads
    ("", _adam_like, [(1 << 20,)] * 4, (4, 128, 0, False)),
])
def test_multi_stream_tile_per_device(name, fn, shapes, want):
    _, lau, ins, outs = launcher_for(fn, *[np.zeros(s, np.float32) for s in shapes])
    v, grid = lau.variant_for(ins, outs, dict(PROPS, name=name))
    assert (v.vec, v.block, v.min_blocks, v.exact) == want
    assert grid == (1 << 20) // (v.vec * v.block * v.ept)     # one unit a thread, the domain covered once


def test_one_pass_grid_is_not_capped():
    """The H200's one-pass tile covers arrays past the grid-stride cap (1024 blocks an SM) with a
    block per 256 units, not a loop; a size the blocks do not divide keeps the loop (and its guards)."""
    n = 1 << 27                                  # 2^27 / (256 x 2) = 262144 blocks > 132 x 1024
    _, lau, ins, outs = launcher_for(_adam_like, *[np.zeros(n, np.float32)] * 4)
    v, grid = lau.variant_for(ins, outs, dict(PROPS, name="NVIDIA H200"))
    assert (v.exact, grid) == (True, n // 512)
    _, lau, ins, outs = launcher_for(_adam_like, *[np.zeros(n + 4, np.float32)] * 4)
    v, grid = lau.variant_for(ins, outs, dict(PROPS, name="NVIDIA H200"))
    assert (v.vec, v.block, v.exact, grid) == (2, 256, False, n // 512 + 1)


@pytest.mark.parametrize("name, fn, shape, want", [
    ("NVIDIA H100 80GB HBM3", softmax, (4096, 4096), 75),            # the row held in registers
    ("NVIDIA H200", softmax, (4096, 4096), 0),
    ("NVIDIA H200", lambda x: np.sqrt(np.sum(x * x, axis=1)), (4096, 4096), 25),   # one value a row out
    ("NVIDIA H100 80GB HBM3", lambda x: np.sqrt(np.sum(x * x, axis=1)), (4096, 4096), 25),
    ("", softmax, (4096, 4096), None),                                # an unknown part: the driver's choice
    ("NVIDIA H100 80GB HBM3", _adam_like, None, None),                # not a row kernel
])
def test_row_carveout_per_device(name, fn, shape, want):
    from kfuse.codegen.cuda import writes_rows
    from kfuse.runtime.carveout import row_carveout
    shapes = [shape] if shape else [(1 << 20,)] * 4
    _, lau, ins, outs = launcher_for(fn, *[np.zeros(s, np.float32) for s in shapes])
    v, _ = lau.variant_for(ins, outs, dict(PROPS, name=name))
    assert row_carveout(v, name, writes_rows(lau.kir)) == want


def test_row_carveout_of_reloading_rows():
    import dataclasses as dc

    from kfuse.codegen.cuda import Variant
    from kfuse.runtime.carveout import row_carveout
    row = Variant("row", 4, False, 2, 512, 2, reload=True)
    assert row_carveout(row, "NVIDIA H100 80GB HBM3") == 30
    assert row_carveout(dc.replace(row, reload=False), "NVIDIA H100 80GB HBM3") == 75
    assert row_carveout(dc.replace(row, split=8, stage=1), "NVIDIA H100 80GB HBM3") is None


@pytest.mark.parametrize("block, static, want", [
    (64, 1024, 29),         # 32 blocks of 64 threads, 2 KiB each with the reserve: 64 of 228 KiB
    (256, 1024, 8),         # 8 blocks: 16 KiB
    (1024, 8192, 8),        # 2 blocks of 9 KiB
    (256, 0, 4),            # the reserve alone
])
def test_carveout_leaves_room_for_the_blocks_an_sm_holds(block, static, want):
    """A row kernel's tuned carve-out (0% shared on the H200) is raised to what the blocks an SM
    holds by threads need, so it never caps occupancy (a 1024-wide softmax's 64-thread blocks)."""
    from kfuse.runtime.carveout import carveout_for_occupancy
    props = dict(PROPS, name="NVIDIA H200")
    assert carveout_for_occupancy(0, block, static, props) == want
    assert carveout_for_occupancy(75, block, static, props) == 75        # a larger one stays
    assert carveout_for_occupancy(0, block, static, dict(props, name="")) == 0     # unknown part: as given


def test_tuning_key_text_is_emitted_once_per_shape_class(monkeypatch):
    """A new size's program (``rebind`` of its shape class's) reuses the tuning keys' CUDA C: a
    new size does not emit its kernels again for the tuner (0.5 ms a layernorm)."""
    from kfuse.autotune import gpu_targets
    calls = []
    monkeypatch.setattr(gpu_targets, "gpu_arch", lambda device_id=None: "sm_90:test")
    monkeypatch.setattr(gpu_targets, "kernel_source",
                        lambda kir, store=None: calls.append(kir) or emit_kernel(kir).source)
    plan = make_plan(softmax, np.zeros((64, 512), np.float32), device="h100")
    program = CudaProgram(plan, arch="sm_90")
    from kfuse import backends
    cuda = backends.get("cuda")
    _, first, _ = tuner._prepare(plan, cuda, program, None)
    plan2 = make_plan(softmax, np.zeros((100, 300), np.float32), device="h100")
    new_size = program.rebind(plan2, tuple(lower_group(g) for g in plan2.groups))
    _, again, _ = tuner._prepare(plan2, cuda, new_size, None)
    assert len(calls) == len(plan.groups) and list(again.values()) == list(first.values())
    other = program.rebind(plan2, tuple(lower_group(g) for g in plan2.groups), share=False)
    tuner._prepare(plan2, cuda, other, None)             # other code: its own texts
    assert len(calls) == 2 * len(plan.groups)
