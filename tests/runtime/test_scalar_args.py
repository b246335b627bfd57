"""The GPU launchers' scalar arguments, packed once per launch variant (no GPU needed)."""
import numpy as np
import pytest

from kfuse.runtime.gpu_launch import pack_scalars, scalar_args


def test_each_scalar_sits_at_its_own_width_in_its_slot():
    vals = [np.int64(-5), np.uint32(2 ** 32 - 1), np.int64(2 ** 40 + 3), np.uint32(31), np.int32(-2)]
    buf = pack_scalars(vals)
    assert buf.dtype == np.int64 and buf.size == len(vals)
    raw = buf.view(np.uint8)
    for k, v in enumerate(vals):
        got = raw[8 * k: 8 * k + v.itemsize].view(v.dtype)[0]
        assert got == v and got.dtype == v.dtype
        assert not raw[8 * k + v.itemsize: 8 * (k + 1)].any()      # the rest of the slot is zero


def test_no_scalars_and_too_wide_ones():
    assert pack_scalars([]).size == 1
    with pytest.raises(ValueError, match="wider than 8 bytes"):
        pack_scalars([np.complex128(1 + 2j)])


def test_scalar_args_point_into_one_kept_buffer():
    pytest.importorskip("cupy")
    from cupy.cuda.function import CPointer
    vals = [np.int64(7), np.uint32(3)]
    args = scalar_args(vals)
    assert all(isinstance(a, CPointer) for a in args)
    assert args[0].buf is args[1].buf and [a.value for a in args] == vals
