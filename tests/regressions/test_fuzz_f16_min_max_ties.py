"""np.maximum/np.minimum of float16 +0.0/-0.0 keep the FIRST operand (NumPy's float16 loop is
``npy_half_ge(a, b) ? a : b``), unlike float32/float64 (the second). Found while re-applying the
GPU tie rule (b2c3a31): the CPU emitter (kfuse/codegen/cpu.py) uses the float32/64 rule for float16
too. Fixed there: ``>=``/``<=`` for maximum/minimum when the dtype is float16."""
import numpy as np

import kfuse


def fuzz_fn(a, b):
    return np.maximum(a, b), np.minimum(a, b)


def test_cpu_f16_min_max_ties():
    a = np.array([-0.0, 0.0, -0.0, 0.0, np.nan, 1.0], np.float16)
    b = np.array([0.0, -0.0, -0.0, 0.0, -0.0, np.nan], np.float16)
    for x, y in zip(kfuse.jit(fuzz_fn, backend="cpu")(a, b), fuzz_fn(a, b)):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(np.signbit(x)[:4], np.signbit(y)[:4])
