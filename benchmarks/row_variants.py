"""The source-level variants ``row_probe.py`` times: each a function from the generated kernel's
CUDA C to a variant of it (optionally with ``variant`` / ``per_sm`` attributes that change the
launch shape), kept in registries so every recorded run can be repeated: ``VARIANTS`` (the latest
run's), ``EARLIER`` (the earlier runs' P3 variants, ``--all``), ``VARIANTS_P1`` (``--p1``).
Pure string work: no GPU, no CuPy.

The variants that rewrote the row division (an exact reciprocal with FMA corrections, x * rcp,
and ``(float)((double)a * rd)``, alone or with other changes; runs in
``gpu-2026-11-22/probe_p3_runs.md`` and ``fourth/``) are gone: the emitter now divides by a row-level
value through the float64 reciprocal itself, so they no longer applied to its source."""
import re


def _loops(src):
    """Split at each register-tile loop (``#pragma unroll\\n    for (int k_``)."""
    return re.split(r"(?=    #pragma unroll\n    for \(int k_)", src)


def move_affine_loads(src, to_loop):
    """Move the gamma/beta loads (c1_, c2_) of the last phase into loop ``to_loop``."""
    loads = re.findall(r"\n\s*c[12]_\[k_\] = [^\n]*;", src)
    for ld in loads:
        src = src.replace(ld, "")
    parts = _loops(src)
    anchor = "const IDX i1 = r_ * 4;"
    i = parts[to_loop + 1].index(anchor) + len(anchor)
    parts[to_loop + 1] = parts[to_loop + 1][:i] + "".join(loads) + parts[to_loop + 1][i:]
    return "".join(parts)


FFADD = r"""
// a float sum kept as an unevaluated pair hi + lo (Knuth's TwoSum: the rounding error of each
// add goes into lo), ~48 significant bits: the float64 accumulator's accuracy over a thread's
// few terms without a float64 conversion and add per element
__device__ __forceinline__ void kf_ffadd(float& hi, float& lo, float x) {
  const float s = hi + x, bb = s - hi;
  lo += (hi - (s - bb)) + (x - bb);
  hi = s;
}
"""


def ff_accum(src):
    """The generated kernel's float64 sums: per thread as float-float pairs (kf_ffadd), in
    float64 from the warp shuffles on."""
    src = src.replace("// kfuse kernel", FFADD + "// kfuse kernel", 1)
    src = re.sub(r"double (Av\d+) = 0x0\.0p\+0;", r"float \1_h = 0.f, \1_l = 0.f;", src)
    src = re.sub(r"(Av\d+) = \(\1 \+ \(\(double\)(v\d+)\)\);", r"kf_ffadd(\1_h, \1_l, \2);", src)
    return re.sub(r"( *)for \(int m_ = 16; m_ > 0; m_ >>= 1\) \{ const double o_ = kf_shfl\((Av\d+), m_\);",
                  r"\1double \2 = (double)\2_h + (double)\2_l;\n\g<0>", src)


def float_accum(src):
    src = re.sub(r"double (Av\d+)", r"float \1", src)
    src = re.sub(r"\(\(double\)(v\d+)\)\)", r"(\1))", src)
    src = src.replace("const double o_", "const float o_")
    return re.sub(r"double\* (sm_v\d+) = reinterpret_cast<double\*>", r"float* \1 = reinterpret_cast<float*>", src)


def _hinted_load(name, policy, l1=False):
    """A 16-byte float load with an L2 eviction policy (and the same L1 one with ``l1``)."""
    q = f"L1::{policy}." if l1 else ""
    return (f"__device__ __forceinline__ KfVec<float, 4> {name}(const float* p) {{\n"
            "  KfVec<float, 4> r; unsigned long long pol;\n"
            f'  asm volatile("createpolicy.fractional.L2::{policy}.b64 %0, 1.0;" : "=l"(pol));\n'
            f'  asm volatile("ld.global.{q}L2::cache_hint.v4.f32 {{%0,%1,%2,%3}}, [%4], %5;"\n'
            '               : "=f"(r.v[0]), "=f"(r.v[1]), "=f"(r.v[2]), "=f"(r.v[3]) : "l"(p), "l"(pol));\n'
            "  return r;\n}\n")


