"""A scatter into an argument on the GPU backends (``Plan.scatters_into_argument``): the kernel
writes the caller's CuPy array or torch CUDA tensor itself, after the index checks computed by the
earlier kernel have been read back (a failed one raises NumPy's IndexError and writes nothing); no
copy of the argument is made and none is copied back (``kfuse/api.py`` skips the write-back of an
argument written in place).

Without a GPU: the program's bookkeeping (which groups write into their argument, the checks read
first, the layouts written in place). With a GPU (``gpu`` marked): CuPy arrays and torch tensors,
contiguous and strided, against NumPy."""
import numpy as np
import pytest

import kfuse
from kfuse.runtime import gpu_launch


def add_at(t, ids, g):
    np.add.at(t, ids, g)
    return t


def set_rows(t, ids, g):
    t[ids] = g
    return t


def _args():
    rng = np.random.default_rng(0)
    return np.zeros((8, 3)), np.array([1, 1, 7, 0, 1]), rng.integers(-3, 4, (5, 3)).astype(np.float64)


def _program(fn, args):
    from kfuse.runtime.cuda import CudaProgram
    plan = kfuse.jit(fn).lower(*args, backend="cuda").plan
    return CudaProgram(plan, arch="sm_90")


# ------------------------------------------------------------------------------ without a GPU

def test_the_program_knows_which_scatter_writes_its_argument():
    prog = _program(add_at, _args())
    plan = prog.plan
    assert [plan.scatters_into_argument(g) for g in plan.groups] == [False, True]     # the check first
    sc = plan.groups[1]
    assert set(prog._into_argument) == {sc.id} and prog._into_argument[sc.id] == ((0, 0),)
    assert prog._in_place == {}


def test_a_failed_check_raises_before_the_write():
    """The check flags (device 0-d arrays; NumPy here) are read back first: a set one raises
    NumPy's IndexError; passing ones give the argument's own buffer as the output."""
    prog = _program(add_at, _args())
    graph, sc = prog.plan.graph, prog.plan.groups[1]
    assert graph.checks
    t = np.zeros((8, 3))
    flags = {graph.outputs[k]: np.array(False) for k, *_ in graph.checks}
    into = prog.buffers_in_place(sc, [t], flags)
    assert list(into) == [0] and into[0] is t
    k, message, _ = graph.checks[0]
    flags[graph.outputs[k]] = np.array(True)
    with pytest.raises(IndexError) as e:
        prog.buffers_in_place(sc, [t], flags)
    assert str(e.value) == message and "out of bounds" in message


def test_overlapping_layouts_are_written_through_a_copy():
    """Any layout whose elements are distinct memory is written as it is (the kernels take every
    buffer's strides); a zero stride (a broadcast view) is not."""
    a = np.zeros((4, 6))
    for ok in (a, a.T, a[::2, ::-3], a[:, 1], a[:1], np.zeros((0, 3)), np.zeros(())):
        assert gpu_launch.writable_layout(ok)
    assert not gpu_launch.writable_layout(np.broadcast_to(np.zeros(3), (4, 3)))
    assert not gpu_launch.writable_layout(np.lib.stride_tricks.as_strided(a, (4, 4), (8, 8)))   # rows overlap
    prog = _program(add_at, _args())
    sc = prog.plan.groups[1]
    flags = {prog.plan.graph.outputs[k]: np.array(False) for k, *_ in prog.plan.graph.checks}
    assert prog.buffers_in_place(sc, [np.broadcast_to(np.zeros(3), (8, 3))], flags) == {}


# ------------------------------------------------------------------------------ on a GPU

def _no_copies(monkeypatch) -> list:
    """Record every base copy the launchers make."""
    calls = []
    real = gpu_launch.copy_into
    monkeypatch.setattr(gpu_launch, "copy_into", lambda dst, src: (calls.append(src.shape), real(dst, src)))
    return calls


