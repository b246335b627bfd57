"""Which Triton config does torch.compile pick for the suite's row workloads, and how close were
the others? Compiles P2/P3/P4 (full size) with Inductor's caches off RUNS times each and records
every config Inductor's runtime autotuner benchmarked (its own timings) and the one it kept, then
times the compiled function as the suite does. torch.compile's P4 runs in a fast or a slow mode
from suite to suite; this shows whether that is its autotuner choosing between near-equal
configs. An experiment tool, not a test.

Usage on the GPU machine: PYTHONPATH=. python3 benchmarks/inductor_autotune_probe.py [P4 P2 P3]
(inductor_autotune.md under $OUT or the current directory; RUNS=3)."""
import os
import sys
import time

import cupy as cp
import numpy as np
import torch
import torch._inductor.runtime.triton_heuristics as th

from kfuse.bench import timing, workloads

RECORD: list = []
_bench = th.CachingAutotuner.bench


def _recording_bench(self, launcher, *args, **kwargs):
    t = _bench(self, launcher, *args, **kwargs)
    RECORD.append((self.inductor_meta.get("kernel_name"), launcher.config, float(t)))
    return t


th.CachingAutotuner.bench = _recording_bench
torch._inductor.config.force_disable_caches = True   # every run compiles and autotunes afresh


def _cfg(c) -> str:
    kw = ", ".join(f"{k}={v}" for k, v in sorted(c.kwargs.items()))
    return f"{kw}, warps={c.num_warps}, stages={c.num_stages}"


def one_run(name, k, lines):
    w = workloads.BY_NAME[name]
    case = w.cases("gpu", "full")[0]
    args = [torch.from_dlpack(cp.asarray(a)) for a in case.make_inputs()]
    sets = [args, [a.clone() for a in args]]
    torch._dynamo.reset()
    del RECORD[:]
    fn = torch.compile(w.make(workloads.TorchNamespace(torch)))
    with torch.no_grad():
        fn(*sets[0])
        torch.cuda.synchronize()
        ms = [timing.time_events(lambda i: fn(*sets[i % 2]), timing.EventAPI.torch(), budget_s=0.4).median_ms
              for _ in range(5)]
    lines.append(f"\n## {name}, run {k}: torch.compile {np.median(ms):.4f} ms (median of 5 windows, "
                 f"{min(ms):.4f}-{max(ms):.4f})\n")
    lines.append("| kernel | config | autotuner's ms |")
    lines.append("|---|---|---|")
    best = {}
    for kern, c, t in RECORD:
        if kern not in best or t < best[kern][1]:
            best[kern] = (c, t)
    for kern, c, t in RECORD:
        mark = " **(kept)**" if best[kern][0] is c else ""
        lines.append(f"| {kern} | {_cfg(c)}{mark} | {t:.4f} |")
    print("\n".join(lines[-len(RECORD) - 3:]), flush=True)


def main():
    lines = [f"# Inductor's runtime autotuning of the row workloads, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {torch.cuda.get_device_name()}, "
             f"torch {torch.__version__}"]
    for name in sys.argv[1:] or ["P4"]:
        for k in range(int(os.environ.get("RUNS", "3"))):
            one_run(name, k + 1, lines)
    with open(os.path.join(os.environ.get("OUT", "."), "inductor_autotune.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
