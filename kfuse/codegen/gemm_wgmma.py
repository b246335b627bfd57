"""CUDA C of the Hopper (sm_90a) GEMM: TMA loads, ``wgmma`` products, the epilogue in registers.

``emit_wgmma(spec, tile)`` writes ``kfuse_gemm_tma``: C[b] = epilogue(A[b] @ B[b]) for f16/bf16
operands (float32 accumulators) and int8/uint8 operands (int32 sums), A K-major, B K-major or (16-bit
only) N-major. One persistent block per SM walks the output tiles (grouped rasterisation for L2
reuse); in each, one producer warp group issues the tensor-memory-accelerator copies of A and B
tiles (``cp.async.bulk.tensor`` through tensor maps, 128-byte swizzle, zero fill past the edges)
into a ring of ``stages`` shared buffers guarded by ``mbarrier`` pairs (full: bytes landed; empty:
every consumer warp done), while two consumer warp groups run ``wgmma.mma_async`` from shared-memory
descriptors, either on alternate output tiles (ping-pong) or on the two halves of each tile's rows
(:class:`WgmmaTile`). The producer runs ahead into the next tile while the consumers apply the epilogue (:mod:`.gemm_render`'s ``kf_epi``, the same one the ``mma.sync``
kernel calls) to their accumulators and store once.

Kernel parameters: ``tmA, tmB`` (``CUtensorMap`` by value, 3-D: A (K, M, batch), B (K, N, batch)
K-major or (N, K, batch) N-major), ``C, M, N, K, batch, a_bat, b_bat`` (whether A/B step with the
batch), ``sCb, sCm`` (elements), then the epilogue tail of :mod:`.gemm_cuda`. The runtime makes the
tensor maps (:mod:`kfuse.runtime.gemm_tma`) with the box sizes :meth:`WgmmaTile.boxes` gives.
"""
from __future__ import annotations

import dataclasses

from .cuda_async import WGMMA_DESC_PTX, wgmma_fn
from .cuda_ops import PRELUDE
from .gemm_render import acc_ctype, epi_call_args, epilogue_fn, epilogue_params, pair_store, result_ctype, store, stype
from .gemm_spec import GemmSpec

ARCH = "sm_90a"                       # wgmma and setmaxnreg exist only on the "a" target
SWIZZLE = 128                         # bytes: a tile row along its unit-stride dim
_WG_TYPES = ("f16", "bf16", "s8", "u8")       # operand types (their PTX names too)


