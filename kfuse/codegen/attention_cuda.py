"""CUDA C for attention as one kernel (the "attention" group kind).

``emit_attention(spec, tile)`` writes ``kfuse_attention``: per batch item ``b`` and query row
``m``, ``O[b, m] = softmax_n(score(Q[b, m] . K[b, n])) @ V[b]`` with the score matrix never
written: tiles of K and V stream through shared memory (``cp.async``, two stages), each warp
holds 16 query rows, ``Q K^T`` and ``P V`` run on the tensor cores (``mma.sync.m16n8k16``,
f16 or bf16 operands, f32 accumulators), and the softmax is online (a running maximum and sum per
row, the accumulator rescaled when the maximum grows), so the call's memory is O(sequence).

``score`` is the elementwise work between the first product and the softmax (a scale, an
additive bias or mask read from memory, ``np.where`` masks, soft-capping), as kernel-IR
statements on the product ``acc`` at ``(b, m, n)``, computed in float32 (16-bit intermediates
are not rounded: the fused kernel is checked against a float64 reference within the dtype's
tolerance, as any tensor-core product is). ``causal``: keys past ``m + causal_off`` are masked
(``-inf``), so whole key tiles past the diagonal are skipped.

NumPy's values on rows it would not normalise: a row whose scores are all ``-inf`` (every key
masked), holds a NaN or ``+inf`` comes out NaN, as ``exp(s - s.max())`` makes it.

Kernel parameters, in order: ``Q, K, V, O, M, N, nb1, nb2``, per operand (Q, K, V, O) its
strides along three batch dims and its row stride, ``causal_off``, then per score input ``ptr,
sb, sm, sn`` (``sb`` along the flattened batch) then the score's f32 scalars (strides in
elements; the head dim has stride 1, rows 16-byte aligned; a batch stride 0 shares an operand
across that dim, as grouped-query attention's k and v). Grid: (ceil(M / BM), batch), the batch
flattened over extents (batch / (nb1 nb2), nb1, nb2).
"""
from __future__ import annotations

import dataclasses

from ..fusion.attention import HEAD_DIMS       # (the planner matches only these)
from . import kernel_ir as K
from .cuda_async import ASYNC_PTX
from .cuda_ops import _STYPE, PRELUDE, const_literal, ctype, load_expr, op_expr
from .gemm_spec import NP_DTYPE

__all__ = ["AttentionSpec", "AttentionTile", "ScoreFn", "default_attention_tile", "emit_attention",
           "HEAD_DIMS"]

_WIDE = {"float16": "float32", "bfloat16": "float32"}


@dataclasses.dataclass(frozen=True)
class ScoreFn:
    """The score of one (b, m, n) element: SSA statements (``Load`` of score array ``buf`` at a
    ``(b, m, n)`` index of ``IVar``s and zeros, ``Const``, ``Op``, ``Index`` over ``b``/``m``/``n``)
    reading ``product`` (the float32 product) and run-time float32 scalars ``p0``...; ``result`` is
    the score. ``inputs``: the score arrays' dtypes (NumPy names)."""
    body: tuple = ()
    result: str = "acc"
    inputs: tuple[str, ...] = ()
    n_params: int = 0
    product: str = "acc"

    def describe(self) -> str:
        ops = [s.op for s in self.body if isinstance(s, K.Op)]
        return "/".join(ops) or "product"


@dataclasses.dataclass(frozen=True)
class AttentionSpec:
    """What one attention kernel is specialised on (never sizes): operand dtype (Q, K, V and O),
    head dim, the score function and whether keys past the diagonal are skipped."""
    dtype: str = "f16"
    head_dim: int = 128
    score: ScoreFn = ScoreFn()
    causal: bool = False
    out_dtype: str = ""             # "" = dtype; "f32": NumPy's bfloat16 matmul returns float32

    def __post_init__(self):
        if self.dtype not in ("f16", "bf16"):
            raise ValueError(f"attention dtype {self.dtype!r} is not f16/bf16")
        if self.head_dim not in HEAD_DIMS:
            raise ValueError(f"attention head dim {self.head_dim} not in {HEAD_DIMS}")

    @property
    def out(self) -> str:
        return self.out_dtype or self.dtype

    def key(self) -> str:
        return (f"{self.dtype}_d{self.head_dim}{'_causal' if self.causal else ''}_{self.out}_"
                f"{self.score.describe()}")


