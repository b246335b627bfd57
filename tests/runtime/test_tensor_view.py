"""Torch tensors as the GPU launchers see them (``interop.tensor_view``), checked on CPU tensors:
only the pointer, shape, byte strides and storage dtype are read (no GPU needed)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("cupy")
from cupy.cuda.function import CPointer  # noqa: E402

from kfuse.runtime import interop  # noqa: E402


@pytest.mark.parametrize("tdtype,np_dtype", [(torch.float32, np.float32), (torch.float16, np.float16),
                                             (torch.bfloat16, np.uint16), (torch.bool, np.bool_),
                                             (torch.int64, np.int64), (torch.uint8, np.uint8)])
def test_view_of_a_sliced_tensor(tdtype, np_dtype):
    base = torch.zeros(6, 10, dtype=tdtype)
    t = base[1:5, 2:10:3]
    v = interop.tensor_view(t)
    item = np.dtype(np_dtype).itemsize
    assert isinstance(v, CPointer) and v.tensor is t
    assert v.dtype == np.dtype(np_dtype) and v.itemsize == item
    assert v.shape == (4, 3) and v.size == 12 and v.strides == (10 * item, 3 * item)
    assert v.data.ptr == t.data_ptr() == base.data_ptr() + 12 * item


def test_results_and_cupy_views():
    t = torch.ones(3)
    v = interop.tensor_view(t)
    assert interop.TorchOutputs(0).result(v) is t          # a view's result is its own tensor
    assert interop.as_cupy("not a view") == "not a view"


def test_dtype_numpy_lacks_goes_through_dlpack():
    assert interop._torch_storage("torch.no_such_dtype") is None     # str() of a torch dtype
    assert interop._torch_storage(torch.bfloat16) == np.dtype(np.uint16)


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 5), (4, 1, 3), (7, 9)])
def test_output_layout_is_torch_empty_layout(shape):
    """Outputs are viewed from the layout kfuse computes, which must be torch.empty's own."""
    for tdtype, np_dtype in ((torch.float32, np.float32), (torch.bfloat16, np.uint16), (torch.bool, np.bool_)):
        t = torch.empty(shape, dtype=tdtype)
        item = np.dtype(np_dtype).itemsize
        mine = interop._c_layout(shape, item)
        read = interop.tensor_view(t)
        assert mine == (read.shape, read.strides, read.size) or 0 in shape   # empty dims: strides unused
        assert mine[0] == read.shape and mine[2] == read.size