# L2 evict-last vector load (as Triton's eviction_policy='evict_last'): the row stays in L2 for
# the next pass
LDLAST = "\n" + _hinted_load("kf_ldlast4", "evict_last")


# Triton's loads for P3 (config_32regs.ptx): L1 and L2 evict-last for the passes that re-read the
# row (it stays in the SM's L1, not only in L2), L1 and L2 evict-first for the last pass
LDL1 = "\n" + _hinted_load("kf_ld4_last", "evict_last", True) + _hinted_load("kf_ld4_first", "evict_first", True)


def l1_hints(src):
    """Every evict-last load also L1 evict-last, every evict-first (``kf_ldcs``) load L1 and L2
    evict-first, as Triton's."""
    i = src.index('extern "C"')
    body = src[i:].replace("kf_ldlast4(", "kf_ld4_last(").replace("kf_ldcs<float, 4>(", "kf_ld4_first(")
    return src[:i] + LDL1 + body


def reread(block, hints, unroll=None, l1=False):
    """The re-reading row kernel (cache_k = 0) at ``block`` threads, a block per row; with
    ``hints``, evict-last loads of the row in all passes but the last, evict-first in the last
    (``l1``: in L1 too, as Triton's); ``unroll``: a ``#pragma unroll`` count on the passes' loops."""
    def patch(src):
        return l1_hints(hinted(src)) if l1 else hinted(src)

    def hinted(src):
        if unroll is not None:
            src = src.replace("    for (IDX j_ = tid_;", f"    #pragma unroll {unroll}\n    for (IDX j_ = tid_;")
        if not hints:
            return src
        src = src.replace("// kfuse kernel", LDLAST + "// kfuse kernel", 1)
        pat = re.compile(r"\*reinterpret_cast<const KfVec<float, 4>\*>\((in0 \+ [^;]*)\);")
        hits = list(pat.finditer(src))
        for i, m in reversed(list(enumerate(hits))):
            call = "kf_ldcs<float, 4>" if i == len(hits) - 1 else "kf_ldlast4"
            src = src[:m.start()] + f"{call}({m.group(1)});" + src[m.end():]
        return src
    patch.variant = {"cache_k": 0, "block": block}
    return patch


def tree_combine(src):
    """The cross-warp combine as a shuffle tree over the warps' partials (as Triton's), not a
    serial sum (changes the summation order)."""
    pat = re.compile(r"(\w+) = (sm_\w+)\[0\];\n(\s*)#pragma unroll\n\s*for \(int w_ = 1; w_ < nwarps_; \+\+w_\) "
                     r"\1 = \(\1 \+ \2\[w_\]\);")
    return pat.sub(lambda m: f"{m[1]} = {m[2]}[lane_ & (nwarps_ - 1)];\n{m[3]}#pragma unroll\n{m[3]}"
                   f"for (int m_ = nwarps_ / 2; m_ > 0; m_ >>= 1) {{ const auto o_ = kf_shfl({m[1]}, m_); "
                   f"{m[1]} = ({m[1]} + o_); }}", src)


BLOCKSUM = r"""
// block sum of 16 warps: butterfly in the warp, then over the warps' partials (one barrier)
template <typename T> __device__ __forceinline__ T kf_blocksum(T v, T* sm) {
  #pragma unroll
  for (int m = 16; m > 0; m >>= 1) v += kf_shfl(v, m);
  if ((threadIdx.x & 31) == 0) sm[threadIdx.x >> 5] = v;
  __syncthreads();
  v = sm[threadIdx.x & 15];
  #pragma unroll
  for (int m = 8; m > 0; m >>= 1) v += kf_shfl(v, m);
  return v;
}
"""