@dataclasses.dataclass(frozen=True)
class AttentionTile:
    """``warps`` x ``rows`` x 16 query rows a block (``rows`` tiles of 16 a warp: a K or V
    fragment loaded from shared memory serves each), ``block_n`` keys a K/V tile;
    ``q_in_regs``: the Q fragments stay in registers for the whole row block (else re-read from
    shared memory)."""
    warps: int = 4
    block_n: int = 64
    q_in_regs: bool = True
    rows: int = 1

    @property
    def block_m(self) -> int:
        return 16 * self.warps * self.rows

    def smem_bytes(self, d: int) -> int:
        return 2 * (self.block_m + 4 * self.block_n) * (d + 8)

    def name(self) -> str:
        return f"m{self.block_m}r{self.rows}n{self.block_n}{'q' if self.q_in_regs else 's'}"


def default_attention_tile(d: int) -> AttentionTile:
    """Measured on an H200 (f16, 2026-11-27): head dim 64, two row tiles a warp (a fragment of
    K or V serves both), 64 keys a tile and Q re-read from shared memory ((16, 4096, 64): 0.321
    ms, 0.371 with one row tile; Q held in registers, 0.296, spills on some scores); 128, one row
    tile, Q held, 32 keys (0.320 ms at (32, 2048, 128); two row tiles 0.314 but slower causal);
    past 128 the accumulators take the registers, so Q is re-read from shared memory."""
    if d <= 64:
        return AttentionTile(4, 64, False, 2)
    return AttentionTile(4, 32, d <= 128, 1)


def _score_fn(sc: ScoreFn) -> str:
    """``kf_score(acc, b, m, n, ...)``: the score of one element, every float value in float32."""
    params, _ = score_args(sc)
    lines = [f"__device__ __forceinline__ float kf_score(float acc_, i64 b, i64 m, i64 n{params}) {{",
             f"  const float {sc.product} = acc_;"]
    for s in sc.body:
        dt = _WIDE.get(s.dtype, s.dtype)
        if isinstance(s, K.Load):
            off = " + ".join(f"{c} * e{s.buf}_s{c}" for c, e in zip("bmn", s.index)
                             if isinstance(e, K.IVar)) or "0"
            val = load_expr(f"e{s.buf}", off, s.dtype)
        elif isinstance(s, K.Const):
            val = const_literal(s.value, dt)
        elif isinstance(s, K.Index):
            val = _index_c(s.expr)
        else:
            val = op_expr(s.op, dt, list(s.args), tuple(_WIDE.get(a, a) for a in s.arg_dtypes))
        lines.append(f"  const {ctype(dt)} {s.dst} = {val};")
    lines.append(f"  return (float){sc.result};\n}}")
    return "\n".join(lines)


def _index_c(e) -> str:
    if isinstance(e, K.ILit):
        return f"(i64){e.value}"
    if isinstance(e, K.IVar):
        return e.name
    return f"({_index_c(e.lhs)} {e.op.replace('//', '/')} {_index_c(e.rhs)})"


def score_args(sc: ScoreFn) -> tuple[str, str]:
    """The kernel's parameter list for the score's arrays and scalars, and the call's arguments."""
    params = "".join(f", const {_STYPE[dt]}* __restrict__ e{k}, i64 e{k}_sb, i64 e{k}_sm, i64 e{k}_sn"
                     for k, dt in enumerate(sc.inputs))
    params += "".join(f", float p{j}" for j in range(sc.n_params))
    args = "".join(f", e{k}, e{k}_sb, e{k}_sm, e{k}_sn" for k in range(len(sc.inputs)))
    args += "".join(f", p{j}" for j in range(sc.n_params))
    return params, args


HELPERS = r"""#define KF_LOG2E 1.4426950408889634f
#define KF_NEG_INF __int_as_float(0xff800000)
{async_ptx}
// two float32 values as one register of two 16-bit ones (lo in the low half)
__device__ __forceinline__ unsigned kf_pack2(float lo, float hi) {{
  unsigned r; asm("cvt.rn.{t}x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo)); return r;
}}
__device__ __forceinline__ float kf_ex2(float x) {{ float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }}
"""

