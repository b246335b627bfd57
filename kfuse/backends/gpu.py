"""What the GPU backends share: they run on device arrays (CuPy arrays, torch CUDA tensors), plan
for a GPU when no device is named, write PTX, and let f32 products use TF32 when asked."""
from __future__ import annotations

from ..fusion.kinds import TileKind
from .base import Backend

DEVICE_KINDS = ("cupy", "torch")


class GpuBackend(Backend):
    on_host = False
    default_device = "h100"
    # launch shapes: block, vector width, rows a block, split, storage; GEMM tiles
    tile_kinds = (TileKind.ELEMENTWISE, TileKind.REDUCTION, TileKind.ROW, TileKind.GEMM,
                  TileKind.CUBLAS_EPILOGUE)

    def accepts(self, kind: str | None) -> bool:
        return kind in DEVICE_KINDS

    def _compile(self, plan, store, allow_tf32: bool):
        prog = self._program(plan, store)
        prog.allow_tf32 = bool(allow_tf32)      # f32 products through cuBLAS only
        return prog

    def _program(self, plan, store):
        raise NotImplementedError

    def _ptx_of(self, kir, arch: str, ptx_isa: str | None) -> str:
        raise NotImplementedError

    def ptx(self, kirs, arch: str, ptx_isa: str | None) -> str:
        from ..codegen import nvrtc
        return nvrtc.one_module([self._ptx_of(k, arch, ptx_isa) for k in kirs])
