"""``kfuse demo``: compile the public workloads (P1-P6 and RMSNorm+residual, the same functions as
``examples/``, and a function with a graph break: ``np.sort`` between two fused row-wise kernels,
whose dump is its segments) on the best device present, check each against NumPy, print its fused plan and its
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

from .breaks import SegmentedPlan

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


def sorted_softmax(x):
    """A graph break: np.sort runs as the library's kernel between two fused row-wise kernels."""
    mu = x.mean(axis=-1, keepdims=True)
    y = np.sort((x - mu) / (x.std(axis=-1, keepdims=True) + 1e-5), axis=-1)
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


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
    Workload("BRK", sorted_softmax, _mat_vecs(), (4096, 4096), (16384, 4096), (64, 96)),
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


@dataclasses.dataclass
class _Run:
    """One demo run: where it runs, how it says things, and what went wrong so far."""
    say: Callable
    on_gpu: bool
    xp: object
    sync: Callable[[], None]
    quick: bool
    reps: int
    out_path: Path
    notes: list = dataclasses.field(default_factory=list)
    failed: list = dataclasses.field(default_factory=list)

    def device_args(self, host):
        return [self.xp.asarray(a) for a in host] if self.on_gpu else host


def _no_sync() -> None:
    pass


def _gpu_sync(xp) -> Callable[[], None]:
    def sync():
        xp.cuda.get_current_stream().synchronize()
    return sync


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
    xp = None
    if have_gpu:
        import cupy as xp  # noqa: F811 - only on a GPU
    run = _Run(say, have_gpu, xp, _gpu_sync(xp) if have_gpu else _no_sync, quick, 1 if quick else 5,
               Path(out_dir))
    run.out_path.mkdir(parents=True, exist_ok=True)
    where = "GPU" if run.on_gpu else "CPU"
    say(f"kfuse {kfuse.__version__} demo on the {where}"
        f"{' (quick sizes)' if quick else ''}; dumps go to {run.out_path}/")
    rows = []
    t_start = time.perf_counter()
    for wl in WORKLOADS:
        if workloads and wl.tag not in workloads and wl.fn.__name__ not in workloads:
            continue
        rows.append(_run_workload(run, wl))
    summary = _summary(run, rows, f"kfuse {kfuse.__version__} demo on the {where}; {len(rows)} workloads; "
                                  f"{time.perf_counter() - t_start:.1f} s")
    (run.out_path / "summary.md").write_text(summary + "\n")
    say("\n" + summary)
    say(f"\ndumps: {run.out_path}/<workload>/{{traced,optimized,fused,kernel}}.txt, cpu.py, kernels.cu, kernels.ptx")
    return 1 if run.failed else 0


def _run_workload(run: _Run, wl: Workload) -> dict:
    """Explain, check, time and dump one workload; its row of the summary."""
    import kfuse
    name = wl.fn.__name__
    dtype = "float32" if (run.quick or not run.on_gpu) else wl.gpu_dtype
    size = wl.quick if run.quick else (wl.gpu if run.on_gpu else wl.cpu)
    jf_cpu = kfuse.jit(wl.fn, backend="cpu")
    jf_gpu = kfuse.jit(wl.fn, backend="cuda")
    jf = jf_gpu if run.on_gpu else jf_cpu
    host = _make_inputs(wl, size, dtype)
    specs = [_spec(a) for a in host]
    run.say(f"\n== {wl.tag} {name}({', '.join(specs)})")
    row = {"tag": wl.tag, "name": name, "ok": False, "check": "", "compile_s": None,
           "kfuse_ms": None, "numpy_ms": None, "cupy_ms": None}
    plan = None
    try:
        plan = kfuse.explain(jf, *specs)
        run.say(str(plan))
    except Exception as e:
        run.say(f"explain failed: {type(e).__name__}: {e}")
        run.failed.append(f"{name}: explain: {e}")
    _check_workload(run, wl, jf, host, dtype, row)
    if row["ok"]:
        _time_workload(run, wl, jf, host, dtype, row)
    # dumps (the shapes of this run; nothing is allocated); a function with graph breaks: its segments
    try:
        if isinstance(plan, SegmentedPlan):
            (run.out_path / name).mkdir(parents=True, exist_ok=True)
            (run.out_path / name / "segments.txt").write_text(str(plan) + "\n")
            dump_fail = []
        else:
            dump_fail = _write_dumps(jf_cpu, jf_gpu, specs, run.out_path / name, run.notes)
    except Exception as e:
        dump_fail = [f"{type(e).__name__}: {e}"]
    for f in dump_fail:
        run.say(f"dump failed: {f}")
        run.failed.append(f"{name}: dump {f}")
    return row


