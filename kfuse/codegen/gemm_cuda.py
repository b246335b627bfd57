"""CUDA C for GEMMs with a fused elementwise epilogue (the "matmul" group kind).

``emit_gemm(spec, tile)`` writes one kernel ``kfuse_gemm``: C[b] = epilogue(A[b] @ B[b]) with
f16/bf16 operands on tensor cores (``mma.sync.m16n8k16`` through inline PTX, ``ldmatrix`` from
padded shared memory, ``cp.async`` multi-stage pipelining, f32 accumulation), int8/uint8 operands
on the same pipeline with byte tiles and ``mma.sync.m16n8k32`` into int32 sums (:mod:`.gemm_int8`),
or f32 operands on plain FMA. The epilogue runs on the accumulator registers before the single store.
``emit_epilogue_kernel(spec)`` writes the second candidate's half: one elementwise kernel applying
the same epilogue to a GEMM result computed by cuBLAS.

Sizes and strides are kernel parameters (nothing size-dependent is baked in), so one source serves
every shape with the spec's layout/alignment class. The kernel parameter list, in order:
``A, B, C, M, N, K, sAb, sAm, sAk, sBb, sBk, sBn, sCb, sCm`` then per epilogue input
``ptr, sb, sm, sn`` then the epilogue's f32 run-time scalars (strides in elements, int64; C's
column stride is 1). The epilogue kernel takes ``X, C, M, N, batch, sXb, sXm, sCb, sCm`` + the same
epilogue tail (:mod:`.gemm_epi_kernel`). No headers are included (conversions are inline PTX), so
NVRTC needs no include path. Every source starts with the prelude every CUDA C kernel has
(``cuda_ops.PRELUDE``); the epilogue is the matmul group's kernel-IR statements
(:mod:`kfuse.codegen.gemm_spec`), rendered as any kernel's are (:mod:`.gemm_render`).
"""
from __future__ import annotations

import math

from . import gemm_int8
from . import kernel_ir as K
from .cuda_async import ASYNC_PTX
from .cuda_ops import PRELUDE, load_expr
from .gemm_epi_kernel import emit_epilogue_kernel
from .gemm_render import (acc_ctype, epi_call_args, epilogue_fn, epilogue_params, pair_store, result_ctype, store,
                          stype)
from .gemm_spec import DTYPES, NP_DTYPE, EpInput, GemmEpilogue, GemmSpec, GemmTile

__all__ = ["DTYPES", "FMA_TILE", "EpInput", "GemmEpilogue", "GemmSpec", "GemmTile", "default_tile",
           "emit_epilogue_kernel", "emit_gemm", "gemm_search_space", "int8_kernel_source"]


FMA_TILE = GemmTile(64, 64, 16, 4, 2, 2)   # f32: 256 threads, 4x4 outputs each


def gemm_search_space(dtype: str = "f16") -> list[GemmTile]:
    """Candidate tiles for the autotuner (every one passes ``check`` for aligned layouts)."""
    if dtype == "f32":
        return [FMA_TILE]
    if dtype in gemm_int8.INT8:
        return gemm_int8.search_space()
    return [GemmTile(128, 128, 32, 2, 2, 4), GemmTile(128, 128, 32, 2, 4, 4),
            GemmTile(128, 256, 32, 2, 4, 3), GemmTile(256, 128, 32, 4, 2, 3),
            GemmTile(128, 128, 64, 2, 4, 3), GemmTile(256, 128, 64, 4, 2, 3),
            GemmTile(128, 64, 32, 2, 2, 4), GemmTile(64, 64, 32, 2, 2, 4)]


