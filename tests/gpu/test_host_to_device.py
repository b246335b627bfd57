"""``interop.host_to_device`` on a GPU (skipped without one): a one-value array (a scalar
argument, every call) is a fill of its bits, so every dtype's value arrives bit for bit (-0.0,
NaN payloads, the largest uint64, bfloat16 bits); larger arrays are copied."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)

VALUES = {
    "bool": [True, False], "int8": [-128, 0, 127], "uint8": [255], "int16": [-32768], "uint16": [65535],
    "int32": [-2 ** 31], "uint32": [2 ** 32 - 1], "int64": [-2 ** 63, 2 ** 63 - 1], "uint64": [2 ** 64 - 1, 0],
    "float16": [-0.0, 65504.0, np.inf], "float32": [-0.0, 0.0, np.nan, -np.inf, 1e-45],
    "float64": [-0.0, np.nan, 5e-324, -1.5], "complex64": [complex(-0.0, 1.0)],
}


@pytest.mark.parametrize("dtype", list(VALUES))
@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_one_value_arrives_bit_for_bit(dtype, shape):
    import cupy
    from kfuse.runtime.interop import host_to_device
    for v in VALUES[dtype]:
        a = np.full(shape, v, dtype=dtype)
        d = host_to_device(a)
        assert isinstance(d, cupy.ndarray) and d.shape == shape and d.dtype == a.dtype
        assert cupy.asnumpy(d).tobytes() == a.tobytes()
    host_nan = np.array(np.frombuffer(np.uint32(0x7FC00123).tobytes(), np.float32)[0])     # a NaN payload
    assert cupy.asnumpy(host_to_device(host_nan)).tobytes() == host_nan.tobytes()


def test_arrays_and_bfloat16():
    import cupy
    import ml_dtypes
    from kfuse.runtime.interop import host_to_device
    a = np.arange(7, dtype=np.int16)
    np.testing.assert_array_equal(cupy.asnumpy(host_to_device(a)), a)
    b = np.array(-0.0, dtype=ml_dtypes.bfloat16)
    assert cupy.asnumpy(host_to_device(b)).tobytes() == b.view(np.uint16).tobytes()
