"""Array interop for the GPU path: CuPy arrays in/out, torch CUDA tensors via DLPack (zero-copy).

``classify(arrays)`` says which world the arguments live in ("numpy", "cupy" or "torch") and on
which device, raising :class:`DeviceError` for host/device mixes or several devices.
``to_device_arrays`` gives the launchers' view of the inputs (CuPy arrays, torch tensors as
:func:`tensor_view`); for torch callers, :class:`TorchOutputs` allocates the outputs as torch
tensors and hands them back (no copy).

The generated kernels need only a tensor's pointer, shape and strides, so a torch tensor reaches
them as a :func:`tensor_view` (no DLPack exchange: a capsule and ``cupy.from_dlpack`` cost ~5 µs a
tensor, seven of them most of a 112 µs Adam-step call, H200 2026-11-24); the cuBLAS path and the
autotuner, which need CuPy arrays, get them from :func:`to_cupy`: DLPack capsules
(``torch.utils.dlpack``), not the ``__dlpack__(stream=...)`` protocol, whose stream handshake (an
event recorded and waited on per tensor) cost ~16 µs an input and ~6 µs an output (H200,
2026-11-22). The ordering that handshake gave is kept by running a torch caller's kernels on
torch's current stream (:func:`launch_stream`). Outputs are allocated by torch, so none needs
converting back.
bfloat16 tensors (``ml_dtypes.bfloat16`` in the IR) go to the kernels as uint16 CuPy views of their
bits (CuPy has no bfloat16), and so do bfloat16 scalars and intermediates; a torch caller's bfloat16
results (kernel outputs, inputs passed through, constants) come back as torch.bfloat16 tensors of
the same memory, and a CuPy caller whose function returns bfloat16 gets an UnsupportedError.
"""
from __future__ import annotations

import functools
import sys

import numpy as np

from ..errors import DeviceError, UnsupportedError
from ..ir.dtypes import BF16


def copy_array(a):
    """A copy of a concrete array: NumPy's or CuPy's ``copy``, a torch tensor's ``clone``."""
    return a.clone() if hasattr(a, "clone") else a.copy()


@functools.cache
def storage_dtype(dt) -> np.dtype:
    """The CuPy dtype holding a ``dt`` array on the device: uint16 for bfloat16 (CuPy has none)."""
    return np.dtype(np.uint16) if dt == BF16 else np.dtype(dt)


def cupy_empty(shape, dtype):
    """A kernel output for a CuPy caller (a bfloat16 intermediate as its uint16 bits)."""
    import cupy
    return cupy.ndarray(shape, storage_dtype(dtype))    # = cupy.empty, without its order keyword (0.5 µs)


def refuse_bf16_results_for_cupy(outputs) -> None:
    """CuPy has no bfloat16: a CuPy caller whose function returns a bfloat16 array gets a clear
    error (before anything runs), not uint16 bits."""
    bf = [str(o) for o in outputs if o.dtype == BF16]
    if bf:
        raise UnsupportedError(f"kfuse: a bfloat16 result needs torch tensors (CuPy has no bfloat16): "
                               f"{', '.join(bf)}; pass torch CUDA tensors, or cast the result to float32")


def _is_torch(x) -> bool:
    t = sys.modules.get("torch")
    return t is not None and isinstance(x, t.Tensor)


def _is_cupy(x) -> bool:
    cp = sys.modules.get("cupy")
    return cp is not None and isinstance(x, cp.ndarray)


def kind_of(x) -> tuple[str, int | None]:
    """``(kind, device)``: ("cupy", id), ("torch", CUDA ordinal) for a CUDA tensor, ("numpy", None)
    for host arrays, torch CPU tensors and scalars."""
    if _is_cupy(x):
        return "cupy", x.data.device_id
    if _is_torch(x) and x.is_cuda:
        return "torch", x.get_device()          # the CUDA ordinal, without building a torch.device
    return "numpy", None


def classify(arrays) -> tuple[str, int | None]:
    """("numpy"|"cupy"|"torch", device id) for a list of arguments (Python scalars ignored)."""
    kinds, devices = set(), set()
    for a in arrays:
        if isinstance(a, (bool, int, float)):
            continue
        k, d = kind_of(a)
        kinds.add(k)
        if k != "numpy":
            devices.add(d)
    if not kinds:
        return "numpy", None
    if "numpy" in kinds and len(kinds) > 1:
        raise DeviceError("kfuse: host (NumPy) arrays mixed with GPU arrays in one call; move them "
                          "to one device first (cupy.asarray / .cpu())")
    if len(devices) > 1:
        raise DeviceError(f"kfuse: arrays on different GPUs {sorted(devices)} in one call")
    if kinds == {"numpy"}:
        return "numpy", None
    kind = "torch" if "torch" in kinds else "cupy"
    return kind, devices.pop()


