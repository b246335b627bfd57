"""GPU timing of scatters (kfuse/trace/scatter.py: ``x[idx] = v``, ``np.add.at``) against
torch.compile, torch eager, CuPy eager and a device-to-device copy, all measured in this one run.

Cases:
  * ``embedding-grad``: ``np.add.at(table, ids, g)`` into a float32 65536 x 256 table argument
    (64 MiB), 16384 ids with repeats, g 16384 x 256 (torch: ``index_add_``, CuPy:
    ``cupyx.scatter_add``). kfuse scatters into the table in place once the call's index check
    has passed: its flag is read back from the GPU first (none with ``KFUSE_INDEX_CHECKS=0``);
  * ``histogram``: ``np.add.at(h, bins, 1)``, 4096 int32 bins, 2**24 int64 bin numbers (the
    same array written as an argument; torch: ``index_add_`` of ones);
  * ``permute-fused``: ``out = np.zeros_like(x); out[perm] = x * 2 + 1`` for 2**24 float32
    (the zeros and the scattered values each one kernel, the scatter writing into the zeros' own
    buffer);
  * ``set-rows``: ``x[rows] = v * s`` into a float32 16384 x 1024 argument, 4096 distinct rows.
Each time: the median over 15 rounds of 10 back-to-back calls between two CUDA events, peers
interleaved per round. The error column: max |y - ref| / max |ref| of one call against NumPy on
the host (float64 for float cases). % copy: a CuPy copy moving the bytes a case must touch at
least (what it reads and writes once). Writes ``scatter_bench.md`` under $OUT (or the current
directory). Usage: PYTHONPATH=. python3 benchmarks/scatter_bench.py
"""
import os

import cupy as cp
import numpy as np

import peer_timing


def embedding_grad(table, ids, g):
    np.add.at(table, ids, g)
    return table


def histogram(h, bins):
    np.add.at(h, bins, 1)
    return h


def permute_fused(x, perm):
    out = np.zeros_like(x)
    out[perm] = x * 2 + 1
    return out


def set_rows(x, rows, v):
    x[rows] = v * 0.5
    return x


def _torch_fns():
    import torch

    def permute(x, perm):
        out = torch.zeros_like(x)
        out[perm] = x * 2 + 1
        return out

    def rows_(x, rows, v):
        x[rows] = v * 0.5
        return x
    return {"embedding-grad": lambda t, i, g: t.index_add_(0, i, g),
            "histogram": lambda h, b: h.index_add_(0, b, torch.ones_like(b, dtype=h.dtype)),
            "permute-fused": permute, "set-rows": rows_}


def _cupy_fns():
    import cupyx

    def permute(x, perm):
        out = cp.zeros_like(x)
        out[perm] = x * 2 + 1
        return out

    def rows_(x, rows, v):
        x[rows] = v * 0.5
        return x

    def hist(h, b):
        cupyx.scatter_add(h, b, 1)
        return h

    def grad(t, i, g):
        cupyx.scatter_add(t, i, g)
        return t
    return {"embedding-grad": grad, "histogram": hist, "permute-fused": permute, "set-rows": rows_}


def _cases(rng):
    n = 2 ** 24
    table = rng.standard_normal((65536, 256)).astype(np.float32)
    ids = rng.integers(0, 65536, 16384)
    g = rng.standard_normal((16384, 256)).astype(np.float32)
    h = np.zeros(4096, np.int32)
    bins = rng.integers(0, 4096, n)
    x = rng.standard_normal(n).astype(np.float32)
    perm = rng.permutation(n)
    big = rng.standard_normal((16384, 1024)).astype(np.float32)
    rows = rng.permutation(16384)[:4096]
    v = rng.standard_normal((4096, 1024)).astype(np.float32)
    return {"embedding-grad": (embedding_grad, (table, ids, g), g.nbytes * 2 + ids.nbytes),
            "histogram": (histogram, (h, bins), bins.nbytes),
            "permute-fused": (permute_fused, (x, perm), x.nbytes * 2 + perm.nbytes),
            "set-rows": (set_rows, (big, rows, v), v.nbytes * 2 + rows.nbytes)}


def main():
    out_dir = os.environ.get("OUT", ".")
    rng = np.random.default_rng(0)
    tfns, cfns = _torch_fns(), _cupy_fns()
    rows = []
    for name, (fn, host, least) in _cases(rng).items():
        with np.errstate(all="ignore"):
            want = np.asarray(fn(*[a.astype(np.float64) if a.dtype.kind == "f" else a.copy() for a in host]))
        rows += peer_timing.four_peers(name, fn, host, tfns[name], cfns[name], want, least, fresh=True)
        cp.get_default_memory_pool().free_all_blocks()
    text = peer_timing.table("scatter_bench", "shapes in the module docstring. ms: median of 15 rounds of 10 "
                             "calls; % copy: a cupy copy of the bytes the case reads and writes at least, "
                             "timed in this run; error: max |y - ref| / max |ref| of one call against NumPy.",
                             rows)
    print(text)
    with open(os.path.join(out_dir, "scatter_bench.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
