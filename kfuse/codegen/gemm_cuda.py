"""CUDA C for GEMMs with a fused elementwise epilogue (the "matmul" group kind).

``emit_gemm(spec, tile)`` writes one kernel ``kfuse_gemm``: C[b] = epilogue(A[b] @ B[b]) with
f16/bf16 operands on tensor cores (``mma.sync.m16n8k16`` through inline PTX, ``ldmatrix`` from
padded shared memory, ``cp.async`` multi-stage pipelining, f32 accumulation), or f32 operands on
plain FMA. The epilogue runs on the accumulator registers before the single store.
``emit_epilogue_kernel(spec)`` writes the second candidate's half: one elementwise kernel applying
the same epilogue to a GEMM result computed by cuBLAS.

Sizes and strides are kernel parameters (nothing size-dependent is baked in), so one source serves
every shape with the spec's layout/alignment class. The kernel parameter list, in order:
``A, B, C, M, N, K, sAb, sAm, sAk, sBb, sBk, sBn, sCb, sCm`` then per epilogue input
``ptr, sb, sm, sn`` then the epilogue's f32 run-time scalars (strides in elements, int64; C's
column stride is 1). The epilogue kernel takes ``X, C, M, N, batch, sXb, sXm, sCb, sCm`` + the same
epilogue tail. No headers are included (conversions are inline PTX), so NVRTC needs no include path.
Every source starts with the prelude every CUDA C kernel has (``cuda_ops.PRELUDE``); the epilogue
is the matmul group's kernel-IR statements (:mod:`kfuse.codegen.gemm_spec`), rendered as any
kernel's are.
"""
from __future__ import annotations

import dataclasses
import math

from . import kernel_ir as K
from .cuda_ops import LOWP, PRELUDE, _STYPE, const_literal, ctype, load_expr, op_expr, round_lowp, store_value
from .gemm_spec import DTYPES, NP_DTYPE, EpInput, GemmEpilogue, GemmSpec

__all__ = ["DTYPES", "FMA_TILE", "EpInput", "GemmEpilogue", "GemmSpec", "GemmTile", "default_tile",
           "emit_epilogue_kernel", "emit_gemm", "gemm_search_space"]


def _stype(dt: str) -> str:
    """The C storage type of an ``f16``/``bf16``/``f32`` element."""
    return _STYPE[NP_DTYPE[dt]]


