"""NumPy arrays a traced function makes or reads (np.zeros/ones/full, np.arange, np.eye, a global
table) against NumPy. An array of one repeated value is a broadcast constant of its dtype and
shape; any other becomes an extra INPUT after the function's arguments, its value copied at trace
time into ``graph.constants``."""
import numpy as np
import pytest

from kfuse.ir.ops import Op
from kfuse.ir.specs import spec_of_value
from kfuse.trace import trace_function
from trace_checks import check, rand

TABLE = np.array([3.0, -1.0, 0.5, 2.0], np.float32)

FNS = [
    lambda x: x + np.ones(x.shape[-1]),                      # float64 array: promotes like NumPy
    lambda x: np.zeros((3, 4), np.int8) * x,
    lambda x: x * np.full((2, 1, 4), -0.0),                  # the sign of a zero is kept
    lambda x: np.maximum(x, np.full(4, np.nan, np.float32)),
    lambda x: x + np.zeros((0, 1, 4)),                       # empty
    lambda x: np.ones(4, bool) & (x > 1),
    lambda x: np.where(x > 0, np.ones((3, 4)) * 7, x),
    lambda x: np.zeros_like(np.empty((3, 4))) - x,
    lambda x: x + np.float16(2) * np.ones((1, 4), np.float16),
    lambda x: x * np.arange(x.shape[-1]),                    # int64 arange: promotes like NumPy
    lambda x: np.eye(3, 4, dtype=x.dtype) @ x.T,
    lambda x: (x - TABLE, TABLE[::-1] * 2),                  # a global table, and a view of it
    lambda x: np.where(x > 0, np.linspace(0, 1, 4), -x),
]


@pytest.mark.parametrize("dtype", ["f4", "f2", "i4", "u1"])
@pytest.mark.parametrize("i", range(len(FNS)))
def test_array_constants_match_numpy(i, dtype):
    check(FNS[i], rand((3, 4), dtype, i), reductions=True)


def test_constants_are_inputs_after_the_arguments_and_frozen():
    table = np.arange(4.0)

    def f(x):
        return x * table + table + np.zeros(4)     # one input for the table, none for the zeros

    g = trace_function(f, {"x": spec_of_value(np.ones(4))})
    assert [n.attr("name") for n in g.inputs] == ["x", "const0"]
    assert [n.attr("index") for n in g.inputs] == [0, 1]
    assert len(g.constants) == 1 and g.constants[0] is not table
    table[0] = 99.0                                 # values are taken when the function is traced
    assert g.constants[0][0] == 0.0
    assert sum(n.op is Op.INPUT for n in g.nodes()) == 2