# The online softmax of one key tile and the final store, shared with the wgmma kernel
# (``attention_wgmma``, which also takes HELPERS): each kernel defines KF_S / KF_O (where a lane's score and output registers
# are), MI row tiles of 16 a warp, ``row0``, ``mrow``/``lrow`` [MI][2] and ``j`` (the key tile).
# The kernel's parameters and its first lines: the batch item's operands, the key tiles (past the
# diagonal skipped), Q and the first K/V tile loading (kf_load_rows, the kernel's own layout).
SIGNATURE = r"""    const u16* __restrict__ Q, const u16* __restrict__ Kp, const u16* __restrict__ V, {out_t}* __restrict__ O,
    int M, int N, int nb1, int nb2, i64 sQ0, i64 sQ1, i64 sQ2, i64 sQm, i64 sK0, i64 sK1, i64 sK2, i64 sKn,
    i64 sV0, i64 sV1, i64 sV2, i64 sVn, i64 sO0, i64 sO1, i64 sO2, i64 sOm, int causal_off{params}"""

PROLOGUE = r"""  const int m0 = blockIdx.x * BM;
  const i64 b = blockIdx.y;          // the flattened batch index over (nb0, nb1, nb2) dims
  const i64 b0 = b / ((i64)nb1 * nb2), b1 = (b / nb2) % nb1, b2 = b % nb2;
  const u16* Qb = Q + b0 * sQ0 + b1 * sQ1 + b2 * sQ2;
  const u16* Kb = Kp + b0 * sK0 + b1 * sK1 + b2 * sK2;     // (a stride 0: k shared, grouped-query)
  const u16* Vb = V + b0 * sV0 + b1 * sV1 + b2 * sV2;
  int n_end = N;
#if CAUSAL
  n_end = max(0, min(N, min(m0 + BM, M) + causal_off));      // keys n <= m + causal_off
#endif
  const int tiles = (n_end + BN - 1) / BN;

  kf_load_rows<BM>(sQ, Qb, sQm, m0, M, tid);
  if (tiles > 0) {{
    kf_load_rows<BN>(sK, Kb, sKn, 0, N, tid);
    kf_load_rows<BN>(sV, Vb, sVn, 0, N, tid);
  }}
  kf_cp_commit();
"""

SOFTMAX = r"""    // scores, masks and the online softmax (a row's 4 lanes hold its BN values)
    const int n0 = j * BN;
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {{
      const int m = row0 + i * 16 + h * 8;
      float mx = KF_NEG_INF;
#pragma unroll
      for (int t = 0; t < NT; ++t)
#pragma unroll
        for (int e = 0; e < 2; ++e) {{
          const int n = n0 + t * 8 + t4 * 2 + e;
          bool keep = n < N && m < M;      // (a score input is read in bounds only)
#if CAUSAL
          keep = keep && n <= m + causal_off;
#endif
          const float x = keep ? kf_score(KF_S(i, t, 2 * h + e), b, m, n{args}) : KF_NEG_INF;
          KF_S(i, t, 2 * h + e) = x;
          mx = fmaxf(mx, x);
        }}
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(mrow[i][h], mx);
      const float m_use = m_new == KF_NEG_INF ? 0.f : m_new;     // no row value yet: exp(-inf) = 0
      const float alpha = kf_ex2((mrow[i][h] - m_use) * KF_LOG2E);
      const float mb = m_use * KF_LOG2E;
      float l = 0.f;
#pragma unroll
      for (int t = 0; t < NT; ++t)
#pragma unroll
        for (int e = 0; e < 2; ++e) {{
          const float p = kf_ex2(fmaf(KF_S(i, t, 2 * h + e), KF_LOG2E, -mb));
          KF_S(i, t, 2 * h + e) = p;
          l += p;
        }}
      // NumPy's max propagates a NaN score: so does the sum here (fmaxf would drop it)
      lrow[i][h] = lrow[i][h] * alpha + l;
      mrow[i][h] = m_new;
#pragma unroll
      for (int d = 0; d < DT; ++d) {{ KF_O(i, d, 2 * h) *= alpha; KF_O(i, d, 2 * h + 1) *= alpha; }}
    }}
"""

EPILOGUE = r"""  {out_t}* Ob = O + b0 * sO0 + b1 * sO1 + b2 * sO2;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
  for (int h = 0; h < 2; ++h) {{
    float l = lrow[i][h];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    // a row with no finite score (all masked, or no key) is NaN, as NumPy's exp(-inf - -inf)
    const float inv = mrow[i][h] == KF_NEG_INF ? __int_as_float(0x7fc00000) : 1.f / l;
    const int m = row0 + i * 16 + h * 8;
    if (m >= M) continue;
#pragma unroll
    for (int d = 0; d < DT; ++d)
      {store};
  }}
}}
"""