@dataclasses.dataclass(frozen=True)
class GemmTile:
    block_m: int = 128
    block_n: int = 128
    block_k: int = 32
    warps_m: int = 2
    warps_n: int = 2
    stages: int = 4
    group_m: int = 8                        # rasterisation: tiles_m grouped for L2 reuse

    @property
    def threads(self) -> int:
        return 32 * self.warps_m * self.warps_n

    def smem_bytes(self, spec: GemmSpec) -> int:
        if not spec.tensor_core:
            return 0                         # the FMA kernel uses static shared memory
        bm, bn, bk = self.block_m, self.block_n, self.block_k
        a = bm * (bk + 8) if spec.a_kmajor else bk * (bm + 8)
        b = bn * (bk + 8) if spec.b_kmajor else bk * (bn + 8)
        return 2 * self.stages * (a + b)

    def check(self, spec: GemmSpec) -> None:
        if not spec.tensor_core:
            return
        wtm, wtn = self.block_m // self.warps_m, self.block_n // self.warps_n
        if wtm % 16 or wtn % 16 or self.block_k % 16 or self.stages < 2:
            raise ValueError(f"bad tile {self}: warp tile {wtm}x{wtn} must be multiples of 16")
        for rows, cols in ((self.block_m, self.block_k), (self.block_n, self.block_k)):
            if (rows * cols // 8) % self.threads:
                raise ValueError(f"bad tile {self}: {rows}x{cols} chunks not divisible by threads")
        for cols in ((self.block_k if spec.a_kmajor else self.block_m),
                     (self.block_k if spec.b_kmajor else self.block_n)):
            if self.threads % (cols // 8):
                raise ValueError(f"bad tile {self}: {cols // 8} chunks a row vs {self.threads} threads")
        if self.smem_bytes(spec) > 227 * 1024:
            raise ValueError(f"tile {self} needs {self.smem_bytes(spec)} B of shared memory")

    def name(self) -> str:
        return (f"{self.block_m}x{self.block_n}x{self.block_k}_w{self.warps_m}x{self.warps_n}"
                f"_s{self.stages}")


FMA_TILE = GemmTile(64, 64, 16, 4, 2, 2)   # f32: 256 threads, 4x4 outputs each


def gemm_search_space(dtype: str = "f16") -> list[GemmTile]:
    """Candidate tiles for the autotuner (every one passes ``check`` for aligned layouts)."""
    if dtype == "f32":
        return [FMA_TILE]
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
    square = GemmTile(128, 128, 32, 2, 2, 4) if aligned else GemmTile(128, 128, 32, 2, 4, 4)
    for t in (GemmTile(128, 256, 32, 2, 4, 3), square, GemmTile(128, 64, 32, 2, 2, 4)):
        if math.ceil(M / t.block_m) * math.ceil(N / t.block_n) >= n_sms:
            return t
    return GemmTile(64, 64, 32, 2, 2, 4)


# ---------------------------------------------------------------- the epilogue
def _epilogue_params(ep: GemmEpilogue) -> str:
    ps = [f"const {_stype(i.dtype)}* __restrict__ e{k}, i64 e{k}_sb, i64 e{k}_sm, i64 e{k}_sn"
          for k, i in enumerate(ep.inputs)]
    ps += [f"float p{j}" for j in range(ep.n_params)]
    return "".join(", " + p for p in ps)


def _epilogue_fn(ep: GemmEpilogue) -> str:
    """``kf_epi(acc_, b, m, n, ...)``: the epilogue of one element, as a device function: its
    statements rendered by the rules of every CUDA C kernel (``cuda_ops``), except that a
    16-bit output takes the hardware tanh (its error is below the output's rounding) and a
    loaded 16-bit value widens to float32 as it is (``cast_expr`` rounds it first, for values
    held unrounded: a loaded one is exact)."""
    lines = [f"__device__ __forceinline__ float kf_epi(float acc_, i64 b, int m, int n{_epilogue_params(ep)}) {{"]
    acc = round_lowp("acc_", ep.product_dtype) if ep.product_dtype in LOWP else "acc_"
    lines.append(f"  const float {ep.product} = {acc};")
    fast = ep.out_dtype != "f32"
    loaded = set()          # 16-bit values loaded from memory: exact in float32, nothing to round
    for s in ep.body:
        if isinstance(s, K.Load):
            off = " + ".join(f"{'' if c == 'b' else '(i64)'}{c} * e{s.buf}_s{c}"
                             for c, e in zip("bmn", s.index) if isinstance(e, K.IVar)) or "0"
            val = load_expr(f"e{s.buf}", off, s.dtype)
            loaded.add(s.dst)
        elif isinstance(s, K.Const):
            val = const_literal(s.value, s.dtype)
        elif s.op == "tanh" and fast and s.dtype != "float64":
            val = f"kf_tanh_fast({s.args[0]})"
        elif s.op == "cast" and s.dtype == "float32" and s.args[0] in loaded:
            val = s.args[0]
        else:
            val = op_expr(s.op, s.dtype, list(s.args), s.arg_dtypes)
        lines.append(f"  const {ctype(s.dtype)} {s.dst} = {val};")
    lines.append(f"  return {ep.result};\n}}")
    return "\n".join(lines)


def _epi_call_args(ep: GemmEpilogue) -> str:
    a = [f"e{k}, e{k}_sb, e{k}_sm, e{k}_sn" for k in range(len(ep.inputs))]
    a += [f"p{j}" for j in range(ep.n_params)]
    return "".join(", " + x for x in a)


def _store(v: str, out: str) -> str:
    """The storage value of the float32 register expression ``v`` as an ``out`` element."""
    return store_value(v, "float32", NP_DTYPE[out])


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
// shared tiles, padded by 8 elements per row (ldmatrix/cp.async conflict-free); rows = outer dim
#define A_ROWS (A_KMAJOR ? BM : BK)
#define A_COLS (A_KMAJOR ? BK : BM)
#define B_ROWS (B_KMAJOR ? BN : BK)
#define B_COLS (B_KMAJOR ? BK : BN)
#define A_LD (A_COLS + 8)
#define B_LD (B_COLS + 8)
#define A_TILE (A_ROWS * A_LD)
#define B_TILE (B_ROWS * B_LD)

__device__ __forceinline__ unsigned kf_smem_addr(const void* p) {{
  return (unsigned)__cvta_generic_to_shared(p);
}}
__device__ __forceinline__ void kf_cp_async16(unsigned dst, const void* src, int bytes) {{
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "r"(bytes));
}}
__device__ __forceinline__ void kf_cp_commit() {{ asm volatile("cp.async.commit_group;\n" ::); }}
template <int N> __device__ __forceinline__ void kf_cp_wait() {{ asm volatile("cp.async.wait_group %0;\n" :: "n"(N)); }}
__device__ __forceinline__ void kf_ldsm_x4(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {{
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{%0, %1, %2, %3}}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}}
__device__ __forceinline__ void kf_ldsm_x4_t(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {{
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {{%0, %1, %2, %3}}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}}
__device__ __forceinline__ void kf_mma(float* d, const unsigned* a, const unsigned* b) {{
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.{mma_t}.{mma_t}.f32 "
               "{{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, {{%8, %9}}, {{%0, %1, %2, %3}};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}}

// One operand tile: ROWS x COLS (COLS = unit-stride dim in shared memory) from global element
// (r0 + r, c0 + c) = base[(r0 + r) * rs + (c0 + c) * cs], zero outside [0, rlim) x [0, clim).
template <int ROWS, int COLS, int LD>
struct KfTileLoader {{
  static constexpr int CPR = COLS / 8;                         // 16-byte chunks per row
  static constexpr int ITERS = ROWS * CPR / THREADS;           // THREADS % CPR == 0 (checked)
  static constexpr int RSTEP = THREADS / CPR;                  // rows between a thread's chunks
  const u16* src[ITERS]; unsigned ok; int r_first, c_first;
  __device__ __forceinline__ void init(const u16* base, int r0, int rlim, i64 rs, int c0, i64 cs, int tid) {{
    r_first = tid / CPR; c_first = (tid % CPR) * 8; ok = 0;
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {{
      const int r = r_first + i * RSTEP;
      ok |= (r0 + r < rlim) ? (1u << i) : 0u;
      src[i] = base + (i64)(r0 + r) * rs + (i64)(c0 + c_first) * cs;
    }}
  }}
  __device__ __forceinline__ unsigned dst(int i) const {{ return (unsigned)(((r_first + i * RSTEP) * LD + c_first) * 2); }}
}};

extern "C" __global__ void __launch_bounds__(THREADS) kfuse_gemm(
    const u16* __restrict__ A, const u16* __restrict__ B, {out_t}* __restrict__ C,
    int M, int N, int K, i64 sAb, i64 sAm, i64 sAk, i64 sBb, i64 sBk, i64 sBn, i64 sCb, i64 sCm{ep_params}) {{
  extern __shared__ __align__(128) unsigned char kf_smem[];
  u16* sA = (u16*)kf_smem;
  u16* sB = sA + STAGES * A_TILE;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
  // grouped rasterisation of the (tiles_m x tiles_n) block grid for L2 reuse
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int pid = blockIdx.x, per_group = GROUP_M * tiles_n, first_m = (pid / per_group) * GROUP_M;
  const int gsz = min(tiles_m - first_m, GROUP_M);
  const int m0 = (first_m + (pid % per_group) % gsz) * BM, n0 = ((pid % per_group) / gsz) * BN;
  const i64 bz = blockIdx.z;
  const u16* Ab = A + bz * sAb;
  const u16* Bb = B + bz * sBb;
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
    const unsigned da = sA0 + stage * (A_TILE * 2), db = sB0 + stage * (B_TILE * 2);
{load_a}
{load_b}
  }};

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.f;

  // per-lane ldmatrix offsets (bytes) within a stage
  const int li = lane >> 3, lr = lane & 7;
#if A_KMAJOR
  const unsigned a_off = ((warp_m * WTM + (lane & 15)) * A_LD + (lane >> 4) * 8) * 2;
#else
  const unsigned a_off = ((lr + (li >> 1) * 8) * A_LD + warp_m * WTM + (li & 1) * 8) * 2;
#endif
#if B_KMAJOR
  const unsigned b_off = ((warp_n * WTN + lr + (li >> 1) * 8) * B_LD + (li & 1) * 8) * 2;
#else
  const unsigned b_off = ((lr + (li & 1) * 8) * B_LD + warp_n * WTN + (li >> 1) * 8) * 2;
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
    const unsigned abase = sA0 + stage * (A_TILE * 2) + a_off, bbase = sB0 + stage * (B_TILE * 2) + b_off;
#pragma unroll
    for (int i = 0; i < MI; ++i) {{
#if A_KMAJOR
      kf_ldsm_x4(abase + (i * 16 * A_LD + kk * 16) * 2, af[buf][i][0], af[buf][i][1], af[buf][i][2], af[buf][i][3]);
#else
      kf_ldsm_x4_t(abase + (kk * 16 * A_LD + i * 16) * 2, af[buf][i][0], af[buf][i][1], af[buf][i][2], af[buf][i][3]);
#endif
    }}
#pragma unroll
    for (int p = 0; p < NI / 2; ++p) {{
#if B_KMAJOR
      kf_ldsm_x4(bbase + (p * 16 * B_LD + kk * 16) * 2, bfr[buf][2 * p][0], bfr[buf][2 * p][1], bfr[buf][2 * p + 1][0], bfr[buf][2 * p + 1][1]);
#else
      kf_ldsm_x4_t(bbase + (kk * 16 * B_LD + p * 16) * 2, bfr[buf][2 * p][0], bfr[buf][2 * p][1], bfr[buf][2 * p + 1][0], bfr[buf][2 * p + 1][1]);
#endif
    }}
  }};
  constexpr int KK = BK / 16;
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
  const bool pair_ok = (sCm % 2) == 0;
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
        const float y0 = kf_epi(acc[i][j][2 * h], bz, m, n{epi_args});
        if (n + 1 < N) {{
          const float y1 = kf_epi(acc[i][j][2 * h + 1], bz, m, n + 1{epi_args});
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
      u16 v = 0;
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
            bytes_ = f"(({L}.ok >> i) & 1) ? max(0, min(16, (K - k0 - {L}.c_first) * 2)) : 0"
            kstride = "1"
        else:        # rows = K: the M/N edge cuts a chunk
            bytes_ = (f"(k0 + {L}.r_first + i * {L}.RSTEP < K) ? "
                      f"max(0, min(16, ({olim} - {other} - {L}.c_first) * 2)) : 0")
            kstride = sk
        return _LOAD_ASYNC.format(L=L, kstride=kstride, bytes=bytes_, x=which, base=X)
    if kmajor:
        r0, rlim, rs, c0, clim, cs = other, olim, so, "k0", "K", sk
    else:
        r0, rlim, rs, c0, clim, cs = "k0", "K", sk, other, olim, so
    return _LOAD_GENERIC.format(rows=f"{X}_ROWS", cols=f"{X}_COLS", r0=r0, rlim=rlim, rs=rs, c0=c0,
                                clim=clim, cs=cs, base=base, tile="s" + X, tsize=f"{X}_TILE",
                                ld=f"{X}_LD")


def _pair_store(out: str) -> str:
    if out == "f32":
        return "            *(float2*)dst = make_float2(y0, y1);"
    return f"            *(unsigned*)dst = (unsigned){_store('y0', out)} | ((unsigned){_store('y1', out)} << 16);"


def emit_gemm(spec: GemmSpec, tile: GemmTile | None = None) -> str:
    """CUDA C of ``kfuse_gemm`` for ``spec`` and ``tile`` (see the module docstring for params)."""
    if spec.dtype not in DTYPES:
        raise ValueError(f"GEMM dtype {spec.dtype!r} not in {DTYPES}")
    ep = spec.epilogue
    head = f"// kfuse GEMM {spec.key()} tile {(tile or FMA_TILE).name()}\n" + PRELUDE + _epilogue_fn(ep)
    if not spec.tensor_core:
        return head + _emit_fma(spec, tile if tile and tile == FMA_TILE else FMA_TILE)
    tile = tile or GemmTile()
    tile.check(spec)
    body = _TC_BODY.format(
        bm=tile.block_m, bn=tile.block_n, bk=tile.block_k, wm=tile.warps_m, wn=tile.warps_n,
        stages=tile.stages, group_m=tile.group_m, a_kmajor=int(spec.a_kmajor),
        b_kmajor=int(spec.b_kmajor), mma_t=spec.dtype, out_t=_stype(spec.out_dtype),
        store_y0=_store("y0", spec.out_dtype), store_y1=_store("y1", spec.out_dtype),
        ep_params=_epilogue_params(ep), epi_args=_epi_call_args(ep),
        load_a=_loader(spec, "a"), load_b=_loader(spec, "b"), pair_store=_pair_store(spec.out_dtype))
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
    return _FMA_BODY.format(in_t=_stype(spec.dtype), out_t=_stype(spec.out_dtype),
                            a_kmajor=int(spec.a_kmajor), b_kmajor=int(spec.b_kmajor),
                            load_a=load_expr("Ab", "(i64)(m0 + m) * sAm + (i64)(k0 + k) * sAk", dt),
                            load_b=load_expr("Bb", "(i64)(k0 + k) * sBk + (i64)(n0 + n) * sBn", dt),
                            store=_store(f"kf_epi(acc[i][j], bz, m, n{_epi_call_args(ep)})", spec.out_dtype),
                            ep_params=_epilogue_params(ep))


_EPI_KERNEL = r"""
#define VEC {vec}
// out[b, m, n] = epilogue(X[b, m, n]); X is the cuBLAS result (rows contiguous). blockDim.y rows per
// block (short rows share a block), blockDim.x threads along a row, VEC elements per thread (VEC > 1
// needs N % VEC == 0 and aligned rows); 32-bit row arithmetic, no division when batch == 1.
// REVERSE: rows last-first. X and C may be the same buffer (in place): every element is loaded,
// then stored, by one thread, so X carries no __restrict__ / non-coherent loads.
extern "C" __global__ void __launch_bounds__(256) kfuse_gemm_epilogue(
    const {x_t}* X, {out_t}* C, int M, int N, int batch,
    i64 sXb, i64 sXm, i64 sCb, i64 sCm{ep_params}) {{
  const long long rows = (long long)batch * M;
  const long long r = (long long)blockIdx.x * blockDim.y + threadIdx.y;
  if (r >= rows) return;
  const int row = (int){row};
  const int b = batch == 1 ? 0 : row / M;
  const int m = row - b * M;
  const {x_t}* xrow = X + (i64)b * sXb + (i64)m * sXm;
  {out_t}* crow = C + (i64)b * sCb + (i64)m * sCm;
  for (int n = threadIdx.x * VEC; n < N; n += blockDim.x * VEC) {{
    const {x_t}* x = xrow + n;
    {out_t}* c = crow + n;
{body}
  }}
}}
"""


def emit_epilogue_kernel(spec: GemmSpec, vec: int = 8, x_dtype: str | None = None,
                         reverse: bool = False) -> str:
    """CUDA C of ``kfuse_gemm_epilogue``: the epilogue as its own elementwise kernel over a GEMM
    result ``X`` of ``x_dtype`` (default: the operands' dtype, as cuBLAS returns). ``vec`` = 8
    (16-byte accesses for 16-bit data) when N is a multiple of 8, else 1. May run in place
    (``X`` == ``C``). Launch: ``block = (tx, ty)``, ``grid = ceil(batch * M / ty)`` (``ty`` rows a
    block). ``reverse``: rows last-first."""
    x_dtype = x_dtype or spec.dtype
    ep = spec.epilogue
    if vec not in (1, 2, 4, 8):
        raise ValueError("vec must be 1, 2, 4 or 8")
    if vec == 1:
        body = f"    c[0] = {_epi_of_element(ep, x_dtype, 'x', '0', 'n')};"
    else:
        body = _vec_body(x_dtype, spec.out_dtype, vec, ep)
    row = "(rows - 1 - r)" if reverse else "r"
    return (f"// kfuse GEMM epilogue {spec.key()} vec {vec}{' reverse' if reverse else ''}\n" + PRELUDE
            + _epilogue_fn(ep) + _EPI_KERNEL.format(vec=vec, x_t=_stype(x_dtype), out_t=_stype(spec.out_dtype),
                                                    ep_params=_epilogue_params(ep), body=body, row=row))


def _epi_of_element(ep: GemmEpilogue, x_dtype: str, ptr: str, off: str, n: str) -> str:
    """The stored value of the epilogue over the product element ``ptr[off]`` at column ``n``."""
    x = load_expr(ptr, off, NP_DTYPE[x_dtype])
    return _store(f"kf_epi({x}, b, m, {n}{_epi_call_args(ep)})", ep.out_dtype)


def _vec_body(x_dtype: str, out_dtype: str, vec: int, ep: GemmEpilogue) -> str:
    xt, ot = _stype(x_dtype), _stype(out_dtype)
    xs, os_ = (2 if xt != "float" else 4), (2 if ot != "float" else 4)
    lines = [f"    {xt} xin[VEC]; {ot} yout[VEC];"]
    lines += _copy_vec("xin", "x", vec * xs)
    lines.append("    #pragma unroll")
    lines.append(f"    for (int q = 0; q < VEC; ++q) yout[q] = {_epi_of_element(ep, x_dtype, 'xin', 'q', 'n + q')};")
    lines += _copy_vec("c", "yout", vec * os_, store=True)
    return "\n".join(lines)


def _copy_vec(dst: str, src: str, nbytes: int, store: bool = False) -> list[str]:
    """Move ``nbytes`` between registers and memory in words of up to 16 bytes."""
    size = min(16, nbytes)
    word = {16: "uint4", 8: "uint2", 4: "unsigned", 2: "unsigned short"}[size]
    cq = "" if store else "const "
    return [f"    (({word}*){dst})[{w}] = (({cq}{word}*){src})[{w}];" for w in range(nbytes // size)]
