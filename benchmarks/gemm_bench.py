"""P5 benchmark: GEMM + bias + GELU(tanh) in f16 at 4096x4096x4096 and 8192x1024x4096.

Per shape: cuBLAS GEMM alone (cupy.matmul, timed right before and after the jit row); kfuse.jit of
the P5 function (the planner's pick, shown by the plan, run by the runtime: "jit"), the same with
the cuBLAS path's epilogue from the group's own elementwise kernel, and with the pick overridden to
the generated kernel; the generated fused kernel through the runner (tiles of the search space,
best kept; and without epilogue); the runner's cuBLAS + epilogue candidate (in place; ablations:
rows reversed, out of place; the epilogue kernel alone); torch eager, torch.compile and torch
matmul alone when importable. Every TFLOP/s also as a ratio to cuBLAS alone from the same run.
Prints a table; writes gemm_bench.json and gemm_bench.md under the out dir (``--out DIR``, else
$OUT, else ./bench_out). Times: median over trials of (CUDA events around 20 back-to-back calls)/20.
Run on a GPU machine: ``python3 benchmarks/gemm_bench.py [--quick] [--out DIR]`` (~1-2 min on an H200).

int8 (issue 34 item 4, :func:`int8_bench`): at 8192^3 (``--quick``: 4096^3) the int8 GEMM against
cuBLAS's f16 GEMM on the same shape and ``torch._int_mm``: the runner's int8 kernel per tile (B
K-major, a Linear weight's ``x @ W.T``; and B row-major, packed K-major first), kfuse.jit of the
dequantising function (both B layouts), and the bit-exactness checks (1024^3 against NumPy; the
big shape against ``torch._int_mm``). ``--int8`` runs only this part; it writes
gemm_int8_bench.json/.md beside the others.

On an sm_90 GPU the tiles include the TMA + wgmma kernel's (``codegen.gemm_wgmma``). ``--hopper``
(:func:`hopper_bench`) runs issue 34's GEMM bar: GEMM + bias + GELU at 4096^3, 8192x1024x4096 and
16x2048^3, f16 and bf16 (torch tensors' bits), the generated kernel per wgmma tile beside cuBLAS's
GEMM alone (torch.matmul), cuBLAS followed by the epilogue (torch eager; and kfuse's cuBLAS
candidate, f16), writing gemm_hopper_bench.json/.md.
"""
from __future__ import annotations

import dataclasses
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import cupy as cp
import numpy as np

from kfuse.codegen import gemm_wgmma
from kfuse.codegen.gemm_cuda import EpInput, GemmEpilogue, GemmSpec, gemm_search_space
from kfuse.runtime.gemm import GemmRunner

SHAPES = [(4096, 4096, 4096), (8192, 1024, 4096)]


def time_cupy(fn, reps=20, trials=5, warm=3):
    """Median over trials of (events around `reps` back-to-back calls) / reps: launches queue up,
    so host overhead overlaps device work (measured apart as `host_us`)."""
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(trials):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e) / reps)
    return statistics.median(ts)


def host_us(fn, reps=50):
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    t = (time.perf_counter() - t) / reps * 1e6
    cp.cuda.Device().synchronize()
    return t


def time_torch(fn, reps=20, trials=5, warm=3):
    import torch
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(trials):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / reps)
    return statistics.median(ts)


