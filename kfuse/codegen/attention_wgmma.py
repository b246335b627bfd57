"""CUDA C for attention as one kernel on sm_90a: both products on ``wgmma``.

The same kernel as :mod:`.attention_cuda` (its parameters, grid, score function, causal tile
skipping, online softmax and NaN rows), for head dims that are a multiple of 64: a block of
``warpgroups`` x 64 query rows, each warp group running ``S = Q K^T`` as one ``wgmma`` of 64 rows
by ``block_n`` keys from shared-memory descriptors, and ``O += P V`` with ``P`` straight from the
score accumulators' registers (the accumulator layout of the first product is the register layout
of the second's A operand) and V read transposed. Q, K and V tiles land through ``cp.async`` in
the 128-byte-swizzled layout ``wgmma`` reads (16-byte chunk ``c`` of row ``r`` at ``c ^ (r % 8)``,
64-column blocks one after another), K and V double-buffered.
"""
from __future__ import annotations

import dataclasses

from .attention_cuda import AttentionSpec, _score_fn, shared_parts
from .cuda_async import WGMMA_DESC_PTX, wgmma_fn
from .cuda_ops import PRELUDE

ARCH = "sm_90a"


@dataclasses.dataclass(frozen=True)
class WgmmaAttentionTile:
    """``warpgroups`` x 64 query rows a block, ``block_n`` keys a K/V tile."""
    block_n: int = 128
    warpgroups: int = 2

    @property
    def block_m(self) -> int:
        return 64 * self.warpgroups

    @property
    def warps(self) -> int:
        return 4 * self.warpgroups

    def smem_bytes(self, d: int) -> int:
        return 2 * d * (self.block_m + 4 * self.block_n) + 1024

    def name(self) -> str:
        return f"wg{self.warpgroups}n{self.block_n}"


def supports(spec: AttentionSpec) -> bool:
    """Head dims the 128-byte swizzle takes whole (a row of 64 16-bit elements a block)."""
    return spec.head_dim % 64 == 0


def default_tile(d: int) -> WgmmaAttentionTile:
    """128 keys a tile up to head dim 128 (the score and output accumulators take 64 + d / 2
    registers); 64 past it."""
    return WgmmaAttentionTile(128 if d <= 128 else 64, 2)


