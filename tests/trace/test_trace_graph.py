"""Graph structure: inputs/outputs/out_tree, static and scalar arguments, node locations,
returned constants and inputs, hash-consing."""
import numpy as np

from kfuse.ir.graph import unflatten
from kfuse.ir.ops import Op
from kfuse.ir.specs import ArraySpec, ScalarSpec, StaticSpec
from kfuse.trace import Tracer, trace_function
from kfuse.trace.reference import evaluate

from trace_checks import check, rand

F4 = ArraySpec(np.dtype("f4"), (3, 4))


def test_inputs_static_and_scalar_arguments():
    def f(x, n, alpha, y, *, scale=1.0):
        return (x * alpha + y.sum()) ** n * scale
    g = trace_function(f, {"x": F4, "n": StaticSpec(2), "alpha": ScalarSpec(float),
                           "y": ArraySpec(np.dtype("f2"), (4,)), "scale": ScalarSpec(float)})
    assert [i.attr("name") for i in g.inputs] == ["x", "alpha", "y", "scale"]
    assert [i.attr("index") for i in g.inputs] == [0, 1, 2, 3]
    assert g.inputs[1].shape == () and g.inputs[1].dtype == np.float64
    assert g.outputs[0].dtype == np.float32 and g.outputs[0].shape == (3, 4)
    x, y = rand((3, 4), "f4"), rand((4,), "f2")
    got = evaluate(g, [x, 0.5, y, 2.0])[0]
    np.testing.assert_allclose(got, f(x, 2, 0.5, y, scale=2.0), rtol=1e-5)


def test_output_tree():
    def f(x):
        return {"a": x, "b": (x + 1, [x * 2, 3.0]), "c": np.float32(1)}
    g = trace_function(f, {"x": F4})
    assert g.outputs[0] is g.inputs[0]
    assert len(g.outputs) == 4 and g.outputs[3].dtype == np.float32    # 3.0 stays a Python float
    vals = unflatten(g.out_tree, ["a", "b0", "b1", "c"])
    assert vals == {"a": "a", "b": ("b0", ["b1", 3.0]), "c": "c"}
    assert type(vals["b"][1][1]) is float
    check(f, rand((3, 4), "f4"))
    check(lambda x: [x.sum(), (x.shape[0], True)], rand((2,), "i2"))


def test_hash_consing_and_locations():
    def f(x):
        a = x + 1
        b = x + 1          # same node as a
        return a, b
    g = trace_function(f, {"x": ArraySpec(np.dtype("f4"), (7, 3, 2))})  # fresh nodes
    assert g.outputs[0] is g.outputs[1]
    add = g.outputs[0]
    assert add.loc == f"test_trace_graph.py:{f.__code__.co_firstlineno + 1}"


def test_tracer_properties():
    seen = {}

    def f(x):
        seen.update(shape=x.shape, dtype=x.dtype, ndim=x.ndim, size=x.size, T=type(x))
        return x
    trace_function(f, {"x": ArraySpec(np.dtype("u2"), (2, 5))})
    assert seen == dict(shape=(2, 5), dtype=np.dtype("u2"), ndim=2, size=10, T=Tracer)


def test_numpy_constants_and_scalars():
    check(lambda x: x * np.pi + np.e, rand((3,), "f4"))
    check(lambda x: x + np.float16(1) + np.array(2, np.int8), rand((3,), "i1"))
    check(lambda x: np.sqrt(2.0) * x, rand((3,), "f2"))


def test_explicit_broadcast_and_cast_in_graph():
    g = trace_function(lambda x, y: x + y, {"x": ArraySpec(np.dtype("i2"), (3, 1)),
                                            "y": ArraySpec(np.dtype("f4"), (4,))})
    out = g.outputs[0]
    assert out.op is Op.ADD and out.dtype == np.float32 and out.shape == (3, 4)
    a, b = out.inputs
    assert a.op is Op.BROADCAST and a.inputs[0].op is Op.CAST and a.inputs[0].dtype == np.float32
    assert b.op is Op.BROADCAST and b.inputs[0] is g.inputs[1]


def test_reference_reads_views():
    """The oracle takes non-contiguous inputs (transposed, sliced with a step) as they are."""
    base = rand((6, 8), "f4")
    x, y = base.T, base[::2, ::-3]
    check(lambda a, b: a[:3, :2] * b.sum(), x, y, reductions=True)
    check(lambda a: np.exp(a) @ a.T, base[1:, ::2], reductions=True)


def test_trace_layer_imports_no_later_layer():
    import ast
    import pathlib
    import kfuse.trace as t
    for path in pathlib.Path(t.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                mod = "." * node.level + node.module
                assert not any(x in mod for x in ("fusion", "codegen", "runtime", "api", "cupy")), \
                    (path.name, mod)