HAND_P3 = r"""
// Hand-written P3 in the shape of Triton's best configuration: 512 threads a row, 2 x 16-byte
// units a thread, block reduce = butterfly in the warp + butterfly over the warps' partials (one
// barrier each, separate shared slots), the row re-read from L2 in the last pass (evict-first)
// when REREAD, else kept in registers. Same arithmetic as the generated kernel (float64 sums of the
// float32 x and (x - mu)^2, NumPy's division) unless FLOATACC.
extern "C" __global__ void __launch_bounds__(512) NAME(
    float* __restrict__ out0, const float* __restrict__ in0, const float* __restrict__ in1,
    const float* __restrict__ in2, i64 s0_, i64 s1_, i64 st_in0_0, i64 st_in0_1, i64 st_in1_0,
    i64 st_in2_0, i64 st_out0_0, i64 st_out0_1)
{
  __shared__ ACC sm1[16], sm2[16];
  const int t = threadIdx.x;
  const float* xr = in0 + (long long)blockIdx.x * st_in0_0;
  KfVec<float, 4> a = LOAD1(xr + 4 * t), b = LOAD1(xr + 2048 + 4 * t);
  ACC s = 0;
  #pragma unroll
  for (int e = 0; e < 4; ++e) s += (ACC)a.v[e];
  #pragma unroll
  for (int e = 0; e < 4; ++e) s += (ACC)b.v[e];
  s = kf_blocksum(s, sm1);
  const float mu = (float)((double)(float)s / 4096.0);
  ACC q = 0;
  #pragma unroll
  for (int e = 0; e < 4; ++e) { const float d = a.v[e] - mu; q += (ACC)(d * d); }
  #pragma unroll
  for (int e = 0; e < 4; ++e) { const float d = b.v[e] - mu; q += (ACC)(d * d); }
  q = kf_blocksum(q, sm2);
  const float var = (float)((double)(float)q / 4096.0);
  const float sd = sqrtf(var + 0x1.4f8b580000000p-17f);
#if REREAD
  a = kf_ldcs<float, 4>(xr + 4 * t); b = kf_ldcs<float, 4>(xr + 2048 + 4 * t);
#endif
  const KfVec<float, 4> g0 = *reinterpret_cast<const KfVec<float, 4>*>(in1 + 4 * t);
  const KfVec<float, 4> g1 = *reinterpret_cast<const KfVec<float, 4>*>(in1 + 2048 + 4 * t);
  const KfVec<float, 4> c0 = *reinterpret_cast<const KfVec<float, 4>*>(in2 + 4 * t);
  const KfVec<float, 4> c1 = *reinterpret_cast<const KfVec<float, 4>*>(in2 + 2048 + 4 * t);
  KfVec<float, 4> o0, o1;
  #pragma unroll
  for (int e = 0; e < 4; ++e) { o0.v[e] = (a.v[e] - mu) / sd * g0.v[e] + c0.v[e]; o1.v[e] = (b.v[e] - mu) / sd * g1.v[e] + c1.v[e]; }
  float* orow = out0 + (long long)blockIdx.x * st_out0_0;
  *reinterpret_cast<KfVec<float, 4>*>(orow + 4 * t) = o0;
  *reinterpret_cast<KfVec<float, 4>*>(orow + 2048 + 4 * t) = o1;
}
"""


