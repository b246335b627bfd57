"""The int8 runtime's layout logic without a GPU: ``gemm_pack.kmajor_operands`` (with CuPy's
``empty`` and the pack kernel played by NumPy through the very strides the kernel is given) hands
``describe_operands`` operands it calls K-major and aligned (the only layout the int8 kernel
takes) holding the caller's values, and reads K-major 16-byte rows in place; ``epilogue_args``
reads a ``s[:, None]`` scale through its ``dims``."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

from kfuse.codegen.gemm_spec import EpInput, GemmEpilogue, GemmSpec
from kfuse.runtime.gemm import describe_operands, epilogue_args
from kfuse.runtime.gemm_pack import kmajor_operands

RNG = np.random.default_rng(5)


class Arr(np.ndarray):
    """A NumPy array with CuPy's ``.data.ptr``."""
    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.ctypes.data)


@pytest.fixture
def fake_cupy(monkeypatch):
    fake = types.ModuleType("cupy")
    fake.empty = lambda shape, dtype: np.zeros(shape, dtype).view(Arr)
    monkeypatch.setitem(sys.modules, "cupy", fake)


def pack_kernel(source, name):
    """kfuse_kmajor_pack's effect, from its arguments: Y[b, o, k] = X[b, k, o] for k < KD."""
    assert name == "kfuse_kmajor_pack" and name in source

    def launch(grid, block, args):
        x3, buf, KD, OD, KP, sXb, sXk, sXo, sYb, sYo = (int(v) if np.isscalar(v) else v for v in args)
        X = as_strided(x3, (grid[2], KD, OD), (sXb, sXk, sXo))
        as_strided(buf, (grid[2], OD, KP), (sYb, sYo, 1))[:, :, :KD] = X.transpose(0, 2, 1)
    return launch


def i8(*shape, dtype=np.int8):
    return RNG.integers(-128 if dtype == np.int8 else 0, 128, shape, dtype=dtype)


CASES = {
    "row-major A, row-major B (packed)": lambda: (i8(37, 45), i8(45, 61)),
    "Linear weight (read in place)": lambda: (i8(37, 64), i8(61, 64).T),
    "transposed A (packed)": lambda: (i8(45, 37).T, i8(45, 61)),
    "batched": lambda: (i8(3, 65, 96), i8(3, 96, 72)),
    "broadcast B": lambda: (i8(3, 65, 96), i8(96, 72, dtype=np.uint8)),
    "batched K-major B": lambda: (i8(3, 65, 96), i8(3, 72, 96).transpose(0, 2, 1)),
    "rows 1 byte in (packed)": lambda: (i8(70, 97)[:, 1:], i8(96, 50)),
}


@pytest.mark.parametrize("case", CASES)
def test_operands_become_kmajor_aligned(case, fake_cupy):
    a, b = (x.view(Arr) for x in CASES[case]())
    pa, pb = kmajor_operands(pack_kernel, a, b)
    assert np.array_equal(pa, a) and np.array_equal(pb, b)
    call = describe_operands(pa, pb, GemmSpec("s8", GemmEpilogue(out_dtype="i32", product_dtype="int32")))
    assert call.spec.a_kmajor and call.spec.b_kmajor and call.spec.aligned
    assert call.spec.b_dtype == ("u8" if b.dtype == np.uint8 else None)
    if "in place" in case:
        assert pa is a and pb is b


def test_scale_read_through_its_dims(fake_cupy):
    M, N = 6, 6                                 # square: NumPy's broadcast would read s as a row
    s = np.arange(M, dtype=np.float32)
    ep = GemmEpilogue.chain(("multiply", ("in", 0)), out_dtype="f64", inputs=(EpInput("f32", "col", "m"),),
                            product_dtype="int32", dtype="float64")
    _, sb, sm, sn = epilogue_args([s], ep, (1, M, N))
    assert (sb, sm, sn) == (0, 1, 0)
