"""Run the Numba-CUDA renderings of the CUDA C schedules in numba-cuda's CUDA simulator, without a
GPU: a script (``NUMBA_ENABLE_CUDASIM=1`` must be set before numba.cuda is imported, so
tests/codegen/test_numba_cuda_sim_schedules.py runs it in a subprocess). The launcher
(``runtime.numba_cuda._Launcher``) picks each case's schedule from the NumPy arrays' shapes,
strides and alignment as it would from CuPy arrays', the emitted kernel runs on the simulator's
threads (a block's threads as Python threads), and each output is compared with NumPy's
(``kfuse.testing``). The simulator has no warp shuffles, vector accesses or workspace views:
shuffles are emulated with two block barriers (every thread of these kernels shuffles together),
``ldv``/``stv``/``at`` (and a peeled row's ``addr``/``ldl``/``stvp``) with element accesses and
the arrays' own addresses, libdevice's stubs there and the narrowing
intrinsics with NumPy's functions.
One JSON line a case."""
import json
import os
import sys
import threading
import types
import warnings

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", "run with NUMBA_ENABLE_CUDASIM=1"
import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402
from numba.cuda import libdevice as ld  # noqa: E402
from numba.cuda.simulator import kernelapi  # noqa: E402

import kfuse  # noqa: E402
from kfuse.codegen import numba_cuda as nc  # noqa: E402
from kfuse.codegen import numba_cuda_mem as mem  # noqa: E402
from kfuse.codegen import numba_cuda_narrow as narrow  # noqa: E402
from kfuse.testing import assert_matches_numpy  # noqa: E402

ld.fma = ld.fmaf = lambda a, b, c: a * b + c
ld.fabs = ld.fabsf = abs
for _name in ("exp", "exp2", "log", "sqrt", "tanh", "sin", "cos", "expm1", "log1p", "rsqrt"):   # (stubs there)
    _f = (lambda x: 1.0 / np.sqrt(x)) if _name == "rsqrt" else getattr(np, _name)
    setattr(ld, _name, lambda x, _f=_f: np.float64(_f(np.float64(x))))
    setattr(ld, _name + "f", lambda x, _f=_f: np.float32(_f(np.float32(x))))
# a GPU of 8 SMs: the schedules of a 132-SM one (the same rules), from a few rows (the simulator runs
# a block's threads as Python threads: minutes for the rows that fill 132 SMs)
LAST_SOURCE = [""]     # the source the last launch ran
PROPS = {"sm_count": 8, "name": "NVIDIA H200", "device_id": 0}


def _exchange(value, source):
    """Every thread of the block posts ``value`` and reads the one posted by ``source(tid)``."""
    t = threading.current_thread()
    slots = t._manager.__dict__.setdefault("kfuse_shfl", {})
    slots[t.thread_id] = value
    t.syncthreads()
    out = slots[source(t.thread_id)]
    t.syncthreads()
    return out


def _tid():
    return threading.current_thread().thread_id


kernelapi.FakeCUDAModule.shfl_xor_sync = lambda self, mask, v, m: _exchange(v, lambda t: t ^ int(m))
kernelapi.FakeCUDAModule.shfl_up_sync = (
    lambda self, mask, v, d: _exchange(v, lambda t: t - int(d) if (t & 31) >= int(d) else t))
kernelapi.FakeCUDAModule.shfl_sync = lambda self, mask, v, src: _exchange(v, lambda t: (t & ~31) + (int(src) & 31))


def _ldv(p, i, n):
    return tuple(p[i + k] for k in range(n))


def _stv(p, i, vals):
    for k, x in enumerate(vals):
        p[i + k] = x


def _at(ws, byte, dtype):
    return ws[byte:].view(np.dtype(dtype.__name__ if hasattr(dtype, "__name__") else str(dtype)))


def _addr(p, i):
    a = getattr(p, "_ary", p)                       # (the simulator's array wrapper)
    return a.__array_interface__["data"][0] + int(i) * a.itemsize