_BODY = r"""
#define D {d}
#define BM {bm}
#define BN {bn}
#define THREADS ({warps} * 32)
#define NT (BN / 8)
#define DT (D / 8)
#define CAUSAL {causal}
#define MI 1
#define KF_S(i, t, q) s[4 * (t) + (q)]     // the score of key chunk t, slot q (wgmma's layout)
#define KF_O(i, d, q) o[4 * (d) + (q)]
#define Q_BYTES (BM * D * 2)
#define KV_BYTES (BN * D * 2)
{helpers}
{desc_ptx}
{wgmma_s}
{wgmma_o}

// rows [r0, r0 + ROWS) of a (rows x D) operand into a swizzled tile: 64-column blocks of ROWS
// rows of 128 bytes, 16-byte chunk c of row r at c ^ (r % 8); rows past lim zero-filled
template <int ROWS>
__device__ __forceinline__ void kf_load_rows(unsigned dst, const u16* src, i64 rs, int r0, int lim, int tid) {{
#pragma unroll
  for (int c = tid; c < ROWS * (D / 8); c += THREADS) {{
    const int r = c / (D / 8), col = (c % (D / 8)) * 8;
    const bool ok = r0 + r < lim;
    const unsigned at = dst + (col >> 6) * (ROWS * 128) + r * 128 + ((((col >> 3) & 7) ^ (r & 7)) << 4);
    kf_cp_async16(at, ok ? (const void*)(src + (i64)(r0 + r) * rs + col) : (const void*)src, ok ? 16 : 0);
  }}
}}

extern "C" __global__ void __launch_bounds__(THREADS, 1) kfuse_attention(
{signature}) {{
  extern __shared__ __align__(1024) unsigned char kf_raw[];
  const unsigned sQ = (kf_smem_addr(kf_raw) + 1023) & ~1023u;
  const unsigned sK = sQ + Q_BYTES, sV = sK + 2 * KV_BYTES;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2;
  const int g = lane >> 2, t4 = lane & 3;
{prologue}
  const int row0 = m0 + warp * 16 + g;     // this lane's rows: row0 + 8 h (warp group wg: rows 64 wg..)
  float o[D / 2];                           // o[4 j + 2 h + e]: row row0 + 8 h, column 8 j + 2 t4 + e
#pragma unroll
  for (int q = 0; q < D / 2; ++q) o[q] = 0.f;
  float mrow[1][2] = {{{{KF_NEG_INF, KF_NEG_INF}}}}, lrow[1][2] = {{{{0.f, 0.f}}}};
  const unsigned qa = sQ + wg * 64 * 128;

  for (int j = 0; j < tiles; ++j) {{
    if (j + 1 < tiles) {{
      const unsigned st = ((j + 1) & 1) * KV_BYTES;
      kf_load_rows<BN>(sK + st, Kb, sKn, (j + 1) * BN, N, tid);
      kf_load_rows<BN>(sV + st, Vb, sVn, (j + 1) * BN, N, tid);
    }}
    kf_cp_commit();
    kf_cp_wait<1>();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");   // cp.async writes, seen by wgmma
    __syncthreads();
    const unsigned kst = sK + (j & 1) * KV_BYTES, vst = sV + (j & 1) * KV_BYTES;
    // S = Q K^T: this warp group's 64 rows by the tile's BN keys
    float s[BN / 2];
#pragma unroll
    for (int q = 0; q < BN / 2; ++q) s[q] = 0.f;
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
      kf_wgmma_s(s, kf_desc(qa + (kk >> 2) * (BM * 128) + (kk & 3) * 32, 16, 1024),
                 kf_desc(kst + (kk >> 2) * (BN * 128) + (kk & 3) * 32, 16, 1024));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
{softmax}    // O += P V: P's accumulators, packed to 16 bits, are the A registers of the second product
    // (all packed before the fence: a register written between two wgmma serialises them)
    unsigned pa[BN / 16][4];
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r) pa[kk][r] = kf_pack2(s[8 * kk + 2 * r], s[8 * kk + 2 * r + 1]);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) kf_wgmma_o(o, pa[kk], kf_desc(vst + kk * 16 * 128, BN * 128, 1024));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    __syncthreads();
  }}
  kf_cp_wait<0>();

{epilogue}"""


def emit_attention_wgmma(spec: AttentionSpec, tile: WgmmaAttentionTile | None = None) -> str:
    """CUDA C of ``kfuse_attention`` (``attention_cuda``'s parameters and grid) on wgmma."""
    if not supports(spec):
        raise ValueError(f"wgmma attention: head dim {spec.head_dim} is not a multiple of 64")
    tile = tile or default_tile(spec.head_dim)
    head = (f"// kfuse attention {spec.key()} tile {tile.name()} (sm_90a: wgmma)\n" + PRELUDE
            + _score_fn(spec.score))
    t = f"f32.{spec.dtype}.{spec.dtype}"
    return head + _BODY.format(
        **shared_parts(spec), bm=tile.block_m, bn=tile.block_n, warps=tile.warps, desc_ptx=WGMMA_DESC_PTX,
        # S = Q K^T (both K-major descriptors); O += P V (P in registers, V transposed)
        wgmma_s=wgmma_fn("kf_wgmma_s", f"m64n{tile.block_n}k16.{t}", tile.block_n // 2, imm=", 1, 1, 0, 0"),
        wgmma_o=wgmma_fn("kf_wgmma_o", f"m64n{spec.head_dim}k16.{t}", spec.head_dim // 2, a_regs=True,
                         imm=", 1, 1, 1"))
