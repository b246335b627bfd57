"""Python lists and tuples as operands (``x - [1, 2]``, ``np.maximum(x, (0, 3))``): NumPy converts
them with ``np.asarray`` (an array, not a weak scalar: int64 and float64 promote), and so does kfuse
(found by the fuzzer's scatter kind, 2026-11-26: they raised UnsupportedError). A list holding
traced values is refused naming the line; a ragged one raises NumPy's ValueError."""
import numpy as np
import pytest

import kfuse
from kfuse.errors import UnsupportedError

CASES = {
    "subtract": lambda x: np.subtract(x, [1, 2]),
    "operator": lambda x: x - [1, 2],
    "nested rows": lambda x: [[1], [2.5]] * x,
    "tuple": lambda x: np.maximum(x, (0, 3)),
    "where": lambda x: np.where(x > 1, [1, 2], x),
    "clip": lambda x: np.clip(x, [0, 0], [1, 1.5]),
    "bools": lambda x: x + [True, False],
    "int8 with a list": lambda x: x.astype(np.int8) * [3, -1],
}


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_list_operands_match_numpy(name, dtype):
    fn = CASES[name]
    x = np.array([1, 2], dtype)
    with np.errstate(all="ignore"):
        want = fn(x)
    got = kfuse.jit(fn, backend="cpu")(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_list_of_traced_values_and_ragged_lists():
    with pytest.raises(UnsupportedError, match=r"a list holding traced values .*test_list_operands\.py"):
        kfuse.jit(lambda x: x + [x, x], backend="cpu", fullgraph=True)(np.ones(2))
    with pytest.raises(ValueError, match="inhomogeneous") as e:
        kfuse.jit(lambda x: x + [[1], [1, 2]], backend="cpu")(np.ones(2))
    assert any("test_list_operands.py" in n for n in e.value.__notes__)
