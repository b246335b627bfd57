"""Array interop for the GPU path: CuPy arrays in/out, torch CUDA tensors via DLPack (zero-copy).

``classify(arrays)`` says which world the arguments live in ("numpy", "cupy" or "torch") and on
which device, raising :class:`DeviceError` for host/device mixes or several devices.
``to_device_arrays`` gives CuPy views of the inputs; ``from_device_arrays`` turns CuPy outputs
back into the caller's kind (torch tensors through DLPack, no copy).
bfloat16 has no NumPy dtype, so the IR cannot describe it: torch bfloat16 tensors are refused
with a clear :class:`UnsupportedError` (cast to float16/float32 first).
"""
from __future__ import annotations

import sys

import numpy as np

from ..errors import DeviceError, UnsupportedError


def _is_torch(x) -> bool:
    t = sys.modules.get("torch")
    return t is not None and isinstance(x, t.Tensor)


def _is_cupy(x) -> bool:
    cp = sys.modules.get("cupy")
    return cp is not None and isinstance(x, cp.ndarray)


def kind_of(x) -> str:
    """"cupy", "torch" (CUDA tensor), "numpy" (host arrays, torch CPU tensors, scalars)."""
    if _is_cupy(x):
        return "cupy"
    if _is_torch(x):
        return "torch" if x.is_cuda else "numpy"
    return "numpy"


def device_of(x) -> int | None:
    k = kind_of(x)
    if k == "cupy":
        return int(x.device.id)
    if k == "torch":
        return int(x.device.index if x.device.index is not None else 0)
    return None


def classify(arrays) -> tuple[str, int | None]:
    """("numpy"|"cupy"|"torch", device id) for a list of arguments (Python scalars ignored)."""
    kinds, devices = set(), set()
    for a in arrays:
        if isinstance(a, (bool, int, float)):
            continue
        k = kind_of(a)
        kinds.add(k)
        if k != "numpy":
            devices.add(device_of(a))
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


def host_to_device(a):
    """``cupy.asarray`` of a NumPy array or scalar, keeping the sign of a zero: CuPy fills a 0-d
    (or one-value) array with ``memset`` when the value == 0, which turns -0.0 into +0.0; a
    one-element 1-D copy followed by a reshape goes through memcpy instead."""
    import cupy
    a = np.asarray(a)
    if a.size == 1:
        return cupy.asarray(np.ascontiguousarray(a).reshape(1)).reshape(a.shape)
    return cupy.asarray(a)


def to_cupy(x):
    """A CuPy view of a CuPy array or torch CUDA tensor (zero-copy through DLPack)."""
    if _is_cupy(x):
        return x
    if _is_torch(x):
        import torch
        import cupy
        if x.dtype == torch.bfloat16:
            raise UnsupportedError("kfuse: bfloat16 tensors are not supported yet (no NumPy dtype "
                                   "for the IR); cast to float16 or float32 first")
        if x.dtype == torch.bool:
            return cupy.from_dlpack(x.view(torch.uint8)).view(cupy.bool_)
        return cupy.from_dlpack(x)
    raise DeviceError(f"kfuse: expected a CuPy array or torch CUDA tensor, got {type(x).__name__}")


def to_device_arrays(arrays) -> tuple[list, str, int | None]:
    kind, dev = classify(arrays)
    if kind == "numpy":
        raise DeviceError("kfuse: the CUDA backend got host arrays; NumPy inputs run on the CPU backend")
    return [to_cupy(a) for a in arrays], kind, dev


def from_cupy(x, kind: str):
    """Return CuPy output ``x`` as the caller's kind ("cupy" or "torch")."""
    if kind == "cupy":
        return x
    if kind == "torch":
        import torch
        if x.dtype == np.bool_:
            return torch.from_dlpack(x.view(np.uint8)).view(torch.bool)
        return torch.from_dlpack(x)
    raise ValueError(kind)


def from_device_arrays(outs, kind: str) -> list:
    return [from_cupy(o, kind) for o in outs]


def backend_for(arrays) -> str:
    """"cpu" for host arguments, "cuda" for device ones (raises on mixes)."""
    return "cpu" if classify(arrays)[0] == "numpy" else "cuda"
