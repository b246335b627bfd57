"""The Numba-CUDA backend: kernels written as numba.cuda Python (``codegen.numba_cuda``),
compiled to PTX by libNVVM (kept in the kernel store), launched through CuPy
(``runtime.numba_cuda``). It has no products and no compare-and-swap scatter combines: a plan
with a matmul, or a ``ufunc.at`` no numba atomic computes exactly, is refused in the plan."""
from __future__ import annotations

from ...runtime.gpu_store import NUMBA_CUDA_TOOLS
from ..base import Feature
from ..gpu import GpuBackend


class NumbaCudaBackend(GpuBackend):
    name = "numba-cuda"
    features = frozenset({Feature.FLOAT64, Feature.SCAN, Feature.COMPLEX})
    stages = ("numba", "ptx")
    source_stage = "numba"
    tools = NUMBA_CUDA_TOOLS
    imports = ("kfuse.runtime.numba_cuda", "numba.cuda")

    def check_available(self) -> None:
        from ...codegen.numba_cuda import import_numba_cuda
        import_numba_cuda()     # one clear DeviceError when numba-cuda can't import (NumPy >= 2.5)

    def render(self, kir) -> str:
        self.check_kernel(kir)
        from ...codegen import numba_cuda
        return numba_cuda.emit(kir)

    def _ptx_of(self, kir, arch: str, ptx_isa: str | None) -> str:
        self.check_kernel(kir)
        from ...codegen import numba_cuda, nvrtc
        ptx = numba_cuda.compile_ptx(numba_cuda.emit(kir), arch=arch)
        return nvrtc.with_ptx_isa(ptx, ptx_isa) if ptx_isa else ptx

    def unsupported(self, plan) -> list[tuple]:
        from ...runtime.numba_cuda import unsupported
        return unsupported(plan)

    def _program(self, plan, store):
        from ...runtime import numba_cuda
        return numba_cuda.compile_plan(plan, cache=store)


NUMBA_CUDA = NumbaCudaBackend()
