"""Bad input while tracing: each error by type, and its message naming the op and this file's
line (``test_trace_errors.py:N``)."""
import numpy as np
import pytest

import kfuse
import kfuse.errors as ke
from kfuse.ir.specs import ArraySpec, ScalarSpec, StaticSpec
from kfuse.trace import trace_function

F4 = ArraySpec(np.dtype("f4"), (3, 4))


def trace(fn, *specs):
    import inspect
    names = list(inspect.signature(fn).parameters)
    return trace_function(fn, dict(zip(names, specs or (F4,))))


def line_of(fn) -> str:
    return f"test_trace_errors.py:{fn.__code__.co_firstlineno}"


UNSUPPORTED = [
    (lambda x: np.sort(x), "np.sort"),
    (lambda x: np.cumsum(x, out=x), "np.cumsum with out="),
    (lambda x: np.repeat(x, x[0].astype(int)), "np.repeat with per-element counts"),
    (lambda x: np.add(x, 1, out=np.zeros(3)), "out=) into a NumPy array"),
    (lambda x: np.exp(x, where=x > 0), "where="),
    (lambda x: np.add(x, 1, dtype=np.float64), "dtype="),
    (lambda x: np.subtract.accumulate(x), "np.subtract.accumulate"),
    (lambda x: np.add.outer(x, x), "np.add.outer"),
    (lambda x: np.subtract.reduce(x), "np.subtract.reduce"),
    (lambda x: np.nanmedian(x), "np.nanmedian"),
    (lambda x: np.spacing(x), "np.spacing"),
    (lambda x: x.sum(out=x), "np.sum with out="),
    (lambda x: x.max(initial=x[0, 0]), "a traced initial="),
    (lambda x: x.var(mean=x.mean(keepdims=True)), "np.var with mean="),
    (lambda x: np.negative.at(x, [0]), "np.negative.at"),
    (lambda x: x[x[:, 0] > 0, [0, 1]], "traced boolean array combined with other indices"),
    (lambda x: x[x > 0], "boolean-indexed array"),
    (lambda x: x[x > 0][0], "indexing of a boolean-indexed array"),
    (lambda x: x[x[:, 0] > 0, 0], "boolean indexing"),
    (lambda x: x[np.array(True)], "a 0-d boolean index"),
    (lambda x: x[True], "boolean indexing"),
    (lambda x: x.astype(object), "object"),
    (lambda x: x.astype("U3"), "<U3"),
    (lambda x: np.linalg.norm(x, "nuc"), "np.linalg.norm with ord='nuc' of a matrix"),
    (lambda x: np.linalg.svd(x), "np.linalg.svd"),
    (lambda x: (x > 0) @ (x.T > 0), "bool"),
    (lambda x: np.einsum("ij,kj->ik", x, x, out=x), "np.einsum with out="),
    (lambda x: np.vecdot(x, x, axes=[(0,), (0,), ()]), "np.vecdot with axes="),
    (lambda x: x.reshape(12, order="F"), "order='F'"),
    (lambda x: x.reshape(12).__iadd__(1), "in-place add through a reshape"),
    (lambda x: np.where(x > 0), "np.where with one argument"),
    (lambda x: x + [x[0, 0], 1, 2, 3], "list holding traced values"),
]


@pytest.mark.parametrize("fn,text", UNSUPPORTED, ids=[t for _, t in UNSUPPORTED])
def test_unsupported(fn, text):
    with pytest.raises(ke.UnsupportedError) as info:
        trace(fn)
    msg = str(info.value)
    assert text in msg, msg
    assert line_of(fn) in msg, msg
    assert isinstance(info.value, ke.KfuseError)


def test_writes_into_an_argument_are_written_back():
    def f(x):
        x += 1
        x[0] = 2
        return x.sum()
    g = trace(f)
    assert len(g.writebacks) == 1 and len(g.outputs) == 2
    i, o = g.writebacks[0]
    assert g.inputs[i].attr("name") == "x" and o == 1
    assert "write back" in g.as_text()


CONTROL_FLOW = [
    lambda x: x if x.sum() > 0 else -x,
    lambda x: float(x.max()),
    lambda x: int(x[0, 0]),
    lambda x: x * bool(x.min()),
    lambda x: np.asarray(x),
    lambda x: np.array(x) + 1,
    lambda x: x[0, 0].item(),
    lambda x: range(x[0, 0]),
    lambda x: x and x,
    lambda x: x.tolist(),
]


@pytest.mark.parametrize("fn", CONTROL_FLOW)
def test_control_flow_is_an_unsupported_error(fn):
    """One type for "kfuse cannot compile this" (the README's UnsupportedError, a TypeError); its
    message says what to do instead."""
    with pytest.raises(ke.UnsupportedError) as info:
        trace(fn)
    assert isinstance(info.value, TypeError) and isinstance(info.value, ke.TraceError)
    msg = str(info.value)
    assert line_of(fn) in msg, msg
    assert "np.where" in msg and "static_argnames" in msg, msg


def test_if_statement_points_at_the_if_line():
    def f(x):
        y = x * 2
        if y.sum() > 0:  # <- the line
            return y
        return -y
    with pytest.raises(kfuse.UnsupportedError) as info:
        trace(f)
    assert f"test_trace_errors.py:{f.__code__.co_firstlineno + 2}" in str(info.value)


def test_broadcast_error_names_both_shapes():
    with pytest.raises(ValueError) as info:
        trace(lambda x, y: x + y, F4, ArraySpec(np.dtype("f4"), (5,)))
    msg = str(info.value)
    assert "(3,4)" in msg and "(5,)" in msg and "could not be broadcast" in msg
    assert "test_trace_errors.py" in msg
    with pytest.raises(ValueError, match=r"\(3,4\) \(2,1,5\)"):
        trace(lambda x, y: np.where(x > 0, y, x), F4, ArraySpec(np.dtype("f4"), (2, 1, 5)))
    with pytest.raises(ValueError, match="broadcast"):
        trace(lambda x: np.broadcast_to(x, (4, 4)))


@pytest.mark.parametrize("dtype", ["O", "U4", "M8[s]"])
def test_unsupported_spec_dtypes(dtype):
    with pytest.raises(ke.UnsupportedError, match="not supported|unsupported"):
        trace(lambda x: x, ArraySpec(np.dtype(dtype), (3,)))


def test_numpy_errors_keep_numpy_types():
    with pytest.raises(ValueError, match="read-only"):
        trace(lambda x: np.broadcast_to(x, (2, 3, 4)).__setitem__(0, 1.0))
    with pytest.raises(TypeError):   # numpy: boolean negative is not supported
        trace(lambda x: -x, ArraySpec(np.dtype("?"), (3,)))
    with pytest.raises(TypeError):
        trace(lambda x: ~x)
    with pytest.raises(ValueError, match="negative integer powers"):
        trace(lambda x: x ** -2, ArraySpec(np.dtype("i4"), (3,)))
    with pytest.raises(ValueError, match="cannot reshape"):
        trace(lambda x: x.reshape(5, 2))
    with pytest.raises(IndexError, match="out of bounds"):
        trace(lambda x: x[3])
    with pytest.raises(TypeError, match="len"):
        trace(lambda x: len(x.sum()))


def test_bad_return_value():
    assert trace(lambda x: None).out_tree == ("none", ())     # (a function that only writes)
    with pytest.raises(ke.UnsupportedError, match="returned str"):
        trace(lambda x: (x, "a"))