_BODY = r"""
#define D {d}
#define BM {bm}
#define BN {bn}
#define THREADS ({warps} * 32)
#define LD (D + 8)
#define DK (D / 16)
#define NT (BN / 8)
#define DT (D / 8)
#define CAUSAL {causal}
#define Q_IN_REGS {q_in_regs}
#define MI {mi}
#define KF_S(i, t, q) s[i][t][q]        // the score of row tile i, key chunk t, slot q
#define KF_O(i, d, q) o[i][d][q]        // the output of row tile i, column chunk d, slot q
{helpers}
__device__ __forceinline__ void kf_mma(float* d, const unsigned* a, unsigned b0, unsigned b1) {{
  asm("mma.sync.aligned.m16n8k16.row.col.f32.{t}.{t}.f32 "
               "{{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, {{%8, %9}}, {{%0, %1, %2, %3}};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}}

// rows [r0, r0 + ROWS) of a (rows x D) operand into a padded shared tile; rows past lim zero-filled
template <int ROWS>
__device__ __forceinline__ void kf_load_rows(unsigned dst, const u16* src, i64 rs, int r0, int lim, int tid) {{
#pragma unroll
  for (int c = tid; c < ROWS * (D / 8); c += THREADS) {{
    const int r = c / (D / 8), col = (c % (D / 8)) * 8;
    const bool ok = r0 + r < lim;
    kf_cp_async16(dst + (r * LD + col) * 2, ok ? (const void*)(src + (i64)(r0 + r) * rs + col) : (const void*)src, ok ? 16 : 0);
  }}
}}

extern "C" __global__ void __launch_bounds__(THREADS) kfuse_attention(
{signature}) {{
  extern __shared__ __align__(128) unsigned char kf_smem[];
  const unsigned sQ = kf_smem_addr(kf_smem);
  const unsigned sK = sQ + BM * LD * 2;
  const unsigned sV = sK + 2 * BN * LD * 2;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3, li = lane >> 3, lr = lane & 7;
{prologue}
  // per-lane ldmatrix offsets (bytes): A (Q rows of this warp), B from K (n rows, d contiguous),
  // B from V (k = key rows, read transposed). A warp holds MI tiles of 16 query rows.
  const unsigned q_off = ((warp * 16 * MI + (lane & 15)) * LD + (lane >> 4) * 8) * 2;
  const unsigned k_off = ((lr + (li >> 1) * 8) * LD + (li & 1) * 8) * 2;
  const unsigned v_off = ((lr + (li & 1) * 8) * LD + (li >> 1) * 8) * 2;
  const int row0 = m0 + warp * 16 * MI + g;     // this lane's rows: row0 + 16 i + 8 h

  float o[MI][DT][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < DT; ++j) o[i][j][0] = o[i][j][1] = o[i][j][2] = o[i][j][3] = 0.f;
  float mrow[MI][2], lrow[MI][2];
#pragma unroll
  for (int i = 0; i < MI; ++i) mrow[i][0] = mrow[i][1] = KF_NEG_INF, lrow[i][0] = lrow[i][1] = 0.f;
#if Q_IN_REGS
  unsigned qf[MI][DK][4];
  bool q_loaded = false;
#endif

  for (int j = 0; j < tiles; ++j) {{
    if (j + 1 < tiles) {{
      const unsigned st = ((j + 1) & 1) * BN * LD * 2;
      kf_load_rows<BN>(sK + st, Kb, sKn, (j + 1) * BN, N, tid);
      kf_load_rows<BN>(sV + st, Vb, sVn, (j + 1) * BN, N, tid);
    }}
    kf_cp_commit();
    kf_cp_wait<1>();
    __syncthreads();
    const unsigned kst = sK + (j & 1) * BN * LD * 2 + k_off, vst = sV + (j & 1) * BN * LD * 2 + v_off;
#if Q_IN_REGS
    if (!q_loaded) {{
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int kk = 0; kk < DK; ++kk)
          kf_ldsm_x4(sQ + q_off + (i * 16 * LD + kk * 16) * 2, qf[i][kk][0], qf[i][kk][1], qf[i][kk][2], qf[i][kk][3]);
      q_loaded = true;
    }}
#endif
    // S = Q K^T for this warp's rows and the tile's BN keys (a K fragment serves every row tile)
    float s[MI][NT][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int t = 0; t < NT; ++t) s[i][t][0] = s[i][t][1] = s[i][t][2] = s[i][t][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < DK; ++kk) {{
#if Q_IN_REGS
#define KF_A(i) qf[i][kk]
#else
      unsigned a[MI][4];
#pragma unroll
      for (int i = 0; i < MI; ++i)
        kf_ldsm_x4(sQ + q_off + (i * 16 * LD + kk * 16) * 2, a[i][0], a[i][1], a[i][2], a[i][3]);
#define KF_A(i) a[i]
#endif
#pragma unroll
      for (int p = 0; p < NT / 2; ++p) {{
        unsigned b0, b1, b2, b3;
        kf_ldsm_x4(kst + (p * 16 * LD + kk * 16) * 2, b0, b1, b2, b3);
#pragma unroll
        for (int i = 0; i < MI; ++i) {{
          kf_mma(s[i][2 * p], KF_A(i), b0, b1);
          kf_mma(s[i][2 * p + 1], KF_A(i), b2, b3);
        }}
      }}
#undef KF_A
    }}
{softmax}    // O += P V: P's accumulators are the A fragments of the second product (a V fragment
    // serves every row tile)
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {{
      unsigned a[MI][4];
#pragma unroll
      for (int i = 0; i < MI; ++i) {{
        a[i][0] = kf_pack2(s[i][2 * kk][0], s[i][2 * kk][1]);
        a[i][1] = kf_pack2(s[i][2 * kk][2], s[i][2 * kk][3]);
        a[i][2] = kf_pack2(s[i][2 * kk + 1][0], s[i][2 * kk + 1][1]);
        a[i][3] = kf_pack2(s[i][2 * kk + 1][2], s[i][2 * kk + 1][3]);
      }}
#pragma unroll
      for (int p = 0; p < DT / 2; ++p) {{
        unsigned b0, b1, b2, b3;
        kf_ldsm_x4_t(vst + (kk * 16 * LD + p * 16) * 2, b0, b1, b2, b3);
#pragma unroll
        for (int i = 0; i < MI; ++i) {{
          kf_mma(o[i][2 * p], a[i], b0, b1);
          kf_mma(o[i][2 * p + 1], a[i], b2, b3);
        }}
      }}
    }}
    __syncthreads();
  }}
  kf_cp_wait<0>();

{epilogue}"""


