"""Weak scaling of kfuse on Dask arrays over GPUs: a fused layernorm + GELU (row-wise) and an Adam
step (elementwise, three outputs) with ``dask_cuda.LocalCUDACluster``, one worker per GPU.

For 1, 2, 4, ... up to ``--gpus N`` GPUs, each GPU holds ``--gb-per-gpu G`` GB of input, created on
the workers' GPUs (CuPy chunks from ``dask.array.random``, persisted before timing). Each timed
run is the whole computation: the jitted function on the Dask arrays, its results persisted on the
workers and waited for (nothing is gathered to the client). The first run (workers compiling, or
loading kernels from their disk cache) is reported apart; then the median of ``--repeat`` runs.
Each row also times the same function run by Dask's own array ops on CuPy chunks (one task per op
and chunk), the baseline kfuse's fused tasks replace. ``--cpu`` runs the same on a LocalCluster of
NumPy workers (a smoke test without a GPU).

    python benchmarks/dask_gpu.py --gpus 8 --gb-per-gpu 4
    python benchmarks/dask_gpu.py --cpu --gpus 2 --gb-per-gpu 0.01 --repeat 2
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import kfuse

COLS = 4096          # layernorm rows of 4096 float32 (16 KiB: one row fits any worker)


def layernorm_gelu(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    d = x - mu
    var = (d * d).mean(axis=-1, keepdims=True)
    y = d / np.sqrt(var + 1e-5) * g + b
    return 0.5 * y * (1.0 + np.tanh(0.7978845608028654 * (y + 0.044715 * y * y * y)))


def adam(p, g, m, v, lr, t):
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * (g * g)
    mh = m / (1.0 - 0.9 ** t)
    vh = v / (1.0 - 0.999 ** t)
    return p - lr * mh / (np.sqrt(vh) + 1e-8), m, v


def _cluster(n: int, cpu: bool):
    from dask.distributed import Client, LocalCluster
    if cpu:
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None)
    else:
        from dask_cuda import LocalCUDACluster
        cluster = LocalCUDACluster(CUDA_VISIBLE_DEVICES=list(range(n)), dashboard_address=None)
    return cluster, Client(cluster)


def _random(cpu: bool):
    import dask.array as da
    if cpu:
        return da.random.RandomState(0)
    import cupy
    return da.random.RandomState(0, RandomState=cupy.random.RandomState)


def _workloads(n: int, gb: float, cpu: bool, chunk_mb: float):
    """(name, inputs as persisted Dask arrays, extra scalars, bytes read + written) per workload."""
    rs = _random(cpu)
    f4 = np.float32
    # layernorm + GELU: x of n*gb GB in row chunks (g, b small); reads x, writes y
    rows = max(1, int(n * gb * 1e9 / (4 * COLS)))
    crow = max(1, min(rows, int(chunk_mb * 1e6 / (4 * COLS))))
    x = rs.standard_normal((rows, COLS), chunks=(crow, COLS)).astype(f4)
    g = rs.standard_normal((COLS,), chunks=COLS).astype(f4)
    b = rs.standard_normal((COLS,), chunks=COLS).astype(f4)
    # Adam: four vectors sharing n*gb GB; reads four, writes three
    size = max(1, int(n * gb * 1e9 / 16))
    cvec = max(1, min(size, int(chunk_mb * 1e6 / 4)))
    # one (4, size) array sliced: chunk k of p, g, m and v is one block, on one worker (four
    # separate arrays put their chunks k on different workers, and each task moved three of them)
    p, gr, m, v = rs.standard_normal((4, size), chunks=(4, cvec)).astype(f4)
    v = abs(v)
    return [("layernorm+gelu", layernorm_gelu, [x, g, b], (), 2 * x.nbytes),
            ("adam", adam, [p, gr, m, v], (1e-3, 10), 7 * p.nbytes)]


def _run(client, fn, inputs, scalars) -> float:
    from dask.distributed import wait
    t0 = time.perf_counter()
    out = fn(*inputs, *scalars)
    out = client.persist(list(out) if isinstance(out, tuple) else [out])
    wait(out)
    dt = time.perf_counter() - t0
    del out
    return dt


def _chunk_error(fn, scalars, n_in: int, *blocks) -> float:
    """The largest |kfuse - reference| / (atol + rtol |reference|) over one chunk: ``blocks`` are
    ``n_in`` input chunks then the output chunks; the reference is ``fn`` run eagerly on the chunk
    in float64 by the chunk's own array library (CuPy on a GPU worker, NumPy on a CPU one)."""
    from kfuse.dask.detect import array_module
    from kfuse.testing import tolerance
    xp = array_module(blocks[0])
    want = fn(*(b.astype(xp.float64) for b in blocks[:n_in]), *scalars)
    want = want if isinstance(want, tuple) else (want,)
    rtol, atol = tolerance(np.float32)
    rtol *= 50          # a float32 chain of a dozen ops against one float64 rounding
    return max(float(xp.max(xp.abs(o - w) / (atol + rtol * xp.abs(w))))
               for o, w in zip(blocks[n_in:], want))