@dataclasses.dataclass(frozen=True)
class WgmmaTile:
    """Each consumer warp group computes ``wm`` x 64 rows by ``block_n`` columns (``wm * block_n / 2``
    accumulators a thread, at most 128). ``pingpong``: the two consumers take alternate output tiles
    (of ``wm * 64`` rows), so one's epilogue runs while the other's products do; else they split
    the rows of one tile (``2 * wm * 64`` rows). K advances one 128-byte swizzle row a stage (64
    16-bit or 128 int8 elements); ``stages`` buffers in the ring."""
    block_n: int = 128
    stages: int = 6
    wm: int = 2
    pingpong: bool = True
    group_m: int = 8

    @property
    def block_m(self) -> int:
        return 64 * self.wm * (1 if self.pingpong else 2)

    def block_k(self, spec: GemmSpec) -> int:
        return SWIZZLE // spec.elem_bytes

    def smem_bytes(self, spec: GemmSpec) -> int:
        stage = (self.block_m + self.block_n) * SWIZZLE
        return self.stages * stage + 1024 + 8 * (2 * self.stages + 2)      # + alignment, barriers

    def boxes(self, spec: GemmSpec) -> tuple[tuple[int, int], tuple[int, int]]:
        """TMA box (inner, outer) of A and of B, in elements."""
        bk = self.block_k(spec)
        b = (bk, self.block_n) if spec.b_kmajor else (SWIZZLE // spec.elem_bytes, bk)
        return (bk, self.block_m), b

    def check(self, spec: GemmSpec) -> None:
        if not supports(spec):
            raise ValueError(f"wgmma GEMM cannot take {spec.key()}")
        if (self.block_n not in (64, 128, 192, 256) or self.stages < 2 or self.wm not in (1, 2)
                or self.wm * self.block_n > 256):
            raise ValueError(f"bad wgmma tile {self}")
        if self.smem_bytes(spec) > 227 * 1024:
            raise ValueError(f"wgmma tile {self} needs {self.smem_bytes(spec)} B of shared memory")

    def name(self) -> str:
        return (f"tma{self.block_m}x{self.block_n}_s{self.stages}{'_pp' if self.pingpong else ''}"
                f"{f'_g{self.group_m}' if self.group_m != 8 else ''}")


def supports(spec: GemmSpec) -> bool:
    """Whether the spec's layout is one this kernel loads: 16-byte-aligned operands (what TMA
    needs), A K-major, B K-major (int8: K-major only)."""
    return (spec.dtype in _WG_TYPES and spec.aligned and spec.a_kmajor
            and (spec.b_kmajor or not spec.int8))


# 16 tile rows a raster group for ping-pong tiles: 0.5-10% faster than 8 on every shape measured
# (H200, 2026-11-28: 4096^3, 8192^3, 16x2048^3, f16 and bf16)
SEARCH = (WgmmaTile(128, 6, 2, True, 16), WgmmaTile(256, 5, 1, True), WgmmaTile(256, 4, 1, False),
          WgmmaTile(128, 6, 1, False))


def default_tile(spec: GemmSpec, M: int, N: int, batch: int = 1, n_sms: int = 132) -> WgmmaTile:
    """int8: 128x256 tiles split by rows (measured fastest at 8192^3, H200). 16-bit: ping-pong
    128x128 tiles while each block gets two or more; else 128x128 split by rows (both consumers
    busy on a block's one tile)."""
    if spec.int8:
        return SEARCH[2]
    tiles = batch * -(-M // 128) * -(-N // 128)
    return SEARCH[0] if tiles >= 2 * n_sms else SEARCH[3]


def arch_for(source: str, arch: str) -> str:
    """The arch to compile a GEMM ``source`` for: this kernel's sm_90a, else ``arch``."""
    return ARCH if "kfuse_gemm_tma(" in source else arch


_PTX = r"""
struct __align__(64) KfTmap { unsigned long long v[16]; };
__device__ __forceinline__ unsigned kf_smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void kf_bar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count));
}
__device__ __forceinline__ void kf_bar_wait(unsigned bar, unsigned phase) {
  unsigned done = 0;
  while (!done)
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(bar), "r"(phase) : "memory");
}
__device__ __forceinline__ void kf_bar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void kf_bar_expect(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void kf_tma_3d(unsigned dst, const KfTmap* map, unsigned bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5}], [%2];\n"
               :: "r"(dst), "l"((unsigned long long)map), "r"(bar), "r"(c0), "r"(c1), "r"(c2) : "memory");
}
"""

_BODY = r"""
#define WM {wm}
#define PINGPONG {pingpong}
#define BM {bm}
#define BN {bn}
#define BK {bk}
#define STAGES {stages}
#define GROUP_M {group_m}
#define B_KMAJOR {b_kmajor}
#define A_STAGE (BM * {swz})
#define B_STAGE (BN * {swz})

{wgmma_fn}

extern "C" __global__ void __launch_bounds__(384, 1) kfuse_gemm_tma(
    const __grid_constant__ KfTmap tmA, const __grid_constant__ KfTmap tmB, {out_t}* __restrict__ C,
    int M, int N, int K, int batch, int a_bat, int b_bat, i64 sCb, i64 sCm{ep_params}) {{
  extern __shared__ __align__(1024) unsigned char kf_raw[];
  const unsigned base = (kf_smem_addr(kf_raw) + 1023) & ~1023u;
  const unsigned sA = base, sB = base + STAGES * A_STAGE, bars = sB + STAGES * B_STAGE;
  // full[s] at bars + 8 s (the bytes landed), empty[s] at bars + 8 (STAGES + s) (one arrive per
  // consumer warp that reads the stage: 4, or 8 when the two consumers split a tile); done[c] at
  // bars + 8 (2 STAGES + c): consumer c's warps finished a tile's products (ping-pong turns)
  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  if (threadIdx.x == 0) {{
    for (int s = 0; s < STAGES; ++s) {{ kf_bar_init(bars + 8 * s, 1); kf_bar_init(bars + 8 * (STAGES + s), PINGPONG ? 4 : 8); }}
    kf_bar_init(bars + 16 * STAGES, 4);
    kf_bar_init(bars + 16 * STAGES + 8, 4);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }}
  __syncthreads();
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, per_batch = tiles_m * tiles_n;
  const int total = per_batch * batch, KT = (K + BK - 1) / BK;
  auto tile_of = [&](int id, int& b, int& m0, int& n0) {{
    b = id / per_batch;
    const int pid = id % per_batch, per_group = GROUP_M * tiles_n, first_m = (pid / per_group) * GROUP_M;
    const int gsz = min(tiles_m - first_m, GROUP_M);
    m0 = (first_m + (pid % per_group) % gsz) * BM;
    n0 = ((pid % per_group) / gsz) * BN;
  }};
  if (wg == 0) {{                                   // producer: one thread issues every copy
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (t != 0) return;
    int it = 0;
    for (int id = blockIdx.x; id < total; id += gridDim.x) {{
      int b, m0, n0;
      tile_of(id, b, m0, n0);
      for (int kt = 0; kt < KT; ++kt, ++it) {{
        const int s = it % STAGES;
        kf_bar_wait(bars + 8 * (STAGES + s), ((it / STAGES) & 1) ^ 1);
        const unsigned full = bars + 8 * s;
        kf_bar_expect(full, (BM + BN) * {swz});
        kf_tma_3d(sA + s * A_STAGE, &tmA, full, kt * BK, m0, a_bat ? b : 0);
#if B_KMAJOR
        kf_tma_3d(sB + s * B_STAGE, &tmB, full, kt * BK, n0, b_bat ? b : 0);
#else
#pragma unroll
        for (int j = 0; j < BN / 64; ++j)             // 64-column boxes, BK rows each
          kf_tma_3d(sB + s * B_STAGE + j * (BK * {swz}), &tmB, full, n0 + 64 * j, kt * BK, b_bat ? b : 0);
#endif
      }}
    }}
    return;
  }}
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
  // consumer c: the tiles j = c, c + 2, ... of this block (ping-pong) or rows WM 64 c.. of every
  // tile; tile j's stages are the ring's items j KT .. j KT + KT - 1 in both schedules
  const int c = wg - 1, warp = t / 32, lane = t % 32, r0 = PINGPONG ? 0 : c * WM * 64;
  {acc_t} d[WM][BN / 2];
  for (int j = PINGPONG ? c : 0;; j += PINGPONG ? 2 : 1) {{
    const int id = blockIdx.x + j * gridDim.x;
    if (id >= total) break;
    int b, m0, n0;
    tile_of(id, b, m0, n0);
#pragma unroll
    for (int mi = 0; mi < WM; ++mi)
#pragma unroll
      for (int q = 0; q < BN / 2; ++q) d[mi][q] = 0;
    int it = j * KT;
#if PINGPONG
    // wait for the other consumer's products of tile j - 1: every earlier stage is then released,
    // so no ring slot is two phases behind this tile's (a parity wait cannot alias)
    if (j > 0) kf_bar_wait(bars + 16 * STAGES + 8 * (1 - c), ((j - 1) / 2) & 1);
#endif
    // one group of products stays in flight: a stage is released when the next one's are issued
    for (int kt = 0; kt < KT; ++kt, ++it) {{
      const int s = it % STAGES;
      kf_bar_wait(bars + 8 * s, (it / STAGES) & 1);
      const unsigned a0 = sA + s * A_STAGE + r0 * {swz}, b0 = sB + s * B_STAGE;
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
      for (int kk = 0; kk < BK / {mk}; ++kk) {{
#if B_KMAJOR
        const u64 db = kf_desc(b0 + kk * 32, 16, 1024);
#else
        const u64 db = kf_desc(b0 + kk * {mk} * {swz}, BK * {swz}, 1024);
#endif
#pragma unroll
        for (int mi = 0; mi < WM; ++mi) kf_wgmma(d[mi], kf_desc(a0 + mi * 64 * {swz} + kk * 32, 16, 1024), db);
      }}
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
      if (kt > 0 && lane == 0) kf_bar_arrive(bars + 8 * (STAGES + (it - 1) % STAGES));
    }}
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    if (KT > 0 && lane == 0) kf_bar_arrive(bars + 8 * (STAGES + (it - 1) % STAGES));
#if PINGPONG
    if (lane == 0) kf_bar_arrive(bars + 16 * STAGES + 8 * c);
#endif
    // the epilogue on the accumulators: d[mi][4 q + 2 h + e] is row 64 mi + 16 warp + lane / 4 + 8 h,
    // column 8 q + 2 (lane % 4) + e of this consumer's block
    {out_t}* Cb = C + (i64)b * sCb;
    const bool pair_ok = (sCm % 2) == 0 && (sCb % 2) == 0;
    const i64 bz = b;
#pragma unroll
    for (int mi = 0; mi < WM; ++mi)
#pragma unroll
    for (int q = 0; q < BN / 8; ++q)
#pragma unroll
      for (int h = 0; h < 2; ++h) {{
        const int m = m0 + r0 + mi * 64 + warp * 16 + lane / 4 + 8 * h, n = n0 + 8 * q + 2 * (lane % 4);
        if (m >= M || n >= N) continue;
        {out_t}* dst = Cb + (i64)m * sCm + n;
        const {res_t} y0 = kf_epi(d[mi][4 * q + 2 * h], bz, m, n{epi_args});
        if (n + 1 < N) {{
          const {res_t} y1 = kf_epi(d[mi][4 * q + 2 * h + 1], bz, m, n + 1{epi_args});
          if (pair_ok) {{
{pair_store}
          }} else {{ dst[0] = {store_y0}; dst[1] = {store_y1}; }}
        }} else {{
          dst[0] = {store_y0};
        }}
      }}
  }}
}}
"""


def _wgmma_fn(spec: GemmSpec, bn: int) -> str:
    """``kf_wgmma(d, descA, descB)``: d (64 x bn over the warp group) += A (64 x K) B (K x bn)."""
    if spec.int8:
        inst = f"m64n{bn}k32.s32.{spec.dtype}.{spec.b_dtype or spec.dtype}"
        return wgmma_fn("kf_wgmma", inst, bn // 2, "int", "r")
    trans_b = 0 if spec.b_kmajor else 1                 # scale-a, scale-b, trans-a, trans-b
    return wgmma_fn("kf_wgmma", f"m64n{bn}k16.f32.{spec.dtype}.{spec.dtype}", bn // 2,
                    imm=f", 1, 1, 0, {trans_b}")


def emit_wgmma(spec: GemmSpec, tile: WgmmaTile | None = None) -> str:
    """CUDA C of ``kfuse_gemm_tma`` for ``spec`` and ``tile`` (parameters in the module docstring)."""
    tile = tile or WgmmaTile()
    tile.check(spec)
    ep = spec.epilogue
    if spec.int8 != ep.int_product:
        raise ValueError(f"GEMM {spec.dtype} needs {'an integer' if spec.int8 else 'a float'} product")
    head = f"// kfuse GEMM {spec.key()} tile {tile.name()} (sm_90a: TMA + wgmma)\n" + PRELUDE + epilogue_fn(ep)
    return head + _PTX + WGMMA_DESC_PTX + _BODY.format(
        wm=tile.wm, pingpong=int(tile.pingpong), bm=tile.block_m, bn=tile.block_n, bk=tile.block_k(spec), stages=tile.stages,
        group_m=tile.group_m, b_kmajor=int(spec.b_kmajor), swz=SWIZZLE,
        mk=32 // spec.elem_bytes, wgmma_fn=_wgmma_fn(spec, tile.block_n),
        acc_t=acc_ctype(ep), res_t=result_ctype(ep), out_t=stype(spec.out_dtype),
        ep_params=epilogue_params(ep), epi_args=epi_call_args(ep),
        store_y0=store("y0", ep), store_y1=store("y1", ep), pair_store=pair_store(ep))
