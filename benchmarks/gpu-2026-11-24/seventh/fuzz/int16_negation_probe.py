import numpy as np
from numba import cuda
import kfuse
from kfuse.codegen.numba_cuda import import_numba_cuda
import_numba_cuda()

@cuda.jit(device=True, inline=True)
def _sfloordiv(a, b):
    if b == 0:
        return np.int64(0)
    if b == -1:
        return np.int64(0) - a
    return a // b

@cuda.jit
def k(x, o1, o2, o3, o4, o5):
    i = cuda.grid(1)
    if i < x.size:
        v0 = x[i]
        v1 = np.int16(np.uint64(0) - np.uint64(v0))
        o1[i] = v1
        o2[i] = np.int64(v1)
        v8 = np.int16(3) if (v0 == 0) | (v0 == -1) else v0
        o3[i] = np.int64(v8)
        o4[i] = _sfloordiv(np.int64(v1), np.int64(v8))
        o5[i] = np.int64(v1) // np.int64(v8)

x = np.array([-32768, 5, -1, 0, 32767, -32767], np.int16)
outs = [np.zeros(x.size, np.int16)] + [np.zeros(x.size, np.int64) for _ in range(4)]
dx = cuda.to_device(x); douts = [cuda.to_device(o) for o in outs]
k[1, 32](dx, *douts)
for name, d in zip(["v1", "int64(v1)", "v8", "sfloordiv", "plain //"], douts):
    print(name, d.copy_to_host())
print("numpy", np.floor_divide(-x, np.where((x == 0) | (x == -1), 3, x)))
def fuzz_fn(a0):
    v0 = -a0
    return np.floor_divide(v0, np.where((a0 == 0) | (a0 == -1), 3, a0))
import cupy as cp
print("kfuse numba-cuda", cp.asnumpy(kfuse.jit(fuzz_fn, backend="numba-cuda")(cp.asarray(x))))
print("kfuse cuda", cp.asnumpy(kfuse.jit(fuzz_fn, backend="cuda")(cp.asarray(x))))
x2 = np.tile(x, 8)
print("kfuse numba-cuda 48", cp.asnumpy(kfuse.jit(fuzz_fn, backend="numba-cuda")(cp.asarray(x2)))[:6])
