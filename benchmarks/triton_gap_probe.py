"""Is the gap between kfuse and torch.compile on an elementwise workload (P1 or P6) the kernel's or
the launcher's? torch.compile's Triton cubin, loaded from Inductor's cache and launched through
CuPy (outputs from cupy.empty), kfuse's own kernel launched the same bare way, torch.compile and
kfuse, all timed in the suite's loop under torch.profiler: suite medians, and per kernel its CUPTI
duration and the idle gap before it. An experiment tool; writes triton_gap_<W>.md under $OUT.

Usage on the GPU machine: PYTHONPATH=. python3 benchmarks/triton_gap_probe.py [P1|P6 ...]"""
import collections
import glob
import itertools
import os
import re
import sys

import cupy as cp
import numpy as np
import torch
from harness_probe import profiled_medians

import kfuse
from kfuse.bench import timing, workloads


def _shape(cubin):
    """(parameters, threads a block, elements a thread's vector loads read) of a Triton kernel, from
    the PTX Triton keeps beside the cubin: ``.reqntid``, and the elements its vector loads read
    per thread, over all inputs (None if the PTX is absent or not of that form)."""
    ptx_path = cubin[:-6] + ".ptx"
    if not os.path.exists(ptx_path):
        return None
    ptx = open(ptx_path).read()
    entry = ptx[ptx.index(".entry"):ptx.index(")", ptx.index(".entry"))]
    n_params = entry.count(".param")
    m = re.search(r"\.(?:maxntid|reqntid) (\d+)", ptx)
    if not m:
        return None
    return n_params, int(m.group(1)), sum(int(w) for w in re.findall(r"ld\.global\S*\.v(\d)\.\w+", ptx))


TritonKernel = collections.namedtuple("TritonKernel", "cubin name threads xblock order")


def triton_args(k: TritonKernel, ins, outs, n: int) -> tuple:
    """The arguments of Triton's kernel ``k``: the inputs in its order, the outputs, the element
    count and Triton's two scratch pointers."""
    return (*[ins[i] for i in k.order], *outs, np.int32(n), np.uint64(0), np.uint64(0))


def _triton_match(c_set, want, lines) -> TritonKernel | None:
    """The cubin in Inductor's cache that reproduces ``want`` (torch.compile's outputs) bit for bit
    on ``c_set``; None if none does. Only cubins with this workload's parameter count (tensors, n,
    Triton's two scratch pointers) are tried, at the XBLOCK their PTX implies (threads x elements a
    thread loads per input), then each input order (when the inputs are all of one shape)."""
    n = c_set[0].size
    for cubin in sorted(glob.glob("/tmp/torchinductor_*/**/triton_poi_*.cubin", recursive=True)):
        shape = _shape(cubin)
        if shape is None or shape[0] != len(c_set) + len(want) + 3 or not shape[2] or shape[2] % len(c_set):
            continue
        threads = shape[1]
        xblock = threads * (shape[2] // len(c_set))
        if n % xblock:
            continue
        name = os.path.basename(cubin)[:-6]
        fn = cp.RawModule(path=cubin).get_function(name)
        ident = tuple(range(len(c_set)))
        same = len({a.shape for a in c_set}) == 1     # other orders could read past a small input
        for order in itertools.permutations(ident) if same else [ident]:
            k = TritonKernel(cubin, name, threads, xblock, order)
            outs = [cp.empty_like(w) for w in want]
            fn((n // xblock,), (threads,), triton_args(k, c_set, outs, n))
            got = [next((j for j, o in enumerate(outs) if bool(cp.array_equal(o, w))), None) for w in want]
            if None not in got:
                lines.append(f"cubin {name}: {threads} threads, XBLOCK {xblock}, input order {order}")
                return k
    return None


def _triton_launch(c_set, want, lines):
    """``launch(ins)`` of :func:`_triton_match`'s kernel (fresh outputs a call), or None."""
    k = _triton_match(c_set, want, lines)
    if k is None:
        return None
    fn, n = cp.RawModule(path=k.cubin).get_function(k.name), c_set[0].size
    return lambda ins: fn((n // k.xblock,), (k.threads,), triton_args(k, ins, [cp.empty_like(w) for w in want], n))


def probe(wname):
    case = workloads.BY_NAME[wname].cases("gpu", "full")[0]
    host = case.make_inputs()
    c_sets = [[cp.asarray(a) for a in host] for _ in range(2)]
    t_sets = [[torch.from_dlpack(a) for a in s] for s in c_sets]
    tc = torch.compile(case.body(workloads.TorchNamespace(torch)))
    kf = kfuse.jit(case.body(np))
    ref = tc(*t_sets[0])
    ref = [cp.from_dlpack(t) for t in (ref if isinstance(ref, tuple) else (ref,))]
    kf(*c_sets[0])
    torch.cuda.synchronize()
    lines = [f"# {wname}: torch.compile's kernel and kfuse's, each as the framework and as a bare CuPy launch", ""]
    tri = _triton_launch(c_sets[0], ref, lines)
    (entry,) = kf._programs.values()
    launchers = entry.program.launchers
    launcher = launchers[0] if len(launchers) == 1 else None
    ways = {"torch.compile": lambda i: tc(*t_sets[i % 2]), "kfuse": lambda i: kf(*c_sets[i % 2])}
    if tri is not None:
        ways["Triton cubin via CuPy"] = lambda i: tri(c_sets[i % 2])
    if launcher is not None:
        (_, func, grid, block, tail, _), = launcher._variants.values()
        ways["kfuse kernel via bare CuPy"] = lambda i: func(grid, block, (*[cp.empty_like(r) for r in ref],
                                                                          *c_sets[i % 2], *tail))
    med, evs = profiled_medians(ways, timing.EventAPI.cupy(), f"/tmp/tg_{wname}.json", rounds=3)
    lines += ["", "| way | suite median ms (3 rounds) |", "|---|---|"]
    lines += [f"| {k} | {' '.join(f'{x:.4f}' for x in v)} |" for k, v in med.items()]
    gaps = {}
    for e in evs:
        if e["gap"] is not None:
            gaps.setdefault(re.sub(r"\W.*", "", e["name"])[:48], []).append((e["dur"], e["gap"]))
    lines += ["", "| kernel (both launches of a kernel share its name) | n | dur p50 µs | gap p10 / p50 / p90 µs |",
              "|---|---|---|---|"]
    for k, v in gaps.items():
        if len(v) > 20:
            g = np.array([x[1] for x in v])
            lines.append(f"| {k} | {len(v)} | {np.median([x[0] for x in v]):.1f} | "
                         f"{np.percentile(g, 10):.1f} / {np.median(g):.1f} / {np.percentile(g, 90):.1f} |")
    with open(os.path.join(os.environ.get("OUT", "."), f"triton_gap_{wname}.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    for w in sys.argv[1:] or ["P6"]:
        probe(w)
