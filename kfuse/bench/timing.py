"""Honest timers for the benchmark suite: warm-up, then median with min/max over several runs.

* ``time_cpu``: ``time.perf_counter`` around each (blocking) call.
* ``time_events``: CUDA events (CuPy's or PyTorch's) recorded around each call on the current
  stream, with no host synchronisation between runs (the host runs ahead, so the numbers are
  device time, as in Triton's ``do_bench``); one synchronisation at the end.
* ``time_grouped``: for frameworks that run on their own streams (JAX): each run is a group of
  calls ended by a block, divided by the group size.

Every timer takes ``call(i)`` (run number ``i``), so callers rotate among several copies of the
inputs and the L2 cache does not flatter the numbers.
"""
from __future__ import annotations

import dataclasses
import statistics
import time
from typing import Any, Callable


@dataclasses.dataclass
class Timing:
    median_ms: float
    min_ms: float
    max_ms: float
    runs: int
    method: str
    samples_ms: tuple = dataclasses.field(default=(), repr=False)    # every run, for pooling

    def as_dict(self) -> dict:
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "samples_ms"}


def _summary(samples_ms: list[float], method: str) -> Timing:
    return Timing(statistics.median(samples_ms), min(samples_ms), max(samples_ms), len(samples_ms), method,
                  tuple(samples_ms))


def pooled(timings: list[Timing]) -> Timing:
    """One Timing of several windows' runs together (the suite's interleaved rounds)."""
    return _summary([x for t in timings for x in t.samples_ms], timings[0].method)


def _noop(_out=None):
    return None


def reps_for(estimate_s: float, budget_s: float, lo: int, hi: int) -> int:
    """How many timed runs fit in ``budget_s`` for a call of ``estimate_s`` seconds (lo..hi)."""
    if estimate_s <= 0:
        return hi
    return int(max(lo, min(hi, budget_s / estimate_s)))


def time_cpu(call: Callable[[int], Any], *, warmup: int = 2, reps: int | None = None,
             block: Callable[[Any], Any] = _noop, budget_s: float = 1.0,
             min_reps: int = 3, max_reps: int = 50) -> Timing:
    """perf_counter per call; ``block(out)`` waits for asynchronous results (JAX)."""
    t_first = None
    for i in range(max(1, warmup)):
        t0 = time.perf_counter()
        block(call(i))
        t_first = time.perf_counter() - t0
    if reps is None:
        reps = reps_for(t_first, budget_s, min_reps, max_reps)
    samples = []
    for i in range(reps):
        t0 = time.perf_counter()
        block(call(warmup + i))
        samples.append((time.perf_counter() - t0) * 1e3)
    return _summary(samples, "perf_counter")


class EventAPI:
    """The few CUDA-event operations the timer needs, from CuPy or PyTorch."""

    def __init__(self, new_event: Callable[[], Any], record: Callable[[Any], None],
                 elapsed_ms: Callable[[Any, Any], float], synchronize: Callable[[], None], name: str):
        self.new_event, self.record, self.elapsed_ms, self.synchronize, self.name = \
            new_event, record, elapsed_ms, synchronize, name

    @staticmethod
    def cupy() -> "EventAPI":
        import cupy
        return EventAPI(lambda: cupy.cuda.Event(), lambda e: e.record(),
                        lambda s, e: cupy.cuda.get_elapsed_time(s, e),
                        lambda: cupy.cuda.get_current_stream().synchronize(), "cupy events")

    @staticmethod
    def torch() -> "EventAPI":
        import torch
        return EventAPI(lambda: torch.cuda.Event(enable_timing=True), lambda e: e.record(),
                        lambda s, e: s.elapsed_time(e), torch.cuda.synchronize, "torch events")


def time_events(call: Callable[[int], Any], events: EventAPI, *, warmup: int = 3,
                reps: int | None = None, budget_s: float = 0.5, min_reps: int = 5,
                max_reps: int = 100) -> Timing:
    """CUDA-event timing on the current stream; the host never waits between runs."""
    for i in range(max(1, warmup)):
        call(i)
    events.synchronize()
    if reps is None:  # estimate from one timed run
        s, e = events.new_event(), events.new_event()
        events.record(s)
        call(warmup)
        events.record(e)
        events.synchronize()
        reps = reps_for(events.elapsed_ms(s, e) * 1e-3, budget_s, min_reps, max_reps)
    starts = [events.new_event() for _ in range(reps)]
    ends = [events.new_event() for _ in range(reps)]
    keep = []  # hold outputs so their memory is not reused under the timed kernels
    for i in range(reps):
        events.record(starts[i])
        out = call(warmup + 1 + i)
        events.record(ends[i])
        keep.append(out)
        if len(keep) > 2:
            keep.pop(0)
    events.synchronize()
    return _summary([events.elapsed_ms(s, e) for s, e in zip(starts, ends)], events.name)


def time_grouped(call: Callable[[int], Any], block: Callable[[Any], Any], *, warmup: int = 3,
                 reps: int | None = None, budget_s: float = 0.5, min_reps: int = 5,
                 max_reps: int = 50, group_target_s: float = 2e-3, max_group: int = 20,
                 sync: Callable[[], None] = _noop) -> Timing:
    """Each run = ``g`` back-to-back calls then one block, timed by perf_counter, divided by ``g``."""
    out = None
    for i in range(max(1, warmup)):
        out = call(i)
    block(out)
    sync()
    t0 = time.perf_counter()
    block(call(warmup))
    est = time.perf_counter() - t0
    g = int(max(1, min(max_group, group_target_s / max(est, 1e-9))))
    if reps is None:
        reps = reps_for(est * g, budget_s, min_reps, max_reps)
    samples = []
    n = warmup + 1
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(g):
            out = call(n)
            n += 1
        block(out)
        samples.append((time.perf_counter() - t0) * 1e3 / g)
    return _summary(samples, f"perf_counter, groups of {g}")


def host_overhead_us(call: Callable[[], Any], *, block: Callable[[Any], Any] = _noop,
                     sync: Callable[[], None] = _noop, budget_s: float = 0.2,
                     max_calls: int = 2000, warmup: int = 20) -> float:
    """Median host time per call (µs) of back-to-back calls on a tiny input (hot dispatch)."""
    out = None
    for _ in range(warmup):
        out = call()
    block(out)
    sync()
    t0 = time.perf_counter()
    out = call()
    one = time.perf_counter() - t0
    n = int(max(10, min(max_calls, budget_s / 5 / max(one, 1e-7))))
    batches = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            out = call()
        batches.append((time.perf_counter() - t0) / n * 1e6)
    block(out)
    sync()
    return statistics.median(batches)
