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
        return _source(kir)[0]

    def _ptx_of(self, kir, arch: str, ptx_isa: str | None) -> str:
        self.check_kernel(kir)
        from ...codegen import nvrtc
        src, arch = _source(kir, arch)
        return nvrtc.ptx_dump(nvrtc.compile(src, arch=arch), ptx_isa)

    def _program(self, plan, store):
        from ...runtime import cuda
        return cuda.compile_plan(plan, cache=store)


def _source(kir, arch: str = "sm_90") -> tuple[str, str]:
    """A kernel's CUDA C as ``arch`` runs it, and the arch it compiles for: an attention group's
    one kernel (``wgmma`` on sm_90, for sm_90a), an int8 product's tensor-core GEMM, else the
    kernel IR's."""
    from ...codegen import cuda, gemm_cuda
    from ...codegen.gemm_wgmma import arch_for
    if kir.attention is not None:
        from ...runtime.attention import kernel_for
        src, _, compile_arch = kernel_for(kir.attention.spec, int(arch[3:].rstrip("a")))
        return src, compile_arch
    src = gemm_cuda.int8_kernel_source(kir, arch) or cuda.emit(kir)
    return src, arch_for(src, arch)


CUDA = CudaBackend()