mem.ldv, mem.stv, mem.ldl, mem.addr = _ldv, _stv, _ldv, _addr
mem.stvp = lambda ok, p, i, vals: _stv(p, i, vals)
ld.umulhi = lambda a, b: np.int32(((int(a) & 0xFFFFFFFF) * (int(b) & 0xFFFFFFFF)) >> 32)
for _t in ("int8", "int16", "uint8", "uint16"):     # (bit-field extracts in inline PTX on the device)
    setattr(narrow, f"narrow_{_t}", lambda v, _t=_t: np.array(int(v) & 0xFFFF).astype(np.uint16).astype(_t)[()])


def desc(a):
    """What the launcher reads of an array (a NumPy array standing in for a CuPy one)."""
    return types.SimpleNamespace(shape=a.shape, strides=a.strides, itemsize=a.itemsize, dtype=a.dtype, size=a.size,
                                 data=types.SimpleNamespace(ptr=a.__array_interface__["data"][0]))


def flat(a):
    """The kernel's pointer: a 1-D array starting at ``a``'s first element, over all it reaches."""
    span = sum((s - 1) * st for s, st in zip(a.shape, a.strides)) // a.itemsize + 1 if a.size else 1
    f = np.lib.stride_tricks.as_strided(a, shape=(span,), strides=(a.itemsize,))
    return f.view(np.uint8) if a.dtype == np.bool_ else f


def launch(fn, *arrays, variant=None):
    """``fn``'s one kernel on ``arrays`` in the simulator: ``(outputs, CUDA C variant, NVariant)``
    (the source run: ``LAST_SOURCE[0]``);
    ``variant`` an NVariant to run instead of the launcher's choice, or an int: the launcher's
    choice on a grid of that many blocks (a grid-stride loop's later trips)."""
    from kfuse.runtime.numba_cuda import _Launcher
    (kir, *checks) = kfuse.jit(fn, backend="numba-cuda").lower(*arrays).kernels(for_gpu=True)
    assert all(not k.outputs[0].shape and k.outputs[0].dtype == "bool" for k in checks)   # (index checks)
    assert [b.shape for b in kir.inputs] == [a.shape for a in arrays[:len(kir.inputs)]]
    outs = [np.zeros(b.shape, np.dtype(b.dtype)) for b in kir.outputs]
    ins_d, outs_d = [desc(a) for a in arrays], [desc(o) for o in outs]
    lau = _Launcher(None, kir, "sm_90", None)
    lau = lau._contiguous_reads(ins_d) or lau
    cv, grid = lau.variant_for(ins_d, outs_d, PROPS)
    nv, grid = lau._render(cv, grid, PROPS["sm_count"])
    if isinstance(variant, int):
        grid = variant
    elif variant is not None:
        nv, grid = variant, max(1, min(grid, 8))
    kernel_ir = lau.kir_for(cv)
    src = LAST_SOURCE[0] = nc.emit(kernel_ir, nv)
    ns: dict = {}
    exec(compile(src, "<kfuse-sim>", "exec"), ns)
    ns["at"] = _at
    k = cuda.jit(ns["kfuse_kernel"])
    tail = lau.tail(ins_d, outs_d, nv)
    ptrs = [flat(o) for o in outs] + [flat(a) for a in arrays]
    if nv.workspace:
        assert not nv.grid_sync, "no grid barrier in the simulator"
        n_acc = sum(len(ph.accs) for ph in kernel_ir.phases)
        ws = np.zeros(lau._rows() * nv.split * n_acc * 16, np.uint8)
        k[grid, nv.block](*ptrs, *tail, ws)
        nv2 = nc.NVariant("row", 1, 0, 128, split=nv.split, stage=2)
        ns2: dict = {}
        exec(compile(nc.emit(kernel_ir, nv2), "<kfuse-sim2>", "exec"), ns2)
        ns2["at"] = _at
        cuda.jit(ns2["kfuse_kernel"])[max(1, lau._rows()), 128](*ptrs, *lau.tail(ins_d, outs_d, nv2), ws)
    else:
        k[grid, nv.block](*ptrs, *tail)
    return outs, cv, nv


