"""The inline-PTX helpers the tensor-core kernels share (the generated GEMM, the attention kernel):
addresses in shared memory, 16-byte ``cp.async`` copies with their commit/wait groups, and
``ldmatrix`` of four 8x8 16-bit tiles (plain or transposed); and the ``wgmma`` kernels' shared-memory
matrix descriptor (``WGMMA_DESC_PTX``). One text, pasted into each kernel's
source after the prelude (no headers: NVRTC needs no include path)."""

ASYNC_PTX = r"""
__device__ __forceinline__ unsigned kf_smem_addr(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void kf_cp_async16(unsigned dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void kf_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void kf_cp_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N)); }
__device__ __forceinline__ void kf_ldsm_x4(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
__device__ __forceinline__ void kf_ldsm_x4_t(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
"""

# a wgmma shared-memory matrix descriptor with the 128-byte swizzle (the PTX ISA's "matrix
# descriptor" and its K-major / MN-major canonical layouts): start address, leading and stride
# byte offsets (the TMA GEMM and the sm_90a attention kernel)
WGMMA_DESC_PTX = r"""
__device__ __forceinline__ u64 kf_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (u64)((addr & 0x3FFFF) >> 4) | ((u64)(lbo >> 4) << 16) | ((u64)(sbo >> 4) << 32) | (1ull << 62);
}
"""
