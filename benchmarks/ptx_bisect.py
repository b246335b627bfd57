"""Which difference between torch.compile's Triton kernel and kfuse's makes the faster kernel
faster? Both kernels as PTX, edited one difference at a time (Triton's: load flavour, exact
division; kfuse's: load flavour, register caps, blocks an SM capped by a shared-memory pad) and
loaded through the driver's JIT, each launched bare through CuPy with fresh
outputs per call and timed as the suite times (per-call events, median of 5 interleaved rounds, two
rotating input copies), beside torch.compile, kfuse and Triton's own cubin. Outputs are compared
with torch.compile's (bit-equal or max relative difference). An experiment tool, not a test.

Usage on the GPU machine: PYTHONPATH=. python3 benchmarks/ptx_bisect.py [P6]
(writes ptx_bisect_<W>.md under $OUT or the current directory). BEFORE=P1,P2,P3,P4,P5 first runs
those workloads of the public suite in this process (BEFORE_PEERS: only those peers, as
``kfuse bench --peers``): a whole suite has run P6 0.2-0.4% slower than P6 alone (ninth session)."""
import os
import re
import sys
import tempfile
import time

import cupy as cp
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "gpu"))
from handplan import plan_for  # noqa: E402
from one_pass import one_pass_grids  # noqa: E402
from suite_replay import header_note, replay_suite  # noqa: E402
from triton_gap_probe import _triton_match, triton_args  # noqa: E402

import kfuse  # noqa: E402
from kfuse.autotune.space import TileConfig  # noqa: E402
from kfuse.bench import timing, workloads  # noqa: E402
from kfuse.codegen import nvrtc  # noqa: E402
from kfuse.runtime.cuda import compile_plan  # noqa: E402

_TMP = tempfile.mkdtemp(prefix="ptx_bisect_")
CARVEOUT_ATTR = 9       # CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
# dynamic shared memory a block asks for, capping blocks an SM at 8, 7, 6, 5 of 228 KiB (1 KiB
# reserved a block) with the carve-out at its maximum; 27 KiB (8 blocks) is the control
SMEM_PADS = (27 << 10, 31 << 10, 36 << 10, 44 << 10)


def _occupancy(func, block, smem):
    return cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(_ptr(func), block, smem)


def _ptr(func):
    """The CUfunction of a CuPy Function or RawKernel."""
    return getattr(func, "kernel", func).ptr


def _load_ptx(ptx: str, name: str, tag: str):
    """The kernel ``name`` of ``ptx`` through the driver's JIT (the file is kept for reading)."""
    path = os.path.join(_TMP, f"{tag}.ptx")
    with open(path, "w") as f:
        f.write(ptx)
    return cp.RawModule(path=path).get_function(name)


# ---- edits of a PTX text, each one difference between the two kernels
def nc_loads(ptx):
    return re.sub(r"ld\.global\.v(\d)\.b32", r"ld.global.nc.v\1.b32", ptx)


def plain_loads(ptx):
    return re.sub(r"ld\.global\.nc\.", "ld.global.", ptx)


def exact_div(ptx):
    return ptx.replace("div.full.f32", "div.rn.f32")


def f64_const_div(ptx):
    """Triton's ``x * fl(1/c)`` for Adam's two bias corrections as kfuse's exactly rounded x / c:
    the product taken in float64 with 1/c in float64, rounded once."""
    for f32, f64 in (("0f3FC48605", "0d3FF890C0ADAD24BA"), ("0f42C8E6D3", "0d40591CDA65D04AEF")):
        ptx = re.sub(rf"mul\.f32 \t(%r\d+), (%r\d+), {f32};",
                     rf"{{ .reg .f64 t; cvt.f64.f32 t, \2; mul.f64 t, t, {f64}; cvt.rn.f32.f64 \1, t; }}", ptx)
    return ptx


def min_blocks(k):
    """``__launch_bounds__(B, k)``: at least ``k`` blocks an SM, registers capped to fit."""
    return lambda ptx: re.sub(r"(\.maxntid \d+, 1, 1)", rf"\1\n.minnctapersm {k}", ptx)


def _kfuse_bare(fn, tile, c_sets, tag):
    """(launch-maker, kfuse's function, its PTX, kernel name, note) of kfuse's program for ``fn``
    under ``tile`` (None: the heuristic); a launch returns its outputs."""
    plan, _ = plan_for(fn, *[(str(a.dtype), a.shape) for a in c_sets[0]], device="h200")
    prog = compile_plan(plan)
    if tile is not None:
        prog.set_tile(plan.groups[0].id, tile)
    n_out = len(prog(c_sets[0]))
    (launcher,) = prog.launchers
    ((kernel, func, grid, block, tail, *_),) = launcher._variants.values()
    ptx = nvrtc.compile(kernel.source, arch=nvrtc.normalize_arch(cp.cuda.Device().compute_capability)).ptx

    def bare(f, smem=0):
        def launch(i):
            outs = [cp.empty_like(c_sets[0][0]) for _ in range(n_out)]
            f(grid, block, (*outs, *c_sets[i % 2], *tail), shared_mem=smem)
            return outs
        return launch
    return bare, func, ptx, kernel.name, f"{tag}: {block[0]} threads, grid {grid[0]} ({kernel.variant.tag})"


