"""The CPU cost model (fusion/cpu_cost.py): the work it counts, the level it streams from, the
threads it expects, and a calibration check of predicted against measured kernel times."""
from __future__ import annotations

import dataclasses
import math
import os
import statistics

import numpy as np
import pytest

import kfuse
from kfuse.bench.kernel_timing import measure_kernels
from kfuse.fusion import cpu_cost
from kfuse.fusion.cost import get_device_spec
from kfuse.runtime import cpu as runtime_cpu

CPU = get_device_spec("cpu")


def _kernel(fn, *specs):
    (g,) = kfuse.explain(kfuse.jit(fn), *specs, device="cpu").groups
    return g


def test_thread_rule_mirrors_the_runtime():
    """The model's threads are auto_threads' on an idle machine: same thresholds."""
    assert CPU.cpu.par_min_work == runtime_cpu.PAR_MIN_WORK
    assert CPU.cpu.work_per_thread == runtime_cpu.PAR_WORK_PER_THREAD
    from kfuse.codegen.cpu import helper_work
    assert (CPU.cpu.libm_work, CPU.cpu.wide_work) == (helper_work("sin", "float64"), helper_work("exp", "float64"))
    assert cpu_cost.threads_for(CPU.cpu.par_min_work - 1, CPU.cpu, 2) == 1
    assert cpu_cost.threads_for(CPU.cpu.par_min_work * 8, CPU.cpu, 2) == 2
    assert cpu_cost.threads_for(CPU.cpu.par_min_work * 8, CPU.cpu, 2, parallel_ok=False) == 1


def test_terms_tell_vector_helpers_from_libm_calls_and_half_values():
    t32 = _kernel(lambda x: np.exp(x) + 1, "f32[256,256]").cost.cpu_terms
    t64 = _kernel(lambda x: np.exp(x) + 1, "f64[256,256]").cost.cpu_terms
    sin = _kernel(lambda x: np.sin(x) + 1, "f64[256,256]").cost.cpu_terms
    atan = _kernel(lambda x: np.arctan(x) + 1, "f32[256,256]").cost.cpu_terms
    t16 = _kernel(lambda x: x * 2, "f16[256,256]").cost.cpu_terms
    n = 256 * 256
    assert (t32.vector, t32.wide, t32.libm) == (n, 0, 0) and (t64.vector, t64.wide, t64.libm) == (0, n, 0)
    assert (sin.wide, sin.libm) == (0, n) and (atan.vector, atan.wide) == (0, n)   # float32 through float64
    assert t16.half_in == n and t16.half >= n and t32.half == t32.half_in == 0  # the load converted, the product rounded
    assert sin.threads == t64.threads == 2 and t32.threads == 1     # a libm call 16 units, a float64 helper 4


def test_float16_values_a_float_sum_widens_are_counted_apart():
    """A float sum's float16 summands (also cast to float32 first) widen to float64, 4 lanes an
    instruction (cpu_cost's ``half_sum``), where an elementwise kernel's convert 8 or 16 at once."""
    n = 64 * 1024
    mean = _kernel(lambda x: np.mean(x.astype(np.float32), axis=-1), "f16[64,1024]").cost.cpu_terms
    s16 = _kernel(lambda x: np.sum(x, axis=-1), "f16[64,1024]").cost.cpu_terms
    s32 = _kernel(lambda x: np.sum(x, axis=-1), "f32[64,1024]").cost.cpu_terms
    t16 = _kernel(lambda x: x * 2, "f16[64,1024]").cost.cpu_terms
    assert mean.half_sum == s16.half_sum == n and s32.half_sum == t16.half_sum == 0
    assert CPU.cpu.half_sum > CPU.cpu.half_load
    rowmax = _kernel(lambda x: np.max(x, axis=-1), "f16[64,1024]").cost.cpu_terms
    colmax = _kernel(lambda x: np.max(x, axis=0), "f16[64,1024]").cost.cpu_terms
    rowmax32 = _kernel(lambda x: np.max(x, axis=-1), "f32[64,1024]").cost.cpu_terms
    assert rowmax.serial == cpu_cost.HALF_MINMAX_WORK * n and colmax.serial == rowmax32.serial == 0   # (a scalar chain)


