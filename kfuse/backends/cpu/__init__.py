"""The CPU backend: Numba kernels over NumPy arrays (``codegen.cpu``, ``runtime.cpu``), products
through ``np.matmul``, machine code kept in the kernel store (``runtime.cpu_persist``), threads
tuned per shape bucket."""
from __future__ import annotations

from ...fusion.kinds import TileKind
from ...runtime.cpu_persist import CPU_TOOLS
from ..base import Backend, Feature

HOST_KINDS = ("numpy", "torch-cpu")


class CpuBackend(Backend):
    name = "cpu"
    features = frozenset({Feature.FLOAT64, Feature.MATMUL, Feature.SCATTER_ATOMICS, Feature.SCAN,
                          Feature.AUTOTUNE, Feature.COMPLEX})
    on_host = True
    stages = ("cpu",)
    source_stage = "cpu"
    tools = CPU_TOOLS
    default_device = "cpu"
    imports = ("kfuse.runtime.cpu",)
    tile_kinds = (TileKind.CPU,)                      # threads, parallel or sequential loop

    def accepts(self, kind: str | None) -> bool:
        return kind in HOST_KINDS

    def render(self, kir) -> str:
        from ...codegen import cpu
        return cpu.emit(kir)

    def _compile(self, plan, store, allow_tf32: bool):
        from ...runtime import cpu
        return cpu.compile_plan(plan, cache=store)


CPU = CpuBackend()
