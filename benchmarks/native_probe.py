"""Probe (not a product path): what a warm-cache CPU first call would cost without importing Numba.

A warm first call of the row softmax spends ~100 ms importing Numba and ~35 ms more in Numba's
first dispatch (``np.ma`` imported by its ``typeof``, its entry points, the kernel and NRT loads):
``benchmarks/cold_start.py``. This probe measures the alternative that issue 33 suggests: the
sequential kernel persisted as a native shared object with a C entry point, loaded by ctypes.

Step 1 (a process with Numba): the softmax kernel kfuse generates, its sequential variant called
from a ``no_cpython_wrapper`` entry ``entry(p_in, p_out, sizes)`` that views the raw pointers as
C-contiguous arrays (``numba.carray``); the entry's LLVM module emitted as position-independent
object code; linked by ``cc`` with a small C file for the three Numba runtime (NRT) functions the
kernel's scratch row needs (``NRT_MemInfo_alloc_aligned``, ``NRT_MemInfo_call_dtor``,
``NRT_Free``), with ``-z defs`` so that any other unresolved symbol fails the link.
Step 2 (fresh processes, no Numba): ``import kfuse``, the trace, plan and emit a warm call still
does (``Lowered.as_text("cpu")``), ``ctypes.CDLL`` and the call, checked against the Numba
kernel's result (bit for bit) and NumPy.

Run: ``PYTHONPATH=. python benchmarks/native_probe.py [--runs 5]``. Needs ``cc``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BUILD = r'''
import json, subprocess, sys
import numpy as np
import numba
from numba import types
import llvmlite.binding as ll
import kfuse

def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)

out_dir = sys.argv[1]
x = np.random.default_rng(0).random((64, 512), dtype=np.float32)
f = kfuse.jit(softmax, backend="cpu")
np.save(out_dir + "/numba_result.npy", f(x))
(entry,) = f._programs.values()
(k,) = entry.program.kernels
src = k.source
glb = {"__name__": "kfuse_native_probe"}
exec(compile(src, "<probe>", "exec"), glb)
exec("def entry(p0, p1, sizes):\n"
     "    a = numba.carray(p0, (sizes[0], sizes[1]))\n"
     "    b = numba.carray(p1, (sizes[0], sizes[1]))\n"
     "    kfuse_kernel_seq(a, b, sizes[0], sizes[1])\n", glb)
sig = (types.CPointer(types.float32), types.CPointer(types.float32), types.CPointer(types.int64))
d = numba.njit(sig, no_cpython_wrapper=True, no_cfunc_wrapper=True, error_model="numpy")(glb["entry"])
cres = d.overloads[sig]
codegen = cres.library.codegen
mod = cres.library._final_module
undefined = sorted(fn.name for fn in mod.functions if fn.is_declaration and not fn.name.startswith("llvm."))
tm = ll.Target.from_triple(ll.get_process_triple()).create_target_machine(
    cpu=codegen._get_host_cpu_name(), features=codegen._get_host_cpu_features(), opt=3,
    reloc="pic", codemodel="default")
with open(out_dir + "/k.o", "wb") as fh:
    fh.write(tm.emit_object(mod))
with open(out_dir + "/nrt_shim.c", "w") as fh:
    fh.write(sys.argv[2])
r = subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", out_dir + "/k.so", out_dir + "/k.o",
                    out_dir + "/nrt_shim.c", "-lm", "-Wl,-z,defs"], capture_output=True, text=True)
print(json.dumps({"undefined": undefined, "link": r.returncode, "stderr": r.stderr[-2000:],
                  "symbol": cres.fndesc.mangled_name}))
'''

# Numba's MemInfo layout (numba/core/runtime/nrt.cpp) and its aligned allocation without stats:
# the kernel's scratch row is allocated and freed inside one call, never seen by Numba's own NRT.
NRT_SHIM = r'''
#include <stdint.h>
#include <stdlib.h>
typedef void (*dtor_fn)(void *, size_t, void *);
typedef struct { size_t refct; dtor_fn dtor; void *dtor_info; void *data; size_t size; void *ext; } MemInfo;
MemInfo *NRT_MemInfo_alloc_aligned(size_t size, unsigned align) {
    char *base = malloc(sizeof(MemInfo) + size + 2 * (size_t)align);
    if (!base) return NULL;
    MemInfo *mi = (MemInfo *)base;
    char *data = base + sizeof(MemInfo);
    size_t rem = (uintptr_t)data % align;
    if (rem) data += align - rem;
    mi->refct = 1; mi->dtor = NULL; mi->dtor_info = NULL; mi->data = data; mi->size = size; mi->ext = NULL;
    return mi;
}
void NRT_MemInfo_call_dtor(MemInfo *mi) { if (mi->dtor) mi->dtor(mi->data, mi->size, mi->dtor_info); free(mi); }
void NRT_Free(void *p) { free(p); }
'''

LOAD = r'''
import json, sys, time
T = {}
t = time.perf_counter()
import numpy as np
T["import numpy"] = time.perf_counter() - t
t = time.perf_counter()
import ctypes
import kfuse
T["import kfuse + ctypes"] = time.perf_counter() - t

def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)

x = np.random.default_rng(0).random((64, 512), dtype=np.float32)
t0 = time.perf_counter()
src = kfuse.jit(softmax, backend="cpu").lower(x).as_text("cpu")      # what a warm call still does
T["  trace, plan, emit"] = time.perf_counter() - t0
t = time.perf_counter()
lib = ctypes.CDLL(sys.argv[1] + "/k.so")
addr = ctypes.cast(getattr(lib, sys.argv[2]), ctypes.c_void_p).value
fn = ctypes.CFUNCTYPE(ctypes.c_int32, *[ctypes.c_void_p] * 5)(addr)   # Numba's calling convention
T["  dlopen"] = time.perf_counter() - t
t = time.perf_counter()
out = np.empty_like(x)
sizes = np.array(x.shape, np.int64)
ret, exc = ctypes.create_string_buffer(16), ctypes.c_void_p()
status = fn(ctypes.addressof(ret), ctypes.addressof(exc), x.ctypes.data, out.ctypes.data, sizes.ctypes.data)
T["  call"] = time.perf_counter() - t
T["first call (trace .. call)"] = time.perf_counter() - t0
want = softmax(x)
print(json.dumps({"t": T, "status": status, "max_rel_err": float(np.max(np.abs(out - want) / want)),
                  "same_as_numba": bool(np.array_equal(out, np.load(sys.argv[1] + "/numba_result.npy"))),
                  "numba imported": "numba" in sys.modules or "llvmlite" in sys.modules}))
'''


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory(prefix="kfuse-native-") as d:
        env["KFUSE_CACHE_DIR"] = os.path.join(d, "cache")
        r = subprocess.run([sys.executable, "-c", BUILD, d, NRT_SHIM], capture_output=True, text=True, env=env)
        if r.returncode:
            raise SystemExit(r.stderr[-4000:])
        built = json.loads(r.stdout.strip().splitlines()[-1])
        print(f"external symbols of the kernel's module: {built['undefined']}; link rc {built['link']}")
        if built["link"]:
            raise SystemExit(built["stderr"])
        runs = []
        for _ in range(a.runs):
            r = subprocess.run([sys.executable, "-c", LOAD, d, built["symbol"]], capture_output=True,
                               text=True, env=env)
            if r.returncode:
                raise SystemExit(r.stderr[-4000:])
            runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    last = runs[-1]
    print(f"status {last['status']}, bit-identical to the Numba kernel's result: {last['same_as_numba']}, "
          f"max relative error vs NumPy {last['max_rel_err']:.1e}, "
          f"Numba imported: {last['numba imported']}; loadavg {os.getloadavg()[0]:.2f}; ms min / median")
    for phase in runs[0]["t"]:
        v = [r["t"][phase] * 1e3 for r in runs]
        print(f"  {phase:28} {min(v):8.2f} {statistics.median(v):8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
