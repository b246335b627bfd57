"""Does the suite's harness favour one side? The public P1 and P3 cases timed exactly as the suite
times them (``kfuse.bench.timing.time_events``, two rotating input copies, 100 queued calls,
median), for kfuse and torch.compile on each side's own arrays and on the other side's (CuPy
arrays / torch tensors shared through DLPack, CuPy events / torch events), in alternating rounds.
An experiment tool, not a test.

Usage on the GPU machine: PYTHONPATH=. python3 benchmarks/harness_probe.py [rounds] (writes
harness_probe.md under $OUT or the current directory)."""
import json
import os
import sys
import time

import cupy as cp
import numpy as np
import torch

import kfuse
from kfuse.bench import timing, workloads


def _suite_case(name):
    """Two copies of the suite's inputs for ``name`` as CuPy arrays and torch views of them,
    kfuse.jit and torch.compile of its body."""
    case = workloads.BY_NAME[name].cases("gpu", "full")[0]
    host = case.make_inputs()
    c_sets = [[cp.asarray(a) for a in host] for _ in range(2)]
    t_sets = [[torch.from_dlpack(a) for a in s_] for s_ in c_sets]
    return (c_sets, t_sets, kfuse.jit(case.body(np)),
            torch.compile(case.body(workloads.TorchNamespace(torch))))


def queued(call, reps=15, inner=10):
    """``row_probe``'s timer: ``inner`` calls queued between two events, median over ``reps``."""
    for i in range(3):
        call(i)
    cp.cuda.Device().synchronize()
    s, e, ts = cp.cuda.Event(), cp.cuda.Event(), []
    for _ in range(reps):
        s.record()
        for i in range(inner):
            call(i)
        e.record()
        e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e) / inner)
    return float(np.median(ts))


def busy(ms=40):
    """Queue about ``ms`` of device copies, so a host call that synchronises waits that long."""
    a = cp.empty(64 << 20, dtype=cp.float32)
    b = cp.empty_like(a)
    cp.cuda.Device().synchronize()
    for _ in range(int(ms / 0.07)):
        cp.copyto(b, a)


def conversions():
    """Host time of the DLPack conversions kfuse makes on torch tensors, with the device busy
    (a conversion that synchronises takes as long as the queued work)."""
    x = torch.empty(1024, device="cuda")
    c = cp.empty(1024, dtype=cp.float32)
    rows = []
    for what, f in (("cupy.from_dlpack(torch tensor)", lambda: cp.from_dlpack(x)),
                    ("torch.from_dlpack(cupy array)", lambda: torch.from_dlpack(c)),
                    ("nothing", lambda: None)):
        f()
        busy()
        t0 = time.perf_counter()
        f()
        rows.append(f"| {what} | {(time.perf_counter() - t0) * 1e3:.3f} |")
        cp.cuda.Device().synchronize()
    return ["", "host ms of one conversion with ~40 ms of copies queued:", "", "| call | ms |", "|---|---|"] + rows


def torch_path():
    """Host µs of each way to view a torch CUDA tensor as a CuPy array and back (mean of 2000)."""
    import timeit

    import torch.utils.dlpack as tdl
    t = torch.empty((4096, 4096), device="cuda")
    c = cp.empty((4096, 4096), dtype=cp.float32)

    def wrap():
        mem = cp.cuda.UnownedMemory(t.data_ptr(), t.numel() * 4, t, t.device.index)
        return cp.ndarray(tuple(t.shape), cp.float32, cp.cuda.MemoryPointer(mem, 0),
                          tuple(x * 4 for x in t.stride()))
    ways = {
        "cupy.from_dlpack(tensor) (stream handshake)": lambda: cp.from_dlpack(t),
        "cupy.from_dlpack(torch.utils.dlpack.to_dlpack(tensor)) (capsule)": lambda: cp.from_dlpack(tdl.to_dlpack(t)),
        "cupy.ndarray over UnownedMemory(tensor.data_ptr())": wrap,
        "torch.from_dlpack(cupy array) (stream handshake)": lambda: torch.from_dlpack(c),
        "torch.utils.dlpack.from_dlpack(cupy_array.toDlpack()) (capsule)": lambda: tdl.from_dlpack(c.toDlpack()),
        "torch.empty((4096, 4096), device='cuda')": lambda: torch.empty((4096, 4096), device="cuda"),
        "torch.cuda.current_stream().cuda_stream": lambda: torch.cuda.current_stream().cuda_stream,
        "cupy.empty((4096, 4096), float32)": lambda: cp.empty((4096, 4096), dtype=cp.float32),
    }
    lines = ["", "host µs a call (mean of 2000):", "", "| call | µs |", "|---|---|"]
    for k, f in ways.items():
        f()
        lines.append(f"| {k} | {timeit.timeit(f, number=2000) / 2000 * 1e6:.1f} |")
    return lines


