"""Peeled rows on the GPU (Variant.peel, codegen.cuda_peel; skipped without a GPU): rows that do
not start 16-byte aligned (odd lengths, sliced views) read at full width with a scalar head and
tail, against NumPy: softmax, layernorm, logsumexp, cross-entropy, a sum and an argmax over every
row schedule's width class (packed, held, re-loaded, streamed, re-read, two-stage, grid-synchronised),
float32, float16 and bfloat16 (torch tensors), rows starting at any element offset."""
import numpy as np
import pytest

from kfuse.fusion.reduction import PEEL_MIN_UNITS
from tests.codegen.test_online_softmax import lse as logsumexp, softmax
from tests.codegen.test_peeled_rows import cross_entropy, layernorm
from tolerance import assert_matches_numpy

pytestmark = [pytest.mark.gpu, pytest.mark.backends("cuda", "numba-cuda")]   # the same schedule, both emitters

RNG = np.random.default_rng(30)


def rowsum(x):
    return x.sum(axis=-1)


def argmax(x):
    return np.argmax(x, axis=-1)


def rms_f16(x):         # float16 rows, float32 statistics (NumPy's float16 sums would drift)
    return x / np.sqrt((x.astype(np.float32) ** 2).mean(-1, keepdims=True) + 1e-6).astype(np.float16)


def _args(fn, x):
    """``fn``'s arguments for rows ``x`` (a layernorm's weights, a cross-entropy's labels)."""
    n = x.shape[-1]
    if fn is layernorm:
        return x, RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    if fn is cross_entropy:
        return x, RNG.integers(0, n, x.shape[0])
    return (x,)


def _variants(f, args):
    """The variants (CUDA C ``Variant``, Numba-CUDA ``NVariant``) the launches behind ``f(*args)`` used."""
    entry = f._programs[f._key(args)]
    return [getattr(h[0], "variant", h[0]) for lau in entry.program.launchers for h in lau._variants.values()]


def _run(cp, fn, host_args, dev_args, backend="cuda"):
    import kfuse
    f = kfuse.jit(fn, backend=backend)
    got = f(*dev_args)
    with np.errstate(all="ignore"):
        want = fn(*host_args)
    return f, (cp.asnumpy(got) if isinstance(got, cp.ndarray) else np.asarray(got)), want


# (rows, width): a thread a row (9, 33), lanes of a warp (127, 515), held (4097, 8191, 65537 for a
# layernorm), re-loaded (a layernorm of 4097), streamed (50257, 65537), re-read (100003), and the
# widths too short to peel (1, 2, 3, 5)
WIDTHS = [(37, 1), (37, 2), (37, 3), (37, 5), (1531, 9), (1531, 33), (531, 127), (531, 515), (37, 4097),
          (37, 8191), (37, 50257), (37, 65537), (37, 100003)]


@pytest.mark.parametrize("rows,width", WIDTHS, ids=[f"{r}x{w}" for r, w in WIDTHS])
@pytest.mark.parametrize("fn", [softmax, layernorm, logsumexp, cross_entropy, rowsum, argmax],
                         ids=lambda f: f.__name__)
