"""Child process for the CPU persistence tests: load-or-compile a parallel kernel, run, report JSON.

usage: python numba_child.py CACHE_DIR KERNEL DTYPE OUT.npy
"""
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

KERNELS = {
    # P3-like: a row-wise layernorm (two reductions + elementwise), parallel over rows
    "layernorm": ('''
import math
from numba import prange

def kern(x, g, b, out, n, m):
    for i in prange(n):
        mu = 0.0
        for j in range(m):
            mu += x[i, j]
        mu = mu / m
        var = 0.0
        for j in range(m):
            d = x[i, j] - mu
            var += d * d
        var = var / m
        r = 1.0 / math.sqrt(var + 1e-5)
        for j in range(m):
            out[i, j] = (x[i, j] - mu) * r * g[j] + b[j]
''', "kern"),
    # P1-like: fused elementwise gelu-ish chain with tanh written through exp
    "gelu": ('''
import math
from numba import prange

def kern(x, g, b, out, n, m):
    for i in prange(n):
        for j in range(m):
            v = x[i, j] * g[j] + b[j]
            t = 0.7978845608 * (v + 0.044715 * v * v * v)
            e = math.exp(-2.0 * abs(t))
            th = (1.0 - e) / (1.0 + e)
            if t < 0:
                th = -th
            out[i, j] = 0.5 * v * (1.0 + th)
''', "kern"),
}


def reference(name, x, g, b):
    import numpy as np
    if name == "layernorm":
        mu = x.mean(axis=1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * g + b
    v = x * g + b
    return 0.5 * v * (1.0 + np.tanh(0.7978845608 * (v + 0.044715 * v ** 3)))


def main():
    cache_dir, kname, dtype, out_path = sys.argv[1:5]
    t_start = time.perf_counter()
    import numpy as np
    import numba  # noqa: F401  (import cost is common to cold and warm; timed separately)
    t_import = time.perf_counter()
    os.environ["KFUSE_CACHE_DIR"] = cache_dir
    import warnings
    from kfuse import config
    config.reload()
    from kfuse.runtime.cache import CacheStore, CacheWarning
    from kfuse.runtime.cpu_persist import load_or_compile
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        store = CacheStore.open()
        src, fn = KERNELS[kname]
        # a fixed key: build_kernel_key() hashes kfuse/codegen/*.py, which may change while a
        # test runs (the persistence layer adds source hash, numba signature and toolchain itself)
        key = {"graph": kname, "signature": [dtype], "backend": "cpu"}
        disp = load_or_compile(store, key, src, fn)
        rng = np.random.RandomState(0)
        n, m = 300, 257
        x = rng.rand(n, m).astype(dtype)
        g = rng.rand(m).astype(dtype)
        b = rng.rand(m).astype(dtype)
        out = np.empty_like(x)
        disp(x, g, b, out, n, m)
        t1 = time.perf_counter()
        # hot calls
        th = time.perf_counter()
        for _ in range(20):
            disp(x, g, b, out, n, m)
        hot = (time.perf_counter() - th) / 20
    np.save(out_path, out)
    ok = bool(np.allclose(out, reference(kname, x.astype("f8"), g.astype("f8"), b.astype("f8")),
                          rtol=1e-4 if dtype == "float32" else 1e-10, atol=1e-5))
    print(json.dumps({"first_call_s": t1 - t0, "import_s": t_import - t_start, "hot_s": hot,
                      "loads": disp._cache.loads if store else 0,
                      "saves": disp._cache.saves if store else 0, "ok": ok,
                      "warnings": [str(x.message) for x in w if issubclass(x.category, CacheWarning)]}))


if __name__ == "__main__":
    main()
