"""Calibrating the CPU cost model (``kfuse/fusion/cpu_cost.py``) on the corpus.

:func:`collect` runs corpus entries at CPU sizes and pairs every kernel's measured time
(``kernel_timing.measure_kernels``: a ``perf_counter`` around its Numba call, the median of the
calls) with the work the model counted for it (``Cost.cpu_terms``) and the threads it really ran
on. :func:`fit` searches the model's figures (``CpuCosts`` and each level's bandwidth) for the
least squared log error of predicted over measured time, by coordinate descent in log space (no
optimiser dependency); :func:`report` prints each kernel's ratio and the fitted figures.

``python -m kfuse.bench.cpu_calibrate [--filter NAMES] [--fit]`` (a source checkout; a quiet
machine: every other process on the cores shows up as a slow kernel).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math

import numpy as np

from ..fusion import cpu_cost
from ..fusion.cost import get_device_spec


@dataclasses.dataclass(frozen=True)
class Sample:
    entry: str
    kernel: int
    terms: cpu_cost.Terms           # with the threads measured
    measured: float                 # seconds


def collect(filter: str | None = None, budget_s: float = 0.3, repeat: int = 2, log=print,
            cpu_clock: bool = False) -> list[Sample]:
    """One sample per kernel of each selected corpus entry (CPU sizes): the least of ``repeat``
    measurements (each a median), so a neighbour's burst on the shared cores is mostly left out.
    ``cpu_clock``: each call timed by its thread's CPU time (a busy machine; run it with
    ``KFUSE_CPU_THREADS=1``, so that every kernel runs on the calling thread)."""
    import time
    import kfuse
    from . import corpus
    from .kernel_timing import measure_kernels
    out = []
    for case in corpus.cases("cpu", filter):
        if case.entry.only:
            continue
        fn = kfuse.jit(case.body(np))
        args, other = case.make_inputs(0), tuple(case.make_inputs(1))
        plan = kfuse.explain(fn, *case.specs, device="cpu")
        best: dict[int, tuple] = {}
        for _ in range(repeat):       # (two input sets in turn, as the corpus times its entries)
            for g, row in zip(plan.groups, measure_kernels(fn, *args, device="cpu", budget_s=budget_s,
                                                           more_sets=(other,),
                                                           clock=time.thread_time if cpu_clock else time.perf_counter
                                                           )["kernels"]):
                if row["measured_us"] and (g.id not in best or row["measured_us"] < best[g.id][1]["measured_us"]):
                    best[g.id] = (g, row)
        for g, row in best.values():
            t = g.cost.cpu_terms if g.cost is not None else None
            if t is None:
                continue
            par = (row.get("parallel_runs") or 0) * 2 > row["runs"]
            t = dataclasses.replace(t, threads=plan.device.sms if par else 1)
            out.append(Sample(case.entry.name, g.id, t, row["measured_us"] * 1e-6))
            log(f"  {case.entry.name} kernel {g.id}: {row['measured_us']:.1f} us measured, "
                f"{row['predicted_us']:.1f} us predicted")
    return out


def save(samples, path: str) -> None:
    with open(path, "w") as f:
        json.dump([dict(dataclasses.asdict(s), terms=dataclasses.asdict(s.terms)) for s in samples], f, indent=1)


def load(path: str) -> list[Sample]:
    """Samples saved by :func:`save`, their terms counted again by the model as it is now (the
    measured times and threads kept)."""
    import kfuse
    from . import corpus
    with open(path) as f:
        rows = json.load(f)
    out = []
    for r in rows:
        case = corpus.BY_NAME[r["entry"]].case("cpu")
        plan = kfuse.explain(kfuse.jit(case.body(np)), *case.specs, device="cpu")
        g = next((g for g in plan.groups if g.id == r["kernel"]), None)
        if g is not None and g.cost is not None and g.cost.cpu_terms is not None:
            t = dataclasses.replace(g.cost.cpu_terms, threads=r["terms"]["threads"])
            out.append(Sample(r["entry"], r["kernel"], t, r["measured"]))
    return out


# ---- the figures searched, as (name, getter, setter) over (CpuCosts, levels) ---------------------
def _params(levels) -> list[str]:
    names = [f.name for f in dataclasses.fields(cpu_cost.CpuCosts) if f.type == "float"]
    for k in range(1, len(levels) - 1):     # L2 and DRAM: their measured streams (bench.ceilings);
        names += [f"level{k}.bandwidth", f"level{k}.parallel"]  # the corpus's CPU sizes sit in L3
    return names


def _get(costs, levels, name):
    if name.startswith("level"):
        k, attr = name[5:].split(".")
        return getattr(levels[int(k)], attr)
    return getattr(costs, name)


def _set(costs, levels, name, value):
    if name.startswith("level"):
        k, attr = name[5:].split(".")
        levels = list(levels)
        levels[int(k)] = dataclasses.replace(levels[int(k)], **{attr: value})
        return costs, tuple(levels)
    return dataclasses.replace(costs, **{name: value}), levels


def ratios(samples, costs, levels, cores) -> np.ndarray:
    """measured / predicted per sample."""
    return np.array([s.measured / cpu_cost.seconds(s.terms, costs, levels, cores)[0] for s in samples])


def _loss(samples, costs, levels, cores) -> float:
    lr = np.log(ratios(samples, costs, levels, cores))
    # squared log error, plus a push on every ratio past 2x (the model's target)
    return float(np.mean(lr ** 2) + np.mean(np.maximum(0.0, np.abs(lr) - math.log(1.8)) ** 2) * 4)


def fit(samples, costs=None, levels=None, cores=None, rounds: int = 12):
    """(costs, levels) minimising the log error over ``samples``, from the device's figures."""
    dev = get_device_spec("cpu")
    costs, levels, cores = costs or dev.cpu, levels or dev.levels, cores or dev.sms
    best = _loss(samples, costs, levels, cores)
    for r in range(rounds):
        step = 2.0 ** (1.0 / (1 + r // 3))
        for name in _params(levels):
            for f in (step, 1 / step):
                while True:
                    c2, l2 = _set(costs, levels, name, _get(costs, levels, name) * f)
                    got = _loss(samples, c2, l2, cores)
                    if got >= best - 1e-9:
                        break
                    costs, levels, best = c2, l2, got
    return costs, levels


def report(samples, costs, levels, cores) -> str:
    r = ratios(samples, costs, levels, cores)
    lines = [f"{'entry':32s} kernel thr  measured us  predicted us  measured/predicted"]
    for s, x in sorted(zip(samples, r), key=lambda p: p[1]):
        pred = cpu_cost.seconds(s.terms, costs, levels, cores)[0]
        lines.append(f"{s.entry:32s} {s.kernel:6d} {s.terms.threads:3d}  {s.measured * 1e6:11.1f}  "
                     f"{pred * 1e6:12.1f}  {x:6.2f}x")
    inside = int(np.sum((r <= 2) & (r >= 0.5)))
    lines.append(f"{inside} of {len(r)} kernels within 2x; ratios {r.min():.2f}x..{r.max():.2f}x, "
                 f"geomean |log| {math.exp(np.mean(np.abs(np.log(r)))):.2f}x")
    lines.append(f"costs: {costs}")
    lines += [f"level: {lv}" for lv in levels]
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m kfuse.bench.cpu_calibrate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--filter", default=None, help="corpus entries (names, categories or tags, comma-separated)")
    ap.add_argument("--fit", action="store_true", help="search the figures and print the fitted ones")
    ap.add_argument("--save", default=None, help="write the samples to this JSON file")
    ap.add_argument("--load", default=None, help="read samples from this JSON file instead of measuring")
    ap.add_argument("--cpu-clock", action="store_true",
                    help="time calls by the thread's CPU time (a busy machine; with KFUSE_CPU_THREADS=1)")
    a = ap.parse_args(argv)
    dev = get_device_spec("cpu")
    samples = load(a.load) if a.load else collect(a.filter, cpu_clock=a.cpu_clock)
    if a.save:
        save(samples, a.save)
    print(report(samples, dev.cpu, dev.levels, dev.sms))
    if a.fit:
        costs, levels = fit(samples)
        print("\nfitted:\n" + report(samples, costs, levels, dev.sms))


if __name__ == "__main__":
    main()
