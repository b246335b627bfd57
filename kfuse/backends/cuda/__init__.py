"""The CUDA C backend: kernels written in CUDA C (``codegen.cuda``, the generated GEMM of
``codegen.gemm_cuda``), compiled by NVRTC to CUBINs kept in the kernel store, launched on CuPy
arrays and torch CUDA tensors (``runtime.cuda``); cuBLAS for products the GEMM does not take;
launch shapes tuned per shape bucket."""
from __future__ import annotations

from ...runtime.gpu_store import NVRTC_TOOLS
from ..base import Feature
from ..gpu import GpuBackend


class CudaBackend(GpuBackend):
    name = "cuda"
    features = frozenset(Feature)
    stages = ("cuda", "ptx")
    source_stage = "cuda"
    tools = NVRTC_TOOLS
    imports = ("kfuse.runtime.cuda",)

    def render(self, kir) -> str:
        self.check_kernel(kir)
        return _source(kir)

    def _ptx_of(self, kir, arch: str, ptx_isa: str | None) -> str:
        self.check_kernel(kir)
        from ...codegen import nvrtc
        return nvrtc.ptx_dump(nvrtc.compile(_source(kir), arch=arch), ptx_isa)

    def _program(self, plan, store):
        from ...runtime import cuda
        return cuda.compile_plan(plan, cache=store)


def _source(kir) -> str:
    """A kernel's CUDA C; an int8 product's group: the int8 tensor-core GEMM it runs."""
    from ...codegen import cuda, gemm_cuda
    return gemm_cuda.int8_kernel_source(kir) or cuda.emit(kir)


CUDA = CudaBackend()