@pytest.mark.backends("cuda", "numba-cuda")
@pytest.mark.parametrize("fn", [add_at, set_rows])
def test_cupy_argument_is_written_in_place(fn, backend, cupy_for, monkeypatch):
    cp = cupy_for(backend)
    t0, ids, g = _args()
    if fn is set_rows:
        ids = np.array([1, 7, 0])
        g = g[:3]
    want = fn(t0.copy(), ids, g)
    t = cp.asarray(t0)
    copies = _no_copies(monkeypatch)
    jf = kfuse.jit(fn, backend=backend)
    for k in range(2):                          # the first call compiles, the second is the hot path
        t[...] = cp.asarray(t0)
        result = jf(t, cp.asarray(ids), cp.asarray(g))
        assert result.data.ptr == t.data.ptr and result.shape == t.shape
        np.testing.assert_array_equal(cp.asnumpy(t), want)
    assert copies == []                         # neither a copy of the argument nor one back


@pytest.mark.backends("cuda", "numba-cuda")
def test_out_of_range_id_raises_and_leaves_the_argument(backend, cupy_for):
    cp = cupy_for(backend)
    t0, ids, g = _args()
    want = add_at(t0.copy(), ids, g)
    t = cp.asarray(want)
    jf = kfuse.jit(add_at, backend=backend)
    jf(cp.asarray(t0.copy()), cp.asarray(ids), cp.asarray(g))      # compiled with passing ids
    for bad in ([1, 8, 0, 0, 2], [1, -9, 0, 0, 2]):
        with pytest.raises(IndexError, match="out of bounds for axis 0 with size 8"):
            jf(t, cp.asarray(bad), cp.asarray(g))
        np.testing.assert_array_equal(cp.asnumpy(t), want)


@pytest.mark.gpu
def test_strided_cupy_argument_is_written_in_place(cupy_for, monkeypatch):
    """A transposed view: the kernel writes through its strides into the caller's memory."""
    cp = cupy_for("cuda")
    t0, ids, g = _args()
    want = add_at(t0.copy(), ids, g)
    base = cp.zeros((3, 8))
    t = base.T
    copies = _no_copies(monkeypatch)
    result = kfuse.jit(add_at, backend="cuda")(t, cp.asarray(ids), cp.asarray(g))
    assert result.data.ptr == t.data.ptr and copies == []
    np.testing.assert_array_equal(cp.asnumpy(base), want.T)


@pytest.mark.gpu
def test_contended_int8_histogram_into_a_cupy_argument(cupy_for):
    cp = cupy_for("cuda")
    rng = np.random.default_rng(1)
    h0, bins = rng.integers(-50, 50, 37).astype(np.int8), rng.integers(0, 37, 1 << 20)

    def hist(h, b):
        np.add.at(h, b, 1)
        return h
    want = hist(h0.copy(), bins)
    h = cp.asarray(h0)
    result = kfuse.jit(hist, backend="cuda")(h, cp.asarray(bins))
    assert result.data.ptr == h.data.ptr
    np.testing.assert_array_equal(cp.asnumpy(h), want)


@pytest.mark.gpu
def test_torch_tensor_is_written_in_place(cupy_for, monkeypatch):
    torch = pytest.importorskip("torch")
    cupy_for("cuda")
    t0, ids, g = _args()
    want = add_at(t0.copy(), ids, g)
    t = torch.as_tensor(t0, device="cuda")
    tid, tg = torch.as_tensor(ids, device="cuda"), torch.as_tensor(g, device="cuda")
    copies = _no_copies(monkeypatch)
    jf = kfuse.jit(add_at, backend="cuda")
    result = jf(t, tid, tg)
    assert result.data_ptr() == t.data_ptr() and copies == []
    np.testing.assert_array_equal(t.cpu().numpy(), want)
    with pytest.raises(IndexError, match="out of bounds"):
        jf(t, torch.as_tensor([1, 8, 0, 0, 2], device="cuda"), tg)
    np.testing.assert_array_equal(t.cpu().numpy(), want)
    s = torch.zeros((3, 8), dtype=torch.float64, device="cuda")
    assert jf(s.T, tid, tg).data_ptr() == s.data_ptr()               # a strided tensor, in place too
    np.testing.assert_array_equal(s.T.cpu().numpy(), want)
