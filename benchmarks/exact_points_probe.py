"""Do the GPU backends' math functions give NumPy's exact results at exact points (log2 of powers
of two, log10 of powers of ten, exp2/exp10-like of integers, cbrt of cubes, sqrt of squares)?
Prints, per backend, dtype and function, how many of the points differ from NumPy's result and
the first few. An experiment tool, not a test. On the GPU machine: PYTHONPATH=. python3
benchmarks/exact_points_probe.py"""
import numpy as np
import cupy as cp

import kfuse

POINTS = {
    "log2": lambda dt: np.ldexp(1.0, np.arange(-1074 if dt == np.float64 else -149, 1024 if dt == np.float64 else 128)),
    "log10": lambda dt: 10.0 ** np.arange(0, 23 if dt == np.float64 else 11),
    "exp2": lambda dt: np.arange(-1000 if dt == np.float64 else -140, 1000 if dt == np.float64 else 120).astype(float),
    "cbrt": lambda dt: np.arange(-200, 200).astype(float) ** 3,
    "sqrt": lambda dt: np.arange(0, 4000).astype(float) ** 2,
    "log": lambda dt: np.array([1.0]),
    "exp": lambda dt: np.array([0.0]),
    "log1p": lambda dt: np.array([0.0, -0.0]),
    "expm1": lambda dt: np.array([0.0, -0.0]),
    "sin": lambda dt: np.array([0.0, -0.0]),
    "tanh": lambda dt: np.array([0.0, -0.0, 20.0, -20.0]),
}



def _apply(fn):
    def f(a):
        return fn(a)
    return f


for backend in ("cuda", "numba-cuda"):
    for dt in (np.float32, np.float64):
        for name, pts in POINTS.items():
            x = pts(dt).astype(dt)
            x = x[np.isfinite(x)]
            fn = getattr(np, name)
            want = fn(x)
            got = cp.asnumpy(kfuse.jit(_apply(fn), backend=backend)(cp.asarray(x)))
            bad = np.flatnonzero(~((got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))))
            ex = ", ".join(f"{name}({x[i]!r}) = {got[i]!r} (NumPy {want[i]!r})" for i in bad[:3])
            print(f"{backend:10s} {np.dtype(dt).name:8s} {name:6s} {len(bad):4d} of {len(x):5d} differ  {ex}")