def _check_workload(run: _Run, wl: Workload, jf, host, dtype: str, row: dict) -> None:
    """The first call (compile time) checked against NumPy (on the GPU at a size NumPy affords)."""
    try:
        chk_host = host
        if run.on_gpu and not run.quick and wl.tag in _CHECK_SIZES_GPU:
            chk_host = _make_inputs(wl, _CHECK_SIZES_GPU[wl.tag], dtype)
        chk_args = run.device_args(chk_host)
        t0 = time.perf_counter()
        got = jf(*chk_args)
        run.sync()
        row["compile_s"] = time.perf_counter() - t0
        ok, detail = _check(got, wl.fn(*chk_host), wl.rtol, wl.atol)
    except Exception as e:
        ok, detail = False, f"{type(e).__name__}: {e}"
    row["ok"], row["check"] = ok, detail
    run.say(f"check against NumPy: {'OK' if ok else 'FAILED'} ({detail})"
            + (f"; first call (compile) {row['compile_s']:.2f} s" if row["compile_s"] is not None else ""))
    if not ok:
        run.failed.append(f"{wl.fn.__name__}: {detail}")


def _time_workload(run: _Run, wl: Workload, jf, host, dtype: str, row: dict) -> None:
    """Median of ``run.reps`` calls after a warm-up: kfuse, NumPy and (on a GPU) CuPy."""
    reps, sync = run.reps, run.sync
    try:
        args = run.device_args(host)
        jf(*args)
        sync()
        row["kfuse_ms"] = 1e3 * _median_time(jf, args, reps, sync)
        if not (run.on_gpu and dtype == "float16" and wl.tag == "P5"):
            wl.fn(*host)
            row["numpy_ms"] = 1e3 * _median_time(wl.fn, host, reps, lambda: None)
        if run.on_gpu:
            wl.fn(*args)
            sync()
            row["cupy_ms"] = 1e3 * _median_time(wl.fn, args, reps, sync)
        parts = [f"kfuse {row['kfuse_ms']:.2f} ms"]
        for peer in ("numpy", "cupy"):
            if row[f"{peer}_ms"] is not None:
                label = "NumPy" if peer == "numpy" else "CuPy"
                parts.append(f"{label} {row[f'{peer}_ms']:.2f} ms "
                             f"({row[f'{peer}_ms'] / row['kfuse_ms']:.2f}x)")
        run.say("time (median of %d): " % reps + " | ".join(parts))
        del args
    except Exception as e:
        run.say(f"timing failed: {type(e).__name__}: {e}")
        run.failed.append(f"{wl.fn.__name__}: timing: {e}")


def _fmt_ms(v) -> str:
    return "-" if v is None else f"{v:.2f}"


def _ratio(a, b) -> str:
    return "-" if a is None or b is None else f"{a / b:.2f}x"


def _summary(run: _Run, rows: list[dict], title: str) -> str:
    """The summary table (Markdown), notes and failures."""
    on_gpu = run.on_gpu
    lines = [title, "",
             "| workload | check | kfuse ms | NumPy ms | vs NumPy |" + (" CuPy ms | vs CuPy |" if on_gpu else ""),
             "|---|---|---|---|---|" + ("---|---|" if on_gpu else "")]
    for r in rows:
        line = (f"| {r['tag']} {r['name']} | {'OK' if r['ok'] else 'FAILED'} | {_fmt_ms(r['kfuse_ms'])} | "
                f"{_fmt_ms(r['numpy_ms'])} | {_ratio(r['numpy_ms'], r['kfuse_ms'])} |")
        if on_gpu:
            line += f" {_fmt_ms(r['cupy_ms'])} | {_ratio(r['cupy_ms'], r['kfuse_ms'])} |"
        lines.append(line)
    lines += [""] + [f"note: {n}" for n in run.notes]
    if run.failed:
        lines += ["", "FAILED:"] + [f"  {f}" for f in run.failed]
    return "\n".join(lines)