def test_scans_are_serial_and_a_leading_axis_scan_strided():
    last = _kernel(lambda x: np.cumsum(x, axis=1), "f32[512,512]").cost.cpu_terms
    lead = _kernel(lambda x: np.cumsum(x, axis=0), "f32[512,512]").cost.cpu_terms
    assert last.serial == lead.serial == 512 * 512
    assert last.strided == 0 and lead.strided == 512 * 512 and last.rows == 512 and lead.transposed == 0


def test_transposed_operand_against_a_contiguous_one_is_strided():
    mixed = _kernel(lambda x, y: x.T + y, "f32[256,256]", "f32[256,256]").cost.cpu_terms
    alone = _kernel(lambda x, s: x.T * s, "f32[256,256]", "f32[]").cost.cpu_terms
    assert mixed.transposed == 256 * 256 and alone.transposed == 0 and mixed.strided == 0
    alike = _kernel(lambda x, y: y.T * np.concatenate((-x[:, 5:], x[:, :5]), axis=1).T,
                    "f32[64,16]", "f32[64,16]").cost.cpu_terms      # both turned: the K-order nest
    assert alike.transposed == 0


def test_working_set_picks_the_cache_level():
    lv = CPU.levels
    assert cpu_cost.level_bandwidth(lv, 256 * 1024, 1, 2)[0].name == lv[0].name
    assert cpu_cost.level_bandwidth(lv, 1.5 * lv[0].bytes, 2, 2)[0].name == lv[0].name   # two private L2s
    assert cpu_cost.level_bandwidth(lv, 1.5 * lv[0].bytes, 1, 2)[0].name == lv[1].name
    assert cpu_cost.level_bandwidth(lv, 4 * lv[1].bytes, 1, 2)[0].name == lv[-1].name
    small = _kernel(lambda x: x * 2 + 1, "f32[256,256]").cost
    big = _kernel(lambda x: x * 2 + 1, "f32[8192,8192]").cost
    per_byte = [c.memory_seconds / c.bytes for c in (small, big)]
    assert per_byte[1] > 2 * per_byte[0]           # DRAM, not L2


def test_gpu_model_unchanged():
    """The GPU devices keep the plain roofline: no CPU levels or costs."""
    for name in ("h100", "h200", "a100-80gb"):
        d = get_device_spec(name)
        assert d.cpu is None and d.levels == ()
    g = kfuse.explain(kfuse.jit(lambda x: x * 2 + 1), "f32[4096,4096]", device="h100").groups[0]
    d = get_device_spec("h100")
    assert g.cost.seconds == pytest.approx(g.cost.bytes / d.bandwidth + d.launch_overhead)


# ---- calibration: predicted vs measured on this machine -------------------------------------------
# Kernels of different kinds, each small enough to run on one thread (below the runtime's parallel
# threshold, so a neighbour's load cannot stall a thread pool join): a launch-bound call, a
# stream, vectorised and libm transcendentals, a row softmax, a serial scan, a float16 kernel.
CASES = {
    "tiny": (lambda x: x * 2 + 1, [(1024,)], np.float32),
    "stream": (lambda x, y: 2.5 * x + y, [(256, 256), (256, 256)], np.float32),
    "tanh": (lambda x: np.tanh(x) * 0.5 + x, [(128, 256)], np.float32),
    "exp_f64": (lambda x: np.exp(x) + 1, [(64, 128)], np.float64),
    "softmax": (lambda x: np.exp(x - x.max(-1, keepdims=True)) / np.exp(x - x.max(-1, keepdims=True)).sum(
        -1, keepdims=True), [(32, 512)], np.float32),
    "cumsum": (lambda x: np.cumsum(x, axis=1), [(64, 512)], np.float32),
    "half": (lambda x, y: x * y + x, [(128, 256), (128, 256)], np.float16),
    # a reduction over NCHW channels (merged H x W columns, cpu_merge) and a column softmax (the
    # cols order: its exp staged in the output, its sum added in a loop of its own)
    "pixelnorm": (lambda x: x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-8), [(4, 16, 16, 16)],
                  np.float32),
    "colsoftmax": (lambda x: np.exp(x - x.max(0)) / np.exp(x - x.max(0)).sum(0), [(128, 128)], np.float32),
    # column statistics in the chunked cols order (codegen/cpu_chunks: its phases one loop each)
    "colstats": (lambda x: (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), [(80, 104)], np.float32),
}


