"""Probe of launch shapes for the suite's workloads: kfuse's CUDA C program for P1 or P6 (full
size) under several elementwise tiles (P2-P4: row tiles, ROW_TILES) (``CudaProgram.set_tile``: threads a block, vector
units a thread; a grid that covers the domain once makes the kernel ``exact``), timed as the suite
times (per-call events, median of 5 rounds, two rotating input copies) beside torch.compile. Each
tile's outputs are compared bit for bit with the heuristic's; also source patches (SOURCES),
launch-shape patches (PATCHES) and outputs placed into larger allocations (OUT_OFFSETS). Kernel
durations and launch gaps under CUPTI, and Triton's own cubin: ``triton_gap_probe.py``. An
experiment tool, not a test.

Usage on the GPU machine: PYTHONPATH=. python3 benchmarks/tile_probe.py P6 [P1 ...]
(writes tile_probe.md under $OUT or the current directory; TILES_ONLY=1: the tiles, no patches;
TORCH_COPIES=1: also the heuristic and torch.compile on inputs copied into torch-allocated tensors;
ONE_PASS=1: each 1-unit tile also as a one-pass kernel, no grid-stride loop; TILES_MATCH=regex:
only those tiles (and patches); BEFORE=P1,...,P5: those workloads of the suite first, in this
process, as ``suite_replay.py``)."""
import dataclasses
import os
import re
import sys
import time

import cupy as cp
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "gpu"))
from handplan import plan_for  # noqa: E402
from one_pass import one_pass_grids  # noqa: E402
from suite_replay import header_note, replay_suite  # noqa: E402

from kfuse.autotune.space import TileConfig  # noqa: E402
from kfuse.bench import timing, workloads  # noqa: E402
from kfuse.runtime import cuda as rc  # noqa: E402
from kfuse.runtime import interop  # noqa: E402
from kfuse.runtime.cuda import compile_plan  # noqa: E402

TILES = {   # name -> elementwise tile (None: the launcher's heuristic)
    "heuristic": None,
    "128 threads, 1 unit": TileConfig.make("elementwise", block=128, ept=1),
    "128 threads, 2 units": TileConfig.make("elementwise", block=128, ept=2),
    "256 threads, 2 units": TileConfig.make("elementwise", block=256, ept=2),
    "128 threads, 4 units": TileConfig.make("elementwise", block=128, ept=4),
    "256 threads, 1 unit": TileConfig.make("elementwise", block=256, ept=1),
    "256 threads, 8-byte units (Triton's P6 pick, 14:30)": TileConfig.make("elementwise", block=256, ept=1, vec=2),
    "128 threads, 8-byte units": TileConfig.make("elementwise", block=128, ept=1, vec=2),
    "256 threads, 2 8-byte units": TileConfig.make("elementwise", block=256, ept=2, vec=2),
    "512 threads, 8-byte units": TileConfig.make("elementwise", block=512, ept=1, vec=2),
}
if os.environ.get("ONE_PASS"):   # the launcher loops over 1-unit tiles; these cover the domain once
    TILES.update({f"{k}, one pass": t for k, t in TILES.items()
                  if t is not None and dict(t.params).get("ept") == 1})
if os.environ.get("TILES_MATCH"):  # a regular expression: only the tiles it finds (and the heuristic)
    TILES = {k: t for k, t in TILES.items() if t is None or re.search(os.environ["TILES_MATCH"], k)}