_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def host_to_device(a):
    """``cupy.asarray`` of a NumPy array or scalar. One value (a scalar argument, every call) is a
    fill of its bits, launched on the stream: no copy from pageable host memory, which would make
    the host wait for the stream (measured: ``cache[:, t] = k`` of a Python int ``t`` 90 us a
    call, H200 2026-11-26); and the bits keep the sign of a zero (CuPy fills a float array with
    ``memset`` when the value == 0, turning -0.0 into +0.0). bfloat16 (an ``ml_dtypes.bfloat16``
    scalar argument) travels as its uint16 bits."""
    import cupy
    a = np.asarray(a)
    if a.dtype == BF16:
        a = a.view(np.uint16)
    if a.size == 1 and a.dtype.itemsize in _BITS:
        bits = _BITS[a.dtype.itemsize]
        out = cupy.empty(a.shape, a.dtype)
        out.view(bits).fill(a.reshape(()).view(bits).item())
        return out
    return cupy.asarray(a)


def to_cupy(x):
    """A CuPy view of a CuPy array or torch CUDA tensor (zero-copy through a DLPack capsule;
    a view made from the tensor's pointer, shape and strides with UnownedMemory measured slower,
    3.6 against 2.1 µs, H200 2026-11-24 12:21)."""
    if _is_cupy(x):
        return x
    if _is_torch(x):
        import torch
        import cupy
        from torch.utils.dlpack import to_dlpack
        if x.is_conj() or x.is_neg():   # (DLPack refuses lazy bits: the values, a copy)
            x = x.resolve_conj().resolve_neg()
        if x.dtype == torch.bfloat16:   # CuPy has no bfloat16: its bits, as uint16 (the kernel knows)
            return cupy.from_dlpack(to_dlpack(x.view(torch.int16))).view(cupy.uint16)
        if x.dtype == torch.bool:
            return cupy.from_dlpack(to_dlpack(x.view(torch.uint8))).view(cupy.bool_)
        return cupy.from_dlpack(to_dlpack(x))
    raise DeviceError(f"kfuse: expected a CuPy array or torch CUDA tensor, got {type(x).__name__}")


@functools.cache
def _torch_dtype(dtype):
    """The torch dtype of an output of IR ``dtype``, None where torch has none."""
    import torch
    tdtype = getattr(torch, np.dtype(dtype).name, None)
    return tdtype if isinstance(tdtype, torch.dtype) else None


@functools.cache
def _torch_storage(tdtype) -> np.dtype | None:
    """The storage dtype of a torch dtype (bfloat16: uint16 bits), None where NumPy has none."""
    name = str(tdtype).removeprefix("torch.")
    if name == "bfloat16":
        return np.dtype(np.uint16)
    try:
        return np.dtype(name)
    except TypeError:
        return None


def tensor_view(t):
    """A torch CUDA tensor as the kernel launchers see it: a :func:`_view_type` holding its
    pointer, shape, byte strides and storage dtype (the tensor kept alive), which CuPy passes to
    a kernel as the pointer; a dtype NumPy does not know goes through :func:`to_cupy`. A complex
    tensor with torch's lazy conjugate (or negative) bit set (``t.conj()``) holds the values before
    that operation: it is resolved into a tensor of its values first (a copy); so is a real one
    with the negative bit (``z.conj().imag``, ``torch._neg_view(x)``)."""
    if t.is_conj() or t.is_neg():
        t = t.resolve_conj().resolve_neg()
    dtype = _torch_storage(t.dtype)
    return to_cupy(t) if dtype is None else _view_type()(t, dtype)


def reshaped(x, shape):
    """A C-contiguous launcher array (a CuPy array or a tensor view) reshaped: a view."""
    tensor = getattr(x, "tensor", None)
    return x.reshape(shape) if tensor is None else tensor_view(tensor.reshape(shape))


def as_cupy(x):
    """A CuPy array of a launcher argument: ``x`` itself, or a CuPy view of a tensor view's tensor
    (for the cuBLAS path, which calls CuPy); read without importing CuPy (a tensor view holds its
    ``tensor``, a CuPy array or a host flag has none)."""
    tensor = getattr(x, "tensor", None)
    return x if tensor is None else to_cupy(tensor)


