"""Long rows whose maximum and sum of exponentials join one pass (``codegen.online_softmax``) as the
Numba-CUDA emitter renders them, without a GPU: the launcher picks CUDA C's streamed row (the same
block, vector width and peel, nothing held), the kernel IR it renders has the ``maxsumexp``
accumulator, and the PTX reads the row in a trip of 16-byte loads issued together, each term's
exponential one ``ex2.approx``. Values: the simulator's ``online-`` cases
(tests/codegen/test_numba_cuda_sim_schedules.py) and tests/gpu/test_numba_cuda_schedules_gpu.py."""
import re

import numpy as np
import pytest

from kfuse.codegen import numba_cuda as nc
from kfuse.errors import CompileError
from tests.codegen.test_numba_cuda_schedules import (
    body,
    fake,
    ptx_of,
    schedules,
    softmax,
)

_ok, _why = nc.numba_cuda_available()
pytestmark = pytest.mark.skipif(not _ok, reason=_why or "numba-cuda")


def logsumexp(x):
    m = np.max(x, axis=-1, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=-1)) + m[:, 0]


def lse_minus_mean(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=1)) + m[:, 0] - 0.1 * np.mean(x, axis=1)


FNS = {"logsumexp": logsumexp, "softmax": softmax, "lse_minus_mean": lse_minus_mean}


# every function on an aligned row; the odd width, the view and the offset once each (a Numba
# compile to PTX is ~10 s a case on the CI machine)
@pytest.mark.parametrize("name,shape,view,offset", [
    *[(n, (1024, 32000), None, 0) for n in FNS], ("softmax", (1024, 50257), None, 0),
    ("logsumexp", (512, 32001), (slice(None), slice(1, None)), 0), ("lse_minus_mean", (512, 32000), None, 1)])
def test_long_rows_stream_one_pass(name, shape, view, offset, tmp_path):
    x = fake(shape, view=view, offset=offset)
    v, nv, _, src = schedules(FNS[name], x)
    assert v.mode == nv.mode == "row" and not (v.cache_k or v.packed or v.split or v.grid_sync), v
    assert (nv.block, nv.vec, nv.peel, nv.cache_k) == (v.block, v.vec, v.peel, 0), (v, nv)
    assert nv.vec == 4 and nv.peel == (x.shape[1] % 4 != 0 or view is not None or offset != 0)
    b = body(src)
    assert b.count("_mse_step(") >= 5 * 4     # a trip of 4 units, then the rest one at a time, 4 elements each
    assert b.count("_mse_comb(") == 2         # lanes, then the warps (a power of two: a tree)
    assert "sm_" in b and "smm_" in b
    ptx = ptx_of(src, tmp_path)
    assert "ex2.approx.f32" in ptx               # (libdevice exp2f: ex2.approx, as CUDA C's kf_mse_exp)
    # the first trip's four 16-byte loads go out before any term's arithmetic
    loads = [m.start() for m in re.finditer(r"ld\.global(\.nc)?\.v4\.f32", ptx)]
    assert len(loads) >= 4
    first_ex2 = ptx.index("ex2.approx")
    assert sum(1 for p in loads if p < first_ex2) >= 4
    # one pass over the row for the maximum and the sum: every load of it within the first loop
    # for a logsumexp (a softmax's second pass writes the row)
    if name != "softmax":
        assert "st.global.v4" not in ptx


def test_short_rows_keep_their_passes(tmp_path):
    """Rows held in registers (or re-loaded) are not streamed: two reductions, no maxsumexp."""
    v, nv, _, src = schedules(logsumexp, fake((4096, 2048)))
    assert v.cache_k and nv.cache_k and "_mse_step" not in src


def test_streamed_accumulator_refused_in_chunks():
    """The online pair has no workspace slot: a chunked variant of it is refused by name."""
    import kfuse
    from kfuse.runtime.numba_cuda import _Launcher
    (kir,) = [k for k in kfuse.jit(logsumexp, backend="numba-cuda").lower("f32[4,32000]").kernels(for_gpu=True)]
    streamed = _Launcher(None, kir, "sm_90", None)._streamed
    assert any(a.kind == "maxsumexp" for ph in streamed.phases for a in ph.accs)
    with pytest.raises(CompileError, match="online max-and-sum"):
        nc.emit(streamed, nc.NVariant("row", 1, 0, 128, split=4, stage=1))
    assert "_mse_step" in nc.emit(streamed, nc.NVariant("row", 1, 0, 128, vec=4))
