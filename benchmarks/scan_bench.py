"""GPU timing of scans (kfuse/trace/scans.py: ``np.cumsum`` and friends) against torch.compile,
torch eager, CuPy eager and a device-to-device copy, all measured in this one run.

Cases (float32, 8192 x 4096 unless said):
  * ``row-cumsum``: ``np.cumsum(x, axis=1)``, rows contiguous (a thread a row walks it in order);
  * ``col-cumsum``: ``np.cumsum(x, axis=0)`` on 4096 x 65536 (neighbouring threads, neighbouring columns);
  * ``row-cumsum-fused``: ``np.cumsum(x * w, axis=1) / n`` (a producer and a consumer fused);
  * ``row-cummax``: ``np.maximum.accumulate(x, axis=1)``;
  * ``short-rows``: ``np.cumsum(x, axis=1)`` on 2**21 x 16;
  * ``flat``: ``np.cumsum(x)`` of 2**26 elements (one row: chunks in two stages).
Each time: the median over 15 rounds of 10 back-to-back calls between two CUDA events, peers
interleaved per round. The error column: max |y - ref| / max |ref| against a float64 NumPy
cumsum. Writes ``scan_bench.md`` under $OUT (or the current directory).
Usage: PYTHONPATH=. python3 benchmarks/scan_bench.py
"""
import os

import cupy as cp
import numpy as np

import peer_timing


def row_cumsum(x):
    return np.cumsum(x, axis=1)


def col_cumsum(x):
    return np.cumsum(x, axis=0)


def row_cumsum_fused(x, w):
    return np.cumsum(x * w, axis=1) / x.shape[1]


def flat_cumsum(x):
    return np.cumsum(x)


def row_cummax(x):
    return np.maximum.accumulate(x, axis=1)


def _torch_fns():
    import torch
    return {"row-cumsum": lambda x: torch.cumsum(x, 1), "col-cumsum": lambda x: torch.cumsum(x, 0),
            "row-cumsum-fused": lambda x, w: torch.cumsum(x * w, 1) / x.shape[1],
            "row-cummax": lambda x: torch.cummax(x, 1).values,
            "short-rows": lambda x: torch.cumsum(x, 1), "flat": lambda x: torch.cumsum(x.flatten(), 0)}


def _cupy_fns():
    return {"row-cumsum": lambda x: cp.cumsum(x, 1), "col-cumsum": lambda x: cp.cumsum(x, 0),
            "row-cumsum-fused": lambda x, w: cp.cumsum(x * w, 1) / x.shape[1],
            "row-cummax": lambda x: cp.maximum.accumulate(x, 1),
            "short-rows": lambda x: cp.cumsum(x, 1), "flat": lambda x: cp.cumsum(x)}


def main():
    out_dir = os.environ.get("OUT", ".")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8192, 4096)).astype(np.float32)
    w = rng.standard_normal(4096).astype(np.float32)
    cases = {"row-cumsum": (row_cumsum, (x,)), "col-cumsum": (col_cumsum, (rng.standard_normal((4096, 65536)).astype(np.float32),)),
             "row-cumsum-fused": (row_cumsum_fused, (x, w)), "row-cummax": (row_cummax, (x,)),
             "short-rows": (row_cumsum, (rng.standard_normal((2 ** 21, 16)).astype(np.float32),)),
             "flat": (flat_cumsum, (rng.standard_normal(2 ** 26).astype(np.float32),))}
    tfns, cfns = _torch_fns(), _cupy_fns()
    rows = []
    for name, (fn, host) in cases.items():
        with np.errstate(all="ignore"):
            want = np.asarray(fn(*[a.astype(np.float64) for a in host]))
        rows += peer_timing.four_peers(name, fn, host, tfns[name], cfns[name], want, 2 * host[0].nbytes)
        cp.get_default_memory_pool().free_all_blocks()
    text = peer_timing.table("scan_bench", "float32; shapes in the module docstring. ms: median of 15 rounds of "
                             "10 calls; % copy: a cupy copy of the input's bytes read and written, timed in "
                             "this run; error: max |y - ref| / max |ref| against float64 NumPy.", rows)
    print(text)
    with open(os.path.join(out_dir, "scan_bench.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