HAND_P3_TRITON = r"""
// Hand-written P3 as Triton's 32-register configuration: 512 threads a row, 2 units a thread, the
// row loaded in every pass (L2 evict-last in the first two, evict-first in the last), nothing kept
// across passes; the last pass writes each half before loading the next.
extern "C" __global__ void __launch_bounds__(BOUNDS) NAME(
    float* __restrict__ out0, const float* __restrict__ in0, const float* __restrict__ in1,
    const float* __restrict__ in2, i64 s0_, i64 s1_, i64 st_in0_0, i64 st_in0_1, i64 st_in1_0,
    i64 st_in2_0, i64 st_out0_0, i64 st_out0_1)
{
  __shared__ ACC sm1[16], sm2[16];
  const int t = threadIdx.x;
  const float* xr = in0 + (long long)blockIdx.x * st_in0_0 + 4 * t;
  ACC s = 0;
  {
    const KfVec<float, 4> a = kf_ldlast4(xr), b = kf_ldlast4(xr + 2048);
    #pragma unroll
    for (int e = 0; e < 4; ++e) s += (ACC)a.v[e];
    #pragma unroll
    for (int e = 0; e < 4; ++e) s += (ACC)b.v[e];
  }
  s = kf_blocksum(s, sm1);
  const float mu = (float)((double)(float)s / 4096.0);
  ACC q = 0;
  {
    const KfVec<float, 4> a = kf_ldlast4(xr), b = kf_ldlast4(xr + 2048);
    #pragma unroll
    for (int e = 0; e < 4; ++e) { const float d = a.v[e] - mu; q += (ACC)(d * d); }
    #pragma unroll
    for (int e = 0; e < 4; ++e) { const float d = b.v[e] - mu; q += (ACC)(d * d); }
  }
  q = kf_blocksum(q, sm2);
  const float var = (float)((double)(float)q / 4096.0);
  const float sd = sqrtf(var + 0x1.4f8b580000000p-17f);
  float* orow = out0 + (long long)blockIdx.x * st_out0_0 + 4 * t;
  #pragma unroll
  for (int h = 0; h < 2; ++h) {
    const KfVec<float, 4> a = kf_ldcs<float, 4>(xr + 2048 * h);
    const KfVec<float, 4> g = kf_ldlast4(in1 + 4 * t + 2048 * h);
    const KfVec<float, 4> c = kf_ldlast4(in2 + 4 * t + 2048 * h);
    KfVec<float, 4> o;
    #pragma unroll
    for (int e = 0; e < 4; ++e) o.v[e] = (a.v[e] - mu) / sd * g.v[e] + c.v[e];
    *reinterpret_cast<KfVec<float, 4>*>(orow + 2048 * h) = o;
  }
}
"""


def _hand_kernel(src, body, loads=""):
    """``src``'s prelude followed by ``body``, a hand-written kernel under the generated one's name."""
    name = re.search(r"void __launch_bounds__\(\d+(?:, \d+)?\) (\w+)\(", src).group(1)
    return src[:src.index("// kfuse kernel")] + loads + BLOCKSUM + body.replace("NAME", name)


BLOCKSUM_FW = r"""
// block sum with float32 partials inside each warp and float64 across the warps
__device__ __forceinline__ double kf_blocksum_fw(float v, double* sm) {
  #pragma unroll
  for (int m = 16; m > 0; m >>= 1) v += kf_shfl(v, m);
  if ((threadIdx.x & 31) == 0) sm[threadIdx.x >> 5] = (double)v;
  __syncthreads();
  double w = sm[threadIdx.x & 15];
  #pragma unroll
  for (int m = 8; m > 0; m >>= 1) w += kf_shfl(w, m);
  return w;
}
"""
SQ = "__fmul_rn({v}.v[{e}] - mu, {v}.v[{e}] - mu)"


def _quad(v, sq=False):
    t = [SQ.format(v=v, e=e) if sq else f"{v}.v[{e}]" for e in range(4)]
    return f"(({t[0]} + {t[1]}) + ({t[2]} + {t[3]}))"