ROW_TILES = {   # P2-P4 (row kernels): threads a row and vector width, the row in registers
    "heuristic": None,
    **{f"row: {b} threads, {4 * v}-byte units": TileConfig.make("row", block=b, storage="registers", vec=v)
       for b in (128, 256, 512, 1024) for v in (2, 4)},
}
# 2 units with every unit's loads first (emitter, 12:21): P6 0.4431 vs 0.4464 before, still behind
# 1 unit (0.4413); loads input by input and stores output by output as Triton's: 0.4442 (12:25,
# tile_probe_1225_grouped.md: reverted). Measured slower on P6 and P1 (H200, 2026-11-24 11:52/11:54,
# tile_probe_1152.md, tile_probe_1154.md):
# 4 units a thread, 64 or 512 threads, evict-first loads and stores, grids capped at 16 or 64
# blocks a SM (grid-stride), launch bounds of 12 or 16 blocks a SM (spills).
# name -> (variant, grid, sm) -> (variant, grid): shapes no tile names (patched into the heuristic)
PATCHES = {
    "evict-first loads and stores": lambda v, g, sm: (dataclasses.replace(v, stream=True), g),
    "persistent: 10 blocks an SM (all resident), grid-stride": lambda v, g, sm: (v, 10 * sm),
    "persistent: 20 blocks an SM, grid-stride": lambda v, g, sm: (v, 20 * sm),
    # 16-byte units in one pass (the H200's tile asks for 8-byte units): twice the loads in flight
    **{f"16-byte units, {b} threads, one pass, at least {m} blocks":
       (lambda v, g, sm, b=b, m=m: (dataclasses.replace(v, vec=4, block=b, exact=True, min_blocks=m),
                                   g * v.block * v.vec // (4 * b)))
       for b, m in ((256, 6), (256, 4), (128, 12))},
    # the grid-stride loop at 8 blocks an SM (32 registers, no spills: ptxas sm_90), the one-pass
    # kernel's loads in flight without its 131072 blocks: 1, 2 or 4 grids of resident blocks
    **{f"looped, 8 blocks an SM, grid {k} x 8 x SMs":
       (lambda v, g, sm, k=k: (dataclasses.replace(v, exact=False, min_blocks=8), k * 8 * sm))
       for k in (1, 2, 4)},
    "looped, 6 blocks an SM (the ninth session's kernel)":
        lambda v, g, sm: (dataclasses.replace(v, exact=False, min_blocks=6), g),
}
PLAIN_LOAD = r"""
template <typename T, int N> __device__ __forceinline__ KfVec<T, N> kf_ldplain(const T* p) {
  KfVec<T, N> r; int4 v;
  asm("ld.global.v4.b32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  *reinterpret_cast<int4*>(&r) = v; return r;
}
"""


def _plain_loads(src: str) -> str:
    """16-byte loads through ld.global (L1-cached) instead of the read-only path (ld.global.nc)."""
    src = re.sub(r"\*reinterpret_cast<const KfVec<float, 4>\*>\((in\d+ \+ \([^)]*\))\)",
                 r"kf_ldplain<float, 4>(\1)", src)
    return src.replace('extern "C"', PLAIN_LOAD + 'extern "C"', 1)


INEXACT = r"""
__device__ __forceinline__ float kf_divfull(float a, float b) { float q; asm("div.full.f32 %0, %1, %2;" : "=f"(q) : "f"(a), "f"(b)); return q; }
"""


def _inexact_math(src: str) -> str:
    """Triton's arithmetic for P6 (its SASS: no FCHK, no F2F/DMUL): x / c as x * float(1/c) and
    a / b as div.full.f32 (2 ulp) instead of NumPy's correctly rounded division. Timing only."""
    src = re.sub(r"\(float\)\(\(double\)(v\d+) \* (0x[0-9a-fp.+-]+)\)", r"(\1 * (float)\2)", src)
    src = re.sub(r"\((v\d+) / (v\d+)\)", r"kf_divfull(\1, \2)", src)
    return src.replace('extern "C"', INEXACT + 'extern "C"', 1)


def _no_strides(src: str) -> str:
    """The signature without the stride parameters a contiguous kernel never reads (they are the
    last ones here; the driver ignores the launch's surplus arguments): does a smaller parameter
    block shorten the launch?"""
    return re.sub(r",\n    i64 st_(in|out)\d+_\d+", "", src)


def _cap_blocks(kib):
    """A static shared-memory pad of ``kib`` KiB (kept by a store no thread makes: s0_ is never -7), so fewer
    blocks fit an SM (228 KiB of shared memory): is fewer blocks in flight better?"""
    pad = (f"__shared__ volatile char kf_pad_[{kib * 1024}]; if (s0_ == -7) kf_pad_[threadIdx.x] = 1;")
    return lambda src: src.replace("typedef int IDX;", "typedef int IDX;\n  " + pad, 1)


L2_HINT = r"""
template <typename T, int N> __device__ __forceinline__ KfVec<T, N> kf_ldl2(const T* p) {
  KfVec<T, N> r; int4 v;
  asm("ld.global.nc.L2::%5B.v4.b32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "n"(BYTES));
  *reinterpret_cast<int4*>(&r) = v; return r;
}
"""


def _l2_prefetch(nbytes):
    """16-byte loads with PTX's L2 prefetch-size hint (``ld.global.nc.L2::128B``/``256B``): L2 fills
    that many bytes from DRAM a miss (sm_80+)."""
    def patch(src):
        src = re.sub(r"\*reinterpret_cast<const KfVec<float, 4>\*>\((in\d+ \+ \([^)]*\))\)",
                     r"kf_ldl2<float, 4>(\1)", src)
        helper = L2_HINT.replace("%5B", f"{nbytes}B").replace(', "n"(BYTES)', "")
        return src.replace('extern "C"', helper + 'extern "C"', 1)
    return patch


def _early_stores(src: str) -> str:
    """Each output's vector stored as soon as its values are computed: the element loop copied once
    an output, each copy keeping one output's assignment (NVVM merges the shared arithmetic), its
    store right after it (the emitter stores every output after the whole loop)."""
    m = re.search(r"( *)#pragma unroll\n *for \(int e_ = 0; e_ < (\d+); \+\+e_\) \{\n(.*?)\n\1\}\n", src, re.S)
    if not m:
        return src
    ind, body = m.group(1), m.group(3)
    stores = re.findall(rf"^{ind}\*reinterpret_cast<KfVec<[^>]+>\*>\(out\d+ \+ \([^)]*\)\) = o_(\d+);$",
                        src[m.end():], re.M)
    store_lines = {k: re.search(rf"^{ind}\*reinterpret_cast<KfVec<[^>]+>\*>\(out\d+ \+ \([^)]*\)\) = o_{k};$",
                                src[m.end():], re.M).group(0) for k in stores}
    parts = []
    for k in stores:
        keep = "\n".join(ln for ln in body.split("\n") if not re.match(r"\s*o_\d+\.v", ln) or
                         re.match(rf"\s*o_{k}\.v", ln))
        parts.append(f"{ind}#pragma unroll\n{ind}for (int e_ = 0; e_ < {m.group(2)}; ++e_) {{\n{keep}\n{ind}}}\n"
                     f"{store_lines[k]}\n")
    rest = src[m.end():]
    for ln in store_lines.values():
        rest = rest.replace(ln + "\n", "", 1)
    return src[:m.start()] + "".join(parts) + rest


def _tagged(tag):
    """The source with a comment, so it loads as a module of its own (a function attribute set on
    it reaches no other row)."""
    return lambda src: src + f"\n// {tag}\n"


CARVEOUTS = {f"L1/shared carve-out {pct}% shared": pct for pct in
             map(int, os.environ.get("CARVEOUTS", "0 25 50 75 100").split())}   # CARVEOUTS="10 20": others
# name -> (tile or None, source -> source): the heuristic's kernel with its CUDA C patched
SOURCES = {   # (eighth session: the L2 prefetch-size hints and early stores, H100)
    **{name: (None, _tagged(name)) for name in CARVEOUTS},
    "L2::128B loads": (None, _l2_prefetch(128)),
    "L2::256B loads": (None, _l2_prefetch(256)),
    "stores as each output is done": (None, _early_stores),
    "L2::256B loads, early stores": (None, lambda src: _early_stores(_l2_prefetch(256)(src))),
    "Triton's shape, L2::256B loads": (TileConfig.make("elementwise", block=256, ept=1, vec=2), _l2_prefetch(256)),
    # (H200 12:03, tile_probe_1203.md: at 1 unit, ld.global loads 0.4430, x / c as x * (1/c) in
              # float32 0.4418, heuristic 0.4414)
    "2 units, ld.global loads (not .nc)": (TileConfig.make("elementwise", block=128, ept=2), _plain_loads),
    "1 unit, inexact math as Triton's": (None, _inexact_math),
    "no stride parameters": (None, _no_strides),
    # (H200 14:36: 9, 8, 6, 4 blocks an SM: 0.4553, 0.4550, 0.4587, 0.4950 against 0.4415)
    "at most 8 blocks an SM (27 KiB pad)": (None, _cap_blocks(27)),
    "2 units, inexact math as Triton's": (TileConfig.make("elementwise", block=128, ept=2), _inexact_math),
}


ROW_SOURCES = {   # fewer row blocks resident (the H100's elementwise kernels ran faster so, 21:17)
    "at most 6 blocks an SM (33 KiB pad)": (None, _cap_blocks(33)),
    "at most 4 blocks an SM (46 KiB pad)": (None, _cap_blocks(46)),
    # the 33 KiB pad kept P3's 4 blocks an SM and ran 0.5% faster (H100 21:37): is it the carve-out?
    # (cuFuncSetAttribute CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, a percentage)
    **{name: (None, _tagged(name)) for name in CARVEOUTS},
}


# name -> bytes: the heuristic's outputs placed that far into a larger CuPy allocation
# (H200 14:21: 4 KiB, 64 KiB, 1 MiB, 2 MiB - 4 KiB all 0.4410-0.4411 against 0.4414 at none)
OUT_OFFSETS = {"outputs 4 KiB into their allocation": 4096}


def _offset_empty(off):
    def empty(shape, dtype):
        dtype = np.dtype(dtype)
        n = int(np.prod(shape))
        return cp.empty(n + off // dtype.itemsize, dtype)[off // dtype.itemsize:].reshape(shape)
    return empty


def probe(name, rows):
    import torch
    w = workloads.BY_NAME[name]
    case = w.cases("gpu", "full")[0]
    args = [cp.asarray(a) for a in case.make_inputs()]
    sets = [args, [a.copy() for a in args]]
    plan, _ = plan_for(w.make(np), *[("float32", a.shape) for a in args], device="h200")
    progs = {}
    rows_kind = name in ("P2", "P3", "P4")
    extra = [] if os.environ.get("TILES_ONLY") else list((ROW_SOURCES if rows_kind else {**PATCHES, **SOURCES}).items())
    if os.environ.get("TILES_MATCH"):
        extra = [(k, t) for k, t in extra if re.search(os.environ["TILES_MATCH"], k)]
    for tname, tile in list((ROW_TILES if rows_kind else TILES).items()) + extra:
        prog = compile_plan(plan)
        tile, patch = tile if isinstance(tile, tuple) else (tile, None)
        if isinstance(tile, TileConfig):
            prog.set_tile(plan.groups[0].id, tile)
        ew, emit = rc._Launcher._ew_variant, rc.cuda_emit.emit_kernel
        if callable(tile):
            rc._Launcher._ew_variant = lambda self, ins, outs, big, sm, mst=None, _f=tile: _f(*ew(self, ins, outs, big, sm, mst), sm)
        if patch is not None:
            rc.cuda_emit.emit_kernel = lambda *a, _p=patch: (lambda k: dataclasses.replace(k, source=_p(k.source)))(emit(*a))
        try:
            with one_pass_grids(args[0].size, on=tname.endswith(", one pass")):
                prog(args)
        finally:
            rc._Launcher._ew_variant, rc.cuda_emit.emit_kernel = ew, emit
        if tname in CARVEOUTS:
            for h in prog.launchers[0]._variants.values():
                cp.cuda.driver.funcSetAttribute(h[1].ptr, 9, CARVEOUTS[tname])
        progs[tname] = prog
    ref = progs["heuristic"](args)
    ev = timing.EventAPI.cupy()
    tc = torch.compile(w.make(workloads.TorchNamespace(torch)))
    tsets = [[torch.from_dlpack(a) for a in s_] for s_ in sets]
    own = {}    # TORCH_COPIES=1: the inputs copied into torch's own allocations (the suite's torch peer)
    if os.environ.get("TORCH_COPIES"):
        csets = [[t.clone() for t in s_] for s_ in tsets]
        own = {"heuristic, torch-allocated inputs": lambda k: progs["heuristic"](csets[k % 2]),
               "torch.compile, torch-allocated inputs": lambda k: tc(*csets[k % 2])}
    offsets = {} if os.environ.get("TILES_ONLY") or rows_kind else OUT_OFFSETS
    res = {k: [] for k in list(progs) + list(offsets) + ["heuristic, on torch tensors", "torch.compile"] + list(own)}
    plain_empty = interop.cupy_empty
    with torch.no_grad():
        for _ in range(5):
            for tname, prog in progs.items():
                res[tname].append(timing.time_events(lambda k: prog(sets[k % 2]), ev, budget_s=0.4).median_ms)
            for oname, off in offsets.items():
                interop.cupy_empty = _offset_empty(off)
                try:
                    res[oname].append(timing.time_events(lambda k: progs["heuristic"](sets[k % 2]), ev,
                                                         budget_s=0.4).median_ms)
                finally:
                    interop.cupy_empty = plain_empty
            res["heuristic, on torch tensors"].append(   # outputs from torch's caching allocator
                timing.time_events(lambda k: progs["heuristic"](tsets[k % 2]), ev, budget_s=0.4).median_ms)
            res["torch.compile"].append(timing.time_events(lambda k: tc(*tsets[k % 2]), ev, budget_s=0.4).median_ms)
            for oname, call in own.items():
                res[oname].append(timing.time_events(call, ev, budget_s=0.4).median_ms)
    for tname, ts in res.items():
        row = {"workload": name, "tile": tname, "ms": float(np.median(ts)), "spread": (min(ts), max(ts))}
        if tname in progs:
            prog = progs[tname]
            row["bit_equal"] = all(bool(cp.array_equal(o, r, equal_nan=True)) for o, r in zip(prog(args), ref))
            row["variant"] = ", ".join(f"{h[0].variant.tag} grid {h[2][0]}" for h in prog.launchers[0]._variants.values())
        rows.append(row)
        print(row, flush=True)


def _keep_triton_cubins(name):
    """Copy the cubins torch.compile built so far (Inductor's cache) under $OUT, for cuobjdump."""
    import glob
    import shutil
    out = os.path.join(os.environ.get("OUT", "."), f"triton_{name}")
    os.makedirs(out, exist_ok=True)
    for f in glob.glob("/tmp/torchinductor_*/**/*.cubin", recursive=True):
        shutil.copy(f, out)


def main():
    before = replay_suite()
    rows = []
    for name in sys.argv[1:] or ["P6"]:
        probe(name, rows)
        if os.environ.get("KEEP_CUBINS"):
            _keep_triton_cubins(name)
    lines = [f"# elementwise tile probe, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
             + header_note(before), "",
             "| workload | tile | ms (median of 5 rounds, suite timer; min-max) | bit-equal | variants |",
             "|---|---|---|---|---|"]
    lines += [f"| {r['workload']} | {r['tile']} | {r['ms']:.4f} ({r['spread'][0]:.4f}-{r['spread'][1]:.4f}) | "
              f"{r.get('bit_equal', '')} | {r.get('variant', '')} |" for r in rows]
    with open(os.path.join(os.environ.get("OUT", "."), "tile_probe.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
