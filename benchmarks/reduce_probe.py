"""Long reductions over few rows (a record, not a test): kfuse's two-stage (split) kernels beside
its one-block-a-row kernel (split switched off), CuPy and torch, timed as the suite times (events,
median of rounds, two rotating input copies), with bytes over time against the copy ceiling.

Usage on the GPU machine: ``PYTHONPATH=$PWD python3 benchmarks/reduce_probe.py`` (writes
``$OUT/reduce_probe.md``)."""
import os
import time

import cupy as cp
import numpy as np

import kfuse
from kfuse.bench import timing
from kfuse.runtime import cuda as rc

CASES = [   # name, function (traced by kfuse), the same for CuPy arrays and torch tensors, shape, dtype
    ("x.sum(), 2^28 f32", lambda x: x.sum(), lambda a: a.sum(), (1 << 28,), np.float32),
    ("x.max(), 2^28 f32", lambda x: x.max(), lambda a: a.max(), (1 << 28,), np.float32),
    ("x.argmax(), 2^27 f32", lambda x: x.argmax(), lambda a: a.argmax(), (1 << 27,), np.float32),
    ("sqrt((x*x).sum(1)), 4 x 2^26 f32", lambda x: np.sqrt((x * x).sum(axis=1)),
     lambda a: (a * a).sum(1) ** 0.5, (4, 1 << 26), np.float32),
    ("x.sum(1), 64 x 2^22 f32", lambda x: x.sum(axis=1), lambda a: a.sum(1), (64, 1 << 22), np.float32),
    ("x.mean(), 2^27 f64", lambda x: x.mean(), lambda a: a.mean(), (1 << 27,), np.float64),
    ("x.sum(0), 2^22 x 16 f32", lambda x: x.sum(axis=0), lambda a: a.sum(0), (1 << 22, 16), np.float32),
    ("x.sum(0), 2^16 x 1024 f32", lambda x: x.sum(axis=0), lambda a: a.sum(0), (1 << 16, 1024), np.float32),
]


def main():
    import torch
    ev = timing.EventAPI.cupy()
    rows = []
    for name, fn, peer_fn, shape, dtype in CASES:
        x = cp.asarray(np.random.default_rng(0).standard_normal(shape).astype(dtype))
        sets = [x, x.copy()]
        tx = [torch.from_dlpack(a) for a in sets]
        split = kfuse.jit(fn)
        knobs = rc.ROW_SPLIT_BLOCKS_PER_SM, rc.COL_SPLIT_BLOCKS_PER_SM
        rc.ROW_SPLIT_BLOCKS_PER_SM = rc.COL_SPLIT_BLOCKS_PER_SM = 0     # one pass a row (chunks = 0)
        try:
            whole = kfuse.jit(fn)
            whole(x)
        finally:
            rc.ROW_SPLIT_BLOCKS_PER_SM, rc.COL_SPLIT_BLOCKS_PER_SM = knobs
        ref = cp.asnumpy(split(x))
        ok = bool(np.allclose(ref, cp.asnumpy(whole(x)), rtol=1e-5, equal_nan=True))
        peers = {"kfuse (two-stage)": lambda k: split(sets[k % 2]),
                 "kfuse (one pass a row)": lambda k: whole(sets[k % 2]),
                 "cupy": lambda k: peer_fn(sets[k % 2]),
                 "torch": lambda k: peer_fn(tx[k % 2])}
        for peer, call in peers.items():
            ms = float(np.median([timing.time_events(call, ev, budget_s=0.3).median_ms for _ in range(3)]))
            rows.append((name, peer, ms, x.nbytes / ms / 1e6, ok))
            print(rows[-1], flush=True)
        x = sets = tx = peers = None     # free the inputs before the next case
        cp.get_default_memory_pool().free_all_blocks()
    lines = [f"# long reductions over few rows, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "",
             "| case | impl | ms (median) | GB/s read | split == one block a row (rtol 1e-5) |", "|---|---|---|---|---|"]
    lines += [f"| {c} | {p} | {ms:.4f} | {gbs:.0f} | {ok} |" for c, p, ms, gbs, ok in rows]
    with open(os.path.join(os.environ.get("OUT", "."), "reduce_probe.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
