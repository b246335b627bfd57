"""CUDA-C-backend specifics on a GPU (skipped without a GPU/CuPy): strided inputs, torch tensors,
device errors, module reuse across sizes, > 2^31 elements. The shared correctness cases run on
every backend in tests/gpu/test_backends.py."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)

import cupy as cp  # noqa: E402

import handplan  # noqa: E402
from handplan import gelu, one_group_plan, trace  # noqa: E402
from kfuse.errors import DeviceError  # noqa: E402
from kfuse.runtime.cuda import compile_plan  # noqa: E402
from tolerance import assert_matches_numpy  # noqa: E402

RNG = np.random.default_rng(0)


def run(fn, *arrays, reductions=False, views=None):
    return handplan.run("cuda", fn, *arrays, reductions=reductions, views=views)


def test_gelu_noncontiguous_input():
    x = RNG.standard_normal((64, 256), dtype=np.float32)
    w = RNG.standard_normal((128,), dtype=np.float32)
    b = RNG.standard_normal((128,), dtype=np.float32)
    fn = lambda x, w, b: gelu(x, w, b)  # noqa: E731
    prog = compile_plan(one_group_plan(trace(fn, ("float32", (64, 128)), ("float32", (128,)), ("float32", (128,)))))
    xd = cp.asarray(x)[:, ::2]
    out = prog([xd, cp.asarray(w), cp.asarray(b)])[0]
    assert_matches_numpy(cp.asnumpy(out), gelu(x[:, ::2], w, b))


# gelu, softmax/layernorm, column/arg reductions with NaN, integer and float NaN rules, float16:
# tests/gpu/test_backends.py (the same cases on the CPU, CUDA C and Numba-CUDA backends).


def test_empty_and_torch_and_errors():
    run(lambda x: x * 2, np.zeros((0, 5), np.float32))
    torch = pytest.importorskip("torch")
    prog = compile_plan(one_group_plan(trace(gelu, ("float32", (8, 16)), ("float32", (16,)), ("float32", (16,)))))
    x, w, b = (torch.randn(8, 16, device="cuda"), torch.randn(16, device="cuda"), torch.randn(16, device="cuda"))
    out = prog([x, w, b])[0]
    assert isinstance(out, torch.Tensor) and out.is_cuda
    assert_matches_numpy(out.cpu().numpy(), gelu(x.cpu().numpy(), w.cpu().numpy(), b.cpu().numpy()))
    with pytest.raises(DeviceError):
        prog([x, np.ones(16, np.float32), w])


def test_new_size_reuses_module():
    from kfuse.runtime import cuda as rc
    run(gelu, *(RNG.standard_normal(s, dtype=np.float32) for s in [(32, 64), (64,), (64,)]))
    n = len(rc._COMPILED)
    run(gelu, *(RNG.standard_normal(s, dtype=np.float32) for s in [(48, 256), (256,), (256,)]))
    assert len(rc._COMPILED) == n


def test_more_than_2_31_elements():
    n = 2 ** 31 + 4099
    x = cp.ones((n,), dtype=cp.int8)
    x[-3:] = 5
    prog = compile_plan(one_group_plan(trace(lambda x: x * 2 + 1, ("int8", (n,)))))
    out = prog([x])[0]
    assert int(out[-1]) == 11 and int(out[0]) == 3 and int(out[n // 2]) == 3
    assert prog.launchers[0]._variants and all(v[0].variant.idx64 for v in prog.launchers[0]._variants.values())
    del x, out


@pytest.mark.parametrize("n", [2 ** 27, 2 ** 27 + 4])
def test_streams_past_the_grid_stride_cap(n):
    """Four full-size inputs (the H200's one-pass StreamTile): 2^27 elements take more blocks than
    the grid-stride cap, in one pass; 2^27 + 4 (no whole number of blocks) loops, with guards."""
    fn = lambda a, b, c, d: (a + b) * (c - d)  # noqa: E731   (no multiply-add to contract)
    xs = [cp.random.standard_normal(n, dtype=cp.float32) for _ in range(4)]
    prog = compile_plan(one_group_plan(trace(fn, *[("float32", (n,))] * 4)))
    out = cp.asnumpy(prog(xs)[0])
    hs = [cp.asnumpy(x) for x in xs]
    assert_matches_numpy(out, fn(*hs))
    ((kernel, _, grid, *_),) = prog.launchers[0]._variants.values()
    if kernel.variant.exact:
        assert grid[0] * kernel.variant.block * kernel.variant.vec == n
