"""Probe of the P3 (layernorm 16384x4096 f32) row kernel: source-level variants of kfuse's
generated kernel timed side by side with torch.compile, and Inductor's generated code for the
public workloads (what the peer does, to compare with ours). An experiment tool, not a test:
each variant's output is compared bit for bit with the generated kernel's.

The variants themselves: ``row_variants.py``.

Usage on the GPU machine: PYTHONPATH=. python3 benchmarks/row_probe.py [--p1 | --all] (writes
probe_p3.md or probe_p1.md, the variants' sources, inductor_code.txt under $OUT or the current
directory); ``--all``: the earlier runs' P3 variants too; ``--ncu`` / ``--ncu-ew``: a few calls
only, to run under Nsight Compute."""
import dataclasses
import json
import os
import sys
import time

import cupy as cp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "gpu"))
sys.path.insert(0, os.path.dirname(__file__))
from gpu_quick import CASES, _t_p1, bench, p1, p3  # noqa: E402
from handplan import plan_for  # noqa: E402
from row_variants import EARLIER, VARIANTS, VARIANTS_P1  # noqa: E402

import kfuse.codegen.cuda as cuda_emit  # noqa: E402
from kfuse.bench import timing, workloads  # noqa: E402
from kfuse.runtime.cuda import compile_plan  # noqa: E402

def build(plan, patch, args):
    """The program of ``plan`` with ``patch`` applied to its kernel source (built on a first call);
    a patch with a ``variant`` attribute (dict of Variant fields) also overrides the launch shape,
    with a block per row."""
    from kfuse.runtime import cuda as rc
    orig, orig_vf = cuda_emit.emit_kernel, rc._Launcher.variant_for

    def patched(kir, variant=None):
        k = orig(kir, variant)
        return dataclasses.replace(k, source=patch(k.source))

    def variant_for(self, ins, outs, props):
        v, grid = orig_vf(self, ins, outs, props)
        if v.mode != "row":
            return v, grid
        n_rows = ins[0].shape[0]
        if getattr(patch, "per_sm", None):
            grid = min(n_rows, props["sm_count"] * patch.per_sm)
        if getattr(patch, "variant", None):
            return dataclasses.replace(v, **patch.variant), grid if getattr(patch, "per_sm", None) else n_rows
        return v, grid
    cuda_emit.emit_kernel, rc._Launcher.variant_for = patched, variant_for
    try:
        prog = compile_plan(plan)
        prog(args)
        return prog
    finally:
        cuda_emit.emit_kernel, rc._Launcher.variant_for = orig, orig_vf


def inductor_code(out_dir):
    """Inductor's generated code (Triton kernels and launch wrapper) for the suite's P1-P4, P6."""
    import torch
    from torch._inductor.utils import run_and_get_code
    texts = []
    for w in workloads.WORKLOADS:
        if w.name == "P5":
            continue
        case = w.cases("gpu", "full")[0]
        args = [torch.from_dlpack(cp.asarray(a)) for a in case.make_inputs()]
        _, codes = run_and_get_code(torch.compile(w.make(workloads.TorchNamespace(torch))), *args)
        texts.append(f"##### {case}\n" + "\n".join(codes))
        del args
    with open(os.path.join(out_dir, "inductor_code.txt"), "w") as f:
        f.write("\n\n".join(texts))


def _case(torch):
    """(case key, NumPy body, variants, torch.compile peers) for --p1 or P3."""
    if "--p1" in sys.argv:
        return ("P1 gelu(x*w+b) 8192x8192", p1, VARIANTS_P1,
                {"torch.compile p1": torch.compile(lambda x, w, b: _t_p1(torch, x, w, b))})
    variants = {**VARIANTS, **EARLIER} if "--all" in sys.argv else VARIANTS
    return ("P3 layernorm 16384x4096", p3, variants,
            {"torch.compile F.layer_norm": torch.compile(
                lambda x, g, b: torch.nn.functional.layer_norm(x, (x.shape[-1],), g, b, 1e-5)),
             "torch.compile p3 body": torch.compile(p3_torch)})


def ncu_targets():
    """A few calls of torch.compile's kernel and of kfuse's variants (all of them with --p1; else
    the P3 ones named here), for ``ncu``."""
    import torch
    case, fn, variants, peers = _case(torch)
    names = list(variants) if "--p1" in sys.argv else \
        ("generated", "generated, 64-bit index math", "hand Triton-shaped, rdiv, L1+L2 hints, float acc")
    f = list(peers.values())[-1]
    shapes = CASES[case][1]
    args = [cp.random.standard_normal(s, dtype=cp.float32) for s in shapes]
    plan, _ = plan_for(fn, *[("float32", s) for s in shapes], device="h200")
    targs = [torch.from_dlpack(a) for a in args]
    for _ in range(3):
        f(*targs)
    torch.cuda.synchronize()
    for name in names:
        prog = build(plan, variants[name], args)
        for _ in range(3):
            prog(args)
    cp.cuda.Device().synchronize()


def _regs(func):
    try:
        return cp.cuda.driver.funcGetAttribute(4, func.ptr)   # CU_FUNC_ATTRIBUTE_NUM_REGS
    except Exception as e:  # noqa: BLE001
        return f"? {type(e).__name__}"