def ref_f32(a, b, bias):
    x = cp.matmul(a.astype(cp.float32), b.astype(cp.float32)) + bias.astype(cp.float32)
    return 0.5 * x * (1 + cp.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def rel(got, ref):
    return float(cp.linalg.norm(got.astype(cp.float32) - ref) / cp.linalg.norm(ref))


BENCH_TILES = ("256x128x32_w4x2_s3", "128x256x32_w2x4_s3", "128x128x32_w2x2_s4", "128x128x64_w2x4_s3")


def p5_fn(a, w, bias):
    import numpy as _np
    y = a @ w + bias
    return 0.5 * y * (1.0 + _np.tanh(0.7978845608028654 * (y + 0.044715 * (y * y * y))))


def main():
    quick = "--quick" in sys.argv
    out_dir = (sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv
               else os.environ.get("OUT") or "bench_out")
    os.makedirs(out_dir, exist_ok=True)
    import kfuse
    dev = cp.cuda.Device()
    name = cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode()
    if "--int8" in sys.argv:
        int8_bench(quick, out_dir, name)
        return
    if "--hopper" in sys.argv:
        hopper_bench(out_dir, name)
        return
    ep = GemmEpilogue.chain(("add", ("in", 0)), "gelu_tanh", inputs=(EpInput("f16", "row"),))
    spec = GemmSpec("f16", ep)
    runner = GemmRunner()
    rows = []
    rng = cp.random.default_rng(0)
    space = [t for t in tile_space("f16") if t.name() in BENCH_TILES or hasattr(t, "pingpong")]
    for M, N, K in SHAPES:
        a = rng.standard_normal((M, K), dtype=cp.float32).astype(cp.float16)
        b = rng.standard_normal((K, N), dtype=cp.float32).astype(cp.float16)
        bias = rng.standard_normal((N,), dtype=cp.float32).astype(cp.float16)
        flops = 2.0 * M * N * K
        ref = ref_f32(a, b, bias)
        r = {"shape": [M, N, K], "gpu": name}
        # the jit path: what kfuse.jit runs for P5 (plan -> pick -> runtime); cuBLAS alone timed
        # right before and right after it (the ratio uses their mean: the device's clocks drift)
        f = kfuse.jit(p5_fn)
        out = f(a, b, bias)
        r["jit_err"] = rel(out, ref)
        c0 = time_cupy(lambda: cp.matmul(a, b), trials=9)
        r["jit_ms"] = time_cupy(lambda: f(a, b, bias), trials=9)
        c1 = time_cupy(lambda: cp.matmul(a, b), trials=9)
        r["cublas_ms"] = (c0 + c1) / 2
        r["cublas_before_after_ms"] = [c0, c1]
        prog = next(iter(f._programs.values())).program
        # ablation: the cuBLAS path with the group's own elementwise epilogue kernel (in place)
        from kfuse.runtime import gpu_launch
        gpu_launch.CUBLAS_EPILOGUE = "group"
        try:
            fq = kfuse.jit(p5_fn)
            fq(a, b, bias)
            r["jit_group_epi_ms"] = time_cupy(lambda: fq(a, b, bias), trials=9)
        finally:
            gpu_launch.CUBLAS_EPILOGUE = "gemm"
        # the other candidate through the same runtime: the plan's pick overridden to "generated"
        fg = kfuse.jit(p5_fn)
        fg(a, b, bias)
        pg = next(iter(fg._programs.values())).program
        gg = pg.plan.groups[0]
        object.__setattr__(gg, "cost", dataclasses.replace(gg.cost, impl="generated"))
        pg._mm_info.clear()
        out = fg(a, b, bias)
        r["jit_generated_err"] = rel(out, ref)
        r["jit_generated_ms"] = time_cupy(lambda: fg(a, b, bias))
        r["jit_generated_ran"] = pg._mm_info[gg.id][0] is not None
        g = prog.plan.groups[0]
        r["planner_pick"] = getattr(g.cost, "impl", "?")
        r["planner_predicted_us"] = {k: v * 1e6 for k, v in getattr(g.cost, "candidates", ())}
        r["jit_in_place"] = prog._mm_info.get(g.id, (None, None))[1] is not None
        r["plan"] = str(prog.plan)
        tiles = {}
        for t in (space[:1] if quick else space):
            try:
                out = runner.run(a, b, [bias], spec, t, backend="generated")
                err = rel(out, ref)
                ms = time_cupy(lambda: runner.run(a, b, [bias], spec, t, backend="generated"))
                tiles[t.name()] = {"ms": ms, "err": err}
            except Exception as e:  # a failing tile is infinitely slow
                tiles[t.name()] = {"ms": float("inf"), "err": None, "error": f"{type(e).__name__}: {e}"[:300]}
        best = min(tiles, key=lambda k: tiles[k]["ms"])
        r["generated_tiles"] = tiles
        r["generated_best_tile"] = best
        r["generated_ms"] = tiles[best]["ms"]
        plain = GemmSpec("f16", GemmEpilogue(out_dtype="f16"))
        runner.run(a, b, [], plain, tiles_best(tiles), backend="generated")
        r["generated_noepi_ms"] = time_cupy(lambda: runner.run(a, b, [], plain, tiles_best(tiles), backend="generated"))
        out = runner.run(a, b, [bias], spec, backend="cublas")
        r["cublas_epi_err"] = rel(out, ref)
        r["cublas_epi_ms"] = time_cupy(lambda: runner.run(a, b, [bias], spec, backend="cublas"))
        r["cublas_epi_rev_ms"] = time_cupy(lambda: runner.run(a, b, [bias], spec, backend="cublas", reverse=True))
        o2 = cp.empty((M, N), cp.float16)
        r["cublas_epi_outofplace_ms"] = time_cupy(lambda: runner.run(a, b, [bias], spec, backend="cublas", out=o2))
        x = cp.matmul(a, b)
        r["epilogue_alone_ms"] = time_cupy(lambda: runner.run_cublas_epilogue_only(x, bias, spec, M, N))
        r["host_us_jit"] = host_us(lambda: f(a, b, bias))
        try:
            import torch
            import torch.nn.functional as F
            ta, tb, tbias = (torch.from_dlpack(x) for x in (a, b, bias))
            fe = lambda: F.gelu(torch.addmm(tbias, ta, tb), approximate="tanh")
            r["torch_eager_ms"] = time_torch(fe)
            r["torch_mm_alone_ms"] = time_torch(lambda: ta @ tb)
            try:
                fc = torch.compile(lambda x, y, z: F.gelu(x @ y + z, approximate="tanh"))
                r["torch_compile_ms"] = time_torch(lambda: fc(ta, tb, tbias))
            except Exception as e:
                r["torch_compile_error"] = f"{type(e).__name__}: {e}"[:300]
        except ImportError:
            pass
        for k in [k for k in list(r) if k.endswith("_ms") and isinstance(r[k], float)]:
            r[k.replace("_ms", "_tflops")] = flops / (r[k] * 1e-3) / 1e12
            r[k.replace("_ms", "_ratio")] = r["cublas_ms"] / r[k]
        rows.append(r)
        print(json.dumps({k: v for k, v in r.items() if k not in ("plan", "generated_tiles")}, default=str), flush=True)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    lines = [f"# P5 GEMM + bias + GELU(tanh), f16 — {name}, {stamp}", "",
             "TFLOP/s (ratio to cuBLAS GEMM alone, same run). jit = kfuse.jit(P5) running the planner's pick.", "",
             "| shape | cuBLAS alone | jit: planner pick | jit: cuBLAS + group's elementwise epilogue | jit: generated forced | generated, best tile (runner) | "
             "runner cuBLAS+epi (in place) | runner cuBLAS+epi rows reversed | runner cuBLAS+epi out of place | "
             "torch eager | torch.compile | torch matmul alone |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cb = r["cublas_tflops"]

        def cell(k):
            v = r.get(k + "_tflops")
            return f"{v:.0f} ({v / cb:.3f}x)" if v else "-"
        lines.append(f"| {'x'.join(map(str, r['shape']))} | {cb:.0f} | {cell('jit')} **{r['planner_pick']}** | "
                     f"{cell('jit_group_epi')} | {cell('jit_generated')} | {cell('generated')} [{r['generated_best_tile']}] | {cell('cublas_epi')} | "
                     f"{cell('cublas_epi_rev')} | {cell('cublas_epi_outofplace')} | "
                     f"{cell('torch_eager')} | {cell('torch_compile')} | {cell('torch_mm_alone')} |")
    lines.append("")
    for r in rows:
        lines.append(f"tiles {r['shape']}: " + ", ".join(
            f"{k} {flops_of(r) / (v['ms'] * 1e-3) / 1e12:.0f} TF/s err {v['err']:.1e}" if v.get("err") is not None
            else f"{k} failed: {v.get('error')}" for k, v in r["generated_tiles"].items()))
        lines.append(f"{r['shape']}: errors vs f32 ref: jit {r['jit_err']:.1e}, cublas+epi {r['cublas_epi_err']:.1e}; "
                     f"generated without epilogue {r['generated_noepi_tflops']:.0f} TF/s; epilogue kernel alone "
                     f"{r['epilogue_alone_ms'] * 1e3:.1f} us; jit in place: {r['jit_in_place']}; "
                     f"jit host time/call {r['host_us_jit']:.0f} us; planner predicted (us): "
                     + ", ".join(f"{k} {v:.1f}" for k, v in r["planner_predicted_us"].items()))
    text = "\n".join(lines)
    with open(os.path.join(out_dir, "gemm_bench.md"), "w") as f_:
        f_.write(text + "\n")
    with open(os.path.join(out_dir, "gemm_bench.json"), "w") as f_:
        json.dump({"date": stamp, "gpu": name, "rows": rows}, f_, indent=1, default=str)
    print(text)
    int8_bench(quick, out_dir, name)


def _example(name):
    """The jitted function ``name`` of ``examples/<name>.py``."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"kfuse_example_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def product_fn(x, y):
    import numpy as _np
    return x.astype(_np.int32) @ y.astype(_np.int32)


def _torch_int_mm(ta, tw):
    """torch._int_mm of A and the weight's transpose (column-major), or of a row-major copy
    where that layout is refused."""
    import torch
    try:
        torch._int_mm(ta, tw.t())
        return lambda: torch._int_mm(ta, tw.t())
    except RuntimeError:
        tb = tw.t().contiguous()
        return lambda: torch._int_mm(ta, tb)


def int8_bench(quick: bool, out_dir: str, name: str) -> dict:
    """The int8 rows (see the module docstring): TOPS, and ratios to cuBLAS f16 (target >= 1.3)."""
    M = N = K = 4096 if quick else 8192
    ops = 2.0 * M * N * K
    rng = cp.random.default_rng(1)
    a = rng.integers(-128, 128, (M, K), dtype=cp.int8)
    w = rng.integers(-128, 128, (N, K), dtype=cp.int8)          # [N, K]: x @ w.T, K-major
    b = cp.ascontiguousarray(w.T)                               # [K, N] row-major: packed
    sr, sc, bias = (rng.random(n, dtype=cp.float32) / cp.float32(100) for n in (M, N, N))
    r = {"shape": [M, N, K], "gpu": name}
    a16, b16 = a.astype(cp.float16), b.astype(cp.float16)
    c0 = time_cupy(lambda: cp.matmul(a16, b16), trials=9)
    runner = GemmRunner()
    spec = GemmSpec("s8", GemmEpilogue(out_dtype="i32", product_dtype="int32"))
    tiles = {}
    for t in tile_space("s8")[:1 if quick else None]:
        try:
            runner.run(a, w.T, [], spec, t, backend="generated")
            tiles[t.name()] = time_cupy(lambda: runner.run(a, w.T, [], spec, t, backend="generated"))
        except Exception as e:  # a failing tile is infinitely slow
            tiles[t.name()] = float("inf")
            r.setdefault("tile_errors", {})[t.name()] = f"{type(e).__name__}: {e}"[:300]
    r["int8_tiles_ms"] = tiles
    r["int8_best_tile"] = best = min(tiles, key=tiles.get)
    r["int8_kmajor_ms"] = tiles[best]
    tile = next(t for t in tile_space("s8") if t.name() == best)
    r["int8_rowmajor_b_ms"] = time_cupy(lambda: runner.run(a, b, [], spec, tile, backend="generated"))
    f = _example("int8_linear")                  # x @ W.T: W [N, K] read in place; b.T: packed
    f(a, w, sr, sc, bias), f(a, b.T, sr, sc, bias)
    r["jit_linear_ms"] = time_cupy(lambda: f(a, w, sr, sc, bias))
    r["jit_dequant_rowmajor_b_ms"] = time_cupy(lambda: f(a, b.T, sr, sc, bias))
    r["plan"] = str(next(iter(f._programs.values())).program.plan)
    c1 = time_cupy(lambda: cp.matmul(a16, b16), trials=9)
    r["cublas_f16_ms"] = (c0 + c1) / 2
    r["cublas_f16_before_after_ms"] = [c0, c1]
    try:
        import torch
        int_mm = _torch_int_mm(torch.from_dlpack(a), torch.from_dlpack(w))
        r["torch_int_mm_ms"] = time_torch(int_mm)
        mine = runner.run(a, w.T, [], spec, tile, backend="generated")
        r["int8_equals_torch_int_mm"] = bool(cp.array_equal(mine, cp.from_dlpack(int_mm())))
    except Exception as e:
        r["torch_error"] = f"{type(e).__name__}: {e}"[:300]
    r["bit_exact_1024_vs_numpy"] = _int8_exact_vs_numpy()
    for k in [k for k in list(r) if k.endswith("_ms") and isinstance(r[k], float)]:
        r[k.replace("_ms", "_tops")] = ops / (r[k] * 1e-3) / 1e12
        r[k.replace("_ms", "_vs_cublas_f16")] = r["cublas_f16_ms"] / r[k]
    lines = [f"# int8 GEMM {M}x{N}x{K} — {name}, {time.strftime('%Y-%m-%d %H:%M:%S')}", "",
             "TOPS (ratio to cuBLAS f16 TFLOP/s, same run; issue 34's bar: >= 1.3x)", "",
             "| cuBLAS f16 | kfuse int8, B K-major [tile] | int8, B row-major (packed) | jit linear (dequant) | "
             "jit dequant, B row-major | torch._int_mm |", "|---|---|---|---|---|---|"]

    def cell(k):
        v = r.get(k + "_tops")
        return f"{v:.0f} ({r[k + '_vs_cublas_f16']:.2f}x)" if v else "-"
    lines.append(f"| {r['cublas_f16_tops']:.0f} | {cell('int8_kmajor')} [{best}] | {cell('int8_rowmajor_b')} | "
                 f"{cell('jit_linear')} | {cell('jit_dequant_rowmajor_b')} | {cell('torch_int_mm')} |")
    lines += ["", f"bit-exact vs NumPy (1024^3, jit dequant and product): {r['bit_exact_1024_vs_numpy']}; "
              f"int8 product == torch._int_mm: {r.get('int8_equals_torch_int_mm', r.get('torch_error'))}",
              "tiles (ms): " + ", ".join(f"{k} {v:.3f}" for k, v in tiles.items())]
    with open(os.path.join(out_dir, "gemm_int8_bench.md"), "w") as f_:
        f_.write("\n".join(lines) + "\n")
    with open(os.path.join(out_dir, "gemm_int8_bench.json"), "w") as f_:
        json.dump(r, f_, indent=1, default=str)
    print("\n".join(lines), flush=True)
    return r


def _int8_exact_vs_numpy() -> bool:
    import kfuse
    rng = np.random.default_rng(2)
    a, b = (rng.integers(-128, 128, s, dtype=np.int8) for s in ((1024, 1024), (1024, 1024)))
    sr, sc, bias = (rng.random(1024, dtype=np.float32) / np.float32(100) for _ in range(3))
    got = _example("int8_linear")(*(cp.asarray(x) for x in (a, b.T, sr, sc, bias))).get()
    prod = kfuse.jit(product_fn)(cp.asarray(a), cp.asarray(b)).get()
    ref_prod = a.astype(np.int32) @ b.astype(np.int32)
    ref = (ref_prod * sr[:, None] * sc + bias).astype(np.float16)
    return bool(np.array_equal(got.view(np.uint16), ref.view(np.uint16)) and np.array_equal(prod, ref_prod))


def tiles_best(tiles):
    name = min(tiles, key=lambda k: tiles[k]["ms"])
    return next(t for t in tile_space("f16") if t.name() == name)


def tile_space(dtype: str) -> list:
    """The mma.sync kernel's tiles, then on sm_90 the TMA + wgmma kernel's."""
    hopper = int(cp.cuda.Device().compute_capability) == 90
    return list(gemm_search_space(dtype)) + (list(gemm_wgmma.SEARCH) if hopper else [])


HOPPER_SHAPES = [(1, 4096, 4096, 4096), (1, 8192, 1024, 4096), (16, 2048, 2048, 2048)]


def hopper_bench(out_dir: str, name: str) -> list:
    """Issue 34's GEMM rows (module docstring): ms and TFLOP/s, ratios to cuBLAS alone."""
    import torch
    import torch.nn.functional as F
    runner, rows = GemmRunner(), []
    for batch, M, N, K in HOPPER_SHAPES:
        for dt in ("f16", "bf16"):
            tdt = torch.float16 if dt == "f16" else torch.bfloat16
            lead = (batch,) if batch > 1 else ()
            ta, tb = torch.randn(lead + (M, K), device="cuda", dtype=tdt), torch.randn(lead + (K, N), device="cuda", dtype=tdt)
            tbias = torch.randn(N, device="cuda", dtype=tdt)
            bits = lambda t: cp.from_dlpack(t.view(torch.int16)).view(cp.float16 if dt == "f16" else cp.uint16)
            a, b, bias = bits(ta), bits(tb), bits(tbias)
            spec = GemmSpec(dt, GemmEpilogue.chain(("add", ("in", 0)), "gelu_tanh", inputs=(EpInput(dt, "row"),),
                                                   out_dtype=dt))
            r = {"shape": [batch, M, N, K], "dtype": dt, "gpu": name, "flop": 2.0 * batch * M * N * K}
            r["cublas_ms"] = time_torch(lambda: torch.matmul(ta, tb))
            r["cublas_then_torch_epilogue_ms"] = time_torch(lambda: F.gelu(torch.matmul(ta, tb) + tbias, approximate="tanh"))
            if dt == "f16":
                r["cublas_then_kfuse_epilogue_ms"] = time_cupy(lambda: runner.run(a, b, [bias], spec, backend="cublas"))
            tiles = {t.name(): time_cupy(lambda: runner.run(a, b, [bias], spec, t, backend="generated", dtype=dt))
                     for t in gemm_wgmma.SEARCH}
            r["wgmma_tiles_ms"] = tiles
            r["wgmma_best_tile"] = min(tiles, key=tiles.get)
            r["wgmma_ms"] = tiles[r["wgmma_best_tile"]]
            r["wgmma_default_ms"] = time_cupy(lambda: runner.run(a, b, [bias], spec, backend="generated", dtype=dt))
            ref = F.gelu(torch.matmul(ta.float(), tb.float()) + tbias.float(), approximate="tanh")
            got = torch.from_dlpack(runner.run(a, b, [bias], spec, backend="generated", dtype=dt).view(cp.int16)).view(tdt)
            r["rel_err_vs_f32"] = float((got.float() - ref).norm() / ref.norm())
            rows.append(r)
            print(json.dumps(r), flush=True)
    lines = [f"# GEMM + bias + GELU(tanh) on sm_90 — {name}, {time.strftime('%Y-%m-%d %H:%M:%S')}", "",
             "ms (TFLOP/s; ratio of cuBLAS GEMM alone's time to it). Bar: generated >= 0.95x cuBLAS alone.", "",
             "| shape | dtype | cuBLAS alone | cuBLAS + torch epilogue | cuBLAS + kfuse epilogue | "
             "generated (TMA + wgmma), best tile | default tile |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        def cell(k, r=r):
            v = r.get(k)
            return f"{v:.3f} ({r['flop'] / v / 1e9:.0f}; {r['cublas_ms'] / v:.2f}x)" if v else "-"
        lines.append(f"| {'x'.join(map(str, r['shape']))} | {r['dtype']} | {cell('cublas_ms')} | "
                     f"{cell('cublas_then_torch_epilogue_ms')} | {cell('cublas_then_kfuse_epilogue_ms')} | "
                     f"{cell('wgmma_ms')} [{r['wgmma_best_tile']}] | {cell('wgmma_default_ms')} |")
    with open(os.path.join(out_dir, "gemm_hopper_bench.md"), "w") as f_:
        f_.write("\n".join(lines) + "\n")
    with open(os.path.join(out_dir, "gemm_hopper_bench.json"), "w") as f_:
        json.dump(rows, f_, indent=1)
    print("\n".join(lines), flush=True)
    return rows


def flops_of(r):
    M, N, K = r["shape"]
    return 2.0 * M * N * K




if __name__ == "__main__":
    main()