def rng_rows(shape, dtype=np.float32, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    if x.ndim == 2 and x.shape[1] > 2:
        x[x.shape[0] // 2, x.shape[1] // 2] = x[x.shape[0] // 2, 0]     # a tie: argmax keeps the first
    return x


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def layernorm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def groupnorm(x, g, b):
    n, c, h, w = x.shape
    y = x.reshape(n, 8, (c // 8) * h * w)
    mu = np.mean(y, axis=-1, keepdims=True)
    var = np.var(y, axis=-1, keepdims=True)
    y = ((y - mu) / np.sqrt(var + 1e-5)).reshape(n, c, h, w)
    return y * g.reshape(1, c, 1, 1) + b.reshape(1, c, 1, 1)


def rms_heads(q, w):
    return q / np.sqrt(np.mean(q * q, axis=-1, keepdims=True) + 1e-6) * w


def row_sum(x):
    return x.sum(-1)


def row_argmax(x):
    return np.argmax(x, -1)


def row_any(x):
    return (x > 1.5).any(-1)


def cumsum0(x):
    return np.cumsum(x, axis=0)


def cumsum1(x):
    return np.cumsum(x, axis=-1)


def col_sum(x):
    return x.sum(axis=0)


def col_softmax(x):
    e = np.exp(x - x.max(0, keepdims=True))
    return e / e.sum(0, keepdims=True)


def logsumexp(x):
    m = np.max(x, axis=-1, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=-1)) + m[:, 0]


def cross_entropy(x, labels):
    m = np.max(x, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(x - m), axis=1)) + m[:, 0]
    return lse - np.take_along_axis(x, labels[:, None], axis=1)[:, 0]


def lse_minus_mean(x):          # (a label-smoothed loss's terms: its sum joins the streamed pass)
    m = np.max(x, axis=1, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=1)) + m[:, 0] - 0.1 * np.mean(x, axis=1)


def special_rows(shape):
    """Rows past fusion.reduction.STREAMED_MIN_UNITS vectors (streamed: the online max-and-sum),
    the first with a NaN, the second all -inf, the third with one +inf."""
    x = rng_rows(shape, seed=7) * 4
    x[0, shape[1] // 3] = np.nan
    x[1] = -np.inf
    x[2, shape[1] - 2] = np.inf
    return x


def instancenorm(x):
    mu = x.mean(axis=(2, 3), keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=(2, 3), keepdims=True) + 1e-5)


def batchnorm_nhwc(x, g, b):
    mu = x.mean(axis=(0, 1, 2), keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=(0, 1, 2), keepdims=True) + 1e-5) * g + b