def default_tile(M: int, N: int, K: int, dtype: str = "f16", n_sms: int = 132,
                 aligned: bool = True) -> GemmTile:
    """A heuristic tile: the largest tile that still puts ~one wave of blocks on the SMs.

    A layout that is not ``aligned`` stages its loads through registers, which a 128x128 tile of
    four warps (128 accumulators a thread) cannot also hold: ptxas spills there (4 bytes, NVRTC
    13.0 and 13.5), so those layouts take the same tile on eight warps."""
    if dtype == "f32":
        return FMA_TILE
    if dtype in gemm_int8.INT8:
        return gemm_int8.default_tile(M, N, n_sms)
    square = GemmTile(128, 128, 32, 2, 2, 4) if aligned else GemmTile(128, 128, 32, 2, 4, 4)
    for t in (GemmTile(128, 256, 32, 2, 4, 3), square, GemmTile(128, 64, 32, 2, 2, 4)):
        if math.ceil(M / t.block_m) * math.ceil(N / t.block_n) >= n_sms:
            return t
    return GemmTile(64, 64, 32, 2, 2, 4)


# ---------------------------------------------------------------- tensor-core GEMM
_TC_BODY = r"""
#define BM {bm}
#define BN {bn}
#define BK {bk}
#define WARPS_M {wm}
#define WARPS_N {wn}
#define STAGES {stages}
#define GROUP_M {group_m}
#define THREADS (WARPS_M * WARPS_N * 32)
#define WTM (BM / WARPS_M)
#define WTN (BN / WARPS_N)
#define MI (WTM / 16)
#define NI (WTN / 8)
#define A_KMAJOR {a_kmajor}
#define B_KMAJOR {b_kmajor}
#define EB {eb}
#define CH (16 / EB)
#define MK {mk}
// EB bytes an element, CH elements a 16-byte chunk, MK the mma's K (int8: a K-major row of 32
// bytes is 16 b16 lanes to ldmatrix, the m16n8k32 fragments exactly)
// shared tiles, padded by 16 bytes per row (ldmatrix/cp.async conflict-free); rows = outer dim
#define A_ROWS (A_KMAJOR ? BM : BK)
#define A_COLS (A_KMAJOR ? BK : BM)
#define B_ROWS (B_KMAJOR ? BN : BK)
#define B_COLS (B_KMAJOR ? BK : BN)
#define A_LD (A_COLS + CH)
#define B_LD (B_COLS + CH)
#define A_TILE (A_ROWS * A_LD)
#define B_TILE (B_ROWS * B_LD)

{async_ptx}
{mma_fn}

// One operand tile: ROWS x COLS (COLS = unit-stride dim in shared memory) from global element
// (r0 + r, c0 + c) = base[(r0 + r) * rs + (c0 + c) * cs], zero outside [0, rlim) x [0, clim).
template <int ROWS, int COLS, int LD>
struct KfTileLoader {{
  static constexpr int CPR = COLS / CH;                        // 16-byte chunks per row
  static constexpr int ITERS = ROWS * CPR / THREADS;           // THREADS % CPR == 0 (checked)
  static constexpr int RSTEP = THREADS / CPR;                  // rows between a thread's chunks
  const {el_t}* src[ITERS]; unsigned ok; int r_first, c_first;
  __device__ __forceinline__ void init(const {el_t}* base, int r0, int rlim, i64 rs, int c0, i64 cs, int tid) {{
    r_first = tid / CPR; c_first = (tid % CPR) * CH; ok = 0;
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {{
      const int r = r_first + i * RSTEP;
      ok |= (r0 + r < rlim) ? (1u << i) : 0u;
      src[i] = base + (i64)(r0 + r) * rs + (i64)(c0 + c_first) * cs;
    }}
  }}
  __device__ __forceinline__ unsigned dst(int i) const {{ return (unsigned)(((r_first + i * RSTEP) * LD + c_first) * EB); }}
}};

extern "C" __global__ void __launch_bounds__(THREADS) kfuse_gemm(
    const {el_t}* __restrict__ A, const {el_t}* __restrict__ B, {out_t}* __restrict__ C,
    int M, int N, int K, i64 sAb, i64 sAm, i64 sAk, i64 sBb, i64 sBk, i64 sBn, i64 sCb, i64 sCm{ep_params}) {{
  extern __shared__ __align__(128) unsigned char kf_smem[];
  {el_t}* sA = ({el_t}*)kf_smem;
  {el_t}* sB = sA + STAGES * A_TILE;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
  // grouped rasterisation of the (tiles_m x tiles_n) block grid for L2 reuse
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int pid = blockIdx.x, per_group = GROUP_M * tiles_n, first_m = (pid / per_group) * GROUP_M;
  const int gsz = min(tiles_m - first_m, GROUP_M);
  const int m0 = (first_m + (pid % per_group) % gsz) * BM, n0 = ((pid % per_group) / gsz) * BN;
  const i64 bz = blockIdx.z;
  const {el_t}* Ab = A + bz * sAb;
  const {el_t}* Bb = B + bz * sBb;
  const unsigned sA0 = kf_smem_addr(sA), sB0 = kf_smem_addr(sB);

  // A: rows = M (kmajor) or K; B: rows = N (kmajor) or K
  KfTileLoader<A_ROWS, A_COLS, A_LD> la;
  KfTileLoader<B_ROWS, B_COLS, B_LD> lb;
#if A_KMAJOR
  la.init(Ab, m0, M, sAm, 0, sAk, tid);
#else
  la.init(Ab, 0, 1 << 30, sAk, m0, sAm, tid);
#endif
#if B_KMAJOR
  lb.init(Bb, n0, N, sBn, 0, sBk, tid);
#else
  lb.init(Bb, 0, 1 << 30, sBk, n0, sBn, tid);
#endif
  const int KT = (K + BK - 1) / BK;

  auto load_stage = [&](int stage, int kt) {{
    const int k0 = kt * BK;
    const unsigned da = sA0 + stage * (A_TILE * EB), db = sB0 + stage * (B_TILE * EB);
{load_a}
{load_b}
  }};

  {acc_t} acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[i][j][q] = 0;

  // per-lane ldmatrix offsets (bytes) within a stage
  const int li = lane >> 3, lr = lane & 7;
#if A_KMAJOR
  const unsigned a_off = ((warp_m * WTM + (lane & 15)) * A_LD + (lane >> 4) * CH) * EB;
#else
  const unsigned a_off = ((lr + (li >> 1) * 8) * A_LD + warp_m * WTM + (li & 1) * 8) * EB;
#endif
#if B_KMAJOR
  const unsigned b_off = ((warp_n * WTN + lr + (li >> 1) * 8) * B_LD + (li & 1) * CH) * EB;
#else
  const unsigned b_off = ((lr + (li & 1) * 8) * B_LD + warp_n * WTN + (li >> 1) * 8) * EB;
#endif

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {{
    if (s < KT) load_stage(s, s);
    kf_cp_commit();
  }}
  // fragments are double-buffered in registers: step kk+1's ldmatrix is issued before step kk's
  // mma; the wait for the next stage happens at the last kk of a tile (CUTLASS multistage order)
  unsigned af[2][MI][4], bfr[2][NI][2];
  auto load_frags = [&](int buf, int stage, int kk) {{
    const unsigned abase = sA0 + stage * (A_TILE * EB) + a_off, bbase = sB0 + stage * (B_TILE * EB) + b_off;
#pragma unroll
    for (int i = 0; i < MI; ++i) {{
#if A_KMAJOR
      kf_ldsm_x4(abase + (i * 16 * A_LD + kk * MK) * EB, af[buf][i][0], af[buf][i][1], af[buf][i][2], af[buf][i][3]);
#else
      kf_ldsm_x4_t(abase + (kk * MK * A_LD + i * 16) * EB, af[buf][i][0], af[buf][i][1], af[buf][i][2], af[buf][i][3]);
#endif
    }}
#pragma unroll
    for (int p = 0; p < NI / 2; ++p) {{
#if B_KMAJOR
      kf_ldsm_x4(bbase + (p * 16 * B_LD + kk * MK) * EB, bfr[buf][2 * p][0], bfr[buf][2 * p][1], bfr[buf][2 * p + 1][0], bfr[buf][2 * p + 1][1]);
#else
      kf_ldsm_x4_t(bbase + (kk * MK * B_LD + p * 16) * EB, bfr[buf][2 * p][0], bfr[buf][2 * p][1], bfr[buf][2 * p + 1][0], bfr[buf][2 * p + 1][1]);
#endif
    }}
  }};
  constexpr int KK = BK / MK;
  kf_cp_wait<STAGES - 2>();
  __syncthreads();
  int rd = 0, wr = STAGES - 1;
  load_frags(0, 0, 0);
  for (int kt = 0; kt < KT; ++kt) {{
#pragma unroll
    for (int kk = 0; kk < KK; ++kk) {{
      if (kk == KK - 1) {{
        kf_cp_wait<STAGES - 2>();
        __syncthreads();
        rd = (rd + 1 == STAGES) ? 0 : rd + 1;
      }}
      load_frags((kk + 1) & 1, rd, (kk + 1) % KK);
      if (kk == 0) {{
        const int nk = kt + STAGES - 1;
        if (nk < KT) load_stage(wr, nk);
        kf_cp_commit();
        wr = (wr + 1 == STAGES) ? 0 : wr + 1;
      }}
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) kf_mma(acc[i][j], af[kk & 1][i], bfr[kk & 1][j]);
    }}
  }}
  kf_cp_wait<0>();

  // fused epilogue on the accumulators, then the single store
  {out_t}* Cb = C + bz * sCb;
  const bool pair_ok = (sCm % 2) == 0 && (sCb % 2) == 0;
  const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {{
        const int m = m0 + warp_m * WTM + i * 16 + g + h * 8;
        const int n = n0 + warp_n * WTN + j * 8 + t4 * 2;
        if (m >= M || n >= N) continue;
        {out_t}* dst = Cb + (i64)m * sCm + n;
        const {res_t} y0 = kf_epi(acc[i][j][2 * h], bz, m, n{epi_args});
        if (n + 1 < N) {{
          const {res_t} y1 = kf_epi(acc[i][j][2 * h + 1], bz, m, n + 1{epi_args});
          if (pair_ok) {{
{pair_store}
          }} else {{ dst[0] = {store_y0}; dst[1] = {store_y1}; }}
        }} else {{
          dst[0] = {store_y0};
        }}
      }}
}}
"""

