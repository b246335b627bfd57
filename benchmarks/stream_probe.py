"""Probe: the elementwise vector width against the number of streams a kernel reads. For k = 1..6
float32 inputs of 2^26 elements and 1 or 3 outputs (a fixed affine mix of the inputs), kfuse's CUDA
C kernel under 16-byte and 8-byte units at 128 and 256 threads, beside torch.compile, timed as the
suite times (per-call events, median of 5 interleaved rounds, two rotating input sets). The
question: on which devices, and from how many input streams, do 8-byte units beat 16-byte ones
(the H100 ran P6, 4 inputs and 3 outputs, 0.5% faster at 8 bytes; the H200 1% slower). An
experiment tool, not a test.

Usage on the GPU machine: PYTHONPATH=. python3 benchmarks/stream_probe.py (stream_probe.md under
$OUT or the current directory)."""
import os
import sys
import time

import cupy as cp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "gpu"))
from handplan import plan_for  # noqa: E402

from kfuse.autotune.space import TileConfig  # noqa: E402
from kfuse.bench import timing  # noqa: E402
from kfuse.runtime.cuda import compile_plan  # noqa: E402

N = 1 << 26
TILES = {"heuristic": None,
         "16 B, 256 threads": TileConfig.make("elementwise", block=256, ept=1, vec=4),
         "8 B, 128 threads": TileConfig.make("elementwise", block=128, ept=1, vec=2),
         "8 B, 256 threads": TileConfig.make("elementwise", block=256, ept=1, vec=2),
         "2 units of 8 B, 256 threads": TileConfig.make("elementwise", block=256, ept=2, vec=2)}


def mix(k, m):
    """A function of k inputs returning m outputs, each an affine mix of every input."""
    def body(*xs):
        outs = []
        for j in range(m):
            acc = xs[0] * (0.5 + j)
            for i, x in enumerate(xs[1:], 1):
                acc = acc + x * (0.25 * (i + j + 1))
            outs.append(acc)
        return tuple(outs) if m > 1 else outs[0]
    names = ", ".join(f"x{i}" for i in range(k))     # one named parameter an input (the tracer reads them)
    fn = eval(f"lambda {names}: body({names})", {"body": body})
    fn.__name__ = f"mix_{k}_{m}"
    return fn


def main():
    import torch
    ev = timing.EventAPI.cupy()
    lines = [f"# stream probe, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}", "",
             "| inputs | outputs | " + " | ".join(TILES) + " | torch.compile | best kfuse / torch.compile |",
             "|---|---|" + "---|" * (len(TILES) + 2)]
    for m in (1, 3):
        for k in (1, 2, 3, 4, 6):
            fn = mix(k, m)
            sets = [[cp.random.standard_normal(N, dtype=cp.float32) for _ in range(k)] for _ in range(2)]
            plan, _ = plan_for(fn, *[("float32", (N,))] * k)
            progs = {}
            for name, tile in TILES.items():
                prog = compile_plan(plan)
                if tile is not None:
                    prog.set_tile(plan.groups[0].id, tile)
                prog(sets[0])
                progs[name] = prog
            torch._dynamo.reset()      # a fresh function each case: no recompile limit
            tc = torch.compile(fn)
            tsets = [[torch.from_dlpack(a) for a in s] for s in sets]
            res = {name: [] for name in list(progs) + ["torch.compile"]}
            with torch.no_grad():
                for _ in range(5):
                    for name, prog in progs.items():
                        res[name].append(timing.time_events(lambda i, p=prog: p(sets[i % 2]), ev,
                                                            budget_s=0.3).median_ms)
                    res["torch.compile"].append(timing.time_events(lambda i: tc(*tsets[i % 2]), ev,
                                                                   budget_s=0.3).median_ms)
            med = {name: float(np.median(v)) for name, v in res.items()}
            best = min(v for n, v in med.items() if n != "torch.compile")
            lines.append(f"| {k} | {m} | " + " | ".join(f"{med[n]:.4f}" for n in TILES) +
                         f" | {med['torch.compile']:.4f} | {med['torch.compile'] / best:.4f}× |")
            print(lines[-1], flush=True)
            del sets, tsets, progs
            cp.get_default_memory_pool().free_all_blocks()
    with open(os.path.join(os.environ.get("OUT", "."), "stream_probe.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
