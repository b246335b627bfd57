"""Bug 46 (docs/FUZZING.md; cpu seed 1803 #899, the write kind): ``v0[-1::-2] *= a1 * 2`` of a bool
``v0`` and a uint8 ``a1`` of another shape: NumPy raises its casting error (UFuncTypeError, a
TypeError: uint8 cannot be cast to bool under same_kind) before looking at the shapes; kfuse raised
the broadcast ValueError. An in-place operator whose operands do not broadcast now raises NumPy's
casting error first when there is one, naming the line."""
import numpy as np
import pytest

import kfuse


def fuzz_fn(a0, a1):
    v0 = a0
    v0[-1::-2, ...] *= a1 * 2
    return v0


def test_the_casting_error_comes_before_the_shapes():
    a0, a1 = np.zeros(7, np.bool_), np.ones((2, 7), np.uint8)
    with pytest.raises(TypeError, match="Cannot cast ufunc 'multiply' output"):
        fuzz_fn(a0.copy(), a1)
    with pytest.raises(TypeError, match="Cannot cast ufunc 'multiply' output") as e:
        kfuse.jit(fuzz_fn)(a0.copy(), a1)
    assert "test_fuzz_inplace_cast_error_first.py" in str(e.value) + "".join(getattr(e.value, "__notes__", []))
    with pytest.raises(ValueError, match="could not be broadcast"):      # castable: the shapes
        kfuse.jit(fuzz_fn)(np.zeros(7, np.int64), a1)
