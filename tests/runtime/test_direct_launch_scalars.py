"""The generated GPU direct launch with host scalars, host checks and a write into an argument in
place, run without a GPU: the kernel is compiled by NVRTC but not loaded, the arrays are stand-ins
with CuPy's attributes, and ``cuLaunchKernel`` is replaced by a recorder that reads the parameter
block the launch hands to the driver. What it checks: each host scalar's bytes in its slot (the
call's value, every call), the written argument's own address as the output, and every call that
must not launch (an index out of range, a Python int past int64, overlapping arguments, another
alignment) going to the generic path, which raises NumPy's error."""
import ctypes
import types

import numpy as np
import pytest

import kfuse
from kfuse.runtime import cuda as rcuda
from kfuse.runtime import device, direct_launch, interop
from kfuse.runtime.host_checks import check_lines
from tests.scalar_workloads import adam as _adam, kv as _kv

pytest.importorskip("cupy")
pytest.importorskip("cuda.bindings.nvrtc")


class Stand:
    """A C-contiguous device array stand-in at address ``ptr``."""

    def __init__(self, shape, dtype, ptr):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.itemsize = self.dtype.itemsize
        strides, step = [], self.itemsize
        for n in reversed(self.shape):
            strides.append(step)
            step *= max(n, 1)
        self.strides, self.size = tuple(reversed(strides)), int(np.prod(self.shape))
        self.nbytes, self.ndim = self.size * self.itemsize, len(self.shape)
        self.data = types.SimpleNamespace(ptr=ptr, device_id=0)


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(rcuda, "_function", lambda kernel, dev, arch, cache=None: types.SimpleNamespace(ptr=0xF00))
    monkeypatch.setattr(device, "device_properties",
                        lambda dev: {"sm_count": 132, "arch": "sm_90", "device_id": 0, "name": "NVIDIA H100 80GB HBM3"})
    monkeypatch.setattr(interop, "cupy_empty", lambda shape, dt: Stand(shape, interop.storage_dtype(dt), 0x7000000))


def _direct(fn, specs, args):
    """(direct call, generic calls made, launches: each the parameter block's first slots' bytes)."""
    low = kfuse.jit(fn, backend="cuda").lower(*specs)
    program = rcuda.CudaProgram(low.plan)
    program.launchers = [program._launcher(g, k) for g, k in zip(program.plan.groups, program.kirs)]
    graph, positions = low.graph, list(range(len(low.graph.inputs)))
    checks = None
    if graph.host_checks:
        names: dict = {}
        checks = (check_lines(graph, positions, "return generic(args)", names), names)
    generic, launches = [], []
    direct = direct_launch.build(program, args, positions, "cupy", 0, graph.out_tree,
                                 lambda a: generic.append(a) or "generic", checks, graph.writebacks)
    assert direct is not None
    n = len(program.kirs[0].outputs) + len(program.kirs[0].inputs)

    def launch(func, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        slots = (ctypes.c_uint64 * n).from_address(params)
        launches.append([bytes((ctypes.c_uint8 * 8).from_address(p)) for p in slots])
    direct.__globals__.update(launch=launch, getdev=lambda: 0, current=lambda: types.SimpleNamespace(ptr=0),
                              ndarray=lambda shape, dt: Stand(shape, dt, 0x8000000))
    return direct, generic, launches


def _scaled(x, s):
    return x * s


def _where(x, flag):
    return np.where(flag, x, -x)


def _as(raw: bytes, dtype) -> object:
    dtype = np.dtype(dtype)
    return np.frombuffer(raw[:dtype.itemsize], dtype)[0]


def test_kv_cache_write(no_gpu):
    cache, k = Stand((4, 10, 3), np.float32, 0x1000000), Stand((4, 3), np.float32, 0x2000000)
    direct, generic, launches = _direct(_kv, ("f32[4,10,3]", "f32[4,3]", "int"), (cache, k, 3))
    for t in (0, 5, 9, -1, -10):
        assert direct((cache, k, t)) is None
        out, base, src, idx = launches[-1]
        assert _as(out, np.uint64) == cache.data.ptr == _as(base, np.uint64)    # written in place
        assert _as(src, np.uint64) == k.data.ptr and _as(idx, np.int64) == t
    assert not generic and len(launches) == 5
    for t in (10, -11, 2 ** 40, 2 ** 70):       # NumPy's IndexError / OverflowError: the generic path's
        assert direct((cache, k, t)) == "generic"
    inside = Stand((4, 3), np.float32, cache.data.ptr + 16)     # shares the cache's memory
    assert direct((cache, inside, 1)) == "generic"
    assert direct((cache, Stand((4, 3), np.float32, 0x2000004), 1)) == "generic"     # another alignment
    assert len(generic) == 6 and len(launches) == 5


def test_adam_scalars_every_call(no_gpu):
    xs = [Stand((1000,), np.float32, 0x1000000 * (i + 1)) for i in range(4)]
    direct, generic, launches = _direct(_adam, ("f32[1000]",) * 4 + ("float", "int"), (*xs, 1e-3, 1))
    assert "V4.value = a4" in direct.source and "V5.value = a5" in direct.source
    for lr, t in ((1e-3, 1), (0.25, 7), (-0.0, 2 ** 40)):
        p, m, v = direct((*xs, lr, t))
        assert p.shape == m.shape == v.shape == (1000,)
        slots = launches[-1]
        assert [_as(s, np.uint64) for s in slots[3:7]] == [x.data.ptr for x in xs]
        assert _as(slots[7], np.float64) == lr and np.signbit(_as(slots[7], np.float64)) == np.signbit(lr)
        assert _as(slots[8], np.int64) == t
    assert direct((*xs, 1e-3, 2 ** 63)) == "generic" and len(generic) == 1


@pytest.mark.parametrize("fn,spec,value,other", [(_scaled, "f16[64]", np.float16(1.5), np.float16(-2.25)),
                                                 (_where, "f32[64]", True, False),
                                                 (_scaled, "f32[64]", np.float32(0.1), np.float32(3e38)),
                                                 (_scaled, "i16[64]", np.int16(-3), np.int16(30000))])
def test_narrow_scalars(no_gpu, fn, spec, value, other):
    x = Stand((64,), spec[:3].replace("f16", "float16").replace("f32", "float32").replace("i16", "int16"), 0x1000000)
    scalar_spec = "bool" if isinstance(value, bool) else value
    direct, generic, launches = _direct(fn, (spec, scalar_spec), (x, value))
    dtype = np.bool_ if isinstance(value, bool) else value.dtype
    for v in (value, other):
        direct((x, v))
        raw = launches[-1][2]
        assert _as(raw, dtype) == v and not any(raw[np.dtype(dtype).itemsize:])
    assert not generic


def _scale_in_place(x, y, lr):
    x -= lr * y


def test_argument_written_in_place(no_gpu):
    x, y = Stand((256,), np.float32, 0x1000000), Stand((256,), np.float32, 0x2000000)
    direct, generic, launches = _direct(_scale_in_place, ("f32[256]", "f32[256]", "float"), (x, y, 0.5))
    assert direct((x, y, 0.125)) is None
    out, *ins = launches[-1]
    assert _as(out, np.uint64) == x.data.ptr and _as(ins[-1], np.float64) == 0.125
    assert direct((x, x, 0.5)) == "generic" and len(launches) == 1      # x -= lr * x: overlapping arguments