def cases():
    """(name, fn, arrays, NVariant or None, what the schedule must be)."""
    out = []
    # 32-bit index math in reduce kernels (NVariant.fastdiv): a row's and a unit's indices by
    # multiply-high (several outer and inner dims), blockwise weights once a unit, row-level
    # divisors through their float64 reciprocal
    out.append(("fast-instancenorm-vec4", instancenorm, [rng_rows((2, 3, 6, 8))], None, "packed"))
    out.append(("fast-instancenorm-odd", instancenorm, [rng_rows((3, 5, 5, 7))], None, "packed"))
    out.append(("fast-instancenorm-view", instancenorm, [rng_rows((2, 4, 6, 10))[:, 1:, :, 2:]], None, "packed"))
    # (views: with contiguous strides any split of a linear index into a dim's quotient and
    # remainder reaches the same element, so only a view tells a wrong division)
    out.append(("fast-instancenorm-held", instancenorm, [rng_rows((2, 3, 24, 40))[:, :, :, 4:]], None, "row"))
    out.append(("fast-instancenorm-held-odd", instancenorm, [rng_rows((2, 3, 23, 37))], None, "row"))
    out.append(("fast-batchnorm-nhwc", batchnorm_nhwc, [rng_rows((2, 6, 7, 6))[:, 1:], rng_rows((6,), seed=1),
                                                        rng_rows((6,), seed=2)], None, "col"))
    out.append(("fast-col-sum-two-stages", lambda x: x.sum((0, 1)), [rng_rows((16, 19, 3))[:, 2:]], None, "col"))
    out.append(("fast-groupnorm-blockwise", groupnorm, [rng_rows((3, 16, 4, 4)), rng_rows((16,), seed=1),
                                                        rng_rows((16,), seed=2)], None, "packed"))
    out.append(("fast-groupnorm-held", groupnorm, [rng_rows((2, 16, 16, 20)), rng_rows((16,), seed=1),
                                                   rng_rows((16,), seed=2)], None, "row"))
    out.append(("fast-groupnorm-reread", groupnorm, [rng_rows((2, 16, 4, 4)), rng_rows((16,), seed=1),
                                                     rng_rows((16,), seed=2)], nc.NVariant("row", 1, 0, 32, vec=4),
                "row"))
    W = 4 * 4096 + 16              # (4097 vectors of float32: streamed)
    # (the simulator runs every thread in Python: two rows a case where one more shows nothing new)
    for fn in (logsumexp, softmax):
        out.append((f"online-{fn.__name__}-2x{W + 3}", fn, [rng_rows((2, W + 3))], None, "online"))
    out.append(("online-special-values", logsumexp, [special_rows((4, W))], None, "online"))
    out.append(("online-softmax-special", softmax, [special_rows((4, W))], None, "online"))
    out.append(("online-view-from-1", logsumexp, [rng_rows((2, W + 1))[:, 1:]], None, "online"))
    labels = np.array([0, W - 1], np.int64)
    out.append(("online-cross-entropy", cross_entropy, [rng_rows((2, W)), labels], None, "online"))
    out.append(("online-lse-minus-mean", lse_minus_mean, [rng_rows((2, W + 5))], None, "online"))
    # 3 warps (not a power of two: the warps combined in order), 2 blocks striding over 3 rows
    out.append(("online-3-warps", logsumexp, [rng_rows((2, W))], nc.NVariant("row", 1, 0, 96, vec=4), "online"))
    out.append(("online-2-blocks", softmax, [rng_rows((3, W))], 2, "online"))
    for w in (3, 9, 33, 64, 127):
        for fn in (row_sum, softmax, row_argmax, row_any):
            out.append((f"packed-{fn.__name__}-37x{w}", fn, [rng_rows((37, w))], None, "packed"))
    base = rng_rows((37, 66))
    out.append(("packed-view-cols-from-2", softmax, [base[:, 2:]], None, "packed"))
    out.append(("packed-f16-min", lambda x: x.min(-1), [rng_rows((37, 48), np.float16)], None, "packed"))
    out.append(("packed-heads-128", rms_heads, [rng_rows((2, 3, 5, 128)), rng_rows((128,), seed=1)], None, "packed"))
    out.append(("col-cumsum0-37x45", cumsum0, [rng_rows((37, 45))], None, "col"))
    out.append(("col-sum0-37x45", col_sum, [rng_rows((37, 45))], None, "col"))
    out.append(("col-softmax0-37x45", col_softmax, [rng_rows((37, 45))], None, "col"))
    out.append(("row-reload-layernorm", layernorm, [rng_rows((9, 1024)), rng_rows((1024,), seed=1),
                                                    rng_rows((1024,), seed=2)], None, "row"))
    out.append(("row-reload-groupnorm", groupnorm, [rng_rows((2, 32, 16, 16)), rng_rows((32,), seed=1),
                                                    rng_rows((32,), seed=2)], None, "row"))
    out.append(("row-held-exact-softmax", softmax, [rng_rows((9, 1024))], None, "row"))
    out.append(("row-held-softmax-1000", softmax, [rng_rows((9, 1000))], None, "row"))
    for w in (9, 33, 127, 521):            # peeled: a thread a row, lanes a row, held
        for fn in (softmax, row_argmax) if w < 500 else (softmax,):
            out.append((f"peel-{fn.__name__}-9x{w}", fn, [rng_rows((9, w))], None, "peel"))
    out.append(("peel-layernorm-9x521", layernorm, [rng_rows((9, 521)), rng_rows((521,), seed=1),
                                                      rng_rows((521,), seed=2)], None, "peel"))     # re-loaded
    out.append(("peel-view-cols-from-2", softmax, [rng_rows((37, 66))[:, 2:]], None, "peel"))
    out.append(("peel-view-from-1-reloaded", layernorm, [rng_rows((9, 517))[:, 1:], rng_rows((516,), seed=1),
                                                          rng_rows((516,), seed=2)], None, "peel"))
    out.append(("peel-reread", softmax, [rng_rows((9, 521))], nc.NVariant("row", 1, 0, 64, vec=4, peel=True), "peel"))
    out.append(("row-reread-softmax", softmax, [rng_rows((3, 1000))], nc.NVariant("row", 1, 0, 64), "row"))
    out.append(("row-reread-vec4-sum", row_sum, [rng_rows((3, 1000))], nc.NVariant("row", 1, 0, 64, vec=4), "row"))
    for w in (2, 3, 20, 32, 33, 300):       # rows of up to 32 packed (several a chunk), longer a row a warp
        out.append((f"scan-cumsum1-9x{w}", cumsum1, [rng_rows((9, w))], None, "scan"))
    out.append(("scan-view-cols-from-1", cumsum1, [rng_rows((9, 301))[:, 1:]], None, "scan"))
    out.append(("scan-3d-last", cumsum1, [rng_rows((3, 5, 70))], None, "scan"))
    out.append(("scan-max", lambda x: np.maximum.accumulate(x, axis=-1), [rng_rows((9, 77))], None, "scan"))
    out.append(("scan-int32-cumsum", cumsum1, [np.arange(37 * 45, dtype=np.int32).reshape(37, 45) % 7 - 3], None, "scan"))
    out.append(("scan-bool-cumsum", cumsum1, [rng_rows((37, 40)) > 0], None, "scan"))
    out.append(("scan-f16-cumsum", cumsum1, [rng_rows((37, 45), np.float16)], None, "scan"))
    out.append(("scan-c64-cumsum", cumsum1, [(rng_rows((37, 45)) + 1j * rng_rows((37, 45), seed=3)).astype(np.complex64)],
                None, "scan"))
    out.append(("scan-of-scan", lambda x: np.cumsum(np.cumsum(x, -1) * 0.5, -1), [np.abs(rng_rows((37, 70)))], None, "scan"))
    out.append(("scan-packed-of-scan", lambda x: np.cumsum(np.cumsum(x, -1) * 0.5, -1), [np.abs(rng_rows((37, 9)))], None, "scan"))
    out.append(("scan-cumprod-f64-in-order", lambda x: np.cumprod(x, -1), [rng_rows((37, 45), np.float64)], None, "col"))
    def rotary(x, c, s):
        h = x.shape[-1] // 2
        return x * c + np.concatenate((-x[..., h:], x[..., :h]), axis=-1) * s
    out.append(("ew-rotary-divs", rotary, [rng_rows((3, 5, 16)), rng_rows((5, 16), seed=1), rng_rows((5, 16), seed=2)],
                None, "elementwise"))
    out.append(("ew-concat-sin-divs", lambda x, z: np.concatenate([x, x * x, np.sin(z)], axis=1),
                [rng_rows((37, 12)), rng_rows((37, 8), seed=1)], None, "elementwise"))
    cat = lambda x, z: np.concatenate([x, x * x, np.sin(z)], axis=1)       # noqa: E731
    out.append(("ew-concat-sin-odd-divs", cat, [rng_rows((37, 13)), rng_rows((37, 7), seed=1)], None, "elementwise"))
    out.append(("ew-concat-sin-ilp4", cat, [rng_rows((37, 13)), rng_rows((37, 7), seed=1)],
                nc.NVariant("elementwise", 4, 0, 64), "elementwise"))
    out.append(("ew-roll-pad-divs", lambda x: np.pad(x - np.roll(x, 3, -1), ((0, 0), (2, 5))),
                [rng_rows((37, 29))], None, "elementwise"))
    tr = lambda x, y: np.exp(x.T) + y          # noqa: E731
    out.append(("tile-exp-xT-37x45", tr, [rng_rows((37, 45)), rng_rows((45, 37), seed=1)], None, "tile"))
    out.append(("tile-exp-xT-vec4", tr, [rng_rows((48, 40)), rng_rows((40, 48), seed=1)], None, "tile"))
    out.append(("tile-x-plus-xT-f16", lambda x: x + x.T * 2, [rng_rows((33, 33), np.float16)], None, "tile"))
    out.append(("tile-x-plus-xT-i8-vec16", lambda x: x + x.T * 2,
                [(np.arange(64 * 64) % 23 - 11).astype(np.int8).reshape(64, 64)], None, "tile"))
    out.append(("tile-nchw-to-nhwc", lambda x, b: np.transpose(x, (0, 2, 3, 1)) * b,
                [rng_rows((2, 19, 17, 21)), rng_rows((19,), seed=2)], None, "tile"))
    out.append(("tile-where-bool", lambda x, m: np.where(m, x.T, -x.T),
                [rng_rows((37, 29)), rng_rows((29, 37), seed=3) > 0], None, "tile"))
    out.append(("tile-3x2-tiles-2-blocks", tr, [rng_rows((130, 70)), rng_rows((70, 130), seed=5)], 2, "tile"))
    out.append(("packed-2-blocks", softmax, [rng_rows((70, 40))], 2, "packed"))
    out.append(("scan-2-blocks", cumsum1, [rng_rows((70, 40))], 2, "scan"))
    out.append(("tile-strided-view", lambda x, y: x.T + y,
                [rng_rows((140, 45))[1::2], rng_rows((45, 70), seed=4)], None, "tile"))
    return out


