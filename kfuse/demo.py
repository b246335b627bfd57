"""``kfuse demo``: compile the public workloads (P1-P6 and RMSNorm+residual, the same functions as
``examples/``) on the best device present, check each against NumPy, print its fused plan and its
speed-up over unfused NumPy (and CuPy on a GPU), and write every stage's dump to a folder.

Uses only the public API (``kfuse.jit``, ``JitFunction.lower(...).as_text(stage)``,
``kfuse.explain``). The CUDA C and PTX dumps are produced through NVRTC even without a GPU, and
skipped with a note when NVRTC (``cuda-bindings`` + ``nvidia-cuda-nvrtc``) is not installed.
"""
from __future__ import annotations

import dataclasses
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

SQRT_2_OVER_PI = 0.7978845608028654  # Python floats are weak scalars: float32 stays float32


# ---- the workloads (plain NumPy-style functions; the same code runs eagerly on NumPy/CuPy) ----

def gelu_bias(x, w, b):
    h = x * w + b
    return 0.5 * h * (1.0 + np.tanh(SQRT_2_OVER_PI * (h + 0.044715 * (h * h * h))))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def rownorm(x):
    return np.sqrt(np.sum(x * x, axis=1))


def gemm_gelu(x, W, b):
    h = x @ W + b
    return 0.5 * h * (1.0 + np.tanh(SQRT_2_OVER_PI * (h + 0.044715 * (h * h * h))))


def adam(param, grad, m, v):
    lr, beta1, beta2, eps, t = 1e-3, 0.9, 0.999, 1e-8, 10
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad * grad
    m_hat = m / (1 - beta1 ** t)
    v_hat = v / (1 - beta2 ** t)
    param = param - lr * m_hat / (np.sqrt(v_hat) + eps)
    return param, m, v


def rmsnorm_residual(x, residual, g):
    h = x + residual
    rms = np.sqrt(np.mean(h * h, axis=-1, keepdims=True) + 1e-6)
    return h / rms * g, h


# ---- input builders: size -> list of (dtype, shape, kind) ----

@dataclasses.dataclass(frozen=True)
class Workload:
    tag: str
    fn: Callable
    args: Callable[[tuple, str], list[tuple[str, tuple[int, ...], str]]]  # (size, dtype) -> (name, shape, kind)
    cpu: tuple          # size on the CPU (issue 9's bracketed sizes)
    gpu: tuple          # size on a GPU
    quick: tuple        # tiny size (tests)
    gpu_dtype: str = "float32"
    rtol: float = 1e-4
    atol: float = 1e-5


def _mat_vecs(*vecs):
    def build(size, dtype):
        n, m = size
        return [("x", (n, m), "normal")] + [(v, (m,), "normal") for v in vecs]
    return build


def _rmsnorm_args(size, dtype):
    n, m = size
    return [("x", (n, m), "normal"), ("residual", (n, m), "normal"), ("g", (m,), "normal")]


def _gemm_args(size, dtype):
    m, k, n = size
    return [("x", (m, k), "scaled"), ("W", (k, n), "normal"), ("b", (n,), "normal")]


def _adam_args(size, dtype):
    (n,) = size
    return [("param", (n,), "normal"), ("grad", (n,), "normal"), ("m", (n,), "small"), ("v", (n,), "positive")]


WORKLOADS: tuple[Workload, ...] = (
    Workload("P1", gelu_bias, _mat_vecs("w", "b"), (4096, 4096), (8192, 8192), (64, 96)),
    Workload("P2", softmax, _mat_vecs(), (4096, 4096), (16384, 4096), (64, 96)),
    Workload("P3", layernorm, _mat_vecs("g", "b"), (4096, 4096), (16384, 4096), (64, 96)),
    Workload("P4", rownorm, _mat_vecs(), (4096, 4096), (16384, 4096), (64, 96)),
    Workload("P5", gemm_gelu, _gemm_args, (512, 512, 512), (4096, 4096, 4096), (32, 48, 40),
             gpu_dtype="float16", atol=1e-4),
    Workload("P6", adam, _adam_args, (1 << 24,), (1 << 26,), (1000,)),
    Workload("RMS", rmsnorm_residual, _rmsnorm_args, (4096, 4096), (16384, 4096), (64, 96)),
)