def float_partials(body, level):
    """HAND_P3_TRITON's float64 sums with float32 partials: over each 4-element unit ("unit"),
    over the thread's 8 elements ("thread"), or over the warp ("warp"); float64 above that."""
    sum_a = "    #pragma unroll\n    for (int e = 0; e < 4; ++e) s += (double)a.v[e];\n    #pragma unroll\n    for (int e = 0; e < 4; ++e) s += (double)b.v[e];"
    sq_a = ("    #pragma unroll\n    for (int e = 0; e < 4; ++e) { const float d = a.v[e] - mu; q += (double)(d * d); }\n"
            "    #pragma unroll\n    for (int e = 0; e < 4; ++e) { const float d = b.v[e] - mu; q += (double)(d * d); }")
    assert sum_a in body and sq_a in body
    if level == "unit":
        return (body.replace(sum_a, f"    s += (double){_quad('a')}; s += (double){_quad('b')};")
                .replace(sq_a, f"    q += (double){_quad('a', True)}; q += (double){_quad('b', True)};"))
    body = (body.replace(sum_a, f"    sf = {_quad('a')} + {_quad('b')};")
            .replace(sq_a, f"    qf = {_quad('a', True)} + {_quad('b', True)};")
            .replace("double s = 0;", "float sf;").replace("double q = 0;", "float qf;"))
    if level == "thread":
        return (body.replace("s = kf_blocksum(s, sm1);", "const double s = kf_blocksum((double)sf, sm1);")
                .replace("q = kf_blocksum(q, sm2);", "const double q = kf_blocksum((double)qf, sm2);"))
    return (body.replace("s = kf_blocksum(s, sm1);", "const double s = kf_blocksum_fw(sf, sm1);")
            .replace("q = kf_blocksum(q, sm2);", "const double q = kf_blocksum_fw(qf, sm2);"))


def hand_triton(float_acc=False, min_blocks=0, rdiv=False, l1=False, ff=False, partials=None):
    """Replace the generated kernel with HAND_P3_TRITON (4096-wide rows only); ``l1``: Triton's L1
    eviction hints too."""
    def patch(src):
        body = (HAND_P3_TRITON.replace("ACC", "float" if float_acc else "double")
                .replace("BOUNDS", f"512, {min_blocks}" if min_blocks else "512"))
        if rdiv:
            body = body.replace("const float sd = sqrtf(var + 0x1.4f8b580000000p-17f);",
                                "const float sd = sqrtf(var + 0x1.4f8b580000000p-17f); const double rsd = 1.0 / (double)sd;")
            body = body.replace("(a.v[e] - mu) / sd", "(float)((double)(a.v[e] - mu) * rsd)")
        if ff:
            for v, sm in (("s", "sm1"), ("q", "sm2")):
                body = (body.replace(f"double {v} = 0;", f"float {v}_h = 0.f, {v}_l = 0.f;")
                        .replace(f"{v} = kf_blocksum({v}, {sm});",
                                 f"const double {v} = kf_blocksum((double){v}_h + (double){v}_l, {sm});"))
            body = (body.replace("s += (double)a.v[e];", "kf_ffadd(s_h, s_l, a.v[e]);")
                    .replace("s += (double)b.v[e];", "kf_ffadd(s_h, s_l, b.v[e]);")
                    .replace("q += (double)(d * d);", "kf_ffadd(q_h, q_l, d * d);"))
        if partials:
            body = float_partials(body, partials)
        out = _hand_kernel(src, body, LDLAST + (FFADD if ff else "") + (BLOCKSUM_FW if partials == "warp" else ""))
        return l1_hints(out) if l1 else out
    patch.variant = {"block": 512, "cache_k": 2}
    return patch


def hand_p3(reread=False, float_acc=False, min_blocks=0):
    """Replace the generated kernel with HAND_P3 (same name and parameters; 4096-wide rows only)."""
    def patch(src):
        body = (HAND_P3.replace("ACC", "float" if float_acc else "double")
                .replace("LOAD1", "kf_ldlast4" if reread else "*reinterpret_cast<const KfVec<float, 4>*>")
                .replace("#if REREAD", "#if " + ("1" if reread else "0"))
                .replace("__launch_bounds__(512)", f"__launch_bounds__(512, {min_blocks})" if min_blocks else "__launch_bounds__(512)"))
        return _hand_kernel(src, body, LDLAST if reread else "")
    patch.variant = {"block": 512, "cache_k": 2}
    return patch


