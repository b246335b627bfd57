"""Hand-built one-kernel plans over traced graphs (for testing codegen/runtime without the planner),
and what the GPU test files share: ``run`` a function on a backend against NumPy, and workloads."""
from __future__ import annotations

import numpy as np

from kfuse.fusion.plan import KernelGroup, Plan
from kfuse.ir.dtypes import SHORT_NAMES
from kfuse.ir.ops import Op, REDUCE
from kfuse.ir.specs import ArraySpec
from kfuse.trace import trace_function


def trace(fn, *specs):
    import inspect
    names = list(inspect.signature(fn).parameters)
    sp = {n: (s if not isinstance(s, tuple) else ArraySpec(SHORT_NAMES.get(s[0]) or np.dtype(s[0]), tuple(s[1])))
          for n, s in zip(names, specs)}
    return trace_function(fn, sp)


def one_group_plan(graph) -> Plan:
    nodes = [n for n in graph.nodes() if n.op is not Op.INPUT]
    reds = [n for n in nodes if n.op in REDUCE]
    used = {i for n in nodes for i in n.inputs}
    inputs = tuple(n for n in graph.inputs if n in used)
    outs = tuple(dict.fromkeys(o for o in graph.outputs if o.op is not Op.INPUT))
    if reds:
        g = KernelGroup(0, "reduce", tuple(nodes), inputs, outs, tuple(reds[0].inputs[0].shape),
                        tuple(reds[0].attr("axes")), reds[0])
    else:
        g = KernelGroup(0, "elementwise", tuple(nodes), inputs, outs, tuple(outs[0].shape))
    return Plan(graph, (g,), passthrough=tuple(o for o in graph.outputs if o.op is Op.INPUT))


def plan_for(fn, *specs, device=None) -> tuple[Plan, str]:
    """(the real planner's plan, "pipeline") if it works, else (a one-kernel hand plan, "hand")."""
    g = trace(fn, *specs)
    try:
        from kfuse.fusion import pipeline
        return pipeline.plan(pipeline.optimize(g), device=device), "pipeline"
    except Exception:   # noqa: BLE001 - planner missing or failing: fall back
        return one_group_plan(g), "hand"


def compile_for(backend: str, plan):
    """``compile_plan`` of the named runtime ("cpu", "cuda" or "numba-cuda")."""
    if backend == "cpu":
        from kfuse.runtime.cpu import compile_plan
    elif backend == "cuda":
        from kfuse.runtime.cuda import compile_plan
    else:
        from kfuse.runtime.numba_cuda import compile_plan
    return compile_plan(plan)


def run(backend: str, fn, *arrays, reductions=False, views=None):
    """Trace ``fn`` into one kernel, run it on ``backend`` (``views`` maps the device arrays, e.g.
    to strided views) and compare every output with NumPy's; returns ``(program, outputs)``."""
    from tolerance import assert_matches_numpy
    if backend == "cpu":
        dev, to_np = [np.asarray(a) for a in arrays], np.asarray
    else:
        import cupy as cp
        dev, to_np = [cp.asarray(a) for a in arrays], cp.asnumpy
    if views:
        dev = views(dev)
        arrays = [to_np(d) for d in dev]
    specs = [(d.dtype.name, d.shape) for d in dev]
    prog = compile_for(backend, one_group_plan(trace(fn, *specs)))
    outs = prog(dev)
    with np.errstate(all="ignore"):
        exp = fn(*arrays)
    exp = exp if isinstance(exp, tuple) else (exp,)
    assert len(outs) == len(exp)
    for o, e in zip(outs, exp):
        assert_matches_numpy(to_np(o), np.asarray(e), reductions=reductions)
    return prog, outs


def gelu(x, w, b):
    y = x * w + b
    return 0.5 * y * (1 + np.tanh(0.7978845608 * (y + 0.044715 * y ** 3)))


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b