_CHECK_SIZES_GPU = {"P5": (256, 256, 256)}  # NumPy has no fast float16 GEMM: check smaller
_STAGE_FILES = (("traced", "traced.txt"), ("optimized", "optimized.txt"), ("fused", "fused.txt"),
                ("kernel", "kernel.txt"), ("cpu", "cpu.py"))
_GPU_STAGE_FILES = (("cuda", "kernels.cu"), ("ptx", "kernels.ptx"))


def _make_inputs(wl: Workload, size: tuple, dtype: str, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _name, shape, kind in wl.args(size, dtype):
        a = rng.standard_normal(shape, dtype=np.float32)
        if kind == "scaled":
            a *= np.float32(1.0 / np.sqrt(shape[-1]))
        elif kind == "small":
            a *= np.float32(0.1)
        elif kind == "positive":
            np.abs(a, out=a)
            a *= np.float32(0.01)
        out.append(a.astype(dtype, copy=False))
    return out


def _spec(a) -> str:
    from .ir.specs import spec_of_value
    return str(spec_of_value(a))


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _check(got, want, rtol: float, atol: float) -> tuple[bool, str]:
    """Dtype and shape exact, values close (tolerance scaled to the result's magnitude)."""
    got, want = _as_tuple(got), _as_tuple(want)
    if len(got) != len(want):
        return False, f"{len(got)} outputs, NumPy has {len(want)}"
    worst = 0.0
    for g, w in zip(got, want):
        g, w = _to_host(g), np.asarray(w)
        if g.dtype != w.dtype or g.shape != w.shape:
            return False, f"got {g.dtype}{list(g.shape)}, NumPy gives {w.dtype}{list(w.shape)}"
        if w.dtype.kind == "f":
            rt, at = (max(rtol, 5e-3), max(atol, 1e-2)) if w.dtype == np.float16 else (rtol, atol)
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            scale = max(1.0, float(np.max(np.abs(w64), initial=0.0)))
            if not np.allclose(g64, w64, rtol=rt, atol=at * scale, equal_nan=True):
                err = float(np.nanmax(np.abs(g64 - w64) / (np.abs(w64) + at * scale), initial=0.0))
                return False, f"values differ from NumPy (max rel err {err:.2e})"
            denom = np.abs(w64) + at * scale
            worst = max(worst, float(np.nanmax(np.abs(g64 - w64) / denom, initial=0.0)))
        elif not np.array_equal(g, w):
            return False, "values differ from NumPy"
    return True, f"max rel err {worst:.1e}"


def _to_host(a):
    if type(a).__module__.startswith("cupy"):
        return a.get()
    return np.asarray(a)


def _median_time(f: Callable, args: list, reps: int, sync: Callable[[], None]) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f(*args)
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def gpu_present() -> bool:
    """Whether a CUDA GPU is usable (``kfuse.runtime.device`` when present, else CuPy's count)."""
    try:
        from .runtime import device as rdev
    except Exception:
        rdev = None
    for name in ("gpu_available", "has_gpu", "is_available", "available"):
        f = getattr(rdev, name, None)
        if callable(f):
            try:
                return bool(f())
            except Exception:
                return False
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def _write_dumps(jf_cpu, jf_gpu, specs: list[str], folder: Path, notes: list[str]) -> list[str]:
    """Write each stage; returns the list of stage failures (missing toolchains are notes)."""
    folder.mkdir(parents=True, exist_ok=True)
    failures = []
    lowered = jf_cpu.lower(*specs)
    for stage, fname in _STAGE_FILES:
        try:
            (folder / fname).write_text(lowered.as_text(stage) + "\n")
        except Exception as e:
            failures.append(f"{stage}: {type(e).__name__}: {e}")
    try:
        glowered = jf_gpu.lower(*specs)
    except Exception as e:
        failures.append(f"lower for cuda: {type(e).__name__}: {e}")
        return failures
    for stage, fname in _GPU_STAGE_FILES:
        try:
            (folder / fname).write_text(glowered.as_text(stage) + "\n")
        except ImportError as e:
            if (getattr(e, "name", None) or "").startswith("kfuse"):
                note = f"{stage} dump skipped: this kfuse build has no {e.name}"
            else:
                note = (f"{stage} dump skipped: {e} (install NVRTC with `pip install cuda-bindings "
                        f"nvidia-cuda-nvrtc`, or kfuse[cuda])")
            if note not in notes:
                notes.append(note)
        except Exception as e:
            msg = str(e)
            low = msg.lower()
            if "nvrtc" in low and any(w in low for w in ("not available", "not found", "install")):
                note = f"{stage} dump skipped: NVRTC unavailable ({msg.splitlines()[0]})"
                if note not in notes:
                    notes.append(note)
            else:
                failures.append(f"{stage}: {type(e).__name__}: {msg}")
    return failures


def run_demo(device: str = "auto", out_dir: str = "kfuse-demo", quick: bool = False,
             workloads: tuple[str, ...] | None = None, file=None) -> int:
    """Run the demo; returns 0 when every workload matched NumPy and every dump was written."""
    import kfuse
    out = file or sys.stdout

    def say(*a):
        print(*a, file=out, flush=True)

    if device not in ("auto", "cpu", "gpu"):
        raise ValueError(f"device must be auto, cpu or gpu, got {device!r}")
    have_gpu = gpu_present() if device in ("auto", "gpu") else False
    if device == "gpu" and not have_gpu:
        say("kfuse demo: --device gpu was asked for but no CUDA GPU (or CuPy) is usable")
        return 2
    on_gpu = have_gpu
    xp = None
    if on_gpu:
        import cupy as xp  # noqa: F811 - only on a GPU

        def sync():
            xp.cuda.get_current_stream().synchronize()
    else:
        def sync():
            pass
    reps = 1 if quick else 5
    out_path = Path(out_dir)
    out_path.mkdir(parents=True, exist_ok=True)
    where = "GPU" if on_gpu else "CPU"
    say(f"kfuse {kfuse.__version__} demo on the {where}"
        f"{' (quick sizes)' if quick else ''}; dumps go to {out_path}/")
    rows, notes, failed = [], [], []
    t_start = time.perf_counter()
    for wl in WORKLOADS:
        if workloads and wl.tag not in workloads and wl.fn.__name__ not in workloads:
            continue
        name = wl.fn.__name__
        dtype = "float32" if (quick or not on_gpu) else wl.gpu_dtype
        size = wl.quick if quick else (wl.gpu if on_gpu else wl.cpu)
        jf_cpu = kfuse.jit(wl.fn, backend="cpu")
        jf_gpu = kfuse.jit(wl.fn, backend="cuda")
        jf = jf_gpu if on_gpu else jf_cpu
        host = _make_inputs(wl, size, dtype)
        specs = [_spec(a) for a in host]
        say(f"\n== {wl.tag} {name}({', '.join(specs)})")
        row = {"tag": wl.tag, "name": name, "ok": False, "check": "", "compile_s": None,
               "kfuse_ms": None, "numpy_ms": None, "cupy_ms": None}
        rows.append(row)
        try:
            plan = kfuse.explain(jf, *specs)
            say(str(plan))
        except Exception as e:
            say(f"explain failed: {type(e).__name__}: {e}")
            failed.append(f"{name}: explain: {e}")
        # correctness (on the GPU at a check size NumPy can afford)
        try:
            chk_host = host
            if on_gpu and not quick and wl.tag in _CHECK_SIZES_GPU:
                chk_host = _make_inputs(wl, _CHECK_SIZES_GPU[wl.tag], dtype)
            chk_args = [xp.asarray(a) for a in chk_host] if on_gpu else chk_host
            t0 = time.perf_counter()
            got = jf(*chk_args)
            sync()
            row["compile_s"] = time.perf_counter() - t0
            ok, detail = _check(got, wl.fn(*chk_host), wl.rtol, wl.atol)
        except Exception as e:
            ok, detail = False, f"{type(e).__name__}: {e}"
        row["ok"], row["check"] = ok, detail
        say(f"check against NumPy: {'OK' if ok else 'FAILED'} ({detail})"
            + (f"; first call (compile) {row['compile_s']:.2f} s" if row["compile_s"] is not None else ""))
        if not ok:
            failed.append(f"{name}: {detail}")
        # timing: median of `reps` runs after a warm-up
        if ok:
            try:
                args = [xp.asarray(a) for a in host] if on_gpu else host
                jf(*args)
                sync()
                row["kfuse_ms"] = 1e3 * _median_time(jf, args, reps, sync)
                if not (on_gpu and dtype == "float16" and wl.tag == "P5"):
                    wl.fn(*host)
                    row["numpy_ms"] = 1e3 * _median_time(wl.fn, host, reps, lambda: None)
                if on_gpu:
                    wl.fn(*args)
                    sync()
                    row["cupy_ms"] = 1e3 * _median_time(wl.fn, args, reps, sync)
                parts = [f"kfuse {row['kfuse_ms']:.2f} ms"]
                for peer in ("numpy", "cupy"):
                    if row[f"{peer}_ms"] is not None:
                        label = "NumPy" if peer == "numpy" else "CuPy"
                        parts.append(f"{label} {row[f'{peer}_ms']:.2f} ms "
                                     f"({row[f'{peer}_ms'] / row['kfuse_ms']:.2f}x)")
                say("time (median of %d): " % reps + " | ".join(parts))
                del args
            except Exception as e:
                say(f"timing failed: {type(e).__name__}: {e}")
                failed.append(f"{name}: timing: {e}")
        # dumps (the shapes of this run; nothing is allocated)
        try:
            dump_fail = _write_dumps(jf_cpu, jf_gpu, specs, out_path / name, notes)
        except Exception as e:
            dump_fail = [f"{type(e).__name__}: {e}"]
        for f in dump_fail:
            say(f"dump failed: {f}")
            failed.append(f"{name}: dump {f}")
        del host
    # summary
    lines = [f"kfuse {kfuse.__version__} demo on the {where}; {len(rows)} workloads; "
             f"{time.perf_counter() - t_start:.1f} s", "",
             "| workload | check | kfuse ms | NumPy ms | vs NumPy |" + (" CuPy ms | vs CuPy |" if on_gpu else ""),
             "|---|---|---|---|---|" + ("---|---|" if on_gpu else "")]

    def fmt(v):
        return "-" if v is None else f"{v:.2f}"

    def ratio(a, b):
        return "-" if a is None or b is None else f"{a / b:.2f}x"
    for r in rows:
        line = (f"| {r['tag']} {r['name']} | {'OK' if r['ok'] else 'FAILED'} | {fmt(r['kfuse_ms'])} | "
                f"{fmt(r['numpy_ms'])} | {ratio(r['numpy_ms'], r['kfuse_ms'])} |")
        if on_gpu:
            line += f" {fmt(r['cupy_ms'])} | {ratio(r['cupy_ms'], r['kfuse_ms'])} |"
        lines.append(line)
    lines += [""] + [f"note: {n}" for n in notes]
    if failed:
        lines += ["", "FAILED:"] + [f"  {f}" for f in failed]
    summary = "\n".join(lines)
    (out_path / "summary.md").write_text(summary + "\n")
    say("\n" + summary)
    say(f"\ndumps: {out_path}/<workload>/{{traced,optimized,fused,kernel}}.txt, cpu.py, kernels.cu, kernels.ptx")
    return 1 if failed else 0