def _ratios() -> dict[str, float]:
    rng = np.random.default_rng(0)
    out = {}
    for name, (fn, shapes, dt) in CASES.items():
        args = [rng.standard_normal(s).astype(dt) for s in shapes]
        jf = kfuse.jit(fn, backend="cpu")
        (g,) = kfuse.explain(jf, *args, device="cpu").groups
        assert g.cost.cpu_terms.threads == 1, name      # below the parallel threshold, as the runtime's
        jf(*args)
        best = []
        for _ in range(5):          # the least of five medians: a neighbour's burst is left out
            rep = measure_kernels(jf, *args, device="cpu", budget_s=0.05)
            (k,) = rep["kernels"]
            assert not k["parallel_runs"], name
            best.append(k["measured_us"] / k["predicted_us"])
        out[name] = min(best)
    return out


@pytest.fixture(scope="module")
def ratios():
    return _ratios()


def test_calibration_relative(ratios):
    """Every kernel's measured/predicted within 2x of the others' geometric mean: the model
    weighs kinds of work right, whatever the machine's load does to all of them alike."""
    g = math.exp(statistics.fmean(math.log(r) for r in ratios.values()))
    off = {k: round(r / g, 2) for k, r in ratios.items() if not 0.5 <= r / g <= 2.0}
    assert not off, f"relative to the geomean {g:.2f}x: {off} (all: {ratios})"


def test_calibration_absolute(ratios):
    """On a machine not busy with others' work and as fast as the model's calibration, every
    kernel within 2x of its prediction. Where the plainest kernel (a stream in L2) already runs
    1.5x off its prediction, the machine itself is slower or faster than the one the model was
    fitted on (on 2026-11-28 this 2-core VM ran it at 1.5x and the other cases alike, tanh and
    pixelnorm past 2x, on a tree that had passed here the day before): absolute times are not
    comparable, and the relative test above checks the model's weights."""
    if os.getloadavg()[0] >= (os.cpu_count() or 1):
        pytest.skip(f"machine busy (load average {os.getloadavg()[0]:.1f}): absolute times not comparable")
    if not 1 / 1.5 <= ratios["stream"] <= 1.5:
        pytest.skip(f"the plainest kernel runs {ratios['stream']:.2f}x its prediction here: a machine of "
                    "another speed than the calibration's (absolute times not comparable)")
    off = {k: round(r, 2) for k, r in ratios.items() if not 0.5 <= r <= 2.0}
    assert not off, f"measured/predicted outside 2x: {off} (all: {ratios})"


def test_a_per_channel_value_is_priced_once_per_channel():
    """``g / sqrt(v + eps)`` broadcast over NCHW's trailing axes is hoisted out of their loops:
    counted once per (n, c), so the planner recomputes it in the one kernel rather than
    materialising a 64-element array."""
    def bn(x, m, v, g, b):
        s = g / np.sqrt(v + 1e-5)
        return (x - m.reshape(1, -1, 1, 1)) * s.reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1)
    p = kfuse.explain(kfuse.jit(bn), "f32[32,256,64,64]", *["f32[256]"] * 4, device="cpu")
    (g,) = p.groups
    assert g.cost.cpu_terms.simple < 4 * 32 * 256 * 64 * 64      # the 3 full-size ops, and a little


