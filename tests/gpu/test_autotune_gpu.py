"""The autotuner on the CUDA C backend (skipped without a GPU/CuPy): tune a small elementwise and
a row kernel with a tiny budget, check the tuned program's results, and that a stored result is
reused without measuring again (also through ``kfuse.jit(autotune=...)``)."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)

import cupy as cp  # noqa: E402

from kfuse import config as kconfig  # noqa: E402
from kfuse.autotune import tuner  # noqa: E402
from kfuse.autotune.gpu_targets import apply_gpu  # noqa: E402
from kfuse.fusion import pipeline  # noqa: E402
from kfuse.ir.specs import spec_of_value  # noqa: E402
from kfuse.runtime.cuda import compile_plan  # noqa: E402
from kfuse.trace import trace_function  # noqa: E402
from tests.autotune.helpers import FakeStore  # noqa: E402
from tolerance import assert_matches_numpy  # noqa: E402

RNG = np.random.default_rng(0)


def ew(x, y):
    return np.exp(x) * y + 1.0


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _plan(fn, *arrays):
    import inspect
    names = list(inspect.signature(fn).parameters)
    g = trace_function(fn, {n: spec_of_value(a) for n, a in zip(names, arrays)})
    return pipeline.plan(pipeline.optimize(g), "h100")


@pytest.fixture(autouse=True)
def _fresh():
    tuner.reset()
    yield
    tuner.reset()


@pytest.mark.parametrize("fn,arrays,red", [
    (ew, [RNG.standard_normal((1024, 2048), dtype=np.float32),
          RNG.standard_normal((1024, 2048), dtype=np.float32)], False),
    (softmax, [RNG.standard_normal((512, 4096), dtype=np.float32)], True),
])
def test_tune_check_and_reuse(fn, arrays, red):
    plan = _plan(fn, *arrays)
    prog = compile_plan(plan)
    store, reports = FakeStore(), []
    tiles = tuner.tune_program(plan, arrays, "cuda", "on", store, program=prog, budget=4.0,
                               total_budget=20.0, top_k=4, reports=reports, progress=False,
                               process_budget=tuner.Budget())
    assert set(tiles) == {g.id for g in plan.groups}
    for r in reports:
        assert r.source == "tuned", r.note
        heur = [m for m in r.measurements if m.config == r.heuristic]
        assert heur and heur[0].ok
        assert r.config.kind in ("elementwise", "row", "reduction")
    assert store.puts == len(plan.groups)
    apply_gpu(prog, {r.group_id: r.config for r in reports})
    out = prog([cp.asarray(a) for a in arrays])
    expected = fn(*arrays)
    expected = expected if isinstance(expected, tuple) else (expected,)
    for o, e in zip(out, expected):
        assert_matches_numpy(cp.asnumpy(o), e, reductions=red)
    # a new process (memo cleared): the stored result, no measurement
    tuner.reset()
    reports2 = []
    tiles2 = tuner.tune_program(plan, arrays, "cuda", "cached", store, program=prog,
                                reports=reports2, progress=False)
    assert tiles2 == tiles and all(r.source == "stored" for r in reports2)
    assert tuner.STATS["measured"] == 0


def test_jit_autotune_on_then_cached(tmp_path, monkeypatch):
    import kfuse
    monkeypatch.setenv("KFUSE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("KFUSE_AUTOTUNE_BUDGET", "3")
    kconfig.reload()
    try:
        x = cp.asarray(RNG.standard_normal((256, 1024), dtype=np.float32))
        f = kfuse.jit(softmax, backend="cuda", autotune="on")
        assert_matches_numpy(cp.asnumpy(f(x)), softmax(cp.asnumpy(x)), reductions=True)
        measured = tuner.STATS["measured"]
        assert measured > 0
        tuner.reset()
        g = kfuse.jit(softmax, backend="cuda", autotune="cached")
        assert_matches_numpy(cp.asnumpy(g(x)), softmax(cp.asnumpy(x)), reductions=True)
        assert tuner.STATS["measured"] == 0 and tuner.STATS["store_hits"] >= 1
    finally:
        monkeypatch.undo()
        kconfig.reload()
