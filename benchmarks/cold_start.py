"""Cold-start probe: the row softmax's first call in a fresh process, with an empty and with a warm
kernel cache, phase by phase.

Each run is a new Python process (``--runs`` of each kind; the cache directory is emptied before
every empty-cache run and kept for the warm ones) that times: ``import numpy``, ``import kfuse``
the first call split into trace, the import of
Numba (CPU), plan + emit (``Lowered.compile``: NVRTC compiles there, or the CUBIN is read from the
disk cache), the tuning lookup and the run (Numba compiles a kernel, or loads its machine code from
the disk cache, at its first call; on the CPU also split into the LLVM compile of Numba's runtime
(NRT), which every process that runs a Numba function pays once (loaded from the disk cache
with the kernel where it holds it), and the kernel loads; a device
sync on the GPU), then the second call. It also prints how many kernels were compiled and how many were loaded from the disk
cache, and which heavy modules the process imported (a CPU call must not load a GPU stack; a
CUDA C call must not load Numba, torch or JAX).

Run: ``PYTHONPATH=. python benchmarks/cold_start.py --device cpu|gpu [--runs 3] [--shape 64,512]
[--cache-dir DIR]``. The table prints the minimum and the median over the runs of each phase (ms).
Targets (issue 33): first call with an empty cache <= 1.0 s (CPU) / 0.5 s (GPU); with a warm
cache <= 50 ms.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAVY = ("numba", "llvmlite", "numba.cuda", "cupy", "torch", "jax", "networkx", "scipy")

CHILD = r'''
import json, sys, time
T, C = {}, {}      # wall-clock and CPU seconds (the CPU time is steadier on a shared machine)
t = time.perf_counter()
import numpy as np
T["import numpy"] = time.perf_counter() - t
t, c = time.perf_counter(), time.process_time()
import kfuse
T["import kfuse"], C["import kfuse"] = time.perf_counter() - t, time.process_time() - c
before = set(sys.modules)
device, shape = sys.argv[1], tuple(int(s) for s in sys.argv[2].split(","))

from kfuse import api
from kfuse.codegen import nvrtc
PH = {"trace": 0.0, "compile": 0.0, "tune": 0.0, "load": 0.0, "nrt": 0.0, "native": 0.0}
COUNT = {"nvrtc compiles": 0}

CUR = ["run"]          # the phase running now (Numba's import is taken out of the one it falls in)
NESTED = {}

def timed(owner, name, phase):
    fn = getattr(owner, name)
    def wrapper(*a, **k):
        t0, outer = time.perf_counter(), CUR[0]
        CUR[0] = phase
        try:
            return fn(*a, **k)
        finally:
            CUR[0] = outer
            PH[phase] += time.perf_counter() - t0
    setattr(owner, name, wrapper)

timed(api.JitFunction, "_traced", "trace")
timed(api.Lowered, "compile", "compile")
from kfuse.runtime import cpu_persist
timed(cpu_persist, "_rebuild", "load")     # a kernel's machine code from the disk cache
timed(cpu_persist, "init_nrt", "nrt")      # Numba's runtime: compiled, or loaded with a kernel
from kfuse.runtime import cpu_native
timed(cpu_native, "load", "native")        # a kernel's native object from the disk cache (no Numba)
import builtins
_import = builtins.__import__
def _timed_import(name, *a, **k):    # the first import of Numba (on the CPU path only), and
    if name != "numba" or "numba" in sys.modules:    # the tuner's entry point once it is imported
        mod = _import(name, *a, **k)
        tuner = sys.modules.get("kfuse.autotune.tuner")
        if tuner is not None and "tune" not in WRAPPED and hasattr(tuner, "tune_and_apply"):
            WRAPPED.add("tune")
            timed(tuner, "tune_and_apply", "tune")
        return mod
    t0 = time.perf_counter()
    try:
        return _import(name, *a, **k)
    finally:
        PH["numba"] = time.perf_counter() - t0
        NESTED[CUR[0]] = PH["numba"]
WRAPPED = set()
builtins.__import__ = _timed_import
_nvrtc = nvrtc.compile
def _count(*a, **k):
    COUNT["nvrtc compiles"] += 1
    return _nvrtc(*a, **k)
nvrtc.compile = _count

def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)

x = np.random.default_rng(0).random(shape, dtype=np.float32)
if device == "gpu":
    import cupy as cp
    t = time.perf_counter()
    xd = cp.asarray(x)
    cp.cuda.runtime.deviceSynchronize()
    T["cupy init + copy"] = time.perf_counter() - t
    f = kfuse.jit(softmax, backend="cuda")
    sync = cp.cuda.runtime.deviceSynchronize
else:
    xd = x
    f = kfuse.jit(softmax, backend="cpu")
    sync = lambda: None
t, c = time.perf_counter(), time.process_time()
f(xd); sync()
first = time.perf_counter() - t
T["first call"], C["first call"] = first, time.process_time() - c
T["  trace"] = PH["trace"]
T["  import numba"] = PH.get("numba", 0.0)
T["  plan, emit, load"] = PH["compile"] - NESTED.get("compile", 0.0)
T["  tuning lookup"] = PH["tune"] - NESTED.get("tune", 0.0)
T["  run (CPU: compile/load)"] = first - PH["trace"] - PH["compile"] - PH["tune"] - NESTED.get("run", 0.0)
if device == "cpu":
    T["    Numba runtime (NRT) init"] = PH["nrt"]
    T["    kernel loads from disk"] = PH["load"]
    T["    native loads from disk"] = PH["native"]
t = time.perf_counter()
f(xd); sync()
T["second call"] = time.perf_counter() - t
T["import + first call"] = T["import kfuse"] + first
C["import + first call"] = C["import kfuse"] + C["first call"]
if device == "cpu":
    from kfuse.runtime import cpu as rt
    loads = saves = compiled = native = 0
    for fns in rt._COMPILED.values():
        for d in fns:
            c = getattr(d, "_cache", None)
            loads += getattr(c, "loads", 0)
            saves += getattr(c, "saves", 0)
            compiled += len(d.overloads)
            native += sum(f is not None for f in getattr(d, "loaded", {}).values())
    COUNT.update({"numba overloads": compiled, "loaded from disk": loads, "saved": saves,
                  "native objects loaded": native})
mods = sorted(m for m in sys.argv[3].split(",") if m in sys.modules and m not in before)
print(json.dumps({"t": T, "cpu": C, "count": COUNT, "imported by the call": mods}))
'''


def run_child(device: str, shape: str, cache: str) -> dict:
    env = dict(os.environ, KFUSE_CACHE_DIR=cache, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYTHONDONTWRITEBYTECODE", None)        # a user's install has its .pyc files
    r = subprocess.run([sys.executable, "-c", CHILD, device, shape, ",".join(HEAVY)],
                       capture_output=True, text=True, env=env, timeout=600)
    if r.returncode:
        raise SystemExit(r.stderr[-4000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shape", default="64,512")
    ap.add_argument("--cache-dir", default=None, help="default: a new temporary directory")
    a = ap.parse_args(argv)
    cache = a.cache_dir or tempfile.mkdtemp(prefix="kfuse-cold-")
    run_child(a.device, a.shape, os.path.join(cache, "warmup"))   # .pyc files written, disk warm
    results = {"empty cache": [], "warm cache": []}
    for _ in range(a.runs):
        shutil.rmtree(os.path.join(cache, "c"), ignore_errors=True)
        results["empty cache"].append(run_child(a.device, a.shape, os.path.join(cache, "c")))
        results["warm cache"].append(run_child(a.device, a.shape, os.path.join(cache, "c")))
    print(f"row softmax f32[{a.shape}] on {a.device}; {a.runs} fresh processes each; "
          f"loadavg {os.getloadavg()[0]:.2f}; ms, wall-clock min / median, and CPU time min")
    for kind, rs in results.items():
        print(f"\n{kind}:")
        for phase in rs[0]["t"]:
            v = [r["t"][phase] * 1e3 for r in rs]
            cpu = f"{min(r['cpu'][phase] for r in rs) * 1e3:9.1f}" if phase in rs[0]["cpu"] else ""
            print(f"  {phase:28} {min(v):9.1f} {statistics.median(v):9.1f} {cpu}")
        print(f"  counts: {rs[-1]['count']}")
        print(f"  imported by the call: {rs[-1]['imported by the call']}")
    if not a.cache_dir:
        shutil.rmtree(cache, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