def test_odd_float32_rows_match_numpy(fn, rows, width, backend, cupy_for):
    cp = cupy_for(backend)
    x = RNG.standard_normal((rows, width)).astype(np.float32)
    x[rows // 2, width // 2] = x[rows // 2, 0]             # a tie: argmax keeps the first
    args = _args(fn, x)
    dev = [cp.asarray(a) for a in args]
    f, got, want = _run(cp, fn, args, dev, backend)
    assert_matches_numpy(got, want, reductions=True)
    if fn is not argmax and width % 4 and width // 4 >= PEEL_MIN_UNITS:
        assert any(v.peel and v.vec == 4 for v in _variants(f, dev)), _variants(f, dev)


VIEWS = {       # name -> (base shape, the view of it)
    "cols_from_1": ((45, 4097), lambda a: a[:, 1:]),        # rows one element past an aligned start
    "rows_from_1": ((45, 4097), lambda a: a[1:]),           # an odd width, from the second row
    "cols_3_to_-2": ((45, 8192), lambda a: a[:, 3:-2]),     # an even base, both ends cut
    "whole_from_1": ((45, 4097), lambda a: a[1:, 1:]),      # whole vectors a row, starts all ways aligned
    "streamed_from_5": ((37, 50262), lambda a: a[:, 5:]),   # a long row, streamed
    "packed_from_2": ((1531, 66), lambda a: a[:, 2:]),      # short rows, a few lanes each
}


@pytest.mark.parametrize("name", list(VIEWS))
@pytest.mark.parametrize("fn", [softmax, layernorm, cross_entropy, rowsum], ids=lambda f: f.__name__)
def test_rows_of_views_at_any_offset_match_numpy(fn, name, backend, cupy_for):
    cp = cupy_for(backend)
    shape, view = VIEWS[name]
    base = RNG.standard_normal(shape).astype(np.float32)
    host = view(base)
    args = _args(fn, host)
    dev = [view(cp.asarray(base))] + [cp.asarray(a) for a in args[1:]]
    f, got, want = _run(cp, fn, (np.ascontiguousarray(host),) + args[1:], dev, backend)
    assert_matches_numpy(got, want, reductions=True)
    chunked = backend == "numba-cuda" and any(v.split or v.grid_sync for v in _variants(f, dev))
    assert chunked or any(v.peel for v in _variants(f, dev)), _variants(f, dev)     # (Numba-CUDA: chunks unpeeled)


@pytest.mark.parametrize("width", [3, 9, 33, 127, 1031, 4097, 4103])
@pytest.mark.parametrize("fn", [softmax, rms_f16, logsumexp], ids=lambda f: f.__name__)
def test_odd_float16_rows_match_numpy(fn, width, backend, cupy_for):
    cp = cupy_for(backend)
    x = RNG.standard_normal((301, width)).astype(np.float16)
    f, got, want = _run(cp, fn, (x,), (cp.asarray(x),), backend)
    assert_matches_numpy(got, want, reductions=True)
    f, got, want = _run(cp, fn, (np.ascontiguousarray(x[:, 1:]),), (cp.asarray(x)[:, 1:],), backend)
    assert_matches_numpy(got, want, reductions=True)


@pytest.mark.parametrize("rows,width", [(4, 1000003), (2, (1 << 20) + 3)])
@pytest.mark.parametrize("fn", [rowsum, softmax], ids=lambda f: f.__name__)
def test_few_long_odd_rows_in_chunks_match_numpy(fn, rows, width, backend, cupy_for):
    """Too few rows to fill the GPU: a sum runs two-stage, a softmax grid-synchronised; chunk 0
    takes each row's head and tail."""
    cp = cupy_for(backend)
    x = RNG.standard_normal((rows, width)).astype(np.float32)
    dev = [cp.asarray(x)[:, 1:]]
    f, got, want = _run(cp, fn, (np.ascontiguousarray(x[:, 1:]),), dev, backend)
    assert_matches_numpy(got, want, reductions=True)
    if backend == "cuda":       # (Numba-CUDA runs a chunked row element by element)
        assert any(v.peel and (v.split or v.grid_sync) for v in _variants(f, dev)), _variants(f, dev)


@pytest.mark.parametrize("rows,cols", [(33, 4097), (128, 1025), (7, 51)])
def test_odd_bfloat16_rows_match_a_float32_computation(rows, cols, backend, cupy_for):
    """bfloat16 torch tensors (and a view one element in), each op rounded to bfloat16, against
    float32 rounded once: within the bounds of tests/gpu/test_bfloat16_gpu.py's row kernels."""
    cupy_for(backend)
    if backend == "numba-cuda":
        pytest.skip("bfloat16 runs on the CUDA C backend only")
    torch = pytest.importorskip("torch")
    ml_dtypes = pytest.importorskip("ml_dtypes")
    import kfuse
    bf = np.dtype(ml_dtypes.bfloat16)
    x = RNG.standard_normal((rows, cols + 1)).astype(np.float32).astype(bf)
    t = torch.from_numpy(x.view(np.int16)).cuda().view(torch.bfloat16)
    for host, dev in ((x[:, :-1], t[:, :-1].contiguous()), (x[:, 1:], t[:, 1:])):
        ref = softmax(host.astype(np.float32)).astype(bf).astype(np.float32)
        got = kfuse.jit(softmax)(dev).view(torch.int16).cpu().numpy().view(bf).astype(np.float32)
        np.testing.assert_allclose(got, ref, rtol=3.2e-2, atol=1e-5)
        s = kfuse.jit(rowsum)(dev).view(torch.int16).cpu().numpy().view(bf).astype(np.float32)
        exact = host.astype(np.float64).sum(axis=1).astype(np.float32).astype(bf).astype(np.float32)
        np.testing.assert_allclose(s, exact, rtol=8e-3, atol=1e-2)


def ln_f16_f32w(x, r, g, b):     # residual + layernorm of float16 rows, float32 weights, float16 out
    h = x + r
    hf = h.astype(np.float32)
    d = hf - hf.mean(-1, keepdims=True)
    return (d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) * g + b).astype(np.float16), h


@pytest.mark.parametrize("width", [64, 1000, 4096, 4104, 4097, 65536])
def test_float16_rows_with_float32_weights_match_numpy(width, backend, cupy_for):
    """float16 rows with float32 weights (the vector unit: 16 bytes of the weights), the rows
    of a view (a stride of width + 1) peeled."""
    import kfuse
    cp = cupy_for(backend)
    x, r = (RNG.standard_normal((67, width + 1)).astype(np.float16) for _ in range(2))
    g, b = (RNG.standard_normal(width).astype(np.float32) for _ in range(2))
    for cut in (lambda a: a[:, :-1], lambda a: a[:, 1:]):
        host = [np.ascontiguousarray(cut(x)), np.ascontiguousarray(cut(r)), g, b]
        dev = [cut(cp.asarray(x)), cut(cp.asarray(r)), cp.asarray(g), cp.asarray(b)]
        f = kfuse.jit(ln_f16_f32w, backend="cuda")
        got = [cp.asnumpy(o) for o in f(*dev)]
        for o, w in zip(got, ln_f16_f32w(*host)):
            assert_matches_numpy(o, w, reductions=True)
        if width % 4 == 0 and width >= 1000:
            assert any(v.vec == 4 for v in _variants(f, dev)), _variants(f, dev)