def shape(**fields):
    """The generated source at another launch shape (Variant fields), a block per row."""
    def patch(src):
        for f in patches:
            src = f(src)
        return src
    patches = fields.pop("patches", ())
    patch.variant = fields
    return patch


# L2 prefetch of a row ahead, issued as a block starts its row: one prefetch a 128-byte line, or one
# bulk prefetch of the whole row (sm_90).
PREFETCH_ROW = {
    "line": 'for (IDX q_ = tid_; q_ < row_len / 32; q_ += blockDim.x) '
            'asm volatile("prefetch.global.L2::evict_last [%0];" :: "l"(pf_ + q_ * 32));',
    "bulk": 'if (tid_ == 0) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" '
            ':: "l"(pf_), "r"((unsigned)(row_len * 4)));',
}


def prefetch_row(how, ahead, per_sm=None):
    """Each block, as it starts row ``row_``, has L2 fetch x's row ``row_ + ahead`` (``ahead`` a
    number, or "grid": the block's own next row); ``per_sm``: a persistent grid of that many blocks
    a SM instead of a block per row."""
    def patch(src):
        d = "gridDim.x" if ahead == "grid" else f"{ahead} * gridDim.x" if isinstance(ahead, str) else str(ahead)
        code = (f"\n    {{ const IDX pr_ = row_ + {d}; if (pr_ < n_rows) {{ const float* pf_ = in0 + (i64)pr_ * st_in0_0; "
                f"{PREFETCH_ROW[how]} }} }}")
        anchor = "    IDX r_ = row_;"
        return src.replace(anchor, anchor + code, 1)
    if per_sm:
        patch.per_sm = per_sm
    return patch


def persistent(per_sm, inner=lambda s: s):
    """The generated kernel (patched by ``inner``) on a persistent grid of ``per_sm`` blocks a SM."""
    def patch(src):
        return inner(src)
    patch.per_sm = per_sm
    return patch


def bounds5(src):
    return src.replace("__launch_bounds__(256)", "__launch_bounds__(256, 5)")


def unpredicated(src):
    """The reload kernel's predicated hinted loads as the hand kernel's unpredicated ones (valid
    when every unit is in the row, as at 4096 columns)."""
    i = src.index('extern "C"')
    body = re.sub(r"kf_ld(last|first)<float, 4>\((.*?), (?:j_ < row_units|true)\);",
                  lambda m: f"kf_ld4_{m[1]}({m[2]});", src[i:])
    return src[:i] + LDL1 + body


def one_row(src):
    """The reload kernel for a grid of a block per row: no row loop, each reduction its own
    shared slots, so the barrier after the warps' partials are read goes."""
    src = src.replace("for (IDX row_ = blockIdx.x; row_ < n_rows; row_ += gridDim.x) {", "{ const IDX row_ = blockIdx.x;")
    k = iter(range(100))
    src = re.sub(r"reinterpret_cast<float\*>\(red_smem_\)", lambda m: f"reinterpret_cast<float*>(red_smem_ + {16 * next(k)})", src)
    lines = src.split("\n")
    out = []
    for i, line in enumerate(lines):
        if line.strip() == "__syncthreads();" and i and "nwarps_ / 2" in lines[i - 1]:
            continue
        out.append(line)
    return "\n".join(out)