_LOAD_ASYNC = r"""#pragma unroll
    for (int i = 0; i < {L}.ITERS; ++i) {{
      const int bytes = {bytes};
      kf_cp_async16(d{x} + {L}.dst(i), bytes > 0 ? (const void*)({L}.src[i] + (i64)k0 * {kstride}) : (const void*){base}, bytes);
    }}"""

_LOAD_GENERIC = r"""#pragma unroll 4
    for (int e = tid; e < {rows} * {cols}; e += THREADS) {{
      const int r = e / {cols}, c = e % {cols};
      const int gr = {r0} + r, gc = {c0} + c;
      {el_t} v = 0;
      if (gr < {rlim} && gc < {clim}) v = {base}[(i64)gr * {rs} + (i64)gc * {cs}];
      (({tile}) + stage * {tsize})[r * {ld} + c] = v;
    }}"""


def _loader(spec: GemmSpec, which: str) -> str:
    kmajor = spec.a_kmajor if which == "a" else spec.b_kmajor
    L, X = ("la", "A") if which == "a" else ("lb", "B")
    base = X + "b"
    other, olim = (("m0", "M") if which == "a" else ("n0", "N"))
    so, sk = ("sAm", "sAk") if which == "a" else ("sBn", "sBk")
    if spec.aligned:
        if kmajor:   # columns = K: the k edge cuts a chunk
            bytes_ = f"(({L}.ok >> i) & 1) ? max(0, min(16, (K - k0 - {L}.c_first) * EB)) : 0"
            kstride = "1"
        else:        # rows = K: the M/N edge cuts a chunk
            bytes_ = (f"(k0 + {L}.r_first + i * {L}.RSTEP < K) ? "
                      f"max(0, min(16, ({olim} - {other} - {L}.c_first) * EB)) : 0")
            kstride = sk
        return _LOAD_ASYNC.format(L=L, kstride=kstride, bytes=bytes_, x=which, base=X)
    if kmajor:
        r0, rlim, rs, c0, clim, cs = other, olim, so, "k0", "K", sk
    else:
        r0, rlim, rs, c0, clim, cs = "k0", "K", sk, other, olim, so
    return _LOAD_GENERIC.format(el_t=stype(spec.dtype), rows=f"{X}_ROWS", cols=f"{X}_COLS", r0=r0, rlim=rlim, rs=rs, c0=c0,
                                clim=clim, cs=cs, base=base, tile="s" + X, tsize=f"{X}_TILE",
                                ld=f"{X}_LD")


