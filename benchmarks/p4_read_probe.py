"""How fast can a row reduction read on this GPU? P4 (sqrt(sum(x*x, axis=1)), full size) as kfuse
runs it (a block a row, the row in registers, two barriers), with its L1/shared carve-out swept, beside
hand-written streaming shapes: WPR warps a row (1: a warp a row, no barrier, no shared memory), the
row read in a loop of UNROLL 16-byte loads a lane in flight, partial sums combined by shuffles; and
torch.compile. Timed as the suite times (per-call events, median of 5 interleaved rounds, two
rotating input copies). An experiment tool, not a test.

Usage on the GPU machine: PYTHONPATH=. python3 benchmarks/p4_read_probe.py (p4_read_probe.md under
$OUT or the current directory; BEFORE=P1,P2,P3: those workloads of the suite first, as
suite_replay.py)."""
import os
import sys
import time

import cupy as cp
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "gpu"))
from handplan import plan_for  # noqa: E402
from suite_replay import header_note, replay_suite  # noqa: E402

from kfuse.bench import timing, workloads  # noqa: E402
from kfuse.runtime import cuda as rc  # noqa: E402

SRC = r"""
extern "C" __global__ void __launch_bounds__(256) rownorm(const float* __restrict__ x, float* __restrict__ y,
                                                         int rows, int cols) {
  const int WPR = %(wpr)d, U = %(unroll)d;
  int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  int row = blockIdx.x * (256 / 32 / WPR) + warp / WPR;
  int part = warp %% WPR;
  __shared__ float red[8];
  float acc[U];
  #pragma unroll
  for (int u = 0; u < U; ++u) acc[u] = 0.f;
  if (row < rows) {
    const float4* p = reinterpret_cast<const float4*>(x + (size_t)row * cols);
    int n4 = cols >> 2, step = 32 * WPR;
    for (int i = part * 32 + lane; i < n4; i += step * U) {
      float4 v[U];
      #pragma unroll
      for (int u = 0; u < U; ++u) v[u] = (i + u * step < n4) ? __ldg(p + i + u * step) : make_float4(0.f, 0.f, 0.f, 0.f);
      #pragma unroll
      for (int u = 0; u < U; ++u) acc[u] += v[u].x * v[u].x + v[u].y * v[u].y + v[u].z * v[u].z + v[u].w * v[u].w;
    }
  }
  float s = 0.f;
  #pragma unroll
  for (int u = 0; u < U; ++u) s += acc[u];
  #pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (WPR > 1) {
    if (lane == 0) red[warp] = s;
    __syncthreads();
    if (part == 0 && lane == 0) {
      for (int k = 1; k < WPR; ++k) s += red[warp + k];
    }
  }
  if (part == 0 && lane == 0 && row < rows) y[row] = sqrtf(s);
}
"""
SHAPES = [(wpr, u) for wpr in (1, 2, 8) for u in (2, 4, 8)]
CARVEOUTS = tuple(map(int, os.environ.get("CARVEOUTS", "0 10 20 25 30 40").split()))   # CARVEOUTS="0 25 75": others
CARVEOUT_ATTR = rc.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT


def main():
    import torch
    before = replay_suite()
    case = workloads.BY_NAME["P4"].cases("gpu", "full")[0]
    (x_host,) = case.make_inputs()
    rows, cols = x_host.shape
    sets = [cp.asarray(x_host), cp.asarray(x_host)]
    tsets = [torch.from_dlpack(a) for a in sets]
    tc = torch.compile(case.body(workloads.TorchNamespace(torch)))
    ref = cp.from_dlpack(tc(tsets[0]))
    ways = {"torch.compile": lambda i: tc(tsets[i % 2])}
    name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    plan, _ = plan_for(case.body(np), ("float32", (rows, cols)), device="h200")
    prog = rc.compile_plan(plan)
    prog([sets[0]])
    ways["kfuse"] = lambda i: prog([sets[i % 2]])
    (launcher,) = prog.launchers
    kernels = [v[0] for v in launcher._variants.values()]
    funcs = [v[1] for v in launcher._variants.values()]
    own = [rc.row_carveout(k.variant, name, rc.cuda_emit.writes_rows(launcher.kir)) for k in kernels]
    lines = [f"# P4 read probe, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {name}{header_note(before)}",
             "", f"x: {rows} x {cols} float32; kfuse: {', '.join(k.variant.tag for k in kernels)}, "
             f"carve-out {own}", ""]
    for wpr, u in SHAPES:
        f = cp.RawKernel(SRC % {"wpr": wpr, "unroll": u}, "rownorm", options=("-std=c++17",))
        rpb = 8 // wpr
        grid = (-(-rows // rpb),)

        def launch(i, f=f, grid=grid):
            y = cp.empty(rows, cp.float32)
            f(grid, (256,), (sets[i % 2], y, np.int32(rows), np.int32(cols)))
            return y
        ways[f"{wpr} warp(s) a row, {u} loads a lane in flight"] = launch
    agree = {k: float(cp.max(cp.abs(cp.ravel(cp.asarray(w(0)[0] if k == "kfuse" else w(0))) - ref)
                              / cp.abs(ref))) for k, w in ways.items()}
    res = {k: [] for k in ways}
    carve = {f"kfuse, carve-out {pct}% shared": pct for pct in CARVEOUTS}
    res.update({k: [] for k in carve})
    ev = timing.EventAPI.cupy()
    with torch.no_grad():
        for r in range(5):
            keys = list(ways) + list(carve)
            for k in keys[r % len(keys):] + keys[:r % len(keys)]:
                if k in carve:
                    for fn in funcs:
                        cp.cuda.driver.funcSetAttribute(fn.ptr, CARVEOUT_ATTR, carve[k])
                    res[k].append(timing.time_events(ways["kfuse"], ev, budget_s=0.3).median_ms)
                    for fn, pct in zip(funcs, own):    # back to kfuse's own choice
                        cp.cuda.driver.funcSetAttribute(fn.ptr, CARVEOUT_ATTR, -1 if pct is None else pct)
                else:
                    res[k].append(timing.time_events(ways[k], ev, budget_s=0.3).median_ms)
    base = float(np.median(res["torch.compile"]))
    lines += ["| way | ms (median of 5 rounds; min-max) | vs torch.compile | GB/s read | max rel diff |",
              "|---|---|---|---|---|"]
    for k, ts in res.items():
        ms = float(np.median(ts))
        lines.append(f"| {k} | {ms:.4f} ({min(ts):.4f}-{max(ts):.4f}) | {base / ms:.4f}x | "
                     f"{rows * cols * 4 / ms / 1e6:.0f} | {agree.get(k, agree.get('kfuse', 0)):.1e} |")
    with open(os.path.join(os.environ.get("OUT", "."), "p4_read_probe.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
