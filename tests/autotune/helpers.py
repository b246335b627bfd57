"""Helpers shared by the autotune tests."""
import inspect

import numpy as np
from kfuse.fusion import pipeline
from kfuse.ir.specs import spec_of_value
from kfuse.trace import trace_function


def make_plan(fn, *args, device=None):
    names = list(inspect.signature(fn).parameters)
    specs = {n: spec_of_value(a) for n, a in zip(names, args)}
    return pipeline.plan(pipeline.optimize(trace_function(fn, specs)), device)


def ew(x, y):
    return np.exp(x) * y + 1.0


class FakeStore:
    """In-memory stand-in for CacheStore's tuning namespace (counts calls)."""

    def __init__(self):
        self.data, self.gets, self.puts = {}, 0, 0

    def get_tuning(self, k, bucket, arch):
        self.gets += 1
        return self.data.get((k, tuple(bucket), arch))

    def put_tuning(self, k, bucket, arch, cfg, timings=None, meta=None):
        self.puts += 1
        self.data[(k, tuple(bucket), arch)] = {"config": cfg, "timings": timings}