def _mma_fn(spec: GemmSpec) -> str:
    """``kf_mma(d, a, b)``: d += A (16 x MK, row) x B (MK x 8, col) on the accumulators."""
    if spec.int8:
        shape, types, acc, reg = f"m16n8k{gemm_int8.MMA_K}", gemm_int8.mma_types(spec.dtype, spec.b_dtype), "int", "r"
    else:
        shape, types, acc, reg = "m16n8k16", f"f32.{spec.dtype}.{spec.dtype}.f32", "float", "f"
    return (
        f"__device__ __forceinline__ void kf_mma({acc}* d, const unsigned* a, const unsigned* b) {{\n"
        f'  asm volatile("mma.sync.aligned.{shape}.row.col.{types} "\n'
        '               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n"\n'
        f'               : "+{reg}"(d[0]), "+{reg}"(d[1]), "+{reg}"(d[2]), "+{reg}"(d[3])\n'
        '               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));\n'
        "}")


def emit_gemm(spec: GemmSpec, tile: GemmTile | None = None) -> str:
    """CUDA C of ``kfuse_gemm`` for ``spec`` and ``tile`` (see the module docstring for params)."""
    if spec.dtype not in DTYPES:
        raise ValueError(f"GEMM dtype {spec.dtype!r} not in {DTYPES}")
    ep = spec.epilogue
    if spec.int8 != ep.int_product:
        raise ValueError(f"GEMM {spec.dtype} needs {'an integer' if spec.int8 else 'a float'} product, "
                         f"not {ep.product_dtype}")
    if spec.int8 and not (spec.a_kmajor and spec.b_kmajor and spec.aligned):
        raise ValueError("int8 GEMM: operands must be K-major and aligned (the runtime packs them)")
    head = f"// kfuse GEMM {spec.key()} tile {(tile or FMA_TILE).name()}\n" + PRELUDE + epilogue_fn(ep)
    if not spec.tensor_core:
        return head + _emit_fma(spec, tile if tile and tile == FMA_TILE else FMA_TILE)
    tile = tile or GemmTile()
    tile.check(spec)
    body = _TC_BODY.format(async_ptx=ASYNC_PTX, 
        bm=tile.block_m, bn=tile.block_n, bk=tile.block_k, wm=tile.warps_m, wn=tile.warps_n,
        stages=tile.stages, group_m=tile.group_m, a_kmajor=int(spec.a_kmajor),
        b_kmajor=int(spec.b_kmajor), eb=spec.elem_bytes, mk=gemm_int8.MMA_K if spec.int8 else 16,
        mma_fn=_mma_fn(spec), el_t=stype(spec.dtype) if spec.int8 else "u16", acc_t=acc_ctype(ep),
        res_t=result_ctype(ep), out_t=stype(spec.out_dtype),
        store_y0=store("y0", ep), store_y1=store("y1", ep),
        ep_params=epilogue_params(ep), epi_args=epi_call_args(ep),
        load_a=_loader(spec, "a"), load_b=_loader(spec, "b"), pair_store=pair_store(ep))
    return head + body