def test_short_loops_merge_unless_a_broadcast_tells_them_apart():
    """The innermost loop the model prices is codegen/cpu_merge's: NCHW's 32 x 32 is one loop of
    1024 (then long enough); a per-channel operand of NHWC keeps the 3 channels a loop."""
    nchw = _kernel(lambda x: x * 2, "f32[8,64,32,32]").cost.cpu_terms
    nhwc = _kernel(lambda x, m: x - m, "f32[8,32,32,3]", "f32[3]").cost.cpu_terms
    assert nchw.rows == 8 * 64 * 32 * 32 // 1024 and nhwc.rows == 8 * 32 * 32
    pool = _kernel(lambda x: x.mean(axis=(2, 3)), "f32[8,64,32,32]").cost.cpu_terms
    assert pool.rows == 8 * 64                  # the reduced H x W: one loop


def test_transposed_float16_reads_4k_apart_are_aliased():
    """A float16 tile (read as it is: not staged) whose rows are a multiple of 4 KiB apart shares
    the L1's sets; a staged float32 tile (its scratch padded) does not."""
    wide = _kernel(lambda x, y: x.T + y, "f16[2048,2048]", "f16[2048,2048]").cost.cpu_terms
    odd = _kernel(lambda x, y: x.T + y, "f16[1000,1000]", "f16[1000,1000]").cost.cpu_terms
    f32 = _kernel(lambda x, y: x.T + y, "f32[1024,1024]", "f32[1024,1024]").cost.cpu_terms
    assert wide.transposed == wide.aliased == 2048 * 2048 and odd.transposed == 10 ** 6 and odd.aliased == 0
    assert f32.transposed == 1024 * 1024 and f32.aliased == 0
    assert _kernel(lambda x, y: x.T + y, "f16[2048,2048]", "f16[2048,2048]").cost.seconds > \
        _kernel(lambda x, y: x.T + y, "f16[2000,2000]", "f16[2000,2000]").cost.seconds * 1.5


def test_a_kernel_after_a_large_producer_starts_cold():
    """A batch mean of row sums: the second kernel's input was produced by a kernel that
    streamed 8 MiB (past the private cache, evicting the call path): its fixed cost includes a
    cold start; after a producer that fits, or on the caller's arrays, it does not."""
    def batch_mean(x, y):
        return np.mean(np.sum(x * y, axis=-1), axis=0)

    def groups(n):
        return kfuse.explain(kfuse.jit(batch_mean), f"f32[{n},{n}]", f"f32[{n},{n}]", device="cpu").groups
    big, small = groups(1024), groups(64)
    assert [g.cost.cpu_terms.cold for g in big] == [0, 1]
    assert [g.cost.cpu_terms.cold for g in small] == [0, 0]
    t = big[1].cost.cpu_terms
    warm = cpu_cost.seconds(dataclasses.replace(t, cold=0, after_large=0), CPU.cpu, CPU.levels, CPU.sms)[0]
    assert t.after_large == 1 and CPU.cpu.cold > 0      # (right after the sums, in the call: colder still)
    assert big[1].cost.seconds == pytest.approx(warm + CPU.cpu.cold * cpu_cost.AFTER_LARGE_COLD)