def probe(wname, lines):
    case = workloads.BY_NAME[wname].cases("gpu", "full")[0]
    host = case.make_inputs()
    c_sets = [[cp.asarray(a) for a in host] for _ in range(2)]
    t_sets = [[torch.from_dlpack(a) for a in s] for s in c_sets]
    fn = case.body(np)
    tc = torch.compile(case.body(workloads.TorchNamespace(torch)))
    ref = tc(*t_sets[0])
    ref = [cp.from_dlpack(t) for t in (ref if isinstance(ref, tuple) else (ref,))]
    ways = {"torch.compile": lambda i: tc(*t_sets[i % 2])}
    check = {}
    tri = _triton_match(c_sets[0], ref, lines)
    if tri is not None:
        n = c_sets[0][0].size

        def tri_way(f):
            def launch(i):
                outs = [cp.empty_like(r) for r in ref]
                f((n // tri.xblock,), (tri.threads,), triton_args(tri, c_sets[i % 2], outs, n))
                return outs
            return launch
        ways["Triton cubin"] = check["Triton cubin"] = tri_way(cp.RawModule(path=tri.cubin).get_function(tri.name))
        with open(tri.cubin[:-6] + ".ptx") as f:      # kept beside the cubin (_triton_match read it)
            ptx = f.read()
        for tag, edit in [("Triton PTX (JIT)", None), ("Triton PTX, .nc loads", nc_loads),
                          ("Triton PTX, div.rn", exact_div), ("Triton PTX, x / c in f64", f64_const_div),
                          ("Triton PTX, .nc + div.rn + x / c in f64",
                           lambda p: f64_const_div(exact_div(nc_loads(p))))]:
            ways[tag] = check[tag] = tri_way(_load_ptx(edit(ptx) if edit else ptx, tri.name, re.sub(r"\W+", "_", tag)))
    kf = kfuse.jit(fn, backend="cuda")
    kf(*c_sets[0])
    ways["kfuse"] = lambda i: kf(*c_sets[i % 2])
    v8 = TileConfig.make("elementwise", block=256, ept=1, vec=2)
    for tag, tile, one_pass in [("kfuse heuristic", None, False), ("kfuse 256x8B", v8, False),
                                ("kfuse 256x8B, exact", v8, True)]:
        with one_pass_grids(c_sets[0][0].size, on=one_pass):
            bare, func, ptx, kname, note = _kfuse_bare(fn, tile, c_sets, tag)
        block = int(re.search(r"\.maxntid (\d+)", ptx).group(1))
        ways[f"{tag}, cubin"] = check[f"{tag}, cubin"] = bare(func)
        lines.append(f"{note}: {_occupancy(func, block, 0)} blocks an SM")
        edits = [("plain loads", plain_loads, 0)] if tile is None else []
        if tile is not None:
            edits += [(f"at least {k} blocks an SM", min_blocks(k), 0) for k in (6, 7)]
            edits += [(f"{pad >> 10} KiB smem pad", None, pad) for pad in SMEM_PADS]
        for etag, edit, pad in edits:
            f = _load_ptx(edit(ptx) if edit else ptx, kname, re.sub(r"\W+", "_", tag + etag))
            if pad:
                cp.cuda.driver.funcSetAttribute(_ptr(f), CARVEOUT_ATTR, 100)
            ways[f"{tag}, {etag}"] = check[f"{tag}, {etag}"] = bare(f, pad)
            lines.append(f"{tag}, {etag}: {_occupancy(f, block, pad)} blocks an SM")
    agree = {k: _agreement(w(0), ref) for k, w in check.items()}
    ev = timing.EventAPI.cupy()
    res = {k: [] for k in ways}
    with torch.no_grad():
        for r in range(5):
            keys = list(ways)
            keys = keys[r % len(keys):] + keys[:r % len(keys)]
            for k in keys:
                res[k].append(timing.time_events(ways[k], ev, budget_s=0.4).median_ms)
    base = float(np.median(res["torch.compile"]))
    lines += ["", f"| {wname} way | ms (median of 5 rounds; min-max) | vs torch.compile | outputs vs torch.compile's |",
              "|---|---|---|---|"]
    for k, v in res.items():
        med = float(np.median(v))
        lines.append(f"| {k} | {med:.4f} ({min(v):.4f}-{max(v):.4f}) | {base / med:.4f}x | {agree.get(k, '')} |")


def _agreement(outs, ref) -> str:
    """'bit-equal' or the largest relative difference of ``outs`` from ``ref``, each reference
    output paired with the closest output (kernels order their outputs their own way)."""
    def rel(o, r):
        return float(cp.max(cp.abs(o - r) / cp.maximum(cp.abs(r), 1e-30)))
    worst = max(min(rel(o, r) for o in outs) for r in ref)
    return "bit-equal" if worst == 0 else f"max rel diff {worst:.1e}"


def main():
    before = replay_suite()
    for w in sys.argv[1:] or ["P6"]:
        lines = [f"# PTX bisect {w}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
                 f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}"
                 + header_note(before), ""]
        probe(w, lines)
        with open(os.path.join(os.environ.get("OUT", "."), f"ptx_bisect_{w}.md"), "w") as f:
            f.write("\n".join(lines) + "\n")
        print("\n".join(lines), flush=True)
    import tarfile
    with tarfile.open(os.path.join(os.environ.get("OUT", "."), "ptx_bisect_ptx.tar.gz"), "w:gz") as t:
        t.add(_TMP, arcname="ptx")


if __name__ == "__main__":
    main()