def main():
    warnings.simplefilter("ignore")
    only = set(sys.argv[1:])
    for name, fn, arrays, variant, want_mode in cases():
        if only and not any(name.startswith(o) for o in only):
            continue
        try:
            outs, cv, nv = launch(fn, *arrays, variant=variant)
            with np.errstate(all="ignore"):
                want = fn(*[np.ascontiguousarray(a) for a in arrays])
            want = want if isinstance(want, tuple) else (want,)
            for o, e in zip(outs, want):
                e = np.asarray(e)
                o = o.reshape(e.shape) if o.size == e.size else o       # (a kernel writing a reshape's base)
                assert_matches_numpy(o, e, reductions=True)
            mode = "packed" if nv.packed and nv.mode == "row" else nv.mode
            if name.startswith("peel"):
                mode = "peel" if nv.peel else mode
            if name.startswith("fast-") and "fastdiv" not in name:
                mode = mode if nv.fastdiv or variant is not None else "no fastdiv"
            if "divs" in name:
                mode = mode if nv.divs else "no divs"
            if name.startswith("online"):
                mode = "online" if "_mse_step" in LAST_SOURCE[0] else "two passes"
            if "reload" in name:
                mode = mode if nv.reload else "held"
            ok, why = mode == want_mode, f"rendered {nv.tag} ({cv.tag})"
        except Exception as e:  # noqa: BLE001
            ok, why = False, f"{type(e).__name__}: {str(e)[:1500]}"
        print(json.dumps({"case": name, "ok": ok, "why": why}))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