def torch_call():
    """kfuse on P3 with torch tensors: host µs a call (no synchronisation), and cProfile's top
    functions over 200 calls."""
    import cProfile
    import pstats
    case = workloads.BY_NAME["P3"].cases("gpu", "full")[0]
    args = [torch.from_numpy(a).cuda() for a in case.make_inputs()]
    kf = kfuse.jit(case.body(np))
    kf(*args)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(200):
        kf(*args)
    host = (time.perf_counter() - t0) / 200 * 1e6
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    for _ in range(200):
        kf(*args)
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t1) / 200 * 1e6
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(200):
        kf(*args)
    prof.disable()
    torch.cuda.synchronize()
    print(f"host {host:.1f} µs a call (no sync), wall {wall:.1f} µs a call")
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def trace():
    """Suite-timed calls of kfuse and torch.compile on P3 and P1 under torch.profiler (CUPTI sees
    every kernel of the process); per kernel: duration percentiles and the idle gap before it."""
    from torch.profiler import ProfilerActivity, profile
    ev = timing.EventAPI.cupy()
    prof = profile(activities=[ProfilerActivity.CUDA])
    prof.start()
    for name in ("P3", "P1"):
        c_sets, t_sets, kf, tc = _suite_case(name)
        for f, sets in ((kf, c_sets), (tc, t_sets)):
            f(*sets[0])
        cp.cuda.Device().synchronize()
        runs = [(kf, c_sets), (tc, t_sets), (kf, c_sets), (tc, t_sets)]
        if name == "P1":   # the launch gap of a CuPy ufunc and a torch eager kernel of the same size
            runs += [(lambda x, w, b: cp.multiply(x, 2.0), c_sets), (lambda x, w, b: torch.mul(x, 2.0), t_sets)]
        for f, sets in runs:
            print(name, timing.time_events(lambda k: f(*sets[k % 2]), ev, budget_s=0.4).median_ms)
        cp.cuda.Device().synchronize()
    prof.stop()
    path = "/tmp/trace.json"
    prof.export_chrome_trace(path)
    return summarize(path)


def kernel_events(trace_path):
    """The kernels of a chrome trace (torch.profiler's), in time order, each with ``gap``: the µs
    the GPU sat idle since the previous kernel ended (None for the first)."""
    evs = sorted((e for e in json.load(open(trace_path))["traceEvents"] if e.get("cat") == "kernel"),
                 key=lambda e: e["ts"])
    prev_end = None
    for e in evs:
        e["gap"] = None if prev_end is None else float(e["ts"]) - prev_end
        prev_end = float(e["ts"]) + float(e["dur"])
    return evs


def profiled_medians(ways, events, trace_path, rounds=2, budget_s=0.3, grouped=False):
    """Each of ``ways`` (name -> call(i)) timed ``rounds`` times with the suite's timer under
    torch.profiler, round by round (``grouped``: a way's rounds back to back, in the order given):
    ({name: [median ms a round]}, the kernels it saw, as ``kernel_events``)."""
    from torch.profiler import ProfilerActivity, profile
    order = ([(n, f) for n, f in ways.items() for _ in range(rounds)] if grouped
             else [(n, f) for _ in range(rounds) for n, f in ways.items()])
    prof = profile(activities=[ProfilerActivity.CUDA])
    prof.start()
    med = {}
    for name, f in order:
        med.setdefault(name, []).append(timing.time_events(f, events, budget_s=budget_s).median_ms)
    cp.cuda.Device().synchronize()
    prof.stop()
    prof.export_chrome_trace(trace_path)
    return med, kernel_events(trace_path)


def summarize(trace_path):
    """Per kernel name in a chrome trace: count, duration percentiles, and the idle gap before
    each launch of it (µs)."""
    by = {}
    for e in kernel_events(trace_path):
        by.setdefault(e["name"][:70], []).append((float(e["dur"]), e["gap"]))
    lines = ["", "| kernel | n | dur p10 / p50 / p90 µs | gap before p50 / p90 µs |", "|---|---|---|---|"]
    for k, v in by.items():
        if len(v) < 20:
            continue
        d = np.array([x[0] for x in v])
        g = np.array([x[1] for x in v if x[1] is not None])
        lines.append(f"| {k} | {len(v)} | {np.percentile(d, 10):.1f} / {np.median(d):.1f} / {np.percentile(d, 90):.1f} | "
                     f"{np.median(g):.1f} / {np.percentile(g, 90):.1f} |")
    return lines


