"""A GPU call path without a GPU, for tests of what ``kfuse.jit`` builds for device arrays.

:class:`FakeCupy` and :class:`FakeTensor` stand for a CuPy array and a torch CUDA tensor (their
modules' names are what ``dispatch_keys`` classifies by), each over a NumPy array whose address
and strides they report. :func:`fake_gpu` (a context manager over pytest's ``monkeypatch``) makes
the CUDA C backend run on them with everything below the launcher's variant choice replaced:
device properties are an H200's, ``cupy`` a module of the few calls the launchers make, ``cuda.load_function`` compiles nothing and returns a
:class:`Launched` recorder, and the programs' entry points run their real ``_run`` (launchers,
``choose``, ``variant_for``, the emitted source) with fake outputs. What each call launched
(kernel name and source, grid, block, scalar tail) is appended to the returned list; no kernel
computes anything, so the tests compare launches, not values.
"""
from __future__ import annotations

import contextlib
import sys
import types

import numpy as np

PROPS = {"name": "NVIDIA H200", "device_id": 0, "arch": "sm_90", "compute_capability": (9, 0),
         "sm_count": 132, "l2_bytes": 60 << 20, "shared_mem_per_block": 48 << 10,
         "shared_mem_per_block_optin": 227 << 10, "max_threads_per_block": 1024,
         "max_threads_per_sm": 2048}


class FakeCupy:
    """A CuPy array's attributes over a NumPy array (no device memory)."""
    __module__ = "cupy._fake"

    def __init__(self, a: np.ndarray):
        self.host = a
        self.shape, self.dtype, self.strides = a.shape, a.dtype, a.strides
        self.itemsize, self.size, self.ndim, self.nbytes = a.itemsize, a.size, a.ndim, a.nbytes
        self.data = types.SimpleNamespace(ptr=a.__array_interface__["data"][0], device_id=0)

    def __getitem__(self, index):
        return FakeCupy(self.host[index])

    def reshape(self, shape):
        return FakeCupy(self.host.reshape(shape))

    @property
    def T(self):
        return FakeCupy(self.host.T)


class FakeTensor:
    """A torch CUDA tensor's attributes over a NumPy array."""
    __module__ = "torch._fake"
    is_cuda = True

    def __init__(self, a: np.ndarray):
        self.host, self.shape, self.dtype = a, a.shape, a.dtype

    def stride(self):
        return tuple(s // self.host.itemsize for s in self.host.strides)

    def get_device(self):
        return 0

    def is_conj(self):
        return False

    def is_neg(self):
        return False

    def data_ptr(self):
        return self.host.__array_interface__["data"][0]

    def numel(self):
        return self.host.size

    def element_size(self):
        return self.host.itemsize

    def view(self) -> FakeCupy:
        """What the launchers see of it (``interop.tensor_view``: pointer, shape, byte strides)."""
        return FakeCupy(self.host)


class Launched:
    """A loaded kernel that records its launches instead of running."""

    def __init__(self, log: list, source: str, name: str):
        self.log, self.source, self.name, self.ptr = log, source, name, 0

    def __call__(self, grid, block, args, **kw):
        tail = tuple(int(np.asarray(a)) for a in args if not isinstance(a, FakeCupy))
        self.log.append((self.name, self.source, tuple(grid), tuple(block), tail))


def _empty(shape, dtype):
    return FakeCupy(np.zeros(shape, dtype))


def _fake_cupy_module():
    """What the launchers reach of the ``cupy`` module itself (a two-stage reduction's workspace,
    a grid barrier's zeroing), without a device."""
    stream = types.SimpleNamespace(ptr=0)
    runtime = types.SimpleNamespace(memsetAsync=lambda *a: None, getDevice=lambda: 0)
    cuda = types.SimpleNamespace(runtime=runtime, get_current_stream=lambda: stream)
    mod = types.ModuleType("cupy")
    mod.__dict__.update(empty=_empty, ndarray=FakeCupy, uint8=np.uint8, cuda=cuda)
    return mod


def _views(arrays):
    return [a.view() if isinstance(a, FakeTensor) else a for a in arrays]


@contextlib.contextmanager
def fake_gpu(monkeypatch):
    """The CUDA C backend on :class:`FakeCupy` / :class:`FakeTensor` (see the module docstring);
    yields the launch log."""
    from kfuse import backends
    from kfuse.runtime import cuda, device, direct_launch, gpu_launch
    log: list = []
    loads: list = []

    def load_function(source, name, dev_id, arch, cache=None):
        loads.append(name)
        return Launched(log, source, name)

    def run(self, arrays, dev=0):
        return self._run(None, _views(arrays), 0, _empty)

    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy_module())
    monkeypatch.setattr(type(backends.CUDA), "check_available", lambda self: None)
    monkeypatch.setattr(device, "device_properties", lambda dev=None: dict(PROPS))
    monkeypatch.setattr(cuda, "load_function", load_function)
    monkeypatch.setattr(cuda, "row_carveout", lambda *a, **k: None)
    monkeypatch.setattr(cuda, "scalar_args", tuple)
    monkeypatch.setattr(gpu_launch, "scalar_args", tuple)
    monkeypatch.setattr(direct_launch, "build", lambda *a, **k: None)
    monkeypatch.setattr(gpu_launch.GpuProgram, "__call__", lambda self, arrays: run(self, arrays))
    monkeypatch.setattr(gpu_launch.GpuProgram, "run_checked", run)
    monkeypatch.setattr(gpu_launch.GpuProgram, "run_torch_checked", run)
    yield _Log(log, loads)


class _Log:
    """The launches (shared with the recorders) and the kernels loaded (``loads``, by name)."""

    def __init__(self, log: list, loads: list):
        self._log, self.loads = log, loads

    def take(self) -> list:
        """The launches since the last ``take``."""
        out = list(self._log)
        self._log.clear()
        return out


def count_renders(monkeypatch) -> list:
    """The kernels rendered to CUDA C (``codegen.cuda.emit_kernel`` calls) from now on, by kernel
    name (the list fills as the test runs)."""
    from kfuse.codegen import cuda as cuda_emit
    seen: list = []
    render = cuda_emit.emit_kernel

    def counted(kir, variant=None):
        k = render(kir, variant)
        seen.append(k.name)
        return k
    monkeypatch.setattr(cuda_emit, "emit_kernel", counted)
    return seen
