"""int8 GEMMs on the tensor cores (``s8``/``u8`` operands, int32 accumulators): the mma
instruction, the tiles the autotuner and the untuned heuristic pick from, and the K-major pack.

The kernel is :mod:`kfuse.codegen.gemm_cuda`'s tensor-core kernel with one-byte elements: a
K-major tile row of 32 int8 read by ``ldmatrix`` (b16, not transposed) as 16 two-byte lanes gives
exactly the A (row) and B (col) fragments of ``mma.sync.m16n8k32.s32.s8.s8.s32``, as it gives
m16n8k16's for 16-bit operands. So both operands must be K-major in shared memory, and int8 has no
``ldmatrix.trans`` (nor a cheap byte transpose in the fragment registers). An operand stored
otherwise (a row-major B [K, N]; any layout whose rows are not 16-byte aligned) is packed K-major
first by ``kfuse_kmajor_pack`` (one pass over the operand, rows padded to 16 bytes) rather than
transposed by every block that reads it: at 8192^3 the pack moves 2 x 64 MiB (~40 us at 3 TB/s)
beside a GEMM of >= 1 ms, while a transposing stage in the kernel would redo each B tile's
transpose in every one of the M / block_m blocks reading it, with an extra shared-memory pass and
barrier a k-tile. A Linear layer's weight W [N, K] used as ``x @ W.T`` is K-major already.

Accumulation is ``mma`` without ``.satfinite``: int32 sums wrap modulo 2^32, which is what NumPy's
int32 matmul loop does (and any order of wrapping additions gives the same bits).
"""
from __future__ import annotations

from .gemm_spec import INT8, GemmTile

MMA_K = 32          # K of one m16n8k32 step, in elements (bytes)
__all__ = ["INT8", "MMA_K", "PACK_KERNEL", "default_tile", "mma_types", "search_space"]
_PTX = {"s8": "s8", "u8": "u8"}


def mma_types(a_dtype: str, b_dtype: str | None = None) -> str:
    """The type suffix of ``mma.sync.m16n8k32``: int32 accumulators, A's and B's signedness."""
    return f"s32.{_PTX[a_dtype]}.{_PTX[b_dtype or a_dtype]}.s32"


def search_space() -> list[GemmTile]:
    """int8 tiles for the autotuner: block_k 64 or 128 bytes (two or four mma steps a stage)."""
    return [GemmTile(128, 256, 64, 2, 4, 3), GemmTile(128, 128, 64, 2, 2, 4),
            GemmTile(128, 128, 64, 2, 4, 4), GemmTile(256, 128, 64, 4, 2, 3),
            GemmTile(128, 128, 128, 2, 4, 3), GemmTile(256, 128, 128, 4, 2, 3),
            GemmTile(128, 64, 64, 2, 2, 4), GemmTile(64, 64, 64, 2, 2, 4)]


def default_tile(M: int, N: int, n_sms: int = 132) -> GemmTile:
    """The largest tile that still gives about a wave of blocks (CUTLASS's sm_80 int8 default,
    128x256x64 on 8 warps of 64x64, for big products)."""
    for t in (GemmTile(128, 256, 64, 2, 4, 3), GemmTile(128, 128, 64, 2, 2, 4),
              GemmTile(128, 64, 64, 2, 2, 4)):
        if -(-M // t.block_m) * -(-N // t.block_n) >= n_sms:
            return t
    return GemmTile(64, 64, 64, 2, 2, 4)


PACK_TILE = 64

PACK_KERNEL = r"""// kfuse int8 K-major pack: Y[b, o, k] = X[b, k, o] for k < KD; the rows of Y (pitch sYo, a
// multiple of 16 bytes) are zero from KD up to the tile's end (a 64x64 byte tile through
// shared memory: reads run along o, writes along k)
typedef long long i64;
extern "C" __global__ void __launch_bounds__(256) kfuse_kmajor_pack(
    const unsigned char* __restrict__ X, unsigned char* __restrict__ Y, int KD, int OD, int KP,
    i64 sXb, i64 sXk, i64 sXo, i64 sYb, i64 sYo) {
  __shared__ unsigned char t[64][65];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int o0 = blockIdx.x * 64, k0 = blockIdx.y * 64;
  const unsigned char* Xb = X + (i64)blockIdx.z * sXb;
  unsigned char* Yb = Y + (i64)blockIdx.z * sYb;
  for (int r = ty; r < 64; r += 4) {
    const int k = k0 + r, o = o0 + tx;
    t[r][tx] = (k < KD && o < OD) ? Xb[(i64)k * sXk + (i64)o * sXo] : (unsigned char)0;
  }
  __syncthreads();
  for (int r = ty; r < 64; r += 4) {
    const int o = o0 + r, k = k0 + tx;
    if (o < OD && k < KP) Yb[(i64)o * sYo + k] = t[tx][r];
  }
}
"""