VARIANTS = {
    "generated": lambda s: s,
    "generated, 64-bit index math": shape(idx64=True),
    "generated, 32-bit index math": shape(idx64=False),
    "hand Triton-shaped, rdiv, L1+L2 hints, float acc": hand_triton(rdiv=True, l1=True, float_acc=True),
}
EXACT_RUN = {   # run 25 (fourth/probe_p3_run25.md), on the looped reload kernel -> Variant.exact
    "held rows (the previous default)": shape(block=256, cache_k=4, reload=False),
    "a block one row: no loop, a slot per reduction, 1 barrier": one_row,
    "one row + unpredicated loads": lambda s: one_row(unpredicated(s)),
}
PARTIALS_RUN = {   # 07:2x (run 11)
    "hand Triton-shaped, rdiv, L1+L2, float unit partials": hand_triton(rdiv=True, l1=True, partials="unit"),
    "hand Triton-shaped, rdiv, L1+L2, float thread partials": hand_triton(rdiv=True, l1=True, partials="thread"),
    "hand Triton-shaped, rdiv, L1+L2, float warp partials": hand_triton(rdiv=True, l1=True, partials="warp"),
    "hand Triton-shaped, rdiv, L2, float thread partials": hand_triton(rdiv=True, partials="thread"),
    "float accumulators (inexact)": float_accum,
}
FF_RUN = {   # 07:16: slower than the generated kernel
    "hand Triton-shaped, rdiv, L1+L2 hints, float-float acc": hand_triton(rdiv=True, l1=True, ff=True),
    "float-float acc": ff_accum,
}
L1_RUN = {   # 07:14: slower than the generated kernel
    "reread b512, L1+L2 hints": reread(512, True, l1=True),
    "reread b256, L1+L2 hints": reread(256, True, l1=True),
}
PREFETCH_RUN = {   # 06:39: all slower than the generated kernel (probe_p3_runs.md)
    "persistent 5/SM": persistent(5),
    "prefetch bulk +660": prefetch_row("bulk", 660),
    "prefetch bulk +1320": prefetch_row("bulk", 1320),
    "prefetch line +660": prefetch_row("line", 660),
    "persistent 5/SM, prefetch bulk next": prefetch_row("bulk", "grid", 5),
    "persistent 5/SM, prefetch line next": prefetch_row("line", "grid", 5),
    "persistent 5/SM, prefetch bulk 2 ahead": prefetch_row("bulk", "2", 5),
    "persistent 4/SM, prefetch bulk next": prefetch_row("bulk", "grid", 4),
    "prefetch bulk +660, bounds 5": lambda s: bounds5(prefetch_row("bulk", 660)(s)),
    "persistent 5/SM, prefetch bulk next, bounds 5": persistent(5, lambda s: bounds5(prefetch_row("bulk", "grid")(s))),
}
HISTORY = {
    "hand Triton-shaped, double reciprocal (exact)": hand_triton(rdiv=True),
    "hand Triton-shaped (IEEE division)": hand_triton(),
    "hand 512 thr, registers": hand_p3(),
}
# The variants of the earlier runs in benchmarks/gpu-2026-11-22/probe_p3_runs.md (--all runs them
# too); the shared-memory rows of 04:50 were an emitter option, removed.
EARLIER = {
    **HISTORY,
    **EXACT_RUN,
    **PREFETCH_RUN,
    **L1_RUN,
    **FF_RUN,
    **PARTIALS_RUN,
    "affine loads in phase 2": lambda s: move_affine_loads(s, 1),
    "float accumulators (inexact)": float_accum,
    "tree combine": tree_combine,
    "reread b256 + evict hints": reread(256, True),
    "reread b512 + evict hints, unroll 1": reread(512, True, 1),
    "b512, 2 units a thread": shape(block=512, cache_k=2),
    "b512 u2, bounds 4": shape(block=512, cache_k=2, min_blocks=4),
    "hand 512 thr, L2 re-read + hints, bounds 4": hand_p3(reread=True, min_blocks=4),
    "launch bounds 6 blocks": lambda s: s.replace("__launch_bounds__(256)", "__launch_bounds__(256, 6)"),
}