_FMA_BODY = r"""
#define FBM 64
#define FBN 64
#define FBK 16
extern "C" __global__ void __launch_bounds__(256) kfuse_gemm(
    const {in_t}* __restrict__ A, const {in_t}* __restrict__ B, {out_t}* __restrict__ C,
    int M, int N, int K, i64 sAb, i64 sAm, i64 sAk, i64 sBb, i64 sBk, i64 sBn, i64 sCb, i64 sCm{ep_params}) {{
  __shared__ float As[FBK][FBM + 4];
  __shared__ float Bs[FBK][FBN + 4];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int tiles_n = (N + FBN - 1) / FBN;
  const int m0 = (blockIdx.x / tiles_n) * FBM, n0 = (blockIdx.x % tiles_n) * FBN;
  const i64 bz = blockIdx.z;
  const {in_t}* Ab = A + bz * sAb;
  const {in_t}* Bb = B + bz * sBb;
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
  for (int k0 = 0; k0 < K; k0 += FBK) {{
#pragma unroll
    for (int e = tid; e < FBK * FBM; e += 256) {{
      // consecutive threads walk the dim with the smaller stride (coalesced either way round)
      int k, m;
      if ({a_kmajor}) {{ k = e % FBK; m = e / FBK; }} else {{ m = e % FBM; k = e / FBM; }}
      As[k][m] = (m0 + m < M && k0 + k < K) ? {load_a} : 0.f;
      int n;
      if ({b_kmajor}) {{ k = e % FBK; n = e / FBK; }} else {{ n = e % FBN; k = e / FBN; }}
      Bs[k][n] = (n0 + n < N && k0 + k < K) ? {load_b} : 0.f;
    }}
    __syncthreads();
#pragma unroll
    for (int k = 0; k < FBK; ++k) {{
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {{ a[i] = As[k][ty + 16 * i]; b[i] = Bs[k][tx + 16 * i]; }}
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }}
    __syncthreads();
  }}
  {out_t}* Cb = C + bz * sCb;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {{
      const int m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
      if (m < M && n < N) Cb[(i64)m * sCm + n] = {store};
    }}
}}
"""


