"""Where the host time of a cached kfuse.jit call goes (a record, not a test).

Times, on ~1024-element inputs, back-to-back calls the way the suite's ``dispatch µs`` column does
(``kfuse.bench.timing.host_overhead_us``): kfuse.jit on the 1-input test function, on P1/P3/P6's
tiny cases, beside CuPy's ElementwiseKernel and cupy.fuse on the same inputs; then the pieces of
kfuse's hot path one by one (dispatch key, argument list, output allocation, variant lookup, the
raw CuPy launch) and a cProfile of the P1 call. Writes ``$OUT/dispatch_probe.md``.

Usage on the GPU machine: ``PYTHONPATH=$PWD python3 benchmarks/dispatch_probe.py``
"""
from __future__ import annotations

import cProfile
import io
import os
import pstats
import sys

import cupy as cp
import numpy as np

import kfuse
from kfuse.bench.timing import host_overhead_us
from kfuse.bench.workloads import BY_NAME


def us(call, **kw) -> float:
    return host_overhead_us(call, sync=lambda: cp.cuda.Device().synchronize(), **kw)


def main() -> None:
    lines = ["# dispatch probe", "", f"GPU: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}", "",
             "| what | µs/call |", "|---|---|"]

    def row(name, val):
        lines.append(f"| {name} | {val:.2f} |")
        print(f"{name:60s} {val:8.2f}", flush=True)

    def axpb(x):
        return x * 2 + 1
    x = cp.ones(1024, cp.float32)
    f1 = kfuse.jit(axpb)
    f1(x)
    row("kfuse.jit x*2+1 (1024 f32)", us(lambda: f1(x)))
    k = cp.ElementwiseKernel("float32 x", "float32 y", "y = x * 2 + 1", "kf_ref")
    k(x)
    row("cupy.ElementwiseKernel x*2+1", us(lambda: k(x)))
    fz = cp.fuse(axpb)
    fz(x)
    row("cupy.fuse x*2+1", us(lambda: fz(x)))
    row("cupy.empty(1024, f32)", us(lambda: cp.empty(1024, cp.float32)))
    row("cupy.empty((32,32), f32)", us(lambda: cp.empty((32, 32), cp.float32)))

    cases = {}
    for name in ("P1", "P3", "P6"):
        w = BY_NAME[name]
        case = w.cases("gpu", "tiny")[0]
        args = [cp.asarray(a) for a in case.make_inputs(1)]
        fn = kfuse.jit(case.body(np))
        fn(*args)
        cases[name] = (fn, args)
        row(f"kfuse.jit {name} tiny {[tuple(a.shape) for a in args]}", us(lambda: fn(*args)))
        fz = cp.fuse(case.body(cp)) if name != "P3" else None
        if fz is not None:
            fz(*args)
            row(f"cupy.fuse {name} tiny", us(lambda: fz(*args)))

    # the pieces of P1's hot path
    fn, args = cases["P1"]
    args = tuple(args)
    entry = fn._programs[fn._key(args)]
    prog = entry.program
    row("P1: JitFunction._key", us(lambda: fn._key(args)))
    row("P1: dict lookup of the key", us(lambda: fn._programs.get(fn._key(args))))
    row("P1: _Entry.arrays", us(lambda: entry.arrays(args)))
    arrs = entry.arrays(args)
    row("P1: program(arrays) (no jit layer)", us(lambda: prog(arrs)))
    row("P1: _Entry.run", us(lambda: entry.run(args)))
    launcher = prog.launchers[0]
    props = prog._props[arrs[0].data.device_id]
    g = prog.plan.groups[0]
    ins = [dict(zip(prog.plan.graph.inputs, arrs))[n] for n in g.inputs]
    outs = [cp.empty(s, d) for s, d in prog._out_sig[0]]
    row("P1: launcher.choose", us(lambda: launcher.choose(ins, outs, props)))
    _, func, grid, block, tail, _ = launcher.choose(ins, outs, props)
    row(f"P1: raw func launch ({len(outs) + len(ins)} arrays + {len(tail)} scalars by reference)",
        us(lambda: func(grid, block, (*outs, *ins, *tail))))
    values = tuple(h.value for h in tail)
    row(f"P1: raw func launch, the {len(tail)} scalars as NumPy scalars", us(lambda: func(grid, block, (*outs, *ins, *values))))
    row("P1: launcher(ins, outs, props)", us(lambda: launcher(ins, outs, props)))
    _driver_rows(row, func, grid, block, outs + ins, tail)
    row("P1: cupy.cuda.runtime.getDevice()", us(lambda: cp.cuda.runtime.getDevice()))
    row("P1: cupy.cuda.get_current_stream()", us(lambda: cp.cuda.get_current_stream()))

    targs = _torch_rows(row, cases)
    lines += _profile("20000 P1 calls on CuPy arrays", lambda: fn(*args), 20000)
    fn6 = cases["P6"][0]
    lines += _profile("5000 P6 calls on torch tensors", lambda: fn6(*targs), 5000)

    out = os.environ.get("OUT", ".")
    with open(os.path.join(out, "dispatch_probe.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


def _driver_rows(row, func, grid, block, arrays, tail):
    """The same launch through cuda.bindings' cuLaunchKernel, bypassing CuPy's argument
    handling: the arrays' pointers written per call into a slot buffer whose scalar slots were
    packed once, the kernelParams array of slot addresses made once."""
    from cuda.bindings import driver
    n = len(arrays) + len(tail)
    slots = np.zeros(n, np.uint64)
    for k, h in enumerate(tail):
        slots[len(arrays) + k] = np.frombuffer(np.asarray(h.value).tobytes().ljust(8, b"\0"), np.uint64)[0]
    params = (slots.ctypes.data + 8 * np.arange(n, dtype=np.uint64)).astype(np.uint64)
    fn, stream = driver.CUfunction(func.ptr), driver.CUstream(cp.cuda.get_current_stream().ptr)
    pp = params.ctypes.data
    na = len(arrays)

    def launch():
        for k in range(na):
            slots[k] = arrays[k].data.ptr
        return driver.cuLaunchKernel(fn, grid[0], 1, 1, block[0], 1, 1, 0, stream, pp, 0)
    err, = launch()
    cp.cuda.Device().synchronize()
    row(f"P1: cuLaunchKernel via cuda.bindings, pointers written per call ({err})", us(launch))
    row("P1: cuLaunchKernel via cuda.bindings alone",
        us(lambda: driver.cuLaunchKernel(fn, grid[0], 1, 1, block[0], 1, 1, 0, stream, pp, 0)))
    f32 = np.dtype(np.float32)
    row("cupy.empty((1024,), dtype('float32'))", us(lambda: cp.empty((1024,), f32)))
    row("cupy.ndarray((1024,), dtype('float32'))", us(lambda: cp.ndarray((1024,), f32)))
    row("cupy.ndarray((1024,), dtype('float32'), order='C')", us(lambda: cp.ndarray((1024,), f32, order="C")))
    row("cupy.empty((1024,), dtype('float32')) again", us(lambda: cp.empty((1024,), f32)))
    row("cupy.cuda.alloc(4096)", us(lambda: cp.cuda.alloc(4096)))


def _profile(what: str, call, n: int) -> list[str]:
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(n):
        call()
    pr.disable()
    cp.cuda.Device().synchronize()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(30)
    return ["", f"## cProfile, {what} (tottime)", "", "```", s.getvalue()[-7000:], "```"]


def _torch_rows(row, cases) -> list:
    """kfuse.jit on torch CUDA tensors, and the torch-only pieces of its call."""
    import torch
    from kfuse.runtime import interop
    for name in ("P1", "P6"):
        fn, args = cases[name]
        targs = [torch.from_dlpack(a) for a in args]
        fn(*targs)
        row(f"kfuse.jit {name} tiny on torch tensors", us(lambda: fn(*targs)))
    t = targs[0]
    row("torch: interop.to_cupy (DLPack capsule)", us(lambda: interop.to_cupy(t)))
    row("torch: interop.tensor_view (what a call makes of each tensor)", us(lambda: interop.tensor_view(t)))
    row("torch: interop.classify of P6's 4 tensors", us(lambda: interop.classify(targs)))
    row("torch: torch.empty(1024, f32, cuda)", us(lambda: torch.empty(1024, dtype=torch.float32, device=0)))
    row("torch: interop.launch_stream", us(lambda: interop.launch_stream(0)))
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        fn(*targs)
        row("kfuse.jit P6 tiny on torch tensors, torch side stream", us(lambda: fn(*targs)))
        row("torch: interop.launch_stream, torch side stream", us(lambda: interop.launch_stream(0)))
    return targs


if __name__ == "__main__":
    sys.exit(main())
