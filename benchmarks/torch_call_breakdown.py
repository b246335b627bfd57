"""Host µs of each step of a cached kfuse.jit call on a 1024-element torch CUDA tensor (mean of
3000 calls each), beside the whole call and the CuPy-array call. An experiment tool."""
import timeit

import cupy as cp
import numpy as np
import torch

import kfuse
from kfuse.runtime import interop


def main():
    t = torch.ones(1024, device="cuda")
    c = cp.ones(1024, dtype=cp.float32)
    f = kfuse.jit(lambda x: x * 2 + 1)
    f(t), f(c)
    entry = next(iter(f._programs.values()))
    prog = entry.program
    arrs = interop.to_device_arrays([t])[0]
    outs = interop.TorchOutputs(0)
    steps = {
        "whole call, torch tensor": lambda: f(t),
        "whole call, cupy array": lambda: f(c),
        "JitFunction._key": lambda: f._key((t,)),
        "entry.arrays": lambda: entry.arrays((t,)),
        "program(list) on torch": lambda: prog([t]),
        "interop.classify": lambda: interop.classify([t]),
        "interop.to_device_arrays": lambda: interop.to_device_arrays([t]),
        "interop.launch_stream": lambda: interop.launch_stream(0),
        "TorchOutputs(0)": lambda: interop.TorchOutputs(0),
        "TorchOutputs.empty": lambda: outs.empty((1024,), np.float32),
        "program._run on cupy views": lambda: prog._run(cp, arrs, 0, cp.empty),
        "cupy.cuda.runtime.getDevice": cp.cuda.runtime.getDevice,
    }
    for k, fn in steps.items():
        fn()
        n = 3000
        us = timeit.timeit(fn, number=n) / n * 1e6
        print(f"| {k} | {us:.1f} |")
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