def _emit_fma(spec: GemmSpec, tile: GemmTile) -> str:
    ep, dt = spec.epilogue, NP_DTYPE[spec.dtype]
    return _FMA_BODY.format(in_t=stype(spec.dtype), out_t=stype(spec.out_dtype),
                            a_kmajor=int(spec.a_kmajor), b_kmajor=int(spec.b_kmajor),
                            load_a=load_expr("Ab", "(i64)(m0 + m) * sAm + (i64)(k0 + k) * sAk", dt),
                            load_b=load_expr("Bb", "(i64)(k0 + k) * sBk + (i64)(n0 + n) * sBn", dt),
                            store=store(f"kf_epi(acc[i][j], bz, m, n{epi_call_args(ep)})", ep),
                            ep_params=epilogue_params(ep))




def int8_kernel_source(kir, arch: str = "sm_90") -> str | None:
    """The int8 GEMM a matmul group's KernelIR runs on ``arch`` (its int8/uint8 operands cast to
    the int32 or int16 product, its epilogue in registers: the plan always picks the generated
    kernel for those; on sm_90 the TMA + wgmma one), or None: for the CUDA backend's
    ``cuda``/``ptx`` dumps, which show that kernel."""
    from ..fusion.gemm_int8 import PRODUCTS, SOURCES
    from ..fusion.gemm_registers import EPILOGUE_OPS
    from .gemm_spec import epilogue_of_kernel
    c = kir.contraction
    if c is None or c.dtype not in PRODUCTS:
        return None
    types = []
    for slot, steps in ((c.lhs, c.lhs_steps), (c.rhs, c.rhs_steps)):
        if [a for k, a in steps if k == "cast"] != [c.dtype] or kir.inputs[slot].dtype not in SOURCES:
            return None
        types.append(SOURCES[kir.inputs[slot].dtype])
    got = epilogue_of_kernel(kir)
    ops = {o.value for o in EPILOGUE_OPS}
    if got is None or any(isinstance(s, K.Op) and s.op not in ops for s in got[0].body):
        return None
    M, N = kir.inputs[c.result].shape[-2:]
    spec = GemmSpec(types[0], got[0], a_kmajor=True, b_kmajor=True,
                    b_dtype=types[1] if types[1] != types[0] else None)
    if arch.startswith("sm_90"):
        from . import gemm_wgmma
        return gemm_wgmma.emit_wgmma(spec, gemm_wgmma.default_tile(spec, M, N))
    return emit_gemm(spec, default_tile(M, N, 0, spec.dtype))