def _check(client, fn, inputs, scalars) -> float:
    """Every output chunk against its chunk's float64 reference (:func:`_chunk_error`, one task a
    chunk, run where the chunk lives); the worst ratio (at most 1 passes)."""
    import dask
    out = fn(*inputs, *scalars)
    out = list(out) if isinstance(out, tuple) else [out]
    n = out[0].npartitions
    per_chunk = [a.to_delayed().ravel() for a in inputs]
    per_chunk = [d if len(d) == n else [d[0]] * n for d in per_chunk]     # g, b: one chunk, shared
    outs = [a.to_delayed().ravel() for a in out]
    tasks = [dask.delayed(_chunk_error)(fn, scalars, len(inputs), *(d[k] for d in per_chunk),
                                        *(o[k] for o in outs)) for k in range(n)]
    return max(client.gather(client.compute(tasks)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", type=int, default=1, help="largest number of GPUs (workers)")
    ap.add_argument("--gb-per-gpu", type=float, default=1.0, help="input GB per GPU")
    ap.add_argument("--chunk-mb", type=float, default=256.0, help="target chunk size in MB")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cpu", action="store_true", help="NumPy workers on a LocalCluster (no GPU)")
    ap.add_argument("--no-baseline", action="store_true", help="skip Dask's own ops")
    ap.add_argument("--only", action="store_true", help="run on --gpus workers only (no scaling)")
    ap.add_argument("--check", action="store_true",
                    help="check every output chunk of the largest run against a float64 reference")
    args = ap.parse_args(argv)
    counts = sorted({1 << k for k in range(args.gpus.bit_length()) if 1 << k <= args.gpus} | {args.gpus})
    if args.only:
        counts = [args.gpus]
    rows, base = [], {}
    for n in counts:
        cluster, client = _cluster(n, args.cpu)
        try:
            for name, fn, inputs, scalars, nbytes in _workloads(n, args.gb_per_gpu, args.cpu, args.chunk_mb):
                inputs = client.persist(inputs)
                from dask.distributed import wait
                wait(inputs)
                peers = [("kfuse", kfuse.jit(fn))] + ([] if args.no_baseline else [("dask", fn)])
                for peer, f in peers:
                    first = _run(client, f, inputs, scalars)
                    times = [_run(client, f, inputs, scalars) for _ in range(args.repeat)]
                    t = statistics.median(times)
                    base.setdefault((name, peer), t)
                    rows.append((name, peer, n, nbytes / 1e9, first, t, nbytes / t / 1e9,
                                 base[(name, peer)] / t))
                if args.check and n == counts[-1]:
                    worst = _check(client, kfuse.jit(fn), inputs, scalars)
                    print(f"check {name} on {n}: worst chunk error {worst:.3g} of the tolerance "
                          f"({'ok' if worst <= 1 else 'FAILED'})", flush=True)
                del inputs
        finally:
            client.close()
            cluster.close()
    device = "CPU workers" if args.cpu else "GPUs"
    print(f"\nweak scaling, {args.gb_per_gpu:g} GB of input per worker ({device}); "
          "eff = time on 1 / time on N; x1 = throughput against 1 (n * eff)")
    head = f"{'workload':<16}{'peer':<7}{'n':>3}{'GB':>9}{'first s':>10}{'median s':>10}{'GB/s':>9}{'eff':>7}{'x1':>7}"
    print(head)
    print("-" * len(head))
    for name, peer, n, gb, first, t, bw, eff in rows:
        print(f"{name:<16}{peer:<7}{n:>3}{gb:>9.2f}{first:>10.3f}{t:>10.4f}{bw:>9.1f}{eff:>7.2f}{n * eff:>7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
