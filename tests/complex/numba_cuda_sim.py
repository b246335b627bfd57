"""Run generated Numba-CUDA row reductions in numba-cuda's CUDA simulator, without a GPU: a script
(``NUMBA_ENABLE_CUDASIM=1`` must be set before numba.cuda is imported, so the test runs it in a
subprocess). The simulator runs a block's threads as Python threads; it has no warp shuffles, so
``shfl_xor_sync`` is emulated with two block barriers (every thread of a row kernel shuffles
together), and libdevice's fma and fabs, stubs there, are Python's. Each case runs the kernel as
emitted and with the order redo (``codegen.accs.redo_ops``) switched off, and prints one JSON line
a case: whether each matches NumPy (``kfuse.testing``)."""
import json
import os
import sys
import threading
import warnings

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", "run with NUMBA_ENABLE_CUDASIM=1"
import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402
from numba.cuda import libdevice as ld  # noqa: E402
from numba.cuda.simulator import kernelapi  # noqa: E402

import kfuse  # noqa: E402
from kfuse.codegen import numba_cuda as nc  # noqa: E402
from kfuse.testing import assert_matches_numpy  # noqa: E402

ld.fma = ld.fmaf = lambda a, b, c: a * b + c
ld.fabs = ld.fabsf = abs


def _shfl_xor_sync(self, mask, value, m):
    t = threading.current_thread()
    slots = t._manager.__dict__.setdefault("kfuse_shfl", {})
    slots[t.thread_id] = value
    t.syncthreads()
    out = slots[t.thread_id ^ m]
    t.syncthreads()
    return out


kernelapi.FakeCUDAModule.shfl_xor_sync = _shfl_xor_sync
REDO = "# NumPy's order (codegen.accs.redo_ops)"


def run(fn, x, variant: nc.NVariant, redo: bool):
    """``fn``'s (one row reduction of a C-contiguous 2-D ``x``) kernel in the simulator."""
    src = nc.emit(kfuse.jit(fn).lower(x).kernels()[0], variant)
    assert REDO in src
    if not redo:
        src = "\n".join(ln.replace("if ", "if False and (", 1).replace(":  " + REDO, "):")
                        if REDO in ln else ln for ln in src.split("\n"))
    ns: dict = {}
    exec(compile(src, "<kfuse-sim>", "exec"), ns)
    rows, n = x.shape
    out = np.zeros(rows, x.dtype)
    cuda.jit(ns["kfuse_kernel"])[rows, variant.block](out, x.reshape(-1), rows, n, n, 1, 1)
    return out


def matches(got, want) -> bool:
    try:
        assert_matches_numpy(got, want)
        return True
    except AssertionError:
        return False


def ending_in_inf(dtype, shape):
    """Real-valued factors near +-1, each row's last -inf+0j or inf-0j: NumPy's last step gives
    +-inf + nan j, a tree nan + nan j."""
    rng = np.random.default_rng(0)
    x = (rng.choice([-1.0, 1.0], shape) * rng.uniform(0.999, 1.001, shape)).astype(dtype)
    x[:, -1] = np.where(np.arange(shape[0]) % 2 == 0, complex(-np.inf, 0.0), complex(np.inf, -0.0))
    return x


def nans(dtype, shape):
    """A finite value, a NaN with imaginary part 1, then NaNs with imaginary part 7: NumPy's max
    and min keep the first NaN, a tree's lane 0 a later one."""
    x = np.full(shape, complex(np.nan, 7.0), dtype)
    x[:, 0] = 0.5 + 0.25j
    x[:, 1] = complex(np.nan, 1.0)
    return x


CASES = [
    ("prod", "complex128", ending_in_inf, nc.NVariant("row", 1, 0, 32)),
    ("prod", "complex64", ending_in_inf, nc.NVariant("row", 1, 8, 32)),     # the row in registers
    ("max", "complex64", nans, nc.NVariant("row", 1, 0, 64)),               # two warps
    ("min", "complex128", nans, nc.NVariant("row", 1, 0, 32)),
]


def main():
    warnings.simplefilter("ignore")
    for kind, dtype, make, v in CASES:
        x = make(np.dtype(dtype), (2, 150))

        def fn(x):
            return getattr(x, kind)(axis=-1)
        with np.errstate(all="ignore"):
            want = fn(x)
            new, old = run(fn, x, v, True), run(fn, x, v, False)
        print(json.dumps({"case": f"{kind}-{dtype}-{v.tag}", "new": matches(new, want),
                          "old": matches(old, want), "got": str(new), "numpy": str(want)}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