def evict_hints(last_bufs, first_bufs=()):
    """Elementwise loads of inputs ``last_bufs`` with the L2 evict-last policy (Triton's choice for
    broadcast operands), of ``first_bufs`` evict-first (ld.global.cs)."""
    def patch(src):
        src = src.replace("// kfuse kernel", LDLAST + "// kfuse kernel", 1)
        for b in last_bufs:
            src = re.sub(r"\*reinterpret_cast<const KfVec<float, 4>\*>\((in%d \+ [^;]*)\);" % b, r"kf_ldlast4(\1);", src)
        for b in first_bufs:
            src = re.sub(r"\*reinterpret_cast<const KfVec<float, 4>\*>\((in%d \+ [^;]*)\);" % b,
                         r"kf_ldcs<float, 4>(\1);", src)
        return src
    return patch


def prefetch_tile(ahead):
    """Elementwise: thread 0 of each block has L2 fetch in0's contiguous tile of the block
    ``ahead`` blocks later (one bulk prefetch, sm_90; in0 contiguous)."""
    def patch(src):
        ept = re.search(r"ept=(\d+)", src).group(1)
        anchor = re.search(r"  const IDX step = [^\n]*\n", src).group(0)
        tile = f"(i64)blockDim.x * {ept} * 4"
        code = (f"  if (threadIdx.x == 0) {{ const i64 pb_ = ((i64)blockIdx.x + {ahead}) * {tile}; "
                f"if (pb_ + {tile} <= (i64)s0 * s1) asm volatile(\"cp.async.bulk.prefetch.L2.global [%0], %1;\" "
                f":: \"l\"(in0 + pb_), \"r\"((unsigned)({tile} * 4)) : \"memory\"); }}\n")
        return src.replace(anchor, anchor + code, 1)
    return patch


PLAIN_LD4 = r"""
// a 16-byte float load through ld.global (not ld.global.nc, the read-only path the compiler picks
// for a const __restrict__ pointer), as Triton's loads of a streamed operand
__device__ __forceinline__ KfVec<float, 4> kf_ld4_plain(const float* p) {
  KfVec<float, 4> r;
  asm("ld.global.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(r.v[0]), "=f"(r.v[1]), "=f"(r.v[2]), "=f"(r.v[3]) : "l"(p));
  return r;
}
"""


def p1_loads(x_plain, wb=None):
    """P1's loads as Triton's: x (in0) through ld.global with ``x_plain``; w and b (in1, in2) with
    the L2 evict-last hint (``wb="l2"``) or the L1 and L2 ones (``wb="l1"``)."""
    def patch(src):
        src = src.replace("// kfuse kernel", PLAIN_LD4 + LDLAST + LDL1 + "// kfuse kernel", 1)
        i = src.index('extern "C"')
        body = src[i:]
        if x_plain:
            body = re.sub(r"\*reinterpret_cast<const KfVec<float, 4>\*>\((in0 \+ [^;]*)\);", r"kf_ld4_plain(\1);", body)
        if wb:
            fn = "kf_ld4_last" if wb == "l1" else "kf_ldlast4"
            body = re.sub(r"\*reinterpret_cast<const KfVec<float, 4>\*>\((in[12] \+ [^;]*)\);", fn + r"(\1);", body)
        return src[:i] + body
    return patch


VARIANTS_P1 = {
    "generated": lambda s: s,
    "x through ld.global": p1_loads(True),
    "x through ld.global, w b L1+L2 evict-last": p1_loads(True, "l1"),
    "w b L2 evict-last": p1_loads(False, "l2"),
    "w b L1+L2 evict-last": p1_loads(False, "l1"),
}
P1_EARLIER = {   # 2026-11-22 06:40 (fourth/probe_p1.md), on the looped kernel; the prefetches need its loop
    "prefetch tile +2112": prefetch_tile(2112),
    "prefetch tile +4224": prefetch_tile(4224),
    "prefetch tile +1056": prefetch_tile(1056),
    "w, b evict-last": evict_hints((1, 2)),
    "w, b evict-last, x evict-first": evict_hints((1, 2), (0,)),
    "x evict-first": evict_hints((), (0,)),
}