_STORE = {False: "*(unsigned*)(Ob + (i64)m * sOm + d * 8 + t4 * 2) = kf_pack2(KF_O(i, d, 2 * h) * inv, KF_O(i, d, 2 * h + 1) * inv)",
          True: "*(float2*)(Ob + (i64)m * sOm + d * 8 + t4 * 2) = make_float2(KF_O(i, d, 2 * h) * inv, KF_O(i, d, 2 * h + 1) * inv)"}


def shared_parts(spec: AttentionSpec) -> dict:
    """The texts both attention kernels take (their parameters, first lines, online softmax,
    final store and helpers), filled in for ``spec``."""
    params, args = score_args(spec.score)
    out_t = "float" if spec.out == "f32" else "u16"
    return dict(helpers=HELPERS.format(async_ptx=ASYNC_PTX, t=spec.dtype),
                signature=SIGNATURE.format(out_t=out_t, params=params), prologue=PROLOGUE.format(),
                softmax=SOFTMAX.format(args=args),
                epilogue=EPILOGUE.format(out_t=out_t, store=_STORE[spec.out == "f32"]),
                d=spec.head_dim, causal=int(spec.causal), t=spec.dtype)


def emit_attention(spec: AttentionSpec, tile: AttentionTile | None = None) -> str:
    """CUDA C of ``kfuse_attention`` for ``spec`` (see the module docstring for its parameters)."""
    tile = tile or default_attention_tile(spec.head_dim)
    head = f"// kfuse attention {spec.key()} tile {tile.name()}\n" + PRELUDE + _score_fn(spec.score)
    return head + _BODY.format(**shared_parts(spec), bm=tile.block_m, bn=tile.block_n, warps=tile.warps,
                               mi=tile.rows, q_in_regs=int(tile.q_in_regs))