def ncu_elementwise():
    """A few calls of kfuse.jit and torch.compile on the suite's P1, P4, P6 (full sizes), for ``ncu``."""
    import torch

    import kfuse
    for name in ("P1", "P4", "P6"):
        w = workloads.BY_NAME[name]
        args = [cp.asarray(a) for a in w.cases("gpu", "full")[0].make_inputs()]
        targs = [torch.from_dlpack(a) for a in args]
        f, g = kfuse.jit(w.make(np)), torch.compile(w.make(workloads.TorchNamespace(torch)))
        for _ in range(3):
            f(*args)
            g(*targs)
        cp.cuda.Device().synchronize()


def main():
    if "--ncu-ew" in sys.argv:
        return ncu_elementwise()
    if "--ncu" in sys.argv:
        return ncu_targets()
    out_dir = os.environ.get("OUT", ".")
    import torch
    case, fn, variants, peers = _case(torch)
    shapes = CASES[case][1]
    # the suite's inputs (P3: x ~ N(2, 0.5^2)), the suite's shapes
    args = [cp.asarray(a) for a in workloads.BY_NAME[case.split()[0]].cases("gpu", "full")[0].make_inputs()]
    assert [a.shape for a in args] == [tuple(s) for s in shapes], (case, [a.shape for a in args], shapes)
    # edge rows: zeros, huge and tiny magnitudes, a constant row (var 0), denormals
    edge = [args[0][:64].copy()] + args[1:]
    edge[0][0] = 0
    edge[0][1] *= 1e30
    edge[0][2] *= 1e-30
    edge[0][3] = 7.0
    edge[0][4, ::2] = 1e-40
    edge[0][5] = cp.float32(3e38) * cp.sign(edge[0][5])
    nbytes = sum(a.nbytes for a in args) + args[0].nbytes
    src = cp.random.standard_normal(256 << 20, dtype=cp.float32)
    dst = cp.empty_like(src)
    copy_bw = 2 * src.nbytes / bench(lambda: cp.copyto(dst, src))
    del src, dst
    plan, _ = plan_for(fn, *[("float32", s) for s in shapes], device="h200")
    plan_e, _ = plan_for(fn, *[("float32", a.shape) for a in edge], device="h200")
    progs = {}
    for name, patch in variants.items():
        try:
            progs[name] = (build(plan, patch, args), build(plan_e, patch, edge))
        except Exception as e:  # noqa: BLE001
            print(name, "failed:", type(e).__name__, str(e)[:2000])
    ref = progs["generated"][0](args)[0]
    ref_e = progs["generated"][1](edge)[0]
    # timed as the suite times (kfuse.bench.timing.time_events: per-call events, median, two
    # rotating input copies), the peers under no_grad as the suite's torch peer
    sets = [args, [a.copy() for a in args]]
    tsets = [[torch.from_dlpack(a) for a in s_] for s_ in sets]
    ev = timing.EventAPI.cupy()

    def suite_bench(call):
        return timing.time_events(call, ev, budget_s=0.4).median_ms * 1e-3
    res = {k: [] for k in list(progs) + list(peers)}
    with torch.no_grad():
        for rnd in range(5):
            for name, (prog, _) in progs.items():
                res[name].append(suite_bench(lambda k: prog(sets[k % 2])))
            for name, f in peers.items():
                res[name].append(suite_bench(lambda k: f(*tsets[k % 2])))
    rows = []
    for name, ts in res.items():
        t = float(np.median(ts))
        row = {"variant": name, "ms": t * 1e3, "frac_copy": nbytes / t / copy_bw,
               "spread_ms": [min(ts) * 1e3, max(ts) * 1e3]}
        if name in progs:
            prog, prog_e = progs[name]
            o, oe = prog(args)[0], prog_e(edge)[0]
            row["bit_equal"] = bool(cp.array_equal(o, ref, equal_nan=True))
            row["bit_equal_edge"] = bool(cp.array_equal(oe, ref_e, equal_nan=True))
            row["max_abs_diff"] = float(cp.max(cp.abs(o - ref)))
            row["regs"] = [_regs(v[1]) for v in prog.launchers[0]._variants.values()]
        rows.append(row)
        print(json.dumps(row), flush=True)
    lines = [f"# {case} kernel probe, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, copy {copy_bw / 1e12:.2f} TB/s",
             "", "| variant | ms (median of 5 rounds, suite timer) | % copy | bit-equal (case, edge rows) | max abs diff | regs |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        eq = f"{r.get('bit_equal', '')} {r.get('bit_equal_edge', '')}"
        lines.append(f"| {r['variant']} | {r['ms']:.4f} ({r['spread_ms'][0]:.4f}-{r['spread_ms'][1]:.4f}) | "
                     f"{100 * r['frac_copy']:.1f} | {eq} | {r.get('max_abs_diff', '')} | {r.get('regs', '')} |")
    tag = case.split()[0].lower()
    with open(os.path.join(out_dir, f"probe_{tag}.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out_dir, f"probe_{tag}_sources.cu"), "w") as f:
        for name, patch in variants.items():
            k = cuda_emit.emit_kernel(progs["generated"][0].launchers[0].kir)
            f.write(f"// ===== {name}\n{patch(k.source)}\n")
    print("\n".join(lines))
    try:
        if "--p1" not in sys.argv:
            inductor_code(out_dir)
    except Exception as e:  # noqa: BLE001
        print("inductor code failed:", type(e).__name__, str(e)[:500])


def p3_torch(x, g, b):
    import torch
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + 1e-5) * g + b


if __name__ == "__main__":
    main()