@functools.cache
def _c_layout(shape: tuple, itemsize: int) -> tuple:
    """``(shape, byte strides, size)`` of a C-contiguous array (torch.empty's layout)."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return shape, tuple(reversed(strides)), int(np.prod(shape, dtype=np.int64))


@functools.cache
def _view_type():
    """The tensor-view class (made at first use: this module is imported without CuPy too). A
    ``CPointer`` to a host cell holding the device pointer, which CuPy hands to the kernel as
    the pointer argument; the attributes are the ones the launchers read of a CuPy array."""
    import ctypes
    from cupy.cuda.function import CPointer

    class _Pointer:
        __slots__ = ("ptr",)

        def __init__(self, ptr: int):
            self.ptr = ptr

    init = CPointer.__init__

    class TensorView(CPointer):
        __slots__ = ("tensor", "shape", "strides", "dtype", "itemsize", "size", "data", "_cell")

        def __init__(self, t, dtype: np.dtype, layout: tuple | None = None):
            """``layout``: ``(shape, byte strides, size)`` when the caller knows them (an output
            it just allocated), else read off the tensor."""
            cell = ctypes.c_uint64(t.data_ptr())
            init(self, ctypes.addressof(cell))
            self._cell, self.tensor, self.dtype, self.itemsize = cell, t, dtype, dtype.itemsize
            if layout is None:
                layout = tuple(t.shape), tuple([s * dtype.itemsize for s in t.stride()]), t.numel()
            self.shape, self.strides, self.size = layout
            self.data = _Pointer(cell.value)

        def __repr__(self):
            return f"TensorView({self.dtype}{list(self.shape)}, strides={self.strides})"
    return TensorView


def device_array(x):
    """A CuPy array of any program input: CuPy arrays and torch CUDA tensors viewed (zero-copy),
    host arrays and scalars uploaded (bfloat16 as its uint16 bits either way)."""
    return to_cupy(x) if _is_cupy(x) or _is_torch(x) else host_to_device(x)


def to_device_arrays(arrays) -> tuple[list, str, int | None]:
    """The launchers' arguments (CuPy arrays as they are, torch tensors as :func:`tensor_view`),
    the caller's kind and device."""
    kind, dev = classify(arrays)
    if kind == "numpy":
        raise DeviceError("kfuse: the CUDA backend got host arrays; NumPy inputs run on the CPU backend")
    return [tensor_view(a) if _is_torch(a) else to_cupy(a) for a in arrays], kind, dev


def from_cupy(x, kind: str, dtype=None):
    """Return CuPy output ``x`` as the caller's kind ("cupy" or "torch"); ``dtype`` is the IR's
    dtype of it when known (a bfloat16 result is a uint16 view of its bits: a torch caller gets a
    torch.bfloat16 tensor of the same memory)."""
    if kind == "cupy":
        return x
    if kind == "torch":
        import torch
        if dtype is not None and np.dtype(dtype) == BF16:
            return torch.from_dlpack(x.view(np.int16)).view(torch.bfloat16)
        if x.dtype == np.bool_:
            return torch.from_dlpack(x.view(np.uint8)).view(torch.bool)
        return torch.from_dlpack(x)
    raise ValueError(kind)


class TorchOutputs:
    """Output allocation for a torch caller: tensors from torch's caching allocator on ``dev``
    (used on torch's current stream), which the kernels see as tensor views (:func:`tensor_view`);
    ``result(x)`` is the tensor behind a view, and any CuPy array (a cuBLAS product, a constant)
    goes back through DLPack."""

    def __init__(self, dev: int):
        import torch
        self.torch, self.device = torch, dev    # torch reads an int device as CUDA's

    def empty(self, shape, dtype):
        tdtype = _torch_dtype(dtype)
        if tdtype is None:
            import cupy
            return cupy.empty(shape, dtype)
        storage = storage_dtype(dtype)
        return _view_type()(self.torch.empty(shape, dtype=tdtype, device=self.device), storage,
                            _c_layout(tuple(shape), storage.itemsize))

    def result(self, x, dtype=None):
        """The torch tensor for kernel output or passed-through input ``x`` (IR dtype ``dtype``)."""
        return x.tensor if isinstance(x, _view_type()) else from_cupy(x, "torch", dtype)


def torch_capturing() -> bool:
    """Whether torch is capturing a CUDA graph on its current stream (``torch.cuda.graph``)."""
    import torch
    return torch.cuda.is_current_stream_capturing()


def launch_stream(dev: int):
    """The CuPy stream a torch caller's kernels go on: torch's current stream on ``dev`` (kernels
    then follow the work that produced the inputs, and the outputs are ready for what torch
    queues next), or None when that is CuPy's current stream already."""
    import cupy
    import torch
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)   # what Inductor's launches use
    ptr = raw(dev) if raw is not None else torch.cuda.current_stream(dev).cuda_stream
    if ptr == cupy.cuda.get_current_stream().ptr:
        return None
    return _external_stream(ptr, dev)


@functools.lru_cache(maxsize=64)
def _external_stream(ptr: int, dev: int):
    """A CuPy view of the CUDA stream ``ptr`` on ``dev``, made once (it owns nothing, so a view
    of a pointer torch later reuses for another stream is that stream's view)."""
    import cupy

    class _Raw:        # the CUDA stream protocol, which Stream.from_external reads
        def __cuda_stream__(self):
            return 0, ptr
    if hasattr(cupy.cuda.Stream, "from_external"):
        return cupy.cuda.Stream.from_external(_Raw())
    return cupy.cuda.ExternalStream(ptr, dev)        # CuPy < 14 (deprecated there since)