def main():
    if "--torch-call" in sys.argv:
        return torch_call()
    if "--modes" in sys.argv:
        return modes()
    if "--trace" in sys.argv:
        lines = trace()
        with open(os.path.join(os.environ.get("OUT", "."), "trace_summary.md"), "w") as f:
            f.write("\n".join(lines) + "\n")
        print("\n".join(lines))
        return
    if "--torch-path" in sys.argv:
        print("\n".join(torch_path()))
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    ev = {"cupy": timing.EventAPI.cupy(), "torch": timing.EventAPI.torch()}
    lines = [f"# harness probe, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}",
             "", "| case | runner | arrays | events | median ms per round |", "|---|---|---|---|---|"]
    for name in ("P1", "P3"):
        w = workloads.BY_NAME[name]
        case = w.cases("gpu", "full")[0]
        host = case.make_inputs()
        c_sets = [[cp.asarray(a) for a in host] for _ in range(2)]
        t_sets = [[torch.from_dlpack(a) for a in s] for s in c_sets]          # same memory
        own_t = [[torch.from_numpy(a).cuda() for a in host] for _ in range(2)]  # torch's allocator
        kf = kfuse.jit(case.body(np))
        tc_fn = torch.compile(case.body(workloads.TorchNamespace(torch)))

        def tc(*a):
            with torch.no_grad():
                return tc_fn(*a)
        combos = [("kfuse", kf, c_sets, "cupy"), ("kfuse", kf, c_sets, "torch"),
                  ("kfuse", kf, own_t, "torch"), ("torch.compile", tc, own_t, "torch"),
                  ("torch.compile", tc, own_t, "cupy"), ("torch.compile", tc, t_sets, "torch")]
        res = {i: [] for i in range(len(combos))}
        for _ in range(rounds):
            for i, (_, f, sets, e) in enumerate(combos):
                t = timing.time_events(lambda k: f(*sets[k % 2]), ev[e], budget_s=0.4)
                res[i].append(t.median_ms)
        for i, (who, _, sets, e) in enumerate(combos):
            arrays = "cupy (cupy pool)" if sets is c_sets else ("torch (torch allocator)" if sets is own_t
                                                                else "torch views of the cupy arrays")
            lines.append(f"| {name} | {who} | {arrays} | {e} | {' '.join(f'{x:.4f}' for x in res[i])} |")
            print(json.dumps({"case": name, "who": who, "arrays": arrays, "events": e, "ms": res[i]}), flush=True)
        del c_sets, t_sets, own_t
        torch.cuda.empty_cache()
        cp.get_default_memory_pool().free_all_blocks()
    lines += conversions()
    with open(os.path.join(os.environ.get("OUT", "."), "harness_probe.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def modes():
    """P1 and P3 for kfuse (CuPy arrays) and torch.compile (torch tensors, with and without
    no_grad) under three timers: the suite's (per-call events, 2 rotating copies), the suite's
    with one copy, and ``queued`` (one input, 10 calls between two events)."""
    lines = ["", f"## timers, {time.strftime('%H:%M UTC', time.gmtime())}", "",
             "| case | runner | suite timer (2 copies) | suite timer, 1 copy | queued 10, 1 copy |", "|---|---|---|---|---|"]
    ev = timing.EventAPI.cupy()
    for name in ("P1", "P3"):
        c_sets, t_sets, kf, tc_fn = _suite_case(name)

        def tc(*a):
            with torch.no_grad():
                return tc_fn(*a)
        runners = [("kfuse", kf, c_sets), ("torch.compile (no_grad)", tc, t_sets),
                   ("torch.compile (grad mode)", tc_fn, t_sets)]
        res = {r[0]: [[], [], []] for r in runners}
        for _ in range(3):
            for who, f, sets in runners:
                res[who][0].append(timing.time_events(lambda k: f(*sets[k % 2]), ev, budget_s=0.4).median_ms)
                res[who][1].append(timing.time_events(lambda k: f(*sets[0]), ev, budget_s=0.4).median_ms)
                res[who][2].append(queued(lambda k: f(*sets[0])))
        for who, _, _ in runners:
            cells = [" ".join(f"{x:.4f}" for x in col) for col in res[who]]
            lines.append(f"| {name} | {who} | " + " | ".join(cells) + " |")
        del c_sets, t_sets
        cp.get_default_memory_pool().free_all_blocks()
    with open(os.path.join(os.environ.get("OUT", "."), "harness_modes.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
