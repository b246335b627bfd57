"""The inline-PTX helpers the tensor-core kernels share (the generated GEMM, the attention kernel):
addresses in shared memory, 16-byte ``cp.async`` copies with their commit/wait groups, and
``ldmatrix`` of four 8x8 16-bit tiles (plain or transposed); and the ``wgmma`` kernels' shared-memory
matrix descriptor (``WGMMA_DESC_PTX``) and product functions (:func:`wgmma_fn`). One text, pasted into each kernel's
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


def wgmma_fn(name: str, inst: str, n_acc: int, acc_t: str = "float", reg: str = "f",
             a_regs: bool = False, imm: str = "") -> str:
    """``name(d, a, db)``: one ``wgmma.mma_async.sync.aligned.<inst>`` (e.g. ``m64n128k16.f32.f16.f16``)
    adding A B into the ``n_acc`` accumulators ``d`` (``acc_t``, asm constraint ``reg``); A a
    shared-memory descriptor, or four registers of two 16-bit values (``a_regs``); B a descriptor;
    ``imm``: the instruction's immediates after scale-d (scales, transposes), with their commas."""
    regs = ", ".join(f"%{i}" for i in range(n_acc))
    outs = ", ".join(f'"+{reg}"(d[{i}])' for i in range(n_acc))
    k = n_acc
    if a_regs:
        a_sig, a_op, a_in, b = ("const unsigned* a", f"{{%{k}, %{k + 1}, %{k + 2}, %{k + 3}}}",
                                '"r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), ', k + 4)
    else:
        a_sig, a_op, a_in, b = "u64 a", f"%{k}", '"l"(a), ', k + 1
    return (f"__device__ __forceinline__ void {name}({acc_t}* d, {a_sig}, u64 db) {{\n"
            f'  asm volatile("{{\\n .reg .pred p;\\n setp.ne.b32 p, %{b + 1}, 0;\\n"\n'
            f'               "wgmma.mma_async.sync.aligned.{inst} "\n'
            f'               "{{{regs}}}, {a_op}, %{b}, p{imm};\\n}}\\n"\n'
            f"               : {outs}\n"
            f'               : {a_in}"l"(db), "r"(1));\n}}')