def test_a_kernel_right_after_a_large_one_in_its_call_starts_colder():
    """An accuracy over 8 MiB of logits: the mean of 8192 matches runs right after the argmax
    (14.1 us measured in a corpus run on the Xeon VM, 6.3 priced as a plain cold start); the
    first kernel of a call, after the caller's own work, starts plainly cold."""
    def accuracy(logits, labels):
        return np.mean((np.argmax(logits, axis=1) == labels).astype(np.float32), axis=0)
    big = kfuse.explain(kfuse.jit(accuracy), "f32[8192,257]", "i8[8192]", device="cpu").groups
    assert [(g.cost.cpu_terms.cold, g.cost.cpu_terms.after_large) for g in big] == [(0, 0), (1, 1)]
    t = big[1].cost.cpu_terms
    plain = cpu_cost.seconds(dataclasses.replace(t, after_large=0), CPU.cpu, CPU.levels, CPU.sms)[0]
    assert cpu_cost.AFTER_LARGE_COLD > 1
    assert big[1].cost.seconds == pytest.approx(plain + (cpu_cost.AFTER_LARGE_COLD - 1) * CPU.cpu.cold)


def test_a_gather_keeps_its_loop_scalar():
    """nll's pick, logits[i, label[i]] - m[i] - log(s[i]): the gather keeps LLVM from vectorising
    the loop, so its log runs scalar (priced as one beside an accumulator); without a gather the
    same log is vectorised."""
    def pick(logits, labels, m, s):
        return np.mean(np.take_along_axis(logits, labels[:, None], axis=1)[:, 0] - m - np.log(s))
    (g,) = [g for g in kfuse.explain(kfuse.jit(pick), "f32[8192,257]", "i64[8192]", "f32[8192]", "f32[8192]",
                                      device="cpu").groups if "log" in g.ops]
    t = g.cost.cpu_terms
    assert t.vector == t.reduce_vector == 8192
    (h,) = kfuse.explain(kfuse.jit(lambda m, s: np.mean(m - np.log(s))), "f32[8192]", "f32[8192]",
                         device="cpu").groups
    assert h.cost.cpu_terms.vector == 8192 and h.cost.cpu_terms.reduce_vector == 0



def test_a_cold_call_pays_a_line_for_each_pick_a_page_apart():
    """The label-smoothed cross-entropy's pick of 128 labels from rows of 125 KiB, after the row
    kernel: cold, each pick a line of its own (no prefetcher crosses the page); nll's picks from
    rows of 1 KiB are not (a line fetched serves the next rows' pages alike)."""
    def pick(logits, labels, lse):
        return np.mean(np.take_along_axis(logits, labels[:, None], axis=1)[:, 0] - lse)

    def terms(spec, n):
        groups = kfuse.explain(kfuse.jit(pick), spec, f"i64[{n}]", f"f32[{n}]", device="cpu").groups
        (t,) = [g.cost.cpu_terms for g in groups if g.cost.cpu_terms.gathered]
        return t
    wide, narrow = terms("f32[128,32000]", 128), terms("f32[8192,257]", 8192)
    assert (wide.gathered, wide.paged) == (128, 128) and (narrow.gathered, narrow.paged) == (8192, 0)
    t = dataclasses.replace(wide, cold=1)
    base = cpu_cost.seconds(dataclasses.replace(t, paged=0), CPU.cpu, CPU.levels, CPU.sms)[0]
    assert cpu_cost.seconds(t, CPU.cpu, CPU.levels, CPU.sms)[0] == pytest.approx(base + 128 * CPU.cpu.cold_pick)
    assert cpu_cost.seconds(wide, CPU.cpu, CPU.levels, CPU.sms)[0] < base      # (warm: no line a pick)


def test_cold_after_a_producer_of_a_small_result_from_large_data():
    """An accuracy: the mean of 8192 matches, each an argmax over a row of 8 MiB of logits. The
    mean's input is small, but the kernel that made it streamed the logits: its call starts cold."""
    def accuracy(logits, labels):
        return np.mean((np.argmax(logits, axis=1) == labels).astype(np.float32), axis=0)
    big = kfuse.explain(kfuse.jit(accuracy), "f32[8192,257]", "i8[8192]", device="cpu").groups
    small = kfuse.explain(kfuse.jit(accuracy), "f32[64,31]", "i8[64]", device="cpu").groups
    assert [g.cost.cpu_terms.cold for g in big] == [0, 1]
    assert [g.cost.cpu_terms.cold for g in small] == [0, 0]


