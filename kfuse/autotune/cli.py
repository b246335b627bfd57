"""``kfuse tune path/file.py:func SPECS [--backend cpu|cuda] [--budget 60]``: allocate random inputs
from the argument specs, tune every kernel of the function's plan, store the results in the disk
cache's tuning namespace (``kfuse cache ls --tuning`` lists them). ``kfuse/cli.py`` delegates here
(``main(argv, load_function=..., parse_specs=...)`` may be given its loader/parser; the fallbacks
below keep this module inside its import layer).
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import os
import sys
from typing import Callable, Sequence

import numpy as np

from .. import backends
from ..fusion.cost import known_device
from ..ir.dtypes import is_float


def _load(target: str):
    path, sep, attr = target.rpartition(":")
    if not sep or not path or not attr:
        raise SystemExit(f"kfuse tune: expected path/file.py:function, got {target!r}")
    if not os.path.isfile(path):
        raise SystemExit(f"kfuse tune: no such file: {path!r}")
    path = os.path.abspath(path)
    name = "kfuse_tune_" + "".join(c if c.isalnum() else "_" for c in os.path.basename(path)[:-3])
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(path))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(os.path.dirname(path))
    obj = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise SystemExit(f"kfuse tune: {path} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def _unwrap(obj):
    """(python function, static_argnames) of a plain function or a ``kfuse.jit`` object."""
    fn = getattr(obj, "fn", None)
    opts = getattr(obj, "options", None)
    if callable(fn) and opts is not None:
        return fn, tuple(getattr(opts, "static_argnames", ()))
    return obj, ()


def _specs(fn, static: Sequence[str], tokens: Sequence[str]) -> dict:
    from ..ir.specs import StaticSpec, spec_from_string
    params = list(inspect.signature(fn).parameters)
    if len(tokens) != len(params):
        raise SystemExit(f"kfuse tune: {fn.__name__}({', '.join(params)}) needs {len(params)} "
                         f"spec(s), got {len(tokens)}")
    specs = {}
    for name, tok in zip(params, tokens):
        if "=" in tok and tok.split("=", 1)[0] == name:
            tok = tok.split("=", 1)[1]
        if name in static:
            try:
                specs[name] = StaticSpec(ast.literal_eval(tok))
            except (ValueError, SyntaxError):
                specs[name] = StaticSpec(tok)
        else:
            try:
                specs[name] = spec_from_string(tok)
            except ValueError as e:
                raise SystemExit(f"kfuse tune: {e} (argument {name!r})") from None
    return specs


def random_array(dtype, shape, rng) -> np.ndarray:
    dt = np.dtype(dtype)
    if is_float(dt):
        return rng.standard_normal(shape).astype(dt)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind == "u":
        return rng.integers(0, 100, size=shape).astype(dt)
    return rng.integers(-100, 100, size=shape).astype(dt)


def _gpu_spec_name(name: str) -> str:
    """The DeviceSpec name planning uses for a live GPU (h100 when none matches)."""
    spec = known_device(name)
    return spec.name if spec else "h100"


def main(argv: Sequence[str] | None = None, *, load_function: Callable | None = None) -> int:
    ap = argparse.ArgumentParser(prog="kfuse tune", description="tune a function's kernels and "
                                 "store the results in the kfuse cache")
    ap.add_argument("target", nargs="?", help="path/file.py:function")
    ap.add_argument("specs", nargs="*", help="argument specs, quoted, e.g. 'f32[4096,4096]' 'f32[4096]' float")
    tunable = [b.name for b in backends.with_feature(backends.Feature.AUTOTUNE)]
    ap.add_argument("--backend", choices=tunable, default=tunable[0])
    ap.add_argument("--budget", type=float, default=60.0, help="total seconds (default 60)")
    ap.add_argument("--top-k", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quiet", action="store_true", help="no per-candidate lines")
    ap.add_argument("--machine", action="store_true",
                    help="measure this CPU's memory bandwidths and compute speed for the CPU cost model "
                         "and store them in the kfuse cache (no function)")
    args = ap.parse_args(list(argv) if argv is not None else None)
    if args.machine:
        return _machine()
    if args.target is None:
        ap.error("a function (path/file.py:function) or --machine is required")

    from .. import config as _config
    from ..fusion import pipeline
    from ..runtime.cache import CacheStore
    from ..trace import trace_function
    from . import tuner

    fn, static = _unwrap((load_function or _load)(args.target))
    specs = _specs(fn, static, args.specs)
    graph = trace_function(fn, specs, getattr(fn, "__name__", None))
    backend = backends.get(args.backend)
    device = backend.default_device
    if not backend.on_host:
        from ..runtime import device as devmod
        if not devmod.has_gpu():
            print(f"kfuse tune: --backend {backend.name} needs a CUDA GPU and CuPy", file=sys.stderr)
            return 1
        device = _config.get().device or _gpu_spec_name(devmod.device_properties()["name"])
    plan = pipeline.plan(pipeline.optimize(graph), device)
    rng = np.random.default_rng(args.seed)
    arrays = [random_array(n.dtype, n.shape, rng) for n in graph.inputs]
    store = CacheStore.open(_config.get())
    if store is None:
        print("kfuse tune: the disk cache is disabled or unusable; results will not be stored",
              file=sys.stderr)
    reports: list = []
    tiles = tuner.tune_program(plan, arrays, args.backend, "on", store, budget=args.budget,
                               total_budget=args.budget, top_k=args.top_k,
                               print_autotuning=not args.quiet, reports=reports,
                               process_budget=tuner.Budget())
    for r in reports:
        best = min((m.seconds for m in r.measurements if m.ok), default=None)
        heur = next((m.seconds for m in r.measurements if m.config == r.heuristic and m.ok), None)
        speed = f"  {heur / best:.2f}x vs heuristic" if best and heur else ""
        print(f"kernel {r.group_id} [{r.kind}] {r.source}: {tiles[r.group_id]}"
              f"  ({len(r.measurements)} measured, {r.seconds:.2f} s){speed}"
              + (f"  {r.note}" if r.note else ""))
    return 0


def _machine() -> int:
    """``kfuse tune --machine``: this CPU's streaming bandwidths and compute scale, measured and
    stored (autotune.machine, fusion.cpu_machine), then printed beside the fitted machine's."""
    from .. import config as _config
    from ..fusion import cpu_cost, cpu_machine
    from . import machine
    path, rates, scale = machine.measure_and_save(_config.get().cache_dir)
    print(f"kfuse tune: this machine's memory levels (one thread / every core): "
          f"{cpu_machine.describe(cpu_machine.levels_from(rates))}; the fitted machine's: "
          f"{cpu_machine.describe(cpu_cost.CPU_LEVELS)}; compute {scale:.2f}x the fitted machine's "
          f"price; stored in {path}")
    return 0


if __name__ == "__main__":          # pragma: no cover
    sys.exit(main())
