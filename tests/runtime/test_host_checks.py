"""The host checks as straight Python (``runtime.host_checks``): where the generated pass test says
a call passes, NumPy's evaluation of the checks (``trace.reference.evaluator``, the oracle) finds no
failing check; over the values that matter (in range, at the ends, outside, past the int64 range)
it says "pass" exactly where the evaluator does, or leaves the call to the evaluator. No GPU."""
import numpy as np
import pytest

import kfuse
from kfuse.runtime.host_checks import INPUT_BOUND, compile_passes
from kfuse.trace.reference import evaluator


def _idx(x, i):
    return x[i] * 2 + x[-i] + x[i - 1]


def _kv(cache, k, t):
    cache[:, t] = k


def _scaled(x, i):
    return x[2 * i + 1]


def _graph(fn, *specs):
    return kfuse.jit(fn, backend="cuda").lower(*specs).graph


def _evaluated_pass(graph, args) -> bool:
    """Whether NumPy's evaluation of every host check passes (an error converting the argument,
    as NumPy would raise it, counts as a failure)."""
    run = evaluator([n for n, *_ in graph.host_checks])
    try:
        values = run(lambda n: args[n.attr("index")])
    except (OverflowError, TypeError, ValueError):
        return False
    return not any(bool(v) for v in values)


VALUES = [0, 1, 3, 9, 10, 11, -1, -9, -10, -11, 2 ** 31 - 1, -2 ** 31, 2 ** 31, 2 ** 40, -2 ** 63, 2 ** 63 - 1, 2 ** 70]


@pytest.mark.parametrize("fn,specs,scalar_at", [(_idx, ("f32[10]", "int"), 1),
                                                (_kv, ("f32[4,10,3]", "f32[4,3]", "int"), 2),
                                                (_scaled, ("f32[10]", "int"), 1)])
def test_python_int_index(fn, specs, scalar_at):
    graph = _graph(fn, *specs)
    passes = compile_passes(graph, list(range(len(graph.inputs))))
    assert passes is not None and "args[" in passes.source
    base = [None] * len(graph.inputs)
    for v in VALUES:
        args = list(base)
        args[scalar_at] = v
        want = _evaluated_pass(graph, args)
        got = passes(args)
        assert got == want or (not got and abs(v) >= INPUT_BOUND), v


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16, np.int8])
def test_numpy_scalar_index(dtype):
    graph = _graph(_idx, "f32[10]", dtype(3))
    passes = compile_passes(graph, [0, 1])
    assert passes is not None
    info = np.iinfo(dtype)
    for v in [0, 3, 9, 10, -10, -11, info.min, info.max, info.min + 1]:
        args = [None, dtype(v)]
        assert passes(args) == _evaluated_pass(graph, args) or not passes(args), v
    assert not passes([None, 3])            # another type: left to the evaluator


def _cube(x, i):
    return x[i * i * i]


def test_no_lines_where_an_intermediate_could_wrap():
    # -i of a uint8 wraps in NumPy, not in Python; i * i * i of an int16 can: the evaluator decides
    assert compile_passes(_graph(_idx, "f32[10]", np.uint8(3)), [0, 1]) is None
    assert compile_passes(_graph(_cube, "f32[10]", np.int16(3)), [0, 1]) is None


def test_positions_map_graph_inputs_to_arguments():
    graph = _graph(_kv, "f32[4,10,3]", "f32[4,3]", "int")
    passes = compile_passes(graph, [5, 0, 3])         # the graph's input 2 is the call's argument 3
    assert passes([None, None, None, 4, None, None])
    assert not passes([None, None, None, 10, None, None])