def test_a_kernel_after_a_large_one_starts_cold_cyclically():
    """adaLN: a small shift-and-scale add, then a layernorm of 8 MiB rows. Called again and again,
    the add runs after the last call's layernorm: its call starts cold; the layernorm's after the
    add does not (it streamed 8 KiB)."""
    def adaln(x, shift, scale):
        mu = x.mean(-1, keepdims=True)
        var = x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-6) * (1 + scale) + shift
    big = kfuse.explain(kfuse.jit(lambda x, s, c: adaln(x, s + c, c * 2)), "f32[1024,2048]", "f32[2048]",
                        "f32[2048]", device="cpu").groups
    assert len(big) == 2 and [g.cost.cpu_terms.cold for g in big] == [1, 0]
    # (after the last call's layernorm, but the caller's own work came between: plain cold)
    assert big[0].cost.cpu_terms.after_large == 0
    small = kfuse.explain(kfuse.jit(lambda x, s, c: adaln(x, s + c, c * 2)), "f32[16,64]", "f32[64]",
                          "f32[64]", device="cpu").groups
    assert all(g.cost.cpu_terms.cold == 0 for g in small)


def test_the_first_kernel_starts_cold_after_any_large_one():
    """A cross-entropy over 8 MiB of logits: its label range check runs first, after the last
    call's small picked mean, which ran after the logits' 8 MiB row kernel: the check's call
    starts cold (7.8 us measured on the Xeon VM, 2.5 priced warm)."""
    def nll(logits, labels):
        m = np.max(logits, axis=1, keepdims=True)
        logp = logits - m - np.log(np.sum(np.exp(logits - m), axis=1, keepdims=True))
        return -np.mean(np.take_along_axis(logp, labels[:, None], axis=1), axis=(0, 1))
    big = kfuse.explain(kfuse.jit(nll), "f32[8192,257]", "i64[8192]", device="cpu").groups
    assert len(big) == 3 and big[0].cost.bytes_read < (1 << 20) < big[1].cost.bytes_read
    assert [g.cost.cpu_terms.cold for g in big] == [1, 0, 1]
    small = kfuse.explain(kfuse.jit(nll), "f32[64,31]", "i64[64]", device="cpu").groups
    assert all(g.cost.cpu_terms.cold == 0 for g in small)


def test_memory_and_compute_overlap_in_part():
    """seconds = fixed + the larger of memory and compute + (1 - OVERLAP) of the smaller: an
    elementwise kernel's stream overlaps its arithmetic more than a reduction's phases do."""
    ew = _kernel(lambda x: np.tanh(x) * 2.0, "f32[1024,1024]").cost.cpu_terms
    red = _kernel(lambda x: np.exp(x).sum(axis=-1), "f32[1024,1024]").cost.cpu_terms
    assert (ew.streamed, red.streamed) == (1, 0)
    assert cpu_cost.OVERLAP[0] > cpu_cost.OVERLAP[1] >= 0.0 and cpu_cost.OVERLAP[0] < 1.0
    for t, ov in ((ew, cpu_cost.OVERLAP[0]), (red, cpu_cost.OVERLAP[1])):
        total, mem, comp = cpu_cost.seconds(t, CPU.cpu, CPU.levels, CPU.sms)
        summed = cpu_cost.seconds(dataclasses.replace(t, streamed=1 - t.streamed), CPU.cpu, CPU.levels, CPU.sms)
        fixed = total - max(mem, comp) - (1 - ov) * min(mem, comp)
        assert mem > 0 and comp > 0 and fixed > 0
        assert total < fixed + mem + comp
        assert (summed[0] < total) == bool(t.streamed == 0)
