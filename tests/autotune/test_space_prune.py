"""Search spaces and pruning (pure: no compile, no GPU)."""
import numpy as np

from kfuse.autotune import prune as P
from kfuse.autotune import space as S
from kfuse.autotune.space import TileConfig
from kfuse.fusion.cost import get_device_spec

from tests.autotune.helpers import ew, make_plan


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_tileconfig_frozen_sorted_roundtrip():
    a = TileConfig.make("cpu", variant="par", threads=4)
    b = TileConfig("cpu", (("threads", 4), ("variant", "par")))
    assert a == b and hash(a) == hash(b) and a.params[0][0] == "threads"
    assert TileConfig.from_dict(a.as_dict()) == a
    assert a["threads"] == 4 and a.name == "cpu:threads=4,variant=par"


def test_cpu_space_threads_and_variants():
    plan = make_plan(ew, np.zeros((64, 128), np.float32), np.zeros((64, 128), np.float32))
    g = plan.groups[0]
    sp = S.cpu_space(g, max_threads=12)
    assert sp[0] == TileConfig.make("cpu", variant="seq", threads=1)
    assert [c["threads"] for c in sp[1:]] == [2, 4, 8, 12]


def test_gpu_spaces_have_every_kind():
    plan = make_plan(ew, np.zeros((64, 128), np.float16), np.zeros((64, 128), np.float16), device="h100")
    sp = S.space_for(plan.groups[0], "cuda")
    assert {c.kind for c in sp} == {"elementwise"} and max(c["vec"] for c in sp) == 8
    gs = S.gemm_space("f16")
    assert S.CUBLAS_EPILOGUE in gs and sum(c.kind == "gemm" for c in gs) >= 8
    plan = make_plan(softmax, np.zeros((32, 4096), np.float32), device="h100")
    sp = S.space_for(plan.groups[0], "cuda")
    assert {c.kind for c in sp} == {"row"} and {c["storage"] for c in sp} == {"registers", "shared", "reread"}


def test_prune_drops_resource_breakers_and_keeps_top_k():
    h100 = get_device_spec("h100")
    # a row of 64 Ki float32 = 256 KiB > 227 KiB of shared memory; 33 columns break vec > 1
    plan = make_plan(softmax, np.zeros((8, 65536), np.float32), device="h100")
    g = plan.groups[0]
    dropped = []
    kept = P.prune(S.space_for(g, "cuda"), g, h100, top_k=5, dropped=dropped)
    assert len(kept) == 5
    assert all(c["storage"] == "reread" for c in kept)   # the row fits neither on chip
    reasons = {c: why for c, why in dropped}
    shared = TileConfig.make("row", block=256, storage="shared", vec=4)
    assert "shared memory" in reasons[shared]
    small_regs = TileConfig.make("row", block=32, storage="registers", vec=1)
    assert "registers" in reasons[small_regs]
    # kept ones are the best by the model, in order
    times = [P.model_seconds(c, g, h100) for c in kept]
    assert times == sorted(times)
    rest = [c for c, why in dropped if why.startswith("not in the top")]
    assert rest and min(P.model_seconds(c, g, h100) for c in rest) >= times[-1]
    # alignment: an odd innermost extent allows only vec=1
    plan = make_plan(ew, np.zeros((8, 33), np.float32), np.zeros((8, 33), np.float32), device="h100")
    g = plan.groups[0]
    assert all(c["vec"] == 1 for c in P.prune(S.space_for(g, "cuda"), g, h100, top_k=100))


def test_prune_gemm_shared_memory_limit():
    from kfuse.fusion.cost import DeviceSpec  # noqa: F401
    import dataclasses
    small_gpu = dataclasses.replace(get_device_spec("h100"), shared_mem_per_block=48 * 1024)
    plan = make_plan(lambda a, b: a @ b, np.zeros((256, 256), np.float16),
                     np.zeros((256, 256), np.float16), device="h100")
    g = plan.groups[0]
    assert g.kind == "matmul"
    kept = P.prune(S.space_for(g, "cuda"), g, small_gpu, top_k=100)
    from kfuse.codegen.gemm_cuda import GemmSpec, GemmTile
    for c in kept:
        if c.kind == "gemm":
            assert GemmTile(**dict(c.params)).smem_bytes(GemmSpec("f16")) <= 48 * 1024
    assert S.CUBLAS_EPILOGUE in kept
    assert len(kept) < len(S.space_for(g, "cuda"))


def test_prune_cpu_thread_limit_and_heuristic_first():
    plan = make_plan(ew, np.zeros((64, 128), np.float32), np.zeros((64, 128), np.float32))
    g = plan.groups[0]
    heur = P.heuristic(g, "cpu")
    assert heur == TileConfig.make("cpu", variant="seq", threads=1)   # 8 Ki elements < threshold
    dropped = []
    kept = P.prune(S.cpu_space(g, max_threads=16), g, "cpu", top_k=3, keep=heur,
                   max_threads=4, dropped=dropped)
    assert kept[0] == heur and len(kept) == 3
    assert all(c["threads"] <= 4 for c in kept)
    assert any("NUMBA_NUM_THREADS" in why for _, why in dropped)
