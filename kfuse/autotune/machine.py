"""This CPU measured for the CPU cost model (``fusion/cpu_machine.py`` stores and reads the
figures): its memory levels' streaming bandwidths, and a compute scale, the ratio of the time
kfuse's own transcendental kernels take here to the compute time the model prices them at, with
this machine's levels and the fitted machine's compute costs. The probes are elementwise chains in
float32 (the vectorised float32 helpers) and float64 (``cpu_vecmath``'s), on one thread, over an
L2-sized array (so memory is a small part of their time); the scale is their geometric mean."""
from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from ..fusion import cost, cpu_cost, cpu_machine

PROBE_ELEMENTS = 1 << 13     # (a kernel the thread rule gives one thread, whose fixed cost is small beside it)
SCALE_RANGE = (0.25, 8.0)


def _probe(x):
    return np.tanh(np.exp(-np.abs(x)) * 0.5) + np.log1p(x * x)


def _program(dtype, spec):
    """The probe compiled for the CPU backend through the pipeline (traced, planned for
    ``spec``, compiled), and its planned kernel: ``(program, inputs besides x, group)``."""
    from .. import backends
    from ..fusion import pipeline
    from ..ir.specs import spec_from_string
    from ..trace import trace_function
    short = {np.float32: "f32", np.float64: "f64"}[dtype]
    graph = trace_function(_probe, {"x": spec_from_string(f"{short}[{PROBE_ELEMENTS}]")}, "probe")
    plan = pipeline.plan(pipeline.optimize(graph), spec)
    (g,) = plan.groups
    return backends.get("cpu").compile_plan(plan, None), list(getattr(graph, "constants", ()) or ()), g


def compute_scale(levels, budget_s: float = 0.3) -> float:
    """The compute scale for a machine with memory ``levels`` (module docstring)."""
    spec = dataclasses.replace(cost.DEVICES["cpu"], levels=levels, cpu=cpu_cost.CPU_COSTS)
    rng = np.random.default_rng(0)
    ratios = []
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal(PROBE_ELEMENTS).astype(dtype)
        program, consts, g = _program(dtype, spec)
        args = [x] + consts
        program(args)
        best, end = math.inf, time.perf_counter() + budget_s
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            program(args)
            best = min(best, time.perf_counter() - t0)
        c = g.cost
        fixed = c.seconds - c.memory_seconds - c.compute_seconds
        ratios.append(max(best - fixed - c.memory_seconds, 0.0) / c.compute_seconds)
    scale = math.exp(sum(math.log(max(r, 1e-3)) for r in ratios) / len(ratios))
    return min(max(scale, SCALE_RANGE[0]), SCALE_RANGE[1])


def measure_and_save(cache_dir: str) -> tuple:
    """Measure this machine (levels, then the compute scale on them) and store it; returns
    ``(path, rates, scale)``."""
    rates = cpu_machine.measure()
    l3 = cpu_machine.measure_l3_reliable(rates)
    scale = compute_scale(cpu_machine.levels_from(rates, l3_reliable=l3))
    return (cpu_machine.save(cache_dir, rates, scale, cpu_machine.measure_blas(), l3, cpu_machine.measure_cold_call(),
                             cpu_machine.measure_gather()), rates, scale)


__all__ = ["compute_scale", "measure_and_save"]
