import itertools, numpy as np, cupy as cp, kfuse
from kfuse.codegen.numba_cuda import numba_cuda_available
PRODUCERS = {"neg": lambda x: -x, "add": lambda x: x + x, "sub1": lambda x: x - np.array(1, x.dtype),
             "mul": lambda x: x * x, "abs": lambda x: np.abs(x), "addc": lambda x: x + np.array(100, x.dtype)}
CONSUMERS = {"i32": lambda y: y.astype(np.int32), "fdiv7": lambda y: y // np.array(7, y.dtype),
             "gt0": lambda y: y > 0, "f32": lambda y: y.astype(np.float32), "div_self_x": None,
             "max0": lambda y: np.maximum(y, np.array(0, y.dtype))}
def make(p, c):
    if c is None:
        return lambda x: p(x) // np.where(x == 0, np.array(3, x.dtype), x)
    return lambda x: c(p(x))


bad = []
import sys
backends = sys.argv[1:] or (["cuda"] + (["numba-cuda"] if numba_cuda_available()[0] else []))
if backends == ["cpu"]:
    cp.asarray = lambda a: a
    cp.asnumpy = lambda a: a
for dt in (np.int8, np.int16, np.uint8, np.uint16):
    info = np.iinfo(dt)
    x = np.array([info.min, info.min + 1, -1 if info.min < 0 else 1, 0, 1, 100, info.max - 1, info.max] * 8, dt)
    for (pn, p), (cn, c) in itertools.product(PRODUCERS.items(), CONSUMERS.items()):
        fn = make(p, c)
        with np.errstate(all="ignore"):
            want = fn(x)
        for b in backends:
            got = cp.asnumpy(kfuse.jit(fn, backend=b)(cp.asarray(x)))
            if got.dtype != want.dtype or not np.array_equal(got, want):
                i = int(np.argmax(got != want))
                bad.append((b, np.dtype(dt).name, pn, cn, x[i], got[i], want[i]))
print(len(bad), "mismatches")
for r in bad:
    print(r)
